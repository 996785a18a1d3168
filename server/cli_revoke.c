/*
 * cli_revoke.c — `sextant token revoke` (see cli_revoke.h).
 *
 * One revocation per run, committed together with the NOTIFY that makes every replica
 * reload its list, so the command returning 0 means every connected replica refuses the
 * token(s) moments later. It prints what was recorded as one JSON line.
 */
#include "server/cli_revoke.h"

#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/log.h"
#include "storage/pg_pool.h"
#include "storage/repo_revocations.h"

void cli_revoke_usage(FILE *out)
{
    fprintf(out, "Usage: sextant token revoke --jti ID [--config FILE]\n"
                 "       sextant token revoke --user NAME [--before TIME] [--config FILE]\n"
                 "\n"
                 "Revokes bearer tokens (REST API and proxy tokens) on every replica: one token\n"
                 "by its \"jti\" claim, or every token of a user (its \"sub\" claim) issued at or\n"
                 "before TIME (its \"iat\" claim; default now; a token without \"iat\" counts as\n"
                 "issued before). The revocation is stored in PostgreSQL and every replica\n"
                 "reloads its list within seconds; it is never lifted. Open xDS streams and\n"
                 "event streams keep running until they end; new ones are refused.\n"
                 "\n"
                 "Options:\n"
                 "  --jti ID             The token id to revoke.\n"
                 "  -u, --user NAME      The user whose tokens to revoke.\n"
                 "  --before TIME        With --user: an RFC 3339 time (2026-01-31T12:00:00Z);\n"
                 "                       tokens issued at or before it are revoked.\n"
                 "  -c, --config FILE    YAML configuration file; database.url is used.\n"
                 "  -h, --help           Print this help.\n"
                 "\n"
                 "Exit status: 0 when the revocation was recorded; 1 on an error; 2 on a usage\n"
                 "error.\n");
}

int cli_revoke(const cli_opts *o)
{
    if ((o->jti == NULL) == (o->user == NULL) || (o->jti && o->before) || o->role || o->ttl ||
        o->node_pattern_count || o->group_count) {
        fprintf(stderr, "sextant: token revoke: give --jti ID, or --user NAME with an optional "
                        "--before TIME\n\n");
        cli_revoke_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    sx_err err;
    sx_err_clear(&err);
    pg_pool *pool = NULL;
    sx_arena *a = sx_arena_create();
    revoke_added added;
    int rc = cli_db_pool(cfg, "sextant-token-revoke", &pool, &err);
    if (rc == 0)
        rc = revoke_repo_add(pool, o->jti, o->user, o->before, a, &added, &err);
    if (rc == 0) {
        json_t *j = json_pack("{s:I}", "id", (json_int_t)added.id);
        if (o->jti)
            json_object_set_new(j, "jti", json_string(o->jti));
        else
            json_object_set_new(j, "user", json_string(o->user));
        if (added.issued_before)
            json_object_set_new(j, "issued_before", json_string(added.issued_before));
        char *text = json_dumps(j, JSON_COMPACT);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    } else {
        cli_print_err("token revoke", &err);
    }
    sx_arena_destroy(a);
    pg_pool_destroy(pool);
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}
