/*
 * main.c — the sextant command line, and the composition root of the daemon.
 *
 * Subcommands: serve, migrate, import, publish, token, version, help. `serve` builds the
 * whole daemon here, in one sequence (build_daemon): every component is created into the
 * one server struct (server/server.h) and registered with the supervisor, which starts
 * them in that order and stops them in reverse; free_daemon frees them in reverse. This
 * is the one file that knows every floor (api/, server/, storage/); the subcommands that
 * need only the lower floors live in cli_migrate.c and cli_write.c.
 *
 * Exit status: 0 on success (serve: after a clean shutdown), 1 when the configuration
 * is bad, a component fails to start, migrations fail or a component does not stop
 * within shutdown.timeout, 2 on a usage error (unknown command or option). A bad
 * configuration is reported in full (every key at once, one per line) before anything
 * listens.
 *
 * `serve` blocks SIGINT and SIGTERM before anything can start a thread, so that every
 * later thread (libmicrohttpd's, gRPC's) inherits the mask and the main thread alone
 * receives them with sigwait.
 */
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/auth.h"
#include "api/http.h"
#include "api/policy.h"
#include "api/rest.h"
#include "api/static.h"
#include "server/base/buf.h"
#include "server/base/fielderr.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/certs.h"
#include "server/certs_managed.h"
#include "server/cli.h"
#include "server/cli_audit.h"
#include "server/cli_migrate.h"
#include "server/cli_revoke.h"
#include "server/cli_secrets.h"
#include "server/cli_write.h"
#include "server/config.h"
#include "server/datastore.h"
#include "server/events.h"
#include "server/events_feed.h"
#include "server/alerts.h"
#include "server/fleet.h"
#include "server/k8s/controller.h"
#include "server/leader.h"
#include "server/nodes/status.h"
#include "server/replicas.h"
#include "server/revocations.h"
#include "server/rollout/driver.h"
#include "server/secrets.h"
#include "server/server.h"
#include "server/snapshot/loader.h"
#include "server/snapshot/store.h"
#include "server/supervisor.h"
#include "server/xds/identity.h"
#include "server/xds/server.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/redis_bucket.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "0.0.0-dev"
#endif

/* ------------------------------------------------------------------ help texts */

static void usage_main(FILE *out)
{
    fprintf(out, "Usage: sextant COMMAND [OPTIONS]\n"
                 "\n"
                 "Sextant is an xDS control plane for fleets of Envoy proxies.\n"
                 "\n"
                 "Commands:\n"
                 "  serve     Run the control plane: REST API, UI, /healthz, /readyz, /metrics\n"
                 "            and the xDS gRPC server, until SIGTERM or SIGINT.\n"
                 "  migrate   Apply pending database migrations, then exit.\n"
                 "  import    Validate a configuration file and apply it to proxy groups.\n"
                 "  publish   Validate a whole snapshot and publish it to one proxy group.\n"
                 "  token     Mint a JWT for the REST API, or for proxies (--node-pattern),\n"
                 "            with the configured signing key; `token revoke` revokes tokens.\n"
                 "  rotate-secrets  Reseal every stored private key with the active key.\n"
                 "  audit     Verify the audit log's hash chains, or archive old months of it.\n"
                 "  version   Print the version, then exit.\n"
                 "  help      Print this help, or `sextant help COMMAND` for a command's.\n"
                 "\n"
                 "Options:\n"
                 "  -h, --help   Print this help.\n"
                 "  --version    Print the version.\n"
                 "\n"
                 "Run `sextant COMMAND --help` for the options of a command. Configuration comes\n"
                 "from a YAML file (--config) and SEXTANT_* environment variables; see\n"
                 "`sextant serve --help` for every key.\n");
}

static void usage_serve(FILE *out, bool full)
{
    fprintf(out, "Usage: sextant serve [--config FILE]\n"
                 "\n"
                 "Runs the control plane until SIGTERM or SIGINT, then stops every component in\n"
                 "reverse start order within shutdown.timeout. /readyz answers 503 until every\n"
                 "component reports ready.\n"
                 "\n"
                 "Options:\n"
                 "  -c, --config FILE   YAML configuration file. Optional when the environment\n"
                 "                      supplies every required key (SEXTANT_DATABASE_URL).\n"
                 "  -h, --help          Print this help.\n"
                 "\n"
                 "Exit status: 0 after a clean shutdown; 1 on a bad configuration, a component\n"
                 "that fails to start or does not stop in time; 2 on a usage error.\n");
    if (!full)
        return;
    sx_buf b = {0};
    config_write_help(&b);
    fprintf(out, "\n%s", sx_buf_cstr(&b));
    sx_buf_free(&b);
}

static void usage_token(FILE *out)
{
    fprintf(out, "Usage: sextant token --user USER --role ROLE [--ttl DURATION] [--config FILE]\n"
                 "       sextant token --node-pattern P... [--group G...] [--user SUBJECT]\n"
                 "                     [--ttl DURATION] [--config FILE]\n"
                 "       sextant token revoke --jti ID | --user NAME [--before TIME]\n"
                 "\n"
                 "Mints a JWT bearer token for the REST API and prints it on standard output,\n"
                 "for bootstrap and automation: send it as \"Authorization: Bearer TOKEN\".\n"
                 "With --node-pattern it mints a proxy token instead, for xds.auth jwt: sent\n"
                 "as the gRPC \"authorization\" metadata (\"Bearer TOKEN\"), it lets an xDS\n"
                 "client speak for the node ids that match a pattern (* is any run of\n"
                 "characters), in the proxy groups that match a --group pattern (any group\n"
                 "without one). Its subject is --user, by default \"proxies:\", the patterns\n"
                 "and \"@\" and the groups: only a stream of the same subject may replace a\n"
                 "node's stream.\n"
                 "It is signed with RS256 when auth.rs256_private_key_file is set, else with\n"
                 "HS256 and auth.hs256_secret (or auth.hs256_secret_file), and carries\n"
                 "auth.issuer and auth.audience when they are set. The database is not used.\n"
                 "\n"
                 "Options:\n"
                 "  -u, --user USER       The token's subject (\"sub\"), recorded in the audit\n"
                 "                        log. Required for a REST API token.\n"
                 "  -r, --role ROLE       admin, operator or viewer, or any role defined by\n"
                 "                        auth.policy_file. Required for a REST API token.\n"
                 "  -t, --ttl DURATION    Lifetime, such as 15m, 1h or 12h (default 1h, at\n"
                 "                        most auth.max_token_lifetime, 24h by default).\n"
                 "  -p, --node-pattern P  A node id pattern of a proxy token; repeatable.\n"
                 "  -g, --group G         A proxy group pattern of a proxy token; repeatable.\n"
                 "  -c, --config FILE     YAML configuration file; the auth.* keys are used.\n"
                 "  -h, --help            Print this help.\n"
                 "\n"
                 "`sextant token revoke` revokes tokens on every replica (see\n"
                 "`sextant token revoke --help`).\n"
                 "\n"
                 "Exit status: 0 when a token was printed; 1 on a bad configuration, an unknown\n"
                 "role or no signing key; 2 on a usage error.\n");
}

static void usage_version(FILE *out)
{
    fprintf(out, "Usage: sextant version\n\nPrints the version and exits.\n\n"
                 "Options:\n  -h, --help   Print this help.\n");
}

/* ------------------------------------------------------------------ option parsing */

/* Every option: the commands that take it (space-separated), its short and long form and
 * where its value goes. --group is repeatable: its slot is the groups array. */
static const struct cli_option {
    const char *cmds;
    const char *shrt, *lng;
    size_t off;
} options[] = {
    {"serve migrate import publish token rotate-secrets audit", "-c", "--config",
     offsetof(cli_opts, config)},
    {"migrate", "-d", "--dir", offsetof(cli_opts, dir)},
    {"import publish", "-f", "--file", offsetof(cli_opts, file)},
    {"import publish", "-n", "--name", offsetof(cli_opts, name)},
    {"import publish", NULL, "--namespace", offsetof(cli_opts, ns)},
    {"import publish", NULL, "--author", offsetof(cli_opts, author)},
    {"import publish", "-m", "--message", offsetof(cli_opts, message)},
    {"import publish token", "-g", "--group", offsetof(cli_opts, groups)},
    {"token", "-u", "--user", offsetof(cli_opts, user)},
    {"token", "-r", "--role", offsetof(cli_opts, role)},
    {"token", "-t", "--ttl", offsetof(cli_opts, ttl)},
    {"token", "-p", "--node-pattern", offsetof(cli_opts, node_patterns)},
    {"audit token", "-b", "--before", offsetof(cli_opts, before)},
    {"token", NULL, "--jti", offsetof(cli_opts, jti)},
    {"audit", "-o", "--output", offsetof(cli_opts, output)},
};

/* Whether the space-separated list cmds names cmd. */
static bool names(const char *cmds, const char *cmd)
{
    size_t n = strlen(cmd);
    for (const char *p = cmds; (p = strstr(p, cmd)) != NULL; p += n)
        if ((p == cmds || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* Matches a of cmd ("--name X" or "--name=X"): sets *slot, and *value for the = form. */
static bool option_slot(const char *cmd, cli_opts *o, const char *a, const char ***slot,
                        const char **value)
{
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
        if (!names(options[i].cmds, cmd))
            continue;
        size_t n = strlen(options[i].lng);
        const char **target = (const char **)((char *)o + options[i].off);
        if ((options[i].shrt && strcmp(a, options[i].shrt) == 0) ||
            strcmp(a, options[i].lng) == 0) {
            *slot = target;
            return true;
        }
        if (strncmp(a, options[i].lng, n) == 0 && a[n] == '=') {
            *slot = target;
            *value = a + n + 1;
            return true;
        }
    }
    return false;
}

/* Parses argv[first..argc) for a command. Returns 0, or CLI_EXIT_USAGE after printing why. */
/* Adds value to a repeatable option's list (CLI_MAX_GROUPS entries); false, said on
 * stderr, when the list is full. */
static bool add_repeated(const char *cmd, const char *what, const char **list, size_t *count,
                         const char *value)
{
    if (*count == CLI_MAX_GROUPS) {
        fprintf(stderr, "sextant: %s: at most %d %s\n", cmd, CLI_MAX_GROUPS, what);
        return false;
    }
    list[(*count)++] = value;
    return true;
}

static int parse_opts(const char *cmd, int argc, char **argv, int first, cli_opts *o)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        const char *value = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
            continue;
        }
        if (option_slot(cmd, o, a, &slot, &value)) {
            /* slot (and value, for --opt=value) set */
        } else if (strcmp(cmd, "publish") == 0 && a[0] != '-' && o->file == NULL) {
            o->file = a;
            continue;
        } else if ((strcmp(cmd, "audit") == 0 || strcmp(cmd, "token") == 0) && a[0] != '-' &&
                   o->action == NULL) {
            o->action = a;
            continue;
        } else {
            fprintf(stderr, "sextant: %s: %s '%s'\n", cmd,
                    a[0] == '-' ? "unknown option" : "unexpected argument", a);
            return CLI_EXIT_USAGE;
        }
        if (value == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sextant: %s: option %s needs a value\n", cmd, a);
                return CLI_EXIT_USAGE;
            }
            value = argv[++i];
        }
        if (*value == '\0') {
            fprintf(stderr, "sextant: %s: option %s needs a non-empty value\n", cmd, a);
            return CLI_EXIT_USAGE;
        }
        if (slot == &o->groups[0] || slot == &o->node_patterns[0]) {
            bool groups = slot == &o->groups[0];
            if (!add_repeated(cmd, groups ? "groups" : "node patterns", slot,
                              groups ? &o->group_count : &o->node_pattern_count, value))
                return CLI_EXIT_USAGE;
            continue;
        }
        *slot = value;
    }
    return 0;
}

/* ------------------------------------------------------------------ token */

/* `token` never connects to the database, so database.url is not required for it: when
 * the environment does not set SEXTANT_DATABASE_URL, a placeholder is added to the
 * environment handed to the loader (a database.url in the file is then overridden,
 * which changes nothing here). The returned array is freed with sx_free. */
static char **token_environment(void)
{
    size_t n = 0;
    bool has_db = false;
    for (; environ[n]; n++)
        has_db = has_db || strncmp(environ[n], "SEXTANT_DATABASE_URL=", 21) == 0;
    char **envp = sx_calloc(n + 2, sizeof(char *));
    memcpy(envp, environ, n * sizeof(char *));
    if (!has_db)
        envp[n] = "SEXTANT_DATABASE_URL=postgresql:///unused-by-sextant-token";
    return envp;
}

/* A proxy token (--node-pattern): the node ids and groups it may speak for on xDS. */
static int mint_proxy_token(const cli_opts *o, const sextant_config *cfg, int64_t ttl_s)
{
    char subject[256];
    if (o->user) {
        snprintf(subject, sizeof(subject), "%s", o->user);
    } else {
        /* Tokens of the same patterns share the subject, so they are one identity: a
         * proxy reconnecting with a newly minted token replaces its own stream. */
        size_t len = (size_t)snprintf(subject, sizeof(subject), "proxies:");
        for (size_t i = 0; i < o->node_pattern_count && len < sizeof(subject); i++)
            len += (size_t)snprintf(subject + len, sizeof(subject) - len, "%s%s", i ? "," : "",
                                    o->node_patterns[i]);
        for (size_t i = 0; i < o->group_count && len < sizeof(subject); i++)
            len += (size_t)snprintf(subject + len, sizeof(subject) - len, "%s%s", i ? "," : "@",
                                    o->groups[i]);
    }
    sx_err err;
    sx_err_clear(&err);
    char *token = NULL;
    if (xds_ident_mint(cfg, subject, o->node_patterns, o->node_pattern_count, o->groups,
                       o->group_count, ttl_s, &token, &err) != 0) {
        cli_print_err("token", &err);
        return 1;
    }
    printf("%s\n", token);
    sx_free(token);
    return 0;
}

static int cmd_token(const cli_opts *o)
{
    if (o->action && strcmp(o->action, "revoke") == 0)
        return cli_revoke(o);
    if (o->action || o->jti || o->before) {
        fprintf(stderr, "sextant: token: %s\n",
                o->action ? "the only subcommand is revoke"
                          : "--jti and --before are options of `sextant token revoke`");
        return CLI_EXIT_USAGE;
    }
    bool proxy = o->node_pattern_count > 0;
    if (proxy && o->role) {
        fprintf(stderr, "sextant: token: --role is for REST API tokens; a proxy token "
                        "(--node-pattern) has no role\n");
        return CLI_EXIT_USAGE;
    }
    if (!proxy && o->group_count > 0) {
        fprintf(stderr, "sextant: token: --group limits a proxy token: it needs --node-pattern\n");
        return CLI_EXIT_USAGE;
    }
    if (!proxy && (o->user == NULL || o->role == NULL)) {
        fprintf(stderr, "sextant: token: --user and --role are required (or --node-pattern "
                        "for a proxy token)\n");
        return CLI_EXIT_USAGE;
    }
    int64_t ttl_ms = 3600 * 1000;
    char why[256];
    if (o->ttl && config_parse_duration(o->ttl, &ttl_ms, why, sizeof(why)) != 0) {
        fprintf(stderr, "sextant: token: invalid --ttl \"%s\": %s\n", o->ttl, why);
        return CLI_EXIT_USAGE;
    }
    if (ttl_ms < 1000 || ttl_ms % 1000 != 0) {
        fprintf(stderr, "sextant: token: --ttl must be a whole number of seconds, at least 1s\n");
        return CLI_EXIT_USAGE;
    }

    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    char **envp = token_environment();
    int rc = config_load(o->config, envp, &cfg, &errs);
    sx_free(envp);
    if (rc != 0) {
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "sextant: config: %s: %s\n", errs.items[i].path, errs.items[i].message);
        sx_fielderrs_free(&errs);
        return 1;
    }
    sx_fielderrs_free(&errs);
    sx_log_configure(cfg->log.level, cfg->replica.id);
    if (proxy) {
        int st = mint_proxy_token(o, cfg, ttl_ms / 1000);
        config_free(cfg);
        return st;
    }

    /* A role the policy does not know would only ever get 403s: refuse it now. */
    sx_err err;
    sx_err_clear(&err);
    policy *pol = NULL;
    if (cfg->auth.policy_file) {
        if (policy_load_file(cfg->auth.policy_file, &pol, NULL, &err) != 0) {
            fprintf(stderr, "sextant: token: auth.policy_file: %s\n", err.message);
            if (err.detail[0])
                fprintf(stderr, "DETAIL: %s\n", err.detail);
            config_free(cfg);
            return 1;
        }
    } else {
        pol = policy_builtin();
    }
    int status = 0;
    if (!policy_has_role(pol, o->role)) {
        char roles[256];
        fprintf(stderr, "sextant: token: role \"%s\" is not defined by the RBAC policy (%s)\n",
                o->role, policy_role_names(pol, roles, sizeof(roles)));
        status = 1;
    } else {
        char *token = NULL;
        if (auth_mint(cfg, o->user, o->role, ttl_ms / 1000, &token, &err) != 0) {
            fprintf(stderr, "sextant: token: %s\n", err.message);
            if (err.hint[0])
                fprintf(stderr, "HINT: %s\n", err.hint);
            status = 1;
        } else {
            printf("%s\n", token);
            sx_free(token);
        }
    }
    policy_free(pol);
    config_free(cfg);
    return status;
}

/* ------------------------------------------------------------------ serve */

/* The LISTEN connection as the supervised component "listener" (storage/ knows nothing
 * of the supervisor). */
static int listener_start(void *ctx, sx_err *err)
{
    return pg_listener_start(ctx, err);
}

static void listener_stop(void *ctx)
{
    pg_listener_stop(ctx);
}

static bool listener_ready(void *ctx)
{
    return pg_listener_connected(ctx);
}

static const sup_ops listener_sup_ops = {listener_start, listener_stop, listener_ready};

/* The component "freshness": no group known to be behind the database for long (the
 * snapshot loader's periodic check). In /readyz, not in the xDS gate. */
static bool freshness_ready(void *ctx)
{
    return snap_loader_fresh(ctx);
}

static const sup_ops freshness_sup_ops = {NULL, NULL, freshness_ready};

/* The storage objects: the pool, the cache and the listener. */
static int create_storage(struct sx_server *srv, sx_err *err)
{
    const sextant_config *cfg = srv->config;
    pg_link_options ko = {
        .backoff_min_ms = (int)cfg->database.reconnect_backoff_min_ms,
        .backoff_max_ms = (int)cfg->database.reconnect_backoff_max_ms,
        .metrics = srv->metrics,
    };
    srv->db_link = pg_link_create(&ko);
    pg_pool_options po = {
        .url = cfg->database.url,
        .size = (int)cfg->database.pool_size,
        .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
        .statement_timeout_ms = (int)cfg->database.statement_timeout_ms,
        .prepared_statements = cfg->database.prepared_statements,
        .application_name = cfg->replica.id,
        .metrics = srv->metrics,
        .link = srv->db_link,
    };
    redis_cache_options ro = {
        .url = cfg->redis.url,
        .timeout_ms = (int)cfg->redis.timeout_ms,
        .key_prefix = cfg->redis.key_prefix,
        .metrics = srv->metrics,
        .backoff_min_ms = (int)cfg->redis.reconnect_backoff_min_ms,
        .backoff_max_ms = (int)cfg->redis.reconnect_backoff_max_ms,
    };
    redis_bucket_options bo = {
        .url = cfg->redis.url,
        .timeout_ms = (int)cfg->ratelimit.redis_timeout_ms,
        .key_prefix = cfg->redis.key_prefix,
    };
    /* LISTEN needs a session of its own: through a pooler in transaction mode it would
     * not survive the transaction, hence database.listen_url. */
    pg_listener_options lo = {
        .url = cfg->database.listen_url ? cfg->database.listen_url : cfg->database.url,
        .application_name = "sextant-listener",
        .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
        .metrics = srv->metrics,
        .link = srv->db_link,
    };
    int rc;
    if ((rc = pg_pool_create(&po, &srv->db, err)) != 0 ||
        (rc = secrets_attach(cfg, srv->db, &srv->secrets, err)) != 0 ||
        (rc = redis_cache_create(&ro, &srv->cache, err)) != 0 ||
        (rc = redis_bucket_create(&bo, &srv->limits, err)) != 0 ||
        (rc = pg_listener_create(&lo, &srv->listener, err)) != 0)
        return rc;
    return 0;
}

/* The snapshot store and its loader, which takes every snapshot fetch off the LISTEN
 * thread. */
static int create_snapshots(struct sx_server *srv, sx_err *err)
{
    const sextant_config *cfg = srv->config;
    srv->snap_repo = snap_repo_create(srv->db, srv->cache);
    srv->snapshots = snap_store_create(srv->snap_repo, srv->metrics);
    snap_loader_options o = {
        .store = srv->snapshots,
        .listener = srv->listener,
        .database_ready = datastore_ready,
        .database_ctx = srv->datastore,
        .metrics = srv->metrics,
        .link = srv->db_link,
        .check_interval_ms = cfg->snapshots.check_interval_ms,
    };
    return snap_loader_create(&o, &srv->loader, err);
}

/* Node status from the streams, and the reader of the live events. */
static int create_nodes_and_events(struct sx_server *srv, sx_err *err)
{
    const sextant_config *cfg = srv->config;
    node_status_options no = {
        .pool = srv->db,
        .replica_id = cfg->replica.id,
        .flush_interval_ms = (int)cfg->nodes.flush_interval_ms,
        .max_pending = (int)cfg->nodes.max_pending,
        .metrics = srv->metrics,
    };
    events_feed_options eo = {
        .pool = srv->db,
        .keepalive_ms = (int)cfg->events.keepalive_ms,
        .check_interval_ms = (int)cfg->snapshots.check_interval_ms,
        .max_streams = (int)cfg->events.max_streams,
        .max_streams_per_user = (int)cfg->events.max_streams_per_user,
        .metrics = srv->metrics,
        .link = srv->db_link,
    };
    int rc;
    if ((rc = node_status_create(&no, &srv->nodes, err)) != 0 ||
        (rc = events_feed_create(&eo, &srv->events, err)) != 0)
        return rc;
    /* The feed's callbacks only wake its own thread, so they stay on the listener's. */
    return pg_listener_subscribe(srv->listener, EVENTS_NOTIFY_CHANNEL, events_feed_on_notify,
                                 events_feed_on_resync, srv->events, err);
}

/* The leader election every replica takes part in, and this replica's heartbeat in the
 * replicas table (which says who leads). Before every component that subscribes to the
 * leader: the fleet sweep and the Kubernetes source. */
static int create_leader(struct sx_server *srv, sx_err *err)
{
    const sextant_config *cfg = srv->config;
    /* A session-level advisory lock, like LISTEN, needs a session of its own. */
    leader_options lo = {.url = cfg->database.listen_url ? cfg->database.listen_url
                                                         : cfg->database.url,
                         .replica = cfg->replica.id,
                         .retry_ms = (int)cfg->leader.retry_ms,
                         .lease_ms = (int)cfg->leader.lease_ms,
                         .check_ms = (int)cfg->leader.check_ms,
                         .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
                         .metrics = srv->metrics,
                         .sup = srv->sup};
    srv->leader = leader_create(&lo);
    srv->replicas = replicas_create(srv);
    int rc;
    if ((rc = sup_register(srv->sup, "leader", &sup_thread_ops, leader_component(srv->leader),
                           err)) != 0)
        return rc;
    return sup_register(srv->sup, "replicas", &sup_thread_ops, replicas_component(srv->replicas),
                        err);
}

/* The Gateway API source, which writes under the leader (k8s.enabled only). */
static int create_kubernetes(struct sx_server *srv, sx_err *err)
{
    if (!srv->config->k8s.enabled)
        return 0;
    int rc = k8s_ctl_create(srv, srv->leader, &srv->k8s, err);
    if (rc != 0)
        return rc;
    return sup_register(srv->sup, "kubernetes", &sup_thread_ops, k8s_ctl_component(srv->k8s), err);
}

/* Managed TLS (tls.managed only): the serving certificate from the database, renewed by
 * the leader; before "xds", which cannot start without a certificate. */
static int create_managed_tls(struct sx_server *srv, sx_err *err)
{
    int rc = certs_managed_create(srv, &srv->tls_managed, err);
    if (rc != 0 || srv->tls_managed == NULL)
        return rc;
    return sup_register(srv->sup, "tls_managed", &certs_managed_sup_ops, srv->tls_managed, err);
}

/* SIGHUP, on the main thread: reload the certificates. */
static void on_sighup(void *ctx)
{
    struct sx_server *srv = ctx;
    certs_reload(srv->certs);
}

/*
 * The daemon, in one sequence: each component is created into srv and registered with
 * the supervisor, which starts them in this order (and stops them in reverse). "http"
 * comes first so that /healthz answers while the others connect; every other component
 * reports ready once its dependency is reachable, which opens /readyz. On failure what
 * was created is left in srv for free_daemon.
 */
static int build_daemon(struct sx_server *srv, sx_err *err)
{
    const sextant_config *cfg = srv->config;
    sup_supervisor *sup = srv->sup;
    int rc;
    /* The certificates are read before anything listens, so a bad one stops the start. */
    certs_options co = {.config = cfg, .metrics = srv->metrics, .sup = sup};
    if ((rc = certs_create(&co, &srv->certs, err)) != 0)
        return rc;
    sup_on_sighup(sup, on_sighup, srv);
    srv->http = http_create(cfg, srv->metrics, sup);
    http_set_certs(srv->http, srv->certs);
    if ((rc = sup_register(sup, "http", &http_sup_ops, srv->http, err)) != 0 ||
        (rc = sup_register(sup, "certs", &sup_thread_ops, certs_component(srv->certs), err)) != 0 ||
        (rc = create_storage(srv, err)) != 0)
        return rc;
    srv->datastore = datastore_create(srv->db, srv->db_link, sup);
    if ((rc = sup_register(sup, "database", &sup_thread_ops, datastore_component(srv->datastore),
                           err)) != 0 ||
        (rc = sup_register(sup, "listener", &listener_sup_ops, srv->listener, err)) != 0 ||
        (rc = create_snapshots(srv, err)) != 0 ||
        (rc = revocations_create(srv->db, srv->loader, &srv->revocations, err)) != 0 ||
        (rc = sup_register(sup, "snapshots", &sup_thread_ops, snap_loader_component(srv->loader),
                           err)) != 0 ||
        (rc = sup_register(sup, "freshness", &freshness_sup_ops, srv->loader, err)) != 0 ||
        (rc = create_nodes_and_events(srv, err)) != 0 ||
        (rc = sup_register(sup, "events", &sup_thread_ops, events_feed_component(srv->events),
                           err)) != 0 ||
        (rc = create_leader(srv, err)) != 0 || (rc = create_managed_tls(srv, err)) != 0)
        return rc;
    srv->fleet = fleet_create(srv);
    srv->alerts = alerts_create(srv);
    srv->rollouts = rollout_driver_create(srv);
    if ((rc = sup_register(sup, "fleet", &sup_thread_ops, fleet_component(srv->fleet), err)) != 0 ||
        (rc = alerts_register(srv->alerts, err)) != 0 ||
        (rc = rollout_driver_register(srv->rollouts, err)) != 0 ||
        (rc = xds_server_register(srv, &srv->xds, err)) != 0 ||
        (rc = sup_gate_xds(sup, "snapshots", err)) != 0 ||
        (rc = sup_gate_xds(sup, "xds", err)) != 0 || (rc = create_kubernetes(srv, err)) != 0)
        return rc;
    /* The REST API needs the storage components (audit rows of refusals, handlers), and
     * its routes must be in the router before the HTTP server starts. */
    if ((rc = rest_create(srv, &srv->api, err)) != 0 ||
        (rc = rest_register_all(srv->api, err)) != 0 ||
        (rc = static_ui_create(cfg, srv->http, &srv->ui, err)) != 0)
        return rc;
    return 0;
}

/* Frees what build_daemon created, in reverse, once sup_stop_all has returned 0 (or
 * when nothing was started). Every pointer is NULL-safe and set to NULL. */
static void free_daemon(struct sx_server *srv)
{
    static_ui_destroy(srv->ui);
    srv->ui = NULL;
    rest_destroy(srv->api);
    srv->api = NULL;
    k8s_ctl_destroy(srv->k8s);
    srv->k8s = NULL;
    xds_server_destroy(srv->xds);
    srv->xds = NULL;
    /* Its last flush still needs the pool, and wakes the rollout driver (the flush hook
     * node_status_on_flush), so it goes before the driver. */
    node_status_destroy(srv->nodes);
    srv->nodes = NULL;
    rollout_driver_destroy(srv->rollouts);
    srv->rollouts = NULL;
    alerts_destroy(srv->alerts);
    srv->alerts = NULL;
    fleet_destroy(srv->fleet);
    srv->fleet = NULL;
    certs_managed_destroy(srv->tls_managed);
    srv->tls_managed = NULL;
    replicas_destroy(srv->replicas);
    srv->replicas = NULL;
    leader_destroy(srv->leader);
    srv->leader = NULL;
    /* Before what its callbacks feed: the events feed and the snapshot loader. */
    pg_listener_destroy(srv->listener);
    srv->listener = NULL;
    events_feed_destroy(srv->events);
    srv->events = NULL;
    snap_loader_destroy(srv->loader);
    srv->loader = NULL;
    revocations_destroy(srv->revocations);
    srv->revocations = NULL;
    snap_store_destroy(srv->snapshots);
    srv->snapshots = NULL;
    snap_repo_destroy(srv->snap_repo);
    srv->snap_repo = NULL;
    datastore_destroy(srv->datastore);
    srv->datastore = NULL;
    redis_cache_destroy(srv->cache);
    srv->cache = NULL;
    redis_bucket_destroy(srv->limits);
    srv->limits = NULL;
    pg_pool_destroy(srv->db);
    srv->db = NULL;
    sx_keyring_free(srv->secrets);
    srv->secrets = NULL;
    pg_link_destroy(srv->db_link);
    srv->db_link = NULL;
    http_destroy(srv->http);
    srv->http = NULL;
    certs_destroy(srv->certs); /* after every listener that asks for it */
    srv->certs = NULL;
}

static void log_started(const struct sx_server *srv)
{
    const sextant_config *cfg = srv->config;
    char db[512], redis[512];
    sx_redact_url(cfg->database.url, db, sizeof(db));
    sx_redact_url(cfg->redis.url, redis, sizeof(redis));
    json_t *f = json_pack("{s:s,s:i,s:s,s:i,s:s,s:s,s:s,s:b}", "version", SEXTANT_VERSION, "pid",
                          (int)getpid(), "http_listen", cfg->http.listen.text, "http_port",
                          http_bound_port(srv->http), "grpc_listen", cfg->grpc.listen.text,
                          "database_url", db, "redis_url", cfg->redis.url[0] ? redis : "disabled",
                          "http_tls", certs_enabled(srv->certs, CERTS_HTTP));
    json_object_set_new(f, "config_file",
                        cfg->source_file ? json_string(cfg->source_file) : json_null());
    sx_log_fields(SX_LOG_INFO, "main", f, "sextant started");
    sx_log_fields(SX_LOG_DEBUG, "main", json_pack("{s:o}", "config", config_dump_json(cfg)),
                  "effective configuration");
}

static int cmd_serve(const cli_opts *o)
{
    sx_err err;
    sx_err_clear(&err);
    if (sup_block_signals(&err) != 0) {
        cli_print_err(NULL, &err);
        return 1;
    }
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    struct sx_server *srv = NULL;
    if (sx_server_create(cfg, &srv, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        return 1;
    }
    if (build_daemon(srv, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        cli_print_err(NULL, &err);
        free_daemon(srv);
        sx_server_destroy(srv);
        return 1;
    }

    /* A keyring that cannot open the stored secrets is refused before anything is
     * served; an unreachable database leaves that to the first reads. */
    int krc = secrets_check(srv->db, srv->secrets, &err);
    if (krc == SX_EUNAVAILABLE) {
        SX_WARN("secrets", "could not check secrets.key_file against the database: %s",
                err.message);
        sx_err_clear(&err);
    } else if (krc != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        cli_print_err(NULL, &err);
        free_daemon(srv);
        sx_server_destroy(srv);
        return 1;
    }

    int status = 0;
    if (sup_start_all(srv->sup, &err) != 0) {
        sx_log_err(SX_LOG_ERROR, "main", &err);
        cli_print_err(NULL, &err);
        status = 1;
    } else {
        log_started(srv);
        int sig = sup_wait_for_signal(srv->sup);
        sx_log_fields(SX_LOG_INFO, "main",
                      json_pack("{s:s,s:I}", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
                                "shutdown_timeout_ms", (json_int_t)cfg->shutdown.timeout_ms),
                      "received %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }

    if (sup_stop_all(srv->sup) != 0) {
        /* An abandoned component may still be using srv: free nothing, run no atexit
         * handlers, just leave. */
        sx_log_fields(SX_LOG_ERROR, "main", json_pack("{s:i}", "exit_code", 1),
                      "sextant stopped: a component did not stop in time");
        _exit(1);
    }
    sx_log_fields(SX_LOG_INFO, "main", json_pack("{s:i}", "exit_code", status), "sextant stopped");
    free_daemon(srv);
    sx_server_destroy(srv);
    return status;
}

/* ------------------------------------------------------------------ main */

/* serve's usage with or without the key table, as the other commands' signature. */
static void usage_serve_short(FILE *out)
{
    usage_serve(out, false);
}

static void usage_serve_full(FILE *out)
{
    usage_serve(out, true);
}

static int cmd_version(const cli_opts *o)
{
    (void)o;
    printf("sextant %s\n", SEXTANT_VERSION);
    return 0;
}

/* Every subcommand: its name, its help (short form after a usage error, full form for
 * --help) and what it runs. The options each takes are in options[]. */
static const struct command {
    const char *name;
    void (*usage)(FILE *out);
    void (*help)(FILE *out);
    int (*run)(const cli_opts *o);
} commands[] = {
    {"serve", usage_serve_short, usage_serve_full, cmd_serve},
    {"migrate", cli_migrate_usage, cli_migrate_usage, cli_migrate},
    {"import", cli_import_usage, cli_import_usage, cli_import},
    {"publish", cli_publish_usage, cli_publish_usage, cli_publish},
    {"token", usage_token, usage_token, cmd_token},
    {"rotate-secrets", cli_rotate_secrets_usage, cli_rotate_secrets_usage, cli_rotate_secrets},
    {"audit", cli_audit_usage, cli_audit_usage, cli_audit},
    {"version", usage_version, usage_version, cmd_version},
};

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage_main(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage_main(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0)
        return cmd_version(NULL);
    if (strcmp(cmd, "help") == 0) {
        const char *topic = argc > 2 ? argv[2] : NULL;
        const struct command *c = topic ? find_command(topic) : NULL;
        if (topic == NULL) {
            usage_main(stdout);
        } else if (c) {
            c->help(stdout);
        } else {
            fprintf(stderr, "sextant: help: unknown command '%s'\n\n", topic);
            usage_main(stderr);
            return CLI_EXIT_USAGE;
        }
        return 0;
    }
    const struct command *c = find_command(cmd);
    if (c == NULL) {
        fprintf(stderr, "sextant: unknown %s '%s'\n\n", cmd[0] == '-' ? "option" : "command", cmd);
        usage_main(stderr);
        return CLI_EXIT_USAGE;
    }
    cli_opts o = {0};
    if (parse_opts(cmd, argc, argv, 2, &o) != 0) {
        fputc('\n', stderr);
        c->usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (o.help) {
        if (o.action && strcmp(o.action, "revoke") == 0 && strcmp(cmd, "token") == 0)
            cli_revoke_usage(stdout);
        else
            c->help(stdout);
        return 0;
    }
    return c->run(&o);
}
