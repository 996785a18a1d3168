/*
 * replicas.h — this replica's heartbeat in the replicas table, and the leader's
 * clean-up of replicas long gone: what GET /api/v1/replicas shows.
 *
 * A small supervised component: a thread that every leader.heartbeat upserts this
 * replica's row (storage/repo_replicas.h: id, version, addresses, start time, whether
 * it leads and its term) and, on the leader only (server/leader.h), deletes the rows
 * silent for leader.forget_after. A change of leadership wakes it, so the table says
 * who leads within a round trip of the change; a clean stop writes a last heartbeat
 * that no longer leads. Failures are logged once per outage and retried at the next
 * heartbeat. Not a readiness dependency.
 */
#ifndef SX_SERVER_REPLICAS_H
#define SX_SERVER_REPLICAS_H

#include "server/supervisor.h"

struct sx_server;
typedef struct replicas_beat replicas_beat;

/* Creates the heartbeat for srv (borrowed: its config, pool, supervisor and leader,
 * which it subscribes to: create it after srv->leader, before the components start).
 * Never fails; free with replicas_destroy. */
replicas_beat *replicas_create(struct sx_server *srv);

/* The component "replicas", for sup_register with sup_thread_ops; always ready. */
sup_thread *replicas_component(replicas_beat *r);

/* Frees the heartbeat; its thread must have stopped. NULL allowed. */
void replicas_destroy(replicas_beat *r);

#endif
