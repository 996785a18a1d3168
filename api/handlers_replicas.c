/*
 * handlers_replicas.c — GET /api/v1/replicas: the Sextant replicas sharing the
 * database, as their heartbeats describe them (server/replicas.h), with which one
 * leads (server/leader.h).
 */
#include "api/handlers_common.h"
#include "api/handlers_routes.h"
#include "server/catalog.h"

static json_t *replica_item(const void *item)
{
    const replica_record *r = item;
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:b,s:o}", "id", r->replica_id, "version",
                     r->version, "http_address", r->http_address, "grpc_address", r->grpc_address,
                     "started_at", r->started_at, "last_seen", r->last_seen, "alive", r->alive,
                     "leader", r->leader, "term", r->leader ? json_integer(r->term) : json_null());
}

int api_replicas_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    replica_list list;
    int rc = catalog_replicas(rest_server(api), page->limit, page->cursor, http_req_arena(req),
                              &list, err);
    return API_PAGE_FILL(page, rc, list, replica_item);
}
