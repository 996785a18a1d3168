/*
 * test_ir.c — the internal representation as a REST client and a data plane see it: a
 * full ConfigSnapshot survives JSON -> protobuf -> JSON unchanged, and bad documents get
 * every error at once with its exact path.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/lib/testlib.h"

#include "server/base/fielderr.h"
#include "server/base/hash.h"
#include "server/base/mem.h"
#include "server/ir/ir.h"
#include "server/ir/pbjson.h"

static void expect_errors(const char *text, const tl_want_err *want, size_t n)
{
    json_t *j = tl_json(text);
    sx_fielderrs errs = {0};
    ir_snapshot *snap = (ir_snapshot *)1;
    assert_int_equal(ir_snapshot_from_json(j, "spec", &snap, &errs), SX_EINVAL);
    assert_null(snap);
    tl_assert_fielderrs(&errs, want, n);
    sx_fielderrs_free(&errs);
    json_decref(j);
}

#define EXPECT_ERRORS(text, ...)                                                                   \
    do {                                                                                           \
        const tl_want_err w_[] = {__VA_ARGS__};                                                    \
        expect_errors(text, w_, sizeof(w_) / sizeof(w_[0]));                                       \
    } while (0)

static ir_snapshot *decode_ok(const json_t *j)
{
    sx_fielderrs errs = {0};
    ir_snapshot *snap = NULL;
    if (ir_snapshot_from_json(j, "spec", &snap, &errs) != 0) {
        char *s = sx_fielderrs_join(&errs);
        print_error("decode failed: %s\n", s);
        sx_free(s);
        fail();
    }
    sx_fielderrs_free(&errs);
    return snap;
}

/* Every message type, every field set to a value that is not its default. */
static const char FULL[] =
    "{'id': 'snap-0042',"
    " 'generated_at': '2026-01-02T03:04:05.123456789Z',"
    " 'listeners': [{'name': 'https', 'address': '0.0.0.0', 'port': 443,"
    "   'protocol': 'LISTENER_PROTOCOL_HTTPS', 'hostnames': ['example.com', '*.example.org'],"
    "   'attached_routes': ['web', 'grpc'],"
    "   'tls': {'enabled': true, 'passthrough': true, 'secret_refs': ['default/example-tls'],"
    "     'sni_hosts': ['example.com'], 'min_version': 'TLSv1.2', 'max_version': 'TLSv1.3',"
    "     'frontend_validation': {'ca_pems': ['-----BEGIN CERTIFICATE-----\\nMIIB\\n"
    "-----END CERTIFICATE-----\\n'], 'mode': 'Require'}},"
    "   'metadata': {'team': 'edge', 'tier': '1', 'quote\\'d': 'x'},"
    "   'backend_tls': {'client_certificate_ref': 'default/client-cert',"
    "     'options': {'cipher_suites': 'ECDHE-ECDSA-AES128-GCM-SHA256'}},"
    "   'addresses': ['::', '10.0.0.1']}],"
    " 'http_routes': [{'name': 'web', 'namespace': 'default', 'hostnames': ['example.com'],"
    "   'parent_refs': [{'name': 'gw', 'namespace': 'infra', 'section_name': 'https',"
    "     'port': 443}],"
    "   'rules': [{'matches': [{'path': '/api', 'path_type': 'PathPrefix', 'method': 'GET',"
    "       'headers': [{'name': 'x-env', 'value': 'prod', 'type': 'Exact'}],"
    "       'query_params': [{'name': 'v', 'value': '^2$', 'type': 'RegularExpression'}]}],"
    "     'filters': ["
    "       {'type': 'RequestHeaderModifier', 'request_header_modifier': {"
    "         'set': [{'name': 'x-a', 'value': '1'}], 'add': [{'name': 'x-b', 'value': '2'}],"
    "         'remove': ['x-drop']}},"
    "       {'type': 'ResponseHeaderModifier', 'response_header_modifier': {"
    "         'set': [{'name': 'x-c', 'value': '3'}], 'remove': ['server']}},"
    "       {'type': 'RequestRedirect', 'request_redirect': {'scheme': 'https',"
    "         'hostname': 'www.example.com', 'path': {'type': 'ReplaceFullPath',"
    "           'replace_full_path': '/new', 'replace_prefix_match': '/old'},"
    "         'port': 8443, 'status_code': 301}},"
    "       {'type': 'URLRewrite', 'url_rewrite': {'hostname': 'internal.svc',"
    "         'path': {'type': 'ReplacePrefixMatch', 'replace_prefix_match': '/v2'}}},"
    "       {'type': 'RequestMirror', 'request_mirror': {'backend_ref': {'name': 'shadow',"
    "         'namespace': 'test', 'port': 9090, 'weight': 1}, 'percent': 10}},"
    "       {'type': 'ExtensionRef', 'extension_ref': {'group': 'example.io',"
    "         'kind': 'Plugin', 'name': 'auth'}}],"
    "     'backend_refs': [{'name': 'web', 'namespace': 'default', 'port': 8080,"
    "       'weight': 0}, {'name': 'web-canary', 'weight': 1000000}],"
    "     'timeouts': {'request': '10s', 'backend_request': '2.500s'},"
    "     'retry': {'codes': [500, 503], 'attempts': 3, 'backoff': '0.100s'},"
    "     'session_persistence': {'session_name': 'sid', 'absolute_timeout': '3600s',"
    "       'idle_timeout': '600.000000001s', 'type': 'Cookie',"
    "       'cookie_lifetime_type': 'Permanent'},"
    "     'name': 'api'}],"
    "   'labels': {'app': 'web'}, 'annotations': {'example.io/owner': 'team-edge'}}],"
    " 'grpc_routes': [{'name': 'grpc', 'namespace': 'default', 'hostnames': ['rpc.example.com'],"
    "   'parent_refs': [{'name': 'gw', 'section_name': 'grpc'}],"
    "   'rules': [{'matches': [{'service': 'shop.v1.Cart', 'method': 'Add',"
    "       'headers': [{'name': 'x-tenant', 'value': 'a.*', 'type': 'RegularExpression'}],"
    "       'match_type': 'Exact'}],"
    "     'filters': [{'type': 'RequestHeaderModifier',"
    "       'request_header_modifier': {'add': [{'name': 'x-grpc', 'value': 'yes'}]}}],"
    "     'backend_refs': [{'name': 'cart', 'port': 50051}],"
    "     'session_persistence': {'session_name': 'x-session', 'type': 'Header'},"
    "     'name': 'cart'}]}],"
    " 'stream_routes': [{'name': 'db', 'namespace': 'data', 'kind': 'ROUTE_KIND_TLS',"
    "   'parent_refs': [{'name': 'gw', 'port': 5432}],"
    "   'rules': [{'port': 5432, 'sni_hostname': 'db.example.com',"
    "     'mode': 'TLS_ROUTE_MODE_PASSTHROUGH',"
    "     'backend_refs': [{'name': 'postgres', 'port': 5432, 'weight': 7}]}]}],"
    " 'backends': [{'name': 'web', 'namespace': 'default', 'protocol': 'HTTP2',"
    "   'endpoints': [{'address': '10.0.0.1', 'port': 8080, 'healthy': true,"
    "     'zone': 'zone-a'}, {'address': '10.0.0.2', 'port': 65535}],"
    "   'connect_timeout': '1.500s', 'request_timeout': '-30s',"
    "   'tls_validation': {'hostname': 'web.internal', 'ca_certificate_refs': ['ca-bundle'],"
    "     'ca_pems': ['-----BEGIN CERTIFICATE-----\\nMIIC\\n-----END CERTIFICATE-----\\n'],"
    "     'well_known_ca_certificates': 'System',"
    "     'subject_alt_names': ['web.internal', 'spiffe://cluster.local/ns/default/sa/web']},"
    "   'session_persistence': {'session_name': 'route', 'type': 'Cookie'},"
    "   'load_balancing': {'algorithm': 'LOAD_BALANCING_ALGORITHM_RING_HASH',"
    "     'hash_on': 'Header', 'hash_key': 'x-user', 'minimum_ring_size': '1024',"
    "     'maglev_table_size': '65537'},"
    "   'ai_service': {'provider': 'openai', 'format': 'openai-chat', 'model': 'gpt-4o',"
    "     'auth': {'type': 'Bearer', 'header_name': 'Authorization',"
    "       'secret_ref': 'openai-key', 'secret_key': 'token'}, 'timeout': '60s'},"
    "   'token_policy': {'tokens_per_minute': '9007199254740993',"
    "     'tokens_per_hour': '18446744073709551615', 'requests_per_minute': '600',"
    "     'scope': 'user', 'burst': 1.5, 'on_limit': 'reject'},"
    "   'wasm_plugin': {'name': 'auth', 'namespace': 'plugins', 'wasm_bytes': 'AGFzbQEAAAA=',"
    "     'sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',"
    "     'hooks': ['on_request', 'on_response'], 'config_json': '{\\\"mode\\\":\\\"strict\\\"}',"
    "     'sandbox': {'max_memory_bytes': '67108864', 'max_execution_time_ms': '50',"
    "       'allow_network': true, 'allow_file_system': true}}}],"
    " 'secrets': [{'namespace': 'default', 'name': 'example-tls',"
    "   'cert_pem': '-----BEGIN CERTIFICATE-----\\nMIID\\n-----END CERTIFICATE-----\\n',"
    "   'key_pem': '-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n'}],"
    " 'extensions': {'wasm': {'enabled': true, 'plugins': ['a', 1, null, -2.25,"
    "   {'nested': {'deep': [false, {}]}}, []]}, 'none': null, 'count': 3, 'name': 'x'}}";

/* ------------------------------------------------------------------ coverage of FULL */

typedef struct seen_set {
    json_t *seen; /* "Type.field" -> true */
} seen_set;

static bool is_wkt(const ProtobufCMessageDescriptor *d)
{
    return strncmp(d->name, "google.protobuf.", 16) == 0;
}

static void mark_seen(const ProtobufCMessage *m, const char *path, void *ctx)
{
    (void)path;
    seen_set *s = ctx;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (is_wkt(d))
        return;
    json_t *one = pbjson_encode(m, 0);
    const char *key;
    json_t *v;
    json_object_foreach(one, key, v)
    {
        char name[256];
        snprintf(name, sizeof(name), "%s.%s", d->name, key);
        json_object_set_new(s->seen, name, json_true());
    }
    json_decref(one);
}

/* Lists "Type.field" for every field of every message reachable from d (map entries and
 * well-known types excluded: a map field being set covers its entry). */
static void all_fields(const ProtobufCMessageDescriptor *d, json_t *out, json_t *done)
{
    if (is_wkt(d) || json_object_get(done, d->name))
        return;
    json_object_set_new(done, d->name, json_true());
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char name[256];
        snprintf(name, sizeof(name), "%s.%s", d->name, f->name);
        json_array_append_new(out, json_string(name));
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const ProtobufCMessageDescriptor *sub = f->descriptor;
        size_t len = strlen(sub->short_name);
        if (len < 5 || strcmp(sub->short_name + len - 5, "Entry") != 0)
            all_fields(sub, out, done);
    }
}

TL_TEST(test_full_fixture_sets_every_field)
{
    json_t *j = tl_json(FULL);
    ir_snapshot *snap = decode_ok(j);
    seen_set s = {json_object()};
    pbjson_walk(&snap->base, "", mark_seen, &s);
    json_t *all = json_array(), *done = json_object();
    all_fields(&gateway__control__v1__config_snapshot__descriptor, all, done);
    size_t i;
    json_t *name;
    size_t missing = 0;
    json_array_foreach(all, i, name)
    {
        if (!json_object_get(s.seen, json_string_value(name))) {
            print_error("not set by the fixture: %s\n", json_string_value(name));
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    assert_true(json_array_size(all) > 150);
    json_decref(all);
    json_decref(done);
    json_decref(s.seen);
    json_decref(j);
    ir_snapshot_free(snap);
}

/* ------------------------------------------------------------------ round trips */

TL_TEST(test_full_round_trip)
{
    json_t *in = tl_json(FULL);
    ir_snapshot *s1 = decode_ok(in);

    size_t n1 = 0;
    uint8_t *b1 = ir_snapshot_pack(s1, &n1);
    assert_true(n1 > 1000);
    ir_snapshot *s2 = NULL;
    sx_err err = {0};
    assert_int_equal(ir_snapshot_unpack(b1, n1, &s2, &err), 0);
    json_t *out = ir_snapshot_to_json(s2);
    tl_assert_json_equal(out, in);

    size_t n2 = 0;
    uint8_t *b2 = ir_snapshot_pack(s2, &n2);
    assert_int_equal(n2, n1);
    assert_memory_equal(b1, b2, n1);

    /* Spot checks of what a data plane reads from the bytes. */
    assert_int_equal(s2->generated_at->nanos, 123456789);
    assert_int_equal(s2->backends[0]->token_policy->tokens_per_minute, 9007199254740993ULL);
    assert_int_equal(s2->backends[0]->token_policy->tokens_per_hour, UINT64_MAX);
    assert_int_equal(s2->backends[0]->connect_timeout->seconds, 1);
    assert_int_equal(s2->backends[0]->connect_timeout->nanos, 500000000);
    assert_int_equal(s2->backends[0]->request_timeout->seconds, -30);
    assert_int_equal(s2->backends[0]->wasm_plugin->wasm_bytes.len, 8);
    assert_memory_equal(s2->backends[0]->wasm_plugin->wasm_bytes.data, "\0asm\1\0\0\0", 8);
    assert_int_equal(s2->listeners[0]->protocol,
                     GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTPS);
    assert_int_equal(s2->http_routes[0]->rules[0]->backend_refs[0]->weight->value, 0);
    assert_int_equal(s2->http_routes[0]->rules[0]->filters[4]->config_case,
                     GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_MIRROR);

    sx_free(b1);
    sx_free(b2);
    json_decref(in);
    json_decref(out);
    ir_snapshot_free(s1);
    ir_snapshot_free(s2);
}

TL_TEST(test_camel_case_input)
{
    json_t *in =
        tl_json("{'generatedAt': '2026-01-02T03:04:05+01:00', 'httpRoutes': [{'parentRefs':"
                " [{'sectionName': 'a'}], 'rules': [{'backendRefs': [{'name': 'b'}]}]}]}");
    json_t *want =
        tl_json("{'generated_at': '2026-01-02T02:04:05Z', 'http_routes': [{'parent_refs':"
                " [{'section_name': 'a'}], 'rules': [{'backend_refs': [{'name': 'b'}]}]}]}");
    ir_snapshot *s = decode_ok(in);
    json_t *out = ir_snapshot_to_json(s);
    tl_assert_json_equal(out, want);
    json_decref(in);
    json_decref(want);
    json_decref(out);
    ir_snapshot_free(s);
}

TL_TEST(test_empty_snapshot)
{
    json_t *in = json_object();
    ir_snapshot *s = decode_ok(in);
    size_t n = 99;
    uint8_t *b = ir_snapshot_pack(s, &n);
    assert_non_null(b);
    assert_int_equal(n, 0);
    json_t *out = ir_snapshot_to_json(s);
    assert_int_equal(json_object_size(out), 0);
    sx_free(b);
    json_decref(in);
    json_decref(out);
    ir_snapshot_free(s);
    ir_snapshot_free(NULL);
}

/* ------------------------------------------------------------------ errors */

TL_TEST(test_endpoint_ports)
{
    EXPECT_ERRORS("{'backends': [{'name': 'a'}, {'name': 'b'}, {'name': 'c', 'endpoints': ["
                  " {'address': '10.0.0.1', 'port': 0}, {'address': '10.0.0.2', 'port': 70000},"
                  " {'address': '10.0.0.3', 'port': 65535}, {'address': '10.0.0.4'}]}]}",
                  {"spec.backends[2].endpoints[0].port", "must be between 1 and 65535"},
                  {"spec.backends[2].endpoints[1].port", "must be between 1 and 65535"},
                  {"spec.backends[2].endpoints[3].port", "must be between 1 and 65535"});
}

TL_TEST(test_range_rules)
{
    EXPECT_ERRORS(
        "{'listeners': [{'port': 65536, 'tls': {'min_version': 'TLSv1.4', 'max_version': "
        "'TLSv1.3'}}],"
        " 'http_routes': [{'parent_refs': [{'port': 70000}], 'rules': [{"
        "   'matches': [{'path_type': 'Prefix', 'headers': [{'type': 'Regex'}],"
        "     'query_params': [{'type': 'Exact'}]}],"
        "   'filters': [{'type': 'Rewrite', 'request_redirect': {'port': 65536,"
        "     'scheme': 'ftp', 'path': {'type': 'Replace'}}},"
        "     {'request_mirror': {'percent': 101, 'backend_ref': {'weight': 1000001}}}],"
        "   'backend_refs': [{'port': 65536, 'weight': 1000001}],"
        "   'retry': {'attempts': 101, 'codes': [503, 200, 600]},"
        "   'session_persistence': {'type': 'IP', 'cookie_lifetime_type': 'Forever'}}]}],"
        " 'grpc_routes': [{'rules': [{'matches': [{'match_type': 'Prefix'}]}]}],"
        " 'stream_routes': [{'rules': [{'port': 65536, 'backend_refs': [{'port': 1}]}]}],"
        " 'backends': [{'load_balancing': {'hash_on': 'Body'}}]}",
        {"spec.listeners[0].port", "must be between 0 and 65535"},
        {"spec.listeners[0].tls.min_version",
         "must be one of \"TLSv1.0\", \"TLSv1.1\", \"TLSv1.2\", \"TLSv1.3\""},
        {"spec.http_routes[0].parent_refs[0].port", "must be between 0 and 65535"},
        {"spec.http_routes[0].rules[0].matches[0].path_type",
         "must be one of \"Exact\", \"PathPrefix\", \"RegularExpression\""},
        {"spec.http_routes[0].rules[0].matches[0].headers[0].type",
         "must be one of \"Exact\", \"RegularExpression\""},
        {"spec.http_routes[0].rules[0].filters[0].type",
         "must be one of \"RequestHeaderModifier\", \"ResponseHeaderModifier\", "
         "\"RequestRedirect\", \"URLRewrite\", \"RequestMirror\", \"ExtensionRef\""},
        {"spec.http_routes[0].rules[0].filters[0].request_redirect.port",
         "must be between 0 and 65535"},
        {"spec.http_routes[0].rules[0].filters[0].request_redirect.scheme",
         "must be one of \"http\", \"https\""},
        {"spec.http_routes[0].rules[0].filters[0].request_redirect.path.type",
         "must be one of \"ReplaceFullPath\", \"ReplacePrefixMatch\""},
        {"spec.http_routes[0].rules[0].filters[1].request_mirror.percent",
         "must be between 0 and 100"},
        {"spec.http_routes[0].rules[0].filters[1].request_mirror.backend_ref.weight",
         "must be between 0 and 1000000"},
        {"spec.http_routes[0].rules[0].backend_refs[0].port", "must be between 0 and 65535"},
        {"spec.http_routes[0].rules[0].backend_refs[0].weight", "must be between 0 and 1000000"},
        {"spec.http_routes[0].rules[0].retry.attempts", "must be between 0 and 100"},
        {"spec.http_routes[0].rules[0].retry.codes[1]", "must be between 400 and 599"},
        {"spec.http_routes[0].rules[0].retry.codes[2]", "must be between 400 and 599"},
        {"spec.http_routes[0].rules[0].session_persistence.type",
         "must be one of \"Cookie\", \"Header\""},
        {"spec.http_routes[0].rules[0].session_persistence.cookie_lifetime_type",
         "must be one of \"Permanent\", \"Session\""},
        {"spec.grpc_routes[0].rules[0].matches[0].match_type",
         "must be one of \"Exact\", \"RegularExpression\""},
        {"spec.stream_routes[0].rules[0].port", "must be between 0 and 65535"},
        {"spec.backends[0].load_balancing.hash_on",
         "must be one of \"Header\", \"Cookie\", \"SourceIP\", \"QueryParameter\""});
}

TL_TEST(test_decode_errors_with_paths)
{
    EXPECT_ERRORS("{'listeners': [{'prot': 'HTTP'}]}",
                  {"spec.listeners[0]", "unknown field \"prot\""});
    EXPECT_ERRORS("{'listeners': [{'protocol': 'HTTP'}]}",
                  {"spec.listeners[0].protocol",
                   "invalid enum value \"HTTP\" for gateway.control.v1.ListenerProtocol"});
    EXPECT_ERRORS("{'listeners': [{'port': '443x'}]}",
                  {"spec.listeners[0].port", "expected a number, got a string"});
    EXPECT_ERRORS("{'listeners': [{'port': 4294967296}]}",
                  {"spec.listeners[0].port", "must be between 0 and 4294967295"});
    EXPECT_ERRORS("{'listeners': [{'metadata': {'team': 5}}]}",
                  {"spec.listeners[0].metadata[\"team\"]", "expected a string, got a number"});
    EXPECT_ERRORS("{'generated_at': 'yesterday'}",
                  {"spec.generated_at", "invalid timestamp \"yesterday\": expected RFC 3339 "
                                        "format such as 2026-01-02T03:04:05Z"});
    EXPECT_ERRORS("{'backends': [{'connect_timeout': '5'}]}",
                  {"spec.backends[0].connect_timeout", "invalid duration \"5\": must end in s"});
    EXPECT_ERRORS("{'backends': [{'wasm_plugin': {'wasm_bytes': 'not base64!'}}]}",
                  {"spec.backends[0].wasm_plugin.wasm_bytes", "invalid base64 data"});
    EXPECT_ERRORS("{'backends': [{'token_policy': {'tokens_per_minute': '-1'}}]}",
                  {"spec.backends[0].token_policy.tokens_per_minute",
                   "must be between 0 and 18446744073709551615"});
    EXPECT_ERRORS("{'http_routes': [{'rules': [{'filters': [{'url_rewrite': {},"
                  " 'request_mirror': {}}]}]}]}",
                  {"spec.http_routes[0].rules[0].filters[0].request_mirror",
                   "only one of \"url_rewrite\" and \"request_mirror\" may be set"});
    EXPECT_ERRORS("[]", {"spec", "expected an object, got an array"});
    /* Paths use the proto names even when the input used lowerCamelCase names. */
    EXPECT_ERRORS("{'httpRoutes': [{'parentRefs': [{'port': 'x'}, {'port': 65536}]}]}",
                  {"spec.http_routes[0].parent_refs[0].port", "expected a number, got a string"},
                  {"spec.http_routes[0].parent_refs[1].port", "must be between 0 and 65535"});
    /* A null element is an error and the elements after it are still checked. */
    EXPECT_ERRORS("{'listeners': [null, {'port': 70000}]}",
                  {"spec.listeners[0]", "must not be null"},
                  {"spec.listeners[1].port", "must be between 0 and 65535"});
}

TL_TEST(test_all_errors_at_once)
{
    /* Decode errors and range errors together, in document order, each value once: the
     * port that is not a number is not also reported as out of range. */
    EXPECT_ERRORS("{'listeners': [{'name': 'a', 'port': 80}, {'name': 'b', 'port': 'eighty',"
                  "   'protocol': 'LISTENER_PROTOCOL_HTTP'}, {'port': 99999, 'protocol': 'FOO'}],"
                  " 'backends': [{'name': 'x', 'endpoints': [{'port': 8080}]},"
                  "   {'name': 'y', 'endpoints': [{'port': 'x'}, {'port': 0}], 'extra': 1},"
                  "   {'name': 'z', 'endpoints': [{'port': 70000, 'healthy': 'yes'}]}],"
                  " 'secrets': {}, 'id': 7}",
                  {"spec.listeners[1].port", "expected a number, got a string"},
                  {"spec.listeners[2].protocol",
                   "invalid enum value \"FOO\" for gateway.control.v1.ListenerProtocol"},
                  {"spec.backends[1].endpoints[0].port", "expected a number, got a string"},
                  {"spec.backends[1]", "unknown field \"extra\""},
                  {"spec.backends[2].endpoints[0].healthy", "expected a boolean, got a string"},
                  {"spec.secrets", "expected an array, got an object"},
                  {"spec.id", "expected a string, got a number"},
                  {"spec.listeners[2].port", "must be between 0 and 65535"},
                  {"spec.backends[1].endpoints[1].port", "must be between 1 and 65535"},
                  {"spec.backends[2].endpoints[0].port", "must be between 1 and 65535"});
}

TL_TEST(test_check_unpacked)
{
    /* Bytes from elsewhere are checked by the same rules. */
    Gateway__Control__V1__BackendEndpoint ep = GATEWAY__CONTROL__V1__BACKEND_ENDPOINT__INIT;
    Gateway__Control__V1__BackendEndpoint *eps[] = {&ep};
    Gateway__Control__V1__BackendCluster be = GATEWAY__CONTROL__V1__BACKEND_CLUSTER__INIT;
    Gateway__Control__V1__BackendCluster *bes[] = {&be};
    ir_snapshot snap = GATEWAY__CONTROL__V1__CONFIG_SNAPSHOT__INIT;
    be.n_endpoints = 1;
    be.endpoints = eps;
    snap.n_backends = 1;
    snap.backends = bes;
    ep.port = 0;
    sx_fielderrs errs = {0};
    assert_int_equal(ir_snapshot_check(&snap, "", &errs), SX_EINVAL);
    const tl_want_err want[] = {{"backends[0].endpoints[0].port", "must be between 1 and 65535"}};
    tl_assert_fielderrs(&errs, want, 1);
    sx_fielderrs_free(&errs);
    ep.port = 1;
    assert_int_equal(ir_snapshot_check(&snap, "", &errs), 0);
    assert_int_equal(errs.count, 0);
}

TL_TEST(test_unpack_invalid)
{
    static const uint8_t bad[][4] = {
        {0x0a, 0x05, 'a', 'b'},   /* id: length 5, only 2 bytes follow */
        {0x1a, 0x02, 0xff, 0xff}, /* listeners: a message that is not a message */
        {0x07, 0x00, 0x00, 0x00}, /* wire type 7 does not exist */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ir_snapshot *s = (ir_snapshot *)1;
        sx_err err = {0};
        assert_int_equal(ir_snapshot_unpack(bad[i], sizeof(bad[i]), &s, &err), SX_EINVAL);
        assert_null(s);
        assert_int_equal(err.code, SX_EINVAL);
        assert_string_equal(err.message,
                            "invalid protobuf encoding of gateway.control.v1.ConfigSnapshot "
                            "(4 bytes)");
    }
    ir_snapshot *s = NULL;
    assert_int_equal(ir_snapshot_unpack(bad[0], 4, &s, NULL), SX_EINVAL);
}

TL_TEST(test_canonical_json)
{
    json_t *a = tl_json("{'b': [1, {'z': 1, 'a': 2.5}], 'a': 'x\\u00e9', 'c': null}");
    json_t *b = tl_json("{'c': null, 'a': 'x\\u00e9', 'b': [1, {'a': 2.5, 'z': 1}]}");
    char *ca = ir_canonical_json(a), *cb = ir_canonical_json(b);
    assert_string_equal(ca, "{\"a\":\"x\xc3\xa9\",\"b\":[1,{\"a\":2.5,\"z\":1}],\"c\":null}");
    assert_string_equal(ca, cb);
    char h1[SX_SHA256_HEX_LEN + 1], h2[SX_SHA256_HEX_LEN + 1];
    sx_sha256_hex(ca, strlen(ca), h1);
    sx_sha256_hex(cb, strlen(cb), h2);
    assert_string_equal(h1, h2);
    free(ca);
    free(cb);
    json_decref(a);
    json_decref(b);

    /* The canonical text of a decoded document does not depend on how it was written. */
    json_t *x = tl_json("{'listeners': [{'port': '80', 'name': 'a'}], 'id': 's'}");
    json_t *y = tl_json("{'id': 's', 'listeners': [{'name': 'a', 'port': 80.0}]}");
    ir_snapshot *sx = decode_ok(x), *sy = decode_ok(y);
    json_t *ex = ir_snapshot_to_json(sx), *ey = ir_snapshot_to_json(sy);
    char *cx = ir_canonical_json(ex), *cy = ir_canonical_json(ey);
    assert_string_equal(cx, "{\"id\":\"s\",\"listeners\":[{\"name\":\"a\",\"port\":80}]}");
    assert_string_equal(cx, cy);
    free(cx);
    free(cy);
    json_decref(ex);
    json_decref(ey);
    json_decref(x);
    json_decref(y);
    ir_snapshot_free(sx);
    ir_snapshot_free(sy);
}

TL_MAIN()
