/*
 * handlers_search.c — GET /api/v1/search?q=&limit=: the proxies, configs, groups and
 * deployments whose name or id contains q (server/catalog.h, storage/repo_search.h),
 * for the web UI's search box. Each hit stays only when the caller may read it (the
 * RBAC scope of its kind, as the lists of each kind filter theirs).
 */
#include <string.h>

#include "api/handlers_common.h"
#include "api/handlers_routes.h"
#include "server/catalog.h"

#define SEARCH_LIMIT_DEFAULT 8

/* The RBAC resource type of a hit's kind. */
static const char *kind_type(const char *kind)
{
    if (strcmp(kind, "proxy") == 0)
        return "proxies";
    if (strcmp(kind, "config") == 0)
        return "configs";
    if (strcmp(kind, "group") == 0)
        return "groups";
    return "deployments";
}

static json_t *hit_json(const search_hit *h)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < h->group_count; i++)
        json_array_append_new(groups, json_string(h->groups[i]));
    return json_pack("{s:s,s:s,s:s,s:s,s:o}", "kind", h->kind, "id", h->id, "label", h->label,
                     "detail", h->detail ? h->detail : "", "groups", groups);
}

/* A 400 naming the query parameter that is wrong. */
static void refuse_param(http_request *req, const char *name, const char *why)
{
    sx_err err;
    sx_err_set(&err, SX_EINVAL, "invalid %s", name);
    api_refuse(req, NULL, &err, api_details1(name, why));
}

void api_search(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *q = http_req_query(req, "q");
    if (q == NULL || q[strspn(q, " \t\r\n")] == '\0') {
        refuse_param(req, "q", "is required: a fragment of a name or id");
        return;
    }
    if (strlen(q) > SEARCH_QUERY_MAX) {
        refuse_param(req, "q", "must be at most 200 bytes");
        return;
    }
    long long limit = SEARCH_LIMIT_DEFAULT;
    const char *l = http_req_query(req, "limit");
    if (l && (!api_parse_positive(l, &limit) || limit > SEARCH_LIMIT_MAX)) {
        refuse_param(req, "limit", "must be an integer between 1 and 50");
        return;
    }
    sx_err err;
    sx_err_clear(&err);
    search_list hits;
    if (catalog_search(rest_server(api), q, (int)limit, http_req_arena(req), &hits, &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < hits.count; i++) {
        const search_hit *h = &hits.items[i];
        policy_object obj = {(const char *const *)h->groups, h->group_count, h->ns};
        if (api_scope_reads(req, api, kind_type(h->kind), &obj))
            json_array_append_new(items, hit_json(h));
    }
    http_respond_json(req, 200, json_pack("{s:s,s:o}", "query", q, "items", items));
}
