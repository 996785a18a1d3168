/*
 * alerts_webhook.h — delivery of alerts to the webhooks of alerts.webhooks: one JSON
 * POST per alert, state change and webhook, signed, retried with a doubling back-off,
 * on a worker thread of its own so that the evaluation never waits on a receiver.
 *
 * The body (README "Alerts" documents it):
 *
 *   {"alert": {...GET /api/v1/alerts item...}, "state": "firing" | "resolved",
 *    "sent_at": "<RFC 3339>", "attempt": 1, "replica": "<replica id>"}
 *
 * Headers: Content-Type: application/json; X-Sextant-Signature: sha256=<lowercase hex
 * HMAC-SHA256 of the exact body bytes, keyed with the webhook's secret>;
 * X-Sextant-Delivery: "<alert id>-<state>", the same on every attempt, so a receiver can
 * drop a repeat. A 2xx answer delivers; anything else (no answer within
 * alerts.webhook_timeout, 3xx-5xx) is retried up to alerts.webhook_retries times after
 * alert_hook_backoff_ms waits; sextant_alert_webhook_deliveries_total{result} counts
 * delivered, retried (one failed attempt that will be retried), failed (given up) and
 * dropped (the queue of ALERT_HOOK_QUEUE_MAX pending deliveries was full) ones.
 *
 * Deliveries live in memory: a replica that stops (or is killed) drops what it has not
 * delivered yet; the alert itself is in the database (GET /api/v1/alerts). Logs name a
 * webhook by its origin only and never show a secret.
 *
 * Thread safety: alert_hook_send from any thread; the rest from the main thread.
 */
#ifndef SX_SERVER_ALERTS_WEBHOOK_H
#define SX_SERVER_ALERTS_WEBHOOK_H

#include <stddef.h>
#include <jansson.h>

#include "server/base/metrics.h"
#include "server/config.h"
#include "server/supervisor.h"

#define ALERT_HOOK_QUEUE_MAX 1000
/* "sha256=" and 64 hex digits and a NUL. */
#define ALERT_HOOK_SIGNATURE_LEN 72

typedef struct alert_hook alert_hook;

typedef struct alert_hook_options {
    const config_webhooks *targets; /* borrowed; must outlive the worker */
    long long timeout_ms;           /* one POST */
    int retries;                    /* retries after the first attempt */
    long long backoff_min_ms, backoff_max_ms;
    const char *replica; /* written as "replica"; copied */
    sx_metrics *metrics; /* may be NULL */
    sup_supervisor *sup; /* for sup_stopping; may be NULL */
} alert_hook_options;

/* A stopped worker (options copied). Never NULL; free with alert_hook_destroy. */
alert_hook *alert_hook_create(const alert_hook_options *o);

/* Queues one delivery of alert (the API's JSON form, borrowed: copied) in state
 * ("firing" or "resolved") to every webhook. Never blocks on the network; a full queue
 * drops the delivery (counted). Nothing happens without webhooks. */
void alert_hook_send(alert_hook *h, const json_t *alert, long long alert_id, const char *state);

/* The component "alert_webhooks", for sup_register with sup_thread_ops. */
sup_thread *alert_hook_component(alert_hook *h);

/* Frees the worker and what it still holds; its thread must have stopped. NULL allowed. */
void alert_hook_destroy(alert_hook *h);

/* "sha256=" and the lowercase hex HMAC-SHA256 of body (len bytes) keyed with secret,
 * into out. Returns out. */
char *alert_hook_sign(const char *secret, const void *body, size_t len,
                      char out[ALERT_HOOK_SIGNATURE_LEN]);

/* The wait before retry number retry (1, 2, ...): min_ms doubled retry - 1 times, at
 * most max_ms (and min_ms when max_ms is below it). */
long long alert_hook_backoff_ms(int retry, long long min_ms, long long max_ms);

#endif
