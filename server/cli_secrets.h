/*
 * cli_secrets.h — `sextant rotate-secrets`: reseal every stored private key with the
 * active key of secrets.key_file.
 */
#ifndef SX_SERVER_CLI_SECRETS_H
#define SX_SERVER_CLI_SECRETS_H

#include <stdio.h>

#include "server/cli.h"

/* The command's help text. */
void cli_rotate_secrets_usage(FILE *out);

/* Runs the command with o (config). Returns the exit status: 0 when every stored secret
 * is sealed with the active key, 1 on an error (printed). */
int cli_rotate_secrets(const cli_opts *o);

#endif
