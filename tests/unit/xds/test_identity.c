/*
 * test_identity.c — which node ids an xDS client's credentials cover
 * (server/xds/identity.c): xds.auth and its checks at start, the SAN patterns of
 * xds.mtls.node_id_from, proxy tokens minted by `sextant token --node-pattern` and read
 * from the gRPC metadata, and why a client is refused.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/base/arena.h"
#include "server/base/glob.h"
#include "server/base/jwt.h"
#include "server/base/mem.h"
#include "server/config.h"
#include "server/xds/identity.h"

#define SECRET "0123456789abcdef0123456789abcdef-identity-secret"

static char tls_file[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tls_file, sizeof(tls_file), "/tmp/sx-identity-XXXXXX");
    int fd = mkstemp(tls_file);
    assert_true(fd >= 0);
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(tls_file);
    return 0;
}

/* xds_ident_create on extra must fail with a message holding want. */
static void refused(const char *const *extra, const char *want)
{
    sextant_config *cfg = tl_env_config(extra);
    xds_ident *id = NULL;
    sx_err err;
    sx_err_clear(&err);
    assert_int_equal(xds_ident_create(cfg, &id, &err), SX_EINVAL);
    assert_null(id);
    if (strstr(err.message, want) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", err.message, want);
    config_free(cfg);
}

TL_TEST(test_modes)
{
    refused(NULL, "xds.auth is not set");
    refused((const char *[]){"SEXTANT_XDS_AUTH=open", NULL}, "unknown mode \"open\"");
    refused((const char *[]){"SEXTANT_XDS_AUTH=none,jwt", NULL}, "cannot be combined");
    refused((const char *[]){"SEXTANT_XDS_AUTH=mtls", NULL}, "needs grpc.tls.cert_file");
    refused((const char *[]){"SEXTANT_XDS_AUTH=jwt", NULL}, "jwt needs auth.hs256_secret");

    char cert[128], key[128], ca[128];
    snprintf(cert, sizeof(cert), "SEXTANT_GRPC_TLS_CERT_FILE=%s", tls_file);
    snprintf(key, sizeof(key), "SEXTANT_GRPC_TLS_KEY_FILE=%s", tls_file);
    snprintf(ca, sizeof(ca), "SEXTANT_GRPC_TLS_CLIENT_CA_FILE=%s", tls_file);
    refused((const char *[]){"SEXTANT_XDS_AUTH=mtls", cert, key, ca, NULL},
            "mtls needs xds.mtls.node_id_from");
    refused((const char *[]){"SEXTANT_XDS_AUTH=mtls", cert, key, ca,
                             "SEXTANT_XDS_MTLS_NODE_ID_FROM=spiffe://example.org/ns/*/node/*",
                             NULL},
            "must hold {node} exactly once");
    refused((const char *[]){"SEXTANT_XDS_AUTH=mtls", cert, key, ca,
                             "SEXTANT_XDS_MTLS_NODE_ID_FROM={node}/{node}", NULL},
            "must hold {node} exactly once");

    sextant_config *cfg = tl_env_config((const char *[]){
        "SEXTANT_XDS_AUTH=mtls, jwt", cert, key, ca, "SEXTANT_AUTH_HS256_SECRET=" SECRET,
        "SEXTANT_XDS_MTLS_NODE_ID_FROM=spiffe://example.org/ns/*/node/{node}, "
        "{node}.proxies.example.org",
        NULL});
    xds_ident *id = NULL;
    sx_err err;
    sx_err_clear(&err);
    assert_int_equal(xds_ident_create(cfg, &id, &err), 0);
    assert_int_equal(xds_ident_modes(id), XDS_AUTH_MTLS | XDS_AUTH_JWT);
    assert_string_equal(xds_ident_modes_text(id), "mtls,jwt");
    xds_ident_destroy(id);
    config_free(cfg);

    cfg = tl_env_config((const char *[]){"SEXTANT_XDS_AUTH=none", NULL});
    assert_int_equal(xds_ident_create(cfg, &id, &err), 0);
    assert_int_equal(xds_ident_modes(id), 0);
    assert_string_equal(xds_ident_modes_text(id), "none");
    xds_ident_destroy(id);
    config_free(cfg);
}

TL_TEST(test_patterns)
{
    const char *spiffe = "spiffe://example.org/ns/*/node/{node}";
    assert_true(xds_ident_san_match(spiffe, "spiffe://example.org/ns/prod/node/edge-1", "edge-1"));
    assert_false(xds_ident_san_match(spiffe, "spiffe://example.org/ns/prod/node/edge-1", "edge-2"));
    assert_false(
        xds_ident_san_match(spiffe, "spiffe://example.org/ns/prod/node/edge-10", "edge-1"));
    /* `*` stays within one path segment; the trust domain is literal. */
    assert_false(xds_ident_san_match(spiffe, "spiffe://example.org/ns/a/b/node/edge-1", "edge-1"));
    assert_false(xds_ident_san_match(spiffe, "spiffe://evil.org/ns/prod/node/edge-1", "edge-1"));
    assert_false(xds_ident_san_match(spiffe, "spiffe://example.org/ns/prod/node/", ""));
    const char *dns = "{node}.proxies.example.org";
    assert_true(xds_ident_san_match(dns, "edge-1.proxies.example.org", "edge-1"));
    assert_false(xds_ident_san_match(dns, "edge-1.proxies.example.org.evil", "edge-1"));
    /* The node id is compared as text: glob characters in it are not patterns. */
    assert_false(xds_ident_san_match(dns, "edge-1.proxies.example.org", "*"));

    assert_true(sx_glob_match("edge-*", "edge-1"));
    assert_true(sx_glob_match("edge-*", "edge-"));
    assert_true(sx_glob_match("*", "anything/at all"));
    assert_true(sx_glob_match("a*b*c", "aXbYbc"));
    assert_false(sx_glob_match("edge-*", "db-1"));
    assert_false(sx_glob_match("edge-1", "edge-10"));
    assert_false(sx_glob_match("a*b*c", "aXbYbcd"));
}

/* The credentials of a call whose metadata carries authorization (NULL: none). */
static xds_cred *cred_with(const xds_ident *id, const char *authorization)
{
    grpc_metadata md = {0};
    grpc_metadata_array arr = {0};
    if (authorization) {
        md.key = grpc_slice_from_static_string("authorization");
        md.value = grpc_slice_from_copied_string(authorization);
        arr.count = arr.capacity = 1;
        arr.metadata = &md;
    }
    xds_cred *c = xds_cred_read(id, NULL, &arr, (int64_t)time(NULL));
    if (authorization)
        grpc_slice_unref(md.value);
    return c;
}

static char *mint(const sextant_config *cfg, const char *subject, const char *node,
                  const char *group)
{
    char *token = NULL;
    sx_err err;
    sx_err_clear(&err);
    const char *nodes[] = {node};
    const char *groups[] = {group};
    assert_int_equal(
        xds_ident_mint(cfg, subject, nodes, 1, groups, group ? 1 : 0, 3600, &token, &err), 0);
    return token;
}

/* The identity and the message of the last check(). */
static char identity[300], msg[512];

/* Checks node_id in group for authorization; returns the failure, identity and msg kept. */
static xds_auth_fail check(const xds_ident *id, const char *authorization, const char *node_id,
                           const char *group)
{
    xds_cred *c = cred_with(id, authorization);
    const char *who = NULL;
    xds_auth_fail f = xds_ident_check(id, c, node_id, group, &who, msg, sizeof(msg));
    snprintf(identity, sizeof(identity), "%s", who ? who : "(null)");
    xds_cred_free(c);
    return f;
}

TL_TEST(test_tokens)
{
    sextant_config *cfg = tl_env_config(
        (const char *[]){"SEXTANT_XDS_AUTH=jwt", "SEXTANT_AUTH_HS256_SECRET=" SECRET, NULL});
    xds_ident *id = NULL;
    sx_err err;
    sx_err_clear(&err);
    assert_int_equal(xds_ident_create(cfg, &id, &err), 0);

    char *edge = mint(cfg, "proxies:edge-*", "edge-*", NULL);
    char *grouped = mint(cfg, "edge-proxies", "edge-*", "edge");
    /* What a proxy token says, read back with the shared JWS checks. */
    sx_arena *a = sx_arena_create();
    sx_jwt_keys keys = {.hs256_secret = SECRET, .skew_s = 60};
    json_t *claims = NULL;
    assert_int_equal(sx_jwt_verify(&keys, edge, (int64_t)time(NULL), a, &claims, &err), 0);
    assert_string_equal(json_string_value(json_array_get(json_object_get(claims, "nodes"), 0)),
                        "edge-*");
    assert_null(json_object_get(claims, "role")); /* never a REST API token */
    assert_null(json_object_get(claims, "groups"));
    sx_arena_destroy(a);

    char bearer[4096], other[4096];
    snprintf(bearer, sizeof(bearer), "Bearer %s", edge);
    assert_int_equal(check(id, bearer, "edge-1", "edge"), XDS_AUTH_OK);
    assert_string_equal(identity, "jwt:proxies:edge-*");
    assert_int_equal(check(id, bearer, "db-1", "edge"), XDS_AUTH_FAIL_NODE);
    assert_non_null(strstr(msg, "do not cover node id \"db-1\""));
    assert_string_equal(xds_auth_fail_name(XDS_AUTH_FAIL_NODE), "node_not_covered");

    snprintf(other, sizeof(other), "Bearer %s", grouped);
    assert_int_equal(check(id, other, "edge-1", "edge"), XDS_AUTH_OK);
    assert_string_equal(identity, "jwt:edge-proxies");
    assert_int_equal(check(id, other, "edge-1", "payments"), XDS_AUTH_FAIL_GROUP);
    /* A status report's group is not known: only the node is checked. */
    assert_int_equal(check(id, other, "edge-1", NULL), XDS_AUTH_OK);

    assert_int_equal(check(id, NULL, "edge-1", "edge"), XDS_AUTH_FAIL_MISSING);
    assert_string_equal(xds_auth_fail_name(XDS_AUTH_FAIL_MISSING), "missing_credentials");
    /* A tampered token: the signature no longer matches. */
    bearer[strlen(bearer) - 2] = bearer[strlen(bearer) - 2] == 'A' ? 'B' : 'A';
    assert_int_equal(check(id, bearer, "edge-1", "edge"), XDS_AUTH_FAIL_TOKEN);
    assert_non_null(strstr(msg, "bad signature"));
    assert_int_equal(check(id, "Basic dXNlcjpwYXNz", "edge-1", "edge"), XDS_AUTH_FAIL_TOKEN);

    /* Minting refuses what no proxy could use. */
    char *t = NULL;
    const char *none[] = {""};
    assert_int_equal(xds_ident_mint(cfg, "s", none, 1, NULL, 0, 60, &t, &err), SX_EINVAL);
    assert_int_equal(xds_ident_mint(cfg, "s", NULL, 0, NULL, 0, 60, &t, &err), SX_EINVAL);
    const char *nodes[] = {"edge-*"};
    assert_int_equal(xds_ident_mint(cfg, "s", nodes, 1, NULL, 0, 0, &t, &err), SX_EINVAL);
    assert_null(t);

    sx_free(edge);
    sx_free(grouped);
    xds_ident_destroy(id);
    config_free(cfg);

    /* Under none everyone speaks for every node, as nobody. */
    cfg = tl_env_config((const char *[]){"SEXTANT_XDS_AUTH=none", NULL});
    assert_int_equal(xds_ident_create(cfg, &id, &err), 0);
    assert_int_equal(check(id, NULL, "edge-1", "edge"), XDS_AUTH_OK);
    assert_string_equal(identity, "");
    xds_ident_destroy(id);
    config_free(cfg);
}

TL_MAIN_GROUP(setup, teardown)
