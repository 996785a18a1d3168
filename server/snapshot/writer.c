/*
 * writer.c — the snapshot writer (see writer.h).
 *
 * Design: a writer remembers the snapshots an attempt of the transaction put in the
 * cache. A rerun of the body (serialization failure) first drops the entries of the
 * attempt that failed; after the last attempt, snap_writer_tx settles them: committed
 * entries become the snapshots' version keys, the entries of a failed transaction are
 * deleted. Both steps are best-effort; correctness does not rest on them, because an
 * entry is keyed by the snapshot's row id and only a NOTIFY of a committed row names
 * that id (see snap_repo_cache_stage). NOTIFYs are queued by PostgreSQL and delivered
 * at commit, so a replica never hears of a snapshot that is not there.
 */
#include "server/snapshot/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/mem.h"
#include "server/events.h"
#include "server/ir/ir.h"
#include "server/snapshot/store.h"
#include "storage/pg_listener.h"
#include "storage/repo_common.h"
#include "storage/repo_deployments.h"
#include "storage/repo_pins.h"

struct snap_writer {
    snap_repo *cache;     /* NULL: the writer puts nothing in the cache */
    sx_arena *a;          /* the caller's arena: records and scratch */
    snap_record **cached; /* entries the current attempt put in the cache */
    size_t ncached, cap;
};

static snap_writer *writer_new(sx_arena *a, snap_repo *cache)
{
    snap_writer *w = sx_arena_alloc(a, sizeof(*w));
    memset(w, 0, sizeof(*w));
    w->a = a;
    w->cache = cache;
    return w;
}

snap_writer *snap_writer_plain(sx_arena *a)
{
    return writer_new(a, NULL);
}

/* Settles what the current attempt cached: committed or dropped. */
static void settle(snap_writer *w, bool committed)
{
    for (size_t i = 0; i < w->ncached; i++)
        snap_repo_cache_settle(w->cache, w->cached[i], committed);
    w->ncached = 0;
}

typedef struct tx_run {
    snap_writer *w;
    snap_writer_fn fn;
    void *ctx;
} tx_run;

static int run_attempt(pg_conn *c, void *arg, sx_err *err)
{
    tx_run *r = arg;
    settle(r->w, false); /* a rerun: the last attempt rolled back */
    return r->fn(c, r->w, r->ctx, err);
}

int snap_writer_tx(pg_pool *pool, snap_repo *snaps, sx_arena *a, snap_writer_fn fn, void *ctx,
                   sx_err *err)
{
    tx_run r = {writer_new(a, snaps), fn, ctx};
    int rc = pg_tx(pool, run_attempt, &r, err);
    settle(r.w, rc == 0);
    return rc;
}

static void remember(snap_writer *w, snap_record *rec)
{
    if (w->ncached == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4;
        snap_record **v = sx_arena_alloc(w->a, cap * sizeof(*v));
        if (w->ncached)
            memcpy(v, w->cached, w->ncached * sizeof(*v));
        w->cached = v;
        w->cap = cap;
    }
    w->cached[w->ncached++] = rec;
}

/*
 * Dumps composed once, canonically: out is the sha256 of the dump of its content (all but
 * "id" and "generated_at"). When text is not NULL, *text (free with free) is the compact
 * JSON of the whole object, the content's dump with those two members put in front: the
 * same members and values as a plain dump, without dumping 10+ MB twice.
 */
static void checksum_and_text(const json_t *composed, char out[SX_SHA256_HEX_LEN + 1], char **text)
{
    /* A shallow copy: the members are shared, only the two keys are left out. */
    json_t *copy = json_copy((json_t *)composed);
    json_object_del(copy, "id");
    json_object_del(copy, "generated_at");
    char *canon = ir_canonical_json(copy);
    size_t len = strlen(canon);
    sx_sha256_hex(canon, len, out);
    json_decref(copy);
    if (text == NULL) {
        free(canon);
        return;
    }
    json_t *head = json_object();
    static const char *const KEYS[] = {"generated_at", "id"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(composed, KEYS[i]);
        if (v)
            json_object_set(head, KEYS[i], v);
    }
    char *h = ir_canonical_json(head);
    json_decref(head);
    size_t hlen = strlen(h);
    if (hlen <= 2) { /* "{}": the content is the whole object */
        free(h);
        *text = canon;
        return;
    }
    /* "{<head members>" + ("," when the content has members) + "<content members>}" */
    bool comma = len > 2;
    char *t = malloc(hlen - 1 + comma + len);
    if (t == NULL) {
        fprintf(stderr, "snapshot: out of memory writing the IR\n");
        abort();
    }
    memcpy(t, h, hlen - 1);
    if (comma)
        t[hlen - 1] = ',';
    memcpy(t + hlen - 1 + comma, canon + 1, len); /* with the NUL */
    free(h);
    free(canon);
    *text = t;
}

void snap_writer_checksum(const json_t *composed, char out[SX_SHA256_HEX_LEN + 1])
{
    checksum_and_text(composed, out, NULL);
}

static void group_prefix(const char *group, char *buf, size_t n)
{
    snprintf(buf, n, "groups[\"%s\"]", group);
}

/*
 * Checks the snapshot composed from in[0..n) (composed: its JSON, named id, generated at
 * when or NULL) with the codec, appending problems to verrs, and packs it when bytes is
 * not NULL (free with free). The inputs' decoded forms are merged when they all have one
 * (snap_compose_ir), so no spec is decoded twice in a change; else the JSON is decoded.
 * Either way the problems and the bytes are the same. Returns 0 or SX_EINVAL.
 */
static int check_and_pack(const char *group, const snap_compose_input *in, size_t n,
                          const json_t *composed, const char *id, const char *when,
                          sx_fielderrs *verrs, uint8_t **bytes, size_t *len)
{
    char prefix[300];
    group_prefix(group, prefix, sizeof(prefix));
    ir_snapshot *stamp = NULL; /* holds the generation time, decoded as the JSON's is */
    if (when) {
        json_t *t = json_pack("{s:s}", "generated_at", when);
        sx_fielderrs none = {0};
        if (ir_snapshot_from_json(t, NULL, &stamp, &none) != 0)
            stamp = NULL;
        sx_fielderrs_free(&none);
        json_decref(t);
    }
    ir_snapshot merged;
    int rc;
    if ((when == NULL || stamp) &&
        snap_compose_ir(in, n, id, stamp ? stamp->generated_at : NULL, &merged)) {
        rc = ir_snapshot_check(&merged, prefix, verrs);
        if (rc == 0 && bytes)
            *bytes = ir_snapshot_pack(&merged, len);
        snap_compose_ir_release(&merged);
    } else {
        ir_snapshot *ir = NULL;
        rc = ir_snapshot_from_json(composed, prefix, &ir, verrs);
        if (rc == 0 && bytes)
            *bytes = ir_snapshot_pack(ir, len);
        ir_snapshot_free(ir);
    }
    ir_snapshot_free(stamp);
    return rc;
}

json_t *snap_writer_dry_run(sx_arena *a, const char *group, const snap_compose_input *in, size_t n,
                            sx_fielderrs *verrs)
{
    char id[300];
    snprintf(id, sizeof(id), "%s:dry-run", group);
    json_t *composed = repo_own_json(a, snap_compose_json(in, n, id, NULL));
    (void)check_and_pack(group, in, n, composed, id, NULL, verrs, NULL, NULL);
    return composed;
}

static int notify_version(pg_conn *c, const char *group, long long version, long long id,
                          sx_err *err)
{
    char *payload = snap_store_notify_payload(group, version, id);
    int rc = pg_notify(c, SNAP_NOTIFY_CHANNEL, payload, err);
    sx_free(payload);
    return rc;
}

/* The snapshot_generated event of snapshot s, written in its transaction. */
static int generated(pg_conn *c, const snap_record *s, const snap_write *req, sx_err *err)
{
    json_t *data = json_pack("{s:I,s:s,s:s}", "version", (json_int_t)s->version, "reason",
                             req->reason ? req->reason : "", "by", req->author);
    if (req->staged_for)
        json_object_set_new(data, "staged_for", json_string(req->staged_for));
    sx_event e = {.type = EVENT_SNAPSHOT_GENERATED,
                  .deployment_id = req->staged_for,
                  .group = req->group,
                  .data = data};
    int rc = events_emit(c, NULL, &e, err);
    json_decref(data);
    return rc;
}

int snap_writer_write(snap_writer *w, pg_conn *c, const snap_write *req, sx_fielderrs *verrs,
                      snap_record **written, sx_err *err)
{
    sx_arena *a = w->a;
    const char *group = req->group;
    *written = NULL;
    long long version = 0, current = 0;
    int rc = snap_repo_reserve_version(c, group, &version, err);
    if (rc || (rc = snap_repo_current_version(c, group, &current, err)) != 0)
        return rc;

    char id[300], when[SX_RFC3339_LEN], sum[SX_SHA256_HEX_LEN + 1];
    snprintf(id, sizeof(id), "%s:%lld", group, version);
    sx_rfc3339_now(when);
    json_t *composed = repo_own_json(a, snap_compose_json(req->in, req->n, id, when));
    char *text = NULL;
    checksum_and_text(composed, sum, &text);
    sx_arena_defer(a, free, text);

    /* Read on c: the pool may have no other connection to give while c is held. */
    char *cur = NULL;
    if (current > 0) {
        rc = snap_repo_checksum(c, group, current, a, &cur, err);
        if (rc && rc != SX_ENOTFOUND)
            return rc;
        if (cur && strcmp(cur, sum) == 0)
            return 0;
    }
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (check_and_pack(group, req->in, req->n, composed, id, when, verrs, &bytes, &len) != 0)
        return sx_err_set(err, SX_EVALIDATION, "the snapshot of group %s is invalid", group);
    sx_arena_defer(a, free, bytes);

    snap_new sn = {
        .group = group,
        .ir = composed,
        .ir_text = text,
        .encoded = bytes,
        .encoded_len = len,
        .checksum = sum,
        .sources = req->sources,
        .source_count = req->sources ? req->nsources : 0,
        .reason = req->reason ? req->reason : "",
        .created_by = req->author,
        .deployment_id = req->staged_for,
    };
    if ((rc = snap_repo_insert(c, &sn, a, written, err)) != 0 ||
        (rc = generated(c, *written, req, err)) != 0 || req->staged_for)
        return rc;
    if (w->cache) {
        /* Before the COMMIT that delivers the NOTIFY below. */
        snap_repo_cache_stage(w->cache, *written);
        remember(w, *written);
    }
    int released = 0;
    if ((rc = notify_version(c, group, (*written)->version, (*written)->id, err)) == 0 &&
        (rc = pin_repo_release_finished(c, &group, 1, &released, err)) == 0 && released > 0)
        rc = pg_notify(c, PINS_NOTIFY_CHANNEL, "", err);
    return rc;
}

int snap_writer_publish(snap_writer *w, pg_conn *c, const snap_write *req, long long *before,
                        sx_fielderrs *verrs, snap_record **written, sx_err *err)
{
    *written = NULL;
    long long current = 0;
    int rc = snap_writer_lock_groups(c, &req->group, 1, err);
    if (rc || (rc = snap_repo_current_version(c, req->group, &current, err)) != 0 ||
        (rc = snap_writer_refuse_held(c, w->a, &req->group, 1, err)) != 0)
        return rc;
    if (before)
        *before = current;
    return snap_writer_write(w, c, req, verrs, written, err);
}

int snap_writer_promote(pg_conn *c, const char *group, long long version, sx_arena *a, sx_err *err)
{
    long long current = 0;
    int rc = snap_repo_reserve_version(c, group, &current, err);
    if (rc || (rc = snap_repo_current_version(c, group, &current, err)) != 0)
        return rc;
    if (version <= 0 || version == current)
        return 0;
    if ((rc = snap_repo_set_current(c, group, version, a, err)) != 0)
        return rc;
    /* Staged snapshots are cached by their version key once their deployment commits. */
    return notify_version(c, group, version, 0, err);
}

int snap_writer_lock_groups(pg_conn *c, const char *const *groups, size_t n, sx_err *err)
{
    for (size_t i = 0; i < n; i++) {
        long long next;
        int rc = snap_repo_reserve_version(c, groups[i], &next, err);
        if (rc)
            return rc;
    }
    return 0;
}

int snap_writer_refuse_held(pg_conn *c, sx_arena *a, const char *const *groups, size_t n,
                            sx_err *err)
{
    char *busy = NULL, *busy_group = NULL;
    int rc = deploy_repo_active_in_groups(c, groups, n, NULL, a, &busy, &busy_group, err);
    if (rc || busy == NULL)
        return rc;
    sx_err_set(err, SX_ECONFLICT, "group %s is being rolled out by deployment %s", busy_group,
               busy);
    sx_err_detail(err, "A group changes through one deployment at a time. A config change can "
                       "still be saved as a draft (\"draft\": true) and applied later.");
    sx_err_hint(err, "Wait for deployment %s to finish, or cancel it, then retry.", busy);
    return SX_ECONFLICT;
}
