/*
 * test_validate.c — the validation pipeline as the REST API sees it: one config (and
 * the other configs of its groups) in, every problem out with its stage, exact path and
 * message. One test per stage, a config failing several stages at once, the demo
 * config passing, references and conflicts across configs, and certificates made here
 * with OpenSSL (valid, expired, not yet valid, a key of another certificate).
 */
#include "tests/lib/testlib.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "server/base/buf.h"
#include "server/base/err.h"
#include "server/base/mem.h"
#include "server/validate/val_internal.h"
#include "server/validate/validate.h"

/* 2026-01-01T00:00:00Z: the time every certificate is checked against. */
#define NOW 1767225600LL
#define DAY 86400LL

/* ---------------------------------------------------------------- helpers */

typedef struct row {
    const char *stage, *path, *message, *conflict_with;
} row;

static void dump(const val_result *r)
{
    for (size_t i = 0; i < r->count; i++)
        print_message("  {\"%s\", \"%s\", \"%s\"%s%s%s},\n", val_stage_name(r->items[i].stage),
                      r->items[i].path, r->items[i].message,
                      r->items[i].conflict_with ? ", \"" : "",
                      r->items[i].conflict_with ? r->items[i].conflict_with : "",
                      r->items[i].conflict_with ? "\"" : "");
}

/* Asserts that r holds exactly the rows, in order. */
static void expect(const val_result *r, const row *rows, size_t n)
{
    bool same = r->count == n;
    for (size_t i = 0; same && i < n; i++) {
        const val_problem *p = &r->items[i];
        same = strcmp(val_stage_name(p->stage), rows[i].stage) == 0 &&
               strcmp(p->path, rows[i].path) == 0 && strcmp(p->message, rows[i].message) == 0 &&
               (rows[i].conflict_with == NULL
                    ? p->conflict_with == NULL
                    : p->conflict_with && strcmp(p->conflict_with, rows[i].conflict_with) == 0);
    }
    if (!same) {
        print_message("expected %zu problems, got %zu:\n", n, r->count);
        dump(r);
        fail_msg("problems differ");
    }
}

#define P(s, p, m)                                                                                 \
    {                                                                                              \
        .stage = s, .path = p, .message = m                                                        \
    }
#define PC(s, p, m, w)                                                                             \
    {                                                                                              \
        .stage = s, .path = p, .message = m, .conflict_with = w                                    \
    }
#define EXPECT(r, ...)                                                                             \
    do {                                                                                           \
        static const row rows_[] = {__VA_ARGS__};                                                  \
        expect((r), rows_, sizeof rows_ / sizeof rows_[0]);                                        \
    } while (0)

static const val_limits NO_LIMITS = {0};

/* Runs the pipeline on a single-quoted JSON spec; returns the code. */
static int run(const char *spec, const val_peer *peers, size_t npeers, const val_limits *limits,
               val_result *out)
{
    json_t *j = tl_json(spec);
    int rc = val_run(j, peers, npeers, limits ? limits : &NO_LIMITS, NOW, out);
    json_decref(j);
    return rc;
}

/* Runs spec as run does and asserts the code and that the result holds exactly the rows. */
static void check(int code, const char *spec, const val_peer *peers, size_t npeers,
                  const val_limits *limits, const row *rows, size_t n)
{
    val_result r;
    assert_int_equal(run(spec, peers, npeers, limits, &r), code);
    expect(&r, rows, n);
    val_result_free(&r);
}

#define CHECK(code, spec, peers, npeers, limits, ...)                                              \
    do {                                                                                           \
        static const row rows_[] = {__VA_ARGS__};                                                  \
        check((code), (spec), (peers), (npeers), (limits), rows_, sizeof rows_ / sizeof rows_[0]); \
    } while (0)

/* ---------------------------------------------------------------- certificates */

static EVP_PKEY *new_key(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    assert_non_null(k);
    return k;
}

static char *bio_text(BIO *b)
{
    char *data;
    long len = BIO_get_mem_data(b, &data);
    char *s = sx_strndup(data, (size_t)len);
    BIO_free(b);
    return s;
}

/* A self-signed certificate for key, valid from not_before to not_after (unix). */
static char *cert_pem(EVP_PKEY *key, long long not_before, long long not_after)
{
    X509 *x = X509_new();
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    ASN1_TIME_set(X509_getm_notBefore(x), (time_t)not_before);
    ASN1_TIME_set(X509_getm_notAfter(x), (time_t)not_after);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"shop.example.com",
                               -1, -1, 0);
    X509_set_issuer_name(x, name);
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_X509(b, x), 1);
    X509_free(x);
    return bio_text(b);
}

static char *key_pem(EVP_PKEY *key)
{
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL), 1);
    return bio_text(b);
}

/* A secret object {"name", "namespace", "cert_pem", "key_pem"}; takes the PEMs. */
static json_t *secret(const char *ns, const char *name, char *cert, char *key)
{
    json_t *s = json_pack("{s:s, s:s, s:s, s:s}", "name", name, "namespace", ns, "cert_pem", cert,
                          "key_pem", key);
    sx_free(cert);
    sx_free(key);
    return s;
}

/* A valid certificate and its key, as a secret. */
static json_t *good_secret(const char *ns, const char *name)
{
    EVP_PKEY *k = new_key();
    json_t *s = secret(ns, name, cert_pem(k, NOW - DAY, NOW + 365 * DAY), key_pem(k));
    EVP_PKEY_free(k);
    return s;
}

/* Runs the pipeline on spec (a json_t the caller keeps). */
static int run_json(const json_t *spec, const val_peer *peers, size_t npeers,
                    const val_limits *limits, val_result *out)
{
    return val_run(spec, peers, npeers, limits ? limits : &NO_LIMITS, NOW, out);
}

/* ---------------------------------------------------------------- the demo */

TL_TEST(test_demo_config_passes)
{
    const char *root = getenv("SEXTANT_SOURCE_DIR");
    char path[1024];
    if (root)
        snprintf(path, sizeof path, "%s/deploy/local/demo.json", root);
    else /* run by hand: the source tree from this file's path */
        snprintf(path, sizeof path, "%.*s/deploy/local/demo.json",
                 (int)(strstr(__FILE__, "/tests/unit/") - __FILE__), __FILE__);
    json_error_t e;
    json_t *demo = json_load_file(path, 0, &e);
    if (demo == NULL)
        fail_msg("%s: %s", path, e.text);
    /* The shipped limits, with TLS required on privileged ports. */
    sextant_config *cfg = tl_env_config(
        (const char *const[]){"SEXTANT_VALIDATION_TLS_ON_PRIVILEGED_PORTS=true", NULL});
    val_limits limits = val_limits_from_config(cfg);
    assert_true(limits.tls_on_privileged_ports);
    val_result r;
    int rc = run_json(demo, NULL, 0, &limits, &r);
    if (rc != 0)
        dump(&r);
    assert_int_equal(rc, 0);
    assert_int_equal(r.count, 0);
    val_result_free(&r);
    json_decref(demo);
    config_free(cfg);
}

/* ---------------------------------------------------------------- one test per stage */

TL_TEST(test_schema)
{
    CHECK(SX_EVALIDATION,
          "{'listeners': ["
          "  {'name': '', 'protocol': 'LISTENER_PROTOCOL_UNSPECIFIED', 'port': 8080,"
          "   'address': 'localhost', 'hostnames': ['ok.example.com', 'bad_host.example.com',"
          "   '*.wild.example.com', 'a.*.example.com', '-x.example.com', '10.0.0.1', '*', 'a..b']},"
          "  {'name': 'l2', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 70000}],"
          " 'http_routes': [{'name': '', 'rules': [{"
          "   'matches': [{'path': 'api', 'path_type': 'Exact'},"
          "     {'path': '/x(', 'path_type': 'RegularExpression'},"
          "     {'path': '/', 'method': 'FETCH', 'headers': ["
          "        {'name': 'x-v', 'value': '(a)\\\\1', 'type': 'RegularExpression'},"
          "        {'name': 'bad header', 'value': 'x'}],"
          "      'query_params': [{'name': 'q', 'value': '(?=x)', 'type': 'RegularExpression'}]}],"
          "   'backend_refs': [{'name': ''}],"
          "   'timeouts': {'request': '-1s'}, 'retry': {'attempts': 1, 'backoff': '0s'}}]}],"
          " 'backends': [{'name': '', 'connect_timeout': '0s', 'endpoints': ["
          "   {'address': 'echo.internal', 'port': 80}, {'address': '', 'port': 80}]}],"
          " 'secrets': [{'name': 's'}]}",
          NULL, 0, NULL,
          /* the codec and the IR's range rules */
          P("schema", "spec.listeners[1].port", "must be between 0 and 65535"),
          P("schema", "spec.listeners[0].name", "must not be empty"),
          P("schema", "spec.listeners[0].protocol", "must be set"),
          P("schema", "spec.listeners[0].address", "\"localhost\" is not an ip address"),
          P("schema", "spec.listeners[0].hostnames[1]",
            "\"bad_host.example.com\" is not a valid hostname: '_' is not allowed (letters, "
            "digits, hyphens and dots only)"),
          P("schema", "spec.listeners[0].hostnames[3]",
            "\"a.*.example.com\" is not a valid hostname: a wildcard must be the whole first "
            "label, as in \"*.example.com\""),
          P("schema", "spec.listeners[0].hostnames[4]",
            "\"-x.example.com\" is not a valid hostname: label \"-x\" starts or ends with a "
            "hyphen"),
          P("schema", "spec.listeners[0].hostnames[5]",
            "\"10.0.0.1\" is not a valid hostname: it is an ip address"),
          P("schema", "spec.listeners[0].hostnames[6]",
            "\"*\" is not a valid hostname: a wildcard must be the whole first label, as in "
            "\"*.example.com\""),
          P("schema", "spec.listeners[0].hostnames[7]",
            "\"a..b\" is not a valid hostname: empty label"),
          P("schema", "spec.http_routes[0].name", "must not be empty"),
          P("schema", "spec.http_routes[0].rules[0].matches[0].path", "must start with \"/\""),
          P("schema", "spec.http_routes[0].rules[0].matches[1].path",
            "invalid regular expression: missing ): /x("),
          P("schema", "spec.http_routes[0].rules[0].matches[2].method",
            "must be one of GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH"),
          P("schema", "spec.http_routes[0].rules[0].matches[2].headers[0].value",
            "invalid regular expression: invalid escape sequence: \\1 (RE2 has no "
            "backreferences)"),
          P("schema", "spec.http_routes[0].rules[0].matches[2].headers[1].name",
            "\"bad header\" is not a valid header name"),
          P("schema", "spec.http_routes[0].rules[0].matches[2].query_params[0].value",
            "invalid regular expression: invalid perl operator: (?= (RE2 has no lookahead)"),
          P("schema", "spec.http_routes[0].rules[0].backend_refs[0].name", "must not be empty"),
          P("schema", "spec.http_routes[0].rules[0].timeouts.request", "must not be negative"),
          P("schema", "spec.http_routes[0].rules[0].retry.backoff", "must be positive"),
          P("schema", "spec.backends[0].name", "must not be empty"),
          P("schema", "spec.backends[0].connect_timeout", "must be positive"),
          P("schema", "spec.backends[0].endpoints[0].address",
            "\"echo.internal\" is not an ip address: xDS clients take endpoint addresses as they "
            "are and do not resolve names"),
          P("schema", "spec.backends[0].endpoints[1].address", "must not be empty"),
          P("schema", "spec.secrets[0].cert_pem", "must not be empty"),
          P("schema", "spec.secrets[0].key_pem", "must not be empty"),
          /* later stages still ran on what decoded: the rule's only backend has no name */
          P("traps", "spec.http_routes[0].rules[0]",
            "rule has no action: no backend_ref with a weight above 0 and no RequestRedirect "
            "filter"));
}

TL_TEST(test_semantic)
{
    CHECK(SX_EVALIDATION,
          "{'listeners': ["
          "  {'name': 'web', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'address': '0.0.0.0',"
          "   'port': 8080, 'attached_routes': ['web', 'missing']},"
          "  {'name': 'web', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'address': '10.0.0.1',"
          "   'port': 8080, 'attached_routes': ['redirect']}],"
          " 'http_routes': ["
          "  {'name': 'web', 'namespace': 'shop', 'rules': [{'backend_refs': ["
          "     {'name': 'api'}, {'name': 'cart', 'namespace': 'other'}]}]},"
          "  {'name': 'web', 'namespace': 'shop', 'rules': [{'backend_refs': [{'name': 'api'}]}]},"
          "  {'name': 'redirect', 'namespace': 'shop', 'rules': [{'filters': [{"
          "     'type': 'RequestRedirect', 'request_redirect': {'status_code': 305}}]}]}],"
          " 'backends': ["
          "  {'name': 'api', 'namespace': 'shop', 'endpoints': [{'address': '192.0.2.1', 'port': "
          "80}]},"
          "  {'name': 'cart', 'namespace': 'shop', 'endpoints': [{'address': '192.0.2.2', 'port': "
          "80}]}]}",
          NULL, 0, NULL,
          P("semantic", "spec.http_routes[0].rules[0].backend_refs[1]",
            "unknown backend \"other/cart\" (there is a backend \"shop/cart\" in this config)"),
          P("semantic", "spec.listeners[0].attached_routes[1]",
            "unknown route \"missing\": neither this config nor another config of its groups "
            "has it"),
          P("semantic", "spec.listeners[1].port",
            "10.0.0.1:8080 is already taken by spec.listeners[0] (\"web\")"),
          P("semantic", "spec.listeners[1].name",
            "duplicate listener name \"web\" (also spec.listeners[0])"),
          P("semantic", "spec.http_routes[1].name",
            "duplicate http route name \"shop/web\" (also spec.http_routes[0])"),
          /* found by the translator check alone */
          P("semantic", "spec.http_routes[2].rules[0].filters[0].request_redirect.status_code",
            "redirect status 305 is not supported: use 301, 302, 303, 307 or 308"));
}

TL_TEST(test_dependency)
{
    /* The peer holds the secret "team/shared" and one of two "dup" secrets. */
    json_t *peer_spec = json_pack("{s:[o, o]}", "secrets", good_secret("team", "shared"),
                                  good_secret("team", "dup"));
    val_peer peer = {.id = "c-2", .ns = "team", .name = "web", .spec = peer_spec};
    json_t *spec =
        tl_json("{'listeners': ["
                "  {'name': 'tls', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 8443,"
                "   'tls': {'secret_refs': ['missing', 'shared', 'dup', 'team/dup']},"
                "   'backend_tls': {'client_certificate_ref': 'nope'}},"
                "  {'name': 'bare', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 9443}]}");
    json_object_set_new(spec, "secrets", json_pack("[o]", good_secret("shop", "dup")));
    val_result r;
    int rc = run_json(spec, &peer, 1, NULL, &r);
    assert_int_equal(rc, SX_EVALIDATION);
    EXPECT(&r,
           P("dependency", "spec.listeners[0].tls.secret_refs[0]",
             "unknown secret \"missing\": neither this config nor another config of its groups "
             "has it"),
           P("dependency", "spec.listeners[0].tls.secret_refs[2]",
             "secret reference \"dup\" is ambiguous: \"shop/dup\" and \"team/dup\" match; use the "
             "qualified name"),
           P("dependency", "spec.listeners[0].backend_tls.client_certificate_ref",
             "unknown secret \"nope\": neither this config nor another config of its groups has "
             "it"),
           P("dependency", "spec.listeners[1].tls",
             "a listener that terminates tls needs at least one secret"));
    val_result_free(&r);
    json_decref(spec);
    json_decref(peer_spec);
}

TL_TEST(test_security)
{
    EVP_PKEY *k1 = new_key(), *k2 = new_key();
    json_t *secrets = json_array();
    json_array_append_new(secrets,
                          secret("shop", "good", cert_pem(k1, NOW - DAY, NOW + DAY), key_pem(k1)));
    json_array_append_new(
        secrets,
        secret("shop", "expired", cert_pem(k1, NOW - 730 * DAY, NOW - 365 * DAY), key_pem(k1)));
    json_array_append_new(
        secrets, secret("shop", "early", cert_pem(k1, NOW + DAY, NOW + 2 * DAY), key_pem(k1)));
    json_array_append_new(
        secrets, secret("shop", "mismatch", cert_pem(k1, NOW - DAY, NOW + DAY), key_pem(k2)));
    json_array_append_new(secrets, secret("shop", "junk", sx_strdup("not a certificate"),
                                          sx_strdup("-----BEGIN PRIVATE KEY-----\nAAAA\n"
                                                    "-----END PRIVATE KEY-----\n")));
    /* A chain whose second certificate has expired. */
    char *leaf = cert_pem(k1, NOW - DAY, NOW + DAY), *old = cert_pem(k2, NOW - 9 * DAY, NOW - DAY);
    char *chain = sx_asprintf("%s%s", leaf, old);
    json_array_append_new(secrets, secret("shop", "chain", chain, key_pem(k1)));
    sx_free(leaf);
    sx_free(old);

    json_t *spec = tl_json(
        "{'listeners': ["
        "  {'name': 'admin', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 443},"
        "  {'name': 'plain', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80},"
        "  {'name': 'secure', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 8443,"
        "   'tls': {'secret_refs': ['shop/good'], 'frontend_validation': {'ca_pems': ['junk']}}}],"
        " 'backends': [{'name': 'b', 'endpoints': ["
        "   {'address': '10.1.2.3', 'port': 80}, {'address': '172.20.0.1', 'port': 80},"
        "   {'address': '192.0.2.10', 'port': 80}, {'address': '::1', 'port': 80},"
        "   {'address': 'fe80::1', 'port': 80}, {'address': '::ffff:192.168.1.1', 'port': 80},"
        "   {'address': '172.32.0.1', 'port': 80}]}]}");
    json_object_set_new(spec, "secrets", secrets);
    val_limits policies = {.tls_on_privileged_ports = true, .refuse_private_endpoints = true};
    val_result r;
    int rc = run_json(spec, NULL, 0, &policies, &r);
    assert_int_equal(rc, SX_EVALIDATION);
    EXPECT(&r,
           P("security", "spec.secrets[1].cert_pem", "certificate expired at 2025-01-01T00:00:00Z"),
           P("security", "spec.secrets[2].cert_pem",
             "certificate is not valid before 2026-01-02T00:00:00Z"),
           P("security", "spec.secrets[3].key_pem", "private key does not match the certificate"),
           P("security", "spec.secrets[4].cert_pem", "certificate does not parse as PEM X.509"),
           P("security", "spec.secrets[4].key_pem",
             "private key does not parse as PEM (encrypted keys are not supported)"),
           P("security", "spec.secrets[5].cert_pem",
             "certificate 2 of the chain expired at 2025-12-31T00:00:00Z"),
           P("security", "spec.listeners[0].tls",
             "port 443 is privileged: policy requires tls on ports below 1024 other than 80 (set "
             "tls.enabled or use protocol HTTPS)"),
           P("security", "spec.listeners[2].tls.frontend_validation.ca_pems[0]",
             "ca certificate does not parse as PEM X.509"),
           P("security", "spec.backends[0].endpoints[0].address",
             "private address 10.1.2.3 (in 10.0.0.0/8) is refused by policy"),
           P("security", "spec.backends[0].endpoints[1].address",
             "private address 172.20.0.1 (in 172.16.0.0/12) is refused by policy"),
           P("security", "spec.backends[0].endpoints[3].address",
             "private address ::1 (in ::1/128) is refused by policy"),
           P("security", "spec.backends[0].endpoints[4].address",
             "private address fe80::1 (in fe80::/10) is refused by policy"),
           P("security", "spec.backends[0].endpoints[5].address",
             "private address ::ffff:192.168.1.1 (in 192.168.0.0/16) is refused by policy"));
    val_result_free(&r);

    /* Without the policies, only the certificates are refused. */
    rc = run_json(spec, NULL, 0, NULL, &r);
    assert_int_equal(rc, SX_EVALIDATION);
    assert_int_equal(r.count, 7);
    val_result_free(&r);
    json_decref(spec);
    EVP_PKEY_free(k1);
    EVP_PKEY_free(k2);
}

TL_TEST(test_quota)
{
    const char *spec = "{'listeners': ["
                       "  {'name': 'a', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 8080},"
                       "  {'name': 'b', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 8081}],"
                       " 'http_routes': [{'name': 'h'}], 'grpc_routes': [{'name': 'g'}],"
                       " 'stream_routes': [{'name': 's', 'kind': 'ROUTE_KIND_TCP'}],"
                       " 'backends': ["
                       "  {'name': 'x', 'endpoints': [{'address': '192.0.2.1', 'port': 80},"
                       "                               {'address': '192.0.2.2', 'port': 80}]},"
                       "  {'name': 'y', 'endpoints': [{'address': '192.0.2.3', 'port': 80}]}]}";
    json_t *peer_spec =
        tl_json("{'listeners': [{'name': 'p', 'protocol': 'LISTENER_PROTOCOL_HTTP', "
                "'port': 9090}],"
                " 'http_routes': [{'name': 'ph'}],"
                " 'backends': [{'name': 'z', 'endpoints': [{'address': '192.0.2.9', "
                "'port': 80}]}]}");
    val_peer peer = {.id = "c-2", .ns = "team", .name = "web", .spec = peer_spec};

    /* Within every limit. */
    val_limits roomy = {2, 3, 2, 3, 3, 4, 3, 4, false, false, 0, 0, NULL, 0};
    val_result r;
    assert_int_equal(run(spec, &peer, 1, &roomy, &r), 0);
    val_result_free(&r);

    val_limits tight = {1, 2, 1, 2, 2, 3, 2, 3, false, false, 0, 0, NULL, 0};
    CHECK(SX_EVALIDATION, spec, &peer, 1, &tight,
          P("quota", "spec.listeners", "2 listeners exceed the limit of 1 per config"),
          P("quota", "spec", "3 routes (http, grpc and stream) exceed the limit of 2 per config"),
          P("quota", "spec.backends", "2 backends exceed the limit of 1 per config"),
          P("quota", "spec.backends", "3 endpoints exceed the limit of 2 per config"),
          P("quota", "spec.listeners",
            "3 listeners in this config and the 1 other config of its groups exceed the limit of "
            "2 per group"),
          P("quota", "spec",
            "4 routes in this config and the 1 other config of its groups exceed the limit of 3 "
            "per group"),
          P("quota", "spec.backends",
            "3 backends in this config and the 1 other config of its groups exceed the limit of "
            "2 per group"),
          P("quota", "spec.backends",
            "4 endpoints in this config and the 1 other config of its groups exceed the limit of "
            "3 per group"));
    json_decref(peer_spec);
}

/* The peer of the conflict tests: team/web (c-2). */
static const char *const PEER_WEB =
    "{'listeners': [{'name': 'team-edge', 'protocol': 'LISTENER_PROTOCOL_HTTP',"
    "   'address': '10.0.0.5', 'port': 8080, 'attached_routes': ['team/web']}],"
    " 'http_routes': [{'name': 'web', 'namespace': 'team', 'hostnames': ['SHOP.example.com'],"
    "   'rules': [{'matches': [{'path': '/api', 'path_type': 'PathPrefix', 'method': 'GET'}],"
    "              'backend_refs': [{'name': 'web'}]}]}],"
    " 'grpc_routes': [{'name': 'rpc', 'namespace': 'team', 'hostnames': ['rpc.example.com'],"
    "   'rules': [{'matches': [{'service': 'shop.Cart', 'method': 'Get'}],"
    "              'backend_refs': [{'name': 'web'}]}]}],"
    " 'backends': [{'name': 'web', 'namespace': 'team', 'endpoints': ["
    "   {'address': '192.0.2.50', 'port': 80}]}]}";

/* What a config's first listener on port 8080 and its first http route match, GET /api on
 * shop.example.com, meet in PEER_WEB. */
#define CONFLICT_PORT                                                                              \
    PC("conflict", "spec.listeners[0].port",                                                       \
       "0.0.0.0:8080 is already claimed by listener \"team-edge\" of config team/web (c-2)",       \
       "team/web (c-2)")
#define CONFLICT_ROUTE                                                                             \
    PC("conflict", "spec.http_routes[0].rules[0].matches[0]",                                      \
       "hostname \"shop.example.com\" with PathPrefix \"/api\", method GET is already routed "     \
       "by http route \"team/web\" of config team/web (c-2)",                                      \
       "team/web (c-2)")

TL_TEST(test_conflict)
{
    json_t *peer_spec = tl_json(PEER_WEB);
    val_peer peer = {.id = "c-2", .ns = "team", .name = "web", .spec = peer_spec};
    val_result r;
    CHECK(
        SX_ECONFLICT,
        "{'listeners': [{'name': 'shop-edge', 'protocol': 'LISTENER_PROTOCOL_HTTP',"
        "   'port': 8080, 'attached_routes': ['shop/web', 'shop/rpc']},"
        "  {'name': 'other-port', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'address': '10.0.0.5',"
        "   'port': 8081}],"
        " 'http_routes': [{'name': 'web', 'namespace': 'shop', 'hostnames': ['shop.example.com'],"
        "   'rules': [{'matches': [{'path': '/api/', 'path_type': 'PathPrefix', 'method': 'GET'},"
        "                          {'path': '/api', 'path_type': 'PathPrefix', 'method': 'POST'}],"
        "              'backend_refs': [{'name': 'web'}]}]}],"
        " 'grpc_routes': [{'name': 'rpc', 'namespace': 'shop', 'hostnames': ['rpc.example.com'],"
        "   'rules': [{'matches': [{'service': 'shop.Cart', 'method': 'Get'}],"
        "              'backend_refs': [{'name': 'web'}]}]}],"
        " 'backends': [{'name': 'web', 'namespace': 'shop', 'endpoints': ["
        "   {'address': '192.0.2.60', 'port': 80}]}]}",
        &peer, 1, NULL, CONFLICT_PORT, CONFLICT_ROUTE,
        PC("conflict", "spec.grpc_routes[0].rules[0].matches[0]",
           "hostname \"rpc.example.com\" with service \"shop.Cart\", method \"Get\" is already "
           "routed by grpc route \"team/rpc\" of config team/web (c-2)",
           "team/web (c-2)"));

    /* Conflicts and another problem: the code is the validation error. */
    assert_int_equal(
        run("{'listeners': [{'name': 'x', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 8080,"
            "  'attached_routes': ['nothing']}]}",
            &peer, 1, NULL, &r),
        SX_EVALIDATION);
    assert_int_equal(r.count, 2);
    assert_string_equal(val_stage_name(r.items[0].stage), "semantic");
    assert_string_equal(val_stage_name(r.items[1].stage), "conflict");
    assert_string_equal(r.items[1].conflict_with, "team/web (c-2)");
    val_result_free(&r);
    json_decref(peer_spec);
}

TL_TEST(test_traps)
{
    CHECK(SX_EVALIDATION,
          "{'listeners': ["
          "  {'name': 'edge', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 8080,"
          "   'hostnames': ['a.example.com'], 'attached_routes': ['shop/b-only', 'shop/empty']},"
          "  {'name': 'mesh', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'port': 0,"
          "   'hostnames': ['*.svc.test', 'echo.svc.test'], 'attached_routes': ['shop/rpc']}],"
          " 'http_routes': ["
          "  {'name': 'b-only', 'namespace': 'shop', 'hostnames': ['b.example.com'],"
          "   'rules': [{'backend_refs': [{'name': 'api'}]}]},"
          "  {'name': 'empty', 'namespace': 'shop', 'rules': ["
          "   {'backend_refs': [{'name': 'nothing-there'}]}, {'matches': [{'path': '/none'}]}]}],"
          " 'grpc_routes': [{'name': 'rpc', 'namespace': 'shop', 'rules': ["
          "   {'backend_refs': [{'name': 'api', 'weight': 0}]}]}],"
          " 'backends': ["
          "  {'name': 'api', 'namespace': 'shop', 'endpoints': ["
          "    {'address': '192.0.2.1', 'port': 80, 'zone': 'z1'},"
          "    {'address': '192.0.2.2', 'port': 80},"
          "    {'address': '192.0.2.3', 'port': 80, 'zone': 'z2'}]},"
          "  {'name': 'nothing-there', 'namespace': 'shop'}]}",
          NULL, 0, NULL,
          P("traps", "spec.http_routes[1].rules[0].backend_refs[0]",
            "backend \"shop/nothing-there\" has no endpoints: clients accept it and fail every "
            "call"),
          P("traps", "spec.http_routes[1].rules[1]",
            "rule has no action: no backend_ref with a weight above 0 and no RequestRedirect "
            "filter"),
          P("traps", "spec.grpc_routes[0].rules[0]",
            "rule has no action: no backend_ref with a weight above 0"),
          P("traps", "spec.listeners[0].attached_routes[0]",
            "route \"shop/b-only\" has no hostname that listener \"edge\" serves: its virtual host "
            "can never match"),
          P("traps", "spec.listeners[1].hostnames[0]",
            "proxyless grpc clients dial an exact name: the wildcard \"*.svc.test\" matches none "
            "of them"),
          P("traps", "spec.backends[0].endpoints[1].zone",
            "zone is not set while other endpoints of this backend have one: set it on all "
            "endpoints or on none"));
}

/* ---------------------------------------------------------------- across stages and configs */

TL_TEST(test_every_stage_at_once)
{
    EVP_PKEY *k = new_key();
    json_t *peer_spec = tl_json(PEER_WEB);
    val_peer peer = {.id = "c-2", .ns = "team", .name = "web", .spec = peer_spec};
    json_t *spec =
        tl_json("{'listeners': ["
                "  {'name': 'edge', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 8080,"
                "   'hostnames': ['shop.example.com'], 'attached_routes': ['shop/web']},"
                "  {'name': 'tls', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 8443,"
                "   'hostnames': ['bad_name'], 'tls': {'secret_refs': ['shop/cert', 'gone']}}],"
                " 'http_routes': [{'name': 'web', 'namespace': 'shop',"
                "   'hostnames': ['shop.example.com'], 'rules': ["
                "   {'matches': [{'path': '/api', 'method': 'GET'}],"
                "    'backend_refs': [{'name': 'api'}, {'name': 'missing'}]},"
                "   {'matches': [{'path': '/empty'}], 'backend_refs': [{'name': 'idle'}]}]}],"
                " 'backends': ["
                "  {'name': 'api', 'namespace': 'shop', 'endpoints': ["
                "    {'address': '192.0.2.1', 'port': 80}, {'address': '192.0.2.2', 'port': 80}]},"
                "  {'name': 'idle', 'namespace': 'shop'}]}");
    json_object_set_new(
        spec, "secrets",
        json_pack("[o]",
                  secret("shop", "cert", cert_pem(k, NOW - 9 * DAY, NOW - DAY), key_pem(k))));
    val_limits limits = {.config_endpoints = 1};
    val_result r;
    int rc = run_json(spec, &peer, 1, &limits, &r);
    assert_int_equal(rc, SX_EVALIDATION);
    EXPECT(&r,
           P("schema", "spec.listeners[1].hostnames[0]",
             "\"bad_name\" is not a valid hostname: '_' is not allowed (letters, digits, hyphens "
             "and dots only)"),
           P("semantic", "spec.http_routes[0].rules[0].backend_refs[1]",
             "unknown backend \"shop/missing\": neither this config nor another config of its "
             "groups has it"),
           P("dependency", "spec.listeners[1].tls.secret_refs[1]",
             "unknown secret \"gone\": neither this config nor another config of its groups has "
             "it"),
           P("security", "spec.secrets[0].cert_pem", "certificate expired at 2025-12-31T00:00:00Z"),
           P("quota", "spec.backends", "2 endpoints exceed the limit of 1 per config"),
           CONFLICT_PORT, CONFLICT_ROUTE,
           P("traps", "spec.http_routes[0].rules[1].backend_refs[0]",
             "backend \"shop/idle\" has no endpoints: clients accept it and fail every call"));
    json_t *js = val_result_to_json(&r);
    assert_int_equal(json_array_size(js), r.count);
    json_t *first = json_array_get(js, 0), *conflict = json_array_get(js, 5);
    assert_string_equal(json_string_value(json_object_get(first, "stage")), "schema");
    assert_string_equal(json_string_value(json_object_get(first, "path")),
                        "spec.listeners[1].hostnames[0]");
    assert_null(json_object_get(first, "conflict_with"));
    assert_string_equal(json_string_value(json_object_get(conflict, "conflict_with")),
                        "team/web (c-2)");
    json_decref(js);
    val_result_free(&r);
    json_decref(spec);
    json_decref(peer_spec);
    EVP_PKEY_free(k);
}

TL_TEST(test_references_across_configs)
{
    /* The peer owns the backend, a route and the certificates. */
    json_t *peer_spec = tl_json("{'http_routes': [{'name': 'status', 'namespace': 'team',"
                                "   'hostnames': ['status.example.com'],"
                                "   'rules': [{'backend_refs': [{'name': 'web'}]}]}],"
                                " 'backends': [{'name': 'web', 'namespace': 'team', 'endpoints': ["
                                "   {'address': '192.0.2.50', 'port': 80}]}]}");
    json_object_set_new(
        peer_spec, "secrets",
        json_pack("[o, o]", good_secret("team", "edge-cert"), good_secret("team", "client-cert")));
    val_peer peer = {.id = "c-2", .ns = "team", .name = "web", .spec = peer_spec};
    const char *spec =
        "{'listeners': [{'name': 'edge', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 8443,"
        "   'tls': {'secret_refs': ['edge-cert']},"
        "   'backend_tls': {'client_certificate_ref': 'team/client-cert'},"
        "   'attached_routes': ['shop/web', 'status']}],"
        " 'http_routes': [{'name': 'web', 'namespace': 'shop', 'hostnames': ['shop.example.com'],"
        "   'rules': [{'backend_refs': [{'name': 'web', 'namespace': 'team'}]}]}]}";
    val_result r;
    int rc = run(spec, &peer, 1, NULL, &r);
    if (rc != 0)
        dump(&r);
    assert_int_equal(rc, 0);
    val_result_free(&r);

    /* Without the peer nothing resolves. */
    CHECK(SX_EVALIDATION, spec, NULL, 0, NULL,
          P("semantic", "spec.http_routes[0].rules[0].backend_refs[0]",
            "unknown backend \"team/web\": neither this config nor another config of its groups "
            "has it"),
          P("semantic", "spec.listeners[0].attached_routes[1]",
            "unknown route \"status\": neither this config nor another config of its groups has "
            "it"),
          P("dependency", "spec.listeners[0].tls.secret_refs[0]",
            "unknown secret \"edge-cert\": neither this config nor another config of its groups "
            "has it"),
          P("dependency", "spec.listeners[0].backend_tls.client_certificate_ref",
            "unknown secret \"team/client-cert\": neither this config nor another config of its "
            "groups has it"));

    /* A backend the peer also defines would be two clusters of one name once merged. */
    CHECK(SX_EVALIDATION,
          "{'backends': [{'name': 'web', 'namespace': 'team', 'endpoints': ["
          "  {'address': '192.0.2.51', 'port': 80}]}]}",
          &peer, 1, NULL,
          P("semantic", "spec.backends[0].name",
            "backend \"team/web\" is also defined by config team/web (c-2)"));
    json_decref(peer_spec);
}

TL_TEST(test_names_that_collide_once_merged)
{
    /* The peer attaches its route by bare name and serves echo.test to proxyless clients. */
    json_t *peer_spec = tl_json(
        "{'listeners': [{'name': 'team-edge', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 9000,"
        "   'attached_routes': ['status']},"
        "  {'name': 'mesh', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'port': 0,"
        "   'hostnames': ['echo.test']}],"
        " 'http_routes': [{'name': 'status', 'namespace': 'team',"
        "   'hostnames': ['status.example.com'], 'rules': [{'backend_refs': [{'name': 'web'}]}]}],"
        " 'backends': [{'name': 'web', 'namespace': 'team', 'endpoints': ["
        "   {'address': '192.0.2.50', 'port': 80}]}]}");
    val_peer peer = {.id = "c-2", .ns = "team", .name = "web", .spec = peer_spec};
    CHECK(
        SX_EVALIDATION,
        "{'listeners': [{'name': 'echo.test', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 9001},"
        "  {'name': 'own-mesh', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'port': 0,"
        "   'hostnames': ['echo.test', 'own.test', 'own.test']}],"
        " 'http_routes': [{'name': 'status', 'namespace': 'shop', 'hostnames': "
        "['shop.example.com'],"
        "   'rules': [{'backend_refs': [{'name': 'web', 'namespace': 'team'}]}]}]}",
        &peer, 1, NULL,
        P("semantic", "spec.listeners[0].name",
          "the Listener resource \"echo.test\" is also produced by listener \"mesh\" of config "
          "team/web (c-2)"),
        P("semantic", "spec.listeners[1].hostnames[0]",
          "the Listener resource \"echo.test\" is also produced by spec.listeners[0] "
          "(\"echo.test\")"),
        P("semantic", "spec.listeners[1].hostnames[2]",
          "the Listener resource \"own.test\" is also produced by spec.listeners[1] "
          "(\"own-mesh\")"),
        /* the new route makes the peer's bare reference ambiguous: the translator check */
        P("semantic", "spec",
          "merged with this config, config team/web (c-2) does not translate: "
          "listeners[0].attached_routes[0]: route reference \"status\" is ambiguous: "
          "\"shop/status\" and \"team/status\" match; use the qualified name"));
    json_decref(peer_spec);
}

TL_TEST(test_broken_documents)
{
    /* Null elements and wrong types: the later stages see what decoded, nothing more. */
    json_t *broken_peer = tl_json("{'listeners': [null, {'name': 7}], 'backends': 'none'}");
    val_peer peer = {.id = "c-9", .ns = "old", .name = "broken", .spec = broken_peer};
    val_result r;
    CHECK(SX_EVALIDATION,
          "{'listeners': [null, {'name': 5}],"
          " 'http_routes': [{'name': 'r', 'hostnames': [3], 'rules': [null, {"
          "   'matches': [null], 'backend_refs': [null, {'name': 'x', 'weight': 'a'}]}]}],"
          " 'backends': [{'name': 'b', 'endpoints': [null, {'address': 1, 'port': 80}]}],"
          " 'secrets': [null]}",
          &peer, 1, NULL, P("schema", "spec.listeners[0]", "must not be null"),
          P("schema", "spec.listeners[1].name", "expected a string, got a number"),
          P("schema", "spec.http_routes[0].hostnames[0]", "expected a string, got a number"),
          P("schema", "spec.http_routes[0].rules[0]", "must not be null"),
          P("schema", "spec.http_routes[0].rules[1].matches[0]", "must not be null"),
          P("schema", "spec.http_routes[0].rules[1].backend_refs[0]", "must not be null"),
          P("schema", "spec.http_routes[0].rules[1].backend_refs[1].weight",
            "expected a number, got a string"),
          P("schema", "spec.backends[0].endpoints[0]", "must not be null"),
          P("schema", "spec.backends[0].endpoints[1].address", "expected a string, got a number"),
          P("schema", "spec.secrets[0]", "must not be null"),
          P("schema", "spec.listeners[1].protocol", "must be set"),
          P("semantic", "spec.http_routes[0].rules[1].backend_refs[1]",
            "unknown backend \"x\": neither this config nor another config of its groups has it"),
          P("traps", "spec.http_routes[0].rules[1]",
            "rule has no action: no backend_ref with a weight above 0 and no RequestRedirect "
            "filter"));

    CHECK(SX_EVALIDATION, "{'listeners': 'all'}", NULL, 0, NULL,
          P("schema", "spec.listeners", "expected an array, got a string"));

    json_t *array = json_array();
    assert_int_equal(run_json(array, NULL, 0, NULL, &r), SX_EVALIDATION);
    EXPECT(&r, P("schema", "spec", "expected an object, got an array"));
    val_result_free(&r);
    json_decref(array);
    json_decref(broken_peer);
}

/* ---------------------------------------------------------------- regular expressions */

/* ---------------------------------------------------------------- regular expressions */

/* Patterns are compiled with RE2, as Envoy and gRPC compile them: what a POSIX engine
 * takes but RE2 does not (backreferences, lookaround, nested counts) is refused. */
TL_TEST(test_regex_is_re2)
{
    static const char *const good[] = {
        "^/api/v[0-9]+/.*$",
        "(?i)foo",
        "(?:a|b)+?",
        "\\d{3}-\\w+",
        "[[:alpha:]_]+",
        "x{",
        "a{2,9}",
        "(?P<id>[0-9]+)",
        "[\\x00-\\x1f]",
        "\\12",
        "a|",
        "[]a]",
        "\\.\\/",
        "\\Qa.b*\\E",
        "",
    };
    char why[160];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!val_regex_check(good[i], 0, why, sizeof why))
            fail_msg("\"%s\" refused: %s", good[i], why);

    static const char *const bad[][2] = {
        {"(a)\\1", "invalid escape sequence: \\1 (RE2 has no backreferences)"},
        {"(?=a)", "invalid perl operator: (?= (RE2 has no lookahead)"},
        {"(?!a)", "invalid perl operator: (?! (RE2 has no lookahead)"},
        {"(?<=x)y", "invalid perl operator: (?< (RE2 has no lookbehind; a named group is "
                    "(?P<name>re))"},
        {"(?>a)", "invalid perl operator: (?>"},
        /* each count is allowed, their product (10^6) is not */
        {"((a{1,100}){1,100}){1,100}",
         "invalid repetition size: {1,100} (RE2 allows counts up to 1000, nested counts "
         "multiplied)"},
        {"a{1001}", "invalid repetition size: {1001} (RE2 allows counts up to 1000, nested counts "
                    "multiplied)"},
        {"a**", "bad repetition operator: **"},
        {"a++", "bad repetition operator: ++"},
        {"*a", "no argument for repetition operator: *"},
        {"(a", "missing ): (a"},
        {"a)", "unexpected ): a)"},
        {"[z-a]", "invalid character class range: z-a"},
        {"[a", "missing ]: [a"},
        {"\\y", "invalid escape sequence: \\y"},
        {"[[:foo:]]", "invalid character class range: [:foo:]"},
        {"a\\", "trailing \\"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (val_regex_check(bad[i][0], 0, why, sizeof why))
            fail_msg("\"%s\" accepted", bad[i][0]);
        if (strcmp(why, bad[i][1]) != 0)
            fail_msg("\"%s\": got \"%s\", want \"%s\"", bad[i][0], why, bad[i][1]);
    }
}

/* A program larger than the limit (Envoy's re2.max_program_size.error_level, 100 unless
 * configured) is refused, and the limit is the caller's. */
TL_TEST(test_regex_program_size_limit)
{
    char why[160];
    /* 0 is Envoy's default, 100: a thousand copies of "a" are over it */
    assert_false(val_regex_check("a{2,1000}", 0, why, sizeof why));
    assert_non_null(strstr(why, "is over the limit of 100 (Envoy's "
                                "re2.max_program_size.error_level)"));
    assert_false(val_regex_check("a{2,1000}", 100, why, sizeof why));
    assert_false(val_regex_check("a{2,1000}", 1000, why, sizeof why));
    assert_non_null(strstr(why, "is over the limit of 1000"));
    assert_true(val_regex_check("a{2,1000}", 5000, why, sizeof why));
    /* a program far over the limit is not built in full */
    sx_buf big = {0};
    for (int i = 0; i < 200; i++)
        sx_buf_puts(&big, "(?:a{1000})");
    assert_false(val_regex_check(sx_buf_cstr(&big), 1000, why, sizeof why));
    assert_non_null(strstr(why, "over the limit of 1000"));
    sx_buf_free(&big);

    /* The pipeline takes the limit from val_limits; the error names the field. */
    const char *spec =
        "{'http_routes': [{'name': 'h', 'rules': [{'backend_refs': [{'name': 'b'}],"
        "   'matches': [{'path': '/a{2,1000}', 'path_type': 'RegularExpression'}]}]}],"
        " 'backends': [{'name': 'b', 'endpoints': [{'address': '192.0.2.1', 'port': 80}]}]}";
    val_result r;
    assert_int_equal(run(spec, NULL, 0, NULL, &r), SX_EVALIDATION);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.items[0].path, "spec.http_routes[0].rules[0].matches[0].path");
    assert_non_null(strstr(r.items[0].message, "invalid regular expression: RE2 program size "));
    assert_non_null(strstr(r.items[0].message, " is over the limit of 100 "));
    val_result_free(&r);
    val_limits roomy = {.regex_max_program_size = 5000};
    assert_int_equal(run(spec, NULL, 0, &roomy, &r), 0);
    val_result_free(&r);
}

/* Every regex that reaches a proxy is checked, the error at its field. */
TL_TEST(test_regex_errors_name_the_field)
{
    CHECK(
        SX_EVALIDATION,
        "{'http_routes': [{'name': 'h', 'rules': [{'backend_refs': [{'name': 'b'}],"
        "   'matches': [{'path': '((a{1,100}){1,100}){1,100}', 'path_type': 'RegularExpression',"
        "     'headers': [{'name': 'x-v', 'value': '(?=x)', 'type': 'RegularExpression'}],"
        "     'query_params': [{'name': 'q', 'value': '(a)\\\\1', 'type': 'RegularExpression'}]},"
        "    {'path': '/ok/[0-9]+', 'path_type': 'RegularExpression'}]}]}],"
        " 'grpc_routes': [{'name': 'g', 'rules': [{'backend_refs': [{'name': 'b'}],"
        "   'matches': [{'service': 'a{1001}', 'method': 'Get', 'match_type': 'RegularExpression'},"
        "    {'service': '[a-z]{60}', 'method': '[a-z]{60}', 'match_type': 'RegularExpression'},"
        "    {'service': 'svc', 'method': 'Get|Put', 'match_type': 'RegularExpression'}]}]}],"
        " 'backends': [{'name': 'b', 'endpoints': [{'address': '192.0.2.1', 'port': 80}]}]}",
        NULL, 0, NULL,
        P("schema", "spec.http_routes[0].rules[0].matches[0].path",
          "invalid regular expression: invalid repetition size: {1,100} (RE2 allows counts up "
          "to 1000, nested counts multiplied)"),
        P("schema", "spec.http_routes[0].rules[0].matches[0].headers[0].value",
          "invalid regular expression: invalid perl operator: (?= (RE2 has no lookahead)"),
        P("schema", "spec.http_routes[0].rules[0].matches[0].query_params[0].value",
          "invalid regular expression: invalid escape sequence: \\1 (RE2 has no "
          "backreferences)"),
        P("schema", "spec.grpc_routes[0].rules[0].matches[0].service",
          "invalid regular expression: invalid repetition size: {1001} (RE2 allows counts up "
          "to 1000, nested counts multiplied)"),
        /* each part is within the limit, the path regex of both is not */
        P("schema", "spec.grpc_routes[0].rules[0].matches[1]",
          "invalid regular expression: service and method as one path: RE2 program size 126 "
          "is over the limit of 100 (Envoy's re2.max_program_size.error_level)"));
}
TL_MAIN()
