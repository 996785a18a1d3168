/*
 * alerts.h — Sextant's own alerts: four rules evaluated by the leader over what the
 * database holds, their state in table alerts, the alert_firing / alert_resolved live
 * events, the sextant_alerts_firing{rule} gauge, and delivery to the webhooks
 * (server/alerts_webhook.h).
 *
 * The rules (thresholds and windows are alerts.* keys, server/config_keys.c):
 *
 *   rule                subject       holds while
 *   nack_rate           group         the group's NACKs are more than nack_rate_percent of
 *                                     its ACKs and NACKs (config_applied/config_rejected
 *                                     events) over nack_window, with nack_min_responses
 *   proxy_disconnected  node id       the proxy has been disconnected for longer than
 *                                     disconnected_after (and not disconnected_forget)
 *   deployment_failed   deployment id the deployment ended failed, rolled_back or
 *                                     rollback_failed within deployment_window
 *   replica_lost        replica id    the replica's last heartbeat is older than
 *                                     replica_lost_after (default three leader.heartbeat)
 *
 * An alert fires once per episode: when a rule starts to hold for a subject, one row
 * (state firing) and one alert_firing event are written in one transaction, then the
 * webhooks are told; while it holds, only its last value and message are updated; when
 * it stops holding, the row is resolved with one alert_resolved event, and the webhooks
 * are told again. Evaluation runs every alerts.interval, on the leader only, and at once
 * when a replica gains the lead; every replica refreshes the gauge from the table.
 */
#ifndef SX_SERVER_ALERTS_H
#define SX_SERVER_ALERTS_H

#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/repo_alerts.h"

struct sx_server;
typedef struct alerts alerts;

/* Creates the evaluator and its webhook worker for srv (borrowed: config, pool,
 * metrics, supervisor and leader, which it subscribes to: create it after srv->leader).
 * Never fails; free with alerts_destroy. */
alerts *alerts_create(struct sx_server *srv);

/* Registers the components "alerts" (the evaluation) and "alert_webhooks" (the
 * delivery worker) with srv's supervisor; both are always ready. */
int alerts_register(alerts *al, sx_err *err) SX_MUSTCHECK;

/* Frees the evaluator; its threads must have stopped. NULL allowed. */
void alerts_destroy(alerts *al);

/* The JSON form of an alert (GET /api/v1/alerts items, the webhooks' "alert"): id,
 * rule, subject, state, started_at, resolved_at (null while firing), value, message. New
 * reference. */
json_t *alerts_json(const alert_record *r);

/* One page of alerts, newest first; state NULL for all, else "firing" or "resolved"
 * (SX_EINVAL otherwise). Results live in a. */
int alerts_list(struct sx_server *srv, const char *state, int limit, const char *cursor,
                sx_arena *a, alert_list *out, sx_err *err) SX_MUSTCHECK;

#endif
