/*
 * cli_write.c — `sextant import` and `sextant publish` (see cli_write.h).
 *
 * Both read a JSON document, open a one-connection pool with the cache and the snapshot
 * repository, make one call into server/apply.h and print its result as JSON; run_write
 * does that frame once and each command supplies the call in the middle.
 */
#include "server/cli_write.h"

#include <stdlib.h>

#include "server/apply.h"
#include "server/base/arena.h"
#include "server/base/fielderr.h"
#include "server/secrets.h"
#include "server/validate/validate.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

void cli_import_usage(FILE *out)
{
    fprintf(out,
            "Usage: sextant import --file FILE --name NAME --group GROUP [--group GROUP...]\n"
            "                      [--namespace NS] [--author WHO] [--message TEXT]\n"
            "                      [--config FILE]\n"
            "\n"
            "Validates FILE (a gateway.control.v1 ConfigSnapshot in JSON) and stores it as\n"
            "the config NS/NAME applied to the given proxy groups: a new config version,\n"
            "a recomposed snapshot for every affected group, an audit entry and a\n"
            "notification to every replica, in one transaction. Importing the same content\n"
            "again writes no new version. Prints the result as JSON.\n"
            "\n"
            "Options:\n"
            "  -f, --file FILE       The configuration (JSON). Required.\n"
            "  -n, --name NAME       Config name. Required.\n"
            "  -g, --group GROUP     Proxy group it applies to; repeat for several. Required.\n"
            "      --namespace NS    Config namespace (default \"default\").\n"
            "      --author WHO      Recorded as the author (default $USER, else \"cli\").\n"
            "  -m, --message TEXT    Change description.\n"
            "  -c, --config FILE     YAML configuration file; database.url and redis.url\n"
            "                        are used. Optional when SEXTANT_DATABASE_URL is set.\n"
            "  -h, --help            Print this help.\n"
            "\n"
            "Exit status: 0 when applied (or unchanged); 1 on invalid configuration or a\n"
            "database error; 2 on a usage error.\n");
}

void cli_publish_usage(FILE *out)
{
    fprintf(out, "Usage: sextant publish --group GROUP [--author WHO] [--message TEXT]\n"
                 "                       [--config FILE] FILE\n"
                 "\n"
                 "Validates FILE (a gateway.control.v1 ConfigSnapshot in JSON) and writes it as\n"
                 "GROUP's next snapshot version, bypassing configs: audited, announced to every\n"
                 "replica (which push it to the group's proxies) and cached in Redis. The same\n"
                 "content as the group's current snapshot writes no new version. Prints the\n"
                 "result as JSON.\n"
                 "\n"
                 "Options:\n"
                 "  -g, --group GROUP     The proxy group. Required.\n"
                 "      --author WHO      Recorded as the author (default $USER, else \"cli\").\n"
                 "  -m, --message TEXT    Why; stored with the snapshot.\n"
                 "  -c, --config FILE     YAML configuration file; database.url and redis.url\n"
                 "                        are used. Optional when SEXTANT_DATABASE_URL is set.\n"
                 "  -h, --help            Print this help.\n"
                 "\n"
                 "Exit status: 0 when published (or unchanged); 1 on an invalid snapshot or a\n"
                 "database error; 2 on a usage error.\n");
}

/* What one write needs and gives back; filled by run_write around a command's call. */
typedef struct write_ctx {
    const cli_opts *o;
    const sextant_config *cfg;
    json_t *spec;        /* the document read from o->file */
    const char *author;  /* --author, else $USER, else "cli" */
    pg_pool *pool;       /* one connection */
    snap_repo *snaps;    /* through the cache */
    sx_arena *arena;     /* per write */
    sx_fielderrs verrs;  /* validation problems of the write */
    val_result problems; /* import's problems by stage, printed after the error */
    json_t *result;      /* the JSON printed on success (owned) */
} write_ctx;

typedef int (*write_fn)(write_ctx *w, sx_err *err);

/* Reads a JSON document for a command, or says where it is malformed. */
/* The whole file in one read-in buffer (free with free), or NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *grown = realloc(buf, cap * 2);
        if (grown == NULL) {
            free(buf);
            buf = NULL;
        }
        buf = grown;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

static json_t *load_json_or_report(const char *cmd, const char *path)
{
    json_error_t jerr;
    /* Parsing from memory is faster than jansson's file reader, which takes a byte at a
     * time; the file reader is left to say why a file cannot be read. */
    size_t len = 0;
    char *text = read_all(path, &len);
    json_t *j = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)
                     : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (j == NULL)
        fprintf(stderr, "sextant: %s: %s:%d:%d: %s\n", cmd, path, jerr.line, jerr.column,
                jerr.text);
    return j;
}

/* Prints a failed write: the message, every validation problem, detail and hint. */
static void report_write_error(const char *cmd, const write_ctx *w, const sx_err *err)
{
    fprintf(stderr, "sextant: %s: %s\n", cmd, err->message);
    for (size_t i = 0; i < w->verrs.count; i++)
        fprintf(stderr, "  %s: %s\n", w->verrs.items[i].path, w->verrs.items[i].message);
    if (w->verrs.count == 0 && err->detail[0])
        fprintf(stderr, "DETAIL: %s\n", err->detail);
    if (err->hint[0])
        fprintf(stderr, "HINT: %s\n", err->hint);
    for (size_t i = 0; i < w->problems.count; i++) {
        const val_problem *p = &w->problems.items[i];
        fprintf(stderr, "  %s: %s [%s]%s%s\n", p->path, p->message, val_stage_name(p->stage),
                p->conflict_with ? " conflicts with " : "",
                p->conflict_with ? p->conflict_with : "");
    }
}

/* The frame of a write command: configuration, document, storage (a one-connection pool,
 * the cache and the snapshot repository), fn, the result or the error, cleanup. */
static int run_write(const char *cmd, const cli_opts *o, write_fn fn)
{
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    json_t *spec = load_json_or_report(cmd, o->file);
    if (spec == NULL) {
        config_free(cfg);
        return 1;
    }
    const char *user = getenv("USER");
    write_ctx w = {
        .o = o,
        .cfg = cfg,
        .spec = spec,
        .author = o->author ? o->author : (user && *user ? user : "cli"),
        .arena = sx_arena_create(),
    };
    char app[64];
    snprintf(app, sizeof(app), "sextant-%s", cmd);
    redis_cache_options ro = {.url = cfg->redis.url,
                              .timeout_ms = (int)cfg->redis.timeout_ms,
                              .key_prefix = cfg->redis.key_prefix};
    redis_cache *cache = NULL;
    sx_keyring *keys = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = cli_db_pool(cfg, app, &w.pool, &err);
    if (rc == 0 && (rc = secrets_attach(cfg, w.pool, &keys, &err)) == 0)
        rc = secrets_check(w.pool, keys, &err);
    if (rc == 0)
        rc = redis_cache_create(&ro, &cache, &err);
    if (rc == 0) {
        w.snaps = snap_repo_create(w.pool, cache);
        rc = fn(&w, &err);
    }
    if (rc == 0) {
        json_dumpf(w.result, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    } else {
        report_write_error(cmd, &w, &err);
    }
    json_decref(w.result);
    val_result_free(&w.problems);
    sx_fielderrs_free(&w.verrs);
    sx_arena_destroy(w.arena);
    snap_repo_destroy(w.snaps);
    redis_cache_destroy(cache);
    pg_pool_destroy(w.pool);
    sx_keyring_free(keys);
    json_decref(spec);
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ import */

static int import_write(write_ctx *w, sx_err *err)
{
    const cli_opts *o = w->o;
    /* The same pipeline as the REST API: a config import cannot sneak past it. */
    val_limits limits = val_limits_from_config(w->cfg);
    apply_request req = {
        .ns = o->ns ? o->ns : "default",
        .name = o->name,
        .groups = o->groups,
        .group_count = o->group_count,
        .spec = w->spec,
        .author = w->author,
        .actor_role = "admin",
        .message = o->message,
        .action = "config.import",
        .limits = &limits,
        .problems = &w->problems,
    };
    apply_result res;
    int rc = apply_config(w->pool, w->snaps, &req, w->arena, &res, &w->verrs, err);
    if (rc != 0)
        return rc;
    json_t *snapshots = json_array();
    for (size_t i = 0; i < res.snapshot_count; i++)
        json_array_append_new(snapshots,
                              json_pack("{s:s,s:I}", "group", res.snapshots[i].group, "version",
                                        (json_int_t)res.snapshots[i].version));
    w->result = json_pack("{s:s,s:s,s:s,s:i,s:b,s:b,s:o}", "config_id", res.config_id, "namespace",
                          req.ns, "name", req.name, "version", res.version, "created", res.created,
                          "changed", res.changed, "snapshots", snapshots);
    return 0;
}

int cli_import(const cli_opts *o)
{
    if (o->file == NULL || o->name == NULL || o->group_count == 0) {
        fprintf(stderr, "sextant: import: --file, --name and at least one --group are required\n");
        return CLI_EXIT_USAGE;
    }
    return run_write("import", o, import_write);
}

/* ------------------------------------------------------------------ publish */

static int publish_write(write_ctx *w, sx_err *err)
{
    apply_publish_request req = {
        .group = w->o->groups[0],
        .spec = w->spec,
        .author = w->author,
        .actor_role = "admin",
        .message = w->o->message,
    };
    long long version = 0;
    int rc = apply_publish(w->pool, w->snaps, &req, w->arena, &version, &w->verrs, err);
    if (rc != 0)
        return rc;
    w->result = json_pack("{s:s,s:b}", "group", req.group, "changed", version > 0);
    if (version > 0)
        json_object_set_new(w->result, "version", json_integer(version));
    return 0;
}

int cli_publish(const cli_opts *o)
{
    if (o->file == NULL || o->group_count != 1) {
        fprintf(stderr, "sextant: publish: a FILE and exactly one --group are required\n");
        return CLI_EXIT_USAGE;
    }
    return run_write("publish", o, publish_write);
}
