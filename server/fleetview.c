/*
 * fleetview.c — the read side of the fleet views (see fleetview.h).
 *
 * Each call is one or two read-only statements on one pooled connection, taken and
 * given back inside the call, as in server/catalog.c; the aggregation happens in
 * PostgreSQL (storage/repo_fleet.c), so the cost of an answer does not grow with the
 * number of proxies the caller will see.
 */
#include "server/fleetview.h"

#include "server/catalog.h"
#include "server/config.h"
#include "server/server.h"
#include "storage/pg_pool.h"

/* 0 when group is NULL or known; SX_ENOTFOUND otherwise. */
static int known(pg_conn *c, const char *group, sx_err *err)
{
    bool k = true;
    int rc = group ? fleet_repo_group_known(c, group, &k, err) : 0;
    if (rc == 0 && !k)
        rc = sx_err_set(err, SX_ENOTFOUND, "proxy group %s does not exist", group);
    return rc;
}

int fleetview_topology(struct sx_server *srv, const char *group, sx_arena *a, json_t **out,
                       sx_err *err)
{
    *out = NULL;
    node_thresholds t = catalog_thresholds(srv);
    pg_conn *c = catalog_acquire(srv, err);
    int rc = c ? known(c, group, err) : err->code;
    if (rc == 0)
        rc = fleet_repo_topology(c, group, &t, a, out, err);
    return catalog_release(srv, c, rc);
}

int fleetview_health(struct sx_server *srv, int minutes, const char *group, sx_arena *a,
                     json_t **out, sx_err *err)
{
    *out = NULL;
    node_thresholds t = catalog_thresholds(srv);
    pg_conn *c = catalog_acquire(srv, err);
    int rc = c ? known(c, group, err) : err->code;
    if (rc == 0)
        rc = fleet_repo_health(c, minutes, group, &t, a, out, err);
    return catalog_release(srv, c, rc);
}

int fleetview_metrics(struct sx_server *srv, int minutes, sx_arena *a, json_t **out, sx_err *err)
{
    *out = NULL;
    node_thresholds t = catalog_thresholds(srv);
    json_t *health = NULL;
    pg_conn *c = catalog_acquire(srv, err);
    int rc = c ? fleet_repo_metrics(c, minutes, a, out, err) : err->code;
    if (rc == 0)
        rc = fleet_repo_health(c, minutes, NULL, &t, a, &health, err);
    if (rc == 0)
        json_object_set(*out, "replicas", json_object_get(health, "replicas"));
    return catalog_release(srv, c, rc);
}

int fleetview_timeline(struct sx_server *srv, const char *id, sx_arena *a, deploy_record **d,
                       json_t **out, sx_err *err)
{
    *out = NULL;
    *d = NULL;
    pg_conn *c = catalog_acquire(srv, err);
    int rc = c ? deploy_repo_get(c, id, a, d, err) : err->code;
    if (rc == 0)
        rc = fleet_repo_timeline(c, id, a, out, err);
    return catalog_release(srv, c, rc);
}
