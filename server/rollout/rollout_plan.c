/*
 * rollout_plan.c — a deployment's plan and creation: POST /configs/{id}/apply as a
 * typed rollout_request (see rollout.h).
 *
 * One transaction stages a snapshot per affected group (apply_stage), picks the
 * selected nodes among the groups' known ones, splits the connected ones into waves by
 * the strategy and either answers the plan (dry run: nothing is kept) or writes the
 * pending deployment with its waves and audits it. The driver (rollout_step.c) takes
 * it from there.
 */
#include "server/rollout/rollout_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/apply.h"
#include "server/base/log.h"
#include "server/changes.h"
#include "server/config.h"
#include "server/events.h"
#include "server/server.h"
#include "storage/repo_configs.h"
#include "storage/repo_pins.h"
#include "storage/repo_snapshots.h"

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

/* Blue-green: moves the planned nodes that strategy.green picks to the front of planned
 * (in their order) and counts them in *ngreen. Green must pick at least one planned node
 * and leave at least one blue; a green node id that is not planned is a problem too. The
 * problems go to x->verrs; SX_EINVAL, a dry run included (its plan would be wrong). */
static int split_green(pg_conn *c, apply_ctx *x, const char **groups, size_t ngroups,
                       const char **planned, size_t nplanned, size_t *ngreen, sx_err *err)
{
    *ngreen = 0;
    const json_t *green = x->req->strategy.green;
    const json_t *ids_j = json_object_get(green, "node_ids");
    size_t nids = json_array_size(ids_j);
    const char **ids = nids ? sx_arena_alloc(x->a, nids * sizeof(*ids)) : NULL;
    for (size_t i = 0; i < nids; i++)
        ids[i] = json_string_value(json_array_get(ids_j, i));
    const json_t *labels = json_object_get(green, "labels");
    pin_candidate *cand = NULL;
    size_t ncand = 0;
    int rc =
        pin_repo_select(c, groups, ngroups, ids, nids, json_object_size(labels) ? labels : NULL,
                        NULL, 0, x->a, &cand, &ncand, err);
    if (rc)
        return rc;
    size_t before = x->verrs->count;
    for (size_t i = 0; i < nids; i++) {
        bool found = false;
        for (size_t j = 0; j < nplanned && !found; j++)
            found = strcmp(planned[j], ids[i]) == 0;
        if (!found) {
            char path[80];
            snprintf(path, sizeof(path), "strategy.green.node_ids[%zu]", i);
            sx_fielderrs_add(x->verrs, path,
                             "%s is not a connected node the selector picks for this deployment",
                             ids[i]);
        }
    }
    const char **order = sx_arena_alloc(x->a, (nplanned ? nplanned : 1) * sizeof(*order));
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t j = 0; j < nplanned; j++) {
            bool is_green = false;
            for (size_t i = 0; i < ncand && !is_green; i++)
                is_green = strcmp(cand[i].node_id, planned[j]) == 0;
            if (is_green == (pass == 0))
                order[k++] = planned[j];
            if (is_green && pass == 0)
                (*ngreen)++;
        }
    }
    memcpy(planned, order, nplanned * sizeof(*planned));
    if (*ngreen == 0)
        sx_fielderrs_add(x->verrs, "strategy.green",
                         "matches none of the connected nodes this deployment selects");
    else if (*ngreen == nplanned)
        sx_fielderrs_add(x->verrs, "strategy.green",
                         "matches every selected node (%zu): blue-green needs nodes that keep "
                         "the current version until promoted",
                         nplanned);
    if (x->verrs->count > before)
        return sx_err_set(err, SX_EINVAL, "the blue-green split is not possible");
    return 0;
}

static int plan_tx(pg_conn *c, void *arg, sx_err *err)
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
    json_t *validation =
        rollout_own(a, json_pack("{s:b,s:o}", "valid", rc == 0, "problems",
                                 changes_problems_json(x->problems, x->verrs, "compose")));
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
    json_t *skipped = rollout_own(a, json_array());
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
    rollout_strategy strat = r->strategy;
    if (strat.kind == ROLLOUT_BLUE_GREEN &&
        (rc = split_green(c, x, groups, ngroups, planned, nplanned, &strat.green_count, err)) != 0)
        return rc;
    size_t *sizes = NULL;
    size_t nwaves = rollout_wave_sizes(&strat, nplanned, &sizes);
    sx_arena_defer(a, free, sizes);

    json_t *targets = rollout_own(a, json_object()), *baselines = rollout_own(a, json_object());
    json_t *gplan = rollout_own(a, json_array());
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
    json_t *strategy = rollout_own(a, rollout_strategy_json(&strat));

    deploy_wave_new *waves = sx_arena_alloc(a, (nwaves ? nwaves : 1) * sizeof(*waves));
    json_t *wplan = rollout_own(a, json_array());
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
        .selector = rollout_own(a, selector_json(r)),
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
    if ((rc = rollout_audit(c, x->srv, x->who, "config.apply", "config", cfg->id, details, err)) !=
            0 ||
        (rc = rollout_emit(c, x->srv, EVENT_DEPLOYMENT_STARTED, d,
                           json_pack("{s:O,s:i,s:i,s:O,s:s}", "strategy", strategy, "waves",
                                     (int)nwaves, "nodes", (int)nplanned, "groups", gplan, "by",
                                     x->who->user),
                           err)) != 0)
        return rc;
    x->out = rollout_deployment_json(d);
    return 0;
}

/* plan_tx under the client's key, when the request has one (server/idem.h). */
static int apply_tx(pg_conn *c, void *arg, sx_err *err)
{
    apply_ctx *x = arg;
    x->out = NULL;
    int rc = idem_begin(c, x->who->idem, x->a, err);
    if (rc || (x->who->idem && x->who->idem->replayed))
        return rc;
    if ((rc = plan_tx(c, x, err)) != 0)
        return rc;
    return idem_end(c, x->who->idem, x->out, x->a, err);
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
    if (who->idem && who->idem->replayed)
        return 0;
    for (size_t i = 0; i < x.st.nwritten; i++)
        snap_repo_cache_put(srv->snap_repo, x.st.written[i]);
    *out = x.out;
    *created = !req->dry_run;
    if (*created)
        sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG,
                      json_pack("{s:O,s:s,s:i,s:s}", "deployment", json_object_get(x.out, "id"),
                                "config_id", req->config_id, "version", req->version, "user",
                                who->user),
                      "deployment created");
    return 0;
}
