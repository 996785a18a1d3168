/*
 * repo_alerts.h — Sextant's own alerts (table alerts) and the four readings their rules
 * judge: the NACK rate of each group (events), proxies disconnected (proxy_nodes),
 * deployments that failed or rolled back (deployments) and replicas whose heartbeat
 * stopped (replicas).
 *
 * An alert row is one episode of a rule's condition on one subject: alert_repo_fire
 * inserts it firing unless one is firing already (a partial unique index decides, so
 * two evaluations at once still fire it once), alert_repo_resolve ends it. Every
 * reading is computed in SQL against the database's now(), never the caller's clock.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Failures:
 * SX_EINVAL for bad input (the message names the field), database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_ALERTS_H
#define SX_STORAGE_REPO_ALERTS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

/* One alert row. */
typedef struct alert_record {
    long long id;
    char *rule;        /* nack_rate, proxy_disconnected, deployment_failed, replica_lost */
    char *subject;     /* a group, a node id, a deployment id or a replica id */
    char *state;       /* "firing" or "resolved" */
    char *started_at;  /* RFC 3339 UTC */
    char *resolved_at; /* NULL while firing */
    double value;      /* the rule's last measured value */
    char *message;
} alert_record;

REPO_LIST(alert_list, alert_record);

/* What one rule reads for one subject whose condition holds now. */
typedef struct alert_reading {
    char *subject;
    char *group;    /* the group the subject belongs to, when there is one; NULL otherwise */
    double value;   /* rate (0..1) or seconds */
    long long a, b; /* rule-specific counts: NACKs and responses (nack_rate); else 0 */
    char *text;     /* rule-specific: the disconnect reason, "state: reason"; may be "" */
} alert_reading;

typedef struct alert_readings {
    alert_reading *items;
    size_t count;
} alert_readings;

/* The most subjects one reading returns (the rest wait for the next evaluation). */
#define ALERT_READINGS_MAX 1000

/* Groups whose NACK rate — config_rejected events over config_applied plus
 * config_rejected events of the last window_ms — is above threshold (0..1), among
 * groups with at least min_responses such events. subject = group. */
int alert_repo_nack_rates(pg_conn *c, long long window_ms, long long min_responses,
                          double threshold, sx_arena *a, alert_readings *out,
                          sx_err *err) SX_MUSTCHECK;

/* Nodes disconnected for longer than after_ms but not longer than forget_ms (value:
 * seconds disconnected; text: the reason the stream ended). subject = node id. */
int alert_repo_disconnected(pg_conn *c, long long after_ms, long long forget_ms, sx_arena *a,
                            alert_readings *out, sx_err *err) SX_MUSTCHECK;

/* Deployments that entered failed, rolled_back or rollback_failed within the last
 * window_ms (value 1; group: their groups joined with commas; text: "state: reason").
 * subject = deployment id. */
int alert_repo_deployments_failed(pg_conn *c, long long window_ms, sx_arena *a, alert_readings *out,
                                  sx_err *err) SX_MUSTCHECK;

/* Replicas whose last heartbeat is older than lost_ms and was not the one they send as
 * they stop cleanly (value: seconds since it). subject = replica id. */
int alert_repo_replicas_lost(pg_conn *c, long long lost_ms, sx_arena *a, alert_readings *out,
                             sx_err *err) SX_MUSTCHECK;

/* Every firing alert (at most ALERT_READINGS_MAX * 4), oldest first. */
int alert_repo_firing(pg_conn *c, sx_arena *a, alert_list *out, sx_err *err) SX_MUSTCHECK;

/* Inserts a firing alert for rule and subject unless one is firing: *fired tells which,
 * and *out (when fired) is the new row. */
int alert_repo_fire(pg_conn *c, const char *rule, const char *subject, double value,
                    const char *message, sx_arena *a, alert_record *out, bool *fired,
                    sx_err *err) SX_MUSTCHECK;

/* Records the last value and message of firing alert id (nothing when it is not
 * firing). */
int alert_repo_touch(pg_conn *c, long long id, double value, const char *message,
                     sx_err *err) SX_MUSTCHECK;

/* Resolves firing alert id now: *resolved tells whether it was firing, *out (then) the
 * resolved row. */
int alert_repo_resolve(pg_conn *c, long long id, sx_arena *a, alert_record *out, bool *resolved,
                       sx_err *err) SX_MUSTCHECK;

/* One page of alerts, newest first; state NULL for all, else "firing" or "resolved"
 * (SX_EINVAL otherwise). */
int alert_repo_list(pg_conn *c, const char *state, int limit, const char *cursor, sx_arena *a,
                    alert_list *out, sx_err *err) SX_MUSTCHECK;

/* The number of firing alerts of each of the n rules in rules into counts[]. */
int alert_repo_count_firing(pg_conn *c, const char *const *rules, size_t n, long long *counts,
                            sx_err *err) SX_MUSTCHECK;

#endif
