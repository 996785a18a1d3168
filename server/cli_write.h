/*
 * cli_write.h — `sextant import` and `sextant publish`: one write through the same
 * pipeline as the REST API (validation, versions, snapshots, audit, NOTIFY), then exit.
 */
#ifndef SX_SERVER_CLI_WRITE_H
#define SX_SERVER_CLI_WRITE_H

#include <stdio.h>

#include "server/cli.h"

/* The commands' help texts. */
void cli_import_usage(FILE *out);
void cli_publish_usage(FILE *out);

/* Run the command with o. Return the exit status: 0 when written (or unchanged), 1 on
 * invalid input or a database error (printed with every problem), CLI_EXIT_USAGE when a
 * required option is missing. */
int cli_import(const cli_opts *o);
int cli_publish(const cli_opts *o);

#endif
