/*
 * replicas.c — the heartbeat of this replica in the replicas table, and the leader's
 * deletion of rows silent for leader.forget_after (see replicas.h).
 *
 * Design: one thread that waits on a condition variable for the next heartbeat, a
 * change of leadership (told on the leader's thread, which only raises a flag here) or
 * the stop. Each heartbeat is one statement on a pooled connection taken for it.
 *
 * Each heartbeat also carries the replica's pushes per minute over the last hour (a
 * ring sampled from sextant_xds_pushes_total at each beat), which the metrics view sums
 * over the replicas (storage/repo_fleet.h).
 *
 * The same thread keeps the audit log writable: at the first heartbeat that reaches
 * the database and then hourly, it has the monthly partitions of this month and the
 * next two created (the owner's function; idempotent, so every replica may), and once
 * it warns when serve connects as the audit log's owner, which could rewrite it.
 */
#include "server/replicas.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/minute_ring.h"
#include "server/leader.h"
#include "server/server.h"
#include "storage/audit_chain.h"
#include "storage/pg_pool.h"
#include "storage/repo_replicas.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "0.0.0-dev"
#endif

#define COMPONENT "replicas"

/* How often the audit partitions ahead are checked. */
#define AUDIT_UPKEEP_MS (3600 * 1000)

struct replicas_beat {
    struct sx_server *srv; /* borrowed */
    sup_thread thread;
    bool failing;          /* the last heartbeat failed (logged once until one works) */
    sx_wake wake;          /* woken on a change of leadership, stopping at stop */
    int64_t audit_next_ms; /* monotonic time of the next audit upkeep; 0: at once */
    bool audit_checked;    /* the owner check has run */
    sx_minute_ring pushes; /* sextant_xds_pushes_total per minute, sampled at each beat */
};

static void on_lead(void *ctx, bool leading, uint64_t term)
{
    (void)leading;
    (void)term;
    replicas_beat *r = ctx;
    sx_wake_raise(&r->wake, false);
}

/* The audit partitions ahead, and once the owner warning; failures are retried at the
 * next heartbeat and logged at most once per attempt window. */
static void audit_upkeep(replicas_beat *r, pg_conn *c)
{
    int64_t now = sx_monotonic_ms();
    if (r->audit_next_ms && now < r->audit_next_ms)
        return;
    sx_err err;
    sx_err_clear(&err);
    int created = 0;
    bool owner = false;
    int rc = audit_chain_ensure_partitions(c, &created, &err);
    if (rc == 0 && !r->audit_checked && (rc = audit_chain_session_owns(c, &owner, &err)) == 0) {
        r->audit_checked = true;
        if (owner)
            SX_WARN(COMPONENT, "serve connects as the owner of the audit log, which can rewrite "
                               "or delete its rows: give database.url a runtime role (see "
                               "database.runtime_role) and database.migrate_url the owner");
    }
    if (rc == 0 && created > 0)
        sx_log_fields(SX_LOG_INFO, COMPONENT, json_pack("{s:i}", "created", created),
                      "created monthly audit log partitions");
    if (rc != 0) {
        sx_err_prefix(&err, "could not create the audit log's partitions ahead");
        sx_log_err(SX_LOG_WARN, COMPONENT, &err);
    }
    r->audit_next_ms = now + (rc == 0 ? AUDIT_UPKEEP_MS : AUDIT_UPKEEP_MS / 60);
}

/* One heartbeat (leading as given; stopping: the last one, of a clean stop), then, on
 * the leader, the clean-up. */
static void beat(replicas_beat *r, bool leading, bool stopping)
{
    struct sx_server *srv = r->srv;
    const sextant_config *cfg = srv->config;
    uint64_t term = leading ? leader_term(srv->leader) : 0;
    int64_t now_s = (int64_t)time(NULL);
    sx_minute_ring_sample(&r->pushes, sx_metrics_total(srv->metrics, "sextant_xds_pushes_total"),
                          now_s);
    json_t *pushes = sx_minute_ring_json(&r->pushes, now_s);
    char *pushes_text = json_dumps(pushes, JSON_COMPACT);
    json_decref(pushes);
    replica_beat b = {.replica_id = cfg->replica.id,
                      .version = SEXTANT_VERSION,
                      .http_address = cfg->http.listen.text,
                      .grpc_address = cfg->grpc.listen.text,
                      .started_at = srv->start_time,
                      .leader = leading && term > 0,
                      .term = (long long)term,
                      .stopping = stopping,
                      .pushes = pushes_text};
    sx_err err;
    sx_err_clear(&err);
    pg_conn *c = NULL;
    int rc = pg_acquire(srv->db, &c, &err);
    if (rc == 0) {
        rc = replica_repo_beat(c, &b, &err);
        int deleted = 0;
        if (rc == 0 && leading && leader_is_leader(srv->leader))
            rc = replica_repo_forget(c, cfg->leader.forget_after_ms, &deleted, &err);
        if (rc == 0 && deleted > 0)
            sx_log_fields(SX_LOG_INFO, COMPONENT, json_pack("{s:i}", "deleted", deleted),
                          "forgot replicas silent for leader.forget_after");
        if (rc == 0)
            audit_upkeep(r, c);
        pg_release(srv->db, c);
    }
    free(pushes_text);
    if (rc != 0 && !r->failing)
        sx_log_err(SX_LOG_WARN, COMPONENT, &err);
    r->failing = rc != 0;
}

static void *run(void *ctx)
{
    replicas_beat *r = ctx;
    do
        beat(r, leader_is_leader(r->srv->leader), false);
    while (sup_wait_next(r->srv->sup, &r->wake, r->srv->config->leader.heartbeat_ms));
    /* A stopping replica leads nothing any more, and says it stopped (so that its silence
     * is not taken for a lost replica: server/alerts.h); said only while the database
     * answers, so that a stop never waits for one that is away. */
    if (!r->failing)
        beat(r, false, true);
    return NULL;
}

replicas_beat *replicas_create(struct sx_server *srv)
{
    replicas_beat *r = sx_calloc(1, sizeof(*r));
    r->srv = srv;
    sx_wake_init(&r->wake);
    r->thread =
        (sup_thread){.run = run, .stop_wake = &r->wake, .ctx = r, .what = "the replica heartbeat"};
    if (srv->leader)
        leader_subscribe(srv->leader, on_lead, r);
    return r;
}

sup_thread *replicas_component(replicas_beat *r)
{
    return &r->thread;
}

void replicas_destroy(replicas_beat *r)
{
    if (r == NULL)
        return;
    sx_wake_destroy(&r->wake);
    sx_free(r);
}
