/*
 * alerts.c — the evaluation of Sextant's own alert rules (see alerts.h).
 *
 * Design: one thread, shaped like the fleet sweep (server/fleet.c). Every
 * alerts.interval each replica refreshes sextant_alerts_firing{rule} from the table;
 * the leader then evaluates: it reads, on one pooled connection, the subjects each rule
 * holds for (storage/repo_alerts.h, one SELECT per rule) and the alerts firing now, and
 * compares the two lists. A subject that holds and has no firing alert is fired, a
 * firing alert whose subject no longer holds is resolved — each in a transaction of its
 * own with its live event, so a crash leaves no row without its event — and the others
 * get their last value. The table's partial unique index makes firing idempotent, so
 * two replicas that both believe they lead for a moment still fire an episode once.
 * Webhooks are handed the alert after its transaction committed, never before, and the
 * worker (server/alerts_webhook.h) posts it on its own thread. The evaluator asks
 * whether it still leads before each change, so a replica that lost the lead stops
 * after the transaction in flight.
 */
#include "server/alerts.h"

#include <stdio.h>
#include <string.h>

#include "server/alerts_webhook.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/metrics.h"
#include "server/catalog.h"
#include "server/events.h"
#include "server/leader.h"
#include "server/server.h"
#include "server/supervisor.h"
#include "storage/pg_pool.h"

#define COMPONENT "alerts"

static const char *const RULES[] = {"nack_rate", "proxy_disconnected", "deployment_failed",
                                    "replica_lost"};
#define NRULES (sizeof RULES / sizeof RULES[0])

struct alerts {
    struct sx_server *srv; /* borrowed */
    alert_hook *hook;      /* owned */
    sx_metric *m_firing;   /* sextant_alerts_firing{rule} */
    sx_metric *m_evals;    /* sextant_alert_evaluations_total */
    sup_thread thread;
    sx_wake wake; /* woken when the lead is gained, stopping at stop */
    bool failing; /* the last pass failed (logged once until one works again) */
};

/* One subject a rule holds for now. */
typedef struct wanted {
    const char *rule;
    const char *subject;
    double value;
    const char *message;
    bool matched; /* a firing alert covers it */
} wanted;

json_t *alerts_json(const alert_record *r)
{
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s?,s:f,s:s}", "id", (json_int_t)r->id, "rule", r->rule,
                     "subject", r->subject, "state", r->state, "started_at", r->started_at,
                     "resolved_at", r->resolved_at, "value", r->value, "message",
                     r->message ? r->message : "");
}

int alerts_list(struct sx_server *srv, const char *state, int limit, const char *cursor,
                sx_arena *a, alert_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c,
                           c ? alert_repo_list(c, state, limit, cursor, a, out, err) : err->code);
}

static void *alerts_thread(void *arg);

alerts *alerts_create(struct sx_server *srv)
{
    const sextant_config *cfg = srv->config;
    alerts *al = sx_calloc(1, sizeof(*al));
    al->srv = srv;
    sx_wake_init(&al->wake);
    al->thread =
        (sup_thread){.run = alerts_thread, .stop_wake = &al->wake, .ctx = al, .what = "the alerts"};
    alert_hook_options ho = {.targets = &cfg->alerts.webhooks,
                             .timeout_ms = cfg->alerts.webhook_timeout_ms,
                             .retries = (int)cfg->alerts.webhook_retries,
                             .backoff_min_ms = cfg->alerts.webhook_backoff_min_ms,
                             .backoff_max_ms = cfg->alerts.webhook_backoff_max_ms,
                             .replica = cfg->replica.id,
                             .metrics = srv->metrics,
                             .sup = srv->sup};
    al->hook = alert_hook_create(&ho);
    if (srv->metrics) {
        al->m_firing = sx_metrics_gauge(srv->metrics, "sextant_alerts_firing",
                                        "Alerts firing now, by rule (GET /api/v1/alerts?state="
                                        "firing); refreshed every alerts.interval.",
                                        "rule");
        al->m_evals = sx_metrics_counter(srv->metrics, "sextant_alert_evaluations_total",
                                         "Evaluations of the alert rules this replica ran; only "
                                         "the leader evaluates.",
                                         NULL);
        for (size_t i = 0; i < NRULES; i++) {
            const char *l[] = {RULES[i]};
            sx_metric_set(al->m_firing, l, 0);
        }
    }
    /* A new leader evaluates at once. */
    if (srv->leader)
        leader_subscribe(srv->leader, leader_wake_on_lead, &al->wake);
    return al;
}

int alerts_register(alerts *al, sx_err *err)
{
    int rc = sup_register(al->srv->sup, "alert_webhooks", &sup_thread_ops,
                          alert_hook_component(al->hook), err);
    return rc ? rc : sup_register(al->srv->sup, "alerts", &sup_thread_ops, &al->thread, err);
}

void alerts_destroy(alerts *al)
{
    if (al == NULL)
        return;
    alert_hook_destroy(al->hook);
    sx_wake_destroy(&al->wake);
    sx_free(al);
}

/* ------------------------------------------------------------------ evaluation */

static bool may_evaluate(const alerts *al)
{
    return al->srv->config->alerts.enabled && leader_is_leader(al->srv->leader) &&
           !sup_stopping(al->srv->sup);
}

typedef struct change {
    alerts *al;
    const wanted *w;      /* fire: what to fire */
    long long resolve_id; /* resolve: the alert */
    sx_arena *a;
    alert_record rec; /* out: the row written */
    bool changed;     /* out: the row was written (not already firing / resolved) */
} change;

static int emit_event(pg_conn *c, const alerts *al, const alert_record *r, sx_err *err)
{
    json_t *data =
        json_pack("{s:I,s:s,s:s,s:f,s:s}", "id", (json_int_t)r->id, "rule", r->rule, "subject",
                  r->subject, "value", r->value, "message", r->message ? r->message : "");
    sx_event e = {.type =
                      strcmp(r->state, "firing") == 0 ? EVENT_ALERT_FIRING : EVENT_ALERT_RESOLVED,
                  .data = data};
    int rc = events_emit(c, al->srv->config->replica.id, &e, err);
    json_decref(data);
    return rc;
}

static int fire_tx(pg_conn *c, void *arg, sx_err *err)
{
    change *ch = arg;
    int rc = alert_repo_fire(c, ch->w->rule, ch->w->subject, ch->w->value, ch->w->message, ch->a,
                             &ch->rec, &ch->changed, err);
    return rc == 0 && ch->changed ? emit_event(c, ch->al, &ch->rec, err) : rc;
}

static int resolve_tx(pg_conn *c, void *arg, sx_err *err)
{
    change *ch = arg;
    int rc = alert_repo_resolve(c, ch->resolve_id, ch->a, &ch->rec, &ch->changed, err);
    return rc == 0 && ch->changed ? emit_event(c, ch->al, &ch->rec, err) : rc;
}

/* After a committed change: log it and hand it to the webhooks. */
static void announce(alerts *al, const alert_record *r)
{
    json_t *j = alerts_json(r);
    sx_log_fields(SX_LOG_INFO, COMPONENT, json_incref(j), "alert %s: %s %s", r->state, r->rule,
                  r->subject);
    alert_hook_send(al->hook, j, r->id, r->state);
    json_decref(j);
}

/* The subjects each rule holds for now, appended to *w (in a). */
static int read_wanted(alerts *al, pg_conn *c, sx_arena *a, wanted **w, size_t *n, sx_err *err)
{
    const sextant_config *cfg = al->srv->config;
    char d1[32], d2[32];
    alert_readings r[NRULES];
    long long lost_ms = cfg->alerts.replica_lost_after_ms > 0 ? cfg->alerts.replica_lost_after_ms
                                                              : 3 * cfg->leader.heartbeat_ms;
    int rc = alert_repo_nack_rates(c, cfg->alerts.nack_window_ms, cfg->alerts.nack_min_responses,
                                   (double)cfg->alerts.nack_rate_percent / 100.0, a, &r[0], err);
    if (rc == 0)
        rc = alert_repo_disconnected(c, cfg->alerts.disconnected_after_ms,
                                     cfg->alerts.disconnected_forget_ms, a, &r[1], err);
    if (rc == 0)
        rc = alert_repo_deployments_failed(c, cfg->alerts.deployment_window_ms, a, &r[2], err);
    if (rc == 0)
        rc = alert_repo_replicas_lost(c, lost_ms, a, &r[3], err);
    if (rc != 0)
        return rc;
    size_t total = r[0].count + r[1].count + r[2].count + r[3].count;
    *w = sx_arena_alloc(a, (total ? total : 1) * sizeof(**w));
    *n = 0;
    for (size_t k = 0; k < NRULES; k++)
        for (size_t i = 0; i < r[k].count; i++) {
            const alert_reading *x = &r[k].items[i];
            wanted *o = &(*w)[(*n)++];
            *o = (wanted){.rule = RULES[k], .subject = x->subject, .value = x->value};
            switch (k) {
            case 0:
                o->message = sx_arena_printf(
                    a,
                    "group %s: %lld of %lld responses NACKed over the last %s (%.1f%%, above "
                    "%lld%%)",
                    x->subject, x->a, x->b,
                    config_format_duration(cfg->alerts.nack_window_ms, d1, sizeof d1),
                    100.0 * x->value, (long long)cfg->alerts.nack_rate_percent);
                break;
            case 1:
                o->message = sx_arena_printf(
                    a, "proxy %s of group %s disconnected for longer than %s%s%s", x->subject,
                    x->group ? x->group : "",
                    config_format_duration(cfg->alerts.disconnected_after_ms, d1, sizeof d1),
                    x->text[0] ? ": " : "", x->text);
                break;
            case 2:
                o->message = sx_arena_printf(a, "deployment %s (groups %s) %s", x->subject,
                                             x->group ? x->group : "", x->text);
                break;
            default:
                o->message = sx_arena_printf(
                    a, "replica %s has sent no heartbeat for longer than %s (last %s)", x->subject,
                    config_format_duration(lost_ms, d2, sizeof d2), x->text);
                break;
            }
        }
    return 0;
}

/* One evaluation; returns 0 or the first error (the rest of the pass is skipped). */
static int evaluate(alerts *al, sx_err *err)
{
    struct sx_server *srv = al->srv;
    sx_arena *a = sx_arena_create();
    pg_conn *c = NULL;
    wanted *w = NULL;
    size_t nw = 0;
    alert_list firing = {0};
    bool *holds = NULL; /* holds[i]: firing.items[i]'s subject still holds */
    int rc = pg_acquire(srv->db, &c, err);
    if (rc == 0) {
        rc = read_wanted(al, c, a, &w, &nw, err);
        if (rc == 0)
            rc = alert_repo_firing(c, a, &firing, err);
        if (rc == 0) {
            holds = sx_arena_alloc(a, (firing.count ? firing.count : 1) * sizeof(*holds));
            memset(holds, 0, (firing.count ? firing.count : 1) * sizeof(*holds));
        }
        /* Firing alerts that still hold keep their row; their value is refreshed. */
        for (size_t i = 0; rc == 0 && i < firing.count; i++) {
            alert_record *f = &firing.items[i];
            for (size_t k = 0; k < nw; k++)
                if (!w[k].matched && strcmp(w[k].rule, f->rule) == 0 &&
                    strcmp(w[k].subject, f->subject) == 0) {
                    w[k].matched = true;
                    holds[i] = true;
                    rc = alert_repo_touch(c, f->id, w[k].value, w[k].message, err);
                    break;
                }
        }
        pg_release(srv->db, c);
    }
    for (size_t k = 0; rc == 0 && k < nw; k++) {
        if (w[k].matched)
            continue;
        if (!may_evaluate(al))
            break;
        change ch = {.al = al, .w = &w[k], .a = a};
        if ((rc = pg_tx(srv->db, fire_tx, &ch, err)) == 0 && ch.changed)
            announce(al, &ch.rec);
    }
    for (size_t i = 0; rc == 0 && i < firing.count; i++) {
        if (holds[i])
            continue;
        if (!may_evaluate(al))
            break;
        change ch = {.al = al, .resolve_id = firing.items[i].id, .a = a};
        if ((rc = pg_tx(srv->db, resolve_tx, &ch, err)) == 0 && ch.changed)
            announce(al, &ch.rec);
    }
    sx_arena_destroy(a);
    return rc;
}

/* The gauge from the table, on every replica. */
static int refresh(alerts *al, sx_err *err)
{
    long long counts[NRULES];
    pg_conn *c = NULL;
    int rc = pg_acquire(al->srv->db, &c, err);
    if (rc != 0)
        return rc;
    rc = alert_repo_count_firing(c, RULES, NRULES, counts, err);
    pg_release(al->srv->db, c);
    for (size_t i = 0; rc == 0 && al->m_firing && i < NRULES; i++) {
        const char *l[] = {RULES[i]};
        sx_metric_set(al->m_firing, l, (double)counts[i]);
    }
    return rc;
}

static void *alerts_thread(void *arg)
{
    alerts *al = arg;
    const sextant_config *cfg = al->srv->config;
    do {
        sx_err err;
        sx_err_clear(&err);
        int rc = 0;
        if (may_evaluate(al)) {
            rc = evaluate(al, &err);
            if (rc == 0 && al->m_evals)
                sx_metric_inc(al->m_evals, NULL);
        }
        if (rc == 0 && cfg->alerts.enabled)
            rc = refresh(al, &err);
        if (rc != 0 && !al->failing)
            sx_log_err(SX_LOG_WARN, COMPONENT, &err);
        al->failing = rc != 0;
    } while (sup_wait_next(al->srv->sup, &al->wake, cfg->alerts.interval_ms));
    return NULL;
}
