/*
 * cli_audit.h — `sextant audit verify` and `sextant audit archive`: check the audit
 * log's hash chains, and export and detach old months of it.
 */
#ifndef SX_SERVER_CLI_AUDIT_H
#define SX_SERVER_CLI_AUDIT_H

#include <stdio.h>

#include "server/cli.h"
#include "storage/pg_pool.h"

/* The command's help text. */
void cli_audit_usage(FILE *out);

/* Runs `audit ACTION` with o (config, action, before, output). Returns the exit status:
 * 0 when verify found every chain whole or archive succeeded; 1 on a broken chain or
 * an error (printed); 2 on a usage error. */
int cli_audit(const cli_opts *o);

/* A one-connection pool on url (application_name app) and its connection, for the
 * commands that run a few statements and exit; undone by cli_audit_disconnect. On
 * failure both are NULL. */
int cli_audit_connect(const sextant_config *cfg, const char *url, const char *app, pg_pool **pool,
                      pg_conn **c, sx_err *err) SX_MUSTCHECK;
void cli_audit_disconnect(pg_pool *pool, pg_conn *c);

#endif
