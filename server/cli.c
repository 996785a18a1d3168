/*
 * cli.c — the helpers every sextant subcommand uses (see cli.h).
 */
#include "server/cli.h"

#include <stdio.h>
#include <unistd.h>

#include "server/base/fielderr.h"
#include "server/base/log.h"
#include "server/events.h"

sextant_config *cli_load_config(const char *path)
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
    sx_log_configure(cfg->log.level, cfg->replica.id);
    events_set_replica(cfg->replica.id);
    for (size_t i = 0; i < cfg->warnings.count; i++)
        SX_WARN("config", "%s: %s", cfg->warnings.items[i].path, cfg->warnings.items[i].message);
    return cfg;
}

void cli_print_err(const char *cmd, const sx_err *err)
{
    fprintf(stderr, "sextant: %s%s%s\n", cmd ? cmd : "", cmd ? ": " : "", err->message);
    if (err->detail[0])
        fprintf(stderr, "DETAIL: %s\n", err->detail);
    if (err->hint[0])
        fprintf(stderr, "HINT: %s\n", err->hint);
}

int cli_db_pool(const sextant_config *cfg, const char *app, pg_pool **pool, sx_err *err)
{
    pg_pool_options po = {.url = cfg->database.url,
                          .size = 1,
                          .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
                          .statement_timeout_ms = (int)cfg->database.statement_timeout_ms,
                          .application_name = app};
    return pg_pool_create(&po, pool, err);
}
