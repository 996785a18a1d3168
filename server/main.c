/*
 * main.c — the sextant command line: serve, migrate, import, publish, token, version, help.
 *
 * Exit status: 0 on success (serve: after a clean shutdown), 1 when the configuration
 * is bad, a component fails to start, migrations fail or a component does not stop
 * within shutdown.timeout, 2 on a usage error (unknown command or option). A bad
 * configuration is reported in full (every key at once, one per line) before anything
 * listens.
 *
 * `serve` blocks SIGINT and SIGTERM before anything can start a thread, so that every
 * later thread (libmicrohttpd's, gRPC's) inherits the mask and the main thread alone
 * receives them with sigwait.
 */
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/auth.h"
#include "api/http.h"
#include "api/policy.h"
#include "api/rest.h"
#include "api/static.h"
#include "server/apply.h"
#include "server/base/arena.h"
#include "server/base/buf.h"
#include "server/base/fielderr.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/config.h"
#include "server/datastore.h"
#include "server/server.h"
#include "server/supervisor.h"
#include "server/validate/validate.h"
#include "server/xds/server.h"
#include "storage/migrate.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "0.0.0-dev"
#endif

#define EXIT_USAGE 2

#define MAX_IMPORT_GROUPS 64

typedef struct cli_opts {
    const char *config; /* --config FILE, NULL when absent */
    const char *dir;    /* --dir DIR (migrate), NULL when absent */
    bool help;
    /* import */
    const char *file;                      /* --file FILE */
    const char *ns;                        /* --namespace NS */
    const char *name;                      /* --name NAME */
    const char *author;                    /* --author WHO */
    const char *message;                   /* --message TEXT */
    const char *groups[MAX_IMPORT_GROUPS]; /* --group G, repeatable */
    size_t group_count;
    /* token */
    const char *user; /* --user U */
    const char *role; /* --role R */
    const char *ttl;  /* --ttl DURATION */
} cli_opts;

/* ------------------------------------------------------------------ help texts */

static void usage_main(FILE *out)
{
    fprintf(out, "Usage: sextant COMMAND [OPTIONS]\n"
                 "\n"
                 "Sextant is an xDS control plane for fleets of Envoy proxies.\n"
                 "\n"
                 "Commands:\n"
                 "  serve     Run the control plane: REST API, UI, /healthz, /readyz, /metrics\n"
                 "            and the xDS gRPC server, until SIGTERM or SIGINT.\n"
                 "  migrate   Apply pending database migrations, then exit.\n"
                 "  import    Validate a configuration file and apply it to proxy groups.\n"
                 "  publish   Validate a whole snapshot and publish it to one proxy group.\n"
                 "  token     Mint a JWT for the REST API with the configured signing key.\n"
                 "  version   Print the version, then exit.\n"
                 "  help      Print this help, or `sextant help COMMAND` for a command's.\n"
                 "\n"
                 "Options:\n"
                 "  -h, --help   Print this help.\n"
                 "  --version    Print the version.\n"
                 "\n"
                 "Run `sextant COMMAND --help` for the options of a command. Configuration comes\n"
                 "from a YAML file (--config) and SEXTANT_* environment variables; see\n"
                 "`sextant serve --help` for every key.\n");
}

static void usage_serve(FILE *out, bool full)
{
    fprintf(out, "Usage: sextant serve [--config FILE]\n"
                 "\n"
                 "Runs the control plane until SIGTERM or SIGINT, then stops every component in\n"
                 "reverse start order within shutdown.timeout. /readyz answers 503 until every\n"
                 "component reports ready.\n"
                 "\n"
                 "Options:\n"
                 "  -c, --config FILE   YAML configuration file. Optional when the environment\n"
                 "                      supplies every required key (SEXTANT_DATABASE_URL).\n"
                 "  -h, --help          Print this help.\n"
                 "\n"
                 "Exit status: 0 after a clean shutdown; 1 on a bad configuration, a component\n"
                 "that fails to start or does not stop in time; 2 on a usage error.\n");
    if (!full)
        return;
    sx_buf b = {0};
    config_write_help(&b);
    fprintf(out, "\n%s", sx_buf_cstr(&b));
    sx_buf_free(&b);
}

static void usage_migrate(FILE *out)
{
    fprintf(out,
            "Usage: sextant migrate [--config FILE] [--dir DIR]\n"
            "\n"
            "Applies the pending database migrations in name order, each in its own\n"
            "transaction, under a PostgreSQL advisory lock (so concurrent runs are safe),\n"
            "records them in schema_migrations, then exits. An applied migration whose\n"
            "file has changed is an error.\n"
            "\n"
            "Options:\n"
            "  -c, --config FILE   YAML configuration file; only database.url is used.\n"
            "                      Optional when SEXTANT_DATABASE_URL is set.\n"
            "  -d, --dir DIR       Apply the *.sql files of DIR instead of the migrations\n"
            "                      built into the binary.\n"
            "  -h, --help          Print this help.\n"
            "\n"
            "Exit status: 0 when the database is current; 1 on an error; 2 on a usage error.\n");
}

static void usage_import(FILE *out)
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

static void usage_publish(FILE *out)
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

static void usage_token(FILE *out)
{
    fprintf(out, "Usage: sextant token --user USER --role ROLE [--ttl DURATION] [--config FILE]\n"
                 "\n"
                 "Mints a JWT bearer token for the REST API and prints it on standard output,\n"
                 "for bootstrap and automation: send it as \"Authorization: Bearer TOKEN\".\n"
                 "It is signed with RS256 when auth.rs256_private_key_file is set, else with\n"
                 "HS256 and auth.hs256_secret (or auth.hs256_secret_file), and carries\n"
                 "auth.issuer and auth.audience when they are set. The database is not used.\n"
                 "\n"
                 "Options:\n"
                 "  -u, --user USER       The token's subject (\"sub\"), recorded in the audit\n"
                 "                        log. Required.\n"
                 "  -r, --role ROLE       admin, operator or viewer, or any role defined by\n"
                 "                        auth.policy_file. Required.\n"
                 "  -t, --ttl DURATION    Lifetime, such as 15m, 1h or 720h (default 1h, at\n"
                 "                        most 366 days).\n"
                 "  -c, --config FILE     YAML configuration file; the auth.* keys are used.\n"
                 "  -h, --help            Print this help.\n"
                 "\n"
                 "Exit status: 0 when a token was printed; 1 on a bad configuration, an unknown\n"
                 "role or no signing key; 2 on a usage error.\n");
}

static void usage_version(FILE *out)
{
    fprintf(out, "Usage: sextant version\n\nPrints the version and exits.\n\n"
                 "Options:\n  -h, --help   Print this help.\n");
}

/* ------------------------------------------------------------------ option parsing */

/* Matches the import options ("--name X" or "--name=X"); --group maps to groups[0],
 * which parse_opts treats as "append". */
static bool import_slot(cli_opts *o, const char *a, const char ***slot, const char **value)
{
    static const struct {
        const char *shrt, *lng;
        size_t off;
    } opts[] = {
        {"-f", "--file", offsetof(cli_opts, file)},
        {"-n", "--name", offsetof(cli_opts, name)},
        {NULL, "--namespace", offsetof(cli_opts, ns)},
        {NULL, "--author", offsetof(cli_opts, author)},
        {"-m", "--message", offsetof(cli_opts, message)},
        {"-g", "--group", offsetof(cli_opts, groups)},
    };
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        size_t n = strlen(opts[i].lng);
        const char **target = (const char **)((char *)o + opts[i].off);
        if ((opts[i].shrt && strcmp(a, opts[i].shrt) == 0) || strcmp(a, opts[i].lng) == 0) {
            *slot = target;
            return true;
        }
        if (strncmp(a, opts[i].lng, n) == 0 && a[n] == '=') {
            *slot = target;
            *value = a + n + 1;
            return true;
        }
    }
    return false;
}

/* Matches the token options ("--user X" or "--user=X"). */
static bool token_slot(cli_opts *o, const char *a, const char ***slot, const char **value)
{
    static const struct {
        const char *shrt, *lng;
        size_t off;
    } opts[] = {
        {"-u", "--user", offsetof(cli_opts, user)},
        {"-r", "--role", offsetof(cli_opts, role)},
        {"-t", "--ttl", offsetof(cli_opts, ttl)},
    };
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        size_t n = strlen(opts[i].lng);
        const char **target = (const char **)((char *)o + opts[i].off);
        if (strcmp(a, opts[i].shrt) == 0 || strcmp(a, opts[i].lng) == 0) {
            *slot = target;
            return true;
        }
        if (strncmp(a, opts[i].lng, n) == 0 && a[n] == '=') {
            *slot = target;
            *value = a + n + 1;
            return true;
        }
    }
    return false;
}

/* Parses argv[first..argc) for a command. Returns 0, or EXIT_USAGE after printing why. */
static int parse_opts(const char *cmd, int argc, char **argv, int first, bool takes_config,
                      bool takes_dir, cli_opts *o)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        const char *value = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
            continue;
        }
        if (takes_config && (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0)) {
            slot = &o->config;
        } else if (takes_config && strncmp(a, "--config=", 9) == 0) {
            slot = &o->config;
            value = a + 9;
        } else if (takes_dir && (strcmp(a, "-d") == 0 || strcmp(a, "--dir") == 0)) {
            slot = &o->dir;
        } else if (takes_dir && strncmp(a, "--dir=", 6) == 0) {
            slot = &o->dir;
            value = a + 6;
        } else if ((strcmp(cmd, "import") == 0 || strcmp(cmd, "publish") == 0) &&
                   import_slot(o, a, &slot, &value)) {
            /* slot (and value, for --opt=value) set by import_slot */
        } else if (strcmp(cmd, "token") == 0 && token_slot(o, a, &slot, &value)) {
            /* slot (and value, for --opt=value) set by token_slot */
        } else if (strcmp(cmd, "publish") == 0 && a[0] != '-' && o->file == NULL) {
            o->file = a;
            continue;
        } else {
            fprintf(stderr, "sextant: %s: %s '%s'\n", cmd,
                    a[0] == '-' ? "unknown option" : "unexpected argument", a);
            return EXIT_USAGE;
        }
        if (value == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sextant: %s: option %s needs a value\n", cmd, a);
                return EXIT_USAGE;
            }
            value = argv[++i];
        }
        if (*value == '\0') {
            fprintf(stderr, "sextant: %s: option %s needs a non-empty value\n", cmd, a);
            return EXIT_USAGE;
        }
        if (slot == &o->groups[0]) {
            if (o->group_count == MAX_IMPORT_GROUPS) {
                fprintf(stderr, "sextant: %s: at most %d groups\n", cmd, MAX_IMPORT_GROUPS);
                return EXIT_USAGE;
            }
            o->groups[o->group_count++] = value;
            continue;
        }
        *slot = value;
    }
    return 0;
}

/* Loads the configuration or prints every problem; returns NULL on failure. */
static sextant_config *load_config_or_report(const char *path)
{
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    if (config_load(path, environ, &cfg, &errs) != 0) {
        for (size_t i = 0; i < errs.count; i++) {
            if (errs.items[i].path[0])
                fprintf(stderr, "sextant: config: %s: %s\n", errs.items[i].path,
                        errs.items[i].message);
            else
                fprintf(stderr, "sextant: config: %s\n", errs.items[i].message);
        }
        fprintf(stderr, "sextant: %zu configuration error%s; nothing was started\n", errs.count,
                errs.count == 1 ? "" : "s");
        sx_fielderrs_free(&errs);
        return NULL;
    }
    sx_fielderrs_free(&errs);
    return cfg;
}

static void log_config_warnings(const sextant_config *cfg)
{
    for (size_t i = 0; i < cfg->warnings.count; i++)
        SX_WARN("config", "%s: %s", cfg->warnings.items[i].path, cfg->warnings.items[i].message);
}

/* ------------------------------------------------------------------ migrate */

/* The one call into storage/migrate for `sextant migrate`. */
static int run_migrations(const char *database_url, const char *dir_or_null, sx_err *err)
{
    int applied = 0;
    int rc = migrate_run(database_url, dir_or_null, &applied, err);
    if (rc == 0)
        sx_log_fields(SX_LOG_INFO, "migrate", json_pack("{s:i}", "applied", applied),
                      applied ? "applied %d migration%s" : "database is up to date", applied,
                      applied == 1 ? "" : "s");
    return rc;
}

static int cmd_migrate(const cli_opts *o)
{
    sextant_config *cfg = load_config_or_report(o->config);
    if (cfg == NULL)
        return 1;
    sx_log_configure(cfg->log.level, cfg->replica.id);
    log_config_warnings(cfg);
    sx_err err;
    sx_err_clear(&err);
    int rc = run_migrations(cfg->database.url, o->dir, &err);
    if (rc != 0) {
        sx_log_err(SX_LOG_ERROR, "migrate", &err);
        fprintf(stderr, "sextant: migrate: %s\n", err.message);
        if (err.detail[0])
            fprintf(stderr, "DETAIL: %s\n", err.detail);
        if (err.hint[0])
            fprintf(stderr, "HINT: %s\n", err.hint);
    }
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ import, publish */

/* A one-connection pool, the cache and the snapshot repository for a command that
 * writes once and exits. On failure what was created is left for close_storage. */
static int open_storage(const sextant_config *cfg, const char *app, pg_pool **pool,
                        redis_cache **cache, snap_repo **snaps, sx_err *err)
{
    pg_pool_options po = {.url = cfg->database.url,
                          .size = 1,
                          .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
                          .statement_timeout_ms = (int)cfg->database.statement_timeout_ms,
                          .application_name = app};
    redis_cache_options ro = {.url = cfg->redis.url,
                              .timeout_ms = (int)cfg->redis.timeout_ms,
                              .key_prefix = cfg->redis.key_prefix};
    int rc = pg_pool_create(&po, pool, err);
    if (rc == 0)
        rc = redis_cache_create(&ro, cache, err);
    if (rc == 0)
        *snaps = snap_repo_create(*pool, *cache);
    return rc;
}

static void close_storage(pg_pool *pool, redis_cache *cache, snap_repo *snaps)
{
    snap_repo_destroy(snaps);
    redis_cache_destroy(cache);
    pg_pool_destroy(pool);
}

/* Prints a failed write: the message, every validation problem, detail and hint. */
static void report_write_error(const char *cmd, const sx_err *err, const sx_fielderrs *verrs)
{
    fprintf(stderr, "sextant: %s: %s\n", cmd, err->message);
    for (size_t i = 0; i < verrs->count; i++)
        fprintf(stderr, "  %s: %s\n", verrs->items[i].path, verrs->items[i].message);
    if (verrs->count == 0 && err->detail[0])
        fprintf(stderr, "DETAIL: %s\n", err->detail);
    if (err->hint[0])
        fprintf(stderr, "HINT: %s\n", err->hint);
}

/* Reads a JSON document for a command, or says where it is malformed. */
static json_t *load_json_or_report(const char *cmd, const char *path)
{
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (j == NULL)
        fprintf(stderr, "sextant: %s: %s:%d:%d: %s\n", cmd, path, jerr.line, jerr.column,
                jerr.text);
    return j;
}

static int cmd_import(const cli_opts *o)
{
    if (o->file == NULL || o->name == NULL || o->group_count == 0) {
        fprintf(stderr, "sextant: import: --file, --name and at least one --group are required\n");
        return EXIT_USAGE;
    }
    sextant_config *cfg = load_config_or_report(o->config);
    if (cfg == NULL)
        return 1;
    sx_log_configure(cfg->log.level, cfg->replica.id);
    log_config_warnings(cfg);

    json_t *spec = load_json_or_report("import", o->file);
    if (spec == NULL) {
        config_free(cfg);
        return 1;
    }

    sx_err err;
    sx_err_clear(&err);
    pg_pool *pool = NULL;
    redis_cache *cache = NULL;
    snap_repo *snaps = NULL;
    int rc = open_storage(cfg, "sextant-import", &pool, &cache, &snaps, &err);

    const char *user = getenv("USER");
    apply_request req = {
        .ns = o->ns ? o->ns : "default",
        .name = o->name,
        .groups = o->groups,
        .group_count = o->group_count,
        .spec = spec,
        .author = o->author ? o->author : (user && *user ? user : "cli"),
        .actor_role = "admin",
        .message = o->message,
        .action = "config.import",
    };
    /* The same pipeline as the REST API: a config import cannot sneak past it. */
    val_limits limits = val_limits_from_config(cfg);
    val_result problems = {0};
    req.limits = &limits;
    req.problems = &problems;
    sx_arena *a = sx_arena_create();
    apply_result res;
    sx_fielderrs verrs = {0};
    if (rc == 0)
        rc = apply_config(pool, snaps, &req, a, &res, &verrs, &err);
    if (rc == 0) {
        json_t *snapshots = json_array();
        for (size_t i = 0; i < res.snapshot_count; i++)
            json_array_append_new(snapshots,
                                  json_pack("{s:s,s:I}", "group", res.snapshots[i].group, "version",
                                            (json_int_t)res.snapshots[i].version));
        json_t *out =
            json_pack("{s:s,s:s,s:s,s:i,s:b,s:b,s:o}", "config_id", res.config_id, "namespace",
                      req.ns, "name", req.name, "version", res.version, "created", res.created,
                      "changed", res.changed, "snapshots", snapshots);
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        json_decref(out);
    } else {
        report_write_error("import", &err, &verrs);
        for (size_t i = 0; i < problems.count; i++) {
            const val_problem *p = &problems.items[i];
            fprintf(stderr, "  %s: %s [%s]%s%s\n", p->path, p->message, val_stage_name(p->stage),
                    p->conflict_with ? " conflicts with " : "",
                    p->conflict_with ? p->conflict_with : "");
        }
    }
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
    sx_arena_destroy(a);
    close_storage(pool, cache, snaps);
    json_decref(spec);
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}

static int cmd_publish(const cli_opts *o)
{
    if (o->file == NULL || o->group_count != 1) {
        fprintf(stderr, "sextant: publish: a FILE and exactly one --group are required\n");
        return EXIT_USAGE;
    }
    sextant_config *cfg = load_config_or_report(o->config);
    if (cfg == NULL)
        return 1;
    sx_log_configure(cfg->log.level, cfg->replica.id);
    log_config_warnings(cfg);
    json_t *spec = load_json_or_report("publish", o->file);
    if (spec == NULL) {
        config_free(cfg);
        return 1;
    }
    sx_err err;
    sx_err_clear(&err);
    pg_pool *pool = NULL;
    redis_cache *cache = NULL;
    snap_repo *snaps = NULL;
    int rc = open_storage(cfg, "sextant-publish", &pool, &cache, &snaps, &err);
    const char *user = getenv("USER");
    apply_publish_request req = {
        .group = o->groups[0],
        .spec = spec,
        .author = o->author ? o->author : (user && *user ? user : "cli"),
        .actor_role = "admin",
        .message = o->message,
    };
    sx_arena *a = sx_arena_create();
    sx_fielderrs verrs = {0};
    long long version = 0;
    if (rc == 0)
        rc = apply_publish(pool, snaps, &req, a, &version, &verrs, &err);
    if (rc == 0) {
        json_t *out = json_pack("{s:s,s:b}", "group", req.group, "changed", version > 0);
        if (version > 0)
            json_object_set_new(out, "version", json_integer(version));
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        json_decref(out);
    } else {
        report_write_error("publish", &err, &verrs);
    }
    sx_fielderrs_free(&verrs);
    sx_arena_destroy(a);
    close_storage(pool, cache, snaps);
    json_decref(spec);
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ token */

/* `token` never connects to the database, so database.url is not required for it: when
 * the environment does not set SEXTANT_DATABASE_URL, a placeholder is added to the
 * environment handed to the loader (a database.url in the file is then overridden,
 * which changes nothing here). The returned array is freed with sx_free. */
static char **token_environment(void)
{
    size_t n = 0;
    bool has_db = false;
    for (; environ[n]; n++)
        has_db = has_db || strncmp(environ[n], "SEXTANT_DATABASE_URL=", 21) == 0;
    char **envp = sx_calloc(n + 2, sizeof(char *));
    memcpy(envp, environ, n * sizeof(char *));
    if (!has_db)
        envp[n] = "SEXTANT_DATABASE_URL=postgresql:///unused-by-sextant-token";
    return envp;
}

static int cmd_token(const cli_opts *o)
{
    if (o->user == NULL || o->role == NULL) {
        fprintf(stderr, "sextant: token: --user and --role are required\n");
        return EXIT_USAGE;
    }
    int64_t ttl_ms = 3600 * 1000;
    char why[256];
    if (o->ttl && config_parse_duration(o->ttl, &ttl_ms, why, sizeof(why)) != 0) {
        fprintf(stderr, "sextant: token: invalid --ttl \"%s\": %s\n", o->ttl, why);
        return EXIT_USAGE;
    }
    if (ttl_ms < 1000 || ttl_ms % 1000 != 0) {
        fprintf(stderr, "sextant: token: --ttl must be a whole number of seconds, at least 1s\n");
        return EXIT_USAGE;
    }

    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    char **envp = token_environment();
    int rc = config_load(o->config, envp, &cfg, &errs);
    sx_free(envp);
    if (rc != 0) {
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "sextant: config: %s: %s\n", errs.items[i].path, errs.items[i].message);
        sx_fielderrs_free(&errs);
        return 1;
    }
    sx_fielderrs_free(&errs);
    sx_log_configure(cfg->log.level, cfg->replica.id);

    /* A role the policy does not know would only ever get 403s: refuse it now. */
    sx_err err;
    sx_err_clear(&err);
    policy *pol = NULL;
    if (cfg->auth.policy_file) {
        if (policy_load_file(cfg->auth.policy_file, &pol, NULL, &err) != 0) {
            fprintf(stderr, "sextant: token: auth.policy_file: %s\n", err.message);
            if (err.detail[0])
                fprintf(stderr, "DETAIL: %s\n", err.detail);
            config_free(cfg);
            return 1;
        }
    } else {
        pol = policy_builtin();
    }
    int status = 0;
    if (!policy_has_role(pol, o->role)) {
        char roles[256];
        fprintf(stderr, "sextant: token: role \"%s\" is not defined by the RBAC policy (%s)\n",
                o->role, policy_role_names(pol, roles, sizeof(roles)));
        status = 1;
    } else {
        char *token = NULL;
        if (auth_mint(cfg, o->user, o->role, ttl_ms / 1000, &token, &err) != 0) {
            fprintf(stderr, "sextant: token: %s\n", err.message);
            if (err.hint[0])
                fprintf(stderr, "HINT: %s\n", err.hint);
            status = 1;
        } else {
            printf("%s\n", token);
            sx_free(token);
        }
    }
    policy_free(pol);
    config_free(cfg);
    return status;
}

/* ------------------------------------------------------------------ serve */

/*
 * The one place the storage components (database pool, migrations check, Redis cache,
 * LISTEN/NOTIFY listener, snapshot store) are created, stored in srv's storage fields and
 * registered with srv->sup, after "http" so that /healthz answers while they connect.
 * Each reports ready through sup_set_ready (or its probe) once its dependency is
 * reachable, which opens /readyz.
 */
static int register_storage_components(struct sx_server *srv, xds_server **xds, sx_err *err)
{
    int rc = datastore_register(srv, err);
    return rc != 0 ? rc : xds_server_register(srv, xds, err);
}

static void log_started(const struct sx_server *srv)
{
    const sextant_config *cfg = srv->config;
    char db[512], redis[512];
    sx_redact_url(cfg->database.url, db, sizeof(db));
    sx_redact_url(cfg->redis.url, redis, sizeof(redis));
    json_t *f = json_pack("{s:s,s:i,s:s,s:i,s:s,s:s,s:s,s:b}", "version", SEXTANT_VERSION, "pid",
                          (int)getpid(), "http_listen", cfg->http.listen.text, "http_port",
                          http_bound_port(srv->http), "grpc_listen", cfg->grpc.listen.text,
                          "database_url", db, "redis_url", cfg->redis.url[0] ? redis : "disabled",
                          "http_tls", cfg->http.tls.cert_file != NULL);
    json_object_set_new(f, "config_file",
                        cfg->source_file ? json_string(cfg->source_file) : json_null());
    sx_log_fields(SX_LOG_INFO, "main", f, "sextant started");
    sx_log_fields(SX_LOG_DEBUG, "main", json_pack("{s:o}", "config", config_dump_json(cfg)),
                  "effective configuration");
}

static int cmd_serve(const cli_opts *o)
{
    sx_err err;
    sx_err_clear(&err);
    if (sup_block_signals(&err) != 0) {
        fprintf(stderr, "sextant: %s\n", err.message);
        return 1;
    }
    sextant_config *cfg = load_config_or_report(o->config);
    if (cfg == NULL)
        return 1;
    sx_log_configure(cfg->log.level, cfg->replica.id);
    log_config_warnings(cfg);

    struct sx_server *srv = NULL;
    if (sx_server_create(cfg, &srv, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        return 1;
    }
    if (sup_register(srv->sup, "http", &http_sup_ops, srv->http, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        sx_server_destroy(srv);
        return 1;
    }
    xds_server *xds = NULL;
    if (register_storage_components(srv, &xds, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        fprintf(stderr, "sextant: %s\n", err.message);
        sx_server_destroy(srv);
        return 1;
    }
    /* The REST API needs the storage components (audit rows of refusals, handlers), and
     * its routes must be in the router before the HTTP server starts. */
    rest_api *api = NULL;
    static_ui *ui = NULL;
    if (rest_create(srv, &api, &err) != 0 || rest_register_all(api, &err) != 0 ||
        static_ui_create(cfg, srv->http, &ui, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        fprintf(stderr, "sextant: %s\n", err.message);
        if (err.detail[0])
            fprintf(stderr, "DETAIL: %s\n", err.detail);
        if (err.hint[0])
            fprintf(stderr, "HINT: %s\n", err.hint);
        rest_destroy(api);
        xds_server_destroy(xds);
        datastore_release(srv);
        sx_server_destroy(srv);
        return 1;
    }

    int status = 0;
    if (sup_start_all(srv->sup, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        fprintf(stderr, "sextant: %s\n", err.message);
        status = 1;
    } else {
        log_started(srv);
        int sig = sup_wait_for_signal(srv->sup);
        sx_log_fields(SX_LOG_INFO, "main",
                      json_pack("{s:s,s:I}", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
                                "shutdown_timeout_ms", (json_int_t)cfg->shutdown.timeout_ms),
                      "received %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }

    if (sup_stop_all(srv->sup) != 0) {
        /* An abandoned component may still be using srv: free nothing, run no atexit
         * handlers, just leave. */
        sx_log_fields(SX_LOG_ERROR, "main", json_pack("{s:i}", "exit_code", 1),
                      "sextant stopped: a component did not stop in time");
        _exit(1);
    }
    sx_log_fields(SX_LOG_INFO, "main", json_pack("{s:i}", "exit_code", status), "sextant stopped");
    static_ui_destroy(ui);
    rest_destroy(api);
    xds_server_destroy(xds);
    datastore_release(srv);
    sx_server_destroy(srv);
    return status;
}

/* ------------------------------------------------------------------ main */

/* serve's usage with or without the key table, as the other commands' signature. */
static void usage_serve_short(FILE *out)
{
    usage_serve(out, false);
}

static void usage_serve_full(FILE *out)
{
    usage_serve(out, true);
}

static int cmd_version(const cli_opts *o)
{
    (void)o;
    printf("sextant %s\n", SEXTANT_VERSION);
    return 0;
}

/* Every subcommand: its name, the options it takes, its help (short form after a
 * usage error, full form for --help) and what it runs. */
static const struct command {
    const char *name;
    bool takes_config;
    bool takes_dir;
    void (*usage)(FILE *out);
    void (*help)(FILE *out);
    int (*run)(const cli_opts *o);
} commands[] = {
    {"serve", true, false, usage_serve_short, usage_serve_full, cmd_serve},
    {"migrate", true, true, usage_migrate, usage_migrate, cmd_migrate},
    {"import", true, false, usage_import, usage_import, cmd_import},
    {"publish", true, false, usage_publish, usage_publish, cmd_publish},
    {"token", true, false, usage_token, usage_token, cmd_token},
    {"version", false, false, usage_version, usage_version, cmd_version},
};

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage_main(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage_main(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0)
        return cmd_version(NULL);
    if (strcmp(cmd, "help") == 0) {
        const char *topic = argc > 2 ? argv[2] : NULL;
        const struct command *c = topic ? find_command(topic) : NULL;
        if (topic == NULL) {
            usage_main(stdout);
        } else if (c) {
            c->help(stdout);
        } else {
            fprintf(stderr, "sextant: help: unknown command '%s'\n\n", topic);
            usage_main(stderr);
            return EXIT_USAGE;
        }
        return 0;
    }
    const struct command *c = find_command(cmd);
    if (c == NULL) {
        fprintf(stderr, "sextant: unknown %s '%s'\n\n", cmd[0] == '-' ? "option" : "command", cmd);
        usage_main(stderr);
        return EXIT_USAGE;
    }
    cli_opts o = {0};
    if (parse_opts(cmd, argc, argv, 2, c->takes_config, c->takes_dir, &o) != 0) {
        fputc('\n', stderr);
        c->usage(stderr);
        return EXIT_USAGE;
    }
    if (o.help) {
        c->help(stdout);
        return 0;
    }
    return c->run(&o);
}
