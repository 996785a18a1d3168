/*
 * test_loader.c — the snapshot loader (server/snapshot/loader.c) against a real
 * PostgreSQL: the first load waits for the listener and fills the store; a committed
 * snapshot announced by NOTIFY reaches the store on the loader's thread, never the
 * listener's; an older version announced after a newer one never takes a group back; a
 * subscription through the loader gets its callbacks on the loader's thread with
 * pending notifications coalesced to the newest payload, while the listener goes on
 * delivering other channels; a subscription call that fails is made again until it
 * succeeds; a snapshot announced while the database refuses the pool, or committed while
 * the listener was cut off, is loaded once the database is back; and the periodic check
 * loads a snapshot whose NOTIFY never came.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/log.h"
#include "server/snapshot/loader.h"
#include "server/snapshot/store.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/repo_snapshots.h"

typedef struct fx {
    char *url;
    char *role_url; /* the URL the pool (and the listener) use when they can be cut off */
    pg_pool *admin; /* the test's own connections, never cut off */
    pg_link *link;
    sx_metrics *metrics;
    pg_pool *pool;
    pg_listener *listener;
    snap_repo *repo;
    snap_store *store;
    snap_loader *loader;
} fx;

/* Inserts the next snapshot of group in a transaction of its own and returns its
 * version (nothing is announced). */
static long long insert_snapshot(fx *f, const char *group)
{
    sx_arena *a = sx_arena_create();
    json_t *ir = json_pack("{s:s}", "version_info", "test");
    snap_new in = {.group = group, .ir = ir, .created_by = "test"};
    snap_record *out = NULL;
    pg_conn *c = NULL;
    TL_OK(pg_acquire(f->admin, &c, &e_));
    TL_OK(pg_begin(c, &e_));
    TL_OK(snap_repo_insert(c, &in, a, &out, &e_));
    TL_OK(pg_commit(c, &e_));
    pg_release(f->admin, c);
    long long v = out->version;
    json_decref(ir);
    sx_arena_destroy(a);
    return v;
}

static void notify(fx *f, const char *channel, const char *payload)
{
    pg_conn *c = NULL;
    TL_OK(pg_acquire(f->admin, &c, &e_));
    TL_OK(pg_notify(c, channel, payload, &e_));
    pg_release(f->admin, c);
}

static void announce(fx *f, const char *group, long long version)
{
    char *payload = snap_store_notify_payload(group, version, 0);
    notify(f, SNAP_NOTIFY_CHANNEL, payload);
    free(payload);
}

static long long held(fx *f, const char *group)
{
    snap_entry *e = snap_store_get(f->store, group);
    long long v = e ? e->version : 0;
    snap_entry_unref(e);
    return v;
}

static bool wait_held(fx *f, const char *group, long long version)
{
    for (long long end = tl_now_ms() + 10000; tl_now_ms() < end; tl_sleep_ms(10))
        if (held(f, group) >= version)
            return true;
    return false;
}

/* Every version a watcher saw (but the marker group's), and on which thread. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static long long seen[64];
static size_t nseen;
static pthread_t seen_thread;

static void on_store(void *ctx, snap_entry *e)
{
    (void)ctx;
    if (strcmp(e->group, "marker") == 0)
        return;
    pthread_mutex_lock(&seen_mu);
    if (nseen < 64)
        seen[nseen++] = e->version;
    seen_thread = pthread_self();
    pthread_mutex_unlock(&seen_mu);
}

/* The fixture: the pool (and, with cut_listener, the listener) connect as a role the
 * test can cut off; they share one link, as in the daemon. check_ms: the loader's
 * periodic check (negative: none). */
static int setup_with(void **state, bool cut_listener, int64_t check_ms)
{
    fx *f = calloc(1, sizeof(*f));
    f->url = tl_db_create_migrated();
    f->role_url = tl_role_create(f->url);
    f->admin = tl_pool(f->url, 2);
    f->metrics = sx_metrics_create();
    pg_link_options ko = {.backoff_min_ms = 50, .backoff_max_ms = 1000, .metrics = f->metrics};
    f->link = pg_link_create(&ko);
    pg_pool_options po = {.url = f->role_url,
                          .size = 4,
                          .connect_timeout_ms = 2000,
                          .metrics = f->metrics,
                          .link = f->link};
    TL_OK(pg_pool_create(&po, &f->pool, &e_));
    pg_listener_options lo = {
        .url = cut_listener ? f->role_url : f->url, .connect_timeout_ms = 2000, .link = f->link};
    TL_OK(pg_listener_create(&lo, &f->listener, &e_));
    f->repo = snap_repo_create(f->pool, NULL);
    f->store = snap_store_create(f->repo, NULL);
    snap_loader_options o = {.store = f->store,
                             .listener = f->listener,
                             .metrics = f->metrics,
                             .link = f->link,
                             .check_interval_ms = check_ms};
    TL_OK(snap_loader_create(&o, &f->loader, &e_));
    nseen = 0;
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, false, -1);
}

static int setup_cut_both(void **state)
{
    return setup_with(state, true, -1);
}

static int setup_check(void **state)
{
    return setup_with(state, false, 200);
}

static void start(fx *f)
{
    TL_OK(pg_listener_start(f->listener, &e_));
    TL_OK(sup_thread_ops.start(snap_loader_component(f->loader), &e_));
    for (long long end = tl_now_ms() + 10000;
         !sup_thread_ops.ready(snap_loader_component(f->loader)) && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_true(sup_thread_ops.ready(snap_loader_component(f->loader)));
}

static int teardown(void **state)
{
    fx *f = *state;
    sup_thread_ops.stop(snap_loader_component(f->loader));
    pg_listener_destroy(f->listener);
    snap_loader_destroy(f->loader);
    snap_store_destroy(f->store);
    snap_repo_destroy(f->repo);
    pg_pool_destroy(f->pool);
    pg_pool_destroy(f->admin);
    pg_link_destroy(f->link);
    sx_metrics_destroy(f->metrics);
    tl_role_drop(f->role_url);
    tl_db_drop(f->url);
    free(f);
    return 0;
}

TL_TEST_FX(test_first_load_then_notify)
{
    fx *f = *state;
    insert_snapshot(f, "edge");
    insert_snapshot(f, "edge");
    insert_snapshot(f, "internal");
    /* Not ready before it has loaded, and it loads only once the listener is up. */
    assert_false(sup_thread_ops.ready(snap_loader_component(f->loader)));
    start(f);
    assert_int_equal(held(f, "edge"), 2);
    assert_int_equal(held(f, "internal"), 1);

    int id = snap_store_watch(f->store, on_store, NULL);
    long long v3 = insert_snapshot(f, "edge");
    announce(f, "edge", v3);
    assert_true(wait_held(f, "edge", v3));
    pthread_mutex_lock(&seen_mu);
    assert_int_equal(nseen, 1);
    assert_int_equal(seen[0], v3);
    pthread_t t = seen_thread;
    pthread_mutex_unlock(&seen_mu);
    assert_true(pthread_equal(t, snap_loader_component(f->loader)->thread));
    snap_store_unwatch(f->store, id);
}

TL_TEST_FX(test_never_back_in_time)
{
    fx *f = *state;
    start(f);
    int id = snap_store_watch(f->store, on_store, NULL);
    long long last = 0;
    for (int i = 0; i < 5; i++)
        last = insert_snapshot(f, "edge");
    /* Announced newest first, then every older one, twice. */
    announce(f, "edge", last);
    for (int round = 0; round < 2; round++)
        for (long long v = 1; v < last; v++)
            announce(f, "edge", v);
    assert_true(wait_held(f, "edge", last));
    /* A later marker notification is processed after every announcement above. */
    long long marker = insert_snapshot(f, "marker");
    announce(f, "marker", marker);
    assert_true(wait_held(f, "marker", marker));
    assert_int_equal(held(f, "edge"), last);
    pthread_mutex_lock(&seen_mu);
    assert_true(nseen >= 1);
    for (size_t i = 1; i < nseen; i++)
        assert_true(seen[i] > seen[i - 1]);
    assert_int_equal(seen[nseen - 1], last);
    pthread_mutex_unlock(&seen_mu);
    snap_store_unwatch(f->store, id);
}

/* A subscriber whose first call blocks until released. */
typedef struct slow_sub {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool release;
    int calls;
    char last[64];
    pthread_t thread;
} slow_sub;

static int on_slow(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    slow_sub *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    snprintf(s->last, sizeof(s->last), "%s", payload);
    s->thread = pthread_self();
    pthread_cond_broadcast(&s->cv);
    while (!s->release)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int fast_calls;
static void on_fast(void *ctx, const char *channel, const char *payload)
{
    (void)ctx;
    (void)channel;
    (void)payload;
    __atomic_add_fetch(&fast_calls, 1, __ATOMIC_SEQ_CST);
}

TL_TEST_FX(test_subscription_coalesces)
{
    fx *f = *state;
    slow_sub s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    TL_OK(snap_loader_subscribe(f->loader, "test_slow", on_slow, NULL, &s, &e_));
    TL_OK(pg_listener_subscribe(f->listener, "test_fast", on_fast, NULL, NULL, &e_));
    start(f);
    notify(f, "test_slow", "1");
    pthread_mutex_lock(&s.mu);
    for (long long end = tl_now_ms() + 10000; s.calls == 0 && tl_now_ms() < end;) {
        pthread_mutex_unlock(&s.mu);
        tl_sleep_ms(10);
        pthread_mutex_lock(&s.mu);
    }
    assert_int_equal(s.calls, 1);
    assert_true(pthread_equal(s.thread, snap_loader_component(f->loader)->thread));
    pthread_mutex_unlock(&s.mu);
    /* While the loader is held up, the listener still delivers another channel. */
    __atomic_store_n(&fast_calls, 0, __ATOMIC_SEQ_CST);
    notify(f, "test_fast", "");
    for (long long end = tl_now_ms() + 10000;
         __atomic_load_n(&fast_calls, __ATOMIC_SEQ_CST) == 0 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_int_equal(__atomic_load_n(&fast_calls, __ATOMIC_SEQ_CST), 1);
    /* Four more notifications pile up behind the blocked call, then one marker on the
     * fast channel proves the listener has dispatched them all. */
    for (int i = 2; i <= 5; i++) {
        char p[8];
        snprintf(p, sizeof(p), "%d", i);
        notify(f, "test_slow", p);
    }
    notify(f, "test_fast", "");
    for (long long end = tl_now_ms() + 10000;
         __atomic_load_n(&fast_calls, __ATOMIC_SEQ_CST) < 2 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    pthread_mutex_lock(&s.mu);
    s.release = true;
    pthread_cond_broadcast(&s.cv);
    for (long long end = tl_now_ms() + 10000; s.calls < 2 && tl_now_ms() < end;) {
        pthread_mutex_unlock(&s.mu);
        tl_sleep_ms(10);
        pthread_mutex_lock(&s.mu);
    }
    pthread_mutex_unlock(&s.mu);
    tl_sleep_ms(200);
    pthread_mutex_lock(&s.mu);
    /* The four became one call, with the newest payload. */
    assert_int_equal(s.calls, 2);
    assert_string_equal(s.last, "5");
    pthread_mutex_unlock(&s.mu);
}

/* A subscription's resync runs once after the first load, on the loader's thread: state
 * kept beside the snapshots (the rollout pins) is loaded at start-up, not only after a
 * reconnect of the listener or the next NOTIFY. */
static atomic_int resyncs;

static int on_resync_count(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&resyncs, 1);
    return 0;
}

static int on_ignore(void *ctx, const char *channel, const char *payload)
{
    (void)ctx;
    (void)channel;
    (void)payload;
    return 0;
}

TL_TEST_FX(test_resync_after_first_load)
{
    fx *f = *state;
    atomic_store(&resyncs, 0);
    TL_OK(snap_loader_subscribe(f->loader, "test_pins", on_ignore, on_resync_count, NULL, &e_));
    start(f);
    for (long long end = tl_now_ms() + 10000; atomic_load(&resyncs) == 0 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_int_equal(atomic_load(&resyncs), 1);
    /* Later loads of single groups do not resync it again. */
    long long v = insert_snapshot(f, "edge");
    announce(f, "edge", v);
    assert_true(wait_held(f, "edge", v));
    tl_sleep_ms(100);
    assert_int_equal(atomic_load(&resyncs), 1);
}

/* A subscriber that fails its first two calls, as a reload would while the database is
 * unreachable. */
static atomic_int flaky_calls;

static int on_flaky(void *ctx, const char *channel, const char *payload)
{
    (void)ctx;
    (void)channel;
    (void)payload;
    return atomic_fetch_add(&flaky_calls, 1) < 2 ? SX_EUNAVAILABLE : 0;
}

TL_TEST_FX(test_failed_subscription_retried)
{
    fx *f = *state;
    atomic_store(&flaky_calls, 0);
    TL_OK(snap_loader_subscribe(f->loader, "test_flaky", on_flaky, NULL, NULL, &e_));
    start(f);
    notify(f, "test_flaky", "1");
    /* One notification, three calls: two failures, then the success that ends it. */
    for (long long end = tl_now_ms() + 10000; atomic_load(&flaky_calls) < 3 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_int_equal(atomic_load(&flaky_calls), 3);
    /* A marker behind it proves the worker has moved on: no fourth call. */
    long long v = insert_snapshot(f, "marker");
    announce(f, "marker", v);
    assert_true(wait_held(f, "marker", v));
    assert_int_equal(atomic_load(&flaky_calls), 3);
}

static double metric(fx *f, const char *name, bool counter)
{
    sx_metric *m = counter ? sx_metrics_counter(f->metrics, name, "", NULL)
                           : sx_metrics_gauge(f->metrics, name, "", NULL);
    return sx_metric_value(m, NULL);
}

/* A NOTIFY handled while the database refuses the pool: the fetch fails, and is retried
 * until the database is back. No periodic check here: the retry alone loads it. */
TL_TEST_FX(test_notify_while_database_unreachable)
{
    fx *f = *state;
    start(f);
    tl_role_allow(f->role_url, false);
    long long v = insert_snapshot(f, "edge");
    announce(f, "edge", v);
    for (long long end = tl_now_ms() + 10000;
         metric(f, "sextant_snapshot_fetch_errors_total", true) < 1 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_true(metric(f, "sextant_snapshot_fetch_errors_total", true) >= 1);
    assert_int_equal(held(f, "edge"), 0);
    tl_role_allow(f->role_url, true);
    assert_true(wait_held(f, "edge", v));
}

/* The listener and the pool both cut off; a snapshot committed meanwhile (its NOTIFY
 * heard by nobody) is loaded by the resync once the listener is back, although the
 * pool was in back-off when it came back. */
TL_TEST_WITH(test_resync_after_outage, setup_cut_both, teardown)
{
    fx *f = *state;
    start(f);
    tl_role_allow(f->role_url, false);
    for (long long end = tl_now_ms() + 10000;
         pg_listener_connected(f->listener) && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_false(pg_listener_connected(f->listener));
    pg_conn *c = NULL;
    sx_err err;
    assert_int_equal(pg_acquire(f->pool, &c, &err), SX_EUNAVAILABLE);
    long long v = insert_snapshot(f, "edge");
    announce(f, "edge", v);
    tl_role_allow(f->role_url, true);
    assert_true(wait_held(f, "edge", v));
    assert_true(pg_listener_connected(f->listener));
}

/* A snapshot whose NOTIFY never came is found by the periodic check. */
TL_TEST_WITH(test_periodic_check_loads_missed_snapshot, setup_check, teardown)
{
    fx *f = *state;
    start(f);
    long long v = insert_snapshot(f, "edge"); /* committed, never announced */
    assert_true(wait_held(f, "edge", v));
    /* Once loaded the group is no longer counted as behind. */
    for (long long end = tl_now_ms() + 10000;
         snap_loader_stale_groups(f->loader) > 0 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_int_equal(snap_loader_stale_groups(f->loader), 0);
    assert_true(metric(f, "sextant_snapshot_stale_groups", false) == 0);
    assert_true(snap_loader_fresh(f->loader));
}

/* The periodic check also resyncs what is kept beside the snapshots (the rollout pins),
 * so a pin whose NOTIFY was lost is taken within the interval. */
TL_TEST_WITH(test_periodic_check_resyncs_subscriptions, setup_check, teardown)
{
    fx *f = *state;
    atomic_store(&resyncs, 0);
    TL_OK(snap_loader_subscribe(f->loader, "test_pins", on_ignore, on_resync_count, NULL, &e_));
    start(f);
    /* The first load's resync, then one per check (every 200 ms), with no NOTIFY. */
    for (long long end = tl_now_ms() + 10000; atomic_load(&resyncs) < 3 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_true(atomic_load(&resyncs) >= 3);
}

/* A group the database says is ahead, but whose snapshot cannot be read (its version is
 * allocated and named current, its row missing): the check counts it as stale, and once
 * it has been behind for three intervals the replica is no longer fresh. The group's
 * next snapshot is loaded and makes it fresh again. */
TL_TEST_WITH(test_group_behind_for_long_is_not_fresh, setup_check, teardown)
{
    fx *f = *state;
    long long v = insert_snapshot(f, "edge");
    start(f);
    assert_int_equal(held(f, "edge"), v);
    pg_conn *c = NULL;
    TL_OK(pg_acquire(f->admin, &c, &e_));
    TL_OK(pg_exec(c,
                  "UPDATE proxy_groups SET latest_snapshot_version = latest_snapshot_version + 1,"
                  " current_snapshot_version = latest_snapshot_version + 1 WHERE name = 'edge'",
                  0, NULL, NULL, &e_));
    pg_release(f->admin, c);
    for (long long end = tl_now_ms() + 10000; snap_loader_fresh(f->loader) && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_false(snap_loader_fresh(f->loader));
    assert_int_equal(snap_loader_stale_groups(f->loader), 1);
    assert_true(metric(f, "sextant_snapshot_stale_groups", false) == 1);
    assert_int_equal(held(f, "edge"), v);

    long long next = insert_snapshot(f, "edge"); /* committed, never announced */
    assert_int_equal(next, v + 2);
    assert_true(wait_held(f, "edge", next));
    for (long long end = tl_now_ms() + 10000; !snap_loader_fresh(f->loader) && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_true(snap_loader_fresh(f->loader));
    assert_int_equal(snap_loader_stale_groups(f->loader), 0);
}

int main(void)
{
    sx_log_configure(SX_LOG_ERROR, NULL);
    return tl_run("tests", NULL, NULL);
}
