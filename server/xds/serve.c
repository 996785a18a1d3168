/*
 * serve.c — what each stream is served: the publisher's fan-out of a group's new
 * snapshot, the rollout pins, and the snapshot a node should have (see serve.h).
 *
 * What a node is served is decided in one place, xds_serve_wanted: its pin (a
 * deployment's wave, from node_status), else its group's current snapshot. Every
 * replica reloads all pins on NOTIFY (and after the listener reconnects), builds the
 * pinned versions first (the publisher keeps versions other than the latest while
 * something pins them), then re-serves only the nodes whose pin changed, to exactly
 * that version, older or newer. A fan-out of a group's new current snapshot skips
 * pinned streams and only ever moves a stream forward.
 *
 * The fan-out runs on the publisher thread and locks one stream at a time; it adds no
 * allocation per stream beyond the registry's list of the group's streams.
 */
#include "server/xds/serve.h"

#include <string.h>

#include "server/base/arena.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/xds/call.h"
#include "storage/pg_pool.h"
#include "storage/repo_pins.h"

/* The publisher's fan-out: every stream of the snapshot's group gets it. */
void xds_serve_fanout(void *ctx, xds_wire_snap *snap)
{
    xds_server *s = ctx;
    void **calls = NULL;
    size_t n = xds_streams_list(s->streams, snap->entry->group, &calls);
    for (size_t i = 0; i < n; i++) {
        xds_call *c = calls[i];
        pthread_mutex_lock(&c->mu);
        /* A pinned node keeps its pin; it follows the group again once released. */
        long long pinned = xds_pins_get(s->pins, c->node_id, snap->entry->group);
        if (c->state == XDS_CALL_ACTIVE && (pinned == 0 || pinned == snap->entry->version)) {
            xds_call_adopt(c, snap, true, false);
            xds_call_kick(c);
        }
        pthread_mutex_unlock(&c->mu);
        xds_call_unref(c);
    }
    sx_free(calls);
    sx_log_fields(SX_LOG_INFO, XDS_LOG_COMPONENT,
                  json_pack("{s:s,s:I,s:I,s:b}", "group", snap->entry->group, "version",
                            (json_int_t)snap->entry->version, "streams", (json_int_t)n, "ads",
                            snap->wire != NULL && snap->wire->res->version == snap->entry->version),
                  "snapshot %s v%lld pushed to %zu stream%s", snap->entry->group,
                  snap->entry->version, n, n == 1 ? "" : "s");
}

/* ------------------------------------------------------------------ pins */

/* Re-serves node_id's stream on this replica, if any, what its assignment now says. */
static void retarget(xds_server *s, const char *node_id)
{
    xds_call *c = xds_streams_find(s->streams, node_id);
    if (c == NULL)
        return;
    /* group is fixed while the stream is registered; the lookup may block (not locked). */
    xds_wire_snap *snap = xds_serve_wanted(s, node_id, c->group, true);
    if (snap) {
        pthread_mutex_lock(&c->mu);
        if (c->state == XDS_CALL_ACTIVE) {
            xds_call_adopt(c, snap, false, true);
            xds_call_kick(c);
        }
        pthread_mutex_unlock(&c->mu);
        xds_wire_snap_unref(snap);
    }
    xds_call_unref(c);
}

static bool pin_in_use(void *ctx, const char *group, long long version)
{
    return xds_pins_uses(ctx, group, version);
}

/* Reloads every pin from the database and re-serves the nodes whose pin changed. Runs
 * on the snapshot loader's thread (NOTIFY and resync: server/snapshot/loader.h), which
 * calls again after a back-off when this fails. */
static int reload_pins(xds_server *s)
{
    if (s->o.pool == NULL)
        return 0;
    pthread_mutex_lock(&s->pins_mu);
    sx_err err;
    sx_err_clear(&err);
    pg_conn *conn = NULL;
    sx_arena *a = sx_arena_create();
    pin_record *v = NULL;
    size_t n = 0;
    int rc = pg_acquire(s->o.pool, &conn, &err);
    if (rc == 0) {
        rc = pin_repo_load(conn, a, &v, &n, &err);
        pg_release(s->o.pool, conn);
    }
    if (rc != 0) {
        /* The loader calls again after a back-off (or at once when the database is back). */
        sx_log_err(SX_LOG_WARN, XDS_LOG_COMPONENT, &err);
    } else {
        /* Build the pinned versions before anyone is moved to them: once per distinct
         * (group, version) — a handful, however many nodes are pinned. */
        const pin_record **built = n ? sx_arena_alloc(a, n * sizeof(*built)) : NULL;
        size_t nbuilt = 0;
        for (size_t i = 0; i < n; i++) {
            bool seen = false;
            for (size_t j = 0; j < nbuilt && !seen; j++)
                seen =
                    built[j]->version == v[i].version && strcmp(built[j]->group, v[i].group) == 0;
            if (seen)
                continue;
            built[nbuilt++] = &v[i];
            sx_err e2;
            sx_err_clear(&e2);
            xds_wire_snap *w = xds_pub_get_version(s->pub, v[i].group, v[i].version, &e2);
            if (w == NULL)
                sx_log_err(SX_LOG_ERROR, XDS_LOG_COMPONENT, &e2);
            xds_wire_snap_unref(w);
        }
        char **changed = NULL;
        size_t nchanged = xds_pins_replace(s->pins, v, n, &changed);
        for (size_t i = 0; i < nchanged; i++)
            retarget(s, changed[i]);
        if (nchanged > 0)
            sx_log_fields(
                SX_LOG_INFO, XDS_LOG_COMPONENT,
                json_pack("{s:I,s:I}", "pins", (json_int_t)n, "changed", (json_int_t)nchanged),
                "rollout assignments changed for %zu node%s", nchanged, nchanged == 1 ? "" : "s");
        xds_pins_free_ids(changed, nchanged);
        xds_pub_prune_versions(s->pub, pin_in_use, s->pins);
    }
    sx_arena_destroy(a);
    pthread_mutex_unlock(&s->pins_mu);
    return rc;
}

int xds_serve_pins_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    (void)payload;
    return reload_pins(ctx);
}

int xds_serve_pins_resync(void *ctx)
{
    return reload_pins(ctx);
}

/* ------------------------------------------------------------------ what a node is served */

/* What node_id in group should be served: its pinned version, else the group's current
 * one; a reference, or NULL when there is none yet. For an unpinned node, exact asks
 * for the version the store holds as current even when the publisher has not built it
 * yet (built here, blocking: the loader thread re-serving released pins must not move
 * a node back to the previous build); otherwise the publisher's latest build. */
xds_wire_snap *xds_serve_wanted(xds_server *s, const char *node_id, const char *group, bool exact)
{
    long long pinned = xds_pins_get(s->pins, node_id, group);
    if (pinned == 0 && exact && s->o.store) {
        snap_entry *e = snap_store_get(s->o.store, group);
        pinned = e ? e->version : 0;
        snap_entry_unref(e);
    }
    if (pinned == 0)
        return xds_pub_get(s->pub, group);
    sx_err err;
    sx_err_clear(&err);
    xds_wire_snap *snap = xds_pub_get_version(s->pub, group, pinned, &err);
    if (snap == NULL)
        sx_log_fields(SX_LOG_ERROR, XDS_LOG_COMPONENT,
                      json_pack("{s:s,s:s,s:I,s:s}", "node", node_id, "group", group, "version",
                                (json_int_t)pinned, "error", err.message),
                      "could not load snapshot %s v%lld that node %s is assigned", group, pinned,
                      node_id);
    return snap;
}
