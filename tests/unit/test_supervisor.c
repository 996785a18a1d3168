/*
 * test_supervisor.c — start order, reverse stop order, the readiness gate, a component
 * that becomes ready later from its own thread, a failing start, a component that
 * overruns the shutdown budget and is abandoned, and the one-thread component
 * (sup_thread_ops) with and without a wake callback, and the notices of /readyz.
 */
#include "tests/lib/testlib.h"

#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/supervisor.h"

/* The order of start/stop calls across components, as "start:a stop:a ...". */
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
static char trace[512];

static void note(const char *what, const char *name)
{
    pthread_mutex_lock(&trace_mu);
    size_t n = strlen(trace);
    snprintf(trace + n, sizeof(trace) - n, "%s:%s ", what, name);
    pthread_mutex_unlock(&trace_mu);
}

typedef struct comp {
    const char *name;
    sup_supervisor *sup;
    int start_rc;          /* what start returns */
    atomic_bool ready;     /* for the probe variant */
    atomic_bool release;   /* lets a hanging stop return */
    atomic_int stopped;    /* stop() calls completed */
    bool hang_on_stop;     /* stop blocks until release */
    bool background_ready; /* start a thread that sup_set_ready()s after retries */
    pthread_t worker;
    bool worker_started;
    atomic_int attempts;
} comp;

static void *worker_main(void *arg)
{
    comp *c = arg;
    /* Pretend the dependency is down for three attempts, then up. */
    while (atomic_fetch_add(&c->attempts, 1) < 3) {
        if (!sup_sleep(c->sup, 10))
            return NULL; /* shutting down */
    }
    sup_set_ready(c->sup, c->name, true);
    return NULL;
}

static int comp_start(void *ctx, sx_err *err)
{
    comp *c = ctx;
    note("start", c->name);
    if (c->start_rc != 0)
        return sx_err_set(err, c->start_rc, "port is taken");
    if (c->background_ready) {
        pthread_create(&c->worker, NULL, worker_main, c);
        c->worker_started = true;
    }
    return 0;
}

static void comp_stop(void *ctx)
{
    comp *c = ctx;
    note("stop", c->name);
    if (c->worker_started) {
        pthread_join(c->worker, NULL);
        c->worker_started = false;
    }
    while (c->hang_on_stop && !atomic_load(&c->release)) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&c->stopped, 1);
}

static bool comp_ready(void *ctx)
{
    comp *c = ctx;
    return atomic_load(&c->ready);
}

static const sup_ops flag_ops = {comp_start, comp_stop, NULL};
static const sup_ops probe_ops = {comp_start, comp_stop, comp_ready};

static int setup(void **state)
{
    (void)state;
    trace[0] = '\0';
    return 0;
}

TL_TEST_WITH(test_order_and_gate, setup, NULL)
{
    sx_metrics *m = sx_metrics_create();
    sup_supervisor *sup = sup_create(m, 2000);
    comp a = {.name = "a"}, b = {.name = "b"}, c = {.name = "c"};
    a.sup = b.sup = c.sup = sup;
    sx_err err;
    assert_int_equal(sup_register(sup, "a", &probe_ops, &a, &err), 0);
    assert_int_equal(sup_register(sup, "b", &flag_ops, &b, &err), 0);
    assert_int_equal(sup_register(sup, "c", &flag_ops, &c, &err), 0);
    assert_int_equal(sup_register(sup, "b", &flag_ops, &b, &err), SX_ECONFLICT);

    assert_false(sup_ready(sup)); /* not started */
    assert_int_equal(sup_start_all(sup, &err), 0);
    assert_string_equal(trace, "start:a start:b start:c ");
    assert_int_equal(sup_component_state(sup, 0), SUP_RUNNING);
    assert_int_equal(sup_register(sup, "late", &flag_ops, &a, &err), SX_EINVAL);

    assert_false(sup_ready(sup));
    atomic_store(&a.ready, true);
    sup_set_ready(sup, "b", true);
    assert_false(sup_ready(sup));
    json_t *r = sup_readiness_json(sup);
    assert_true(json_is_true(json_object_get(r, "a")));
    assert_true(json_is_true(json_object_get(r, "b")));
    assert_true(json_is_false(json_object_get(r, "c")));
    json_decref(r);
    sup_set_ready(sup, "c", true);
    assert_true(sup_ready(sup));
    sup_set_ready(sup, "b", false); /* lost its dependency */
    assert_false(sup_ready(sup));
    sup_set_ready(sup, "b", true);
    assert_true(sup_ready(sup));

    sx_buf out = {0};
    sx_metrics_render(m, &out);
    assert_non_null(strstr(sx_buf_cstr(&out), "sextant_ready 1"));
    assert_non_null(strstr(sx_buf_cstr(&out), "sextant_component_ready{component=\"b\"} 1"));
    sx_buf_free(&out);

    trace[0] = '\0';
    assert_int_equal(sup_stop_all(sup), 0);
    assert_string_equal(trace, "stop:c stop:b stop:a ");
    assert_false(sup_ready(sup));
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sup_component_state(sup, i), SUP_STOPPED);
    sup_destroy(sup);
    sx_metrics_destroy(m);
}

/* The xDS gate follows only the components put into it: a replica whose database side
 * is down still serves its proxies. */
TL_TEST_WITH(test_xds_gate, setup, NULL)
{
    sup_supervisor *sup = sup_create(NULL, 2000);
    comp db = {.name = "database"}, snaps = {.name = "snapshots"}, xds = {.name = "xds"};
    db.sup = snaps.sup = xds.sup = sup;
    sx_err err;
    assert_int_equal(sup_register(sup, "database", &flag_ops, &db, &err), 0);
    assert_int_equal(sup_register(sup, "snapshots", &flag_ops, &snaps, &err), 0);
    assert_int_equal(sup_register(sup, "xds", &probe_ops, &xds, &err), 0);
    assert_false(sup_ready_xds(sup, NULL)); /* no component in the gate yet */
    assert_int_equal(sup_gate_xds(sup, "snapshots", &err), 0);
    assert_int_equal(sup_gate_xds(sup, "xds", &err), 0);
    assert_int_equal(sup_gate_xds(sup, "nope", &err), SX_ENOTFOUND);
    assert_false(sup_ready_xds(sup, NULL)); /* not started */
    assert_int_equal(sup_start_all(sup, &err), 0);
    assert_int_equal(sup_gate_xds(sup, "database", &err), SX_EINVAL);

    sup_set_ready(sup, "database", true);
    assert_false(sup_ready_xds(sup, NULL)); /* snapshots not loaded */
    sup_set_ready(sup, "snapshots", true);
    atomic_store(&xds.ready, true);
    json_t *c = NULL;
    assert_true(sup_ready_xds(sup, &c));
    assert_int_equal(json_object_size(c), 2);
    assert_true(json_is_true(json_object_get(c, "snapshots")));
    assert_null(json_object_get(c, "database"));
    json_decref(c);

    sup_set_ready(sup, "database", false); /* the database went away */
    assert_false(sup_ready(sup));
    assert_true(sup_ready_xds(sup, NULL));
    atomic_store(&xds.ready, false); /* gRPC stopped serving */
    assert_false(sup_ready_xds(sup, &c));
    assert_true(json_is_false(json_object_get(c, "xds")));
    json_decref(c);

    assert_int_equal(sup_stop_all(sup), 0);
    atomic_store(&xds.ready, true);
    assert_false(sup_ready_xds(sup, NULL)); /* shutting down */
    sup_destroy(sup);
}

TL_TEST_WITH(test_ready_later_from_thread, setup, NULL)
{
    sup_supervisor *sup = sup_create(NULL, 2000);
    comp db = {.name = "database", .background_ready = true};
    db.sup = sup;
    sx_err err;
    assert_int_equal(sup_register(sup, "database", &flag_ops, &db, &err), 0);
    assert_int_equal(sup_start_all(sup, &err), 0);
    for (int i = 0; i < 500 && !sup_ready(sup); i++) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(sup_ready(sup));
    assert_true(atomic_load(&db.attempts) >= 4);
    assert_int_equal(sup_stop_all(sup), 0);
    sup_destroy(sup);
}

TL_TEST_WITH(test_shutdown_interrupts_retry, setup, NULL)
{
    sup_supervisor *sup = sup_create(NULL, 2000);
    sx_err err;
    assert_int_equal(sup_register(sup, "x", NULL, NULL, &err), 0);
    assert_int_equal(sup_start_all(sup, &err), 0);
    assert_true(sup_sleep(sup, 1));
    assert_int_equal(sup_stop_all(sup), 0);
    assert_true(sup_stopping(sup));
    /* Once stopping, a retry loop's sleep returns at once. */
    assert_false(sup_sleep(sup, 60000));
    sup_destroy(sup);
}

TL_TEST_WITH(test_failed_start, setup, NULL)
{
    sup_supervisor *sup = sup_create(NULL, 2000);
    comp a = {.name = "a"}, b = {.name = "b", .start_rc = SX_EIO}, c = {.name = "c"};
    sx_err err;
    assert_int_equal(sup_register(sup, "a", &flag_ops, &a, &err), 0);
    assert_int_equal(sup_register(sup, "b", &flag_ops, &b, &err), 0);
    assert_int_equal(sup_register(sup, "c", &flag_ops, &c, &err), 0);
    sx_err_clear(&err);
    assert_int_equal(sup_start_all(sup, &err), SX_EIO);
    assert_string_equal(err.message, "could not start b: port is taken");
    assert_string_equal(trace, "start:a start:b ");
    assert_int_equal(sup_component_state(sup, 1), SUP_FAILED);
    assert_int_equal(sup_component_state(sup, 2), SUP_REGISTERED);
    assert_false(sup_ready(sup));
    trace[0] = '\0';
    assert_int_equal(sup_stop_all(sup), 0);
    assert_string_equal(trace, "stop:a "); /* only what started */
    sup_destroy(sup);
}

TL_TEST_WITH(test_abandoned_on_timeout, setup, NULL)
{
    sup_supervisor *sup = sup_create(NULL, 150);
    comp slow = {.name = "slow", .hang_on_stop = true}, fast = {.name = "fast"};
    sx_err err;
    assert_int_equal(sup_register(sup, "fast", &flag_ops, &fast, &err), 0);
    assert_int_equal(sup_register(sup, "slow", &flag_ops, &slow, &err), 0);
    assert_int_equal(sup_start_all(sup, &err), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(sup_stop_all(sup), SX_ETIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 2.0);
    assert_int_equal(sup_component_state(sup, 1), SUP_ABANDONED);
    /* The fast one still got stopped, after the slow one was given up on. */
    assert_int_equal(sup_component_state(sup, 0), SUP_STOPPED);
    assert_int_equal(atomic_load(&fast.stopped), 1);
    /* Let the abandoned stopper finish so the test ends cleanly. */
    atomic_store(&slow.release, true);
    for (int i = 0; i < 400 && atomic_load(&slow.stopped) == 0; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(atomic_load(&slow.stopped), 1);
    struct timespec ts = {0, 20 * 1000 * 1000}; /* the stopper releases its job after */
    nanosleep(&ts, NULL);
    sup_destroy(sup);
}

/* A sup_thread body that waits on its own condition variable until woken. */
typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool woken;
    atomic_bool running;
    atomic_bool ready;
} waiter;

static void *waiter_run(void *ctx)
{
    waiter *w = ctx;
    atomic_store(&w->running, true);
    pthread_mutex_lock(&w->mu);
    while (!w->woken)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void waiter_wake(void *ctx)
{
    waiter *w = ctx;
    sx_cond_raise(&w->mu, &w->cv, &w->woken);
}

static bool waiter_ready(void *ctx)
{
    waiter *w = ctx;
    return atomic_load(&w->ready);
}

/* A sup_thread body that sleeps until shutdown. */
static sup_supervisor *sleeper_sup;
static void *sleeper_run(void *ctx)
{
    atomic_int *rounds = ctx;
    do
        atomic_fetch_add(rounds, 1);
    while (sup_sleep(sleeper_sup, 5));
    return NULL;
}

/* A sup_thread body that runs a pass each time its wake is raised, until stopped. */
typedef struct looper {
    sx_wake wake;
    atomic_int rounds;
} looper;
static void *looper_run(void *ctx)
{
    looper *l = ctx;
    do
        atomic_fetch_add(&l->rounds, 1);
    while (sup_wait_next(sleeper_sup, &l->wake, 60 * 1000));
    return NULL;
}

TL_TEST_WITH(test_thread_component, setup, NULL)
{
    sup_supervisor *sup = sup_create(NULL, 2000);
    sleeper_sup = sup;
    waiter w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    atomic_int rounds = 0;
    sup_thread tw = {
        .run = waiter_run, .wake = waiter_wake, .ready = waiter_ready, .ctx = &w, .what = "w"};
    sup_thread ts = {.run = sleeper_run, .ctx = &rounds, .what = "s"};
    looper l = {.rounds = 0};
    sx_wake_init(&l.wake);
    sup_thread tl = {.run = looper_run, .stop_wake = &l.wake, .ctx = &l, .what = "l"};
    sx_err err;
    assert_int_equal(sup_register(sup, "waiter", &sup_thread_ops, &tw, &err), 0);
    assert_int_equal(sup_register(sup, "sleeper", &sup_thread_ops, &ts, &err), 0);
    assert_int_equal(sup_register(sup, "looper", &sup_thread_ops, &tl, &err), 0);
    assert_int_equal(sup_start_all(sup, &err), 0);
    /* No ready callback: always ready; with one: what it says. */
    assert_false(sup_ready(sup));
    atomic_store(&w.ready, true);
    assert_true(sup_ready(sup));
    for (int i = 0; i < 400 && (!atomic_load(&w.running) || atomic_load(&rounds) < 2); i++) {
        struct timespec t = {0, 5 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    assert_true(atomic_load(&w.running));
    /* A raised wake ends the looper's minute-long wait with another pass. */
    sx_wake_raise(&l.wake, false);
    for (int i = 0; i < 400 && atomic_load(&l.rounds) < 2; i++) {
        struct timespec t = {0, 5 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    assert_int_equal(atomic_load(&l.rounds), 2);
    /* Stop wakes the waiter, raises the looper's stop_wake and joins the three threads. */
    assert_int_equal(sup_stop_all(sup), 0);
    assert_true(w.woken);
    assert_true(l.wake.stopping);
    assert_int_equal(atomic_load(&l.rounds), 2);
    assert_false(tw.started);
    assert_false(ts.started);
    assert_false(tl.started);
    sx_wake_destroy(&l.wake);
    sup_destroy(sup);
}

/* Notices: set, replaced, cleared; absent when none; the gate does not depend on them. */
TL_TEST(test_notices)
{
    sup_supervisor *sup = sup_create(NULL, 1000);
    assert_null(sup_notices_json(sup));
    sup_set_notice(sup, "tls_http", "expires soon");
    sup_set_notice(sup, "tls_grpc", "expires too");
    sup_set_notice(sup, "tls_http", "expires sooner");
    json_t *n = sup_notices_json(sup);
    assert_non_null(n);
    assert_int_equal(json_object_size(n), 2);
    assert_string_equal(json_string_value(json_object_get(n, "tls_http")), "expires sooner");
    json_decref(n);
    sup_set_notice(sup, "tls_http", NULL);
    sup_set_notice(sup, "tls_grpc", NULL);
    sup_set_notice(sup, "never_set", NULL);
    assert_null(sup_notices_json(sup));
    sup_destroy(sup);
}

int main(void)
{
    sx_log_configure(SX_LOG_ERROR, NULL);
    return tl_run("tests", NULL, NULL);
}
