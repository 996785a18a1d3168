/*
 * secret_seal.c — private keys at rest (see secret_seal.h).
 *
 * Design: one walk over a JSON document visits every string member named key_pem or
 * keyPem; sealing, opening, finding and rotating are callbacks of that walk, so the four
 * can never disagree on what a private key is. Rotation pages through the rows that can
 * hold a private key by their primary key, reseals in memory, and writes each batch in a
 * transaction of its own that sets sextant.rekey, the one condition under which the
 * history tables' triggers let a row change (and then only its secret columns).
 */
#include "storage/secret_seal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "server/base/arena.h"
#include "server/base/log.h"
#include "storage/repo_common.h"

#define COMPONENT   "secrets"
#define CHECK_TEXT  "sextant secrets key check"
#define BATCH_ROWS  "50"
#define BATCH_SNAPS "10"

/* ------------------------------------------------------------------ the walk */

static bool is_key_member(const char *k)
{
    return strcmp(k, "key_pem") == 0 || strcmp(k, "keyPem") == 0;
}

/* Called on every private key string v; may change it in place (json_string_set). */
typedef int (*key_fn)(json_t *v, const char *path, void *ctx, sx_err *err);

static int walk(json_t *doc, sx_buf *path, key_fn fn, void *ctx, sx_err *err)
{
    size_t base = path->len;
    int rc = 0;
    if (json_is_object(doc)) {
        const char *k;
        json_t *v;
        json_object_foreach(doc, k, v)
        {
            if (base)
                sx_buf_putc(path, '.');
            sx_buf_puts(path, k);
            if (is_key_member(k) && json_is_string(v))
                rc = fn(v, sx_buf_cstr(path), ctx, err);
            else if (json_is_object(v) || json_is_array(v))
                rc = walk(v, path, fn, ctx, err);
            path->len = base;
            path->data[base] = '\0';
            if (rc)
                break;
        }
    } else if (json_is_array(doc)) {
        size_t i;
        json_t *v;
        json_array_foreach(doc, i, v)
        {
            if (!json_is_object(v) && !json_is_array(v))
                continue;
            sx_buf_put_index(path, i);
            rc = walk(v, path, fn, ctx, err);
            path->len = base;
            path->data[base] = '\0';
            if (rc)
                break;
        }
    }
    return rc;
}

static int walk_doc(json_t *doc, key_fn fn, void *ctx, sx_err *err)
{
    sx_buf path = {0};
    sx_buf_puts(&path, "");
    int rc = doc ? walk(doc, &path, fn, ctx, err) : 0;
    sx_buf_free(&path);
    return rc;
}

/* Stops the walk (with 1) at the first key the predicate in ctx picks. */
typedef struct find_ctx {
    bool plaintext_only; /* false: any non-empty key */
    char path[256];
    bool any; /* a non-empty key was seen, sealed or not */
} find_ctx;

static int find_key(json_t *v, const char *path, void *ctx, sx_err *err)
{
    (void)err;
    find_ctx *f = ctx;
    const char *s = json_string_value(v);
    if (s[0] == '\0')
        return 0;
    f->any = true;
    if (f->plaintext_only && sx_sealed_text(s))
        return 0;
    snprintf(f->path, sizeof(f->path), "%s", path);
    return 1;
}

bool seal_json_has_keys(const json_t *doc)
{
    find_ctx f = {false, "", false};
    return walk_doc((json_t *)doc, find_key, &f, NULL) == 1;
}

static int seal_one(json_t *v, const char *path, void *ctx, sx_err *err)
{
    (void)path;
    const char *s = json_string_value(v);
    if (s[0] == '\0' || sx_sealed_text(s))
        return 0;
    sx_buf b = {0};
    int rc = sx_seal_text(ctx, s, json_string_length(v), &b, err);
    if (rc == 0)
        json_string_setn(v, b.data, b.len);
    sx_buf_free(&b);
    return rc;
}

int seal_json(const sx_keyring *k, bool allow_plaintext, const json_t *doc, json_t **stored,
              sx_err *err)
{
    return seal_json_ex(k, allow_plaintext, doc, stored, NULL, err);
}

int seal_json_ex(const sx_keyring *k, bool allow_plaintext, const json_t *doc, json_t **stored,
                 bool *has_keys, sx_err *err)
{
    *stored = NULL;
    find_ctx f = {true, "", false};
    bool plain = doc && walk_doc((json_t *)doc, find_key, &f, NULL) == 1;
    if (has_keys)
        *has_keys = f.any;
    if (!plain || (k == NULL && allow_plaintext)) {
        *stored = json_incref((json_t *)doc);
        return 0;
    }
    if (k == NULL) {
        sx_err_set(err, SX_EVALIDATION, "%s is a private key, and no secrets key is configured",
                   f.path);
        sx_err_detail(err, "Private keys are stored only encrypted, with the key of "
                           "secrets.key_file.");
        sx_err_hint(err, "Set secrets.key_file (see Security in the README), or accept "
                         "plaintext private keys in the database with "
                         "secrets.allow_plaintext: true.");
        return SX_EVALIDATION;
    }
    json_t *copy = json_deep_copy(doc);
    int rc = walk_doc(copy, seal_one, (void *)k, err);
    if (rc) {
        json_decref(copy);
        return rc;
    }
    *stored = copy;
    return 0;
}

static int open_one(json_t *v, const char *path, void *ctx, sx_err *err)
{
    const char *s = json_string_value(v);
    if (!sx_sealed_text(s))
        return 0;
    sx_buf b = {0};
    int rc = sx_open_text(ctx, s, &b, err);
    if (rc == 0)
        json_string_setn(v, b.data ? b.data : "", b.len);
    else
        sx_err_prefix(err, "%s", path);
    if (b.data)
        OPENSSL_cleanse(b.data, b.len);
    sx_buf_free(&b);
    return rc;
}

int seal_open_json(const sx_keyring *k, json_t *doc, sx_err *err)
{
    return walk_doc(doc, open_one, (void *)k, err);
}

int seal_bytes(const sx_keyring *k, bool allow_plaintext, bool has_keys, const void *data, size_t n,
               sx_buf *out, bool *sealed, sx_err *err)
{
    *sealed = false;
    if (!has_keys || (k == NULL && allow_plaintext))
        return 0;
    if (k == NULL)
        return sx_err_set(err, SX_EVALIDATION,
                          "a snapshot carries private keys, and no secrets "
                          "key is configured");
    int rc = sx_seal_bytes(k, data, n, out, err);
    *sealed = rc == 0;
    return rc;
}

/* ------------------------------------------------------------------ key checks */

int seal_check_keys(pg_conn *c, const sx_keyring *k, sx_err *err)
{
    sx_arena *a = sx_arena_create();
    PGresult *r;
    int rc = repo_query(c, a, "SELECT key_id, check_value FROM secret_keys ORDER BY key_id", 0,
                        NULL, &r, err);
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, 0);
        if (k == NULL) {
            rc = sx_err_set(err, SX_EINVAL,
                            "the database holds secrets sealed with key %s, and secrets.key_file "
                            "is not set",
                            id);
            sx_err_hint(err, "Set secrets.key_file to the keyring that holds key %s.", id);
        } else if (!sx_keyring_has(k, id)) {
            rc = sx_err_set(err, SX_EINVAL,
                            "the database holds secrets sealed with key %s, which "
                            "secrets.key_file does not hold",
                            id);
            sx_err_hint(err,
                        "Keep key %s in the keyring until `sextant rotate-secrets` has "
                        "resealed every secret with the active key.",
                        id);
        } else {
            sx_buf b = {0};
            if (sx_open_text(k, PQgetvalue(r, i, 1), &b, err) != 0 ||
                strcmp(sx_buf_cstr(&b), CHECK_TEXT) != 0) {
                rc = sx_err_set(err, SX_EINVAL,
                                "key %s of secrets.key_file is not the key that sealed the "
                                "stored secrets",
                                id);
                sx_err_detail(err,
                              "The check value the database holds for key %s does not "
                              "open with it.",
                              id);
            }
            sx_buf_free(&b);
        }
    }
    if (rc == 0 && k) {
        sx_buf b = {0};
        rc = sx_seal_text(k, CHECK_TEXT, strlen(CHECK_TEXT), &b, err);
        const char *p[] = {sx_keyring_active(k), sx_buf_cstr(&b)};
        if (rc == 0)
            rc = pg_exec(c,
                         "INSERT INTO secret_keys (key_id, check_value) VALUES ($1, $2)"
                         " ON CONFLICT (key_id) DO NOTHING",
                         2, p, NULL, err);
        sx_buf_free(&b);
    }
    sx_arena_destroy(a);
    return rc;
}

/* ------------------------------------------------------------------ rotation */

/* Whether every private key of doc is sealed with the active key (none plaintext). */
static int stale_key(json_t *v, const char *path, void *ctx, sx_err *err)
{
    (void)path;
    (void)err;
    const char *s = json_string_value(v);
    char id[SX_SEAL_KEY_ID_MAX + 1];
    if (s[0] == '\0')
        return 0;
    if (!sx_sealed_key_id(s, strlen(s), id) || strcmp(id, ctx) != 0)
        return 1;
    return 0;
}

static bool json_current(const sx_keyring *k, json_t *doc)
{
    return walk_doc(doc, stale_key, (void *)sx_keyring_active(k), NULL) == 0;
}

/* Opens then reseals doc's keys with the active key: *out a new reference, or NULL when
 * doc is already current. */
static int reseal_json(const sx_keyring *k, json_t *doc, json_t **out, sx_err *err)
{
    *out = NULL;
    if (json_current(k, doc))
        return 0;
    int rc = seal_open_json(k, doc, err);
    if (rc == 0)
        rc = seal_json(k, false, doc, out, err);
    return rc;
}

/* Reseals row i of a batch's result r (in a) on c: *changed when it was rewritten. */
typedef int (*reseal_row_fn)(pg_conn *c, sx_arena *a, const sx_keyring *k, const PGresult *r, int i,
                             bool *changed, sx_err *err);

static int reseal_config(pg_conn *c, sx_arena *a, const sx_keyring *k, const PGresult *r, int i,
                         bool *changed, sx_err *err)
{
    json_t *spec = NULL, *next = NULL;
    int rc;
    if ((rc = repo_json(a, r, i, 2, &spec, err)) || (rc = reseal_json(k, spec, &next, err)) ||
        next == NULL)
        return rc;
    const char *u[] = {PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), repo_json_param(a, next)};
    json_decref(next);
    rc = pg_exec(c,
                 "UPDATE config_versions SET spec = $3::jsonb"
                 " WHERE config_id = $1::uuid AND version = $2::int",
                 3, u, NULL, err);
    *changed = rc == 0;
    return rc;
}

/* The bytes of a snapshot row, resealed with the active key when they must be sealed
 * (has_keys) and are not yet; *changed false when they stay as they are. */
static int reseal_bytes(const sx_keyring *k, const PGresult *r, int row, int col, bool has_keys,
                        sx_buf *out, bool *changed, sx_err *err)
{
    *changed = false;
    size_t n = 0;
    unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n);
    if (raw == NULL)
        return sx_err_set(err, SX_EINTERNAL, "could not decode snapshot bytes");
    char id[SX_SEAL_KEY_ID_MAX + 1];
    bool sealed = sx_sealed_key_id(raw, n, id);
    int rc = 0;
    if (sealed && strcmp(id, sx_keyring_active(k)) != 0) {
        sx_buf pt = {0};
        if ((rc = sx_open_bytes(k, raw, n, &pt, err)) == 0)
            rc = sx_seal_bytes(k, pt.data, pt.len, out, err);
        if (pt.data)
            OPENSSL_cleanse(pt.data, pt.len);
        sx_buf_free(&pt);
        *changed = rc == 0;
    } else if (!sealed && has_keys) {
        rc = sx_seal_bytes(k, raw, n, out, err);
        *changed = rc == 0;
    }
    PQfreemem(raw);
    return rc;
}

static int reseal_snapshot(pg_conn *c, sx_arena *a, const sx_keyring *k, const PGresult *r, int i,
                           bool *changed, sx_err *err)
{
    json_t *ir = NULL, *next = NULL;
    int rc = repo_json(a, r, i, 1, &ir, err);
    if (rc)
        return rc;
    bool has_keys = seal_json_has_keys(ir), bytes_changed = false;
    sx_buf bytes = {0};
    if ((rc = reseal_json(k, ir, &next, err)) == 0)
        rc = reseal_bytes(k, r, i, 2, has_keys, &bytes, &bytes_changed, err);
    if (rc == 0 && (next || bytes_changed)) {
        const char *u[] = {PQgetvalue(r, i, 0), next ? repo_json_param(a, next) : NULL,
                           bytes_changed ? bytes.data : NULL};
        int lengths[3] = {0, 0, (int)bytes.len}, formats[3] = {0, 0, 1};
        PGresult *ur = NULL;
        rc = pg_exec_ex(c,
                        "UPDATE snapshots SET ir = COALESCE($2::jsonb, ir),"
                        " encoded = COALESCE($3::bytea, encoded) WHERE id = $1::bigint",
                        3, u, lengths, formats, 0, &ur, err);
        PQclear(ur);
        *changed = rc == 0;
    }
    json_decref(next);
    sx_buf_free(&bytes);
    return rc;
}

/* What a rotation pass reseals: the SELECT of a batch (locked rows after the keyset
 * position, a row's id in column 0), how it reseals a row, and its counters. */
typedef struct rot_pass {
    const char *sql;
    int nparams;       /* $1 the id; $2 the version (config versions only) */
    const char *first; /* $1 before the first batch */
    reseal_row_fn reseal;
    long long *scanned, *resealed;
} rot_pass;

typedef struct rot_ctx {
    const sx_keyring *k;
    seal_rotation *st;
    const rot_pass *pass;
    char after_id[64];   /* keyset position: config id, or snapshot id */
    long long after_ver; /* config version */
    bool done;
} rot_ctx;

/* One batch of the pass in its transaction: turns the re-key guard on, reads the rows,
 * reseals each and counts them; x->done when there was none, else the keyset position
 * moves to the last one. */
static int rotate_batch(pg_conn *c, void *arg, sx_err *err)
{
    rot_ctx *x = arg;
    const rot_pass *ps = x->pass;
    sx_arena *a = sx_arena_create();
    const char *p[] = {x->after_id[0] ? x->after_id : ps->first, repo_i64_param(a, x->after_ver)};
    PGresult *r = NULL;
    int rc = pg_exec(c, "SELECT set_config('sextant.rekey', 'on', true)", 0, NULL, NULL, err);
    if (rc == 0)
        rc = repo_query(c, a, ps->sql, ps->nparams, p, &r, err);
    int rows = rc == 0 ? PQntuples(r) : 0;
    long long resealed = 0;
    for (int i = 0; rc == 0 && i < rows; i++) {
        bool changed = false;
        rc = ps->reseal(c, a, x->k, r, i, &changed, err);
        resealed += changed;
    }
    if (rc == 0) {
        *ps->scanned += rows;
        *ps->resealed += resealed;
        x->done = rows == 0;
        if (rows > 0) {
            snprintf(x->after_id, sizeof(x->after_id), "%s", PQgetvalue(r, rows - 1, 0));
            if (ps->nparams > 1)
                x->after_ver = strtoll(PQgetvalue(r, rows - 1, 1), NULL, 10);
        }
    }
    sx_arena_destroy(a);
    return rc;
}

/* Runs the pass in batches, from the start, until a batch finds nothing. */
static int rotate_pass(pg_pool *pool, rot_ctx *x, const rot_pass *pass, sx_err *err)
{
    x->pass = pass;
    x->done = false;
    x->after_id[0] = '\0';
    x->after_ver = 0;
    int rc = 0;
    while (rc == 0 && !x->done)
        rc = pg_tx(pool, rotate_batch, x, err);
    return rc;
}

static int retire_keys(pg_conn *c, void *arg, sx_err *err)
{
    rot_ctx *x = arg;
    const char *p[] = {sx_keyring_active(x->k)};
    int rows = 0;
    int rc = repo_exec_count(c, "DELETE FROM secret_keys WHERE key_id <> $1", 1, p, &rows, err);
    if (rc == 0)
        x->st->keys_retired = rows;
    return rc;
}

int seal_rotate(pg_pool *pool, const sx_keyring *k, seal_rotation *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    const rot_pass configs = {
        "SELECT config_id, version, spec FROM config_versions"
        " WHERE ($1::uuid IS NULL OR (config_id, version) > ($1::uuid, $2::int))"
        "   AND (spec::text LIKE '%\"key\\_pem\"%' OR spec::text LIKE '%\"keyPem\"%')"
        " ORDER BY config_id, version LIMIT " BATCH_ROWS " FOR UPDATE",
        2,
        NULL,
        reseal_config,
        &out->configs_scanned,
        &out->configs_resealed,
    };
    const rot_pass snapshots = {
        "SELECT id, ir, encoded FROM snapshots WHERE id > $1::bigint"
        "   AND (ir::text LIKE '%\"key\\_pem\"%' OR ir::text LIKE '%\"keyPem\"%'"
        "        OR substring(encoded from 1 for 4) = '\\x53584531'::bytea)"
        " ORDER BY id LIMIT " BATCH_SNAPS " FOR UPDATE",
        1,
        "0",
        reseal_snapshot,
        &out->snapshots_scanned,
        &out->snapshots_resealed,
    };
    rot_ctx x = {.k = k, .st = out};
    int rc = rotate_pass(pool, &x, &configs, err);
    if (rc == 0)
        rc = rotate_pass(pool, &x, &snapshots, err);
    if (rc == 0)
        rc = pg_tx(pool, retire_keys, &x, err);
    if (rc == 0)
        sx_log_fields(SX_LOG_INFO, COMPONENT,
                      json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "active_key", sx_keyring_active(k),
                                "configs_scanned", (json_int_t)out->configs_scanned,
                                "configs_resealed", (json_int_t)out->configs_resealed,
                                "snapshots_scanned", (json_int_t)out->snapshots_scanned,
                                "snapshots_resealed", (json_int_t)out->snapshots_resealed,
                                "keys_retired", (json_int_t)out->keys_retired),
                      "secrets resealed with key %s", sx_keyring_active(k));
    return rc;
}
