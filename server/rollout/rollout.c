/*
 * rollout.c — deployments: plan, operator actions and the driver's steps (see
 * rollout.h for the model and the state machine).
 *
 * Every function here is one transaction (pg_tx) that locks the deployment's row
 * (deploy_repo_lock) before reading its state, so two replicas, or a replica and an
 * operator, never both act on the same state: the second one sees the first one's
 * result. Pins are written in the transaction that decides them and announced with
 * PINS_NOTIFY_CHANNEL, delivered at commit. Audit rows and events are written in the
 * same transaction as the change they report.
 */
#include "server/rollout/rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/apply.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/config.h"
#include "server/events.h"
#include "server/rollout/strategy.h"
#include "server/server.h"
#include "storage/pg_listener.h"
#include "storage/repo_audit.h"
#include "storage/repo_common.h"
#include "storage/repo_configs.h"
#include "storage/repo_pins.h"
#include "storage/repo_snapshots.h"

#define COMPONENT "rollouts"

static void decref_json(void *p)
{
    json_decref(p);
}

/* Hands j to the arena; returns j. */
static json_t *own(sx_arena *a, json_t *j)
{
    return sx_arena_defer(a, decref_json, j);
}

static const char *replica_of(const struct sx_server *srv)
{
    return srv->config->replica.id ? srv->config->replica.id : "";
}

/* ------------------------------------------------------------------ JSON */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *strv(char **v, size_t n)
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
        strv(d->groups, d->group_count), "target_snapshots",
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
    if (d->waves) {
        json_t *waves = json_array();
        for (size_t i = 0; i < d->wave_count; i++) {
            const deploy_wave *w = &d->waves[i];
            json_array_append_new(
                waves,
                json_pack("{s:i,s:s,s:o,s:i,s:i,s:i,s:o,s:o,s:o,s:o}", "index", w->index, "state",
                          deploy_wave_state_name(w->state), "node_ids",
                          strv(w->node_ids, w->node_count), "nodes", (int)w->node_count, "acks",
                          w->acks, "nacks", w->nacks, "errors", copy_or(w->errors, json_array()),
                          "started_at", str_or_null(w->started_at), "completed_at",
                          str_or_null(w->completed_at), "duration_seconds",
                          w->started_at
                              ? json_real(w->completed_at ? w->started_age_s - w->completed_age_s
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
static int audit(pg_conn *c, const struct sx_server *srv, const rollout_actor *who,
                 const char *action, const char *resource_type, const char *resource_id,
                 json_t *details, sx_err *err)
{
    if (who == NULL)
        json_object_set_new(details, "replica", json_string(replica_of(srv)));
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
static int emit(pg_conn *c, const struct sx_server *srv, const char *type, const deploy_record *d,
                json_t *data, sx_err *err)
{
    json_object_set_new(data, "config_id", json_string(d->config_id));
    json_object_set_new(data, "config_version", json_integer(d->config_version));
    sx_event e = {.type = type, .deployment_id = d->id, .data = data};
    int rc = events_emit(c, replica_of(srv), &e, err);
    json_decref(data);
    return rc;
}

static int notify_pins(pg_conn *c, const deploy_record *d, sx_err *err)
{
    return pg_notify(c, PINS_NOTIFY_CHANNEL, d->id, err);
}

/* ------------------------------------------------------------------ apply */

typedef struct apply_ctx {
    struct sx_server *srv;
    const rollout_request *req;
    const rollout_actor *who;
    sx_arena *a;
    val_result *problems;
    sx_fielderrs *verrs;
    json_t *out;
    apply_stage_result st;
} apply_ctx;

/* The selector as stored with the deployment: the fields the request gave. NULL when it
 * gave none. New reference. */
static json_t *selector_json(const rollout_request *r)
{
    if (!r->has_selector)
        return NULL;
    static const char *const names[] = {"node_ids", "groups", "namespaces"};
    const char *const *lists[] = {r->node_ids, r->groups, r->namespaces};
    size_t counts[] = {r->node_id_count, r->group_count, r->namespace_count};
    json_t *sel = json_object();
    for (size_t k = 0; k < 3; k++) {
        if (lists[k] == NULL)
            continue;
        json_t *arr = json_array();
        for (size_t i = 0; i < counts[k]; i++)
            json_array_append_new(arr, json_string(lists[k][i]));
        json_object_set_new(sel, names[k], arr);
    }
    if (r->labels)
        json_object_set_new(sel, "labels", json_deep_copy(r->labels));
    return sel;
}

rollout_policy rollout_policy_defaults(const struct sx_server *srv)
{
    const sextant_config *cfg = srv->config;
    return (rollout_policy){
        .nack_threshold = (double)cfg->rollouts.nack_threshold_percent / 100.0,
        .nack_min_sample = cfg->rollouts.nack_min_sample,
        .wave_timeout_ms = cfg->rollouts.wave_timeout_ms,
        .health_failures = cfg->rollouts.health_failures,
        .promote = true,
    };
}

static json_t *problems_json(const val_result *problems, const sx_fielderrs *verrs)
{
    json_t *d = json_array();
    for (size_t i = 0; problems && i < problems->count; i++) {
        const val_problem *p = &problems->items[i];
        json_t *e = json_pack("{s:s,s:s,s:s}", "stage", val_stage_name(p->stage), "path",
                              p->path ? p->path : "", "message", p->message ? p->message : "");
        if (p->conflict_with)
            json_object_set_new(e, "conflict_with", json_string(p->conflict_with));
        json_array_append_new(d, e);
    }
    for (size_t i = 0; verrs && i < verrs->count; i++)
        json_array_append_new(d,
                              json_pack("{s:s,s:s,s:s}", "stage", "compose", "path",
                                        verrs->items[i].path, "message", verrs->items[i].message));
    return d;
}

static int apply_tx(pg_conn *c, void *arg, sx_err *err)
{
    apply_ctx *x = arg;
    sx_arena *a = x->a;
    x->out = NULL;
    char *id = NULL;
    int rc;
    if (!x->req->dry_run && (rc = deploy_repo_new_id(c, a, &id, err)) != 0)
        return rc;
    val_limits limits = val_limits_from_config(x->srv->config);
    apply_stage_request sr = {
        .config_id = x->req->config_id,
        .version = x->req->version,
        .groups = (const char **)x->req->groups,
        .group_count = x->req->group_count,
        .deployment_id = id,
        .author = x->who->user,
        .limits = &limits,
        .problems = x->problems,
    };
    rc = apply_stage(c, &sr, a, &x->st, x->verrs, err);
    bool invalid = rc == SX_EVALIDATION || (rc == SX_ECONFLICT && x->problems->count > 0);
    if (rc && !(x->req->dry_run && invalid && x->st.config))
        return rc;
    json_t *validation = own(a, json_pack("{s:b,s:o}", "valid", rc == 0, "problems",
                                          problems_json(x->problems, x->verrs)));
    cfg_record *cfg = x->st.config;

    /* The groups: the staged ones, or (dry run of an invalid version) the selected. */
    const char **groups = sx_arena_alloc(a, (cfg->group_count + 1) * sizeof(*groups));
    size_t ngroups = 0;
    if (rc == 0) {
        for (size_t i = 0; i < x->st.group_count; i++)
            groups[ngroups++] = x->st.groups[i].group;
    } else {
        for (size_t i = 0; i < cfg->group_count; i++)
            groups[ngroups++] = cfg->groups[i];
    }
    pin_candidate *cand = NULL;
    size_t ncand = 0;
    const rollout_request *r = x->req;
    if ((rc = pin_repo_select(c, groups, ngroups, (const char **)r->node_ids, r->node_id_count,
                              r->labels, (const char **)r->namespaces, r->namespace_count, a, &cand,
                              &ncand, err)) != 0)
        return rc;
    for (size_t i = 0; i < r->node_id_count; i++) {
        bool found = false;
        for (size_t j = 0; j < ncand && !found; j++)
            found = strcmp(cand[j].node_id, r->node_ids[i]) == 0;
        if (!found) {
            char path[64];
            snprintf(path, sizeof(path), "selector.node_ids[%zu]", i);
            sx_fielderrs_add(x->verrs, path, "no known node %s in the config's groups",
                             r->node_ids[i]);
        }
    }
    if (x->verrs->count > 0 && !r->dry_run)
        return sx_err_set(err, SX_EINVAL, "the selector names unknown nodes");
    const char **planned = sx_arena_alloc(a, (ncand ? ncand : 1) * sizeof(*planned));
    size_t nplanned = 0;
    json_t *skipped = own(a, json_array());
    for (size_t i = 0; i < ncand; i++) {
        if (cand[i].connected)
            planned[nplanned++] = cand[i].node_id;
        else
            json_array_append_new(skipped, json_pack("{s:s,s:s}", "node_id", cand[i].node_id,
                                                     "reason", "not connected"));
    }
    if (nplanned == 0 && !r->dry_run) {
        sx_fielderrs_add(x->verrs, "selector", "matches no connected node of the config's groups");
        return sx_err_set(err, SX_EINVAL, "nothing to roll out: no connected node is selected");
    }
    size_t *sizes = NULL;
    size_t nwaves = rollout_wave_sizes(&r->strategy, nplanned, &sizes);
    sx_arena_defer(a, free, sizes);

    json_t *targets = own(a, json_object()), *baselines = own(a, json_object());
    json_t *gplan = own(a, json_array());
    for (size_t i = 0; x->st.groups && i < x->st.group_count; i++) {
        const apply_stage_group *g = &x->st.groups[i];
        json_object_set_new(targets, g->group, json_integer(g->to_version));
        json_object_set_new(baselines, g->group, json_integer(g->from_version));
        json_array_append_new(
            gplan, json_pack("{s:s,s:I,s:o,s:b,s:O}", "group", g->group, "from_version",
                             (json_int_t)g->from_version, "to_version",
                             g->to_version ? json_integer(g->to_version) : json_null(), "changed",
                             g->changed, "diff", g->diff ? g->diff : json_null()));
    }
    json_t *strategy = own(a, rollout_strategy_json(&r->strategy));

    deploy_wave_new *waves = sx_arena_alloc(a, (nwaves ? nwaves : 1) * sizeof(*waves));
    json_t *wplan = own(a, json_array());
    size_t at = 0;
    for (size_t w = 0; w < nwaves; w++) {
        json_t *ids = json_array();
        for (size_t k = 0; k < sizes[w]; k++)
            json_array_append_new(ids, json_string(planned[at + k]));
        json_array_append_new(wplan, json_pack("{s:i,s:o}", "index", (int)w, "node_ids", ids));
        waves[w] = (deploy_wave_new){planned + at, sizes[w], targets, baselines};
        at += sizes[w];
    }
    if (r->dry_run) {
        char timeout[32];
        config_format_duration(r->policy.wave_timeout_ms, timeout, sizeof(timeout));
        x->out = json_pack("{s:{s:s,s:i,s:O,s:{s:f,s:I,s:s,s:I,s:b},s:O,s:O,s:O,s:i},s:O}", "plan",
                           "config_id", cfg->id, "version", r->version, "strategy", strategy,
                           "policy", "nack_threshold", r->policy.nack_threshold, "nack_min_sample",
                           (json_int_t)r->policy.nack_min_sample, "wave_timeout", timeout,
                           "health_failures", (json_int_t)r->policy.health_failures, "promote",
                           r->policy.promote, "waves", wplan, "groups", gplan, "skipped", skipped,
                           "nodes", (int)nplanned, "validation", validation);
        return 0;
    }

    deploy_new dn = {
        .id = id,
        .config_id = cfg->id,
        .config_version = r->version,
        .selector = own(a, selector_json(r)),
        .strategy = strategy,
        .nack_threshold = r->policy.nack_threshold,
        .nack_min_sample = (int)r->policy.nack_min_sample,
        .wave_timeout_ms = r->policy.wave_timeout_ms,
        .created_by = x->who->user,
        .reason = r->reason,
        .waves = waves,
        .wave_count = nwaves,
        .groups = groups,
        .group_count = ngroups,
        .target_snapshots = targets,
        .baseline_snapshots = baselines,
        .previous_live_version = cfg->live_version,
        .no_promote = !r->policy.promote,
        .health_failure_limit = (int)r->policy.health_failures,
        .skipped_nodes = skipped,
    };
    deploy_record *d = NULL;
    if ((rc = deploy_repo_create(c, &dn, a, &d, err)) != 0)
        return rc;
    json_t *details = json_pack("{s:s,s:s,s:s,s:i,s:O,s:O,s:i,s:i,s:O}", "deployment_id", d->id,
                                "namespace", cfg->ns, "name", cfg->name, "version", r->version,
                                "strategy", strategy, "targets", targets, "waves", (int)nwaves,
                                "nodes", (int)nplanned, "validation", validation);
    if (dn.reason)
        json_object_set_new(details, "reason", json_string(dn.reason));
    if ((rc = audit(c, x->srv, x->who, "config.apply", "config", cfg->id, details, err)) != 0)
        return rc;
    x->out = rollout_deployment_json(d);
    return 0;
}

int rollout_apply(struct sx_server *srv, const rollout_request *req, const rollout_actor *who,
                  sx_arena *a, json_t **out, bool *created, val_result *problems,
                  sx_fielderrs *verrs, sx_err *err)
{
    *out = NULL;
    *created = false;
    apply_ctx x = {
        .srv = srv, .req = req, .who = who, .a = a, .problems = problems, .verrs = verrs};
    int rc = pg_tx(srv->db, apply_tx, &x, err);
    if (rc) {
        json_decref(x.out);
        return rc;
    }
    for (size_t i = 0; i < x.st.nwritten; i++)
        snap_repo_cache_put(srv->snap_repo, x.st.written[i]);
    *out = x.out;
    *created = !req->dry_run;
    if (*created)
        sx_log_fields(SX_LOG_INFO, COMPONENT,
                      json_pack("{s:O,s:s,s:i,s:s}", "deployment", json_object_get(x.out, "id"),
                                "config_id", req->config_id, "version", req->version, "user",
                                who->user),
                      "deployment created");
    return 0;
}

/* ------------------------------------------------------------------ shared steps */

static long long target_of(const deploy_record *d, const char *group)
{
    return (long long)json_integer_value(json_object_get(d->target_snapshots, group));
}

static int set_wave_state(pg_conn *c, const deploy_record *d, int k, int expected, int state,
                          sx_err *err)
{
    deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
    u.expected_state = expected;
    u.state = state;
    return deploy_repo_update_wave(c, d->id, k, &u, err);
}

/* Moves wave k's nodes to the staged snapshots and marks it started (d in_progress). */
static int start_wave(pg_conn *c, struct sx_server *srv, const deploy_record *d, int k, sx_err *err)
{
    const deploy_wave *w = &d->waves[k];
    int pinned = 0, rc;
    if ((rc = pin_repo_set(c, (const char *const *)w->node_ids, w->node_count, d->target_snapshots,
                           d->id, &pinned, err)) != 0 ||
        (rc = set_wave_state(c, d, k, DEPLOY_WAVE_PENDING, DEPLOY_WAVE_IN_PROGRESS, err)) != 0 ||
        (rc = deploy_repo_set_current_wave(c, d->id, DEPLOY_IN_PROGRESS, k, err)) != 0 ||
        (rc = emit(c, srv, "wave_started", d,
                   json_pack("{s:i,s:i,s:i,s:o}", "wave", k, "waves", (int)d->wave_count, "nodes",
                             (int)w->node_count, "node_ids", strv(w->node_ids, w->node_count)),
                   err)) != 0)
        return rc;
    sx_log_fields(SX_LOG_INFO, COMPONENT,
                  json_pack("{s:s,s:i,s:i}", "deployment", d->id, "wave", k, "nodes", pinned),
                  "deployment %s: wave %d started (%d nodes)", d->id, k, pinned);
    return notify_pins(c, d, err);
}

/*
 * Starts the rollback of d from state `from`: undoes a promotion, releases the pins
 * (the nodes follow their group's current snapshot: what they had), marks the started
 * waves rolled back and the pending ones canceled, audits and emits. *written gets the
 * snapshots an undone promotion wrote, for the cache.
 */
static int begin_rollback(pg_conn *c, struct sx_server *srv, deploy_record *d, deploy_state from,
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
            rc = set_wave_state(c, d, (int)i, DEPLOY_WAVE_PENDING, DEPLOY_WAVE_CANCELED, err);
        else if (s == DEPLOY_WAVE_IN_PROGRESS || s == DEPLOY_WAVE_COMPLETED ||
                 s == DEPLOY_WAVE_FAILED)
            rc = set_wave_state(c, d, (int)i, (int)s, DEPLOY_WAVE_ROLLED_BACK, err);
        if (rc)
            return rc;
    }
    if ((rc = deploy_repo_set_state(c, d->id, from, DEPLOY_ROLLING_BACK, reason, err)) != 0)
        return rc;
    json_t *details = json_pack("{s:s,s:s,s:b,s:i,s:b}", "from_state", deploy_state_name(from),
                                "reason", reason, "automatic", who == NULL, "nodes_released",
                                released, "promotion_undone", d->promoted);
    if ((rc = audit(c, srv, who, "deployment.rollback", "deployment", d->id, details, err)) != 0 ||
        (rc = emit(c, srv, "rollback_started", d,
                   json_pack("{s:s,s:b,s:i}", "reason", reason, "automatic", who == NULL, "nodes",
                             released),
                   err)) != 0)
        return rc;
    sx_log_fields(
        SX_LOG_WARN, COMPONENT,
        json_pack("{s:s,s:s,s:b}", "deployment", d->id, "reason", reason, "automatic", who == NULL),
        "deployment %s rolling back: %s", d->id, reason);
    return notify_pins(c, d, err);
}

/* ------------------------------------------------------------------ operator actions */

const char *rollout_action_name(rollout_action act)
{
    switch (act) {
    case ROLLOUT_PAUSE:
        return "pause";
    case ROLLOUT_RESUME:
        return "resume";
    case ROLLOUT_CANCEL:
        return "cancel";
    default:
        return "rollback";
    }
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

static int act_tx(pg_conn *c, void *arg, sx_err *err)
{
    act_ctx *x = arg;
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
    case ROLLOUT_ROLLBACK:
        if (from != DEPLOY_IN_PROGRESS && from != DEPLOY_PAUSED && from != DEPLOY_COMPLETED &&
            from != DEPLOY_ROLLBACK_FAILED)
            return refuse_state(d, x->act, err);
        if (d->promoted && (rc = check_still_live(c, d, x->a, err)) != 0)
            return rc;
        if ((rc = begin_rollback(c, x->srv, d, from, reason, x->who, x->a, &x->written,
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
    if ((rc = audit(c, x->srv, x->who, action, "deployment", d->id, details, err)) != 0)
        return rc;
    const char *type = x->act == ROLLOUT_PAUSE    ? EVENT_ROLLOUT_PAUSED
                       : x->act == ROLLOUT_RESUME ? EVENT_ROLLOUT_RESUMED
                                                  : EVENT_ROLLOUT_CANCELED;
    if ((rc = emit(c, x->srv, type, d,
                   json_pack("{s:s,s:s,s:s,s:i}", "reason", x->reason ? x->reason : "", "by",
                             x->who->user, "from_state", deploy_state_name(from), "wave",
                             d->current_wave),
                   err)) != 0)
        return rc;
    return deploy_repo_get(c, d->id, x->a, &x->out, err);
}

int rollout_act(struct sx_server *srv, const char *id, rollout_action act, const char *reason,
                const rollout_actor *who, sx_arena *a, deploy_record **out, sx_err *err)
{
    *out = NULL;
    act_ctx x = {srv, id, act, reason, who, a, NULL, NULL, 0};
    int rc = pg_tx(srv->db, act_tx, &x, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < x.nwritten; i++)
        snap_repo_cache_put(srv->snap_repo, x.written[i]);
    sx_log_fields(SX_LOG_INFO, COMPONENT,
                  json_pack("{s:s,s:s,s:s,s:s}", "deployment", id, "action",
                            rollout_action_name(act), "state", deploy_state_name(x.out->state),
                            "user", who->user),
                  "deployment %s: %s by %s", id, rollout_action_name(act), who->user);
    *out = x.out;
    return 0;
}

/* ------------------------------------------------------------------ the driver's steps */

typedef struct step_ctx {
    struct sx_server *srv;
    const char *id;
    const char *replica;
    sx_arena *a;
    snap_record **written;
    size_t nwritten;
    double wave_seconds;    /* > 0: a wave completed, its duration */
    const json_t *promoted; /* {"group": version} made current, for the cache */
} step_ctx;

/* Pending: pin every node of the plan to what it has, then start the first wave. */
static int step_pending(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        n += d->waves[i].node_count;
    const char **all = sx_arena_alloc(x->a, (n ? n : 1) * sizeof(*all));
    size_t k = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        for (size_t j = 0; j < d->waves[i].node_count; j++)
            all[k++] = d->waves[i].node_ids[j];
    int rc = pin_repo_set(c, all, n, d->baseline_snapshots, d->id, NULL, err);
    if (rc || (rc = deploy_repo_set_state(c, d->id, DEPLOY_PENDING, DEPLOY_IN_PROGRESS, "started",
                                          err)) != 0)
        return rc;
    d->state = DEPLOY_IN_PROGRESS;
    if (d->wave_count == 0)
        return 0;
    return start_wave(c, x->srv, d, 0, err);
}

/* Completion: promote (unless promote is off), release the pins, record it. */
static int complete(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    int rc;
    if (d->promote) {
        int released = 0;
        if ((rc = apply_promote(c, d, x->a, err)) != 0 ||
            (rc = deploy_repo_mark(c, d->id, DEPLOY_MARK_PROMOTED, err)) != 0 ||
            (rc = pin_repo_release_deployment(c, d->id, &released, err)) != 0 ||
            (rc = notify_pins(c, d, err)) != 0)
            return rc;
        x->promoted = d->target_snapshots;
    }
    if ((rc = deploy_repo_set_state(c, d->id, DEPLOY_IN_PROGRESS, DEPLOY_COMPLETED,
                                    "every wave ACKed", err)) != 0)
        return rc;
    json_t *details = json_pack("{s:i,s:b,s:O}", "waves", (int)d->wave_count, "promoted",
                                d->promote, "targets", d->target_snapshots);
    if ((rc = audit(c, x->srv, NULL, "deployment.complete", "deployment", d->id, details, err)) !=
            0 ||
        (rc = emit(c, x->srv, "rollout_completed", d,
                   json_pack("{s:i,s:b}", "waves", (int)d->wave_count, "promoted", d->promote),
                   err)) != 0)
        return rc;
    sx_log_fields(SX_LOG_INFO, COMPONENT, json_pack("{s:s}", "deployment", d->id),
                  "deployment %s completed", d->id);
    return 0;
}

/* The wave failed for reason: record it, then start the automatic rollback. */
static int fail(pg_conn *c, step_ctx *x, deploy_record *d, int k, const char *reason, sx_err *err)
{
    int rc = set_wave_state(c, d, k, DEPLOY_WAVE_IN_PROGRESS, DEPLOY_WAVE_FAILED, err);
    if (rc ||
        (rc = deploy_repo_set_state(c, d->id, DEPLOY_IN_PROGRESS, DEPLOY_FAILED, reason, err)) != 0)
        return rc;
    d->waves[k].state = DEPLOY_WAVE_FAILED;
    json_t *details = json_pack("{s:s,s:i}", "reason", reason, "wave", k);
    if ((rc = audit(c, x->srv, NULL, "deployment.fail", "deployment", d->id, details, err)) != 0 ||
        (rc = emit(c, x->srv, "rollout_failed", d,
                   json_pack("{s:s,s:i}", "reason", reason, "wave", k), err)) != 0)
        return rc;
    return begin_rollback(c, x->srv, d, DEPLOY_FAILED, reason, NULL, x->a, &x->written,
                          &x->nwritten, err);
}

static bool has_error_for(const json_t *errors, const char *node_id)
{
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "node_id"));
        if (n && strcmp(n, node_id) == 0)
            return true;
    }
    return false;
}

/* In progress: tally the current wave; complete, fail, or start the next one. */
static int step_in_progress(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    int k = d->current_wave;
    if (k < 0 || (size_t)k >= d->wave_count)
        return d->wave_count == 0 ? complete(c, x, d, err) : 0;
    deploy_wave *w = &d->waves[k];
    int rc;
    if (w->state == DEPLOY_WAVE_COMPLETED) {
        if ((size_t)k + 1 >= d->wave_count)
            return complete(c, x, d, err);
        long long pause = rollout_strategy_pause_ms(d->strategy);
        if (w->completed_age_s * 1000.0 < (double)pause)
            return 0;
        return start_wave(c, x->srv, d, k + 1, err);
    }
    if (w->state != DEPLOY_WAVE_IN_PROGRESS)
        return 0;

    pin_answer *ans = NULL;
    size_t nans = 0;
    if ((rc = pin_repo_answers(c, (const char *const *)w->node_ids, w->node_count, x->a, &ans,
                               &nans, err)) != 0)
        return rc;
    int acks = 0, nacks = 0, unhealthy = 0;
    for (size_t i = 0; i < nans; i++) {
        long long t = target_of(d, ans[i].group);
        if (t <= 0)
            continue;
        if (ans[i].acked == t) {
            acks++;
        } else if (ans[i].nacked == t) {
            nacks++;
            if (!has_error_for(w->errors, ans[i].node_id)) {
                deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
                json_t *e =
                    json_pack("{s:s,s:I,s:s,s:s}", "node_id", ans[i].node_id, "version",
                              (json_int_t)t, "error", ans[i].nack_error ? ans[i].nack_error : "",
                              "at", ans[i].nack_at ? ans[i].nack_at : "");
                u.append_error = e;
                rc = deploy_repo_update_wave(c, d->id, k, &u, err);
                json_decref(e);
                if (rc)
                    return rc;
            }
        }
        if (ans[i].report_ready == 0 && ans[i].report_age_s < w->started_age_s)
            unhealthy++;
    }
    if (acks != w->acks || nacks != w->nacks) {
        deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
        u.acks = acks;
        u.nacks = nacks;
        if ((rc = deploy_repo_update_wave(c, d->id, k, &u, err)) != 0)
            return rc;
    }
    int responses = acks + nacks, total_nacks = nacks;
    for (int i = 0; i < k; i++) {
        responses += d->waves[i].acks + d->waves[i].nacks;
        total_nacks += d->waves[i].nacks;
    }
    double rate = responses ? (double)total_nacks / responses : 0;
    int size = (int)w->node_count;
    char *why = NULL;
    if (responses >= d->nack_min_sample && responses > 0 && rate > d->nack_threshold)
        why = sx_arena_printf(x->a,
                              "NACK rate %.1f%% (%d of %d responses) is over the threshold %.1f%%",
                              rate * 100, total_nacks, responses, d->nack_threshold * 100);
    else if (unhealthy >= d->health_failure_limit)
        why = sx_arena_printf(
            x->a, "health: %d node%s of wave %d of %zu reported not ready (limit %d)", unhealthy,
            unhealthy == 1 ? "" : "s", k + 1, d->wave_count, d->health_failure_limit);
    else if (acks + nacks >= size && nacks > 0 && responses < d->nack_min_sample)
        why = sx_arena_printf(x->a,
                              "wave %d of %zu: %d of %d nodes NACKed, and %d responses are too "
                              "few (minimum sample %d) to tolerate NACKs",
                              k + 1, d->wave_count, nacks, size, responses, d->nack_min_sample);
    else if (acks + nacks < size) {
        double since = w->started_age_s;
        if (d->resumed_at && d->resumed_age_s < since)
            since = d->resumed_age_s;
        if (since * 1000.0 > (double)d->wave_timeout_ms) {
            char t[32];
            config_format_duration(d->wave_timeout_ms, t, sizeof(t));
            why = sx_arena_printf(x->a, "wave %d of %zu timed out after %s: %d of %d nodes ACKed",
                                  k + 1, d->wave_count, t, acks, size);
        }
    }
    if (why)
        return fail(c, x, d, k, why, err);
    if (acks + nacks < size)
        return 0;
    /* Every node answered; NACKs (if any) are within the tolerated rate. */
    if ((rc = set_wave_state(c, d, k, DEPLOY_WAVE_IN_PROGRESS, DEPLOY_WAVE_COMPLETED, err)) != 0 ||
        (rc = emit(c, x->srv, "wave_completed", d,
                   json_pack("{s:i,s:i,s:i,s:i,s:f}", "wave", k, "waves", (int)d->wave_count,
                             "acks", acks, "nacks", nacks, "duration_seconds", w->started_age_s),
                   err)) != 0)
        return rc;
    x->wave_seconds = w->started_age_s > 0 ? w->started_age_s : 1e-3;
    sx_log_fields(SX_LOG_INFO, COMPONENT,
                  json_pack("{s:s,s:i,s:i,s:i}", "deployment", d->id, "wave", k, "acks", acks,
                            "nacks", nacks),
                  "deployment %s: wave %d completed", d->id, k);
    return 0;
}

/* Rolling back: done once every connected node that had started is on its group's
 * current snapshot again; failed after the wave timeout. */
static int step_rolling_back(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        if (d->waves[i].state == DEPLOY_WAVE_ROLLED_BACK)
            n += d->waves[i].node_count;
    const char **nodes = sx_arena_alloc(x->a, (n ? n : 1) * sizeof(*nodes));
    size_t k = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        if (d->waves[i].state == DEPLOY_WAVE_ROLLED_BACK)
            for (size_t j = 0; j < d->waves[i].node_count; j++)
                nodes[k++] = d->waves[i].node_ids[j];
    pin_answer *ans = NULL;
    size_t nans = 0;
    int rc = pin_repo_answers(c, nodes, n, x->a, &ans, &nans, err);
    if (rc)
        return rc;
    json_t *current = own(x->a, json_object());
    json_t *missing = own(x->a, json_array());
    for (size_t i = 0; i < nans; i++) {
        json_t *cv = json_object_get(current, ans[i].group);
        long long want;
        if (cv == NULL) {
            if ((rc = snap_repo_current_version(c, ans[i].group, &want, err)) != 0)
                return rc;
            json_object_set_new(current, ans[i].group, json_integer(want));
        } else {
            want = (long long)json_integer_value(cv);
        }
        if (ans[i].connected && ans[i].acked != want)
            json_array_append_new(missing, json_string(ans[i].node_id));
    }
    size_t left = json_array_size(missing);
    if (left == 0) {
        if ((rc = deploy_repo_set_state(c, d->id, DEPLOY_ROLLING_BACK, DEPLOY_ROLLED_BACK, NULL,
                                        err)) != 0)
            return rc;
        json_t *details = json_pack("{s:i,s:s}", "nodes", (int)nans, "reason",
                                    d->state_reason ? d->state_reason : "");
        if ((rc = audit(c, x->srv, NULL, "deployment.rolled_back", "deployment", d->id, details,
                        err)) != 0)
            return rc;
        sx_log_fields(SX_LOG_INFO, COMPONENT, json_pack("{s:s}", "deployment", d->id),
                      "deployment %s rolled back", d->id);
        return emit(c, x->srv, "rollback_completed", d,
                    json_pack("{s:s,s:i,s:o}", "result", "rolled_back", "nodes", (int)nans,
                              "current_snapshots", json_deep_copy(current)),
                    err);
    }
    if (d->state_age_s * 1000.0 <= (double)d->wave_timeout_ms)
        return 0;
    char *why = sx_arena_printf(x->a,
                                "rollback timed out: %zu node%s did not return to their "
                                "previous snapshot",
                                left, left == 1 ? "" : "s");
    if ((rc = deploy_repo_set_state(c, d->id, DEPLOY_ROLLING_BACK, DEPLOY_ROLLBACK_FAILED, why,
                                    err)) != 0)
        return rc;
    json_t *details = json_pack("{s:s,s:O}", "reason", why, "nodes", missing);
    if ((rc = audit(c, x->srv, NULL, "deployment.rollback_failed", "deployment", d->id, details,
                    err)) != 0)
        return rc;
    return emit(
        c, x->srv, "rollback_completed", d,
        json_pack("{s:s,s:s,s:O}", "result", "rollback_failed", "reason", why, "nodes", missing),
        err);
}

static int step_tx(pg_conn *c, void *arg, sx_err *err)
{
    step_ctx *x = arg;
    x->written = NULL;
    x->nwritten = 0;
    x->wave_seconds = 0;
    x->promoted = NULL;
    deploy_record *d = NULL;
    int rc = deploy_repo_lock(c, x->id, x->a, &d, err);
    if (rc)
        return rc;
    /* Another replica took it over since this one claimed it: leave it alone. */
    if (d->owner_replica == NULL || strcmp(d->owner_replica, x->replica) != 0)
        return 0;
    switch (d->state) {
    case DEPLOY_PENDING:
        return step_pending(c, x, d, err);
    case DEPLOY_IN_PROGRESS:
        return step_in_progress(c, x, d, err);
    case DEPLOY_CANCELING:
        return begin_rollback(c, x->srv, d, DEPLOY_CANCELING,
                              d->state_reason && d->state_reason[0] ? d->state_reason : "canceled",
                              NULL, x->a, &x->written, &x->nwritten, err);
    case DEPLOY_ROLLING_BACK:
        return step_rolling_back(c, x, d, err);
    default:
        return 0;
    }
}

int rollout_step(struct sx_server *srv, const char *id, const char *replica, double *wave_seconds,
                 sx_err *err)
{
    *wave_seconds = 0;
    sx_arena *a = sx_arena_create();
    step_ctx x = {.srv = srv, .id = id, .replica = replica, .a = a};
    int rc = pg_tx(srv->db, step_tx, &x, err);
    if (rc == 0) {
        for (size_t i = 0; i < x.nwritten; i++)
            snap_repo_cache_put(srv->snap_repo, x.written[i]);
        const char *group;
        json_t *v;
        json_object_foreach((json_t *)x.promoted, group, v)
            snap_repo_cache_current(srv->snap_repo, group, (long long)json_integer_value(v));
        *wave_seconds = x.wave_seconds;
    }
    sx_arena_destroy(a);
    return rc;
}
