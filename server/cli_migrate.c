/*
 * cli_migrate.c — `sextant migrate` (see cli_migrate.h).
 *
 * The work is storage/migrate's: every pending file in name order, each in its own
 * transaction, under an advisory lock so that concurrent runs are safe.
 */
#include "server/cli_migrate.h"

#include "server/base/log.h"
#include "storage/migrate.h"

void cli_migrate_usage(FILE *out)
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

int cli_migrate(const cli_opts *o)
{
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    sx_err err;
    sx_err_clear(&err);
    int applied = 0;
    int rc = migrate_run(cfg->database.url, o->dir, &applied, &err);
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
