/*
 * cli_audit.c — `sextant audit verify|archive` (see cli_audit.h).
 *
 * verify reads as any role that may read the audit log (database.url); archive
 * detaches partitions, which only the owner may, so it connects with
 * database.migrate_url like migrate. The work is storage/audit_chain's.
 */
#include "server/cli_audit.h"

#include <errno.h>
#include <string.h>

#include "server/base/log.h"
#include "storage/audit_chain.h"

void cli_audit_usage(FILE *out)
{
    fprintf(out, "Usage: sextant audit verify [--config FILE]\n"
                 "       sextant audit archive --before DATE [--output FILE] [--config FILE]\n"
                 "\n"
                 "verify walks every writer's hash chain of the audit log (each replica writes\n"
                 "its own): no sequence number missing, every row's hash matching its contents\n"
                 "and linking to the previous row, each writer's head naming its last row. It\n"
                 "prints the first broken or missing row of each broken chain. Connects with\n"
                 "database.url.\n"
                 "\n"
                 "archive exports every month of the audit log wholly before DATE (and before\n"
                 "the current month), oldest first, as JSON lines with the chain heads, checks\n"
                 "its chains, records where each chain goes on and detaches the month's\n"
                 "partition (left as table audit_log_YYYY_MM for the owner to drop). Runs as\n"
                 "the owner: database.migrate_url, else database.url.\n"
                 "\n"
                 "Options:\n"
                 "  -c, --config FILE   YAML configuration file; the database.* keys are used.\n"
                 "                      Optional when SEXTANT_DATABASE_URL is set.\n"
                 "  -b, --before DATE   archive: a date or RFC 3339 time; months ending at or\n"
                 "                      before it are archived.\n"
                 "  -o, --output FILE   archive: where the JSON lines go (appended to); default\n"
                 "                      standard output.\n"
                 "  -h, --help          Print this help.\n"
                 "\n"
                 "Exit status: 0 when every chain is whole (verify) or the archive is written\n"
                 "and detached; 1 on a broken chain or an error; 2 on a usage error.\n");
}

int cli_audit_connect(const sextant_config *cfg, const char *url, const char *app, pg_pool **pool,
                      pg_conn **c, sx_err *err)
{
    *pool = NULL;
    *c = NULL;
    pg_pool_options po = {.url = url,
                          .size = 1,
                          .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
                          .statement_timeout_ms = 0,
                          .application_name = app};
    int rc = pg_pool_create(&po, pool, err);
    if (rc == 0 && (rc = pg_acquire(*pool, c, err)) != 0) {
        pg_pool_destroy(*pool);
        *pool = NULL;
    }
    return rc;
}

void cli_audit_disconnect(pg_pool *pool, pg_conn *c)
{
    if (pool == NULL)
        return;
    if (c)
        pg_release(pool, c);
    pg_pool_destroy(pool);
}

static int run_verify(const sextant_config *cfg)
{
    pg_pool *pool;
    pg_conn *c;
    sx_err err;
    sx_err_clear(&err);
    audit_chain_report rep;
    int rc = cli_audit_connect(cfg, cfg->database.url, "sextant-audit", &pool, &c, &err);
    if (rc == 0)
        rc = audit_chain_verify(c, &rep, &err);
    cli_audit_disconnect(pool, c);
    if (rc) {
        cli_print_err("audit verify", &err);
        return 1;
    }
    for (int i = 0; i < rep.problems; i++)
        printf("broken: %s\n", rep.problem[i]);
    if (rep.more_problems)
        printf("broken: and %d more\n", rep.more_problems);
    if (rep.problems) {
        printf("audit log NOT verified: %d broken chain%s of %lld (%lld rows read)\n",
               rep.problems + rep.more_problems, rep.problems + rep.more_problems == 1 ? "" : "s",
               rep.chains, rep.rows);
        return 1;
    }
    printf("audit log verified: %lld row%s in %lld chain%s\n", rep.rows, rep.rows == 1 ? "" : "s",
           rep.chains, rep.chains == 1 ? "" : "s");
    return 0;
}

static int run_archive(const sextant_config *cfg, const cli_opts *o)
{
    FILE *out = stdout;
    if (o->output && strcmp(o->output, "-") != 0 && (out = fopen(o->output, "a")) == NULL) {
        fprintf(stderr, "sextant: audit archive: could not open %s: %s\n", o->output,
                strerror(errno));
        return 1;
    }
    const char *url = cfg->database.migrate_url ? cfg->database.migrate_url : cfg->database.url;
    pg_pool *pool;
    pg_conn *c;
    sx_err err;
    sx_err_clear(&err);
    audit_archive_report rep = {0};
    int rc = cli_audit_connect(cfg, url, "sextant-audit", &pool, &c, &err);
    if (rc == 0)
        rc = audit_chain_archive(c, o->before, out, &rep, &err);
    cli_audit_disconnect(pool, c);
    if (out != stdout && fclose(out) != 0 && rc == 0)
        rc = sx_err_set(&err, SX_EIO, "could not write %s: %s", o->output, strerror(errno));
    json_t *f = json_pack("{s:i,s:I,s:s,s:s}", "partitions", rep.partitions, "rows",
                          (json_int_t)rep.rows, "first", rep.first, "last", rep.last);
    if (rc) {
        sx_log_fields(SX_LOG_ERROR, "audit", f, "archived %d month%s before failing: %s",
                      rep.partitions, rep.partitions == 1 ? "" : "s", err.message);
        cli_print_err("audit archive", &err);
        return 1;
    }
    sx_log_fields(SX_LOG_INFO, "audit", f,
                  rep.partitions ? "archived and detached %d month%s of the audit log"
                                 : "no month of the audit log to archive",
                  rep.partitions, rep.partitions == 1 ? "" : "s");
    return 0;
}

int cli_audit(const cli_opts *o)
{
    if (o->action == NULL || (strcmp(o->action, "verify") != 0 && strcmp(o->action, "archive"))) {
        fprintf(stderr, "sextant: audit: %s\n\n",
                o->action ? "unknown action (verify or archive)" : "verify or archive?");
        cli_audit_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    bool archive = strcmp(o->action, "archive") == 0;
    if (archive != (o->before != NULL) || (!archive && o->output)) {
        fprintf(stderr, "sextant: audit: %s\n\n",
                archive ? "archive needs --before DATE" : "verify takes no --before or --output");
        cli_audit_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    int status = archive ? run_archive(cfg, o) : run_verify(cfg);
    config_free(cfg);
    return status;
}
