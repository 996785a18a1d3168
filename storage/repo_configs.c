/*
 * repo_configs.c — configs and their immutable versions.
 *
 * Design: every write is one SQL statement, so it is atomic whether or not the caller
 * opened a transaction. Creating a config inserts the config row and version 1 through
 * a data-modifying CTE; adding a version bumps latest_version with a compare-and-set
 * UPDATE (WHERE latest_version = expected) and inserts the version from its RETURNING
 * row, so two writers holding the same expected version cannot both succeed: the
 * second waits on the row lock, re-checks the WHERE against the committed row, matches
 * nothing, and is told it is stale. A statement that matched no row is followed by a
 * small diagnostic read to tell "missing" from "stale".
 */
#include "storage/repo_configs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_common.h"
#include "storage/secret_seal.h"

#define NAME_MAX_LEN 253
#define REF_MAX_LEN  1024

#define CFG_COLS                                                                                   \
    "id, namespace, name, to_jsonb(groups), latest_version, live_version, created_by, " REPO_TS(   \
        "created_at") ", " REPO_TS("updated_at") ", " REPO_TS("deleted_at") ", source, source_ref"

#define VER_COLS                                                                                   \
    "config_id, version, checksum, author, message, draft, source_version, " REPO_TS("created_at")

/* Groups stored sorted and without duplicates. */
#define GROUPS_FROM_JSON(p)                                                                        \
    "ARRAY(SELECT DISTINCT g FROM jsonb_array_elements_text(" p ") g ORDER BY g)"

void cfg_repo_checksum(const json_t *spec, char out[SX_SHA256_HEX_LEN + 1])
{
    char *s = json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        abort(); /* out of memory */
    sx_sha256_hex(s, strlen(s), out);
    free(s);
}

static const char *const source_names[] = {"rest", "kubernetes"};

const char *cfg_source_name(cfg_source s)
{
    return (size_t)s < sizeof(source_names) / sizeof(source_names[0]) ? source_names[s] : "rest";
}

int cfg_source_parse(const char *s, cfg_source *out)
{
    for (size_t i = 0; s && i < sizeof(source_names) / sizeof(source_names[0]); i++)
        if (strcmp(s, source_names[i]) == 0) {
            *out = (cfg_source)i;
            return 0;
        }
    return SX_EINVAL;
}

static int check_name(const char *field, const char *v, sx_err *err)
{
    if (v == NULL || v[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "%s is required", field);
    if (strlen(v) > NAME_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "%s is longer than %d bytes", field, NAME_MAX_LEN);
    return 0;
}

static int check_groups(const char *const *groups, size_t n, sx_err *err)
{
    for (size_t i = 0; i < n; i++) {
        char field[32];
        snprintf(field, sizeof(field), "groups[%zu]", i);
        int rc = check_name(field, groups[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

static int check_spec(const json_t *spec, const char *author, sx_err *err)
{
    if (!json_is_object(spec))
        return sx_err_set(err, SX_EINVAL, "spec must be a json object");
    if (author == NULL || author[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "author is required");
    return 0;
}

static int check_id(const char *id, sx_err *err)
{
    if (!repo_is_uuid(id)) {
        sx_err_set(err, SX_EINVAL, "invalid config id \"%s\"", id ? id : "");
        sx_err_detail(err, "A config id is a UUID such as 9b2f6c1e-0d4e-4c3f-9a7b-1f2e3d4c5b6a.");
        return SX_EINVAL;
    }
    return 0;
}

/* A managed config names what it is translated from; a REST config names nothing. */
static int check_source(cfg_source source, const char *ref, sx_err *err)
{
    if (source != CFG_SOURCE_REST && source != CFG_SOURCE_KUBERNETES)
        return sx_err_set(err, SX_EINVAL, "unknown config source %d", (int)source);
    if (source == CFG_SOURCE_REST)
        return ref ? sx_err_set(err, SX_EINVAL,
                                "a config written through the REST API has no "
                                "source_ref")
                   : 0;
    if (ref == NULL || ref[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "source_ref is required for a %s config",
                          cfg_source_name(source));
    if (strlen(ref) > REF_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "source_ref is longer than %d bytes", REF_MAX_LEN);
    return 0;
}

static int read_cfg(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    cfg_record *o = item;
    long long latest, live;
    int rc;
    memset(o, 0, sizeof(*o));
    REPO_STRS(a, r, row, 0, &o->id, &o->ns, &o->name);
    if ((rc = repo_strv(a, r, row, 3, &o->groups, &o->group_count, err)) ||
        (rc = repo_i64(r, row, 4, 0, &latest, err)) || (rc = repo_i64(r, row, 5, 0, &live, err)))
        return rc;
    o->latest_version = (int)latest;
    o->live_version = (int)live;
    REPO_STRS(a, r, row, 6, &o->created_by, &o->created_at, &o->updated_at, &o->deleted_at);
    const char *src = PQgetvalue(r, row, 10);
    if (cfg_source_parse(src, &o->source) != 0)
        return sx_err_set(err, SX_EINTERNAL, "config %s has an unknown source \"%s\"", o->id, src);
    o->source_ref = repo_str(a, r, row, 11);
    return 0;
}

/* Reads the VER_COLS columns, plus spec at column 8 when with_spec. */
static int read_ver(sx_arena *a, const PGresult *r, int row, bool with_spec, cfg_version *o,
                    sx_err *err)
{
    long long version, source;
    int rc;
    memset(o, 0, sizeof(*o));
    o->config_id = repo_str(a, r, row, 0);
    if ((rc = repo_i64(r, row, 1, 0, &version, err)) || (rc = repo_i64(r, row, 6, 0, &source, err)))
        return rc;
    o->version = (int)version;
    o->source_version = (int)source;
    REPO_STRS(a, r, row, 2, &o->checksum, &o->author, &o->message);
    o->draft = repo_bool(r, row, 5);
    o->created_at = repo_str(a, r, row, 7);
    if (with_spec)
        return repo_json(a, r, row, 8, &o->spec, err);
    return 0;
}

static int read_listed_ver(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    return read_ver(a, r, row, false, item, err);
}

/* The checksum of spec (cfg_repo_checksum) into sum, and its stored form (its private
 * keys sealed, see storage/secret_seal.h) as a $n::jsonb parameter in a, into *out;
 * seal_json's errors when it may not be stored. */
static int spec_param(pg_conn *c, sx_arena *a, const json_t *spec, char sum[SX_SHA256_HEX_LEN + 1],
                      const char **out, sx_err *err)
{
    cfg_repo_checksum(spec, sum);
    bool plaintext = false;
    const sx_keyring *k = pg_conn_secrets(c, &plaintext);
    json_t *stored = NULL;
    int rc = seal_json(k, plaintext, spec, &stored, err);
    if (rc)
        return rc;
    *out = repo_json_param(a, stored);
    json_decref(stored);
    return 0;
}

/* Opens the sealed private keys of a spec read on c. */
static int open_spec(pg_conn *c, json_t *spec, sx_err *err)
{
    return seal_open_json(pg_conn_secrets(c, NULL), spec, err);
}

/* The live version of every config not deleted (c the config, v the version): the FROM
 * and WHERE of a query that adds its own AND conditions. */
#define FROM_LIVE_VERSIONS                                                                         \
    " FROM configs c JOIN config_versions v"                                                       \
    "   ON v.config_id = c.id AND v.version = c.live_version"                                      \
    " WHERE c.deleted_at IS NULL"

/* After a query of *count rows into *out (rc its result): open_spec on each row's spec;
 * on any failure rc and no rows. */
#define OPEN_SPECS(c, rc, out, count, err)                                                         \
    do {                                                                                           \
        for (size_t i_ = 0; (rc) == 0 && i_ < *(count); i_++)                                      \
            (rc) = open_spec((c), (*(out))[i_].spec, (err));                                       \
        if (rc) {                                                                                  \
            *(out) = NULL;                                                                         \
            *(count) = 0;                                                                          \
        }                                                                                          \
    } while (0)

static int read_live_ver(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    return read_ver(a, r, row, true, item, err);
}

/* The config in row 0 of r, in a. */
static int read_one(sx_arena *a, const PGresult *r, cfg_record **out, sx_err *err)
{
    cfg_record *o = sx_arena_alloc(a, sizeof(*o));
    int rc = read_cfg(a, r, 0, o, err);
    if (rc == 0)
        *out = o;
    return rc;
}

static int name_taken(const char *ns, const char *name, sx_err *err)
{
    sx_err_set(err, SX_ECONFLICT, "config %s%s%s already exists", ns ? ns : "", ns ? "/" : "",
               name);
    sx_err_detail(err, "Names are unique within a namespace among configs that are not deleted.");
    return SX_ECONFLICT;
}

int cfg_repo_create(pg_conn *c, const cfg_new *in, sx_arena *a, cfg_record **out, sx_err *err)
{
    *out = NULL;
    int rc;
    if ((rc = check_name("namespace", in->ns, err)) || (rc = check_name("name", in->name, err)) ||
        (rc = check_groups(in->groups, in->group_count, err)) ||
        (rc = check_spec(in->spec, in->author, err)) ||
        (rc = check_source(in->source, in->source_ref, err)))
        return rc;
    char sum[SX_SHA256_HEX_LEN + 1];
    const char *stored = NULL;
    if ((rc = spec_param(c, a, in->spec, sum, &stored, err)) != 0)
        return rc;
    const char *p[] = {
        in->ns,
        in->name,
        repo_strv_param(a, in->groups, in->group_count),
        stored,
        in->author,
        sum,
        in->draft ? "true" : "false",
        in->message ? in->message : "",
        cfg_source_name(in->source),
        in->source_ref,
    };
    static const char sql[] =
        "WITH c AS ("
        " INSERT INTO configs (namespace, name, groups, latest_version, live_version, created_by,"
        "   source, source_ref)"
        " VALUES ($1, $2, " GROUPS_FROM_JSON(
            "$3::jsonb") ", 1,"
                         "         CASE WHEN $7::boolean THEN NULL ELSE 1 END, $5, $9, $10)"
                         " RETURNING *),"
                         " v AS ("
                         " INSERT INTO config_versions (config_id, version, spec, checksum, "
                         "author, message, draft)"
                         " SELECT id, 1, $4::jsonb, $6, $5, $8, $7::boolean FROM c)"
                         " SELECT " CFG_COLS " FROM c";
    PGresult *r;
    rc = repo_query(c, a, sql, 10, p, &r, err);
    if (rc == SX_ECONFLICT && err && strcmp(err->sqlstate, "23505") == 0)
        return name_taken(in->ns, in->name, err);
    return rc ? rc : read_one(a, r, out, err);
}

static int get_one(pg_conn *c, const char *sql, int n, const char *const *p, sx_arena *a,
                   cfg_record **out, const char *what, sx_err *err)
{
    PGresult *r;
    int rc = repo_query(c, a, sql, n, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        return sx_err_set(err, SX_ENOTFOUND, "config %s does not exist", what);
    return read_one(a, r, out, err);
}

int cfg_repo_get(pg_conn *c, const char *id, bool include_deleted, sx_arena *a, cfg_record **out,
                 sx_err *err)
{
    *out = NULL;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    const char *p[] = {id, include_deleted ? "true" : "false"};
    return get_one(c,
                   "SELECT " CFG_COLS " FROM configs"
                   " WHERE id = $1::uuid AND ($2::boolean OR deleted_at IS NULL)",
                   2, p, a, out, id, err);
}

int cfg_repo_get_by_name(pg_conn *c, const char *ns, const char *name, sx_arena *a,
                         cfg_record **out, sx_err *err)
{
    *out = NULL;
    int rc;
    if ((rc = check_name("namespace", ns, err)) || (rc = check_name("name", name, err)))
        return rc;
    const char *p[] = {ns, name};
    char what[2 * NAME_MAX_LEN + 2];
    snprintf(what, sizeof(what), "%s/%s", ns, name);
    return get_one(c,
                   "SELECT " CFG_COLS " FROM configs"
                   " WHERE namespace = $1 AND name = $2 AND deleted_at IS NULL",
                   2, p, a, out, what, err);
}

/* By namespace, name, id: $4..$6 the key to start after, $7 the limit. */
static const repo_page_spec cfg_page = {"ssu", {1, 2, 0}, 4, 7, sizeof(cfg_record), read_cfg};

int cfg_repo_list(pg_conn *c, const cfg_filter *f, sx_arena *a, cfg_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    cfg_filter none = {0};
    if (f == NULL)
        f = &none;
    cfg_source source;
    if (f->source && cfg_source_parse(f->source, &source) != 0)
        return sx_err_set(err, SX_EINVAL, "unknown config source \"%.32s\"", f->source);
    const char *p[] = {f->ns, f->group, f->include_deleted ? "true" : "false", NULL, NULL, NULL,
                       NULL,  f->source};
    static const char sql[] =
        "SELECT " CFG_COLS " FROM configs"
        " WHERE ($1::text IS NULL OR namespace = $1)"
        "   AND ($2::text IS NULL OR groups @> ARRAY[$2::text])"
        "   AND ($3::boolean OR deleted_at IS NULL)"
        "   AND ($8::text IS NULL OR source = $8)"
        "   AND ($4::text IS NULL OR (namespace, name, id) > ($4, $5, $6::uuid))"
        " ORDER BY namespace, name, id LIMIT $7::int";
    return repo_list_query(c, a, &cfg_page, f->limit, f->cursor, sql, 8, p, REPO_LIST_REF(out),
                           err);
}

/* After a compare-and-set matched nothing: missing/deleted, or stale. */
static int explain_miss(pg_conn *c, const char *id, int expected, sx_err *err)
{
    const char *p[] = {id};
    PGresult *r;
    int rc = pg_exec(c, "SELECT latest_version, deleted_at IS NOT NULL FROM configs WHERE id = $1",
                     1, p, &r, err);
    if (rc)
        return rc;
    long long latest = 0;
    bool missing = PQntuples(r) == 0 || repo_bool(r, 0, 1);
    if (!missing)
        rc = repo_i64(r, 0, 0, 0, &latest, err);
    PQclear(r);
    if (rc)
        return rc;
    if (missing)
        return sx_err_set(err, SX_ENOTFOUND, "config %s does not exist", id);
    sx_err_set(err, SX_EPRECONDITION, "config %s has changed: its latest version is %lld, not %d",
               id, latest, expected);
    sx_err_detail(err, "Another change was saved first.");
    sx_err_hint(err, "Read the config again and reapply the change on top of version %lld.",
                latest);
    return SX_EPRECONDITION;
}

int cfg_repo_add_version(pg_conn *c, const char *id, int expected_latest, const cfg_change *in,
                         sx_arena *a, cfg_version **out, sx_err *err)
{
    if (out)
        *out = NULL;
    int rc;
    if ((rc = check_id(id, err)) || (rc = check_spec(in->spec, in->author, err)))
        return rc;
    if (in->name && (rc = check_name("name", in->name, err)))
        return rc;
    if (in->set_groups && (rc = check_groups(in->groups, in->group_count, err)))
        return rc;
    if (in->source_ref && (rc = check_source(CFG_SOURCE_KUBERNETES, in->source_ref, err)))
        return rc;
    if (in->source_version < 0 || in->source_version > expected_latest)
        return sx_err_set(err, SX_EINVAL, "source_version %d does not exist", in->source_version);
    char sum[SX_SHA256_HEX_LEN + 1];
    const char *stored = NULL;
    if ((rc = spec_param(c, a, in->spec, sum, &stored, err)) != 0)
        return rc;
    const char *p[] = {
        id,
        repo_i64_param(a, expected_latest),
        stored,
        sum,
        in->author,
        in->message ? in->message : "",
        in->draft ? "true" : "false",
        in->source_version > 0 ? repo_i64_param(a, in->source_version) : NULL,
        in->name,
        in->set_groups ? repo_strv_param(a, in->groups, in->group_count) : NULL,
        in->source_ref,
    };
    static const char sql[] =
        "WITH u AS ("
        " UPDATE configs SET latest_version = latest_version + 1,"
        "   live_version = CASE WHEN $7::boolean THEN live_version ELSE latest_version + 1 END,"
        "   name = COALESCE($9::text, name),"
        "   groups = CASE WHEN $10::jsonb IS NULL THEN groups"
        "            ELSE " GROUPS_FROM_JSON(
            "$10::jsonb") " END,"
                          "   updated_at = now(),"
                          "   source_ref = CASE WHEN source = 'rest' THEN source_ref"
                          "                ELSE COALESCE($11::text, source_ref) END"
                          " WHERE id = $1::uuid AND deleted_at IS NULL AND latest_version = $2::int"
                          " RETURNING id, latest_version)"
                          " INSERT INTO config_versions"
                          "   (config_id, version, spec, checksum, author, message, draft, "
                          "source_version)"
                          " SELECT id, latest_version, $3::jsonb, $4, $5, $6, $7::boolean, $8::int "
                          "FROM u"
                          " RETURNING " VER_COLS;
    PGresult *r;
    rc = repo_query(c, a, sql, 11, p, &r, err);
    if (rc == SX_ECONFLICT && err && strcmp(err->sqlstate, "23505") == 0)
        return name_taken(NULL, in->name ? in->name : "", err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        return explain_miss(c, id, expected_latest, err);
    cfg_version *o = sx_arena_alloc(a, sizeof(*o));
    if ((rc = read_ver(a, r, 0, false, o, err)) != 0)
        return rc;
    o->spec = repo_own_json(a, json_incref((json_t *)in->spec));
    if (out)
        *out = o;
    return 0;
}

int cfg_repo_get_version(pg_conn *c, const char *id, int version, sx_arena *a, cfg_version **out,
                         sx_err *err)
{
    *out = NULL;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    const char *p[] = {id, repo_i64_param(a, version)};
    PGresult *r;
    rc = repo_query(c, a,
                    "SELECT " VER_COLS ", spec FROM config_versions"
                    " WHERE config_id = $1::uuid AND version = $2::int",
                    2, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        return sx_err_set(err, SX_ENOTFOUND, "version %d of config %s does not exist", version, id);
    cfg_version *o = sx_arena_alloc(a, sizeof(*o));
    rc = read_ver(a, r, 0, true, o, err);
    if (rc == 0 && (rc = open_spec(c, o->spec, err)) == 0)
        *out = o;
    return rc;
}

int cfg_repo_newest_own_version(pg_conn *c, const char *id, const char *author, sx_arena *a,
                                cfg_version **out, sx_err *err)
{
    *out = NULL;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    if (author == NULL || author[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "author is required");
    const char *p[] = {id, author};
    return repo_query_one(c, a,
                          "SELECT " VER_COLS " FROM config_versions"
                          " WHERE config_id = $1::uuid AND author = $2 AND source_version IS NULL"
                          "   AND NOT draft"
                          " ORDER BY version DESC LIMIT 1",
                          2, p, sizeof(cfg_version), read_listed_ver, out, err);
}

/* Newest first: $2 the version to start below, $3 the limit. */
static const repo_page_spec version_page = {"i", {1}, 2, 3, sizeof(cfg_version), read_listed_ver};

int cfg_repo_list_versions(pg_conn *c, const char *id, int limit, const char *cursor, sx_arena *a,
                           cfg_version_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = check_id(id, err);
    if (rc)
        return rc;
    const char *p[] = {id, NULL, NULL};
    rc = repo_list_query(c, a, &version_page, limit, cursor,
                         "SELECT " VER_COLS " FROM config_versions"
                         " WHERE config_id = $1::uuid AND ($2::int IS NULL OR version < $2::int)"
                         " ORDER BY version DESC LIMIT $3::int",
                         3, p, REPO_LIST_REF(out), err);
    if (rc == 0 && out->count == 0 && cursor == NULL) {
        cfg_record *cfg; /* an unknown config is not an empty one */
        return cfg_repo_get(c, id, true, a, &cfg, err);
    }
    return rc;
}

int cfg_repo_live_for_group(pg_conn *c, const char *group, sx_arena *a, cfg_version **out,
                            size_t *count, sx_err *err)
{
    *out = NULL;
    *count = 0;
    int rc = check_name("group", group, err);
    if (rc)
        return rc;
    const char *p[] = {group};
    rc = repo_query_rows(
        c, a,
        "SELECT v.config_id, v.version, v.checksum, v.author, v.message, v.draft,"
        "  v.source_version, " REPO_TS(
            "v.created_at") ", v.spec" FROM_LIVE_VERSIONS
                            "   AND c.groups @> ARRAY[$1::text] ORDER BY c.namespace, c.name",
        1, p, sizeof(cfg_version), read_live_ver, out, count, err);
    OPEN_SPECS(c, rc, out, count, err);
    return rc;
}

/* Runs sql, an UPDATE of config id ($1::uuid) that takes a version as $2::int (NULL
 * unless given), and sets *rows to the rows it changed. */
static int update_config(pg_conn *c, const char *id, const char *sql, int version, bool given,
                         int *rows, sx_err *err)
{
    *rows = 0;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    char v[16];
    snprintf(v, sizeof(v), "%d", version);
    const char *p[] = {id, given ? v : NULL};
    return repo_exec_count(c, sql, 2, p, rows, err);
}

int cfg_repo_delete(pg_conn *c, const char *id, int expected_latest, sx_err *err)
{
    int rows;
    int rc = update_config(c, id,
                           "UPDATE configs SET deleted_at = now(), updated_at = now()"
                           " WHERE id = $1::uuid AND deleted_at IS NULL"
                           "   AND ($2::int IS NULL OR latest_version = $2::int)",
                           expected_latest, expected_latest >= 0, &rows, err);
    if (rc)
        return rc;
    return rows ? 0 : explain_miss(c, id, expected_latest, err);
}

static int read_live(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    cfg_live *v = item;
    long long version = 0;
    int rc;
    v->id = repo_str(a, r, row, 0);
    v->ns = repo_str(a, r, row, 1);
    v->name = repo_str(a, r, row, 2);
    if ((rc = repo_strv(a, r, row, 3, &v->groups, &v->group_count, err)) ||
        (rc = repo_i64(r, row, 4, 0, &version, err)))
        return rc;
    v->version = (int)version;
    return repo_json(a, r, row, 5, &v->spec, err);
}

int cfg_repo_live_in_groups(pg_conn *c, const char *const *groups, size_t n, const char *exclude_id,
                            sx_arena *a, cfg_live **out, size_t *count, sx_err *err)
{
    *out = NULL;
    *count = 0;
    int rc = check_groups(groups, n, err);
    if (rc)
        return rc;
    if (n == 0)
        return 0;
    if (exclude_id && (rc = check_id(exclude_id, err)))
        return rc;
    const char *p[] = {repo_strv_param(a, groups, n), exclude_id};
    rc = repo_query_rows(
        c, a,
        "SELECT c.id, c.namespace, c.name, to_jsonb(c.groups), v.version, v.spec" FROM_LIVE_VERSIONS
        "   AND c.groups && ARRAY(SELECT jsonb_array_elements_text($1::jsonb))"
        "   AND ($2::uuid IS NULL OR c.id <> $2::uuid)"
        " ORDER BY c.namespace, c.name",
        2, p, sizeof(cfg_live), read_live, out, count, err);
    OPEN_SPECS(c, rc, out, count, err);
    return rc;
}

int cfg_repo_lock_name(pg_conn *c, const char *ns, const char *name, sx_err *err)
{
    int rc;
    if ((rc = check_name("namespace", ns, err)) || (rc = check_name("name", name, err)))
        return rc;
    /* Keyed in a space of its own ("sextant.config" as the first key), so no other
     * advisory lock of the project can collide with a config name's. */
    const char *p[] = {ns, name};
    return pg_exec(c,
                   "SELECT pg_advisory_xact_lock(hashtext('sextant.config'),"
                   " hashtext($1 || '/' || $2))",
                   2, p, NULL, err);
}

int cfg_repo_lock(pg_conn *c, const char *id, sx_arena *a, cfg_record **out, sx_err *err)
{
    *out = NULL;
    int rc = check_id(id, err);
    if (rc)
        return rc;
    const char *p[] = {id};
    return get_one(c,
                   "SELECT " CFG_COLS " FROM configs WHERE id = $1::uuid AND deleted_at IS NULL"
                   " FOR UPDATE",
                   1, p, a, out, id, err);
}

int cfg_repo_set_live(pg_conn *c, const char *id, int version, sx_err *err)
{
    int rows;
    int rc = update_config(c, id,
                           "UPDATE configs SET live_version = $2::int, updated_at = now()"
                           " WHERE id = $1::uuid AND deleted_at IS NULL"
                           "   AND ($2::int IS NULL OR EXISTS (SELECT 1 FROM config_versions v"
                           "     WHERE v.config_id = $1::uuid AND v.version = $2::int))",
                           version, version > 0, &rows, err);
    if (rc == 0 && rows != 1)
        rc = sx_err_set(err, SX_ENOTFOUND, "config %s has no version %d", id, version);
    return rc;
}
