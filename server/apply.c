/*
 * apply.c — the configuration write path (see apply.h).
 *
 * The transaction body is written to be rerun: pg_tx repeats it after a
 * serialization failure, so it resets its result at the start and allocates only
 * from the caller's arena. Snapshot versions come from snap_repo_reserve_version,
 * which locks the group's row for the rest of the transaction, so the version a
 * snapshot's id names is the version it is stored under.
 */
#include "server/apply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/hash.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/ir/ir.h"
#include "server/snapshot/compose.h"
#include "server/snapshot/store.h"
#include "storage/pg_listener.h"
#include "storage/repo_audit.h"
#include "storage/repo_configs.h"

typedef struct tx_ctx {
    const apply_request *req;
    snap_repo *snaps;
    sx_arena *a;
    apply_result *out;
    sx_fielderrs *verrs;
    snap_record **written; /* records to put in the cache after the commit */
} tx_ctx;

static void decref_json(void *p)
{
    json_decref(p);
}

/* Hands j to the arena (released when it is destroyed); returns j. */
static json_t *own_json(sx_arena *a, json_t *j)
{
    return sx_arena_defer(a, decref_json, j);
}

static bool same_groups(const cfg_record *rec, const apply_request *req)
{
    if (rec->group_count != req->group_count)
        return false;
    for (size_t i = 0; i < req->group_count; i++) {
        bool found = false;
        for (size_t j = 0; j < rec->group_count && !found; j++)
            found = strcmp(req->groups[i], rec->groups[j]) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The groups to recompose: the new ones, plus old ones the config leaves. */
static size_t affected_groups(const cfg_record *old, const apply_request *req, sx_arena *a,
                              const char ***out)
{
    size_t cap = req->group_count + (old ? old->group_count : 0);
    const char **g = sx_arena_alloc(a, (cap ? cap : 1) * sizeof(*g));
    size_t n = 0;
    for (size_t i = 0; i < req->group_count; i++)
        g[n++] = req->groups[i];
    for (size_t i = 0; old && i < old->group_count; i++) {
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = strcmp(g[j], old->groups[i]) == 0;
        if (!dup)
            g[n++] = old->groups[i];
    }
    *out = g;
    return n;
}

/* sha256 of the composed content, ignoring the id and generation time, so that
 * composing the same configs twice gives the same checksum. */
static void content_checksum(const json_t *composed, char out[SX_SHA256_HEX_LEN + 1])
{
    json_t *copy = json_deep_copy(composed);
    json_object_del(copy, "id");
    json_object_del(copy, "generated_at");
    char *canon = ir_canonical_json(copy);
    sx_sha256_hex(canon, strlen(canon), out);
    free(canon);
    json_decref(copy);
}

/*
 * Writes group's next snapshot from the given sources on c: reserves the version,
 * names the snapshot "<group>:<version>", validates and encodes it, inserts it and
 * NOTIFYs. When the content equals the group's current snapshot nothing is written
 * and *written is NULL (the reserved number goes back when the transaction ends).
 */
static int write_snapshot(pg_conn *c, sx_arena *a, const char *group, const snap_compose_input *in,
                          size_t n, const snap_source *sources, const char *reason,
                          const char *author, sx_fielderrs *verrs, snap_record **written,
                          sx_err *err)
{
    *written = NULL;
    long long version = 0;
    int rc = snap_repo_reserve_version(c, group, &version, err);
    if (rc)
        return rc;

    char id[300], when[SX_RFC3339_LEN], sum[SX_SHA256_HEX_LEN + 1];
    snprintf(id, sizeof(id), "%s:%lld", group, version);
    sx_rfc3339_now(when);
    json_t *composed = own_json(a, snap_compose_json(in, n, id, when));
    content_checksum(composed, sum);

    /* Read on c: the pool may have no other connection to give while c is held. */
    char *cur = NULL;
    if (version > 1) {
        rc = snap_repo_checksum(c, group, version - 1, a, &cur, err);
        if (rc && rc != SX_ENOTFOUND)
            return rc;
        if (cur && strcmp(cur, sum) == 0)
            return 0;
    }

    ir_snapshot *ir = NULL;
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "groups[\"%s\"]", group);
    if (ir_snapshot_from_json(composed, prefix, &ir, verrs) != 0)
        return sx_err_set(err, SX_EVALIDATION, "the snapshot of group %s is invalid", group);
    size_t len = 0;
    uint8_t *bytes = ir_snapshot_pack(ir, &len);
    ir_snapshot_free(ir);
    sx_arena_defer(a, free, bytes);

    snap_new sn = {
        .group = group,
        .ir = composed,
        .encoded = bytes,
        .encoded_len = len,
        .checksum = sum,
        .sources = sources,
        .source_count = sources ? n : 0,
        .reason = reason ? reason : "",
        .created_by = author,
    };
    if ((rc = snap_repo_insert(c, &sn, a, written, err)) != 0)
        return rc;
    char *payload = snap_store_notify_payload(group, (*written)->version);
    rc = pg_notify(c, SNAP_NOTIFY_CHANNEL, payload, err);
    sx_free(payload);
    return rc;
}

/* Recomposes group on c from its configs; appends to ctx->out when a new snapshot was
 * written. */
static int recompose(pg_conn *c, tx_ctx *ctx, const char *group, sx_err *err)
{
    sx_arena *a = ctx->a;
    cfg_version *live = NULL;
    size_t n = 0;
    int rc = cfg_repo_live_for_group(c, group, a, &live, &n, err);
    if (rc)
        return rc;
    snap_compose_input *in = sx_arena_alloc(a, (n ? n : 1) * sizeof(*in));
    snap_source *sources = sx_arena_alloc(a, (n ? n : 1) * sizeof(*sources));
    for (size_t i = 0; i < n; i++) {
        cfg_record *rec = NULL;
        if ((rc = cfg_repo_get(c, live[i].config_id, false, a, &rec, err)) != 0)
            return rc;
        in[i] = (snap_compose_input){rec->ns, rec->name, live[i].spec};
        sources[i] = (snap_source){live[i].config_id, live[i].version};
    }
    snap_record *rec = NULL;
    rc = write_snapshot(c, a, group, in, n, sources, ctx->req->message, ctx->req->author,
                        ctx->verrs, &rec, err);
    if (rc || rec == NULL)
        return rc;
    apply_result *out = ctx->out;
    out->snapshots[out->snapshot_count] = (apply_snapshot){sx_arena_strdup(a, group), rec->version};
    ctx->written[out->snapshot_count] = rec;
    out->snapshot_count++;
    return 0;
}

static int apply_tx(pg_conn *c, void *arg, sx_err *err)
{
    tx_ctx *ctx = arg;
    const apply_request *req = ctx->req;
    sx_arena *a = ctx->a;
    apply_result *out = ctx->out;
    memset(out, 0, sizeof(*out));
    sx_fielderrs_free(ctx->verrs);

    cfg_record *old = NULL;
    int rc = cfg_repo_get_by_name(c, req->ns, req->name, a, &old, err);
    if (rc && rc != SX_ENOTFOUND)
        return rc;
    if (rc == SX_ENOTFOUND) {
        old = NULL;
        cfg_new cn = {req->ns,   req->name,   req->groups,  req->group_count,
                      req->spec, req->author, req->message, false};
        cfg_record *rec = NULL;
        if ((rc = cfg_repo_create(c, &cn, a, &rec, err)) != 0)
            return rc;
        out->config_id = rec->id;
        out->version = 1;
        out->created = out->changed = true;
    } else {
        out->config_id = old->id;
        out->version = old->live_version;
        char sum[SX_SHA256_HEX_LEN + 1];
        cfg_repo_checksum(req->spec, sum);
        cfg_version *live = NULL;
        bool same = old->live_version > 0 && same_groups(old, req) &&
                    cfg_repo_get_version(c, old->id, old->live_version, a, &live, err) == 0 &&
                    strcmp(live->checksum, sum) == 0;
        if (!same) {
            cfg_change ch = {
                .spec = req->spec,
                .author = req->author,
                .message = req->message,
                .set_groups = true,
                .groups = req->groups,
                .group_count = req->group_count,
            };
            cfg_version *v = NULL;
            if ((rc = cfg_repo_add_version(c, old->id, old->latest_version, &ch, a, &v, err)) != 0)
                return rc;
            out->version = v->version;
            out->changed = true;
        }
    }

    if (out->changed) {
        const char **groups = NULL;
        size_t ng = affected_groups(old, req, a, &groups);
        out->snapshots = sx_arena_alloc(a, (ng ? ng : 1) * sizeof(*out->snapshots));
        ctx->written = sx_arena_alloc(a, (ng ? ng : 1) * sizeof(*ctx->written));
        for (size_t i = 0; i < ng; i++)
            if ((rc = recompose(c, ctx, groups[i], err)) != 0)
                return rc;
    }

    json_t *details =
        json_pack("{s:s,s:s,s:i,s:b,s:b}", "namespace", req->ns, "name", req->name, "version",
                  out->version, "created", out->created, "changed", out->changed);
    json_t *snaps = json_array();
    for (size_t i = 0; i < out->snapshot_count; i++)
        json_array_append_new(snaps, json_pack("{s:s,s:I}", "group", out->snapshots[i].group,
                                               "version", (json_int_t)out->snapshots[i].version));
    json_object_set_new(details, "snapshots", snaps);
    own_json(a, details);
    audit_new an = {
        .actor = req->author,
        .actor_role = req->actor_role,
        .action = req->action,
        .resource_type = "config",
        .resource_id = out->config_id,
        .result = AUDIT_SUCCESS,
        .request_id = req->request_id,
        .source_ip = req->source_ip,
        .details = details,
    };
    long long audit_id;
    return audit_repo_append(c, &an, &audit_id, err);
}

int apply_config(pg_pool *pool, snap_repo *snaps, const apply_request *req, sx_arena *a,
                 apply_result *out, sx_fielderrs *verrs, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (req->ns == NULL || req->ns[0] == '\0' || req->name == NULL || req->name[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "a config needs a namespace and a name");
    if (req->group_count == 0)
        return sx_err_set(err, SX_EINVAL, "a config needs at least one proxy group");
    if (req->author == NULL || req->author[0] == '\0' || req->action == NULL)
        return sx_err_set(err, SX_EINVAL, "a change needs an author and an action");
    if (!json_is_object(req->spec))
        return sx_err_set(err, SX_EINVAL, "spec must be a JSON object");

    ir_snapshot *ir = NULL;
    if (ir_snapshot_from_json(req->spec, "spec", &ir, verrs) != 0) {
        char *joined = sx_fielderrs_join(verrs);
        sx_err_set(err, SX_EVALIDATION, "configuration is invalid: %zu problem%s", verrs->count,
                   verrs->count == 1 ? "" : "s");
        sx_err_detail(err, "%s", joined);
        sx_free(joined);
        return SX_EVALIDATION;
    }
    ir_snapshot_free(ir);

    tx_ctx ctx = {req, snaps, a, out, verrs, NULL};
    int rc = pg_tx(pool, apply_tx, &ctx, err);
    if (rc) {
        memset(out, 0, sizeof(*out));
        return rc;
    }
    for (size_t i = 0; i < out->snapshot_count; i++)
        snap_repo_cache_put(snaps, ctx.written[i]);
    return 0;
}

/* ------------------------------------------------------------------ publish */

typedef struct publish_ctx {
    const apply_publish_request *req;
    snap_repo *snaps;
    sx_arena *a;
    sx_fielderrs *verrs;
    snap_record *written;
} publish_ctx;

static int publish_tx(pg_conn *c, void *arg, sx_err *err)
{
    publish_ctx *ctx = arg;
    const apply_publish_request *req = ctx->req;
    sx_fielderrs_free(ctx->verrs);
    snap_compose_input in = {"", req->group, req->spec};
    int rc = write_snapshot(c, ctx->a, req->group, &in, 1, NULL, req->message, req->author,
                            ctx->verrs, &ctx->written, err);
    if (rc)
        return rc;
    json_t *details = own_json(
        ctx->a, json_pack("{s:s,s:b}", "group", req->group, "changed", ctx->written != NULL));
    if (ctx->written)
        json_object_set_new(details, "version", json_integer(ctx->written->version));
    audit_new an = {
        .actor = req->author,
        .actor_role = req->actor_role,
        .action = "snapshot.publish",
        .resource_type = "group",
        .resource_id = req->group,
        .result = AUDIT_SUCCESS,
        .details = details,
    };
    long long audit_id;
    return audit_repo_append(c, &an, &audit_id, err);
}

int apply_publish(pg_pool *pool, snap_repo *snaps, const apply_publish_request *req, sx_arena *a,
                  long long *version, sx_fielderrs *verrs, sx_err *err)
{
    *version = 0;
    if (req->group == NULL || req->group[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "a snapshot needs a proxy group");
    if (req->author == NULL || req->author[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "a snapshot needs an author");
    if (!json_is_object(req->spec))
        return sx_err_set(err, SX_EINVAL, "the snapshot must be a JSON object");
    ir_snapshot *ir = NULL;
    if (ir_snapshot_from_json(req->spec, "snapshot", &ir, verrs) != 0)
        return sx_err_set(err, SX_EVALIDATION, "snapshot is invalid: %zu problem%s", verrs->count,
                          verrs->count == 1 ? "" : "s");
    ir_snapshot_free(ir);
    publish_ctx ctx = {req, snaps, a, verrs, NULL};
    int rc = pg_tx(pool, publish_tx, &ctx, err);
    if (rc)
        return rc;
    if (ctx.written) {
        snap_repo_cache_put(snaps, ctx.written);
        *version = ctx.written->version;
    }
    return 0;
}
