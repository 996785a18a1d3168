/*
 * replicas.c — the heartbeat of this replica in the replicas table, and the leader's
 * deletion of rows silent for leader.forget_after (see replicas.h).
 *
 * Design: one thread that waits on a condition variable for the next heartbeat, a
 * change of leadership (told on the leader's thread, which only raises a flag here) or
 * the stop. Each heartbeat is one statement on a pooled connection taken for it.
 */
#include "server/replicas.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/leader.h"
#include "server/server.h"
#include "storage/pg_pool.h"
#include "storage/repo_replicas.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "0.0.0-dev"
#endif

#define COMPONENT "replicas"

struct replicas_beat {
    struct sx_server *srv; /* borrowed */
    sup_thread thread;
    bool failing; /* the last heartbeat failed (logged once until one works) */
    sx_wake wake; /* woken on a change of leadership, stopping at stop */
};

static void on_lead(void *ctx, bool leading, uint64_t term)
{
    (void)leading;
    (void)term;
    replicas_beat *r = ctx;
    sx_wake_raise(&r->wake, false);
}

static void wake_stop(void *ctx)
{
    replicas_beat *r = ctx;
    sx_wake_raise(&r->wake, true);
}

/* One heartbeat (leading as given), then, on the leader, the clean-up. */
static void beat(replicas_beat *r, bool leading)
{
    struct sx_server *srv = r->srv;
    const sextant_config *cfg = srv->config;
    uint64_t term = leading ? leader_term(srv->leader) : 0;
    replica_beat b = {.replica_id = cfg->replica.id,
                      .version = SEXTANT_VERSION,
                      .http_address = cfg->http.listen.text,
                      .grpc_address = cfg->grpc.listen.text,
                      .started_at = srv->start_time,
                      .leader = leading && term > 0,
                      .term = (long long)term};
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
        pg_release(srv->db, c);
    }
    if (rc != 0 && !r->failing)
        sx_log_err(SX_LOG_WARN, COMPONENT, &err);
    r->failing = rc != 0;
}

/* Waits one heartbeat or until woken; false when stopping. */
static bool wait_next(replicas_beat *r)
{
    struct timespec until = sx_deadline_in(r->srv->config->leader.heartbeat_ms);
    return sx_wake_wait(&r->wake, &until, NULL) && !sup_stopping(r->srv->sup);
}

static void *run(void *ctx)
{
    replicas_beat *r = ctx;
    do
        beat(r, leader_is_leader(r->srv->leader));
    while (wait_next(r));
    /* A stopping replica leads nothing any more; said only while the database answers,
     * so that a stop never waits for one that is away. */
    if (!r->failing)
        beat(r, false);
    return NULL;
}

replicas_beat *replicas_create(struct sx_server *srv)
{
    replicas_beat *r = sx_calloc(1, sizeof(*r));
    r->srv = srv;
    sx_wake_init(&r->wake);
    r->thread =
        (sup_thread){.run = run, .wake = wake_stop, .ctx = r, .what = "the replica heartbeat"};
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
