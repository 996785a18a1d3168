/*
 * managed_config.c — a test tool that writes as the Kubernetes source does: it calls
 * changes_put_managed or changes_delete_managed (server/changes.h) against the database
 * and Redis the environment names (SEXTANT_DATABASE_URL, SEXTANT_REDIS_URL, ... read by
 * the daemon's own configuration loader), so a test script can give a running
 * `sextant serve` a config of source kubernetes without an API server and a controller.
 *
 *   managed_config put NAMESPACE NAME GROUP[,GROUP...] SOURCE_REF SPEC_FILE
 *   managed_config delete NAMESPACE NAME
 *   managed_config status KIND NAMESPACE NAME GENERATION STATUS_FILE
 *
 * status stores an object's status as the controller does once it wrote it to the
 * cluster (server/k8s/status_store.h: linked to the Gateways it names), so the REST API
 * and the web UI show it; it prints {"stored": true}.
 *
 * Prints one JSON line: {"config_id", "version", "created", "changed", "snapshots"} on
 * success (exit 0); {"error": {"code", "message", "details"}} on failure (exit 1, the
 * problems of a refused spec in details); usage errors exit 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/changes.h"
#include "server/config.h"
#include "server/k8s/status_store.h"
#include "server/server.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

extern char **environ;

static int usage(void)
{
    fprintf(stderr, "usage: managed_config put NAMESPACE NAME GROUP[,GROUP...] SOURCE_REF "
                    "SPEC_FILE\n       managed_config delete NAMESPACE NAME\n"
                    "       managed_config status KIND NAMESPACE NAME GENERATION STATUS_FILE\n");
    return 2;
}

static int fail(int rc, const sx_err *err, json_t *details)
{
    json_t *e = json_pack("{s:{s:s,s:s,s:o}}", "error", "code", sx_code_name(rc), "message",
                          err->message, "details", details ? details : json_array());
    char *text = json_dumps(e, JSON_COMPACT);
    printf("%s\n", text);
    free(text);
    json_decref(e);
    return 1;
}

static int done(const apply_result *r)
{
    json_t *snaps = json_array();
    for (size_t i = 0; i < r->snapshot_count; i++)
        json_array_append_new(snaps, json_pack("{s:s,s:I}", "group", r->snapshots[i].group,
                                               "version", (json_int_t)r->snapshots[i].version));
    json_t *o =
        json_pack("{s:s?,s:i,s:b,s:b,s:o}", "config_id", r->config_id, "version", r->version,
                  "created", r->created, "changed", r->changed, "snapshots", snaps);
    char *text = json_dumps(o, JSON_COMPACT);
    printf("%s\n", text);
    free(text);
    json_decref(o);
    return 0;
}

/* GROUP[,GROUP...] into an array in a. */
static size_t split_groups(sx_arena *a, const char *list, const char ***out)
{
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    const char **g = sx_arena_alloc(a, n * sizeof(*g));
    char *copy = sx_arena_strdup(a, list);
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        g[k++] = t;
    *out = g;
    return k;
}

/* managed_config status KIND NAMESPACE NAME GENERATION STATUS_FILE */
static int store_status(struct sx_server *srv, char **argv)
{
    gw_kind kind = GW_KIND_COUNT;
    for (int k = 0; k < GW_KIND_COUNT; k++)
        if (strcmp(gw_kind_name((gw_kind)k), argv[2]) == 0)
            kind = (gw_kind)k;
    json_error_t je;
    json_t *status = json_load_file(argv[6], 0, &je);
    if (kind == GW_KIND_COUNT || status == NULL) {
        fprintf(stderr, "managed_config: %s\n", status ? "unknown kind" : je.text);
        json_decref(status);
        return 2;
    }
    gw_status_out s = {.kind = kind,
                       .ns = argv[3],
                       .name = argv[4],
                       .generation = strtoll(argv[5], NULL, 10),
                       .status = status};
    sx_err err;
    sx_err_clear(&err);
    int rc = k8s_sstore_put(srv, srv->config->k8s.controller_name, &s, &err);
    json_decref(status);
    if (rc)
        return fail(rc, &err, NULL);
    printf("{\"stored\":true}\n");
    return 0;
}

static int run(struct sx_server *srv, int argc, char **argv)
{
    if (strcmp(argv[1], "status") == 0)
        return argc == 7 ? store_status(srv, argv) : usage();
    sx_arena *a = sx_arena_create();
    apply_result r;
    sx_fielderrs verrs = {0};
    val_result problems = {0};
    sx_err err;
    sx_err_clear(&err);
    int rc;
    if (strcmp(argv[1], "put") == 0 && argc == 7) {
        json_error_t je;
        json_t *spec = json_load_file(argv[6], 0, &je);
        if (spec == NULL) {
            fprintf(stderr, "managed_config: %s: %s\n", argv[6], je.text);
            sx_arena_destroy(a);
            return 2;
        }
        const char **groups;
        size_t n = split_groups(a, argv[4], &groups);
        changes_managed m = {argv[2], argv[3], groups, n, spec, argv[5], NULL};
        rc = changes_put_managed(srv, &m, a, &r, &problems, &verrs, &err);
        json_decref(spec);
    } else if (strcmp(argv[1], "delete") == 0 && argc == 4) {
        rc = changes_delete_managed(srv, argv[2], argv[3], NULL, a, &r, &verrs, &err);
    } else {
        sx_arena_destroy(a);
        return usage();
    }
    int status =
        rc ? fail(rc, &err, changes_problems_json(&problems, &verrs, "compose")) : done(&r);
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
    sx_arena_destroy(a);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    if (config_load(NULL, environ, &cfg, &errs) != 0) {
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "managed_config: %s: %s\n", errs.items[i].path, errs.items[i].message);
        sx_fielderrs_free(&errs);
        return 2;
    }
    sx_fielderrs_free(&errs);
    struct sx_server *srv = NULL;
    sx_err err;
    if (sx_server_create(cfg, &srv, &err) != 0) {
        fprintf(stderr, "managed_config: %s\n", err.message);
        return 2;
    }
    pg_pool_options po = {
        .url = cfg->database.url,
        .size = 1,
        .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
        .application_name = "managed_config",
    };
    redis_cache_options ro = {
        .url = cfg->redis.url,
        .timeout_ms = (int)cfg->redis.timeout_ms,
        .key_prefix = cfg->redis.key_prefix,
    };
    int status = 2;
    if (pg_pool_create(&po, &srv->db, &err) != 0 ||
        redis_cache_create(&ro, &srv->cache, &err) != 0) {
        fprintf(stderr, "managed_config: %s\n", err.message);
    } else {
        srv->snap_repo = snap_repo_create(srv->db, srv->cache);
        status = run(srv, argc, argv);
    }
    snap_repo_destroy(srv->snap_repo);
    redis_cache_destroy(srv->cache);
    pg_pool_destroy(srv->db);
    srv->snap_repo = NULL;
    srv->cache = NULL;
    srv->db = NULL;
    sx_server_destroy(srv);
    return status;
}
