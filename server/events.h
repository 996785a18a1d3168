/*
 * events.h — live events: what happened to proxies and deployments, written by the
 * code that made it happen and streamed by GET /api/v1/events from every replica.
 *
 * A writer calls events_emit on the connection of its own transaction, so an event
 * commits (and is streamed) only with what it reports, and vanishes with it on
 * rollback. The events travel through the database (table events, NOTIFY on
 * EVENTS_NOTIFY_CHANNEL), never through a replica's memory, so a client on any
 * replica sees what every replica wrote. server/events_feed.h reads them back.
 *
 * The types, the data fields their writers put in, and the RBAC resource a reader
 * needs "read" on to see them:
 *
 *   type                 data                              written by            resource
 *   config_applied       version, group                    server/nodes/status.c proxies
 *   config_rejected      version, error                    server/nodes/status.c proxies
 *   proxy_connected      protocol, client, replica         server/nodes/status.c proxies
 *   proxy_disconnected   reason                            server/nodes/status.c proxies
 *   proxy_stale          last_seen                         server/fleet.c        proxies
 *   wave_started, wave_completed, rollout_completed,       the rollout driver    deployments
 *   rollout_failed, rollback_started, rollback_completed
 *   rollout_paused, rollout_resumed, rollout_canceled  reason, by      operator actions deployments
 *   deployment_started   strategy, waves, config, by       the rollout driver    deployments
 *   config_created,      namespace, name, version,         server/apply.c        configs
 *   config_updated,      groups, by (config_updated: also
 *   config_deleted       renamed_from when renamed)
 *   snapshot_generated   version, reason, by, staged_for   the snapshot writer   snapshots
 *   alert_firing,        id, rule, subject, value, message server/alerts.c        alerts
 *   alert_resolved
 *
 * Events without an author field are written by the fleet and the proxies; the others
 * name who made the change ("by"). The replica an event is written by is the one set
 * with events_set_replica unless the writer names another.
 */
#ifndef SX_SERVER_EVENTS_H
#define SX_SERVER_EVENTS_H

#include <stdbool.h>
#include <jansson.h>

#include "server/base/err.h"
#include "storage/pg_pool.h"

/* The channel NOTIFYed (empty payload, once per transaction) when events commit. */
#define EVENTS_NOTIFY_CHANNEL "sextant_events"

/* The event types (the CHECK of table events names the same list). */
#define EVENT_CONFIG_APPLIED     "config_applied"
#define EVENT_CONFIG_REJECTED    "config_rejected"
#define EVENT_WAVE_STARTED       "wave_started"
#define EVENT_WAVE_COMPLETED     "wave_completed"
#define EVENT_ROLLOUT_COMPLETED  "rollout_completed"
#define EVENT_ROLLOUT_FAILED     "rollout_failed"
#define EVENT_ROLLBACK_STARTED   "rollback_started"
#define EVENT_ROLLBACK_COMPLETED "rollback_completed"
#define EVENT_ROLLOUT_PAUSED     "rollout_paused"
#define EVENT_ROLLOUT_RESUMED    "rollout_resumed"
#define EVENT_ROLLOUT_CANCELED   "rollout_canceled"
#define EVENT_PROXY_CONNECTED    "proxy_connected"
#define EVENT_PROXY_DISCONNECTED "proxy_disconnected"
#define EVENT_PROXY_STALE        "proxy_stale"
#define EVENT_CONFIG_CREATED     "config_created"
#define EVENT_CONFIG_UPDATED     "config_updated"
#define EVENT_CONFIG_DELETED     "config_deleted"
#define EVENT_SNAPSHOT_GENERATED "snapshot_generated"
#define EVENT_DEPLOYMENT_STARTED "deployment_started"
#define EVENT_ALERT_FIRING       "alert_firing"
#define EVENT_ALERT_RESOLVED     "alert_resolved"

/* How many types there are; events_type_name(i) for i below it names each once. */
#define EVENTS_NTYPES 21

/* The replica id events_emit writes when its caller names none (copied; set once at
 * start, before any writer runs). */
void events_set_replica(const char *replica_id);

/* One event to write; every pointer is borrowed for the call. */
typedef struct sx_event {
    const char *type;          /* one of the names above */
    const char *deployment_id; /* NULL allowed */
    const char *node_id;       /* NULL allowed */
    const char *group;         /* NULL allowed */
    const json_t *data;        /* object, borrowed; NULL = {} */
} sx_event;

/* Inserts e on c (inside the caller's transaction when there is one) and NOTIFYs
 * EVENTS_NOTIFY_CHANNEL (empty payload: a transaction's notifications fold into one),
 * so it is streamed only once committed. replica_id (NULL = the one events_set_replica
 * set, else "") names the writing replica.
 * SX_EINVAL for an unknown type, a deployment_id that is not a UUID or data that is not an object
 * (nothing written); database errors otherwise, after which the caller's transaction is aborted. */
int events_emit(pg_conn *c, const char *replica_id, const sx_event *e, sx_err *err) SX_MUSTCHECK;

/* events_emit of n events in one statement, in their order, with one NOTIFY: what a
 * writer of many events in one transaction (the node-status flush) calls. Nothing is
 * written when one of them is refused (SX_EINVAL, naming it). */
int events_emit_many(pg_conn *c, const char *replica_id, const sx_event *e, size_t n,
                     sx_err *err) SX_MUSTCHECK;

/* The index of type in the list (0 .. EVENTS_NTYPES-1), -1 when it is none of them. */
int events_type_index(const char *type);

/* The i-th type name (static), NULL outside 0 .. EVENTS_NTYPES-1. */
const char *events_type_name(int i);

/* The RBAC resource type a reader needs "read" on to see events of type:
 * "deployments" for wave_*, rollout_*, rollback_* and deployment_started, "configs" for
 * config_created/updated/deleted, "snapshots" for snapshot_generated, "alerts" for
 * alert_firing/resolved, "proxies" for the
 * others; NULL for an unknown type. Static string. */
const char *events_type_resource(const char *type);

#endif
