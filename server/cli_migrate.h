/*
 * cli_migrate.h — `sextant migrate`: apply the pending database migrations, then exit.
 */
#ifndef SX_SERVER_CLI_MIGRATE_H
#define SX_SERVER_CLI_MIGRATE_H

#include <stdio.h>

#include "server/cli.h"

/* The command's help text. */
void cli_migrate_usage(FILE *out);

/* Runs the command with o (config, dir). Returns the exit status: 0 when the database is
 * current, 1 on an error (printed). */
int cli_migrate(const cli_opts *o);

#endif
