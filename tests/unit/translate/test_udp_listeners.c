/*
 * test_udp_listeners.c — the listeners that bind UDP. An HTTP/3 listener translated into
 * an Envoy QUIC listener
 * (server/translate/translate_listener.c), decoded back from the bytes as a proxy reads
 * them: a UDP socket address, udp_listener_config with quic_options, the QUIC transport
 * socket holding the DownstreamTlsContext (SDS secrets, ALPN h3), SNI hosts as server
 * names, and the HTTP connection manager with codec HTTP3 whose routes are served as
 * for any HTTP listener; an HTTP/3 listener without secrets is refused. A UDP listener
 * becomes a UDP socket whose udp_proxy listener filter forwards to its route's backend;
 * what Envoy's UDP proxy cannot express (several rules, weighted backends) is refused.
 */
#include "tests/lib/translate_fx.h"

#include <stdio.h>
#include <string.h>

#include "envoy/config/listener/v3/udp_listener_config.pb-c.h"
#include "envoy/extensions/filters/udp/udp_proxy/v3/udp_proxy.pb-c.h"
#include "envoy/extensions/transport_sockets/quic/v3/quic_transport.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"

static const char H3[] =
    "{'listeners': [{'name': 'h3', 'protocol': 'LISTENER_PROTOCOL_HTTP3', 'port': 443,"
    "   'hostnames': ['example.com'], 'attached_routes': ['site'],"
    "   'tls': {'secret_refs': ['example-tls'], 'sni_hosts': ['Example.com']}},"
    "  {'name': 'h2', 'protocol': 'LISTENER_PROTOCOL_HTTPS', 'port': 443,"
    "   'hostnames': ['example.com'], 'attached_routes': ['site'],"
    "   'tls': {'secret_refs': ['example-tls']}}],"
    " 'http_routes': [{'name': 'site', 'namespace': 'default',"
    "   'rules': [{'backend_refs': [{'name': 'api'}]}]}],"
    " 'backends': [{'name': 'api', 'namespace': 'default',"
    "   'endpoints': [{'address': '10.1.0.1', 'port': 80}]}],"
    " 'secrets': [{'name': 'example-tls', 'cert_pem': '-----BEGIN CERTIFICATE-----\\nX\\n-----END "
    "CERTIFICATE-----', 'key_pem': '-----BEGIN PRIVATE KEY-----\\nY\\n-----END PRIVATE "
    "KEY-----'}]}";

/* The listener name of r, failing the test unless its socket speaks protocol; the caller
 * frees it. */
static Envoy__Config__Listener__V3__Listener *listener_on(const tr_resources *r, const char *name,
                                                          int protocol)
{
    Envoy__Config__Listener__V3__Listener *l = tl_listener(r, name);
    assert_int_equal(l->address->socket_address->protocol, protocol);
    return l;
}

TL_TEST(test_quic_listener)
{
    tr_resources *r = tl_translated(H3);
    /* A UDP socket taking QUIC. */
    Envoy__Config__Listener__V3__Listener *l =
        listener_on(r, "h3", ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PROTOCOL__UDP);
    assert_int_equal(l->address->socket_address->port_value, 443);
    assert_non_null(l->udp_listener_config);
    assert_non_null(l->udp_listener_config->quic_options);
    assert_int_equal(l->n_listener_filters, 0); /* no TLS inspector on UDP */
    /* TLS in the QUIC transport socket, ALPN h3, SNI as server names. */
    const Envoy__Config__Listener__V3__FilterChain *fc = l->filter_chains[0];
    assert_string_equal(fc->transport_socket->name, "envoy.transport_sockets.quic");
    Envoy__Extensions__TransportSockets__Quic__V3__QuicDownstreamTransport *q =
        (Envoy__Extensions__TransportSockets__Quic__V3__QuicDownstreamTransport *)tl_unpack_any(
            fc->transport_socket->typed_config,
            &envoy__extensions__transport_sockets__quic__v3__quic_downstream_transport__descriptor);
    const Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext *c =
        q->downstream_tls_context->common_tls_context;
    assert_int_equal(c->n_tls_certificate_sds_secret_configs, 1);
    assert_string_equal(c->tls_certificate_sds_secret_configs[0]->name, "example-tls");
    assert_int_equal(c->n_alpn_protocols, 1);
    assert_string_equal(c->alpn_protocols[0], "h3");
    assert_string_equal(fc->filter_chain_match->server_names[0], "example.com");
    protobuf_c_message_free_unpacked(&q->base, NULL);
    /* The connection manager speaks HTTP/3 and routes through RDS like any other. */
    Hcm *h = (Hcm *)tl_unpack_any(
        fc->filters[0]->typed_config,
        &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor);
    assert_int_equal(
        h->codec_type,
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__CODEC_TYPE__HTTP3);
    assert_non_null(h->http3_protocol_options);
    assert_string_equal(h->rds->route_config_name, "h3");
    assert_string_equal(h->http_filters[h->n_http_filters - 1]->name, "envoy.filters.http.router");
    protobuf_c_message_free_unpacked(&h->base, NULL);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);
    assert_non_null(tr_resources_find(r, TR_RDS, "h3"));
    /* The HTTPS listener on the same port keeps its TCP socket. */
    l = listener_on(r, "h2", ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PROTOCOL__TCP);
    assert_null(l->udp_listener_config);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);
    tr_resources_unref(r);
}

/* Translating ir_text is refused with message, and gives nothing. */
static void expect_refused(const char *ir_text, const char *message)
{
    tr_resources *r = NULL;
    sx_err err;
    assert_int_equal(tl_translate(ir_text, &r, &err), SX_EVALIDATION);
    assert_null(r);
    assert_string_equal(err.message, message);
}

TL_TEST(test_needs_tls)
{
    expect_refused(
        "{'listeners': [{'name': 'h3', 'protocol': 'LISTENER_PROTOCOL_HTTP3', 'port': 443}]}",
        "listeners[0].tls: a listener that terminates tls needs at least one secret");
}

static const char UDP[] =
    "{'listeners': [{'name': 'dns', 'protocol': 'LISTENER_PROTOCOL_UDP', 'port': 53,"
    "   'attached_routes': ['dns']}, {'name': 'dns-tcp', 'protocol': 'LISTENER_PROTOCOL_TCP',"
    "   'port': 53, 'attached_routes': ['dns-tcp']}],"
    " 'stream_routes': [{'name': 'dns', 'kind': 'ROUTE_KIND_UDP', 'rules': [{'port': 53,"
    "   'backend_refs': [{'name': 'resolver'}]}, {'port': 5353, 'backend_refs': [{'name':"
    "   'other'}]}]}, {'name': 'dns-tcp', 'kind': 'ROUTE_KIND_TCP', 'rules': [{'backend_refs':"
    "   [{'name': 'resolver'}]}]}],"
    " 'backends': [{'name': 'resolver', 'endpoints': [{'address': '10.0.0.53', 'port': 53}]},"
    "  {'name': 'other', 'endpoints': [{'address': '10.0.0.54', 'port': 53}]}]}";

TL_TEST(test_udp_proxy)
{
    tr_resources *r = tl_translated(UDP);
    Envoy__Config__Listener__V3__Listener *l =
        listener_on(r, "dns", ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PROTOCOL__UDP);
    assert_int_equal(l->n_filter_chains, 0);
    assert_int_equal(l->n_listener_filters, 1);
    assert_string_equal(l->listener_filters[0]->name, "envoy.filters.udp_listener.udp_proxy");
    Envoy__Extensions__Filters__Udp__UdpProxy__V3__UdpProxyConfig *u =
        (Envoy__Extensions__Filters__Udp__UdpProxy__V3__UdpProxyConfig *)tl_unpack_any(
            l->listener_filters[0]->typed_config,
            &envoy__extensions__filters__udp__udp_proxy__v3__udp_proxy_config__descriptor);
    /* The rule for port 53 applies; the one for 5353 does not. */
    assert_string_equal(u->cluster, "resolver");
    assert_string_equal(u->stat_prefix, "dns");
    protobuf_c_message_free_unpacked(&u->base, NULL);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);
    assert_non_null(tr_resources_find(r, TR_CDS, "resolver"));
    /* The TCP listener of the same port stays TCP. */
    l = listener_on(r, "dns-tcp", ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PROTOCOL__TCP);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);
    tr_resources_unref(r);
}

TL_TEST(test_udp_refusals)
{
    expect_refused(
        "{'listeners': [{'name': 'u', 'protocol': 'LISTENER_PROTOCOL_UDP', 'port': 53,"
        " 'attached_routes': ['u']}],"
        " 'stream_routes': [{'name': 'u', 'kind': 'ROUTE_KIND_UDP', 'rules': [{'backend_refs':"
        " [{'name': 'a', 'weight': 1}, {'name': 'b', 'weight': 3}]}]}],"
        " 'backends': [{'name': 'a'}, {'name': 'b'}]}",
        "stream_routes[0].rules[0].backend_refs: envoy's udp proxy forwards to one backend, not 2 "
        "weighted ones");
    expect_refused(
        "{'listeners': [{'name': 'u', 'protocol': 'LISTENER_PROTOCOL_UDP', 'port': 53,"
        " 'attached_routes': ['u']}],"
        " 'stream_routes': [{'name': 'u', 'kind': 'ROUTE_KIND_UDP', 'rules': [{'backend_refs':"
        " [{'name': 'a'}]}, {'backend_refs': [{'name': 'a'}]}]}],"
        " 'backends': [{'name': 'a'}]}",
        "listeners[0].attached_routes: 2 udp route rules apply to listener \"u\": envoy's udp "
        "proxy forwards a listener to one of them");
    expect_refused(
        "{'listeners': [{'name': 't', 'protocol': 'LISTENER_PROTOCOL_TCP', 'port': 53,"
        " 'attached_routes': ['u']}],"
        " 'stream_routes': [{'name': 'u', 'kind': 'ROUTE_KIND_UDP', 'rules': [{'backend_refs':"
        " [{'name': 'a'}]}]}], 'backends': [{'name': 'a'}]}",
        "listeners[0].attached_routes: udp route \"u\" attaches to UDP listeners only");
}

TL_MAIN()
