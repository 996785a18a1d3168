/*
 * test_config.c — the configuration loader: a full file, defaults, environment
 * precedence, every key's bad value and type, and all errors reported at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "tests/lib/testlib.h"

#include "server/base/mem.h"
#include "server/config.h"
#include "server/validate/validate.h"

#define DBURL "SEXTANT_DATABASE_URL=postgres://sextant:hunter2@127.0.0.1:5432/sextant"

static char dir[TL_DIR_MAX];
static char cert[TL_PATH_MAX], key[TL_PATH_MAX], ca[TL_PATH_MAX], junk[TL_PATH_MAX],
    secret_file[TL_PATH_MAX], short_secret_file[TL_PATH_MAX], rsa_pub[TL_PATH_MAX],
    rsa_priv[TL_PATH_MAX], rsa_other[TL_PATH_MAX], policy[TL_PATH_MAX], yaml_path[TL_PATH_MAX];

/* Writes key to path as PEM: its public half when public_only, else the private key.
 * Returns whether the file was written. */
static bool write_pem(const char *path, EVP_PKEY *key, bool public_only)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return false;
    int ok = public_only ? PEM_write_PUBKEY(f, key)
                         : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    return fclose(f) == 0 && ok == 1;
}

static int setup(void **state)
{
    (void)state;
    char *const paths[] = {cert,    key,      ca,        junk,   secret_file, short_secret_file,
                           rsa_pub, rsa_priv, rsa_other, policy, yaml_path};
    const char *const files[] = {"cert.pem",      "key.pem",   "ca.pem",      "junk.pem",
                                 "secret.txt",    "short.txt", "rsa.pub.pem", "rsa.key.pem",
                                 "other.key.pem", "rbac.yaml", "sextant.yaml"};
    if (tl_tmpdir(dir, "config", paths, files, sizeof files / sizeof *files) != 0)
        return -1;
    tl_write_file(cert, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
    tl_write_file(key, "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n");
    tl_write_file(ca, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
    tl_write_file(junk, "not a key\n");
    tl_write_file(secret_file, "0123456789abcdef0123456789abcdef-from-file\n");
    tl_write_file(short_secret_file, "short\n");
    tl_write_file(policy, "roles: []\n");

    /* An RSA key pair, and the private key of another pair. */
    EVP_PKEY *pk = EVP_RSA_gen(1024), *other = EVP_RSA_gen(1024);
    bool written = pk && other && write_pem(rsa_pub, pk, true) && write_pem(rsa_priv, pk, false) &&
                   write_pem(rsa_other, other, false);
    EVP_PKEY_free(pk);
    EVP_PKEY_free(other);
    return written ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tl_rmdir(dir);
    return 0;
}

/* Substitutes @CERT@, @KEY@, @CA@, @JUNK@, @SECRET@, @SHORT@, @RSA@, @RSAPRIV@, @RSAOTHER@,
 * @POLICY@, @DIR@ in text. */
static char *expand(const char *text)
{
    struct {
        const char *tag, *val;
    } subs[] = {{"@CERT@", cert},
                {"@KEY@", key},
                {"@CA@", ca},
                {"@JUNK@", junk},
                {"@SECRET@", secret_file},
                {"@SHORT@", short_secret_file},
                {"@RSAPRIV@", rsa_priv},
                {"@RSAOTHER@", rsa_other},
                {"@RSA@", rsa_pub},
                {"@POLICY@", policy},
                {"@DIR@", dir}};
    char *out = sx_strdup(text);
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char *at;
        while ((at = strstr(out, subs[i].tag)) != NULL) {
            *at = '\0';
            char *n = sx_asprintf("%s%s%s", out, subs[i].val, at + strlen(subs[i].tag));
            sx_free(out);
            out = n;
        }
    }
    return out;
}

/* Loads yaml (NULL: no file) with env (NULL-terminated, entries expanded). */
static int load(const char *yaml, const char **env, sextant_config **cfg, sx_fielderrs *errs)
{
    char *envv[32];
    size_t n = 0;
    for (; env && env[n]; n++)
        envv[n] = expand(env[n]);
    envv[n] = NULL;
    if (yaml) {
        char *y = expand(yaml);
        tl_write_file(yaml_path, y);
        sx_free(y);
    }
    int rc = config_load(yaml ? yaml_path : NULL, envv, cfg, errs);
    for (size_t i = 0; i < n; i++)
        sx_free(envv[i]);
    return rc;
}

/* ------------------------------------------------------------------ good input */

static const char *full_yaml = "database:\n"
                               "  url: postgres://app:pw@db.internal:5433/sextant\n"
                               "  pool_size: 16\n"
                               "  connect_timeout: 2s\n"
                               "  statement_timeout: 1m30s\n"
                               "redis:\n"
                               "  url: redis://:s3cret@cache.internal:6380/2\n"
                               "  timeout: 250ms\n"
                               "  key_prefix: \"prod:\"\n"
                               "http:\n"
                               "  listen: \"[::1]:9090\"\n"
                               "  threads: 8\n"
                               "  max_body_bytes: 2097152\n"
                               "  tls:\n"
                               "    cert_file: @CERT@\n"
                               "    key_file: @KEY@\n"
                               "grpc:\n"
                               "  listen: 0.0.0.0:18001\n"
                               "  tls:\n"
                               "    cert_file: @CERT@\n"
                               "    key_file: @KEY@\n"
                               "    client_ca_file: @CA@\n"
                               "replica:\n"
                               "  id: replica-a\n"
                               "log:\n"
                               "  level: debug\n"
                               "auth:\n"
                               "  enabled: false\n"
                               "  hs256_secret: 0123456789abcdef0123456789abcdef\n"
                               "  rs256_public_key_file: @RSA@\n"
                               "  rs256_private_key_file: @RSAPRIV@\n"
                               "  issuer: https://issuer.example\n"
                               "  audience: sextant\n"
                               "  clock_skew: 5s\n"
                               "  policy_file: @POLICY@\n"
                               "  dev_sign_in: yes\n"
                               "shutdown:\n"
                               "  timeout: 3s\n"
                               "snapshots:\n"
                               "  load_timeout: 1h\n"
                               "xds:\n"
                               "  ack_timeout: 45s\n"
                               "  send_timeout: 0\n"
                               "  default_group: edge\n"
                               "  cq_threads: 4\n"
                               "  max_connection_age: 2s\n"
                               "  max_connection_age_grace: 0\n";

TL_TEST(test_full_file)
{
    sextant_config *c = NULL;
    sx_fielderrs errs = {0};
    int rc = load(full_yaml, NULL, &c, &errs);
    tl_print_fielderrs(&errs);
    assert_int_equal(rc, 0);
    assert_non_null(c);
    assert_string_equal(c->database.url, "postgres://app:pw@db.internal:5433/sextant");
    assert_int_equal(c->database.pool_size, 16);
    assert_int_equal(c->database.connect_timeout_ms, 2000);
    assert_int_equal(c->database.statement_timeout_ms, 90000);
    assert_string_equal(c->redis.url, "redis://:s3cret@cache.internal:6380/2");
    assert_string_equal(c->redis.host, "cache.internal");
    assert_int_equal(c->redis.port, 6380);
    assert_int_equal(c->redis.db, 2);
    assert_null(c->redis.username);
    assert_string_equal(c->redis.password, "s3cret");
    assert_int_equal(c->redis.timeout_ms, 250);
    assert_string_equal(c->redis.key_prefix, "prod:");
    assert_string_equal(c->http.listen.text, "[::1]:9090");
    assert_string_equal(c->http.listen.host, "::1");
    assert_int_equal(c->http.listen.port, 9090);
    assert_int_equal(c->http.threads, 8);
    assert_int_equal(c->http.max_body_bytes, 2097152);
    assert_string_equal(c->http.tls.cert_file, cert);
    assert_string_equal(c->http.tls.key_file, key);
    assert_string_equal(c->grpc.listen.host, "0.0.0.0");
    assert_int_equal(c->grpc.listen.port, 18001);
    assert_string_equal(c->grpc.tls.cert_file, cert);
    assert_string_equal(c->grpc.tls.key_file, key);
    assert_string_equal(c->grpc.tls.client_ca_file, ca);
    assert_string_equal(c->replica.id, "replica-a");
    assert_int_equal(c->log.level, SX_LOG_DEBUG);
    assert_false(c->auth.enabled);
    assert_string_equal(c->auth.hs256_secret, "0123456789abcdef0123456789abcdef");
    assert_null(c->auth.hs256_secret_file);
    assert_string_equal(c->auth.rs256_public_key_file, rsa_pub);
    assert_non_null(strstr(c->auth.rs256_public_key_pem, "BEGIN PUBLIC KEY"));
    assert_string_equal(c->auth.rs256_private_key_file, rsa_priv);
    assert_non_null(strstr(c->auth.rs256_private_key_pem, "PRIVATE KEY"));
    assert_string_equal(c->auth.issuer, "https://issuer.example");
    assert_string_equal(c->auth.audience, "sextant");
    assert_int_equal(c->auth.clock_skew_ms, 5000);
    assert_string_equal(c->auth.policy_file, policy);
    assert_true(c->auth.dev_sign_in);
    assert_int_equal(c->shutdown.timeout_ms, 3000);
    assert_int_equal(c->snapshots.load_timeout_ms, 3600000);
    assert_int_equal(c->xds.ack_timeout_ms, 45000);
    assert_int_equal(c->xds.send_timeout_ms, 0);
    assert_string_equal(c->xds.default_group, "edge");
    assert_int_equal(c->xds.cq_threads, 4);
    assert_int_equal(c->xds.max_connection_age_ms, 2000);
    assert_int_equal(c->xds.max_connection_age_grace_ms, 0);
    assert_string_equal(c->source_file, yaml_path);
    assert_int_equal(c->warnings.count, 0);

    /* The dump is safe to log: no password, no secret. */
    json_t *d = config_dump_json(c);
    tl_assert_json_text(d, NULL,
                        (const char *const[]){"hunter2", ":pw@", "s3cret", "0123456789abcdef",
                                              "PRIVATE KEY", NULL});
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d, "auth"), "hs256_secret")), "***");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d, "auth"), "clock_skew")), "5s");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d, "database"), "statement_timeout")),
        "1m30s");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "http"), "threads")), 8);
    json_decref(d);
    config_free(c);
    sx_fielderrs_free(&errs);
}

/* Loads yaml (NULL: no file) and env, asserting that nothing is wrong with them; the
 * caller frees the configuration with config_free. */
static sextant_config *load_ok(const char *yaml, const char **env)
{
    return tl_config_load_ok(load, yaml, env);
}

TL_TEST(test_defaults_env_only)
{
    const char *env[] = {DBURL, "PATH=/usr/bin", "HOME=/root", NULL};
    sextant_config *c = load_ok(NULL, env);
    assert_null(c->source_file);
    assert_int_equal(c->database.pool_size, 8);
    assert_int_equal(c->database.connect_timeout_ms, 5000);
    assert_int_equal(c->database.statement_timeout_ms, 30000);
    assert_string_equal(c->redis.url, "");
    assert_null(c->redis.host);
    assert_int_equal(c->redis.timeout_ms, 500);
    assert_string_equal(c->redis.key_prefix, "sextant:");
    assert_string_equal(c->http.listen.text, "127.0.0.1:8080");
    assert_int_equal(c->http.threads, 4);
    assert_int_equal(c->http.max_body_bytes, 1048576);
    assert_null(c->http.tls.cert_file);
    assert_null(c->http.tls.key_file);
    assert_string_equal(c->grpc.listen.text, "127.0.0.1:18000");
    assert_null(c->grpc.tls.client_ca_file);
    assert_null(c->http.admin_listen.text);
    assert_int_equal(c->http.max_connections, 4096);
    assert_int_equal(c->http.max_connections_per_address, 256);
    assert_int_equal(c->http.header_timeout_ms, 10000);
    assert_int_equal(c->http.idle_timeout_ms, 60000);
    assert_int_equal(c->events.max_streams_per_user, 8);
    assert_int_equal(c->events.max_stream_lifetime_ms, 30 * 60 * 1000);
    char host[256], want[300];
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    snprintf(want, sizeof(want), "-%ld", (long)getpid());
    assert_non_null(strstr(c->replica.id, want));
    assert_int_equal(c->log.level, SX_LOG_INFO);
    assert_true(c->auth.enabled);
    assert_null(c->auth.hs256_secret);
    assert_null(c->auth.rs256_public_key_file);
    assert_null(c->auth.rs256_private_key_file);
    assert_null(c->auth.issuer);
    assert_null(c->auth.audience);
    assert_int_equal(c->auth.clock_skew_ms, 60000);
    assert_null(c->auth.policy_file);
    assert_false(c->auth.dev_sign_in);
    assert_int_equal(c->shutdown.timeout_ms, 10000);
    assert_int_equal(c->snapshots.load_timeout_ms, 30000);
    assert_int_equal(c->snapshots.check_interval_ms, 10000);
    assert_null(c->database.listen_url);
    assert_int_equal(c->database.reconnect_backoff_min_ms, 50);
    assert_int_equal(c->database.reconnect_backoff_max_ms, 1000);
    assert_int_equal(c->redis.reconnect_backoff_min_ms, 50);
    assert_int_equal(c->redis.reconnect_backoff_max_ms, 1000);
    assert_int_equal(c->xds.ack_timeout_ms, 0);
    assert_int_equal(c->xds.send_timeout_ms, 30000);
    assert_string_equal(c->xds.default_group, "default");
    assert_int_equal(c->xds.cq_threads, 2);
    assert_int_equal(c->xds.max_connection_age_ms, 30 * 60000);
    assert_int_equal(c->xds.max_connection_age_grace_ms, 5 * 60000);
    assert_int_equal(c->xds.max_receive_message_bytes, 4 * 1024 * 1024);
    assert_int_equal(c->xds.max_streams, 100000);
    assert_int_equal(c->xds.max_resource_names, 10000);
    assert_int_equal(c->xds.max_resource_name_length, 1024);
    assert_int_equal(c->xds.max_node_metadata_bytes, 65536);
    assert_int_equal(c->xds.min_client_ping_interval_ms, 10000);
    assert_int_equal(c->xds.max_ping_strikes, 2);
    assert_int_equal(c->fleet.stale_after_ms, 120000);
    assert_int_equal(c->fleet.disconnected_after_ms, 300000);
    assert_int_equal(c->leader.retry_ms, 2000);
    assert_int_equal(c->leader.lease_ms, 10000);
    assert_int_equal(c->leader.check_ms, 1000);
    assert_int_equal(c->leader.heartbeat_ms, 5000);
    assert_int_equal(c->leader.forget_after_ms, 24LL * 3600 * 1000);
    assert_int_equal(c->validation.regex_max_program_size, 100); /* Envoy's default */
    assert_int_equal(c->groups.default_planes, VAL_PLANES_ALL);  /* every kind, as before */
    config_free(c);
}

TL_TEST(test_leader_keys)
{
    const char *env[] = {DBURL, "SEXTANT_LEADER_CHECK=250ms", NULL};
    sextant_config *c = load_ok("leader:\n  retry: 500ms\n  lease: 3s\n  heartbeat: 1s\n", env);
    assert_int_equal(c->leader.retry_ms, 500);
    assert_int_equal(c->leader.lease_ms, 3000);
    assert_int_equal(c->leader.check_ms, 250);
    assert_int_equal(c->leader.heartbeat_ms, 1000);
    config_free(c);
}

TL_TEST(test_failover_keys)
{
    const char *env[] = {DBURL,
                         "SEXTANT_DATABASE_LISTEN_URL=postgresql://sextant@db-direct/sextant",
                         "SEXTANT_REDIS_RECONNECT_BACKOFF_MAX=3s", NULL};
    sextant_config *c = load_ok("database:\n  reconnect_backoff_min: 20ms\n"
                                "  reconnect_backoff_max: 500ms\n"
                                "snapshots:\n  check_interval: 2s\n",
                                env);
    assert_string_equal(c->database.listen_url, "postgresql://sextant@db-direct/sextant");
    assert_int_equal(c->database.reconnect_backoff_min_ms, 20);
    assert_int_equal(c->database.reconnect_backoff_max_ms, 500);
    assert_int_equal(c->redis.reconnect_backoff_max_ms, 3000);
    assert_int_equal(c->snapshots.check_interval_ms, 2000);
    config_free(c);
}

TL_TEST(test_fleet_thresholds)
{
    const char *env[] = {DBURL, "SEXTANT_FLEET_DISCONNECTED_AFTER=10m", NULL};
    sextant_config *c = load_ok("fleet:\n  stale_after: 90s\n", env);
    assert_int_equal(c->fleet.stale_after_ms, 90000);
    assert_int_equal(c->fleet.disconnected_after_ms, 600000);
    config_free(c);
}

TL_TEST(test_env_overrides_file)
{
    const char *yaml = "database:\n  url: postgres://file/db\n  pool_size: 3\n"
                       "http:\n  listen: 127.0.0.1:1111\n"
                       "redis:\n  url: redis://file:6379\n"
                       "auth:\n  hs256_secret_file: @SECRET@\n";
    const char *env[] = {"SEXTANT_DATABASE_POOL_SIZE=12",
                         "SEXTANT_HTTP_LISTEN=127.0.0.1:2222",
                         "SEXTANT_REDIS_URL=",
                         "SEXTANT_LOG_LEVEL=warn",
                         "SEXTANT_SHUTDOWN_TIMEOUT=1m",
                         "SEXTANT_AUTH_DEV_SIGN_IN=on",
                         "SEXTANT_AUTH_ENABLED=no",
                         "SEXTANT_AUTH_CLOCK_SKEW=0",
                         "SEXTANT_DATABSE_URL=typo",
                         NULL};
    sextant_config *c = load_ok(yaml, env);
    assert_string_equal(c->database.url, "postgres://file/db"); /* file kept */
    assert_int_equal(c->database.pool_size, 12);                /* env wins */
    assert_string_equal(c->http.listen.text, "127.0.0.1:2222");
    assert_int_equal(c->http.listen.port, 2222);
    assert_string_equal(c->redis.url, ""); /* an empty variable disables the cache */
    assert_null(c->redis.host);
    assert_int_equal(c->log.level, SX_LOG_WARN);
    assert_int_equal(c->shutdown.timeout_ms, 60000);
    assert_true(c->auth.dev_sign_in);
    assert_false(c->auth.enabled);
    assert_int_equal(c->auth.clock_skew_ms, 0);
    /* The secret file's content, without its trailing newline. */
    assert_string_equal(c->auth.hs256_secret, "0123456789abcdef0123456789abcdef-from-file");
    /* An unknown SEXTANT_ variable is a warning with a suggestion, not an error. */
    assert_int_equal(c->warnings.count, 1);
    assert_string_equal(c->warnings.items[0].path, "SEXTANT_DATABSE_URL");
    assert_non_null(strstr(c->warnings.items[0].message, "SEXTANT_DATABASE_URL"));
    config_free(c);
}

TL_TEST(test_empty_and_null_values)
{
    const char *env[] = {DBURL, NULL};
    /* An empty file, then null values: both mean "use the default". */
    config_free(load_ok("", env));
    sextant_config *c = load_ok("http:\n  listen:\n  threads: ~\nredis:\n", env);
    assert_string_equal(c->http.listen.text, "127.0.0.1:8080");
    assert_int_equal(c->http.threads, 4);
    config_free(c);
    /* The admin listener is optional: "" means none, as unset does. */
    const char *env_admin[] = {DBURL, "SEXTANT_HTTP_ADMIN_LISTEN=", NULL};
    c = load_ok(NULL, env_admin);
    assert_null(c->http.admin_listen.text);
    config_free(c);
    c = load_ok("http:\n  admin_listen: \"[::1]:9090\"\n", env);
    assert_string_equal(c->http.admin_listen.host, "::1");
    assert_int_equal(c->http.admin_listen.port, 9090);
    config_free(c);
}

/* ------------------------------------------------------------------ bad input */

typedef struct bad_case {
    const char *name;
    const char *yaml;   /* NULL: no file */
    const char *env[4]; /* besides the database URL unless no_db */
    bool no_db;         /* leave SEXTANT_DATABASE_URL out */
    const char *path;   /* expected error path */
    const char *msg;    /* expected substring of the message */
    size_t count;       /* expected number of errors (0 means 1) */
} bad_case;

static const bad_case bad_cases[] = {
    /* fleet */
    {"fleet disconnected before stale",
     "fleet:\n  stale_after: 5m\n  disconnected_after: 2m\n",
     {0},
     false,
     "fleet.disconnected_after",
     "must be greater than fleet.stale_after (5m), got 2m",
     2},
    {"fleet disconnected equal to stale (both reported)",
     "fleet:\n  stale_after: 2m\n  disconnected_after: 120s\n",
     {0},
     false,
     "fleet.stale_after",
     "must be less than fleet.disconnected_after",
     2},
    {"fleet stale after zero",
     "fleet:\n  stale_after: 0\n",
     {0},
     false,
     "fleet.stale_after",
     "must be between",
     0},
    /* leader */
    {"leader check longer than half the lease",
     "leader:\n  lease: 2s\n  check: 1500ms\n",
     {0},
     false,
     "leader.check",
     "must be at most half of leader.lease (2s), got 1s500ms",
     0},
    {"leader lease under a second",
     "leader:\n  lease: 500ms\n  check: 100ms\n",
     {0},
     false,
     "leader.lease",
     "must be between",
     0},
    /* xds */
    {"xds threads zero",
     "xds:\n  cq_threads: 0\n",
     {0},
     false,
     "xds.cq_threads",
     "must be between 1 and 64, got 0",
     0},
    {"xds ack timeout too long",
     "xds:\n  ack_timeout: 2h\n",
     {0},
     false,
     "xds.ack_timeout",
     "must be between",
     0},
    {"xds send timeout unit",
     "xds:\n  send_timeout: \"30\"\n",
     {0},
     false,
     "xds.send_timeout",
     "missing a unit",
     0},
    {"xds empty default group",
     "xds:\n  default_group: \"\"\n",
     {0},
     false,
     "xds.default_group",
     "must not be empty",
     0},
    {"xds default group with space",
     NULL,
     {"SEXTANT_XDS_DEFAULT_GROUP=a b", NULL},
     false,
     "SEXTANT_XDS_DEFAULT_GROUP (xds.default_group)",
     "without spaces",
     0},
    /* values, one key at a time */
    {"bad port",
     "http:\n  listen: 127.0.0.1:80x\n",
     {0},
     false,
     "http.listen",
     "invalid port \"80x\": must be between 1 and 65535",
     0},
    {"port out of range",
     "grpc:\n  listen: 127.0.0.1:70000\n",
     {0},
     false,
     "grpc.listen",
     "must be between 1 and 65535",
     0},
    {"port zero",
     "grpc:\n  listen: \"[::1]:0\"\n",
     {0},
     false,
     "grpc.listen",
     "invalid port \"0\"",
     0},
    {"missing port", "http:\n  listen: localhost\n", {0}, false, "http.listen", "missing port", 0},
    {"unbracketed v6", "http:\n  listen: \"::1:80\"\n", {0}, false, "http.listen", "brackets", 0},
    {"bad host",
     "http:\n  listen: \"bad host:80\"\n",
     {0},
     false,
     "http.listen",
     "invalid host \"bad host\"",
     0},
    {"bad ipv4", "http:\n  listen: 300.1.1.1:80\n", {0}, false, "http.listen", "invalid host", 0},
    {"same port",
     "http:\n  listen: 0.0.0.0:9000\ngrpc:\n  listen: 127.0.0.1:9000\n",
     {0},
     false,
     "grpc.listen",
     "same port",
     0},
    {"admin listener on the API port",
     "http:\n  listen: 127.0.0.1:9000\n  admin_listen: 0.0.0.0:9000\n",
     {0},
     false,
     "http.admin_listen",
     "must not use the same port as http.listen",
     0},
    {"admin listener on the gRPC port",
     NULL,
     {"SEXTANT_GRPC_LISTEN=127.0.0.1:9001", "SEXTANT_HTTP_ADMIN_LISTEN=127.0.0.1:9001", NULL},
     false,
     "SEXTANT_HTTP_ADMIN_LISTEN (http.admin_listen)",
     "must not use the same port as grpc.listen",
     0},
    {"admin listener without a port",
     "http:\n  admin_listen: localhost\n",
     {0},
     false,
     "http.admin_listen",
     "missing port",
     0},
    {"no connections at all",
     "http:\n  max_connections: 0\n",
     {0},
     false,
     "http.max_connections",
     "between 1 and",
     0},
    {"header timeout too short",
     NULL,
     {"SEXTANT_HTTP_HEADER_TIMEOUT=10ms", NULL},
     false,
     "SEXTANT_HTTP_HEADER_TIMEOUT (http.header_timeout)",
     "must be between",
     0},
    {"no event stream per user",
     "events:\n  max_streams_per_user: 0\n",
     {0},
     false,
     "events.max_streams_per_user",
     "between 1 and",
     0},
    {"bad duration",
     "database:\n  connect_timeout: 5x\n",
     {0},
     false,
     "database.connect_timeout",
     "invalid duration \"5x\"",
     0},
    {"duration without unit",
     "redis:\n  timeout: \"5\"\n",
     {0},
     false,
     "redis.timeout",
     "missing a unit",
     0},
    {"negative duration",
     "database:\n  statement_timeout: -1s\n",
     {0},
     false,
     "database.statement_timeout",
     "invalid duration",
     0},
    {"duration too long",
     "shutdown:\n  timeout: 2h\n",
     {0},
     false,
     "shutdown.timeout",
     "must be between 1ms and 1h",
     0},
    {"zero timeout",
     "snapshots:\n  load_timeout: 0\n",
     {0},
     false,
     "snapshots.load_timeout",
     "must be between",
     0},
    {"back-off minimum above its maximum",
     "database:\n  reconnect_backoff_min: 2s\n  reconnect_backoff_max: 1s\n",
     {0},
     false,
     "database.reconnect_backoff_min",
     "must not exceed database.reconnect_backoff_max (1s), got 2s",
     0},
    {"redis back-off minimum above its maximum",
     "redis:\n  reconnect_backoff_min: 5s\n",
     {0},
     false,
     "redis.reconnect_backoff_min",
     "must not exceed redis.reconnect_backoff_max (1s), got 5s",
     0},
    {"bad listen url",
     "database:\n  listen_url: \"host='x\"\n",
     {0},
     false,
     "database.listen_url",
     "invalid connection string",
     0},
    {"pool size word",
     "database:\n  pool_size: eight\n",
     {0},
     false,
     "database.pool_size",
     "expected an integer, got \"eight\"",
     0},
    {"pool size zero",
     "database:\n  pool_size: 0\n",
     {0},
     false,
     "database.pool_size",
     "must be between 1 and 256, got 0",
     0},
    {"pool size too big",
     "database:\n  pool_size: 300\n",
     {0},
     false,
     "database.pool_size",
     "must be between 1 and 256, got 300",
     0},
    {"threads zero", "http:\n  threads: 0\n", {0}, false, "http.threads", "between 1 and 256", 0},
    {"regex program size zero",
     "validation:\n  regex_max_program_size: 0\n",
     {0},
     false,
     "validation.regex_max_program_size",
     "must be between 1 and 100000, got 0",
     0},
    {"unknown data plane",
     "groups:\n  default_data_planes: envoy,quic\n",
     {0},
     false,
     "groups.default_data_planes",
     "unknown data plane \"quic\" (envoy, grpc or control)",
     0},
    {"body size unit",
     "http:\n  max_body_bytes: 1MB\n",
     {0},
     false,
     "http.max_body_bytes",
     "expected an integer",
     0},
    {"log level",
     "log:\n  level: verbose\n",
     {0},
     false,
     "log.level",
     "expected one of debug, info, warn, error, got \"verbose\"",
     0},
    {"redis scheme",
     "redis:\n  url: http://cache:6379\n",
     {0},
     false,
     "redis.url",
     "the scheme must be redis://",
     0},
    {"rediss", "redis:\n  url: rediss://cache:6379\n", {0}, false, "redis.url", "TLS", 0},
    {"redis port",
     "redis:\n  url: redis://cache:99999\n",
     {0},
     false,
     "redis.url",
     "invalid port \"99999\"",
     0},
    {"redis db",
     "redis:\n  url: redis://cache:6379/x\n",
     {0},
     false,
     "redis.url",
     "invalid database number",
     0},
    {"redis password redacted",
     "redis:\n  url: \"redis://u:topsecret@cache:bad\"\n",
     {0},
     false,
     "redis.url",
     "u:***@cache",
     0},
    {"key prefix",
     "redis:\n  key_prefix: \"has space\"\n",
     {0},
     false,
     "redis.key_prefix",
     "without spaces",
     0},
    {"replica id",
     "replica:\n  id: \"bad id!\"\n",
     {0},
     false,
     "replica.id",
     "must be 1 to 128 characters",
     0},
    {"dev sign in",
     "auth:\n  dev_sign_in: maybe\n",
     {0},
     false,
     "auth.dev_sign_in",
     "expected true or false, got \"maybe\"",
     0},
    {"short secret",
     "auth:\n  hs256_secret: tooshort\n",
     {0},
     false,
     "auth.hs256_secret",
     "at least 32 bytes",
     0},
    {"short secret file",
     "auth:\n  hs256_secret_file: @SHORT@\n",
     {0},
     false,
     "auth.hs256_secret_file",
     "at least 32 bytes",
     0},
    {"secret and file",
     "auth:\n  hs256_secret: 0123456789abcdef0123456789abcdef\n"
     "  hs256_secret_file: @SECRET@\n",
     {0},
     false,
     "auth.hs256_secret_file",
     "cannot be combined",
     0},
    {"missing secret file",
     "auth:\n  hs256_secret_file: @DIR@/nope\n",
     {0},
     false,
     "auth.hs256_secret_file",
     "No such file or directory",
     0},
    {"rsa key junk",
     "auth:\n  rs256_public_key_file: @JUNK@\n",
     {0},
     false,
     "auth.rs256_public_key_file",
     "does not hold a PEM public key",
     0},
    {"rsa private key junk",
     "auth:\n  rs256_private_key_file: @JUNK@\n",
     {0},
     false,
     "auth.rs256_private_key_file",
     "does not hold a PEM private key",
     0},
    {"public key given as private key",
     "auth:\n  rs256_private_key_file: @RSA@\n",
     {0},
     false,
     "auth.rs256_private_key_file",
     "does not hold a PEM private key",
     0},
    {"rsa key pair mismatch",
     "auth:\n  rs256_public_key_file: @RSA@\n  rs256_private_key_file: @RSAOTHER@\n",
     {0},
     false,
     "auth.rs256_private_key_file",
     "does not belong to the public key",
     0},
    {"old jwt section",
     "auth:\n  jwt:\n    hs256_secret: 0123456789abcdef0123456789abcdef\n",
     {0},
     false,
     "auth.jwt",
     "unknown",
     0},
    {"clock skew too large", "auth:\n  clock_skew: 2h\n", {0}, false, "auth.clock_skew", "", 0},
    {"missing policy file",
     "auth:\n  policy_file: @DIR@/nope.yaml\n",
     {0},
     false,
     "auth.policy_file",
     "No such file or directory",
     0},
    {"env bad auth.enabled",
     NULL,
     {"SEXTANT_AUTH_ENABLED=sometimes", NULL},
     false,
     "SEXTANT_AUTH_ENABLED (auth.enabled)",
     "expected true or false",
     0},
    {"cert without key",
     "http:\n  tls:\n    cert_file: @CERT@\n",
     {0},
     false,
     "http.tls.key_file",
     "required when http.tls.cert_file is set",
     0},
    {"key without cert",
     "grpc:\n  tls:\n    key_file: @KEY@\n",
     {0},
     false,
     "grpc.tls.cert_file",
     "required when grpc.tls.key_file is set",
     0},
    {"client ca alone",
     "grpc:\n  tls:\n    client_ca_file: @CA@\n",
     {0},
     false,
     "grpc.tls.client_ca_file",
     "requires grpc.tls.cert_file",
     0},
    {"missing cert file",
     "http:\n  tls:\n    cert_file: @DIR@/missing.pem\n    key_file: @KEY@\n",
     {0},
     false,
     "http.tls.cert_file",
     "cannot read",
     0},
    {"cert is a directory",
     "http:\n  tls:\n    cert_file: @DIR@\n    key_file: @KEY@\n",
     {0},
     false,
     "http.tls.cert_file",
     "not a regular file",
     0},
    {"missing database url", NULL, {0}, true, "database.url", "required", 0},
    {"empty database url",
     NULL,
     {"SEXTANT_DATABASE_URL=", NULL},
     true,
     "SEXTANT_DATABASE_URL (database.url)",
     "must not be empty",
     0},
    {"malformed database url",
     "database:\n  url: \"host=x bogus\"\n",
     {0},
     true,
     "database.url",
     "invalid connection string",
     0},
    /* structure */
    {"unknown key",
     "databse:\n  url: x\n",
     {0},
     false,
     "databse",
     "unknown key \"databse\" (did you mean \"database\"?)",
     0},
    {"nested unknown key",
     "database:\n  poolsize: 3\n",
     {0},
     false,
     "database.poolsize",
     "unknown key \"poolsize\" (did you mean \"pool_size\"?)",
     0},
    {"deep unknown key",
     "http:\n  tls:\n    ca_file: x\n",
     {0},
     false,
     "http.tls.ca_file",
     "unknown key",
     0},
    {"scalar for mapping",
     "database: postgres://x\n",
     {0},
     false,
     "database",
     "expected a mapping of keys, got a single value",
     0},
    {"mapping for scalar",
     "http:\n  listen:\n    host: 127.0.0.1\n    port: 80\n",
     {0},
     false,
     "http.listen",
     "expected a single value, got a mapping",
     0},
    {"list for scalar",
     "log:\n  level: [debug, info]\n",
     {0},
     false,
     "log.level",
     "expected a single value, got a list",
     0},
    {"duplicate key",
     "log:\n  level: debug\n  level: info\n",
     {0},
     false,
     "log.level",
     "duplicate key (line 3)",
     0},
    {"top level list",
     "- a\n- b\n",
     {0},
     false,
     "@YAML@",
     "expected a mapping of keys at the top",
     0},
    {"yaml syntax",
     "database:\n  url: x\n pool_size: [1\n",
     {0},
     false,
     "@YAML@",
     "invalid YAML at line",
     0},
    /* the environment is named as the source */
    {"env bad port",
     NULL,
     {"SEXTANT_HTTP_LISTEN=127.0.0.1:80x", NULL},
     false,
     "SEXTANT_HTTP_LISTEN (http.listen)",
     "invalid port \"80x\"",
     0},
    {"env bad level",
     "log:\n  level: info\n",
     {"SEXTANT_LOG_LEVEL=loud", NULL},
     false,
     "SEXTANT_LOG_LEVEL (log.level)",
     "got \"loud\"",
     0},
    {"env bad bool",
     NULL,
     {"SEXTANT_AUTH_DEV_SIGN_IN=sure", NULL},
     false,
     "SEXTANT_AUTH_DEV_SIGN_IN (auth.dev_sign_in)",
     "expected true or false",
     0},
};

TL_TEST(test_bad_values)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case *bc = &bad_cases[i];
        const char *env[8];
        size_t n = 0;
        if (!bc->no_db)
            env[n++] = DBURL;
        for (size_t k = 0; bc->env[k]; k++)
            env[n++] = bc->env[k];
        env[n] = NULL;
        sextant_config *c = NULL;
        sx_fielderrs errs = {0};
        int rc = load(bc->yaml, env, &c, &errs);
        const char *path = strcmp(bc->path, "@YAML@") == 0 ? yaml_path : bc->path;
        if (!tl_config_refused(bc->name, rc, c, &errs, bc->count ? bc->count : 1, path, bc->msg))
            failures++;
    }
    assert_int_equal(failures, 0);
}

TL_TEST(test_missing_file)
{
    const char *env[] = {DBURL, NULL};
    char *envv[] = {(char *)env[0], NULL};
    sextant_config *c = NULL;
    sx_fielderrs errs = {0};
    assert_int_equal(config_load("/nonexistent/sextant.yaml", envv, &c, &errs), SX_EINVAL);
    assert_null(c);
    assert_int_equal(errs.count, 1);
    assert_true(tl_fielderrs_has(&errs, "/nonexistent/sextant.yaml", "No such file or directory"));
    sx_fielderrs_free(&errs);
}

TL_TEST(test_all_errors_at_once)
{
    const char *yaml = "databse:\n  url: x\n"               /* 1 unknown key */
                       "database:\n  pool_size: eight\n"    /* 2 */
                       "  connect_timeout: soon\n"          /* 3 */
                       "  statment_timeout: 1s\n"           /* 4 nested unknown */
                       "redis:\n  url: http://x\n"          /* 5 */
                       "http:\n  listen: 127.0.0.1:80x\n"   /* 6 */
                       "  threads: [1]\n"                   /* 7 type */
                       "  tls:\n    cert_file: @CERT@\n"    /* 8 missing key_file */
                       "log: loud\n"                        /* 9 type */
                       "auth:\n  dev_sign_in: perhaps\n"    /* 10 */
                       "  hs256_secret: short\n"            /* 11 */
                       "shutdown:\n  timeout: 10d\n";       /* 12 */
    const char *env[] = {"SEXTANT_GRPC_LISTEN=nope", NULL}; /* 13, and 14: no database.url */
    sextant_config *c = NULL;
    sx_fielderrs errs = {0};
    assert_int_equal(load(yaml, env, &c, &errs), SX_EINVAL);
    tl_print_fielderrs(&errs);
    assert_int_equal(errs.count, 14);
    assert_true(tl_fielderrs_has(&errs, "databse", "unknown key"));
    assert_true(tl_fielderrs_has(&errs, "database.pool_size", "eight"));
    assert_true(tl_fielderrs_has(&errs, "database.connect_timeout", "soon"));
    assert_true(tl_fielderrs_has(&errs, "database.statment_timeout", "statement_timeout"));
    assert_true(tl_fielderrs_has(&errs, "redis.url", "scheme"));
    assert_true(tl_fielderrs_has(&errs, "http.listen", "80x"));
    assert_true(tl_fielderrs_has(&errs, "http.threads", "list"));
    assert_true(tl_fielderrs_has(&errs, "http.tls.key_file", "required"));
    assert_true(tl_fielderrs_has(&errs, "log", "mapping"));
    assert_true(tl_fielderrs_has(&errs, "auth.dev_sign_in", "perhaps"));
    assert_true(tl_fielderrs_has(&errs, "auth.hs256_secret", "32 bytes"));
    assert_true(tl_fielderrs_has(&errs, "shutdown.timeout", "10d"));
    assert_true(tl_fielderrs_has(&errs, "SEXTANT_GRPC_LISTEN (grpc.listen)", "missing port"));
    assert_true(tl_fielderrs_has(&errs, "database.url", "required"));
    /* The secret itself never appears in a message. */
    for (size_t i = 0; i < errs.count; i++)
        assert_null(strstr(errs.items[i].message, "short\""));
    sx_fielderrs_free(&errs);
}

/* ------------------------------------------------------------------ helpers */

TL_TEST(test_durations)
{
    struct {
        const char *in;
        int64_t ms;
        const char *canon;
    } ok[] = {{"0", 0, "0s"},
              {"500ms", 500, "500ms"},
              {"5s", 5000, "5s"},
              {"1m", 60000, "1m"},
              {"1h", 3600000, "1h"},
              {"1m30s", 90000, "1m30s"},
              {"1h2m3s4ms", 3723004, "1h2m3s4ms"},
              {"90s", 90000, "1m30s"}};
    char why[256], buf[64];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t ms = -1;
        assert_int_equal(config_parse_duration(ok[i].in, &ms, why, sizeof(why)), 0);
        assert_int_equal(ms, ok[i].ms);
        assert_string_equal(config_format_duration(ms, buf, sizeof(buf)), ok[i].canon);
    }
    const char *bad[] = {"", "5", "s", "5x", "1.5s", "-1s", "5 s", "1us", "99999999999999h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms;
        assert_int_equal(config_parse_duration(bad[i], &ms, why, sizeof(why)), SX_EINVAL);
        assert_true(strlen(why) > 0);
    }
}

TL_TEST(test_listen_parse)
{
    config_listen l = {0};
    char why[256];
    assert_int_equal(config_parse_listen("[::]:443", &l, why, sizeof(why)), 0);
    assert_string_equal(l.host, "::");
    assert_int_equal(l.port, 443);
    config_listen_clear(&l);
    assert_int_equal(config_parse_listen("gateway.example.com:18000", &l, why, sizeof(why)), 0);
    assert_string_equal(l.host, "gateway.example.com");
    config_listen_clear(&l);
    assert_int_equal(config_parse_listen("[::1]80", &l, why, sizeof(why)), SX_EINVAL);
    assert_int_equal(config_parse_listen("[zz]:80", &l, why, sizeof(why)), SX_EINVAL);
    assert_int_equal(config_parse_listen(":80", &l, why, sizeof(why)), SX_EINVAL);
    assert_non_null(strstr(why, "missing host"));
}

/* What the help must say: every key's name and variable, and some defaults. */
static const char *help_texts[] = {"database.url",
                                   "SEXTANT_DATABASE_URL",
                                   "SEXTANT_DATABASE_POOL_SIZE",
                                   "SEXTANT_DATABASE_CONNECT_TIMEOUT",
                                   "SEXTANT_DATABASE_STATEMENT_TIMEOUT",
                                   "SEXTANT_REDIS_URL",
                                   "SEXTANT_REDIS_TIMEOUT",
                                   "SEXTANT_REDIS_KEY_PREFIX",
                                   "SEXTANT_HTTP_LISTEN",
                                   "SEXTANT_HTTP_THREADS",
                                   "SEXTANT_HTTP_MAX_BODY_BYTES",
                                   "SEXTANT_HTTP_TLS_CERT_FILE",
                                   "SEXTANT_HTTP_TLS_KEY_FILE",
                                   "SEXTANT_GRPC_LISTEN",
                                   "SEXTANT_GRPC_TLS_CERT_FILE",
                                   "SEXTANT_GRPC_TLS_KEY_FILE",
                                   "SEXTANT_GRPC_TLS_CLIENT_CA_FILE",
                                   "SEXTANT_REPLICA_ID",
                                   "SEXTANT_LOG_LEVEL",
                                   "SEXTANT_AUTH_ENABLED",
                                   "SEXTANT_AUTH_HS256_SECRET",
                                   "SEXTANT_AUTH_HS256_SECRET_FILE",
                                   "SEXTANT_AUTH_RS256_PUBLIC_KEY_FILE",
                                   "SEXTANT_AUTH_RS256_PRIVATE_KEY_FILE",
                                   "SEXTANT_AUTH_ISSUER",
                                   "SEXTANT_AUTH_AUDIENCE",
                                   "SEXTANT_AUTH_CLOCK_SKEW",
                                   "SEXTANT_AUTH_POLICY_FILE",
                                   "default 60s",
                                   "SEXTANT_AUTH_DEV_SIGN_IN",
                                   "SEXTANT_SHUTDOWN_TIMEOUT",
                                   "SEXTANT_SNAPSHOTS_LOAD_TIMEOUT",
                                   "default 127.0.0.1:8080",
                                   "default 127.0.0.1:18000",
                                   "default 500ms"};

TL_TEST(test_help_lists_every_key)
{
    tl_assert_help_has(help_texts, sizeof(help_texts) / sizeof(help_texts[0]));
}

TL_MAIN_GROUP(setup, teardown)
