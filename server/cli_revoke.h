/*
 * cli_revoke.h — `sextant token revoke`: recording a revoked bearer token in PostgreSQL
 * (storage/repo_revocations.h), which every replica then refuses (server/revocations.h).
 */
#ifndef SX_SERVER_CLI_REVOKE_H
#define SX_SERVER_CLI_REVOKE_H

#include <stdio.h>

#include "server/cli.h"

/* The usage of `sextant token revoke`. */
void cli_revoke_usage(FILE *out);

/* Runs `sextant token revoke` with o (--jti, or --user and an optional --before). Exit
 * status: 0 when recorded, 1 on an error, CLI_EXIT_USAGE on a usage error. */
int cli_revoke(const cli_opts *o);

#endif
