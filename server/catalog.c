/*
 * catalog.c — the read side of the REST API (see catalog.h).
 *
 * Each read is one or a few statements on one pooled connection, taken and given back
 * inside the call, so no caller ever holds a connection across its own work (rendering,
 * answering a slow client). Snapshot reads go through the snapshot repository, which
 * takes its own connection and serves from the cache when it can. Reads need no
 * transaction: configs' versions and snapshots are immutable, and a page is consistent
 * by its keyset cursor.
 */
#include "server/catalog.h"

#include <string.h>

#include "server/config.h"
#include "server/events.h"
#include "server/server.h"
#include "storage/pg_pool.h"

static int unavailable(sx_err *err)
{
    return sx_err_set(err, SX_EUNAVAILABLE, "the database is not available");
}

pg_conn *catalog_acquire(const struct sx_server *srv, sx_err *err)
{
    pg_conn *c = NULL;
    if (srv == NULL || srv->db == NULL)
        unavailable(err);
    else if (pg_acquire(srv->db, &c, err) != 0)
        c = NULL;
    return c;
}

int catalog_release(const struct sx_server *srv, pg_conn *c, int rc)
{
    if (c)
        pg_release(srv->db, c);
    return rc;
}

node_thresholds catalog_thresholds(const struct sx_server *srv)
{
    node_thresholds t = {0, 0};
    if (srv && srv->config) {
        t.stale_after_ms = srv->config->fleet.stale_after_ms;
        t.disconnected_after_ms = srv->config->fleet.disconnected_after_ms;
    }
    return t;
}

int catalog_configs(struct sx_server *srv, const cfg_filter *f, sx_arena *a, cfg_list *out,
                    sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? cfg_repo_list(c, f, a, out, err) : err->code);
}

int catalog_config(struct sx_server *srv, const char *id, bool include_deleted, sx_arena *a,
                   cfg_record **cfg, cfg_version **latest, sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    int rc = c ? cfg_repo_get(c, id, include_deleted, a, cfg, err) : err->code;
    if (rc == 0)
        rc = cfg_repo_get_version(c, (*cfg)->id, (*cfg)->latest_version, a, latest, err);
    return catalog_release(srv, c, rc);
}

int catalog_versions(struct sx_server *srv, const char *id, int limit, const char *cursor,
                     sx_arena *a, cfg_version_list *out, sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(
        srv, c, c ? cfg_repo_list_versions(c, id, limit, cursor, a, out, err) : err->code);
}

int catalog_version(struct sx_server *srv, const char *id, int v, sx_arena *a, cfg_version **out,
                    sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? cfg_repo_get_version(c, id, v, a, out, err) : err->code);
}

int catalog_version_pair(struct sx_server *srv, const char *id, int *from, int *to, sx_arena *a,
                         cfg_version **vfrom, cfg_version **vto, sx_err *err)
{
    cfg_record *cfg = NULL;
    pg_conn *c = catalog_acquire(srv, err);
    int rc = c ? cfg_repo_get(c, id, true, a, &cfg, err) : err->code;
    if (rc == 0) {
        if (*to == 0)
            *to = cfg->latest_version;
        if (*from == 0)
            *from = *to > 1 ? *to - 1 : 1;
        rc = cfg_repo_get_version(c, id, *from, a, vfrom, err);
        if (rc == 0)
            rc = cfg_repo_get_version(c, id, *to, a, vto, err);
    }
    return catalog_release(srv, c, rc);
}

int catalog_snapshots(struct sx_server *srv, const char *group, int limit, const char *cursor,
                      sx_arena *a, snap_list *out, sx_err *err)
{
    if (srv == NULL || srv->snap_repo == NULL)
        return unavailable(err);
    if (group && group[0])
        return snap_repo_list_versions(srv->snap_repo, group, limit, cursor, a, out, err);
    return snap_repo_list_all(srv->snap_repo, limit, cursor, a, out, err);
}

int catalog_snapshot(struct sx_server *srv, long long id, sx_arena *a, snap_record **out,
                     cfg_record ***sources, sx_err *err)
{
    *sources = NULL;
    if (srv == NULL || srv->snap_repo == NULL)
        return unavailable(err);
    /* Before taking a connection here: the repository takes its own. */
    int rc = snap_repo_get_by_id(srv->snap_repo, id, a, out, err);
    if (rc)
        return rc;
    pg_conn *c = catalog_acquire(srv, err);
    if (c == NULL)
        return err->code;
    const snap_record *s = *out;
    cfg_record **cfgs = sx_arena_alloc(a, (s->source_count ? s->source_count : 1) * sizeof(*cfgs));
    for (size_t i = 0; i < s->source_count; i++) {
        sx_err ignored;
        cfgs[i] = NULL;
        if (cfg_repo_get(c, s->sources[i].config_id, true, a, &cfgs[i], &ignored) != 0)
            cfgs[i] = NULL;
    }
    *sources = cfgs;
    return catalog_release(srv, c, 0);
}

int catalog_group(struct sx_server *srv, const char *group, sx_arena *a, groups_info *out,
                  sx_err *err)
{
    if (srv == NULL || srv->db == NULL)
        return unavailable(err);
    return groups_get(srv->db, group, srv->config->groups.default_planes, a, out, err);
}

int catalog_group_planes(struct sx_server *srv, const char *const *groups, size_t n, sx_arena *a,
                         unsigned **planes, sx_err *err)
{
    *planes = sx_arena_alloc(a, (n ? n : 1) * sizeof(**planes));
    pg_conn *c = catalog_acquire(srv, err);
    if (c == NULL)
        return err->code;
    val_group_planes *gp = NULL;
    int rc = groups_planes(c, groups, n, a, &gp, err);
    unsigned dflt = srv->config->groups.default_planes;
    for (size_t i = 0; rc == 0 && i < n; i++)
        (*planes)[i] = gp[i].planes ? gp[i].planes : (dflt ? dflt : VAL_PLANES_ALL);
    return catalog_release(srv, c, rc);
}

int catalog_groups(struct sx_server *srv, int limit, const char *cursor, sx_arena *a,
                   snap_group_list *out, node_state_counts **counts, sx_err *err)
{
    *counts = NULL;
    if (srv == NULL || srv->snap_repo == NULL)
        return unavailable(err);
    int rc = snap_repo_list_groups(srv->snap_repo, limit, cursor, a, out, err);
    if (rc || out->count == 0)
        return rc;
    /* Fleet health of the page's groups, one query for all of them. */
    const char **names = sx_arena_alloc(a, out->count * sizeof(*names));
    for (size_t i = 0; i < out->count; i++)
        names[i] = out->items[i].name;
    node_state_counts *k = sx_arena_alloc(a, out->count * sizeof(*k));
    node_thresholds t = catalog_thresholds(srv);
    pg_conn *c = catalog_acquire(srv, err);
    if (c == NULL)
        return err->code;
    *counts = k;
    return catalog_release(srv, c, node_repo_count_groups(c, &t, names, out->count, k, err));
}

int catalog_proxies(struct sx_server *srv, const node_filter *f, sx_arena *a, node_list *out,
                    sx_err *err)
{
    node_filter nf = *f;
    nf.thresholds = catalog_thresholds(srv);
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? node_repo_list(c, &nf, a, out, err) : err->code);
}

int catalog_proxy(struct sx_server *srv, const char *node_id, sx_arena *a, node_record **out,
                  sx_err *err)
{
    node_thresholds t = catalog_thresholds(srv);
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? node_repo_get_with(c, node_id, &t, a, out, err) : err->code);
}

/* Snapshot (group, version) with its IR, latest when version is 0; NULL when it does
 * not exist. */
static int snapshot_or_null(snap_repo *r, const char *group, long long version, sx_arena *a,
                            snap_record **out, sx_err *err)
{
    *out = NULL;
    int rc = version > 0 ? snap_repo_get(r, group, version, SNAP_REPO_WITH_IR, a, out, err)
                         : snap_repo_get_latest(r, group, SNAP_REPO_WITH_IR, a, out, err);
    if (rc == SX_ENOTFOUND) {
        *out = NULL;
        return 0;
    }
    return rc;
}

int catalog_proxy_snapshots(struct sx_server *srv, const node_record *n, sx_arena *a,
                            snap_record **desired, snap_record **acked, sx_err *err)
{
    *desired = NULL;
    *acked = NULL;
    if (srv == NULL || srv->snap_repo == NULL)
        return unavailable(err);
    int rc = snapshot_or_null(srv->snap_repo, n->group, n->desired_version, a, desired, err);
    if (rc == 0 && n->acked_version > 0)
        rc = snapshot_or_null(srv->snap_repo, n->group, n->acked_version, a, acked, err);
    return rc;
}

int catalog_proxy_nacks(struct sx_server *srv, const char *node_id, int limit, const char *cursor,
                        sx_arena *a, event_page *out, sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(
        srv, c,
        c ? event_repo_list_node(c, node_id, EVENT_CONFIG_REJECTED, limit, cursor, a, out, err)
          : err->code);
}

int catalog_audit(struct sx_server *srv, const audit_filter *f, sx_arena *a, audit_list *out,
                  sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? audit_repo_list(c, f, a, out, err) : err->code);
}

int catalog_deployments(struct sx_server *srv, const deploy_filter *f, sx_arena *a,
                        deploy_list *out, sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? deploy_repo_list(c, f, a, out, err) : err->code);
}

int catalog_deployment(struct sx_server *srv, const char *id, sx_arena *a, deploy_record **out,
                       sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? deploy_repo_get(c, id, a, out, err) : err->code);
}

int catalog_replicas(struct sx_server *srv, int limit, const char *cursor, sx_arena *a,
                     replica_list *out, sx_err *err)
{
    long long alive_ms = srv && srv->config ? 3 * srv->config->leader.heartbeat_ms : 15000;
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(
        srv, c, c ? replica_repo_list(c, alive_ms, limit, cursor, a, out, err) : err->code);
}

int catalog_search(struct sx_server *srv, const char *q, int limit, sx_arena *a, search_list *out,
                   sx_err *err)
{
    memset(out, 0, sizeof(*out));
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c, c ? search_repo_find(c, q, limit, a, out, err) : err->code);
}

int catalog_k8s_status(struct sx_server *srv, const char *source_ref, sx_arena *a,
                       k8s_status_record **out, size_t *count, sx_err *err)
{
    *out = NULL;
    *count = 0;
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(
        srv, c, c ? k8s_status_repo_for_ref(c, source_ref, a, out, count, err) : err->code);
}
