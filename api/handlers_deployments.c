/*
 * handlers_deployments.c — rollouts over REST: POST /api/v1/configs/{id}/apply (plan or
 * create a deployment), GET /api/v1/deployments[/{id}], and the operator actions
 * POST /api/v1/deployments/{id}/pause|resume|cancel|rollback|promote (promote: a
 * blue-green deployment whose green nodes ACKed switches its blue ones).
 *
 * The work is in server/rollout/rollout.h; these handlers read the request into a
 * rollout_request (selector, strategy, policy overrides, dry run), map outcomes to
 * statuses and audit refusals like every other change. Reads go to server/catalog.h.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers_common.h"
#include "api/handlers_routes.h"
#include "api/idempotency.h"
#include "server/catalog.h"
#include "server/changes.h"
#include "server/rollout/rollout.h"
#include "storage/repo_common.h"
#include "storage/repo_deployments.h"

#define NFIELDS(a) (sizeof(a) / sizeof(a[0]))

static const api_field apply_fields[] = {
    {"version", API_INT, true},          {"selector", API_OBJECT, false},
    {"strategy", API_OBJECT, false},     {"dry_run", API_BOOL, false},
    {"reason", API_STRING, false},       {"nack_threshold", API_NUMBER, false},
    {"nack_min_sample", API_INT, false}, {"wave_timeout", API_STRING, false},
    {"health_failures", API_INT, false}, {"promote", API_BOOL, false},
};

static bool db_ready_or_respond(http_request *req, struct sx_server *srv)
{
    sx_err err;
    if (changes_ready(srv, &err) == 0)
        return true;
    api_refuse(req, NULL, &err, NULL);
    return false;
}

static json_t *fielderrs_details(const sx_fielderrs *verrs)
{
    json_t *d = json_array();
    for (size_t i = 0; i < verrs->count; i++)
        api_detail(d, verrs->items[i].path, verrs->items[i].message);
    return d;
}

/* Strings of an optional array field of the selector into *out (in a); problems to errs.
 * *out stays NULL when the field is absent. */
static size_t selector_strings(sx_arena *a, const json_t *sel, const char *key,
                               const char *const **out, sx_fielderrs *errs)
{
    *out = NULL;
    const json_t *v = json_object_get(sel, key);
    if (v == NULL)
        return 0;
    if (!json_is_array(v)) {
        sx_fielderrs_add(errs, key, "must be an array of strings");
        return 0;
    }
    size_t n = json_array_size(v);
    const char **s = sx_arena_alloc(a, (n ? n : 1) * sizeof(*s));
    for (size_t i = 0; i < n; i++) {
        s[i] = json_string_value(json_array_get(v, i));
        if (s[i] == NULL || s[i][0] == '\0') {
            char path[64];
            snprintf(path, sizeof(path), "%s[%zu]", key, i);
            sx_fielderrs_add(errs, path, "must be a non-empty string");
            return 0;
        }
    }
    *out = s;
    return n;
}

/* The "selector" of an apply request into r; problems go to verrs under "selector.". */
static void parse_selector(sx_arena *a, const json_t *sel, rollout_request *r, sx_fielderrs *verrs)
{
    sx_fielderrs errs = {0};
    static const char *const keys[] = {"node_ids", "groups", "labels", "namespaces"};
    const char *key;
    json_t *val;
    r->has_selector = true;
    json_object_foreach((json_t *)sel, key, val)
    {
        bool known = false;
        for (size_t i = 0; i < 4; i++)
            known = known || strcmp(key, keys[i]) == 0;
        if (!known)
            sx_fielderrs_add(&errs, key,
                             "is not a selector field (node_ids, groups, labels, "
                             "namespaces)");
    }
    r->group_count = selector_strings(a, sel, "groups", &r->groups, &errs);
    r->node_id_count = selector_strings(a, sel, "node_ids", &r->node_ids, &errs);
    r->namespace_count = selector_strings(a, sel, "namespaces", &r->namespaces, &errs);
    const json_t *labels = json_object_get(sel, "labels");
    if (labels) {
        bool ok = json_is_object(labels);
        json_t *lv;
        const char *lk;
        json_object_foreach((json_t *)labels, lk, lv) ok = ok && json_is_string(lv);
        if (!ok)
            sx_fielderrs_add(&errs, "labels", "must be an object of strings");
        else
            r->labels = labels;
    }
    for (size_t i = 0; i < errs.count; i++) {
        char path[300];
        snprintf(path, sizeof(path), "selector.%s", errs.items[i].path);
        sx_fielderrs_add(verrs, path, "%s", errs.items[i].message);
    }
    sx_fielderrs_free(&errs);
}

/* The apply request body (its fields' types already checked) into r; every problem goes
 * to verrs. */
static void parse_apply(http_request *req, struct sx_server *srv, const json_t *body,
                        rollout_request *r, sx_fielderrs *verrs)
{
    r->dry_run = json_is_true(json_object_get(body, "dry_run"));
    json_int_t v = json_integer_value(json_object_get(body, "version"));
    if (v < 1 || v > 0x7fffffff)
        sx_fielderrs_add(verrs, "version", "must be a positive integer (a version of the config)");
    r->version = (int)v;
    rollout_strategy_parse(json_object_get(body, "strategy"), &r->strategy, verrs);
    r->policy = rollout_policy_defaults(srv);
    rollout_policy_parse(body, &r->policy, verrs);
    r->reason = api_str(body, "reason");
    const json_t *sel = json_object_get(body, "selector");
    if (sel)
        parse_selector(http_req_arena(req), sel, r, verrs);
}

/* idem_render_fn of a keyed apply: result is rollout_apply's answer (a json_t), ud the
 * rollout_request (a dry run answers 200, a created deployment 201). */
static json_t *render_apply(const void *result, void *ud, int *status)
{
    *status = ((const rollout_request *)ud)->dry_run ? 200 : 201;
    return json_incref((json_t *)result);
}

/* idem_render_fn of a keyed operator action: result is the deploy_record. */
static json_t *render_act(const void *result, void *ud, int *status)
{
    (void)ud;
    *status = 200;
    return rollout_deployment_json(result);
}

void api_config_apply(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *id = http_req_param(req, "id");
    api_change ch = {req, api, "config.apply", "config", id};
    struct sx_server *srv = rest_server(api);
    sx_err err;
    sx_err_clear(&err);
    if (!repo_is_uuid(id)) {
        sx_err_set(&err, SX_ENOTFOUND, "config %.40s does not exist", id ? id : "");
        api_refuse(req, &ch, &err, api_details1("id", "a config id is a UUID"));
        return;
    }
    rollout_request r = {.config_id = id};
    idem_request *idem;
    json_t *body;
    if (!db_ready_or_respond(req, srv) || !api_idem_or_respond(req, &ch, render_apply, &r, &idem) ||
        !api_body_or_respond(req, &ch, apply_fields, NFIELDS(apply_fields), &body))
        return;
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    json_t *out = NULL;
    bool created = false;
    int rc;
    /* A rollout reaches the config's groups: they must be in the caller's scope. */
    cfg_record *cfg = NULL;
    cfg_version *latest = NULL;
    if (catalog_config(srv, id, false, http_req_arena(req), &cfg, &latest, &err) != 0) {
        api_refuse(req, &ch, &err, NULL);
        return;
    }
    policy_object obj = {(const char *const *)cfg->groups, cfg->group_count, cfg->ns};
    if (!api_scope_or_respond(req, api, &ch, "configs", "apply", &obj,
                              sx_arena_printf(http_req_arena(req), "config %s", id)))
        return;
    parse_apply(req, srv, body, &r, &verrs);
    if (verrs.count > 0) {
        rc = sx_err_set(&err, SX_EINVAL, "the request body has %zu problem%s", verrs.count,
                        verrs.count == 1 ? "" : "s");
    } else {
        rollout_actor who = {api_user(req), api_role(req), http_req_id(req), rest_source_ip(req),
                             idem};
        rc = rollout_apply(srv, &r, &who, http_req_arena(req), &out, &created, &problems, &verrs,
                           &err);
    }
    if (rc == 0 && idem && idem->replayed) {
        api_idem_respond(req, idem);
    } else if (rc == 0) {
        if (created) {
            char loc[128];
            snprintf(loc, sizeof(loc), "/api/v1/deployments/%s",
                     json_string_value(json_object_get(out, "id")));
            http_req_set_header(req, "Location", loc);
        }
        if (!api_idem_respond(req, idem))
            http_respond_json(req, created ? 201 : 200, out);
        else
            json_decref(out);
    } else {
        err.code = rc;
        json_t *details = NULL;
        if (rc == SX_EVALIDATION || (rc == SX_ECONFLICT && problems.count > 0))
            details = changes_problems_json(&problems, &verrs, "compose");
        else if (rc == SX_EINVAL && verrs.count > 0)
            details = fielderrs_details(&verrs);
        api_refuse(req, &ch, &err, details);
    }
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
}

static json_t *deployment_item(const void *d)
{
    return rollout_deployment_json(d);
}

static policy_object deployment_scope(const void *item)
{
    const deploy_record *d = item;
    return (policy_object){(const char *const *)d->groups, d->group_count, NULL};
}

int api_deployments_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    deploy_filter f = {.limit = page->limit, .cursor = page->cursor};
    const char *states = http_req_query(req, "state");
    if (states && states[0]) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", states);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            deploy_state s;
            if (deploy_state_parse(t, &s) != 0) {
                page->details = api_details1(
                    "state", "must be a comma-separated list of pending, in_progress, paused, "
                             "completed, failed, canceling, rolling_back, rolled_back, "
                             "rollback_failed");
                return sx_err_set(err, SX_EINVAL, "invalid state filter");
            }
            f.state_mask |= 1u << s;
        }
    }
    const char *config = http_req_query(req, "config_id");
    if (config && config[0]) {
        if (!repo_is_uuid(config)) {
            page->details = api_details1("config_id", "must be a config id (a UUID)");
            return sx_err_set(err, SX_EINVAL, "invalid config_id filter");
        }
        f.config_id = config;
    }
    deploy_list list;
    int rc = catalog_deployments(rest_server(api), &f, http_req_arena(req), &list, err);
    /* Only the deployments whose every group is in the caller's scope stay on the page. */
    return API_PAGE_SCOPED(page, rc, list, deployment_item, req, api, "deployments",
                           deployment_scope);
}

static bool deployment_id_or_respond(http_request *req, const api_change *ch, const char **out)
{
    const char *id = http_req_param(req, "id");
    if (repo_is_uuid(id)) {
        *out = id;
        return true;
    }
    sx_err err;
    sx_err_set(&err, SX_ENOTFOUND, "deployment %.40s does not exist", id ? id : "");
    api_refuse(req, ch, &err, api_details1("id", "a deployment id is a UUID"));
    return false;
}

void api_deployment_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *id;
    if (!deployment_id_or_respond(req, NULL, &id))
        return;
    deploy_record *d = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (catalog_deployment(rest_server(api), id, http_req_arena(req), &d, &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    policy_object obj = {(const char *const *)d->groups, d->group_count, NULL};
    if (!api_scope_or_respond(req, api, NULL, "deployments", "read", &obj,
                              sx_arena_printf(http_req_arena(req), "deployment %s", id)))
        return;
    http_respond_json(req, 200, rollout_deployment_json(d));
}

static const api_field action_fields[] = {{"reason", API_STRING, false}};

static void act(http_request *req, rest_api *api, rollout_action what)
{
    char action[64];
    snprintf(action, sizeof(action), "deployment.%s", rollout_action_name(what));
    api_change ch = {req, api, action, "deployment", http_req_param(req, "id")};
    const char *id;
    struct sx_server *srv = rest_server(api);
    idem_request *idem;
    if (!deployment_id_or_respond(req, &ch, &id) || !db_ready_or_respond(req, srv) ||
        !api_idem_or_respond(req, &ch, render_act, NULL, &idem))
        return;
    /* The body is optional: none means no reason. A body that is there is read as any
     * other (415 without a JSON Content-Type), never ignored: an action whose body was
     * not understood is not done. */
    json_t *body = NULL;
    size_t body_len = 0;
    const char *ctype = http_req_header(req, "Content-Type");
    (void)http_req_body(req, &body_len);
    if (((ctype && ctype[0]) || body_len > 0) &&
        !api_body_or_respond(req, &ch, action_fields, 1, &body))
        return;
    /* A deployment's groups never change: the scope checked is the scope acted on. */
    deploy_record *cur = NULL;
    sx_err rerr;
    sx_err_clear(&rerr);
    if (catalog_deployment(srv, id, http_req_arena(req), &cur, &rerr) != 0) {
        api_refuse(req, &ch, &rerr, NULL);
        return;
    }
    policy_object obj = {(const char *const *)cur->groups, cur->group_count, NULL};
    if (!api_scope_or_respond(req, api, &ch, "deployments", rollout_action_name(what), &obj,
                              sx_arena_printf(http_req_arena(req), "deployment %s", id)))
        return;
    rollout_actor who = {api_user(req), api_role(req), http_req_id(req), rest_source_ip(req), idem};
    deploy_record *d = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = rollout_act(srv, id, what, body ? api_str(body, "reason") : NULL, &who,
                         http_req_arena(req), &d, &err);
    if (rc) {
        api_refuse(req, &ch, &err, NULL);
        return;
    }
    if (!api_idem_respond(req, idem))
        http_respond_json(req, 200, rollout_deployment_json(d));
}

void api_deployment_act(http_request *req, rest_api *api, void *ud)
{
    const api_route *route = ud;
    for (rollout_action what = ROLLOUT_PAUSE; what <= ROLLOUT_PROMOTE; what++) {
        if (strcmp(route->action, rollout_action_name(what)) == 0) {
            act(req, api, what);
            return;
        }
    }
    sx_err err;
    sx_err_set(&err, SX_EINTERNAL, "route %s names no deployment action", route->pattern);
    api_refuse(req, NULL, &err, NULL);
}
