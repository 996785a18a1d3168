/*
 * handlers_deployments.c — rollouts over REST: POST /api/v1/configs/{id}/apply (plan or
 * create a deployment), GET /api/v1/deployments[/{id}], and the operator actions
 * POST /api/v1/deployments/{id}/pause|resume|cancel|rollback.
 *
 * The work is in server/rollout/rollout.h; these handlers check the request's shape,
 * map outcomes to statuses and audit refusals like every other change.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers_common.h"
#include "api/handlers_routes.h"
#include "server/rollout/rollout.h"
#include "server/server.h"
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
    if (srv->db != NULL && srv->snap_repo != NULL)
        return true;
    http_req_set_header(req, "Retry-After", "1");
    http_respond_error(req, SX_EUNAVAILABLE, "the database is not available", NULL);
    return false;
}

static json_t *fielderrs_details(const sx_fielderrs *verrs)
{
    json_t *d = json_array();
    for (size_t i = 0; i < verrs->count; i++)
        api_detail(d, verrs->items[i].path, verrs->items[i].message);
    return d;
}

void api_config_apply(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *id = http_req_param(req, "id");
    api_change ch = {req, api, "config.apply", "config", id};
    struct sx_server *srv = rest_server(api);
    if (!repo_is_uuid(id)) {
        char msg[128];
        snprintf(msg, sizeof(msg), "config %.40s does not exist", id ? id : "");
        json_t *d = json_array();
        api_detail(d, "id", "a config id is a UUID");
        api_fail(req, &ch, SX_ENOTFOUND, msg, d);
        return;
    }
    json_t *body;
    if (!db_ready_or_respond(req, srv) ||
        !api_body_or_respond(req, &ch, apply_fields, NFIELDS(apply_fields), &body))
        return;
    rollout_actor who = {api_user(req), api_role(req), http_req_id(req), rest_source_ip(req)};
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    sx_err err;
    sx_err_clear(&err);
    json_t *out = NULL;
    bool created = false;
    int rc = rollout_apply(srv, id, body, &who, http_req_arena(req), &out, &created, &problems,
                           &verrs, &err);
    if (rc == 0) {
        if (created) {
            char loc[128];
            snprintf(loc, sizeof(loc), "/api/v1/deployments/%s",
                     json_string_value(json_object_get(out, "id")));
            http_req_set_header(req, "Location", loc);
        }
        http_respond_json(req, created ? 201 : 200, out);
    } else if (rc == SX_EVALIDATION || (rc == SX_ECONFLICT && problems.count > 0)) {
        api_change_fail(&ch, rc == SX_EVALIDATION ? 422 : 409, sx_code_name(rc), err.message,
                        api_problem_details(&problems, &verrs, "compose"));
    } else if (rc == SX_EINVAL && verrs.count > 0) {
        api_change_fail(&ch, 400, sx_code_name(rc), err.message, fielderrs_details(&verrs));
    } else {
        api_change_fail_err(&ch, &err);
    }
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
}

void api_deployments_list(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int limit;
    const char *cursor;
    if (!api_page_or_respond(req, &limit, &cursor))
        return;
    deploy_filter f = {.limit = limit, .cursor = cursor};
    const char *states = http_req_query(req, "state");
    if (states && states[0]) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", states);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            deploy_state s;
            if (deploy_state_parse(t, &s) != 0) {
                json_t *d = json_array();
                api_detail(d, "state",
                           "must be a comma-separated list of pending, in_progress, paused, "
                           "completed, failed, canceling, rolling_back, rolled_back, "
                           "rollback_failed");
                http_respond_error(req, SX_EINVAL, "invalid state filter", d);
                return;
            }
            f.state_mask |= 1u << s;
        }
    }
    const char *config = http_req_query(req, "config_id");
    if (config && config[0]) {
        if (!repo_is_uuid(config)) {
            json_t *d = json_array();
            api_detail(d, "config_id", "must be a config id (a UUID)");
            http_respond_error(req, SX_EINVAL, "invalid config_id filter", d);
            return;
        }
        f.config_id = config;
    }
    pg_conn *c = api_conn_or_respond(req, api);
    if (c == NULL)
        return;
    deploy_list list;
    sx_err err;
    sx_err_clear(&err);
    int rc = deploy_repo_list(c, &f, http_req_arena(req), &list, &err);
    pg_release(rest_server(api)->db, c);
    if (rc) {
        api_respond_err(req, &err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < list.count; i++)
        json_array_append_new(items, rollout_deployment_json(&list.items[i]));
    http_respond_json(req, 200, api_page(items, list.next_cursor));
}

static bool deployment_id_or_respond(http_request *req, const api_change *ch, const char **out)
{
    const char *id = http_req_param(req, "id");
    if (repo_is_uuid(id)) {
        *out = id;
        return true;
    }
    char msg[128];
    snprintf(msg, sizeof(msg), "deployment %.40s does not exist", id ? id : "");
    json_t *d = json_array();
    api_detail(d, "id", "a deployment id is a UUID");
    api_fail(req, ch, SX_ENOTFOUND, msg, d);
    return false;
}

void api_deployment_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *id;
    if (!deployment_id_or_respond(req, NULL, &id))
        return;
    pg_conn *c = api_conn_or_respond(req, api);
    if (c == NULL)
        return;
    deploy_record *d = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = deploy_repo_get(c, id, http_req_arena(req), &d, &err);
    pg_release(rest_server(api)->db, c);
    if (rc) {
        api_respond_err(req, &err);
        return;
    }
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
    if (!deployment_id_or_respond(req, &ch, &id) || !db_ready_or_respond(req, srv))
        return;
    /* The body is optional: an empty one means no reason. */
    json_t *body = NULL;
    const char *ctype = http_req_header(req, "Content-Type");
    if ((ctype && ctype[0]) && !api_body_or_respond(req, &ch, action_fields, 1, &body))
        return;
    rollout_actor who = {api_user(req), api_role(req), http_req_id(req), rest_source_ip(req)};
    deploy_record *d = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = rollout_act(srv, id, what, body ? api_str(body, "reason") : NULL, &who,
                         http_req_arena(req), &d, &err);
    if (rc) {
        api_change_fail_err(&ch, &err);
        return;
    }
    http_respond_json(req, 200, rollout_deployment_json(d));
}

void api_deployment_pause(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    act(req, api, ROLLOUT_PAUSE);
}

void api_deployment_resume(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    act(req, api, ROLLOUT_RESUME);
}

void api_deployment_cancel(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    act(req, api, ROLLOUT_CANCEL);
}

void api_deployment_rollback(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    act(req, api, ROLLOUT_ROLLBACK);
}
