/*
 * rollout.c — deployments: their JSON form, the audit/event/pin writers and the steps
 * an operator and the driver share, and the operator actions (pause, resume, cancel,
 * rollback). See rollout.h for the model and the state machine; the plan is in
 * rollout_plan.c, the driver's steps in rollout_step.c.
 *
 * Every function here is one transaction (pg_tx) that locks the deployment's row
 * (deploy_repo_lock) before reading its state, so two replicas, or a replica and an
 * operator, never both act on the same state: the second one sees the first one's
 * result. Pins are written in the transaction that decides them and announced with
 * PINS_NOTIFY_CHANNEL, delivered at commit. Audit rows and events are written in the
 * same transaction as the change they report.
 */
#include "server/rollout/rollout.h"
#include "server/rollout/rollout_internal.h"

#include <stdio.h>

#include "server/apply.h"
#include "server/base/log.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/events.h"
#include "server/server.h"
#include "storage/pg_listener.h"
#include "storage/repo_audit.h"
#include "storage/repo_configs.h"
#include "storage/repo_pins.h"
#include "storage/repo_snapshots.h"

static void decref_json(void *p)
{
    json_decref(p);
}

/* Hands j to the arena; returns j. */
json_t *rollout_own(sx_arena *a, json_t *j)
{
    return sx_arena_defer(a, decref_json, j);
}

const char *rollout_replica(const struct sx_server *srv)
{
    return srv->config->replica.id ? srv->config->replica.id : "";
}

/* ------------------------------------------------------------------ JSON */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *rollout_strv(char **v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *copy_or(const json_t *j, json_t *dflt)
{
    if (j == NULL)
        return dflt;
    json_decref(dflt);
    return json_deep_copy(j);
}

bool rollout_awaiting_promotion(const deploy_record *d)
{
    return rollout_strategy_is_blue_green(d->strategy) && d->state == DEPLOY_IN_PROGRESS &&
           d->waves && d->wave_count == 2 && d->waves[0].state == DEPLOY_WAVE_COMPLETED &&
           d->waves[1].state == DEPLOY_WAVE_PENDING;
}

/* The blue-green phase of d, derived from its state and waves: staging_green,
 * awaiting_promotion, switching (blue wave running), switched (blue ACKed), rolled_back
 * (canceled, failed or rolled back, whether it got that far or not). */
static const char *blue_green_phase(const deploy_record *d)
{
    switch (d->state) {
    case DEPLOY_FAILED:
    case DEPLOY_CANCELING:
    case DEPLOY_ROLLING_BACK:
    case DEPLOY_ROLLED_BACK:
    case DEPLOY_ROLLBACK_FAILED:
        return "rolled_back";
    case DEPLOY_COMPLETED:
        return "switched";
    default:
        break;
    }
    if (d->waves == NULL || d->wave_count < 2 || d->waves[0].state != DEPLOY_WAVE_COMPLETED)
        return "staging_green";
    if (d->waves[1].state == DEPLOY_WAVE_PENDING)
        return "awaiting_promotion";
    return d->waves[1].state == DEPLOY_WAVE_COMPLETED ? "switched" : "switching";
}

/* "blue_green" of the JSON form: the phase, the two sides, when blue was switched and
 * how long the hold has left (by the database clock of the read). */
static json_t *blue_green_json(const deploy_record *d)
{
    bool two = d->waves && d->wave_count == 2;
    json_t *o = json_pack(
        "{s:s,s:o,s:o,s:o,s:s}", "phase", blue_green_phase(d), "green_node_ids",
        two ? rollout_strv(d->waves[0].node_ids, d->waves[0].node_count) : json_array(),
        "blue_node_ids",
        two ? rollout_strv(d->waves[1].node_ids, d->waves[1].node_count) : json_array(),
        "promoted_at", two ? str_or_null(d->waves[1].started_at) : json_null(), "on_timeout",
        rollout_strategy_on_timeout(d->strategy) == ROLLOUT_TIMEOUT_PROMOTE ? "promote"
                                                                            : "rollback");
    json_t *left = json_null();
    if (rollout_awaiting_promotion(d)) {
        double since = d->waves[0].completed_age_s;
        if (d->resumed_at && d->resumed_age_s < since)
            since = d->resumed_age_s;
        double l = (double)rollout_strategy_promote_timeout_ms(d->strategy) / 1000.0 - since;
        json_decref(left);
        left = json_real(l > 0 ? l : 0);
    }
    json_object_set_new(o, "promote_timeout_left_seconds", left);
    return o;
}

json_t *rollout_deployment_json(const deploy_record *d)
{
    char timeout[32];
    config_format_duration(d->wave_timeout_ms, timeout, sizeof(timeout));
    json_t *o = json_pack(
        "{s:s,s:s,s:i,s:o,s:o,s:s,s:s,s:i,s:o,s:o,s:o,s:{s:f,s:i,s:s,s:i},s:b,s:b,s:o,s:s,s:s,"
        "s:o,s:o,s:s,s:o,s:o,s:o,s:s}",
        "id", d->id, "config_id", d->config_id, "config_version", d->config_version, "selector",
        copy_or(d->selector, json_object()), "strategy", copy_or(d->strategy, json_object()),
        "state", deploy_state_name(d->state), "state_reason",
        d->state_reason ? d->state_reason : "", "current_wave", d->current_wave, "groups",
        rollout_strv(d->groups, d->group_count), "target_snapshots",
        copy_or(d->target_snapshots, json_object()), "baseline_snapshots",
        copy_or(d->baseline_snapshots, json_object()), "policy", "nack_threshold",
        d->nack_threshold, "nack_min_sample", d->nack_min_sample, "wave_timeout", timeout,
        "health_failures", d->health_failure_limit, "promote", d->promote, "promoted", d->promoted,
        "skipped", copy_or(d->skipped_nodes, json_array()), "created_by",
        d->created_by ? d->created_by : "", "reason", d->reason ? d->reason : "", "owner_replica",
        str_or_null(d->owner_replica), "lease_until", str_or_null(d->lease_until), "created_at",
        d->created_at ? d->created_at : "", "started_at", str_or_null(d->started_at), "finished_at",
        str_or_null(d->finished_at), "resumed_at", str_or_null(d->resumed_at), "updated_at",
        d->updated_at ? d->updated_at : "");
    json_object_set_new(o, "progress", copy_or(d->progress, json_object()));
    if (d->waves && rollout_strategy_is_blue_green(d->strategy))
        json_object_set_new(o, "blue_green", blue_green_json(d));
    if (d->waves) {
        json_t *waves = json_array();
        for (size_t i = 0; i < d->wave_count; i++) {
            const deploy_wave *w = &d->waves[i];
            json_array_append_new(
                waves, json_pack("{s:i,s:s,s:o,s:i,s:i,s:i,s:o,s:o,s:o,s:o}", "index", w->index,
                                 "state", deploy_wave_state_name(w->state), "node_ids",
                                 rollout_strv(w->node_ids, w->node_count), "nodes",
                                 (int)w->node_count, "acks", w->acks, "nacks", w->nacks, "errors",
                                 copy_or(w->errors, json_array()), "started_at",
                                 str_or_null(w->started_at), "completed_at",
                                 str_or_null(w->completed_at), "duration_seconds",
                                 w->started_at ? json_real(w->completed_at ? w->started_age_s -
                                                                                 w->completed_age_s
                                                                           : w->started_age_s)
                                               : json_null()));
        }
        json_object_set_new(o, "waves", waves);
    }
    return o;
}

/* ------------------------------------------------------------------ audit and events */

/* Appends an audit row for deployment d; who NULL = the driver ("system"). Takes
 * details. */
int rollout_audit(pg_conn *c, const struct sx_server *srv, const rollout_actor *who,
                  const char *action, const char *resource_type, const char *resource_id,
                  json_t *details, sx_err *err)
{
    if (who == NULL)
        json_object_set_new(details, "replica", json_string(rollout_replica(srv)));
    audit_new an = {
        .actor = who ? who->user : "system",
        .actor_role = who ? who->role : "",
        .action = action,
        .resource_type = resource_type,
        .resource_id = resource_id,
        .result = AUDIT_SUCCESS,
        .status_code = who ? 200 : 0,
        .request_id = who ? who->request_id : NULL,
        .source_ip = who ? who->source_ip : NULL,
        .details = details,
    };
    long long id;
    int rc = audit_repo_append(c, &an, &id, err);
    json_decref(details);
    return rc;
}

/* Writes one event of deployment d; takes data. */
int rollout_emit(pg_conn *c, const struct sx_server *srv, const char *type, const deploy_record *d,
                 json_t *data, sx_err *err)
{
    json_object_set_new(data, "config_id", json_string(d->config_id));
    json_object_set_new(data, "config_version", json_integer(d->config_version));
    sx_event e = {.type = type, .deployment_id = d->id, .data = data};
    int rc = events_emit(c, rollout_replica(srv), &e, err);
    json_decref(data);
    return rc;
}

int rollout_notify_pins(pg_conn *c, const deploy_record *d, sx_err *err)
{
    return pg_notify(c, PINS_NOTIFY_CHANNEL, d->id, err);
}

/* ------------------------------------------------------------------ shared steps */

long long rollout_target_of(const deploy_record *d, const char *group)
{
    return (long long)json_integer_value(json_object_get(d->target_snapshots, group));
}

int rollout_set_wave_state(pg_conn *c, const deploy_record *d, int k, int expected, int state,
                           sx_err *err)
{
    deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
    u.expected_state = expected;
    u.state = state;
    return deploy_repo_update_wave(c, d->id, k, &u, err);
}

/* Moves wave k's nodes to the staged snapshots and marks it started (d in_progress). */
int rollout_start_wave(pg_conn *c, struct sx_server *srv, const deploy_record *d, int k,
                       sx_err *err)
{
    const deploy_wave *w = &d->waves[k];
    int pinned = 0, rc;
    if ((rc = pin_repo_set(c, (const char *const *)w->node_ids, w->node_count, d->target_snapshots,
                           d->id, &pinned, err)) != 0 ||
        (rc = rollout_set_wave_state(c, d, k, DEPLOY_WAVE_PENDING, DEPLOY_WAVE_IN_PROGRESS, err)) !=
            0 ||
        (rc = deploy_repo_set_current_wave(c, d->id, DEPLOY_IN_PROGRESS, k, err)) != 0 ||
        (rc = rollout_emit(c, srv, "wave_started", d,
                           json_pack("{s:i,s:i,s:i,s:o}", "wave", k, "waves", (int)d->wave_count,
                                     "nodes", (int)w->node_count, "node_ids",
                                     rollout_strv(w->node_ids, w->node_count)),
                           err)) != 0)
        return rc;
    sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG,
                  json_pack("{s:s,s:i,s:i}", "deployment", d->id, "wave", k, "nodes", pinned),
                  "deployment %s: wave %d started (%d nodes)", d->id, k, pinned);
    return rollout_notify_pins(c, d, err);
}

/*
 * Starts the rollback of d from state `from`: undoes a promotion, releases the pins
 * (the nodes follow their group's current snapshot: what they had), marks the started
 * waves rolled back and the pending ones canceled, audits and emits. *written gets the
 * snapshots an undone promotion wrote, for the cache.
 */
int rollout_begin_rollback(pg_conn *c, struct sx_server *srv, deploy_record *d, deploy_state from,
                           const char *reason, const rollout_actor *who, sx_arena *a,
                           snap_record ***written, size_t *nwritten, sx_err *err)
{
    *written = NULL;
    *nwritten = 0;
    int rc;
    if (d->promoted) {
        sx_fielderrs verrs = {0};
        rc = apply_unpromote(c, d, who ? who->user : "system", a, written, nwritten, &verrs, err);
        sx_fielderrs_free(&verrs);
        if (rc)
            return rc;
    }
    int released = 0;
    if ((rc = pin_repo_release_deployment(c, d->id, &released, err)) != 0)
        return rc;
    for (size_t i = 0; i < d->wave_count; i++) {
        deploy_wave_state s = d->waves[i].state;
        if (s == DEPLOY_WAVE_PENDING)
            rc = rollout_set_wave_state(c, d, (int)i, DEPLOY_WAVE_PENDING, DEPLOY_WAVE_CANCELED,
                                        err);
        else if (s == DEPLOY_WAVE_IN_PROGRESS || s == DEPLOY_WAVE_COMPLETED ||
                 s == DEPLOY_WAVE_FAILED)
            rc = rollout_set_wave_state(c, d, (int)i, (int)s, DEPLOY_WAVE_ROLLED_BACK, err);
        if (rc)
            return rc;
    }
    if ((rc = deploy_repo_set_state(c, d->id, from, DEPLOY_ROLLING_BACK, reason, err)) != 0)
        return rc;
    json_t *details = json_pack("{s:s,s:s,s:b,s:i,s:b}", "from_state", deploy_state_name(from),
                                "reason", reason, "automatic", who == NULL, "nodes_released",
                                released, "promotion_undone", d->promoted);
    if ((rc = rollout_audit(c, srv, who, "deployment.rollback", "deployment", d->id, details,
                            err)) != 0 ||
        (rc = rollout_emit(c, srv, "rollback_started", d,
                           json_pack("{s:s,s:b,s:i}", "reason", reason, "automatic", who == NULL,
                                     "nodes", released),
                           err)) != 0)
        return rc;
    sx_log_fields(
        SX_LOG_WARN, ROLLOUT_LOG,
        json_pack("{s:s,s:s,s:b}", "deployment", d->id, "reason", reason, "automatic", who == NULL),
        "deployment %s rolling back: %s", d->id, reason);
    return rollout_notify_pins(c, d, err);
}

/* Starts blue (wave 1) of d once green ACKed: every blue node is pinned to the staged
 * snapshot in this transaction. */
int rollout_promote_blue(pg_conn *c, struct sx_server *srv, const deploy_record *d,
                         const char *trigger, const char *reason, const rollout_actor *who,
                         sx_err *err)
{
    int rc = rollout_start_wave(c, srv, d, 1, err);
    if (rc)
        return rc;
    json_t *details = json_pack("{s:s,s:s,s:i,s:i}", "trigger", trigger, "reason",
                                reason ? reason : "", "green_nodes", (int)d->waves[0].node_count,
                                "blue_nodes", (int)d->waves[1].node_count);
    if ((rc = rollout_audit(c, srv, who, "deployment.promote", "deployment", d->id, details,
                            err)) != 0)
        return rc;
    sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG,
                  json_pack("{s:s,s:s,s:i}", "deployment", d->id, "trigger", trigger, "nodes",
                            (int)d->waves[1].node_count),
                  "deployment %s promoted (%s): %zu blue nodes switch", d->id, trigger,
                  d->waves[1].node_count);
    return 0;
}

void rollout_count_bluegreen(struct sx_server *srv, const char *outcome)
{
    if (srv->metrics == NULL)
        return;
    sx_metric *m = sx_metrics_counter(srv->metrics, "sextant_rollout_bluegreen_total",
                                      "How blue-green holds ended: promoted (by an operator), "
                                      "promoted_on_timeout, rolled_back_on_timeout.",
                                      "outcome");
    const char *lv[] = {outcome};
    sx_metric_inc(m, lv);
}

/* ------------------------------------------------------------------ operator actions */

const char *rollout_action_name(rollout_action act)
{
    static const char *const names[] = {"pause", "resume", "cancel", "rollback", "promote"};
    _Static_assert(sizeof names / sizeof *names == ROLLOUT_PROMOTE + 1, "a name per action");
    return (size_t)act < sizeof names / sizeof *names ? names[act] : names[ROLLOUT_ROLLBACK];
}

typedef struct act_ctx {
    struct sx_server *srv;
    const char *id;
    rollout_action act;
    const char *reason;
    const rollout_actor *who;
    sx_arena *a;
    deploy_record *out;
    snap_record **written;
    size_t nwritten;
} act_ctx;

static int refuse_promote(const deploy_record *d, sx_err *err)
{
    if (!rollout_strategy_is_blue_green(d->strategy)) {
        sx_err_set(err, SX_ECONFLICT, "deployment %s is not blue-green; it cannot be promoted",
                   d->id);
        sx_err_hint(err, "Only a deployment with the blue_green strategy waits for a promotion.");
        return SX_ECONFLICT;
    }
    sx_err_set(err, SX_ECONFLICT, "deployment %s is %s (%s); it cannot be promoted", d->id,
               deploy_state_name(d->state), blue_green_phase(d));
    sx_err_hint(err, "A blue-green deployment can be promoted once every green node ACKed, "
                     "while it is in progress and blue has not been switched yet.");
    return SX_ECONFLICT;
}

static int refuse_state(const deploy_record *d, rollout_action act, sx_err *err)
{
    sx_err_set(err, SX_ECONFLICT, "deployment %s is %s; it cannot %s", d->id,
               deploy_state_name(d->state),
               act == ROLLOUT_PAUSE    ? "be paused"
               : act == ROLLOUT_RESUME ? "be resumed"
               : act == ROLLOUT_CANCEL ? "be canceled"
                                       : "be rolled back");
    switch (act) {
    case ROLLOUT_PAUSE:
        sx_err_hint(err, "Only a deployment in progress can be paused.");
        break;
    case ROLLOUT_RESUME:
        sx_err_hint(err, "Only a paused deployment can be resumed.");
        break;
    case ROLLOUT_CANCEL:
        sx_err_hint(err, "A pending, in-progress or paused deployment can be canceled.");
        break;
    default:
        sx_err_hint(err, "A deployment in progress, paused, completed or whose rollback failed "
                         "can be rolled back.");
        break;
    }
    return SX_ECONFLICT;
}

/* Rolling back a promoted deployment restores the config's previous live version and
 * recomposes its groups: only right while what it made live still is — otherwise the
 * changes made since would be undone too (SX_ECONFLICT naming what changed). */
static int check_still_live(pg_conn *c, const deploy_record *d, sx_arena *a, sx_err *err)
{
    cfg_record *cfg = NULL;
    int rc = cfg_repo_lock(c, d->config_id, a, &cfg, err);
    if (rc == SX_ENOTFOUND)
        return sx_err_set(err, SX_ECONFLICT,
                          "config %s was deleted since deployment %s; there is nothing to roll "
                          "back to",
                          d->config_id, d->id);
    if (rc)
        return rc;
    const char *why = NULL;
    if (cfg->live_version != d->config_version)
        why = sx_arena_printf(a, "config %s/%s is live at version %d now, not %d", cfg->ns,
                              cfg->name, cfg->live_version, d->config_version);
    const char *group;
    json_t *v;
    json_object_foreach(d->target_snapshots, group, v)
    {
        long long current = 0;
        if (why == NULL && (rc = snap_repo_current_version(c, group, &current, err)) != 0)
            return rc;
        if (why == NULL && current != (long long)json_integer_value(v))
            why = sx_arena_printf(a, "group %s is at snapshot %lld now, not %lld", group, current,
                                  (long long)json_integer_value(v));
    }
    if (why == NULL)
        return 0;
    sx_err_set(err, SX_ECONFLICT, "deployment %s cannot be rolled back: %s", d->id, why);
    sx_err_detail(err, "Changes were made after it; rolling it back would undo them as well.");
    sx_err_hint(err, "Roll back the newer change first, or roll the config back to the version "
                     "you want (POST /api/v1/configs/{id}/rollback).");
    return SX_ECONFLICT;
}

static int act_body(pg_conn *c, act_ctx *x, sx_err *err)
{
    x->out = NULL;
    x->written = NULL;
    x->nwritten = 0;
    deploy_record *d = NULL;
    int rc = deploy_repo_lock(c, x->id, x->a, &d, err);
    if (rc)
        return rc;
    deploy_state from = d->state, to = from;
    const char *reason =
        x->reason && x->reason[0]
            ? sx_arena_printf(x->a, "%s by %s: %s", rollout_action_name(x->act), x->who->user,
                              x->reason)
            : sx_arena_printf(x->a, "%s by %s", rollout_action_name(x->act), x->who->user);
    switch (x->act) {
    case ROLLOUT_PAUSE:
        if (from != DEPLOY_IN_PROGRESS)
            return refuse_state(d, x->act, err);
        to = DEPLOY_PAUSED;
        break;
    case ROLLOUT_RESUME:
        if (from != DEPLOY_PAUSED)
            return refuse_state(d, x->act, err);
        to = DEPLOY_IN_PROGRESS;
        if ((rc = deploy_repo_mark(c, d->id, DEPLOY_MARK_RESUMED, err)) != 0)
            return rc;
        break;
    case ROLLOUT_CANCEL:
        if (from != DEPLOY_PENDING && from != DEPLOY_IN_PROGRESS && from != DEPLOY_PAUSED)
            return refuse_state(d, x->act, err);
        to = DEPLOY_CANCELING;
        break;
    case ROLLOUT_PROMOTE:
        if (!rollout_awaiting_promotion(d))
            return refuse_promote(d, err);
        if ((rc = rollout_promote_blue(c, x->srv, d, "operator", x->reason, x->who, err)) != 0)
            return rc;
        return deploy_repo_get(c, d->id, x->a, &x->out, err);
    case ROLLOUT_ROLLBACK:
        if (from != DEPLOY_IN_PROGRESS && from != DEPLOY_PAUSED && from != DEPLOY_COMPLETED &&
            from != DEPLOY_ROLLBACK_FAILED)
            return refuse_state(d, x->act, err);
        if (d->promoted && (rc = check_still_live(c, d, x->a, err)) != 0)
            return rc;
        if ((rc = rollout_begin_rollback(c, x->srv, d, from, reason, x->who, x->a, &x->written,
                                         &x->nwritten, err)) != 0)
            return rc;
        return deploy_repo_get(c, d->id, x->a, &x->out, err);
    }
    if ((rc = deploy_repo_set_state(c, d->id, from, to, reason, err)) != 0)
        return rc;
    char action[64];
    snprintf(action, sizeof(action), "deployment.%s", rollout_action_name(x->act));
    json_t *details = json_pack("{s:s,s:s,s:s}", "from_state", deploy_state_name(from), "to_state",
                                deploy_state_name(to), "reason", x->reason ? x->reason : "");
    if ((rc = rollout_audit(c, x->srv, x->who, action, "deployment", d->id, details, err)) != 0)
        return rc;
    const char *type = x->act == ROLLOUT_PAUSE    ? EVENT_ROLLOUT_PAUSED
                       : x->act == ROLLOUT_RESUME ? EVENT_ROLLOUT_RESUMED
                                                  : EVENT_ROLLOUT_CANCELED;
    if ((rc = rollout_emit(c, x->srv, type, d,
                           json_pack("{s:s,s:s,s:s,s:i}", "reason", x->reason ? x->reason : "",
                                     "by", x->who->user, "from_state", deploy_state_name(from),
                                     "wave", d->current_wave),
                           err)) != 0)
        return rc;
    return deploy_repo_get(c, d->id, x->a, &x->out, err);
}

/* act_body under the client's key, when the request has one (server/idem.h). */
static int act_tx(pg_conn *c, void *arg, sx_err *err)
{
    act_ctx *x = arg;
    x->out = NULL;
    int rc = idem_begin(c, x->who->idem, x->a, err);
    if (rc || (x->who->idem && x->who->idem->replayed))
        return rc;
    if ((rc = act_body(c, x, err)) != 0)
        return rc;
    return idem_end(c, x->who->idem, x->out, x->a, err);
}

int rollout_act(struct sx_server *srv, const char *id, rollout_action act, const char *reason,
                const rollout_actor *who, sx_arena *a, deploy_record **out, sx_err *err)
{
    *out = NULL;
    act_ctx x = {srv, id, act, reason, who, a, NULL, NULL, 0};
    int rc = pg_tx(srv->db, act_tx, &x, err);
    if (rc || (who->idem && who->idem->replayed))
        return rc;
    for (size_t i = 0; i < x.nwritten; i++)
        snap_repo_cache_put(srv->snap_repo, x.written[i]);
    if (act == ROLLOUT_PROMOTE)
        rollout_count_bluegreen(srv, "promoted");
    sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG,
                  json_pack("{s:s,s:s,s:s,s:s}", "deployment", id, "action",
                            rollout_action_name(act), "state", deploy_state_name(x.out->state),
                            "user", who->user),
                  "deployment %s: %s by %s", id, rollout_action_name(act), who->user);
    *out = x.out;
    return 0;
}
