/*
 * test_pg_listener.c — LISTEN/NOTIFY against a real PostgreSQL: notifications sent
 * with pg_notify reach the right subscribers with their payload, a killed listener
 * backend is replaced and subscribers are told to resynchronise, and stop is prompt
 * even while the listener is connecting or backing off.
 */
#include "tests/lib/testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/base/metrics.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"

/* What one subscriber saw; written by the listener thread, read by the test. */
typedef struct rec {
    pthread_mutex_t mu;
    int notifies;
    int resyncs;
    char channel[80];
    char payload[256];
} rec;

static void rec_init(rec *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
}

static void on_notify(void *ctx, const char *channel, const char *payload)
{
    rec *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->notifies++;
    snprintf(r->channel, sizeof(r->channel), "%s", channel);
    snprintf(r->payload, sizeof(r->payload), "%s", payload);
    pthread_mutex_unlock(&r->mu);
}

static void on_resync(void *ctx)
{
    rec *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->resyncs++;
    pthread_mutex_unlock(&r->mu);
}

static int rec_notifies(rec *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->notifies;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static int rec_resyncs(rec *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->resyncs;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* Polls until count(r) reaches n or ms passed; returns whether it has. */
static bool wait_count(rec *r, int (*count)(rec *), int n, int ms)
{
    long long deadline = tl_now_ms() + ms;
    while (count(r) < n && tl_now_ms() < deadline)
        tl_sleep_ms(10);
    return count(r) >= n;
}

/* Polls until r has seen n notifications or 5 s passed; returns whether it has. */
static bool wait_notifies(rec *r, int n)
{
    return wait_count(r, rec_notifies, n, 5000);
}

/* One test's database, pool and listener. */
typedef struct fixture {
    char *url;
    char app[64];
    pg_pool *pool;
    pg_listener *l;
    sx_metrics *m;
} fixture;

static void fx_open(fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->url = tl_db_create();
    snprintf(f->app, sizeof(f->app), "sextant-listener-test-%d", (int)getpid());
    f->m = sx_metrics_create();
    sx_err err;
    pg_pool_options po = {.url = f->url, .size = 2};
    assert_int_equal(pg_pool_create(&po, &f->pool, &err), 0);
    pg_listener_options lo = {.url = f->url, .application_name = f->app, .metrics = f->m};
    assert_int_equal(pg_listener_create(&lo, &f->l, &err), 0);
}

/* fx_open, and r subscribed to "sx_changes" (notifications and resyncs); the listener
 * is not started. */
static void fx_open_subscribed(fixture *f, rec *r)
{
    fx_open(f);
    rec_init(r);
    sx_err err;
    assert_int_equal(pg_listener_subscribe(f->l, "sx_changes", on_notify, on_resync, r, &err), 0);
}

/* fx_open_subscribed, then the listener started and connected. */
static void fx_open_listening(fixture *f, rec *r)
{
    fx_open_subscribed(f, r);
    sx_err err;
    assert_false(pg_listener_connected(f->l));
    assert_int_equal(pg_listener_start(f->l, &err), 0);
    assert_true(pg_listener_wait_connected(f->l, 5000));
}

static void fx_close(fixture *f)
{
    pg_listener_destroy(f->l);
    pg_pool_destroy(f->pool);
    sx_metrics_destroy(f->m);
    tl_db_drop(f->url);
}

static void notify(fixture *f, const char *channel, const char *payload)
{
    pg_conn *c;
    sx_err err;
    assert_int_equal(pg_acquire(f->pool, &c, &err), 0);
    TL_OK(pg_notify(c, channel, payload, &e_));
    pg_release(f->pool, c);
}

static double metric(sx_metrics *m, const char *name, const char *labels, const char *value)
{
    sx_metric *f =
        labels ? sx_metrics_counter(m, name, "", labels) : sx_metrics_gauge(m, name, "", NULL);
    const char *v[] = {value};
    return sx_metric_value(f, labels ? v : NULL);
}

/* Starts a listener for url (connect_timeout_ms 0: the default). */
static pg_listener *start_listener(const char *url, int connect_timeout_ms)
{
    pg_listener_options lo = {.url = url, .connect_timeout_ms = connect_timeout_ms};
    pg_listener *l;
    sx_err err;
    assert_int_equal(pg_listener_create(&lo, &l, &err), 0);
    assert_int_equal(pg_listener_start(l, &err), 0);
    return l;
}

/* Destroys l and asserts that it took less than a second. */
static void assert_destroy_prompt(pg_listener *l)
{
    long long t0 = tl_now_ms();
    pg_listener_destroy(l);
    assert_true(tl_now_ms() - t0 < 1000);
}

TL_TEST(test_notify_reaches_subscriber)
{
    fixture f;
    rec r;
    fx_open_listening(&f, &r);
    sx_err err;
    assert_int_equal(metric(f.m, "sextant_db_listener_connected", NULL, NULL), 1);

    notify(&f, "sx_changes", "group=edge version=7");
    assert_true(wait_notifies(&r, 1));
    assert_string_equal(r.channel, "sx_changes");
    assert_string_equal(r.payload, "group=edge version=7");

    /* A notification in a rolled-back transaction is never delivered; one committed
     * after it is, with an empty payload passed as "". */
    pg_conn *c;
    assert_int_equal(pg_acquire(f.pool, &c, &err), 0);
    assert_int_equal(pg_begin(c, &err), 0);
    assert_int_equal(pg_notify(c, "sx_changes", "rolled back", &err), 0);
    pg_rollback(c);
    assert_int_equal(pg_notify(c, "sx_changes", NULL, &err), 0);
    pg_release(f.pool, c);
    assert_true(wait_notifies(&r, 2));
    tl_sleep_ms(100);
    assert_int_equal(rec_notifies(&r), 2);
    assert_string_equal(r.payload, "");

    /* The first connection is not a reconnection: no resync. */
    assert_int_equal(rec_resyncs(&r), 0);
    assert_int_equal(metric(f.m, "sextant_db_notifications_total", "channel", "sx_changes"), 2);
    fx_close(&f);
}

TL_TEST(test_channels_dispatched)
{
    fixture f;
    fx_open(&f);
    rec a, a2, b, odd;
    rec_init(&a);
    rec_init(&a2);
    rec_init(&b);
    rec_init(&odd);
    sx_err err;
    assert_int_equal(pg_listener_subscribe(f.l, "alpha", on_notify, NULL, &a, &err), 0);
    assert_int_equal(pg_listener_subscribe(f.l, "alpha", on_notify, NULL, &a2, &err), 0);
    assert_int_equal(pg_listener_start(f.l, &err), 0);
    assert_true(pg_listener_wait_connected(f.l, 5000));

    /* Subscribing on a connected listener returns once LISTEN is active, so a
     * notification sent right after is delivered. The quoted, mixed-case name is
     * matched exactly, not folded to lower case. */
    assert_int_equal(pg_listener_subscribe(f.l, "beta", on_notify, NULL, &b, &err), 0);
    assert_int_equal(pg_listener_subscribe(f.l, "We\"ird Name", on_notify, NULL, &odd, &err), 0);
    notify(&f, "alpha", "one");
    notify(&f, "beta", "two");
    notify(&f, "We\"ird Name", "three");
    notify(&f, "we\"ird name", "nobody listens");

    assert_true(wait_notifies(&a, 1));
    assert_true(wait_notifies(&a2, 1));
    assert_true(wait_notifies(&b, 1));
    assert_true(wait_notifies(&odd, 1));
    tl_sleep_ms(100);
    assert_int_equal(rec_notifies(&a), 1);
    assert_int_equal(rec_notifies(&b), 1);
    assert_int_equal(rec_notifies(&odd), 1);
    assert_string_equal(a.channel, "alpha");
    assert_string_equal(a.payload, "one");
    assert_string_equal(a2.payload, "one");
    assert_string_equal(b.channel, "beta");
    assert_string_equal(b.payload, "two");
    assert_string_equal(odd.channel, "We\"ird Name");
    assert_string_equal(odd.payload, "three");
    fx_close(&f);
}

TL_TEST(test_reconnect_after_backend_killed)
{
    fixture f;
    rec r;
    fx_open_listening(&f, &r);
    sx_err err;

    pg_conn *c;
    assert_int_equal(pg_acquire(f.pool, &c, &err), 0);
    const char *params[] = {f.app};
    PGresult *res;
    assert_int_equal(pg_exec(c,
                             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = $1 AND datname = current_database()",
                             1, params, &res, &err),
                     0);
    assert_int_equal(PQntuples(res), 1); /* exactly the listener's own connection */
    assert_string_equal(pg_get(res, 0, 0), "t");
    PQclear(res);
    pg_release(f.pool, c);

    wait_count(&r, rec_resyncs, 1, 10000);
    assert_int_equal(rec_resyncs(&r), 1);
    /* Resync comes after LISTEN is active again. */
    assert_true(pg_listener_connected(f.l));
    assert_int_equal(metric(f.m, "sextant_db_listener_reconnects_total", NULL, NULL), 0 + 1);

    notify(&f, "sx_changes", "after reconnect");
    assert_true(wait_notifies(&r, 1));
    assert_string_equal(r.payload, "after reconnect");
    fx_close(&f);
}

TL_TEST(test_stop_is_prompt)
{
    fixture f;
    rec r;
    fx_open_subscribed(&f, &r);
    sx_err err;
    assert_int_equal(pg_listener_start(f.l, &err), 0);
    assert_int_equal(pg_listener_start(f.l, &err), SX_EINVAL);
    assert_true(pg_listener_wait_connected(f.l, 5000));
    tl_sleep_ms(50);
    long long t0 = tl_now_ms();
    pg_listener_stop(f.l);
    assert_true(tl_now_ms() - t0 < 1000);
    assert_false(pg_listener_connected(f.l));
    assert_int_equal(metric(f.m, "sextant_db_listener_connected", NULL, NULL), 0);
    pg_listener_stop(f.l); /* idempotent */
    fx_close(&f);

    /* While backing off from an unreachable server. */
    char url[128];
    snprintf(url, sizeof(url), "postgresql://sextant@127.0.0.1:%d/none", tl_free_port());
    pg_listener *l = start_listener(url, 0);
    assert_false(pg_listener_wait_connected(l, 300));
    assert_destroy_prompt(l);

    /* While connecting to a server that accepts TCP but never answers. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    snprintf(url, sizeof(url), "postgresql://sextant@127.0.0.1:%d/none", ntohs(a.sin_port));
    l = start_listener(url, 30000);
    tl_sleep_ms(200);
    assert_destroy_prompt(l);
    close(fd);
}

TL_TEST(test_bad_arguments)
{
    fixture f;
    fx_open(&f);
    rec r;
    rec_init(&r);
    sx_err err;
    char longname[80];
    memset(longname, 'x', 64);
    longname[64] = '\0';
    assert_int_equal(pg_listener_subscribe(f.l, "", on_notify, NULL, &r, &err), SX_EINVAL);
    assert_int_equal(pg_listener_subscribe(f.l, NULL, on_notify, NULL, &r, &err), SX_EINVAL);
    assert_int_equal(pg_listener_subscribe(f.l, longname, on_notify, NULL, &r, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "channel name"));
    assert_int_equal(pg_listener_subscribe(f.l, "ok", NULL, NULL, &r, &err), SX_EINVAL);
    longname[63] = '\0';
    assert_int_equal(pg_listener_subscribe(f.l, longname, on_notify, NULL, &r, &err), 0);

    pg_listener_options lo = {.url = ""};
    pg_listener *l = (pg_listener *)&lo;
    assert_int_equal(pg_listener_create(&lo, &l, &err), SX_EINVAL);
    assert_null(l);

    pg_conn *c;
    assert_int_equal(pg_acquire(f.pool, &c, &err), 0);
    assert_int_equal(pg_notify(c, "", "x", &err), SX_EINVAL);
    char *big = malloc(8001);
    memset(big, 'p', 8000);
    big[8000] = '\0';
    assert_int_equal(pg_notify(c, "sx_changes", big, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "payload string too long"));
    free(big);
    pg_release(f.pool, c);
    fx_close(&f);
}

TL_MAIN()
