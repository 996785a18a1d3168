/*
 * test_events_feed.c — the replica's live events reader (server/events_feed.c) against
 * a real PostgreSQL: a live subscription gets what is emitted after it opened and
 * nothing older; a resuming one gets exactly what follows its id, then the live
 * events, once; filters and permissions; keep-alives; the stream limit; a subscription
 * that is not read is ended instead of growing; stopping ends every subscription; and,
 * with two writers committing interleaved transactions, a subscription gets every
 * event exactly once, in the order a resumed one agrees with; an event whose NOTIFY was
 * lost reaches an open stream within the check interval.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/events.h"
#include "server/events_feed.h"
#include "storage/pg_pool.h"

typedef struct fx {
    char *url;
    pg_pool *pool;
    events_feed *feed;
    bool started;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    f->url = tl_db_create_migrated();
    f->pool = tl_pool(f->url, 6);
    events_feed_options fo = {.pool = f->pool, .keepalive_ms = 300, .max_streams = 4};
    TL_OK(events_feed_create(&fo, &f->feed, &e_));
    TL_OK(sup_thread_ops.start(events_feed_component(f->feed), &e_));
    f->started = true;
    for (long long end = tl_now_ms() + 5000;
         !sup_thread_ops.ready(events_feed_component(f->feed)) && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_true(sup_thread_ops.ready(events_feed_component(f->feed)));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->started)
        sup_thread_ops.stop(events_feed_component(f->feed));
    events_feed_destroy(f->feed);
    pg_pool_destroy(f->pool);
    tl_db_drop(f->url);
    free(f);
    return 0;
}

/* Emits one event in its own transaction; the feed is not told (a NOTIFY lost). */
static long long emit_quiet(fx *f, const char *type, const char *node, size_t pad)
{
    pg_conn *c;
    TL_OK(pg_acquire(f->pool, &c, &e_));
    char *big = calloc(1, pad + 1);
    memset(big, 'x', pad);
    json_t *data = json_pack("{s:s}", "pad", big);
    sx_event e = {.type = type,
                  .node_id = node,
                  .deployment_id =
                      strncmp(type, "wave", 4) == 0 ? "3f1d2c44-5b6e-4f70-8a91-b2c3d4e5f607" : NULL,
                  .data = data};
    TL_OK(events_emit(c, "r1", &e, &e_));
    PGresult *r;
    TL_OK(pg_exec(c, "SELECT max(id) FROM events", 0, NULL, &r, &e_));
    long long id = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    pg_release(f->pool, c);
    json_decref(data);
    free(big);
    return id;
}

/* Emits one event and tells the feed, as the listener would. */
static long long emit(fx *f, const char *type, const char *node, size_t pad)
{
    long long id = emit_quiet(f, type, node, pad);
    events_feed_on_notify(f->feed, EVENTS_NOTIFY_CHANNEL, "");
    return id;
}

/* A subscription with its reader's side: what was read and how often it was woken. */
typedef struct reader {
    events_sub *sub;
    sx_buf got;
    atomic_int wakes;
    bool ended;
} reader;

static void on_wake(void *ctx)
{
    reader *r = ctx;
    atomic_fetch_add(&r->wakes, 1);
}

/* A subscription to every event type. */
static const events_sub_options ALL = {.proxies = true, .deployments = true};

static reader *open_reader(fx *f, const events_sub_options *o)
{
    reader *r = calloc(1, sizeof(*r));
    TL_OK(events_sub_open(f->feed, o, &r->sub, &e_));
    events_sub_set_wake(r->sub, on_wake, r);
    return r;
}

/* Reads what is queued now. */
static void drain(reader *r)
{
    char buf[4096];
    long n;
    while ((n = events_sub_read(r->sub, buf, sizeof(buf))) > 0)
        sx_buf_append(&r->got, buf, (size_t)n);
    if (n < 0)
        r->ended = true;
}

static bool has(reader *r, const char *text)
{
    return strstr(sx_buf_cstr(&r->got), text) != NULL;
}

/* Reads until text has arrived (or ms passed). */
static bool wait_text(reader *r, const char *text, int ms)
{
    for (long long end = tl_now_ms() + ms; tl_now_ms() < end; tl_sleep_ms(10)) {
        drain(r);
        if (has(r, text))
            return true;
    }
    return false;
}

static bool wait_ended(reader *r, int ms)
{
    for (long long end = tl_now_ms() + ms; tl_now_ms() < end; tl_sleep_ms(10)) {
        drain(r);
        if (r->ended)
            return true;
    }
    return false;
}

static void close_reader(reader *r)
{
    events_sub_close(r->sub);
    sx_buf_free(&r->got);
    free(r);
}

/* The ids of the events read, comma-separated, into out. */
static const char *ids_of(reader *r, char *out, size_t n)
{
    out[0] = '\0';
    for (const char *p = sx_buf_cstr(&r->got); (p = strstr(p, "id: ")) != NULL; p += 4) {
        if (p != sx_buf_cstr(&r->got) && p[-1] != '\n')
            continue;
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%lld", len ? "," : "", atoll(p + 4));
    }
    return out;
}

static char *id_line(long long id, char *buf, size_t n)
{
    snprintf(buf, n, "id: %lld\n", id);
    return buf;
}

TL_TEST_FX(test_live_and_resume)
{
    fx *f = *state;
    /* An event the feed has handed out (to a probe) before the subscription opens. */
    reader *probe = open_reader(f, &ALL);
    long long old = emit(f, "proxy_connected", "before", 0);
    char line[64];
    assert_true(wait_text(probe, id_line(old, line, sizeof(line)), 15000));
    close_reader(probe);
    reader *live = open_reader(f, &ALL);
    assert_true(wait_text(live, ": connected\n\n", 10000));
    long long e1 = emit(f, "config_applied", "n1", 0);
    assert_true(wait_text(live, id_line(e1, line, sizeof(line)), 10000));
    assert_false(has(live, id_line(old, line, sizeof(line)))); /* nothing older */
    assert_true(has(live, "event: config_applied\ndata: {\"id\":"));
    assert_true(has(live, "\"node_id\":\"n1\""));
    assert_true(atomic_load(&live->wakes) > 0);

    long long e2 = emit(f, "proxy_disconnected", "n1", 0);
    long long e3 = emit(f, "wave_started", NULL, 0);
    assert_true(wait_text(live, id_line(e3, line, sizeof(line)), 10000));

    /* Resume after e1: exactly e2, e3, then what comes live, once. */
    events_sub_options after_e1 = {
        .proxies = true, .deployments = true, .resume = true, .last_id = e1};
    reader *res = open_reader(f, &after_e1);
    assert_true(wait_text(res, id_line(e3, line, sizeof(line)), 10000));
    long long e4 = emit(f, "proxy_connected", "n2", 0);
    assert_true(wait_text(res, id_line(e4, line, sizeof(line)), 10000));
    assert_true(wait_text(live, id_line(e4, line, sizeof(line)), 10000));
    char got[256], want[256];
    snprintf(want, sizeof(want), "%lld,%lld,%lld", e2, e3, e4);
    assert_string_equal(ids_of(res, got, sizeof(got)), want);
    snprintf(want, sizeof(want), "%lld,%lld,%lld,%lld", e1, e2, e3, e4);
    assert_string_equal(ids_of(live, got, sizeof(got)), want);

    /* Resume after 0: everything retained. */
    events_sub_options from0 = {.proxies = true, .deployments = true, .resume = true};
    reader *all0 = open_reader(f, &from0);
    assert_true(wait_text(all0, id_line(e4, line, sizeof(line)), 10000));
    snprintf(want, sizeof(want), "%lld,%lld,%lld,%lld,%lld", old, e1, e2, e3, e4);
    assert_string_equal(ids_of(all0, got, sizeof(got)), want);
    close_reader(all0);
    close_reader(res);
    close_reader(live);
    assert_int_equal(events_feed_streams(f->feed), 0);
}

TL_TEST_FX(test_filters_keepalive_limit)
{
    fx *f = *state;
    events_sub_options proxies = {.proxies = true};
    events_sub_options deployments = {.deployments = true};
    events_sub_options applied = {.proxies = true,
                                  .deployments = true,
                                  .types = 1u << events_type_index(EVENT_CONFIG_APPLIED)};
    reader *p = open_reader(f, &proxies), *d = open_reader(f, &deployments),
           *a = open_reader(f, &applied);
    long long w = emit(f, "wave_started", NULL, 0);
    long long c = emit(f, "config_applied", "n1", 0);
    long long s = emit(f, "proxy_stale", "n2", 0);
    char line[64], got[128], want[128];
    assert_true(wait_text(p, id_line(s, line, sizeof(line)), 10000));
    assert_true(wait_text(d, id_line(w, line, sizeof(line)), 10000));
    assert_true(wait_text(a, id_line(c, line, sizeof(line)), 10000));
    tl_sleep_ms(100);
    drain(p);
    drain(d);
    drain(a);
    snprintf(want, sizeof(want), "%lld,%lld", c, s);
    assert_string_equal(ids_of(p, got, sizeof(got)), want);
    snprintf(want, sizeof(want), "%lld", w);
    assert_string_equal(ids_of(d, got, sizeof(got)), want);
    snprintf(want, sizeof(want), "%lld", c);
    assert_string_equal(ids_of(a, got, sizeof(got)), want);

    /* Keep-alives every 300 ms on an idle subscription. */
    sx_buf_reset(&d->got);
    assert_true(wait_text(d, ": keep-alive\n\n", 3000));

    /* The fourth subscription is the last one allowed. */
    reader *x = open_reader(f, &proxies);
    events_sub *y;
    sx_err err;
    assert_int_equal(events_sub_open(f->feed, &proxies, &y, &err), SX_EUNAVAILABLE);
    assert_int_equal(events_feed_streams(f->feed), 4);
    close_reader(x);
    close_reader(a);
    close_reader(d);
    close_reader(p);
}

TL_TEST_FX(test_slow_reader_is_ended)
{
    fx *f = *state;
    reader *slow = open_reader(f, &ALL);
    reader *fast = open_reader(f, &ALL);
    long long last = 0;
    char line[64];
    /* ~1.4 MB: over the 1 MB bound. The fast reader takes each event before the next is
     * written: were several written at once, the feed could read them in one batch
     * whose size alone passes the bound, and end the fast reader too. */
    for (int i = 0; i < 70; i++) {
        last = emit(f, "config_rejected", "n1", 20000);
        assert_true(wait_text(fast, id_line(last, line, sizeof(line)), 20000));
    }
    /* The slow one gets what was queued, then the end; not the last events. */
    assert_true(wait_ended(slow, 10000));
    assert_false(has(slow, id_line(last, line, sizeof(line))));
    assert_true(slow->got.len > 500000);
    close_reader(slow);
    close_reader(fast);
}

TL_TEST_FX(test_stop_ends_subscriptions)
{
    fx *f = *state;
    reader *r = open_reader(f, &ALL);
    assert_true(wait_text(r, ": connected", 10000));
    int before = atomic_load(&r->wakes);
    sup_thread_ops.stop(events_feed_component(f->feed));
    f->started = false;
    assert_true(atomic_load(&r->wakes) > before);
    drain(r);
    assert_true(r->ended);
    events_sub *s;
    sx_err err;
    assert_int_equal(events_sub_open(f->feed, &ALL, &s, &err), SX_EUNAVAILABLE);
    close_reader(r);
}

/* Two writers, transactions of one to three events that stay open a little while the
 * other commits: the subscription gets every event once, and a subscription resumed
 * from the middle gets exactly the rest of the same sequence. */
typedef struct writer {
    fx *f;
    int seed;
    atomic_bool done;
} writer;

static void *write_loop(void *arg)
{
    writer *w = arg;
    unsigned seed = (unsigned)w->seed;
    for (int t = 0; t < 40; t++) {
        pg_conn *c;
        TL_OK(pg_acquire(w->f->pool, &c, &e_));
        TL_OK(pg_begin(c, &e_));
        int n = 1 + rand_r(&seed) % 3;
        for (int i = 0; i < n; i++) {
            sx_event e = {.type = EVENT_PROXY_CONNECTED, .node_id = "w"};
            TL_OK(events_emit(c, "r1", &e, &e_));
            tl_sleep_ms(rand_r(&seed) % 4);
        }
        TL_OK(pg_commit(c, &e_));
        pg_release(w->f->pool, c);
        events_feed_on_notify(w->f->feed, EVENTS_NOTIFY_CHANNEL, "");
    }
    atomic_store(&w->done, true);
    return NULL;
}

TL_TEST_FX(test_concurrent_writers)
{
    fx *f = *state;
    reader *r = open_reader(f, &ALL);
    assert_true(wait_text(r, ": connected", 10000));
    pthread_t t[2];
    writer w[2] = {{f, 1, false}, {f, 2, false}};
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, write_loop, &w[i]);
    while (!atomic_load(&w[0].done) || !atomic_load(&w[1].done)) {
        drain(r);
        tl_sleep_ms(5);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);

    pg_conn *c;
    TL_OK(pg_acquire(f->pool, &c, &e_));
    PGresult *res;
    TL_OK(pg_exec(c, "SELECT count(*), max(id) FROM events", 0, NULL, &res, &e_));
    long long count = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    pg_release(f->pool, c);
    assert_true(count >= 80);

    /* Wait for the tail, then compare: every id once. */
    static char ids[65536];
    for (long long end = tl_now_ms() + 5000; tl_now_ms() < end; tl_sleep_ms(20)) {
        drain(r);
        ids_of(r, ids, sizeof(ids));
        long long seen = 1;
        for (const char *p = ids; *p; p++)
            seen += *p == ',';
        if (ids[0] && seen >= count)
            break;
    }
    long long n = 0;
    char *seen = calloc((size_t)count * 4 + 8, 1);
    long long max_id = 0;
    for (char *p = ids; *p;) {
        long long id = strtoll(p, &p, 10);
        if (*p == ',')
            p++;
        assert_true(id > 0 && id <= count * 4);
        assert_int_equal(seen[id], 0); /* never twice */
        seen[id] = 1;
        if (id > max_id)
            max_id = id;
        n++;
    }
    assert_int_equal(n, count); /* none lost */

    /* Resume from the middle of that sequence. */
    char *mid = ids;
    for (long long k = 0; k < n / 2; k++)
        mid = strchr(mid, ',') + 1;
    long long mid_id = atoll(mid);
    const char *rest = strchr(mid, ',') + 1;
    events_sub_options after = {
        .proxies = true, .deployments = true, .resume = true, .last_id = mid_id};
    reader *res2 = open_reader(f, &after);
    char line[64];
    long long last_id = atoll(strrchr(ids, ',') + 1);
    assert_true(wait_text(res2, id_line(last_id, line, sizeof(line)), 15000));
    static char got[65536];
    assert_string_equal(ids_of(res2, got, sizeof(got)), rest);
    free(seen);
    close_reader(res2);
    close_reader(r);
}

/* A NOTIFY lost in transit: a feed with a check interval reads the event within the
 * interval while a stream is open. The stream first gets an announced event, so the
 * feed's round for the new stream is over before the unannounced one is committed. */
TL_TEST_FX(test_lost_notify)
{
    fx *f = *state;
    char line[64];
    events_feed *checked = NULL;
    events_feed_options fo = {.pool = f->pool, .keepalive_ms = 60000, .check_interval_ms = 200};
    TL_OK(events_feed_create(&fo, &checked, &e_));
    TL_OK(sup_thread_ops.start(events_feed_component(checked), &e_));
    for (long long end = tl_now_ms() + 5000;
         !sup_thread_ops.ready(events_feed_component(checked)) && tl_now_ms() < end;)
        tl_sleep_ms(10);
    reader *c = calloc(1, sizeof(*c));
    TL_OK(events_sub_open(checked, &ALL, &c->sub, &e_));
    events_sub_set_wake(c->sub, on_wake, c);
    long long seen2 = emit_quiet(f, "proxy_connected", "seen", 0);
    events_feed_on_notify(checked, EVENTS_NOTIFY_CHANNEL, "");
    assert_true(wait_text(c, id_line(seen2, line, sizeof(line)), 10000));
    long long lost2 = emit_quiet(f, "proxy_disconnected", "lost", 0);
    assert_true(wait_text(c, id_line(lost2, line, sizeof(line)), 10000));
    close_reader(c);
    sup_thread_ops.stop(events_feed_component(checked));
    events_feed_destroy(checked);
}

TL_MAIN()
