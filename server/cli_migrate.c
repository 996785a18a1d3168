/*
 * cli_migrate.c — `sextant migrate` (see cli_migrate.h).
 *
 * The work is storage/migrate's: every pending file in name order, each in its own
 * transaction, under an advisory lock so that concurrent runs are safe.
 */
#include "server/cli_migrate.h"

#include "server/base/log.h"
#include "server/cli_audit.h"
#include "storage/audit_chain.h"
#include "storage/migrate.h"

void cli_migrate_usage(FILE *out)
{
    fprintf(out,
            "Usage: sextant migrate [--config FILE] [--dir DIR]\n"
            "\n"
            "Applies the pending database migrations in name order, each in its own\n"
            "transaction, under a PostgreSQL advisory lock (so concurrent runs are safe),\n"
            "records them in schema_migrations, then exits. An applied migration whose\n"
            "file has changed is an error. It connects as the schema owner\n"
            "(database.migrate_url, else database.url) and then grants the runtime role\n"
            "(database.runtime_role, default sextant_app; created NOLOGIN when missing)\n"
            "what serve needs: audit rows it may insert and read, never change.\n"
            "\n"
            "Options:\n"
            "  -c, --config FILE   YAML configuration file; the database.* keys are used.\n"
            "                      Optional when SEXTANT_DATABASE_URL is set.\n"
            "  -d, --dir DIR       Apply the *.sql files of DIR instead of the migrations\n"
            "                      built into the binary.\n"
            "  -h, --help          Print this help.\n"
            "\n"
            "Exit status: 0 when the database is current; 1 on an error; 2 on a usage error.\n");
}

/* Grants the runtime role its rights, on a connection of the owner's. */
static int grant_runtime(const sextant_config *cfg, const char *url, sx_err *err)
{
    pg_pool *pool = NULL;
    pg_conn *c = NULL;
    bool granted = false;
    int rc = cli_audit_connect(cfg, url, "sextant-migrate", &pool, &c, err);
    if (rc == 0)
        rc = audit_chain_grant_runtime(c, cfg->database.runtime_role, &granted, err);
    if (rc == 0 && granted)
        sx_log_fields(SX_LOG_INFO, "migrate",
                      json_pack("{s:s}", "runtime_role", cfg->database.runtime_role),
                      "granted the runtime role %s its rights", cfg->database.runtime_role);
    else if (rc != 0)
        sx_err_prefix(err, "could not grant the runtime role %s", cfg->database.runtime_role);
    cli_audit_disconnect(pool, c);
    return rc;
}

int cli_migrate(const cli_opts *o)
{
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    sx_err err;
    sx_err_clear(&err);
    int applied = 0;
    const char *url = cfg->database.migrate_url ? cfg->database.migrate_url : cfg->database.url;
    int rc = migrate_run(url, o->dir, &applied, &err);
    if (rc == 0 && cfg->database.runtime_role)
        rc = grant_runtime(cfg, url, &err);
    if (rc == 0) {
        sx_log_fields(SX_LOG_INFO, "migrate", json_pack("{s:i}", "applied", applied),
                      applied ? "applied %d migration%s" : "database is up to date", applied,
                      applied == 1 ? "" : "s");
    } else {
        sx_log_err(SX_LOG_ERROR, "migrate", &err);
        cli_print_err("migrate", &err);
    }
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}
