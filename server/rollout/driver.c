/*
 * driver.c — the rollout driver thread (see driver.h).
 *
 * Design: one thread per replica; each tick is one list query, one claim per active
 * deployment and one transaction per step. Errors are logged when they start and not
 * repeated every tick; the next tick retries.
 *
 * The thread sleeps until something a deployment waits for happens, with the tick as a
 * fallback (a wave's pause or timeout running out, a lease lapsing, a new deployment):
 * rollout_driver_wake is called by this replica's node-status flusher after it commits
 * ACKs, NACKs, connections or disconnections, and by the NOTIFY handlers of the events
 * channel (every replica's node-status flush and every deployment change, operator
 * actions included, write events) and of the assignments channel (pins). Wake-ups that
 * arrive during a pass fold into one more pass; passes are at least MIN_GAP_MS apart,
 * so a storm of events costs at most one list query per gap. A pass on a wake-up steps
 * only the deployments this replica already drives: leases are taken on the tick alone,
 * so which replica drives what is decided as before, and the state stays in the
 * database (leases, waves).
 */
#include "server/rollout/driver.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/metrics.h"
#include "server/events.h"
#include "server/nodes/status.h"
#include "server/rollout/rollout.h"
#include "server/server.h"
#include "server/supervisor.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/repo_deployments.h"
#include "storage/repo_pins.h"

#define COMPONENT      "rollouts"
#define GAUGE_EVERY_MS 5000
#define MIN_GAP_MS     20

struct rollout_driver {
    struct sx_server *srv;
    sx_metric *m_deployments; /* sextant_deployments{state} */
    sx_metric *m_waves;       /* sextant_rollout_wave_duration_seconds */
    sx_metric *m_steps;       /* sextant_rollout_step_failures_total */
    pthread_t thread;
    bool started;
    bool failing;
    long long gauge_due_ms;
    sx_wake wake; /* woken: something happened since the last tick began (raised by
                   * rollout_driver_wake); stopping raised by driver_stop */
};

rollout_driver *rollout_driver_create(struct sx_server *srv)
{
    rollout_driver *d = sx_calloc(1, sizeof(*d));
    d->srv = srv;
    sx_wake_init(&d->wake);
    if (srv->metrics) {
        d->m_deployments =
            sx_metrics_gauge(srv->metrics, "sextant_deployments", "Deployments by state.", "state");
        static const double bounds[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600};
        d->m_waves = sx_metrics_histogram(srv->metrics, "sextant_rollout_wave_duration_seconds",
                                          "Time from a wave's start until every node of it "
                                          "answered.",
                                          NULL, bounds, sizeof(bounds) / sizeof(bounds[0]));
        d->m_steps = sx_metrics_counter(srv->metrics, "sextant_rollout_step_failures_total",
                                        "Driver steps that failed and will be retried.", NULL);
        for (int s = 0; s < DEPLOY_STATE_COUNT; s++) {
            const char *lv[] = {deploy_state_name((deploy_state)s)};
            sx_metric_set(d->m_deployments, lv, 0);
        }
    }
    return d;
}

static void refresh_gauge(rollout_driver *d, pg_conn *c)
{
    long long counts[DEPLOY_STATE_COUNT];
    sx_err err;
    sx_err_clear(&err);
    if (d->m_deployments == NULL || deploy_repo_count_states(c, counts, &err) != 0)
        return;
    for (int s = 0; s < DEPLOY_STATE_COUNT; s++) {
        const char *lv[] = {deploy_state_name((deploy_state)s)};
        sx_metric_set(d->m_deployments, lv, (double)counts[s]);
    }
}

/* One pass over the deployments that need driving. A full pass (the tick) claims any
 * whose lease is free or lapsed; a pass on a wake-up only steps those this replica
 * already drives, so which replica drives a deployment is decided by the ticks alone. */
static void tick(rollout_driver *d, bool full)
{
    struct sx_server *srv = d->srv;
    const sextant_config *cfg = srv->config;
    const char *replica = cfg->replica.id ? cfg->replica.id : "";
    sx_err err;
    sx_err_clear(&err);
    pg_conn *c = NULL;
    if (srv->db == NULL || pg_acquire(srv->db, &c, &err) != 0) {
        if (!d->failing)
            sx_log_err(SX_LOG_WARN, COMPONENT, &err);
        d->failing = true;
        return;
    }
    sx_arena *a = sx_arena_create();
    deploy_filter f = {
        .state_mask = (1u << DEPLOY_PENDING) | (1u << DEPLOY_IN_PROGRESS) |
                      (1u << DEPLOY_CANCELING) | (1u << DEPLOY_ROLLING_BACK),
        .limit = 1000,
    };
    deploy_list list;
    int rc = deploy_repo_list(c, &f, a, &list, &err);
    char **mine = NULL;
    size_t nmine = 0;
    if (rc == 0) {
        mine = list.count ? sx_arena_alloc(a, list.count * sizeof(*mine)) : NULL;
        for (size_t i = 0; i < list.count; i++) {
            const char *owner = list.items[i].owner_replica;
            if (!full && (owner == NULL || strcmp(owner, replica) != 0))
                continue;
            bool claimed = false;
            if ((rc = deploy_repo_claim(c, list.items[i].id, replica, cfg->rollouts.lease_ms,
                                        &claimed, &err)) != 0)
                break;
            if (claimed)
                mine[nmine++] = list.items[i].id;
        }
    }
    long long now = sx_monotonic_ms();
    if (rc == 0 && now >= d->gauge_due_ms) {
        refresh_gauge(d, c);
        d->gauge_due_ms = now + GAUGE_EVERY_MS;
    }
    pg_release(srv->db, c);
    if (rc) {
        if (!d->failing)
            sx_log_err(SX_LOG_WARN, COMPONENT, &err);
        d->failing = true;
        sx_arena_destroy(a);
        return;
    }
    d->failing = false;
    /* The steps take their own connections (one transaction each). */
    for (size_t i = 0; i < nmine; i++) {
        double wave_s = 0;
        sx_err_clear(&err);
        if (rollout_step(srv, mine[i], replica, &wave_s, &err) != 0) {
            sx_log_fields(SX_LOG_WARN, COMPONENT,
                          json_pack("{s:s,s:s,s:s}", "deployment", mine[i], "error", err.message,
                                    "code", sx_code_name(err.code)),
                          "deployment %s: step failed, retrying next tick: %s", mine[i],
                          err.message);
            if (d->m_steps)
                sx_metric_inc(d->m_steps, NULL);
        } else if (wave_s > 0 && d->m_waves) {
            sx_metric_observe(d->m_waves, NULL, wave_s);
        }
    }
    sx_arena_destroy(a);
}

void rollout_driver_wake(rollout_driver *d)
{
    sx_wake_raise(&d->wake, false);
}

static void deadline_after(struct timespec *ts, long long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    if (ms < 0)
        ms = 0;
    long long ns = (long long)ts->tv_nsec + ms * 1000000LL;
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

/* Waits until the driver is woken (but at least MIN_GAP_MS after the pass began at
 * began_ms) or the next tick is due at due_ms; false when the driver is stopping. */
static bool wait_next(rollout_driver *d, long long began_ms, long long due_ms)
{
    struct timespec full, gap;
    deadline_after(&full, due_ms - sx_monotonic_ms());
    deadline_after(&gap, MIN_GAP_MS - (sx_monotonic_ms() - began_ms));
    /* Woken: keep the gap (a stop still ends the wait at once). */
    return sx_wake_wait(&d->wake, &full, &gap) && !sup_stopping(d->srv->sup);
}

static void *driver_thread(void *arg)
{
    rollout_driver *d = arg;
    long long began, due = 0;
    do {
        began = sx_monotonic_ms();
        bool full = began >= due;
        if (full)
            due = began + d->srv->config->rollouts.tick_ms;
        tick(d, full);
    } while (wait_next(d, began, due));
    return NULL;
}

static int driver_start(void *ctx, sx_err *err)
{
    rollout_driver *d = ctx;
    pthread_mutex_lock(&d->wake.mu);
    d->wake.stopping = false;
    pthread_mutex_unlock(&d->wake.mu);
    if (pthread_create(&d->thread, NULL, driver_thread, d) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not start the rollout driver thread");
    d->started = true;
    return 0;
}

static void driver_stop(void *ctx)
{
    rollout_driver *d = ctx;
    sx_wake_raise(&d->wake, true);
    if (d->started)
        pthread_join(d->thread, NULL);
    d->started = false;
}

static bool driver_ready(void *ctx)
{
    (void)ctx;
    return true;
}

static const sup_ops driver_ops = {driver_start, driver_stop, driver_ready};

static void on_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    (void)payload;
    rollout_driver_wake(ctx);
}

static void on_wake(void *ctx)
{
    rollout_driver_wake(ctx);
}

int rollout_driver_register(rollout_driver *d, sx_err *err)
{
    struct sx_server *srv = d->srv;
    int rc = 0;
    static const char *const channels[] = {EVENTS_NOTIFY_CHANNEL, PINS_NOTIFY_CHANNEL};
    for (size_t i = 0; srv->listener && i < sizeof(channels) / sizeof(channels[0]); i++)
        if ((rc = pg_listener_subscribe(srv->listener, channels[i], on_notify, i ? NULL : on_wake,
                                        d, err)) != 0)
            return rc;
    if (srv->nodes)
        node_status_on_flush(srv->nodes, on_wake, d);
    return sup_register(srv->sup, "rollouts", &driver_ops, d, err);
}

void rollout_driver_destroy(rollout_driver *d)
{
    if (d == NULL)
        return;
    sx_wake_destroy(&d->wake);
    sx_free(d);
}
