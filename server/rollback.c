/*
 * rollback.c — a proxy group's rollback to one of its snapshots (see rollback.h).
 *
 * The old content goes through the same pipeline as a config change (val_run), read as
 * one config holding the whole group: no peers, and the quotas per config set to those
 * of the group, since the snapshot is the group's composition and passed them as such
 * when it was written. Its problems' paths are rewritten from "spec" to "snapshot", the
 * document they point into. Validation reads the group's data planes inside the
 * transaction that writes, so a change of them cannot slip between the check and the
 * write. The transaction body is rerun on a serialization failure: it resets its
 * result and problems first and allocates only from the caller's arena.
 */
#include "server/rollback.h"

#include <string.h>
#include <time.h>

#include "server/base/mem.h"
#include "server/groups.h"
#include "server/snapshot/compose.h"
#include "server/snapshot/writer.h"
#include "storage/repo_audit.h"
#include "storage/repo_common.h"

typedef struct rb_ctx {
    const rollback_group_request *req;
    const snap_record *target;
    sx_arena *a;
    rollback_group_result *out;
    sx_fielderrs *verrs;
    snap_record *written;
} rb_ctx;

/* Runs the pipeline on the target's IR for the group as it is now: 0 when it passes,
 * SX_EVALIDATION with req->problems when it does not, database errors otherwise. */
static int validate_content(pg_conn *c, rb_ctx *ctx, sx_err *err)
{
    const rollback_group_request *req = ctx->req;
    val_result_free(req->problems);
    if (req->limits == NULL || req->problems == NULL)
        return 0;
    const val_limits *lim = NULL;
    const char *groups[] = {req->group};
    int rc = groups_limits(c, req->limits, groups, 1, ctx->a, &lim, err);
    if (rc)
        return rc;
    val_limits whole = *lim;
    whole.config_listeners = whole.group_listeners;
    whole.config_routes = whole.group_routes;
    whole.config_backends = whole.group_backends;
    whole.config_endpoints = whole.group_endpoints;
    long long now = req->now_unix > 0 ? req->now_unix : (long long)time(NULL);
    if (val_run(ctx->target->ir, NULL, 0, &whole, now, req->problems) == 0)
        return 0;
    for (size_t i = 0; i < req->problems->count; i++) {
        char *p = req->problems->items[i].path;
        if (p && strncmp(p, "spec", 4) == 0 && (p[4] == '\0' || p[4] == '.' || p[4] == '[')) {
            size_t n = strlen(p) + 5;
            char *q = sx_malloc(n);
            memcpy(q, "snapshot", 8);
            memcpy(q + 8, p + 4, n - 8);
            sx_free(p);
            req->problems->items[i].path = q;
        }
    }
    size_t n = req->problems->count;
    int vrc =
        sx_err_set(err, SX_EVALIDATION, "snapshot %lld of group %s is invalid now: %zu problem%s",
                   req->snapshot_version, req->group, n, n == 1 ? "" : "s");
    sx_err_detail(err, "Validation checks a rollback's content as it checks any change, against "
                       "the group and the time of the rollback.");
    sx_err_hint(err, "Fix the configs and publish a new version, or republish this snapshot "
                     "anyway with \"force\": true (the audit log records that it was forced and "
                     "what validation said).");
    return vrc;
}

static int rollback_tx(pg_conn *c, snap_writer *w, void *arg, sx_err *err)
{
    rb_ctx *ctx = arg;
    const rollback_group_request *req = ctx->req;
    sx_arena *a = ctx->a;
    memset(ctx->out, 0, sizeof(*ctx->out));
    ctx->written = NULL;
    sx_fielderrs_free(ctx->verrs);
    int rc = idem_begin(c, req->idem, a, err);
    if (rc || (req->idem && req->idem->replayed))
        return rc;

    rc = validate_content(c, ctx, err);
    if (rc == SX_EVALIDATION && req->force) {
        sx_err_clear(err);
        ctx->out->forced = true;
    } else if (rc) {
        return rc;
    }

    snap_compose_input in = {"", req->group, ctx->target->ir, NULL};
    char *reason = sx_arena_printf(a, "rollback to snapshot %lld%s%s%s", req->snapshot_version,
                                   ctx->out->forced ? " (forced)" : "",
                                   req->message && req->message[0] ? ": " : "",
                                   req->message ? req->message : "");
    snap_write sw = {req->group, &in,         1,   ctx->target->sources, ctx->target->source_count,
                     reason,     req->author, NULL};
    rc = snap_writer_publish(w, c, &sw, &ctx->out->before_version, ctx->verrs, &ctx->written, err);
    if (rc)
        return rc;
    ctx->out->changed = ctx->written != NULL;
    ctx->out->version = ctx->written ? ctx->written->version : ctx->out->before_version;

    json_t *details =
        repo_own_json(a, json_pack("{s:s,s:I,s:I,s:I,s:b,s:b}", "group", req->group,
                                   "snapshot_version", (json_int_t)req->snapshot_version,
                                   "before_version", (json_int_t)ctx->out->before_version,
                                   "after_version", (json_int_t)ctx->out->version, "changed",
                                   ctx->out->changed, "forced", ctx->out->forced));
    if (ctx->out->forced)
        json_object_set_new(details, "validation", val_result_to_json(req->problems));
    if (req->message && req->message[0])
        json_object_set_new(details, "message", json_string(req->message));
    return groups_change_end(c, GROUPS_WHO(req), "group.rollback", req->group, details, req->idem,
                             ctx->out, a, err);
}

int rollback_group(pg_pool *pool, snap_repo *snaps, const rollback_group_request *req, sx_arena *a,
                   rollback_group_result *out, sx_fielderrs *verrs, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = groups_check_change(req->group, req->author, "a rollback", err);
    if (rc)
        return rc;
    if (req->snapshot_version < 1)
        return sx_err_set(err, SX_EINVAL, "snapshot_version must be a positive integer");
    /* Snapshots are immutable: reading the target before the transaction is safe. */
    snap_record *target = NULL;
    rc =
        snap_repo_get(snaps, req->group, req->snapshot_version, SNAP_REPO_WITH_IR, a, &target, err);
    if (rc)
        return rc;
    rb_ctx ctx = {req, target, a, out, verrs, NULL};
    if ((rc = snap_writer_tx(pool, snaps, a, rollback_tx, &ctx, err)) != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}
