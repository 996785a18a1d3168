/*
 * fleet.c — the sextant_proxies{state} and sextant_proxy_versions{group,version}
 * gauges, refreshed every 10 s, and the periodic
 * sweep that reports stale proxies and prunes old live events (see fleet.h).
 *
 * Design: one thread. The counts come from node_repo_count_states, so the gauge,
 * GET /api/v1/proxies?state= and the per-group counts of GET /api/v1/groups all judge
 * a node's state with the same SQL expression; every replica refreshes its gauge. The
 * sweep runs on the leader only (server/leader.h): it marks newly stale nodes
 * (node_repo_mark_stale) and writes their proxy_stale events in one transaction, so a
 * node is reported once even when two replicas briefly both sweep, and deletes the
 * events older than events.retention and the idempotency keys older than
 * api.idempotency_ttl (server/idem.h). It asks whether this replica still leads before
 * each step, so a replica that loses the lead stops after the transaction in flight.
 * Gaining the lead wakes the thread, so a new leader sweeps at once; a stop wakes it
 * too.
 */
#include "server/fleet.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "server/base/arena.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/metrics.h"
#include "server/events.h"
#include "server/idem.h"
#include "server/leader.h"
#include "server/server.h"
#include "server/supervisor.h"
#include "storage/pg_pool.h"
#include "storage/repo_events.h"
#include "storage/repo_nodes.h"

#define FLEET_REFRESH_MS 10000
/* Nodes marked stale per transaction; a larger backlog takes several. */
#define STALE_BATCH 500

struct fleet_monitor {
    struct sx_server *srv; /* borrowed */
    sx_metric *m_proxies;  /* sextant_proxies{state} */
    sx_metric *m_versions; /* sextant_proxy_versions{group,version} */
    sx_metric *m_sweeps;   /* sextant_fleet_sweeps_total */
    sup_thread thread;     /* the refresh and sweep loop */
    bool failing;          /* the last refresh failed (logged once until it works again) */
    bool sweep_failing;    /* the same for the sweep */
    sx_wake wake;          /* woken when the lead is gained, stopping at stop */
};

static void *fleet_thread(void *arg);

fleet_monitor *fleet_create(struct sx_server *srv)
{
    fleet_monitor *f = sx_calloc(1, sizeof(*f));
    f->srv = srv;
    sx_wake_init(&f->wake);
    f->thread = (sup_thread){
        .run = fleet_thread, .stop_wake = &f->wake, .ctx = f, .what = "the fleet health"};
    if (srv->metrics) {
        f->m_proxies = sx_metrics_gauge(srv->metrics, "sextant_proxies",
                                        "Proxies by state: connected, stale (no activity for "
                                        "fleet.stale_after) or disconnected.",
                                        "state");
        f->m_versions = sx_metrics_gauge(
            srv->metrics, "sextant_proxy_versions",
            "Proxies not disconnected, by group and the snapshot version they last ACKed "
            "(\"none\" before their first ACK); refreshed with sextant_proxies.",
            "group,version");
        f->m_sweeps = sx_metrics_counter(srv->metrics, "sextant_fleet_sweeps_total",
                                         "Fleet sweeps (stale proxies, old events) this replica "
                                         "ran; only the leader sweeps.",
                                         NULL);
    }
    /* A new leader sweeps at once. */
    if (srv->leader)
        leader_subscribe(srv->leader, leader_wake_on_lead, &f->wake);
    return f;
}

/* Logs err when *failing turns true (one line per outage, not one per retry) and
 * records whether rc failed; returns whether it succeeded. */
static bool outcome(int rc, const sx_err *err, bool *failing)
{
    if (rc != 0 && !*failing)
        sx_log_err(SX_LOG_WARN, "fleet", err);
    *failing = rc != 0;
    return rc == 0;
}

/* One refresh; errors are logged when they start, not on every retry. */
static void refresh(fleet_monitor *f)
{
    struct sx_server *srv = f->srv;
    node_thresholds t = {srv->config->fleet.stale_after_ms,
                         srv->config->fleet.disconnected_after_ms};
    node_state_counts n;
    node_version_count *v = NULL;
    size_t nv = 0;
    sx_arena *a = sx_arena_create();
    sx_err err;
    sx_err_clear(&err);
    pg_conn *c = NULL;
    int rc = pg_acquire(srv->db, &c, &err);
    if (rc == 0) {
        rc = node_repo_count_states(c, &t, &n, &err);
        if (rc == 0)
            rc = node_repo_count_versions(c, &t, a, &v, &nv, &err);
        pg_release(srv->db, c);
    }
    if (!outcome(rc, &err, &f->failing) || f->m_proxies == NULL) {
        sx_arena_destroy(a);
        return;
    }
    const char *const **labels = sx_arena_alloc(a, (nv ? nv : 1) * sizeof *labels);
    double *counts = sx_arena_alloc(a, (nv ? nv : 1) * sizeof *counts);
    for (size_t i = 0; i < nv; i++) {
        const char **l = sx_arena_alloc(a, 2 * sizeof *l);
        l[0] = v[i].group;
        l[1] = v[i].version;
        labels[i] = l;
        counts[i] = (double)v[i].count;
    }
    sx_metric_set_all(f->m_versions, nv, labels, counts);
    sx_arena_destroy(a);
    const char *connected[] = {"connected"}, *stale[] = {"stale"},
               *disconnected[] = {"disconnected"};
    sx_metric_set(f->m_proxies, connected, (double)n.connected);
    sx_metric_set(f->m_proxies, stale, (double)n.stale);
    sx_metric_set(f->m_proxies, disconnected, (double)n.disconnected);
}

typedef struct stale_batch {
    fleet_monitor *f;
    size_t count; /* nodes marked by the last run */
    bool lost;    /* mark lost (disconnected_after) instead of stale */
} stale_batch;

/* One transaction: up to STALE_BATCH nodes marked stale (proxy_stale events), or lost —
 * silent past fleet.disconnected_after while still marked connected, as when their
 * replica died (proxy_disconnected events, reason "no_activity"). */
static int mark_stale(pg_conn *c, void *arg, sx_err *err)
{
    stale_batch *b = arg;
    const sextant_config *cfg = b->f->srv->config;
    b->count = 0;
    sx_arena *a = sx_arena_create();
    node_stale_list list;
    int rc =
        b->lost
            ? node_repo_mark_lost(c, cfg->fleet.disconnected_after_ms, STALE_BATCH, a, &list, err)
            : node_repo_mark_stale(c, cfg->fleet.stale_after_ms, STALE_BATCH, a, &list, err);
    for (size_t i = 0; rc == 0 && i < list.count; i++) {
        const node_stale *n = &list.items[i];
        json_t *data =
            b->lost ? json_pack("{s:s,s:s?}", "reason", "no_activity", "last_seen", n->last_seen)
                    : json_pack("{s:s?}", "last_seen", n->last_seen);
        sx_event e = {.type = b->lost ? EVENT_PROXY_DISCONNECTED : EVENT_PROXY_STALE,
                      .node_id = n->node_id,
                      .group = n->group,
                      .data = data};
        rc = events_emit(c, cfg->replica.id, &e, err);
        json_decref(data);
    }
    if (rc == 0)
        b->count = list.count;
    sx_arena_destroy(a);
    return rc;
}

/* Whether the sweep may take its next step: this replica leads and is not stopping. */
static bool may_sweep(const fleet_monitor *f)
{
    return leader_is_leader(f->srv->leader) && !sup_stopping(f->srv->sup);
}

/* The sweep: stale nodes reported, old events pruned; errors logged when they start. */
static void sweep(fleet_monitor *f)
{
    struct sx_server *srv = f->srv;
    sx_err err;
    sx_err_clear(&err);
    stale_batch b = {f, 0, false};
    int rc = 0;
    /* Stale nodes first, then lost ones, each in batches until a short one. */
    for (int lost = 0; lost < 2 && rc == 0; lost++) {
        if (!may_sweep(f))
            return;
        b.lost = lost;
        do {
            rc = pg_tx(srv->db, mark_stale, &b, &err);
        } while (rc == 0 && b.count == STALE_BATCH && may_sweep(f));
    }
    if (rc == 0 && !may_sweep(f))
        return;
    if (rc == 0) {
        pg_conn *c = NULL;
        long long deleted = 0;
        if ((rc = pg_acquire(srv->db, &c, &err)) == 0) {
            rc = event_repo_prune(c, srv->config->events.retention_ms, &deleted, &err);
            if (rc == 0 && deleted > 0)
                sx_log_fields(SX_LOG_DEBUG, "fleet",
                              json_pack("{s:I}", "deleted", (json_int_t)deleted),
                              "pruned old events");
            if (rc == 0 && (rc = idem_prune(srv, c, &deleted, &err)) == 0 && deleted > 0)
                sx_log_fields(SX_LOG_DEBUG, "fleet",
                              json_pack("{s:I}", "deleted", (json_int_t)deleted),
                              "pruned expired idempotency keys");
            pg_release(srv->db, c);
        }
    }
    if (outcome(rc, &err, &f->sweep_failing) && f->m_sweeps)
        sx_metric_inc(f->m_sweeps, NULL);
}

static void *fleet_thread(void *arg)
{
    fleet_monitor *f = arg;
    do {
        refresh(f);
        /* A database that is away is logged once, by refresh. */
        if (!f->failing && may_sweep(f))
            sweep(f);
    } while (sup_wait_next(f->srv->sup, &f->wake, FLEET_REFRESH_MS));
    return NULL;
}

sup_thread *fleet_component(fleet_monitor *f)
{
    return &f->thread;
}

void fleet_destroy(fleet_monitor *f)
{
    if (f == NULL)
        return;
    sx_wake_destroy(&f->wake);
    sx_free(f);
}
