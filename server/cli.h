/*
 * cli.h — what the sextant subcommands share: their parsed options, the exit status of
 * a usage error, loading the configuration with every problem reported, and printing
 * an error the way every subcommand prints one.
 *
 * main.c parses the command line into a cli_opts and runs a subcommand; the ones that
 * need only the domain and storage floors live in their own files (cli_migrate.c,
 * cli_write.c), the ones that need the HTTP floor too (serve, token) stay in main.c,
 * the one file that may include every floor.
 */
#ifndef SX_SERVER_CLI_H
#define SX_SERVER_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"
#include "server/config.h"
#include "storage/pg_pool.h"

/* Exit status of a usage error (unknown command or option, missing argument). */
#define CLI_EXIT_USAGE 2
/* --group may be given at most this many times. */
#define CLI_MAX_GROUPS 64

typedef struct cli_opts {
    const char *config; /* --config FILE, NULL when absent */
    const char *dir;    /* --dir DIR (migrate), NULL when absent */
    bool help;
    /* import, publish */
    const char *file;                   /* --file FILE (publish: the argument) */
    const char *ns;                     /* --namespace NS */
    const char *name;                   /* --name NAME */
    const char *author;                 /* --author WHO */
    const char *message;                /* --message TEXT */
    const char *groups[CLI_MAX_GROUPS]; /* --group G, repeatable */
    size_t group_count;
    /* token */
    const char *user; /* --user U */
    const char *role; /* --role R */
    const char *ttl;  /* --ttl DURATION */
    const char *jti;  /* token revoke: --jti ID (--user and --before also apply) */
    /* token for proxies: --node-pattern P, repeatable (and --group G, above) */
    const char *node_patterns[CLI_MAX_GROUPS];
    size_t node_pattern_count;
    /* audit */
    const char *action; /* verify or archive (the first argument); token: revoke */
    const char *before; /* --before DATE (token revoke: TIME) */
    const char *output; /* --output FILE */
} cli_opts;

/* Loads the configuration (path NULL: the environment only), configures logging from it
 * and logs its warnings. On failure prints every problem, one per line, and returns
 * NULL; the caller frees the result with config_free. */
sextant_config *cli_load_config(const char *path);

/* Prints "sextant: [cmd: ]message" and the error's DETAIL and HINT lines on stderr.
 * cmd NULL: no command prefix. */
void cli_print_err(const char *cmd, const sx_err *err);

/* A pool of one connection to cfg's database for a one-shot command named app (its
 * application_name), with cfg's connect and statement timeouts. */
int cli_db_pool(const sextant_config *cfg, const char *app, pg_pool **pool, sx_err *err);

#endif
