/*
 * handlers_proxies.c — /api/v1/proxies: the fleet as PostgreSQL knows it (every
 * replica writes its nodes' streams, ACKs and NACKs to proxy_nodes / node_status), one
 * node's identity and status, and the snapshot a node should have next to the one it
 * last acknowledged.
 *
 * A node "should have" its assigned version when a rollout pinned one
 * (node_status.desired_snapshot_version), else its group's newest snapshot.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers_routes.h"
#include "api/handlers_common.h"
#include "server/events.h"
#include "server/server.h"
#include "storage/repo_events.h"

void api_proxies_list(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int limit, connected;
    const char *cursor;
    if (!api_page_or_respond(req, &limit, &cursor) ||
        !api_query_bool_or_respond(req, "connected", &connected))
        return;
    pg_conn *c = api_conn_or_respond(req, api);
    if (c == NULL)
        return;
    const char *group = http_req_query(req, "group");
    const char *state = http_req_query(req, "state");
    if (state && state[0] == '\0')
        state = NULL;
    if (state && !node_repo_state_valid(state)) {
        pg_release(rest_server(api)->db, c);
        json_t *d = json_array();
        api_detail(d, "state", "must be connected, stale or disconnected");
        http_respond_error(req, SX_EINVAL, "invalid query parameter state", d);
        return;
    }
    node_filter f = {
        .group = group && group[0] ? group : NULL,
        .connected = connected,
        .state = state,
        .thresholds = api_fleet_thresholds(rest_server(api)),
        .limit = limit,
        .cursor = cursor,
    };
    node_list list;
    sx_err err;
    sx_err_clear(&err);
    int rc = node_repo_list(c, &f, http_req_arena(req), &list, &err);
    pg_release(rest_server(api)->db, c);
    if (rc) {
        api_respond_err(req, &err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < list.count; i++)
        json_array_append_new(items, api_node_json(&list.items[i]));
    http_respond_json(req, 200, api_page(items, list.next_cursor));
}

/* The node named by the route, or 404 answered. */
static node_record *node_or_respond(http_request *req, rest_api *api)
{
    pg_conn *c = api_conn_or_respond(req, api);
    if (c == NULL)
        return NULL;
    node_record *n = NULL;
    sx_err err;
    sx_err_clear(&err);
    node_thresholds t = api_fleet_thresholds(rest_server(api));
    int rc =
        node_repo_get_with(c, http_req_param(req, "node_id"), &t, http_req_arena(req), &n, &err);
    pg_release(rest_server(api)->db, c);
    if (rc) {
        api_respond_err(req, &err);
        return NULL;
    }
    return n;
}

void api_proxy_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    node_record *n = node_or_respond(req, api);
    if (n)
        http_respond_json(req, 200, api_node_json(n));
}

/* The snapshot (group, version) with its IR, or null when it does not exist. Other
 * errors are returned. */
static int snapshot_or_null(snap_repo *r, const char *group, long long version, sx_arena *a,
                            json_t **out, sx_err *err)
{
    *out = json_null();
    snap_record *s = NULL;
    int rc = version > 0 ? snap_repo_get(r, group, version, SNAP_REPO_WITH_IR, a, &s, err)
                         : snap_repo_get_latest(r, group, SNAP_REPO_WITH_IR, a, &s, err);
    if (rc == SX_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    json_decref(*out);
    *out = api_snapshot_json(s);
    return 0;
}

void api_proxy_config(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    node_record *n = node_or_respond(req, api);
    if (n == NULL)
        return;
    struct sx_server *srv = rest_server(api);
    sx_arena *a = http_req_arena(req);
    json_t *desired = NULL, *acked = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = snapshot_or_null(srv->snap_repo, n->group, n->desired_version, a, &desired, &err);
    if (rc == 0 && n->acked_version > 0)
        rc = snapshot_or_null(srv->snap_repo, n->group, n->acked_version, a, &acked, &err);
    if (rc) {
        json_decref(desired);
        json_decref(acked);
        api_respond_err(req, &err);
        return;
    }
    if (acked == NULL)
        acked = json_null();
    json_int_t want = json_integer_value(json_object_get(desired, "version"));
    bool in_sync = want > 0 && want == n->acked_version;
    json_t *body =
        json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:b}", "node_id", n->node_id, "group", n->group,
                  "assignment", n->desired_version > 0 ? "pinned" : "group_latest", "acked_version",
                  n->acked_version ? json_integer(n->acked_version) : json_null(), "desired",
                  desired, "acked", acked, "in_sync", in_sync);
    http_respond_json(req, 200, body);
}

/* GET /api/v1/proxies/{node_id}/nacks: the node's NACKs, newest first, from the events
 * it produced (config_rejected; kept for events.retention). */
void api_proxy_nacks(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int limit;
    const char *cursor;
    if (!api_page_or_respond(req, &limit, &cursor))
        return;
    node_record *n = node_or_respond(req, api);
    if (n == NULL)
        return;
    pg_conn *c = api_conn_or_respond(req, api);
    if (c == NULL)
        return;
    event_page page;
    sx_err err;
    sx_err_clear(&err);
    int rc = event_repo_list_node(c, n->node_id, EVENT_CONFIG_REJECTED, limit, cursor,
                                  http_req_arena(req), &page, &err);
    pg_release(rest_server(api)->db, c);
    if (rc) {
        api_respond_err(req, &err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < page.count; i++) {
        const event_record *e = &page.items[i];
        json_t *v = json_object_get(e->data, "version");
        const char *error = json_string_value(json_object_get(e->data, "error"));
        json_array_append_new(items, json_pack("{s:s,s:s?,s:O?,s:s,s:s}", "at", e->at, "group",
                                               e->group, "version", v, "error", error ? error : "",
                                               "replica", e->replica_id ? e->replica_id : ""));
    }
    http_respond_json(req, 200, api_page(items, page.next_cursor));
}
