/*
 * test_resources.c — IR snapshots translated into Envoy resources, checked the way a
 * proxy sees them: every resource is decoded back from its bytes with the generated
 * Envoy types (a field the encoder left out, such as an empty ADS config source or an
 * empty prefix, is absent after decoding), and followed from listener to route
 * configuration to cluster to endpoints as a client would.
 */
#include "tests/lib/translate_fx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/http/router/v3/router.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb-c.h"
#include "server/base/fielderr.h"
#include "server/base/mem.h"
#include "server/ir/ir.h"
#include "server/translate/resources.h"

typedef Envoy__Config__Listener__V3__Listener Listener;
typedef Envoy__Config__Route__V3__RouteConfiguration RouteConfiguration;
typedef Envoy__Config__Route__V3__Route Route;
typedef Envoy__Config__Cluster__V3__Cluster Cluster;
typedef Envoy__Config__Endpoint__V3__ClusterLoadAssignment ClusterLoadAssignment;
typedef Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy TcpProxy;
typedef Envoy__Extensions__TransportSockets__Tls__V3__Secret Secret;
typedef Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext DownstreamTlsContext;
typedef Envoy__Extensions__TransportSockets__Tls__V3__UpstreamTlsContext UpstreamTlsContext;

/* ---------------------------------------------------------------- helpers */

/* An IR snapshot from JSON written with single quotes (for readability in C). */
static ir_snapshot *ir_from(const char *text)
{
    json_t *j = tl_json(text);
    sx_fielderrs errs = {0};
    ir_snapshot *snap = NULL;
    if (ir_snapshot_from_json(j, NULL, &snap, &errs) != 0) {
        char *m = sx_fielderrs_join(&errs);
        fail_msg("IR rejected: %s", m);
    }
    sx_fielderrs_free(&errs);
    json_decref(j);
    return snap;
}

static tr_resources *build(const char *text)
{
    ir_snapshot *ir = ir_from(text);
    tr_resources *r = NULL;
    sx_err err = {0};
    int rc = tr_resources_build(ir, "edge", 7, &r, &err);
    if (rc != 0)
        fail_msg("build failed: %s (%s)", err.message, err.detail);
    ir_snapshot_free(ir);
    return r;
}

/* Builds an IR that must be refused; returns the error. */
static sx_err build_error(const char *text)
{
    ir_snapshot *ir = ir_from(text);
    tr_resources *r = (tr_resources *)1;
    sx_err err = {0};
    int rc = tr_resources_build(ir, "edge", 7, &r, &err);
    assert_int_equal(rc, SX_EVALIDATION);
    assert_int_equal(err.code, SX_EVALIDATION);
    assert_null(r);
    ir_snapshot_free(ir);
    return err;
}

static const tr_resource *get(const tr_resources *r, tr_type t, const char *name)
{
    const tr_resource *x = tr_resources_find(r, t, name);
    if (x == NULL) {
        print_error("no %s resource named \"%s\"; have:", tr_type_name(t), name);
        for (size_t i = 0; i < r->count[t]; i++)
            print_error(" \"%s\"", r->items[t][i].name);
        print_error("\n");
        fail();
    }
    return x;
}

/* The resource of type t named name, decoded from its bytes as the Envoy message of its
 * type; fails the test when it is missing or does not decode. The caller frees it with
 * protobuf_c_message_free_unpacked. */
static void *decode(const tr_resources *r, tr_type t, const char *name)
{
    static const ProtobufCMessageDescriptor *const types[TR_TYPE_COUNT] = {
        [TR_SDS] = &envoy__extensions__transport_sockets__tls__v3__secret__descriptor,
        [TR_CDS] = &envoy__config__cluster__v3__cluster__descriptor,
        [TR_EDS] = &envoy__config__endpoint__v3__cluster_load_assignment__descriptor,
        [TR_LDS] = &envoy__config__listener__v3__listener__descriptor,
        [TR_RDS] = &envoy__config__route__v3__route_configuration__descriptor,
    };
    const tr_resource *x = get(r, t, name);
    ProtobufCMessage *m = protobuf_c_message_unpack(types[t], NULL, x->len, x->bytes);
    assert_non_null(m);
    return m;
}

/* ADS as a proxy reads it: the ads member present (an empty message on the wire). */
static void assert_ads(const Envoy__Config__Core__V3__ConfigSource *cs)
{
    assert_non_null(cs);
    assert_int_equal(cs->config_source_specifier_case,
                     ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS);
    assert_non_null(cs->ads);
    assert_int_equal(cs->resource_api_version, ENVOY__CONFIG__CORE__V3__API_VERSION__V3);
}

/* The HCM of a listener's api_listener or first filter chain; the caller frees it. */
static Hcm *hcm_of(const Listener *l)
{
    const Google__Protobuf__Any *any;
    if (l->api_listener) {
        any = l->api_listener->api_listener;
    } else {
        assert_true(l->n_filter_chains >= 1);
        assert_int_equal(l->filter_chains[0]->n_filters, 1);
        assert_string_equal(l->filter_chains[0]->filters[0]->name,
                            "envoy.filters.network.http_connection_manager");
        any = l->filter_chains[0]->filters[0]->typed_config;
    }
    Hcm *h = (Hcm *)tl_unpack_any(
        any,
        &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor);
    assert_int_equal(
        h->route_specifier_case,
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__ROUTE_SPECIFIER_RDS);
    assert_ads(h->rds->config_source);
    /* The router is last, with its typed config. */
    assert_true(h->n_http_filters >= 1);
    const Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *last =
        h->http_filters[h->n_http_filters - 1];
    assert_string_equal(last->name, "envoy.filters.http.router");
    ProtobufCMessage *router = tl_unpack_any(
        last->typed_config, &envoy__extensions__filters__http__router__v3__router__descriptor);
    protobuf_c_message_free_unpacked(router, NULL);
    return h;
}

static const Envoy__Config__Route__V3__VirtualHost *vhost(const RouteConfiguration *rc,
                                                          const char *domain)
{
    for (size_t i = 0; i < rc->n_virtual_hosts; i++)
        for (size_t d = 0; d < rc->virtual_hosts[i]->n_domains; d++)
            if (strcmp(rc->virtual_hosts[i]->domains[d], domain) == 0)
                return rc->virtual_hosts[i];
    fail_msg("no virtual host with domain %s", domain);
    return NULL;
}

/* ---------------------------------------------------------------- proxyless gRPC */

static const char PROXYLESS[] =
    "{'listeners': [{'name': 'grpc-clients', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'port': 0,"
    "   'hostnames': ['echo.test'], 'attached_routes': ['echo']}],"
    " 'grpc_routes': [{'name': 'echo', 'namespace': 'demo',"
    "   'rules': [{'backend_refs': [{'name': 'echo-backend'}]}]}],"
    " 'backends': [{'name': 'echo-backend', 'namespace': 'demo', 'protocol': 'GRPC',"
    "   'endpoints': [{'address': '127.0.0.1', 'port': 50051, 'healthy': true},"
    "                 {'address': '127.0.0.2', 'port': 50051, 'healthy': true, 'zone': 'b'},"
    "                 {'address': '127.0.0.3', 'port': 50051, 'zone': 'b'}]}]}";

/* A client dialing xds:///echo.test follows LDS → RDS → CDS → EDS and finds its backend. */
TL_TEST(test_proxyless_chain)
{
    tr_resources *r = build(PROXYLESS);
    assert_string_equal(r->version_info, "7");
    assert_string_equal(r->group, "edge");

    /* LDS: a Listener named exactly the target, with an api_listener. */
    Listener *l = decode(r, TR_LDS, "echo.test");
    assert_string_equal(l->name, "echo.test");
    assert_non_null(l->api_listener);
    assert_null(l->address);
    Hcm *h = hcm_of(l);
    const char *rds_name = h->rds->route_config_name;
    assert_string_equal(rds_name, "grpc-clients");

    /* RDS: a virtual host whose only domain is the target, prefix "" to the cluster. */
    RouteConfiguration *rc = decode(r, TR_RDS, rds_name);
    assert_string_equal(rc->name, rds_name);
    const Envoy__Config__Route__V3__VirtualHost *vh = vhost(rc, "echo.test");
    assert_int_equal(vh->n_domains, 1);
    assert_int_equal(vh->n_routes, 1);
    const Route *rt = vh->routes[0];
    assert_int_equal(rt->match->path_specifier_case,
                     ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX);
    assert_string_equal(rt->match->prefix, "");
    assert_int_equal(rt->action_case, ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE);
    assert_int_equal(rt->route->cluster_specifier_case,
                     ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER);
    const char *cluster_name = rt->route->cluster;
    assert_string_equal(cluster_name, "demo/echo-backend");

    /* CDS: EDS over ADS, round robin, HTTP/2 upstream for gRPC. */
    Cluster *c = decode(r, TR_CDS, cluster_name);
    assert_int_equal(c->cluster_discovery_type_case,
                     ENVOY__CONFIG__CLUSTER__V3__CLUSTER__CLUSTER_DISCOVERY_TYPE_TYPE);
    assert_int_equal(c->type, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__EDS);
    assert_non_null(c->eds_cluster_config);
    assert_ads(c->eds_cluster_config->eds_config);
    assert_string_equal(c->eds_cluster_config->service_name, cluster_name);
    assert_int_equal(c->lb_policy, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__ROUND_ROBIN);
    assert_int_equal(c->connect_timeout->seconds, 5);
    assert_null(c->transport_socket);
    assert_int_equal(c->n_typed_extension_protocol_options, 1);
    assert_string_equal(c->typed_extension_protocol_options[0]->key,
                        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
    Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions *po =
        (Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions *)tl_unpack_any(
            c->typed_extension_protocol_options[0]->value,
            &envoy__extensions__upstreams__http__v3__http_protocol_options__descriptor);
    assert_non_null(po->explicit_http_config);
    assert_non_null(po->explicit_http_config->http2_protocol_options);
    protobuf_c_message_free_unpacked(&po->base, NULL);

    /* EDS: localities by zone, each with a weight above 0, endpoints and health. */
    ClusterLoadAssignment *cla = decode(r, TR_EDS, c->eds_cluster_config->service_name);
    assert_string_equal(cla->cluster_name, cluster_name);
    assert_int_equal(cla->n_endpoints, 2);
    assert_non_null(cla->endpoints[0]->locality);
    assert_string_equal(cla->endpoints[0]->locality->zone, "");
    assert_string_equal(cla->endpoints[1]->locality->zone, "b");
    for (size_t i = 0; i < cla->n_endpoints; i++) {
        assert_non_null(cla->endpoints[i]->load_balancing_weight);
        assert_true(cla->endpoints[i]->load_balancing_weight->value > 0);
        assert_int_equal(cla->endpoints[i]->priority, 0);
    }
    assert_int_equal(cla->endpoints[0]->n_lb_endpoints, 1);
    assert_int_equal(cla->endpoints[1]->n_lb_endpoints, 2);
    const Envoy__Config__Endpoint__V3__LbEndpoint *e = cla->endpoints[1]->lb_endpoints[1];
    assert_string_equal(e->endpoint->address->socket_address->address, "127.0.0.3");
    assert_int_equal(e->endpoint->address->socket_address->port_specifier_case,
                     ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PORT_SPECIFIER_PORT_VALUE);
    assert_int_equal(e->endpoint->address->socket_address->port_value, 50051);
    assert_int_equal(e->health_status, ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__UNHEALTHY);
    assert_int_equal(cla->endpoints[1]->lb_endpoints[0]->health_status,
                     ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__HEALTHY);

    /* Every resource carries its content hash as version. */
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        for (size_t i = 0; i < r->count[t]; i++)
            assert_int_equal(strlen(r->items[t][i].version), 16);

    protobuf_c_message_free_unpacked(&cla->base, NULL);
    protobuf_c_message_free_unpacked(&c->base, NULL);
    protobuf_c_message_free_unpacked(&rc->base, NULL);
    protobuf_c_message_free_unpacked(&h->base, NULL);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    tr_resources_unref(r);
}

/* A rule without backends cannot reach proxyless clients: grpc-js would NACK. */
TL_TEST(test_proxyless_refuses_direct_response)
{
    sx_err err = build_error("{'listeners': [{'name': 'g', 'protocol': 'LISTENER_PROTOCOL_GRPC', "
                             "'hostnames': ['a.test'],"
                             "   'attached_routes': ['r']}],"
                             " 'grpc_routes': [{'name': 'r', 'rules': [{}]}]}");
    assert_non_null(strstr(err.message, "grpc_routes[0].rules[0]: "));
    assert_non_null(strstr(err.message, "proxyless"));
}

/* ---------------------------------------------------------------- HTTP routes */

static const char HTTP[] =
    "{'listeners': [{'name': 'web', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 8080,"
    "   'hostnames': ['example.com'], 'attached_routes': ['default/site', 'rpc']}],"
    " 'http_routes': [{'name': 'site', 'namespace': 'default', 'rules': ["
    "   {'matches': [{'path': '/api', 'path_type': 'PathPrefix', 'method': 'GET',"
    "       'headers': [{'name': 'X-Env', 'value': 'prod'},"
    "                   {'name': 'x-user', 'value': 'a.*', 'type': 'RegularExpression'}],"
    "       'query_params': [{'name': 'v', 'value': '^2$', 'type': 'RegularExpression'}]}],"
    "    'backend_refs': [{'name': 'web-canary', 'weight': 1}, {'name': 'web', 'weight': 3},"
    "                     {'name': 'web-old', 'weight': 0}],"
    "    'timeouts': {'request': '10s'},"
    "    'retry': {'codes': [503], 'attempts': 2, 'backoff': '0.100s'}},"
    "   {'matches': [{'path': '/exact', 'path_type': 'Exact'}],"
    "    'filters': [{'type': 'RequestHeaderModifier', 'request_header_modifier': {"
    "       'set': [{'name': 'X-A', 'value': '1'}], 'remove': ['x-drop']}}],"
    "    'backend_refs': [{'name': 'web'}]},"
    "   {'matches': [{'path': '^/re/[0-9]+$', 'path_type': 'RegularExpression'}]},"
    "   {'matches': [{'path': '/', 'path_type': 'PathPrefix'}],"
    "    'filters': [{'type': 'RequestRedirect', 'request_redirect': {'scheme': 'https',"
    "       'status_code': 301}}]}]}],"
    " 'grpc_routes': [{'name': 'rpc', 'namespace': 'default', 'hostnames': ['*.com'],"
    "   'rules': [{'matches': [{'service': 'shop.Cart', 'method': 'Add'}],"
    "              'backend_refs': [{'name': 'web'}]}]}],"
    " 'backends': ["
    "   {'name': 'web', 'namespace': 'default', 'endpoints': [{'address': '10.0.0.1', 'port': "
    "80}]},"
    "   {'name': 'web-canary', 'namespace': 'default',"
    "    'endpoints': [{'address': '10.0.0.2', 'port': 80}]},"
    "   {'name': 'web-old', 'namespace': 'default',"
    "    'endpoints': [{'address': '10.0.0.3', 'port': 80}]}]}";

TL_TEST(test_http_routes)
{
    tr_resources *r = build(HTTP);
    Listener *l = decode(r, TR_LDS, "web");
    assert_int_equal(l->address->socket_address->port_value, 8080);
    assert_string_equal(l->address->socket_address->address, "0.0.0.0");
    assert_null(l->api_listener);
    Hcm *h = hcm_of(l);
    assert_string_equal(h->rds->route_config_name, "web");
    assert_string_equal(h->stat_prefix, "web");

    RouteConfiguration *rc = decode(r, TR_RDS, "web");
    assert_int_equal(rc->n_virtual_hosts, 1);
    const Envoy__Config__Route__V3__VirtualHost *vh = vhost(rc, "example.com");
    /* Precedence: exact paths longest first, regex, then prefixes longest first, "/" last. */
    assert_int_equal(vh->n_routes, 6);
    Route **rt = vh->routes;
    assert_string_equal(rt[0]->match->path, "/shop.Cart/Add");
    assert_string_equal(rt[1]->match->path, "/exact");
    assert_int_equal(rt[2]->match->path_specifier_case,
                     ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_SAFE_REGEX);
    assert_string_equal(rt[2]->match->safe_regex->regex, "^/re/[0-9]+$");
    assert_non_null(rt[2]->match->safe_regex->google_re2);
    assert_string_equal(rt[3]->match->path, "/api");
    assert_string_equal(rt[4]->match->prefix, "/api/");
    assert_int_equal(rt[5]->match->path_specifier_case,
                     ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX);
    assert_string_equal(rt[5]->match->prefix, "");

    /* The exact route: one cluster, header changes. */
    assert_string_equal(rt[1]->route->cluster, "default/web");
    assert_int_equal(rt[1]->n_request_headers_to_add, 1);
    assert_string_equal(rt[1]->request_headers_to_add[0]->header->key, "x-a");
    assert_int_equal(
        rt[1]->request_headers_to_add[0]->append_action,
        ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__HEADER_APPEND_ACTION__OVERWRITE_IF_EXISTS_OR_ADD);
    assert_int_equal(rt[1]->n_request_headers_to_remove, 1);
    assert_string_equal(rt[0]->route->cluster, "default/web");

    /* The regex rule has no backend: 500, never a route without action. */
    assert_int_equal(rt[2]->action_case, ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_DIRECT_RESPONSE);
    assert_int_equal(rt[2]->direct_response->status, 500);

    /* The prefix rule, both halves: method and header matchers, query, weights, policies. */
    for (int i = 3; i <= 4; i++) {
        const Envoy__Config__Route__V3__RouteMatch *m = rt[i]->match;
        assert_int_equal(m->n_headers, 3);
        assert_string_equal(m->headers[0]->name, ":method");
        assert_string_equal(m->headers[0]->exact_match, "GET");
        assert_string_equal(m->headers[1]->name, "x-env");
        assert_int_equal(
            m->headers[1]->header_match_specifier_case,
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_EXACT_MATCH);
        assert_string_equal(m->headers[1]->exact_match, "prod");
        assert_int_equal(
            m->headers[2]->header_match_specifier_case,
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_SAFE_REGEX_MATCH);
        assert_string_equal(m->headers[2]->safe_regex_match->regex, "a.*");
        assert_int_equal(m->n_query_parameters, 1);
        assert_string_equal(m->query_parameters[0]->name, "v");
        assert_string_equal(m->query_parameters[0]->string_match->safe_regex->regex, "^2$");

        const Envoy__Config__Route__V3__RouteAction *a = rt[i]->route;
        assert_int_equal(
            a->cluster_specifier_case,
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS);
        /* Sorted by name; the zero-weight backend gets no traffic and no entry. */
        assert_int_equal(a->weighted_clusters->n_clusters, 2);
        assert_string_equal(a->weighted_clusters->clusters[0]->name, "default/web");
        assert_int_equal(a->weighted_clusters->clusters[0]->weight->value, 3);
        assert_string_equal(a->weighted_clusters->clusters[1]->name, "default/web-canary");
        assert_int_equal(a->weighted_clusters->clusters[1]->weight->value, 1);
        assert_int_equal(a->timeout->seconds, 10);
        assert_string_equal(a->retry_policy->retry_on, "retriable-status-codes");
        assert_int_equal(a->retry_policy->n_retriable_status_codes, 1);
        assert_int_equal(a->retry_policy->retriable_status_codes[0], 503);
        assert_int_equal(a->retry_policy->num_retries->value, 2);
        assert_int_equal(a->retry_policy->retry_back_off->base_interval->nanos, 100000000);
    }

    /* The redirect rule. */
    assert_int_equal(rt[5]->action_case, ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_REDIRECT);
    assert_string_equal(rt[5]->redirect->scheme_redirect, "https");
    assert_int_equal(
        rt[5]->redirect->response_code,
        ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__MOVED_PERMANENTLY);

    /* Every backend has a cluster and a load assignment, referenced or not. */
    assert_int_equal(r->count[TR_CDS], 3);
    assert_int_equal(r->count[TR_EDS], 3);

    protobuf_c_message_free_unpacked(&rc->base, NULL);
    protobuf_c_message_free_unpacked(&h->base, NULL);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    tr_resources_unref(r);
}

/* ReplacePrefixMatch keeps Gateway API semantics across the two routes of a prefix. */
TL_TEST(test_prefix_rewrite)
{
    tr_resources *r =
        build("{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
              "   'attached_routes': ['r']}],"
              " 'http_routes': [{'name': 'r', 'rules': [{'matches': [{'path': '/foo/'}],"
              "   'filters': [{'type': 'URLRewrite', 'url_rewrite': {'hostname': 'in.svc',"
              "     'path': {'type': 'ReplacePrefixMatch', 'replace_prefix_match': '/v2'}}}],"
              "   'backend_refs': [{'name': 'b'}]}]}],"
              " 'backends': [{'name': 'b', 'endpoints': [{'address': '::1', 'port': 80}]}]}");
    RouteConfiguration *rc = decode(r, TR_RDS, "l");
    const Envoy__Config__Route__V3__VirtualHost *vh = vhost(rc, "*");
    assert_int_equal(vh->n_routes, 2);
    assert_string_equal(vh->routes[0]->match->path, "/foo");
    assert_string_equal(vh->routes[0]->route->prefix_rewrite, "/v2");
    assert_string_equal(vh->routes[1]->match->prefix, "/foo/");
    assert_string_equal(vh->routes[1]->route->prefix_rewrite, "/v2/");
    assert_string_equal(vh->routes[1]->route->host_rewrite_literal, "in.svc");
    assert_string_equal(vh->routes[1]->route->cluster, "b");
    protobuf_c_message_free_unpacked(&rc->base, NULL);
    tr_resources_unref(r);
}

/* ---------------------------------------------------------------- TLS */

static const char TLS[] =
    "{'listeners': [{'name': 'https', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 8443,"
    "   'address': '::', 'hostnames': ['example.com'], 'attached_routes': ['site'],"
    "   'tls': {'secret_refs': ['example-tls'], 'sni_hosts': ['Example.com'],"
    "     'min_version': 'TLSv1.2',"
    "     'frontend_validation': {'ca_pems': ['-----BEGIN CERTIFICATE-----\\nCA\\n-----END "
    "CERTIFICATE-----']}},"
    "   'backend_tls': {'client_certificate_ref': 'default/client'}}],"
    " 'http_routes': [{'name': 'site', 'namespace': 'default',"
    "   'rules': [{'backend_refs': [{'name': 'api'}]}]}],"
    " 'backends': [{'name': 'api', 'namespace': 'default', 'protocol': 'HTTP',"
    "   'endpoints': [{'address': '10.1.0.1', 'port': 443, 'healthy': true}],"
    "   'connect_timeout': '1.500s',"
    "   'load_balancing': {'algorithm': 'LOAD_BALANCING_ALGORITHM_RING_HASH', 'hash_on': 'Header',"
    "     'hash_key': 'X-User', 'minimum_ring_size': '1024'},"
    "   'tls_validation': {'hostname': 'api.internal',"
    "     'ca_pems': ['-----BEGIN CERTIFICATE-----\\nBACKEND\\n-----END CERTIFICATE-----\\n']}}],"
    " 'secrets': [{'namespace': 'default', 'name': 'example-tls', 'cert_pem': 'CERT', 'key_pem': "
    "'KEY'},"
    "             {'namespace': 'default', 'name': 'client', 'cert_pem': 'C2', 'key_pem': 'K2'}]}";

TL_TEST(test_tls)
{
    tr_resources *r = build(TLS);

    /* Listener: SNI match, the TLS inspector, a DownstreamTlsContext naming SDS secrets. */
    Listener *l = decode(r, TR_LDS, "https");
    assert_string_equal(l->address->socket_address->address, "::");
    assert_int_equal(l->n_listener_filters, 1);
    assert_string_equal(l->listener_filters[0]->name, "envoy.filters.listener.tls_inspector");
    const Envoy__Config__Listener__V3__FilterChain *fc = l->filter_chains[0];
    assert_int_equal(fc->filter_chain_match->n_server_names, 1);
    assert_string_equal(fc->filter_chain_match->server_names[0], "example.com");
    assert_string_equal(fc->transport_socket->name, "envoy.transport_sockets.tls");
    DownstreamTlsContext *d = (DownstreamTlsContext *)tl_unpack_any(
        fc->transport_socket->typed_config,
        &envoy__extensions__transport_sockets__tls__v3__downstream_tls_context__descriptor);
    const Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext *c = d->common_tls_context;
    assert_int_equal(c->n_tls_certificate_sds_secret_configs, 1);
    assert_string_equal(c->tls_certificate_sds_secret_configs[0]->name, "default/example-tls");
    assert_ads(c->tls_certificate_sds_secret_configs[0]->sds_config);
    assert_int_equal(
        c->tls_params->tls_minimum_protocol_version,
        ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_PARAMETERS__TLS_PROTOCOL__TLSv1_2);
    assert_int_equal(c->n_alpn_protocols, 2);
    assert_string_equal(c->alpn_protocols[0], "h2");
    assert_int_equal(
        c->validation_context_type_case,
        ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT_SDS_SECRET_CONFIG);
    assert_string_equal(c->validation_context_sds_secret_config->name, "client-ca:https");
    assert_true(d->require_client_certificate->value);
    protobuf_c_message_free_unpacked(&d->base, NULL);

    /* Secrets: the listener certificate and the generated CA bundles. */
    Secret *s = decode(r, TR_SDS, "default/example-tls");
    assert_int_equal(s->type_case,
                     ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_TLS_CERTIFICATE);
    assert_string_equal(s->tls_certificate->certificate_chain->inline_string, "CERT");
    assert_string_equal(s->tls_certificate->private_key->inline_string, "KEY");
    protobuf_c_message_free_unpacked(&s->base, NULL);
    s = decode(r, TR_SDS, "client-ca:https");
    assert_non_null(strstr(s->validation_context->trusted_ca->inline_string, "\nCA\n"));
    protobuf_c_message_free_unpacked(&s->base, NULL);
    s = decode(r, TR_SDS, "ca:default/api");
    assert_non_null(strstr(s->validation_context->trusted_ca->inline_string, "BACKEND"));
    protobuf_c_message_free_unpacked(&s->base, NULL);
    assert_int_equal(r->count[TR_SDS], 4);

    /* Cluster: upstream TLS through SDS, client certificate from the listener, ring hash. */
    Cluster *cl = decode(r, TR_CDS, "default/api");
    assert_int_equal(cl->connect_timeout->seconds, 1);
    assert_int_equal(cl->connect_timeout->nanos, 500000000);
    assert_int_equal(cl->lb_policy, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH);
    assert_int_equal(cl->ring_hash_lb_config->minimum_ring_size->value, 1024);
    assert_int_equal(cl->n_typed_extension_protocol_options, 0);
    assert_string_equal(cl->transport_socket->name, "envoy.transport_sockets.tls");
    UpstreamTlsContext *u = (UpstreamTlsContext *)tl_unpack_any(
        cl->transport_socket->typed_config,
        &envoy__extensions__transport_sockets__tls__v3__upstream_tls_context__descriptor);
    assert_string_equal(u->sni, "api.internal");
    const Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext
        *cv = u->common_tls_context->combined_validation_context;
    assert_non_null(cv);
    assert_string_equal(cv->validation_context_sds_secret_config->name, "ca:default/api");
    assert_ads(cv->validation_context_sds_secret_config->sds_config);
    assert_int_equal(cv->default_validation_context->n_match_typed_subject_alt_names, 1);
    assert_string_equal(
        cv->default_validation_context->match_typed_subject_alt_names[0]->matcher->exact,
        "api.internal");
    assert_int_equal(u->common_tls_context->n_tls_certificate_sds_secret_configs, 1);
    assert_string_equal(u->common_tls_context->tls_certificate_sds_secret_configs[0]->name,
                        "default/client");
    protobuf_c_message_free_unpacked(&u->base, NULL);
    protobuf_c_message_free_unpacked(&cl->base, NULL);

    /* The route hashes on the header the ring-hash backend names. */
    RouteConfiguration *rc = decode(r, TR_RDS, "https");
    const Route *rt = vhost(rc, "example.com")->routes[0];
    assert_int_equal(rt->route->n_hash_policy, 1);
    assert_string_equal(rt->route->hash_policy[0]->header->header_name, "x-user");
    protobuf_c_message_free_unpacked(&rc->base, NULL);

    protobuf_c_message_free_unpacked(&l->base, NULL);
    tr_resources_unref(r);
}

/* ---------------------------------------------------------------- stream routes */

TL_TEST(test_tcp_proxy)
{
    tr_resources *r = build(
        "{'listeners': [{'name': 'pg', 'protocol': 'LISTENER_PROTOCOL_TCP', 'port': 5432,"
        "   'attached_routes': ['data/db']},"
        "  {'name': 'sni', 'protocol': 'LISTENER_PROTOCOL_TLS_PASSTHROUGH', 'port': 443,"
        "   'attached_routes': ['data/tls']}],"
        " 'stream_routes': [{'name': 'db', 'namespace': 'data', 'kind': 'ROUTE_KIND_TCP',"
        "   'rules': [{'port': 5432, 'backend_refs': [{'name': 'postgres'}]},"
        "             {'port': 9999, 'backend_refs': [{'name': 'other'}]}]},"
        "  {'name': 'tls', 'namespace': 'data', 'kind': 'ROUTE_KIND_TLS',"
        "   'rules': [{'sni_hostname': 'b.example.com', 'backend_refs': [{'name': 'postgres'}]},"
        "             {'sni_hostname': 'a.example.com', 'backend_refs': [{'name': 'postgres', "
        "'weight': 1},"
        "                {'name': 'other', 'weight': 2}]}]}],"
        " 'backends': [{'name': 'postgres', 'namespace': 'data',"
        "   'endpoints': [{'address': '10.2.0.1', 'port': 5432, 'healthy': true}]},"
        "  {'name': 'other', 'namespace': 'data', 'endpoints': []}]}");
    Listener *l = decode(r, TR_LDS, "pg");
    assert_int_equal(l->n_filter_chains, 1);
    assert_string_equal(l->filter_chains[0]->filters[0]->name, "envoy.filters.network.tcp_proxy");
    TcpProxy *tp = (TcpProxy *)tl_unpack_any(
        l->filter_chains[0]->filters[0]->typed_config,
        &envoy__extensions__filters__network__tcp_proxy__v3__tcp_proxy__descriptor);
    assert_string_equal(tp->stat_prefix, "pg");
    assert_string_equal(tp->cluster, "data/postgres");
    protobuf_c_message_free_unpacked(&tp->base, NULL);
    protobuf_c_message_free_unpacked(&l->base, NULL);

    l = decode(r, TR_LDS, "sni");
    assert_int_equal(l->n_listener_filters, 1);
    assert_int_equal(l->n_filter_chains, 2);
    assert_string_equal(l->filter_chains[0]->filter_chain_match->server_names[0], "a.example.com");
    assert_null(l->filter_chains[0]->transport_socket);
    tp = (TcpProxy *)tl_unpack_any(
        l->filter_chains[0]->filters[0]->typed_config,
        &envoy__extensions__filters__network__tcp_proxy__v3__tcp_proxy__descriptor);
    assert_int_equal(
        tp->cluster_specifier_case,
        ENVOY__EXTENSIONS__FILTERS__NETWORK__TCP_PROXY__V3__TCP_PROXY__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS);
    assert_string_equal(tp->weighted_clusters->clusters[0]->name, "data/other");
    assert_int_equal(tp->weighted_clusters->clusters[0]->weight, 2);
    protobuf_c_message_free_unpacked(&tp->base, NULL);
    assert_string_equal(l->filter_chains[1]->filter_chain_match->server_names[0], "b.example.com");
    protobuf_c_message_free_unpacked(&l->base, NULL);

    /* A backend without endpoints still gets its (empty) load assignment. */
    ClusterLoadAssignment *cla = decode(r, TR_EDS, "data/other");
    assert_int_equal(cla->n_endpoints, 0);
    protobuf_c_message_free_unpacked(&cla->base, NULL);
    tr_resources_unref(r);
}

/* ---------------------------------------------------------------- determinism */

static bool same(const tr_resource *a, const tr_resource *b)
{
    return strcmp(a->name, b->name) == 0 && a->len == b->len &&
           memcmp(a->bytes, b->bytes, a->len) == 0 && strcmp(a->version, b->version) == 0;
}

TL_TEST(test_same_ir_same_bytes)
{
    const char *fixtures[] = {PROXYLESS, HTTP, TLS};
    for (size_t f = 0; f < 3; f++) {
        tr_resources *a = build(fixtures[f]), *b = build(fixtures[f]);
        for (int t = 0; t < TR_TYPE_COUNT; t++) {
            assert_int_equal(a->count[t], b->count[t]);
            for (size_t i = 0; i < a->count[t]; i++)
                assert_true(same(&a->items[t][i], &b->items[t][i]));
            /* Sorted by name, for the binary search and for stable responses. */
            for (size_t i = 1; i < a->count[t]; i++)
                assert_true(strcmp(a->items[t][i - 1].name, a->items[t][i].name) < 0);
        }
        tr_resources_unref(a);
        tr_resources_unref(b);
    }
}

/* Moving one endpoint changes that load assignment's version and nothing else; the
 * order endpoints are listed in does not matter. */
TL_TEST(test_endpoint_change_scoped)
{
    static const char base[] =
        "{'listeners': [{'name': 'g', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'hostnames': "
        "['a.test'],"
        "   'attached_routes': ['r']}],"
        " 'grpc_routes': [{'name': 'r', 'rules': [{'backend_refs': [{'name': 'x'}, {'name': "
        "'y'}]}]}],"
        " 'backends': [{'name': 'x', 'endpoints': [%s]},"
        "              {'name': 'y', 'endpoints': [{'address': '10.0.0.9', 'port': 1}]}]}";
    char one[2048], two[2048], three[2048];
    snprintf(
        one, sizeof one, base,
        "{'address': '10.0.0.1', 'port': 1, 'healthy': true}, {'address': '10.0.0.2', 'port': 1}");
    snprintf(
        two, sizeof two, base,
        "{'address': '10.0.0.2', 'port': 1}, {'address': '10.0.0.1', 'port': 1, 'healthy': true}");
    snprintf(
        three, sizeof three, base,
        "{'address': '10.0.0.1', 'port': 1, 'healthy': true}, {'address': '10.0.0.3', 'port': 1}");
    tr_resources *a = build(one), *b = build(two), *c = build(three);
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        assert_int_equal(a->count[t], c->count[t]);
        for (size_t i = 0; i < a->count[t]; i++) {
            assert_true(same(&a->items[t][i], &b->items[t][i]));
            bool changed = t == TR_EDS && strcmp(a->items[t][i].name, "x") == 0;
            assert_int_equal(strcmp(a->items[t][i].version, c->items[t][i].version) != 0, changed);
        }
    }
    tr_resources_unref(a);
    tr_resources_unref(b);
    tr_resources_unref(c);
}

/* ---------------------------------------------------------------- refusals */

TL_TEST(test_unknown_backend)
{
    sx_err err = build_error(
        "{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
        "   'attached_routes': ['r']}],"
        " 'http_routes': [{'name': 'a', 'namespace': 'x'},"
        "   {'name': 'r', 'namespace': 'team', 'rules': [{'backend_refs': [{'name': 'web'}]},"
        "     {'backend_refs': [{'name': 'nope', 'namespace': 'other'}]}]}],"
        " 'backends': [{'name': 'web', 'namespace': 'prod', 'endpoints': []}]}");
    assert_string_equal(err.message,
                        "http_routes[1].rules[0].backend_refs[0]: unknown backend \"team/web\" "
                        "(there is a backend \"prod/web\")");
    /* Every problem is listed, not just the first. */
    assert_non_null(strstr(err.detail, "2 problems"));
    assert_non_null(strstr(
        err.detail, "http_routes[1].rules[1].backend_refs[0]: unknown backend \"other/nope\""));
}

TL_TEST(test_refusals)
{
    struct {
        const char *ir, *message;
    } cases[] = {
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
         " 'attached_routes': ['missing']}]}",
         "listeners[0].attached_routes[0]: unknown route \"missing\""},
        {"{'backends': [{'name': 'b', 'endpoints': [{'address': 'db.local', 'port': 5}]}]}",
         "backends[0].endpoints[0].address: \"db.local\" is not an ip address: endpoints must be "
         "ip "
         "literals"},
        {"{'backends': [{'name': 'b', 'endpoints': [{'address': '10.0.0.1', 'port': 5},"
         " {'address': '10.0.0.1', 'port': 5, 'zone': 'z'}]}]}",
         "backends[0].endpoints[1]: duplicate endpoint 10.0.0.1 port 5 (also endpoints[0])"},
        {"{'backends': [{'name': 'b'}, {'name': 'b'}]}",
         "backends[1]: duplicate backend name \"b\" (also backends[0])"},
        {"{'backends': [{'name': 'b', 'ai_service': {'provider': 'openai'}}]}",
         "backends[0].ai_service: ai services are not supported by the envoy translation"},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 443}]}",
         "listeners[0].tls: a listener that terminates tls needs at least one secret"},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 0}]}",
         "listeners[0].port: port 0 is only for proxyless grpc listeners (protocol GRPC)"},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'hostnames': "
         "['*.x']}]}",
         "listeners[0].hostnames[0]: a proxyless grpc listener needs exact hostnames, not \"*.x\""},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
         " 'hostnames': ['a.com'], 'attached_routes': ['r']}],"
         " 'http_routes': [{'name': 'r', 'hostnames': ['b.com']}]}",
         "listeners[0].attached_routes: route \"r\" has no hostname that listener \"l\" serves"},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
         " 'attached_routes': ['r']}],"
         " 'http_routes': [{'name': 'r', 'rules': [{'filters': [{'type': 'ExtensionRef',"
         " 'extension_ref': {'name': 'auth'}}]}]}]}",
         "http_routes[0].rules[0].filters[0]: extension_ref filters are not supported by the envoy "
         "translation"},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
         " 'attached_routes': ['r']}],"
         " 'http_routes': [{'name': 'r', 'rules': [{'matches': [{'path': '/a', 'path_type': "
         "'Exact'}],"
         " 'filters': [{'type': 'URLRewrite', 'url_rewrite': {'path': {'type': "
         "'ReplacePrefixMatch',"
         " 'replace_prefix_match': '/b'}}}], 'backend_refs': [{'name': 'b'}]}]}],"
         " 'backends': [{'name': 'b'}]}",
         "http_routes[0].rules[0].matches[0]: replace_prefix_match needs PathPrefix matches"},
        {"{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_UDP', 'port': 53}]}",
         "listeners[0].attached_routes: a udp listener needs an attached udp route rule to "
         "forward datagrams to"},
        {"{'backends': [{'name': 'b', 'load_balancing': {'algorithm': "
         "'LOAD_BALANCING_ALGORITHM_MAGLEV', 'maglev_table_size': '65536'}}]}",
         "backends[0].load_balancing.maglev_table_size: must be a prime number at most 5000011"},
        {"{'listeners': [{'name': 'g', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'hostnames': "
         "['a.test'],"
         " 'attached_routes': ['r']}], 'grpc_routes': [{'name': 'r', 'rules': [{'backend_refs':"
         " [{'name': 'b'}]}]}], 'backends': [{'name': 'b', 'load_balancing': {'algorithm':"
         " 'LOAD_BALANCING_ALGORITHM_LEAST_REQUEST'}}]}",
         "backends[0].load_balancing.algorithm: proxyless grpc clients (listeners[0]) support "
         "ROUND_ROBIN and RING_HASH only"},
        {"{'listeners': [{'name': 'a.test', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80},"
         " {'name': 'g', 'protocol': 'LISTENER_PROTOCOL_GRPC', 'hostnames': ['a.test']}]}",
         "listeners[1].hostnames[0]: listener name \"a.test\" is used twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sx_err err = build_error(cases[i].ir);
        if (strcmp(err.message, cases[i].message) != 0)
            fail_msg("case %zu\n got:  %s\n want: %s", i, err.message, cases[i].message);
    }
}

/* An HTTP and a gRPC route of one name are both attached by that name. */
TL_TEST(test_shared_route_name)
{
    tr_resources *r = build(
        "{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
        "   'attached_routes': ['api', 'api']}],"
        " 'http_routes': [{'name': 'api', 'namespace': 'n', 'rules': [{'matches': [{'path': '/h',"
        "   'path_type': 'Exact'}], 'backend_refs': [{'name': 'b'}]}]}],"
        " 'grpc_routes': [{'name': 'api', 'namespace': 'n', 'rules': [{'matches': [{'service': "
        "'s'}],"
        "   'backend_refs': [{'name': 'b'}]}]}],"
        " 'backends': [{'name': 'b', 'namespace': 'n'}]}");
    RouteConfiguration *rc = decode(r, TR_RDS, "l");
    const Envoy__Config__Route__V3__VirtualHost *vh = vhost(rc, "*");
    assert_int_equal(vh->n_routes, 2);
    assert_string_equal(vh->routes[0]->match->path, "/h");
    assert_string_equal(vh->routes[1]->match->prefix, "/s/");
    protobuf_c_message_free_unpacked(&rc->base, NULL);
    tr_resources_unref(r);
}

/* A gRPC match by regular expression becomes one path regex with each part grouped: an
 * alternation in the method stays inside the method ("Get|Put" must not match "Put"). */
TL_TEST(test_grpc_regex_parts_grouped)
{
    tr_resources *r =
        build("{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
              "   'attached_routes': ['api']}],"
              " 'grpc_routes': [{'name': 'api', 'namespace': 'n', 'rules': ["
              "   {'matches': [{'service': 'shop[.]Cart', 'method': 'Get|Put',"
              "                 'match_type': 'RegularExpression'},"
              "                {'method': 'List.*', 'match_type': 'RegularExpression'}],"
              "    'backend_refs': [{'name': 'b'}]}]}],"
              " 'backends': [{'name': 'b', 'namespace': 'n'}]}");
    RouteConfiguration *rc = decode(r, TR_RDS, "l");
    const Envoy__Config__Route__V3__VirtualHost *vh = vhost(rc, "*");
    assert_int_equal(vh->n_routes, 2);
    const char *got[2] = {vh->routes[0]->match->safe_regex->regex,
                          vh->routes[1]->match->safe_regex->regex};
    bool first = strcmp(got[0], "/(?:shop[.]Cart)/(?:Get|Put)") == 0;
    assert_string_equal(got[first ? 0 : 1], "/(?:shop[.]Cart)/(?:Get|Put)");
    assert_string_equal(got[first ? 1 : 0], "/[^/]+/(?:List.*)");
    protobuf_c_message_free_unpacked(&rc->base, NULL);
    tr_resources_unref(r);
}

TL_TEST(test_type_urls)
{
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        tr_type back;
        assert_int_equal(tr_type_from_url(tr_type_url((tr_type)t), &back), 0);
        assert_int_equal(back, t);
    }
    assert_string_equal(tr_type_url(TR_LDS),
                        "type.googleapis.com/envoy.config.listener.v3.Listener");
    assert_string_equal(tr_type_name(TR_EDS), "eds");
    tr_type t;
    assert_int_equal(tr_type_from_url("type.googleapis.com/envoy.config.core.v3.Node", &t),
                     SX_ENOTFOUND);

    /* References keep the set alive; the last unref frees it (checked by ASan). */
    tr_resources *r = build("{}");
    assert_ptr_equal(tr_resources_ref(r), r);
    tr_resources_unref(r);
    assert_null(tr_resources_find(r, TR_CDS, "none"));
    tr_resources_unref(r);
    tr_resources_unref(NULL);
}

TL_MAIN()
