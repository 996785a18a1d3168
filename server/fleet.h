/*
 * fleet.h — fleet health metrics: the sextant_proxies{state} gauge, and the sweep that
 * reports stale proxies and prunes old live events and expired idempotency keys.
 *
 * A small supervised component: a thread that every 10 s counts the fleet's nodes by
 * state (connected, stale, disconnected) with node_repo_count_states, the same SQL the
 * REST API lists and counts with, and sets the gauge, on every replica. On the leader
 * only (server/leader.h; at once when it gains the lead, then every 10 s) it then
 * sweeps: writes one proxy_stale event (server/events.h) per connected node that has
 * newly gone without activity for fleet.stale_after (once per node until it is seen
 * again), marks disconnected (reason no_activity, one proxy_disconnected event) the
 * nodes still marked connected but silent past fleet.disconnected_after — their replica
 * died — and deletes the events older than events.retention and the idempotency keys
 * older than api.idempotency_ttl (server/idem.h); sextant_fleet_sweeps_total
 * counts the sweeps. It is not a readiness dependency; while the database is away the
 * gauge keeps its last values.
 */
#ifndef SX_SERVER_FLEET_H
#define SX_SERVER_FLEET_H

#include "server/base/err.h"
#include "server/supervisor.h"

struct sx_server;
typedef struct fleet_monitor fleet_monitor;

/* Creates the monitor for srv (borrowed: its config, pool, metrics, supervisor and
 * leader, which it subscribes to: create it after srv->leader) and registers the
 * metrics. Never fails; free with fleet_destroy. */
fleet_monitor *fleet_create(struct sx_server *srv);

/* The component "fleet", for sup_register with sup_thread_ops: always ready (fleet
 * metrics never hold up readiness). */
sup_thread *fleet_component(fleet_monitor *f);

/* Frees the monitor; its thread must have stopped (sup_stop_all). NULL allowed. */
void fleet_destroy(fleet_monitor *f);

#endif
