/*
 * repo_snapshots.c — per-group snapshots in PostgreSQL with a Redis read-through cache.
 *
 * Design: the insert is one statement — an upsert of the group row that increments
 * latest_snapshot_version (taking the row lock) feeding the snapshot INSERT through a
 * CTE — so the version is allocated and used atomically and concurrent writers for a
 * group queue on that row. The encoded bytes go in as a binary bytea parameter.
 *
 * A cache value is "SXS1\n", one line of compact JSON metadata, "\n", then the raw
 * encoded bytes; the metadata repeats group and version so that a value found under
 * the wrong key (or a truncated one) is rejected and re-read from PostgreSQL. The IR is
 * not cached: the xDS path needs only the bytes, and IR readers go to PostgreSQL.
 */
#include "storage/repo_snapshots.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/hash.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "storage/repo_common.h"
#include "storage/secret_seal.h"

#define COMPONENT      "snapshots"
#define CACHE_MAGIC    "SXS1\n"
#define VERSION_TTL_S  86400
#define LATEST_TTL_S   60
#define STAGED_TTL_S   600
#define GROUP_MAX_LEN  253
#define REASON_MAX_LEN 1024

struct snap_repo {
    pg_pool *pool;      /* borrowed */
    redis_cache *cache; /* borrowed; NULL = no cache */
};

/* Columns of a full read; the IR, when wanted, is appended as column 10. */
#define SNAP_COLS                                                                                  \
    "s.id, s.group_name, s.version, s.encoded, s.checksum, s.source_versions, s.reason,"           \
    " s.created_by, " REPO_TS("s.created_at") ", s.deployment_id"
/* Same shape for lists, with the byte length instead of the bytes. */
#define SNAP_LIST_COLS                                                                             \
    "s.id, s.group_name, s.version, octet_length(s.encoded), s.checksum, s.source_versions,"       \
    " s.reason, s.created_by, " REPO_TS("s.created_at") ", s.deployment_id"

snap_repo *snap_repo_create(pg_pool *pool, redis_cache *cache)
{
    snap_repo *r = sx_calloc(1, sizeof(*r));
    r->pool = pool;
    r->cache = cache;
    return r;
}

void snap_repo_destroy(snap_repo *r)
{
    sx_free(r);
}

static int check_group(const char *group, sx_err *err)
{
    if (group == NULL || group[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "group is required");
    if (strlen(group) > GROUP_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "group is longer than %d bytes", GROUP_MAX_LEN);
    return 0;
}

static bool is_sha256_hex(const char *s)
{
    if (s == NULL || strlen(s) != SX_SHA256_HEX_LEN)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static json_t *sources_json(const snap_source *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            arr, json_pack("{s:s, s:i}", "config_id", v[i].config_id, "version", v[i].version));
    return arr;
}

static int sources_from_json(sx_arena *a, const json_t *arr, snap_source **out, size_t *n,
                             sx_err *err)
{
    *out = NULL;
    *n = 0;
    size_t count = json_array_size(arr);
    if (count == 0)
        return 0;
    snap_source *v = sx_arena_alloc(a, count * sizeof(*v));
    for (size_t i = 0; i < count; i++) {
        const char *id = NULL;
        json_int_t ver = 0;
        if (json_unpack(json_array_get(arr, i), "{s:s, s:I}", "config_id", &id, "version", &ver) !=
            0)
            return sx_err_set(err, SX_EINTERNAL, "snapshot source_versions[%zu] is malformed", i);
        v[i].config_id = sx_arena_strdup(a, id);
        v[i].version = (int)ver;
    }
    *out = v;
    *n = count;
    return 0;
}

/* Reads SNAP_COLS (or SNAP_LIST_COLS when list) of one row, plus the IR when with_ir. */
static int read_snap(sx_arena *a, const PGresult *r, int row, bool list, bool with_ir,
                     snap_record *o, sx_err *err)
{
    memset(o, 0, sizeof(*o));
    long long len = 0;
    json_t *src;
    int rc;
    if ((rc = repo_i64(r, row, 0, 0, &o->id, err)) ||
        (rc = repo_i64(r, row, 2, 0, &o->version, err)) ||
        (rc = repo_json(a, r, row, 5, &src, err)) ||
        (rc = sources_from_json(a, src, &o->sources, &o->source_count, err)))
        return rc;
    o->group = repo_str(a, r, row, 1);
    if (list) {
        if ((rc = repo_i64(r, row, 3, 0, &len, err)))
            return rc;
        o->encoded_len = (size_t)len;
    } else {
        size_t n = 0;
        unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, 3), &n);
        if (raw == NULL)
            return sx_err_set(err, SX_EINTERNAL, "could not decode snapshot bytes");
        o->encoded = sx_arena_alloc(a, n + 1);
        memcpy(o->encoded, raw, n);
        o->encoded_len = n;
        PQfreemem(raw);
    }
    o->checksum = repo_str(a, r, row, 4);
    REPO_STRS(a, r, row, 6, &o->reason, &o->created_by, &o->created_at);
    o->deployment_id = PQgetisnull(r, row, 9) ? NULL : repo_str(a, r, row, 9);
    if (with_ir)
        return repo_json(a, r, row, 10, &o->ir, err);
    return 0;
}

/* Opens what storage keeps sealed in a record it read: the bytes (into a) and the IR. */
static int open_record(const sx_keyring *k, sx_arena *a, snap_record *o, sx_err *err)
{
    if (o->encoded && sx_sealed_bytes(o->encoded, o->encoded_len)) {
        sx_buf b = {0};
        int rc = sx_open_bytes(k, o->encoded, o->encoded_len, &b, err);
        if (rc) {
            sx_buf_free(&b);
            sx_err_prefix(err, "snapshot %lld of group %s", o->version, o->group);
            return rc;
        }
        o->encoded_len = b.len;
        o->encoded = sx_arena_defer(a, sx_free, sx_buf_steal(&b));
    }
    return o->ir ? seal_open_json(k, o->ir, err) : 0;
}

static int read_listed(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    return read_snap(a, r, row, true, false, item, err);
}

static int read_group(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    snap_group *g = item;
    g->name = repo_str(a, r, row, 0);
    g->updated_at = repo_str(a, r, row, 2);
    return repo_i64(r, row, 1, 0, &g->latest_version, err);
}

int snap_repo_reserve_version(pg_conn *c, const char *group, long long *next, sx_err *err)
{
    *next = 0;
    int rc = check_group(group, err);
    if (rc)
        return rc;
    /* DO UPDATE (not DO NOTHING) so the existing row is locked as well. */
    static const char sql[] =
        "INSERT INTO proxy_groups AS pg (name, latest_snapshot_version) VALUES ($1, 0)"
        " ON CONFLICT (name) DO UPDATE SET name = pg.name"
        " RETURNING latest_snapshot_version + 1";
    const char *p[] = {group};
    return repo_query_i64(c, sql, 1, p, next, err);
}

int snap_repo_current_version(pg_conn *c, const char *group, long long *version, sx_err *err)
{
    *version = 0;
    const char *p[] = {group};
    return repo_query_i64(c, "SELECT current_snapshot_version FROM proxy_groups WHERE name = $1", 1,
                          p, version, err);
}

static int no_version(const char *group, long long version, sx_err *err)
{
    return sx_err_set(err, SX_ENOTFOUND, "group %s has no snapshot version %lld", group, version);
}

int snap_repo_ir_on(pg_conn *c, const char *group, long long version, sx_arena *a, json_t **ir,
                    sx_err *err)
{
    *ir = NULL;
    const char *p[] = {group, repo_i64_param(a, version)};
    PGresult *r;
    int rc =
        repo_query(c, a, "SELECT ir FROM snapshots WHERE group_name = $1 AND version = $2::bigint",
                   2, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        return no_version(group, version, err);
    if ((rc = repo_json(a, r, 0, 0, ir, err)) == 0 &&
        (rc = seal_open_json(pg_conn_secrets(c, NULL), *ir, err)) != 0)
        *ir = NULL;
    return rc;
}

int snap_repo_set_current(pg_conn *c, const char *group, long long version, sx_arena *a,
                          sx_err *err)
{
    const char *p[] = {group, repo_i64_param(a, version)};
    int rows = 0;
    int rc = repo_exec_count(c,
                             "UPDATE proxy_groups SET current_snapshot_version = $2::bigint,"
                             " updated_at = now() WHERE name = $1 AND EXISTS (SELECT 1 FROM"
                             "   snapshots s WHERE s.group_name = $1 AND s.version = $2::bigint)",
                             2, p, &rows, err);
    if (rc == 0 && rows != 1)
        rc = no_version(group, version, err);
    return rc;
}

int snap_repo_checksum(pg_conn *c, const char *group, long long version, sx_arena *a,
                       char **checksum, sx_err *err)
{
    *checksum = NULL;
    const char *p[] = {group, repo_i64_param(a, version)};
    PGresult *r;
    int rc =
        repo_query(c, a, "SELECT checksum FROM snapshots WHERE group_name = $1 AND version = $2", 2,
                   p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        return no_version(group, version, err);
    *checksum = repo_str(a, r, 0, 0);
    return 0;
}

/* From this size of IR text and bytes together, a snapshot is stored compressed with LZ4. */
#define SNAP_LZ4_MIN_BYTES (1u << 20)

int snap_repo_insert(pg_conn *c, const snap_new *in, sx_arena *a, snap_record **out, sx_err *err)
{
    if (out)
        *out = NULL;
    int rc = check_group(in->group, err);
    if (rc)
        return rc;
    if (in->ir == NULL)
        return sx_err_set(err, SX_EINVAL, "snapshot ir is required");
    if (in->created_by == NULL || in->created_by[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "created_by is required");
    if (in->encoded == NULL && in->encoded_len > 0)
        return sx_err_set(err, SX_EINVAL, "snapshot bytes are missing");
    if (in->checksum && !is_sha256_hex(in->checksum))
        return sx_err_set(err, SX_EINVAL, "snapshot checksum must be 64 lowercase hex digits");
    if (in->deployment_id && !repo_is_uuid(in->deployment_id))
        return sx_err_set(err, SX_EINVAL, "deployment id is not a UUID");
    if (in->encoded_len > 0x3fffffff)
        return sx_err_set(err, SX_ETOOLARGE, "snapshot of %zu bytes is over the 1 GiB limit",
                          in->encoded_len);
    for (size_t i = 0; i < in->source_count; i++)
        if (!repo_is_uuid(in->sources[i].config_id) || in->sources[i].version < 1)
            return sx_err_set(err, SX_EINVAL, "sources[%zu] is not a config id and version", i);

    char sum[SX_SHA256_HEX_LEN + 1];
    if (in->checksum) {
        snprintf(sum, sizeof(sum), "%s", in->checksum);
    } else {
        char *canon = json_dumps(in->ir, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        if (canon == NULL)
            abort(); /* out of memory */
        sx_sha256_hex(canon, strlen(canon), sum);
        free(canon);
    }
    /* At rest, private keys are sealed: in the IR, and the bytes as a whole. */
    bool plaintext = false;
    const sx_keyring *k = pg_conn_secrets(c, &plaintext);
    json_t *stored_ir = NULL;
    sx_buf sealed = {0};
    bool is_sealed = false;
    bool has_keys = false;
    if ((rc = seal_json_ex(k, plaintext, in->ir, &stored_ir, &has_keys, err)) != 0)
        return rc;
    /* ir itself when nothing in it was sealed: then a text of ir can be sent as is. */
    const char *ir_param =
        stored_ir == in->ir && in->ir_text ? in->ir_text : repo_json_param(a, stored_ir);
    json_decref(stored_ir);
    if ((rc = seal_bytes(k, plaintext, has_keys, in->encoded, in->encoded_len, &sealed, &is_sealed,
                         err)) != 0) {
        sx_buf_free(&sealed);
        return rc;
    }
    size_t bytes_len = is_sealed ? sealed.len : in->encoded_len;
    const char *bytes = in->encoded_len ? (const char *)in->encoded : "";
    if (is_sealed)
        bytes = sx_arena_defer(a, sx_free, sx_buf_steal(&sealed));
    json_t *src = sources_json(in->sources, in->source_count);
    const char *p[] = {
        in->group,
        ir_param,
        bytes,
        sum,
        repo_json_param(a, src),
        in->reason ? in->reason : "",
        in->created_by,
        in->deployment_id,
    };
    json_decref(src);
    int lengths[8] = {0, 0, (int)bytes_len, 0, 0, 0, 0, 0};
    int formats[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    /* A staged snapshot ($8 set) takes the next version without becoming current. */
    static const char sql[] =
        "WITH g AS ("
        " INSERT INTO proxy_groups AS pg"
        "   (name, latest_snapshot_version, current_snapshot_version)"
        "   VALUES ($1, 1, CASE WHEN $8::uuid IS NULL THEN 1 ELSE 0 END)"
        " ON CONFLICT (name) DO UPDATE"
        "   SET latest_snapshot_version = pg.latest_snapshot_version + 1,"
        "       current_snapshot_version = CASE WHEN $8::uuid IS NULL"
        "           THEN pg.latest_snapshot_version + 1 ELSE pg.current_snapshot_version END,"
        "       updated_at = CASE WHEN $8::uuid IS NULL THEN now() ELSE pg.updated_at END"
        " RETURNING latest_snapshot_version)"
        " INSERT INTO snapshots (group_name, version, ir, encoded, checksum, source_versions,"
        "   reason, created_by, deployment_id)"
        " SELECT $1, latest_snapshot_version, $2::jsonb, $3::bytea, $4, $5::jsonb, $6, $7, $8::uuid"
        " FROM g RETURNING id, version, " REPO_TS("created_at");
    /* PostgreSQL's default TOAST compression (pglz) of a 10 MB IR takes several times as
     * long as LZ4's; a large snapshot is compressed with LZ4 where the server has it (14
     * and later, built with it), for this transaction only. Reads do not change. */
    if (strlen(ir_param) + bytes_len >= SNAP_LZ4_MIN_BYTES &&
        (rc = repo_exec_count(c,
                              "SELECT set_config('default_toast_compression', 'lz4', true)"
                              " FROM pg_settings WHERE name = 'default_toast_compression'"
                              " AND 'lz4' = ANY (enumvals)",
                              0, NULL, NULL, err)) != 0)
        return rc;
    PGresult *r;
    rc = pg_exec_ex(c, sql, 8, p, lengths, formats, 0, &r, err);
    if (rc)
        return rc;
    repo_own_result(a, r);
    snap_record *o = sx_arena_alloc(a, sizeof(*o));
    if ((rc = repo_i64(r, 0, 0, 0, &o->id, err)) || (rc = repo_i64(r, 0, 1, 0, &o->version, err)))
        return rc;
    o->created_at = repo_str(a, r, 0, 2);
    o->group = sx_arena_strdup(a, in->group);
    o->ir = repo_own_json(a, json_incref((json_t *)in->ir));
    o->encoded = sx_arena_alloc(a, in->encoded_len + 1);
    if (in->encoded_len)
        memcpy(o->encoded, in->encoded, in->encoded_len);
    o->encoded_len = in->encoded_len;
    o->checksum = sx_arena_strdup(a, sum);
    if (in->source_count) {
        o->sources = sx_arena_alloc(a, in->source_count * sizeof(snap_source));
        for (size_t i = 0; i < in->source_count; i++) {
            o->sources[i].config_id = sx_arena_strdup(a, in->sources[i].config_id);
            o->sources[i].version = in->sources[i].version;
        }
        o->source_count = in->source_count;
    }
    o->reason = sx_arena_strdup(a, in->reason ? in->reason : "");
    o->created_by = sx_arena_strdup(a, in->created_by);
    o->deployment_id = in->deployment_id ? sx_arena_strdup(a, in->deployment_id) : NULL;
    if (out)
        *out = o;
    return 0;
}

/* ------------------------------------------------------------------ cache */

static char *version_key(sx_arena *a, const char *group, long long version)
{
    return sx_arena_printf(a, "snapshot:%s:%lld", group, version);
}

static char *latest_key(sx_arena *a, const char *group)
{
    return sx_arena_printf(a, "snapshot:%s:latest", group);
}

/* The entry a writer puts before its commit: the row id makes the key unique to the
 * insert (see snap_repo_cache_stage). */
static char *staged_key(sx_arena *a, const snap_record *s)
{
    return sx_arena_printf(a, "snapshot:%s:%lld#%lld", s->group, s->version, s->id);
}

/* Writes s (which must carry its bytes) under key. */
static void cache_store_at(snap_repo *r, const char *key, int ttl_s, const snap_record *s)
{
    /* With a keyring, every cached snapshot is sealed: Redis is storage at rest too. */
    const sx_keyring *k = pg_pool_secrets(r->pool, NULL);
    sx_buf sealed = {0};
    const void *body = s->encoded;
    size_t body_len = s->encoded_len;
    if (k) {
        sx_err err;
        if (sx_seal_bytes(k, s->encoded, s->encoded_len, &sealed, &err) != 0) {
            sx_buf_free(&sealed);
            return; /* not cached; readers go to PostgreSQL */
        }
        body = sealed.data;
        body_len = sealed.len;
    }
    json_t *meta =
        json_pack("{s:I, s:s, s:I, s:s, s:o, s:s, s:s, s:s, s:I}", "id", (json_int_t)s->id, "group",
                  s->group, "version", (json_int_t)s->version, "checksum", s->checksum, "sources",
                  sources_json(s->sources, s->source_count), "reason", s->reason, "created_by",
                  s->created_by, "created_at", s->created_at ? s->created_at : "", "encoded_len",
                  (json_int_t)s->encoded_len);
    json_object_set_new(meta, "encoded_len", json_integer((json_int_t)body_len));
    char *text = json_dumps(meta, JSON_COMPACT);
    json_decref(meta);
    if (text == NULL)
        abort(); /* out of memory */
    sx_buf b = {0};
    sx_buf_puts(&b, CACHE_MAGIC);
    sx_buf_puts(&b, text);
    sx_buf_putc(&b, '\n');
    sx_buf_append(&b, body, body_len);
    free(text);
    redis_cache_set(r->cache, key, b.data, b.len, ttl_s);
    sx_buf_free(&b);
    sx_buf_free(&sealed);
}

static void cache_store(snap_repo *r, sx_arena *a, const snap_record *s)
{
    if (r->cache == NULL || s->encoded == NULL)
        return;
    cache_store_at(r, version_key(a, s->group, s->version), VERSION_TTL_S, s);
}

/* Points the latest key at version unless the cache already names a newer one. The
 * read-compare-write is not atomic; the key's short TTL bounds what a lost race costs. */
static void cache_bump_latest(snap_repo *r, sx_arena *a, const char *group, long long version)
{
    if (r->cache == NULL)
        return;
    char *key = latest_key(a, group);
    char *cur = NULL;
    size_t len;
    if (redis_cache_get(r->cache, key, &cur, &len) == 0) {
        long long v = strtoll(cur, NULL, 10);
        free(cur);
        if (v >= version)
            return;
    }
    char *val = repo_i64_param(a, version);
    redis_cache_set(r->cache, key, val, strlen(val), LATEST_TTL_S);
}

void snap_repo_cache_put(snap_repo *r, const snap_record *s)
{
    if (r->cache == NULL || s == NULL)
        return;
    sx_arena *a = sx_arena_create();
    cache_store(r, a, s);
    if (s->deployment_id == NULL)
        cache_bump_latest(r, a, s->group, s->version);
    sx_arena_destroy(a);
}

void snap_repo_cache_stage(snap_repo *r, const snap_record *s)
{
    if (r == NULL || r->cache == NULL || s == NULL || s->encoded == NULL)
        return;
    sx_arena *a = sx_arena_create();
    cache_store_at(r, staged_key(a, s), STAGED_TTL_S, s);
    sx_arena_destroy(a);
}

void snap_repo_cache_settle(snap_repo *r, const snap_record *s, bool committed)
{
    if (r == NULL || r->cache == NULL || s == NULL)
        return;
    sx_arena *a = sx_arena_create();
    if (!committed) {
        redis_cache_del(r->cache, staged_key(a, s));
    } else {
        /* A RENAME on the server: the bytes are not sent a second time. When the entry
         * is gone (Redis restarted, or the SET was skipped), the next read refills it. */
        redis_cache_rename(r->cache, staged_key(a, s), version_key(a, s->group, s->version),
                           VERSION_TTL_S);
        if (s->deployment_id == NULL)
            cache_bump_latest(r, a, s->group, s->version);
    }
    sx_arena_destroy(a);
}

void snap_repo_cache_current(snap_repo *r, const char *group, long long version)
{
    if (r->cache == NULL)
        return;
    sx_arena *a = sx_arena_create();
    cache_bump_latest(r, a, group, version);
    sx_arena_destroy(a);
}

/* Parses a cache value into *o; false (a miss) for anything unexpected. */
static bool cache_decode(const sx_keyring *k, sx_arena *a, const char *val, size_t len,
                         const char *group, long long version, snap_record *o)
{
    size_t ml = strlen(CACHE_MAGIC);
    if (len < ml || memcmp(val, CACHE_MAGIC, ml) != 0)
        return false;
    const char *nl = memchr(val + ml, '\n', len - ml);
    if (nl == NULL)
        return false;
    json_t *meta = repo_own_json(a, json_loadb(val + ml, (size_t)(nl - val - ml), 0, NULL));
    json_int_t id, ver, elen;
    const char *g, *sum, *reason, *by, *at;
    json_t *src;
    if (meta == NULL ||
        json_unpack(meta, "{s:I, s:s, s:I, s:s, s:o, s:s, s:s, s:s, s:I}", "id", &id, "group", &g,
                    "version", &ver, "checksum", &sum, "sources", &src, "reason", &reason,
                    "created_by", &by, "created_at", &at, "encoded_len", &elen) != 0)
        return false;
    size_t body = len - (size_t)(nl + 1 - val);
    if (strcmp(g, group) != 0 || ver != version || elen < 0 || (size_t)elen != body)
        return false;
    memset(o, 0, sizeof(*o));
    if (sources_from_json(a, src, &o->sources, &o->source_count, NULL) != 0)
        return false;
    o->id = id;
    o->group = sx_arena_strdup(a, g);
    o->version = ver;
    o->encoded = sx_arena_alloc(a, body + 1);
    memcpy(o->encoded, nl + 1, body);
    o->encoded_len = body;
    if (sx_sealed_bytes(o->encoded, body) && open_record(k, a, o, NULL) != 0)
        return false; /* sealed with a key this replica lacks: a miss, PostgreSQL answers */
    o->checksum = sx_arena_strdup(a, sum);
    o->reason = sx_arena_strdup(a, reason);
    o->created_by = sx_arena_strdup(a, by);
    o->created_at = sx_arena_strdup(a, at);
    return true;
}

static bool cache_lookup_at(snap_repo *r, sx_arena *a, const char *key, const char *group,
                            long long version, snap_record *o)
{
    if (r->cache == NULL)
        return false;
    char *val = NULL;
    size_t len = 0;
    if (redis_cache_get(r->cache, key, &val, &len) != 0)
        return false;
    bool ok = cache_decode(pg_pool_secrets(r->pool, NULL), a, val, len, group, version, o);
    free(val);
    if (!ok)
        sx_log(SX_LOG_WARN, COMPONENT, "ignoring a malformed cache entry for snapshot %lld of %s",
               version, group);
    return ok;
}

static bool cache_lookup(snap_repo *r, sx_arena *a, const char *group, long long version,
                         snap_record *o)
{
    return cache_lookup_at(r, a, version_key(a, group, version), group, version, o);
}

/* ------------------------------------------------------------------ reads */

/* Runs a query on a pooled connection; the result belongs to a. */
static int query(snap_repo *r, sx_arena *a, const char *sql, int n, const char *const *p,
                 PGresult **res, sx_err *err)
{
    pg_conn *c;
    int rc = pg_acquire(r->pool, &c, err);
    if (rc)
        return rc;
    rc = repo_query(c, a, sql, n, p, res, err);
    pg_release(r->pool, c);
    return rc;
}

/* One page of a list on a pooled connection (see repo_page_query); the cursor is checked
 * before a connection is taken. */
static int query_page(snap_repo *r, sx_arena *a, const repo_page_spec *s, int limit,
                      const char *cursor, const char *sql, int n, const char *const *p,
                      repo_list_ref out, sx_err *err)
{
    repo_list_store(out, &(repo_page){0});
    const char **checked;
    pg_conn *c;
    int rc = repo_page_params(a, s, limit, cursor, n, p, &checked, err);
    if (rc || (rc = pg_acquire(r->pool, &c, err)) != 0)
        return rc;
    rc = repo_list_query(c, a, s, limit, cursor, sql, n, p, out, err);
    pg_release(r->pool, c);
    return rc;
}

/* Runs a query for one snapshot on a pooled connection and reads its row into a new
 * record of a, opened, into *out; SX_ENOTFOUND with the message of fmt when there is
 * none. */
static int query_snapshot(snap_repo *r, sx_arena *a, const char *sql, int n, const char *const *p,
                          bool with_ir, snap_record **out, sx_err *err, const char *fmt, ...)
    SX_PRINTF(9, 10);
static int query_snapshot(snap_repo *r, sx_arena *a, const char *sql, int n, const char *const *p,
                          bool with_ir, snap_record **out, sx_err *err, const char *fmt, ...)
{
    PGresult *res;
    int rc = query(r, a, sql, n, p, &res, err);
    if (rc)
        return rc;
    if (PQntuples(res) == 0) {
        va_list ap;
        va_start(ap, fmt);
        rc = sx_err_vset(err, SX_ENOTFOUND, fmt, ap);
        va_end(ap);
        return rc;
    }
    snap_record *o = sx_arena_alloc(a, sizeof(*o));
    rc = read_snap(a, res, 0, false, with_ir, o, err);
    if (rc == 0 && (rc = open_record(pg_pool_secrets(r->pool, NULL), a, o, err)) == 0)
        *out = o;
    return rc;
}

int snap_repo_get(snap_repo *r, const char *group, long long version, unsigned flags, sx_arena *a,
                  snap_record **out, sx_err *err)
{
    *out = NULL;
    int rc = check_group(group, err);
    if (rc)
        return rc;
    bool with_ir = (flags & SNAP_REPO_WITH_IR) != 0;
    snap_record *o = sx_arena_alloc(a, sizeof(*o));
    if (!with_ir && cache_lookup(r, a, group, version, o)) {
        *out = o;
        return 0;
    }
    const char *p[] = {group, repo_i64_param(a, version)};
    rc = query_snapshot(r, a,
                        with_ir ? "SELECT " SNAP_COLS ", s.ir FROM snapshots s"
                                  " WHERE s.group_name = $1 AND s.version = $2::bigint"
                                : "SELECT " SNAP_COLS " FROM snapshots s"
                                  " WHERE s.group_name = $1 AND s.version = $2::bigint",
                        2, p, with_ir, out, err, "snapshot %lld of group %s does not exist",
                        version, group);
    if (rc == 0)
        cache_store(r, a, *out);
    return rc;
}

int snap_repo_get_announced(snap_repo *r, const char *group, long long version, long long id,
                            sx_arena *a, snap_record **out, sx_err *err)
{
    if (id > 0 && check_group(group, err) == 0) {
        snap_record *o = sx_arena_alloc(a, sizeof(*o));
        snap_record want = {.id = id, .group = (char *)group, .version = version};
        /* The id check: the entry is the very row the NOTIFY named. */
        if (cache_lookup_at(r, a, staged_key(a, &want), group, version, o) && o->id == id) {
            *out = o;
            return 0;
        }
    }
    /* Not staged, or already renamed to its version key (or gone): the usual read. */
    return snap_repo_get(r, group, version, 0, a, out, err);
}

int snap_repo_get_latest(snap_repo *r, const char *group, unsigned flags, sx_arena *a,
                         snap_record **out, sx_err *err)
{
    *out = NULL;
    int rc = check_group(group, err);
    if (rc)
        return rc;
    bool with_ir = (flags & SNAP_REPO_WITH_IR) != 0;
    if (r->cache && !with_ir) {
        char *val = NULL;
        size_t len;
        if (redis_cache_get(r->cache, latest_key(a, group), &val, &len) == 0) {
            char *end;
            long long v = strtoll(val, &end, 10);
            bool ok = end != val && *end == '\0' && v > 0;
            free(val);
            snap_record *o = sx_arena_alloc(a, sizeof(*o));
            if (ok && cache_lookup(r, a, group, v, o)) {
                *out = o;
                return 0;
            }
        }
    }
    const char *p[] = {group};
    rc = query_snapshot(
        r, a,
        with_ir ? "SELECT " SNAP_COLS ", s.ir FROM proxy_groups g JOIN snapshots s"
                  "   ON s.group_name = g.name AND s.version = g.current_snapshot_version"
                  " WHERE g.name = $1"
                : "SELECT " SNAP_COLS " FROM proxy_groups g JOIN snapshots s"
                  "   ON s.group_name = g.name AND s.version = g.current_snapshot_version"
                  " WHERE g.name = $1",
        1, p, with_ir, out, err, "group %s has no snapshot", group);
    if (rc)
        return rc;
    cache_store(r, a, *out);
    cache_bump_latest(r, a, (*out)->group, (*out)->version);
    return 0;
}

int snap_repo_get_by_id(snap_repo *r, long long id, sx_arena *a, snap_record **out, sx_err *err)
{
    *out = NULL;
    const char *p[] = {repo_i64_param(a, id)};
    return query_snapshot(r, a,
                          "SELECT " SNAP_COLS ", s.ir FROM snapshots s WHERE s.id = $1::bigint", 1,
                          p, true, out, err, "snapshot %lld does not exist", id);
}

/* Groups by name ($1 the name to start after, $2 the limit); a group's versions newest
 * first ($2 the version to start below, $3 the limit); all snapshots newest first ($1
 * the id to start below, $2 the limit). */
static const repo_page_spec group_page = {"s", {0}, 1, 2, sizeof(snap_group), read_group};
static const repo_page_spec version_page = {"i", {2}, 2, 3, sizeof(snap_record), read_listed};
static const repo_page_spec id_page = {"i", {0}, 1, 2, sizeof(snap_record), read_listed};

int snap_repo_list_groups(snap_repo *r, int limit, const char *cursor, sx_arena *a,
                          snap_group_list *out, sx_err *err)
{
    const char *p[] = {NULL, NULL};
    return query_page(
        r, a, &group_page, limit, cursor,
        "SELECT name, current_snapshot_version, " REPO_TS(
            "updated_at") " FROM proxy_groups WHERE current_snapshot_version > 0"
                          "   AND ($1::text IS NULL OR name > $1) ORDER BY name LIMIT $2::int",
        2, p, REPO_LIST_REF(out), err);
}

int snap_repo_list_versions(snap_repo *r, const char *group, int limit, const char *cursor,
                            sx_arena *a, snap_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = check_group(group, err);
    if (rc)
        return rc;
    const char *p[] = {group, NULL, NULL};
    return query_page(r, a, &version_page, limit, cursor,
                      "SELECT " SNAP_LIST_COLS " FROM snapshots s WHERE s.group_name = $1"
                      "   AND ($2::bigint IS NULL OR s.version < $2::bigint)"
                      " ORDER BY s.version DESC LIMIT $3::int",
                      3, p, REPO_LIST_REF(out), err);
}

int snap_repo_list_all(snap_repo *r, int limit, const char *cursor, sx_arena *a, snap_list *out,
                       sx_err *err)
{
    const char *p[] = {NULL, NULL};
    return query_page(r, a, &id_page, limit, cursor,
                      "SELECT " SNAP_LIST_COLS " FROM snapshots s"
                      " WHERE ($1::bigint IS NULL OR s.id < $1::bigint)"
                      " ORDER BY s.id DESC LIMIT $2::int",
                      2, p, REPO_LIST_REF(out), err);
}

/* Reads the current snapshot of every group named in missing (a JSON array) into the
 * element of v with that group, in a; the result belongs to tmp. */
static int load_missing(snap_repo *r, sx_arena *a, sx_arena *tmp, const json_t *missing,
                        snap_record *v, bool *have, size_t n, sx_err *err)
{
    /* One query for every group the cache lacked. A version committed since the first
     * query is newer still, which is what a loader wants. */
    const char *p[] = {repo_json_param(tmp, missing)};
    PGresult *res;
    int rc = query(r, tmp,
                   "SELECT " SNAP_COLS " FROM proxy_groups g JOIN snapshots s"
                   "   ON s.group_name = g.name AND s.version = g.current_snapshot_version"
                   " WHERE g.name IN (SELECT jsonb_array_elements_text($1::jsonb))",
                   1, p, &res, err);
    int rows = rc ? 0 : PQntuples(res);
    for (int row = 0; rc == 0 && row < rows; row++) {
        const char *name = PQgetvalue(res, row, 1);
        for (size_t i = 0; i < n; i++) {
            if (!have[i] && strcmp(v[i].group, name) == 0) {
                rc = read_snap(a, res, row, false, false, &v[i], err);
                if (rc == 0)
                    rc = open_record(pg_pool_secrets(r->pool, NULL), a, &v[i], err);
                have[i] = rc == 0;
                if (rc == 0)
                    cache_store(r, a, &v[i]);
                break;
            }
        }
    }
    return rc;
}

int snap_repo_current_versions(snap_repo *r, sx_arena *a, snap_group **items, size_t *count,
                               sx_err *err)
{
    *items = NULL;
    *count = 0;
    PGresult *res;
    int rc = query(r, a,
                   "SELECT name, current_snapshot_version FROM proxy_groups"
                   " WHERE current_snapshot_version > 0 ORDER BY name",
                   0, NULL, &res, err);
    if (rc)
        return rc;
    size_t n = (size_t)PQntuples(res);
    snap_group *v = n ? sx_arena_alloc(a, n * sizeof(*v)) : NULL;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        v[i] = (snap_group){.name = sx_arena_strdup(a, PQgetvalue(res, (int)i, 0))};
        rc = repo_i64(res, (int)i, 1, 0, &v[i].latest_version, err);
    }
    if (rc)
        return rc;
    *items = v;
    *count = n;
    return 0;
}

int snap_repo_load_latest_all(snap_repo *r, sx_arena *a, snap_record **items, size_t *count,
                              sx_err *err)
{
    *items = NULL;
    *count = 0;
    snap_group *groups;
    size_t n;
    int rc = snap_repo_current_versions(r, a, &groups, &n, err);
    if (rc)
        return rc;
    snap_record *v = n ? sx_arena_alloc(a, n * sizeof(*v)) : NULL;
    bool *have = n ? sx_arena_alloc(a, n * sizeof(bool)) : NULL;
    json_t *missing = repo_own_json(a, json_array());
    for (size_t i = 0; i < n; i++) {
        const char *name = groups[i].name;
        if (!(have[i] = cache_lookup(r, a, name, groups[i].latest_version, &v[i]))) {
            json_array_append_new(missing, json_string(name));
            v[i].group = groups[i].name;
        }
    }
    if (json_array_size(missing) > 0) {
        /* The result holds every missing snapshot's bytes (escaped, twice their size):
         * it lives in an arena of its own, gone once they are copied into a. */
        sx_arena *tmp = sx_arena_create();
        rc = load_missing(r, a, tmp, missing, v, have, n, err);
        sx_arena_destroy(tmp);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < n; i++)
        if (!have[i])
            return sx_err_set(err, SX_EINTERNAL, "latest snapshot of group %s is missing",
                              v[i].group);
    *items = v;
    *count = n;
    return 0;
}
