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
#include "server/catalog.h"

/* A proxy is in its group's scope. */
static policy_object node_scope(const void *item)
{
    const node_record *n = item;
    return (policy_object){(const char *const *)&n->group, 1, NULL};
}

static json_t *node_item(const void *n)
{
    return api_node_json(n);
}

int api_proxies_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    int connected;
    if (api_query_bool(req, "connected", &connected, &page->details, err) != 0)
        return err->code;
    const char *group = http_req_query(req, "group");
    const char *state = http_req_query(req, "state");
    if (state && state[0] == '\0')
        state = NULL;
    if (state && !node_repo_state_valid(state)) {
        page->details = api_details1("state", "must be connected, stale or disconnected");
        return sx_err_set(err, SX_EINVAL, "invalid query parameter state");
    }
    node_filter f = {
        .group = group && group[0] ? group : NULL,
        .connected = connected,
        .state = state,
        .limit = page->limit,
        .cursor = page->cursor,
    };
    node_list list;
    int rc = catalog_proxies(rest_server(api), &f, http_req_arena(req), &list, err);
    /* Only the proxies of the groups in the caller's scope stay on the page. */
    return API_PAGE_SCOPED(page, rc, list, node_item, req, api, "proxies", node_scope);
}

/* The node named by the route, or the error answered (404 when there is none). */
static node_record *node_or_respond(http_request *req, rest_api *api)
{
    node_record *n = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (catalog_proxy(rest_server(api), http_req_param(req, "node_id"), http_req_arena(req), &n,
                      &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return NULL;
    }
    const char *g = n->group;
    policy_object obj = {&g, 1, NULL};
    if (!api_scope_or_respond(req, api, NULL, "proxies", "read", &obj,
                              sx_arena_printf(http_req_arena(req), "proxy %s", n->node_id)))
        return NULL;
    return n;
}

void api_proxy_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    node_record *n = node_or_respond(req, api);
    if (n)
        http_respond_json(req, 200, api_node_json(n));
}

void api_proxy_config(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    node_record *n = node_or_respond(req, api);
    if (n == NULL)
        return;
    snap_record *ds = NULL, *as = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (catalog_proxy_snapshots(rest_server(api), n, http_req_arena(req), &ds, &as, &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    json_t *desired = ds ? api_snapshot_json(ds) : json_null();
    json_t *acked = as ? api_snapshot_json(as) : json_null();
    json_int_t want = json_integer_value(json_object_get(desired, "version"));
    bool in_sync = want > 0 && want == n->acked_version;
    json_t *body =
        json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:b}", "node_id", n->node_id, "group", n->group,
                  "assignment", n->desired_version > 0 ? "pinned" : "group_latest", "acked_version",
                  n->acked_version ? json_integer(n->acked_version) : json_null(), "desired",
                  desired, "acked", acked, "in_sync", in_sync);
    http_respond_json(req, 200, body);
}

/* One NACK event as {"at", "group", "version", "error", "replica"}. */
static json_t *nack_item(const void *item)
{
    const event_record *e = item;
    json_t *v = json_object_get(e->data, "version");
    const char *error = json_string_value(json_object_get(e->data, "error"));
    return json_pack("{s:s,s:s?,s:O?,s:s,s:s}", "at", e->at, "group", e->group, "version", v,
                     "error", error ? error : "", "replica", e->replica_id ? e->replica_id : "");
}

/* GET /api/v1/proxies/{node_id}/nacks: the node's NACKs, newest first, from the events
 * it produced (config_rejected; kept for events.retention). */
int api_proxy_nacks_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    struct sx_server *srv = rest_server(api);
    sx_arena *a = http_req_arena(req);
    node_record *n = NULL;
    event_page events;
    int rc = catalog_proxy(srv, http_req_param(req, "node_id"), a, &n, err);
    if (rc == 0) {
        const char *g = n->group;
        policy_object obj = {&g, 1, NULL};
        if (!api_scope_reads(req, api, "proxies", &obj))
            rc = sx_err_set(err, SX_ENOTFOUND, "proxy %s does not exist", n->node_id);
    }
    if (rc == 0)
        rc = catalog_proxy_nacks(srv, n->node_id, page->limit, page->cursor, a, &events, err);
    return API_PAGE_FILL(page, rc, events, nack_item);
}
