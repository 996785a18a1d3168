/*
 * translate_listener.c — IR listeners into Envoy Listeners (socket and proxyless) and
 * their RouteConfigurations.
 *
 * HTTP, HTTPS and GRPC listeners with a port become a socket Listener named like the IR
 * listener with one filter chain: the HTTP connection manager, routes over RDS on the
 * ADS stream (route_config_name = the listener name, which is also the name of its
 * RouteConfiguration), the router as the last HTTP filter, TLS when the listener
 * terminates it (HTTPS, or tls.enabled), SNI match on tls.sni_hosts. HTTP3 listeners
 * are the same over QUIC: a UDP socket, the QUIC transport socket, codec HTTP3.
 *
 * A GRPC listener with port 0 is for proxyless gRPC clients, which dial
 * xds:///HOSTNAME and ask for a Listener named exactly HOSTNAME: each hostname becomes
 * such a Listener holding an api_listener (the same connection manager), and they all
 * share the listener's RouteConfiguration, whose virtual host for HOSTNAME has exactly
 * that domain.
 *
 * TCP, TLS (terminate) and TLS_PASSTHROUGH listeners get one filter chain per SNI
 * hostname of their attached stream routes' rules (plus one without SNI for rules that
 * have none), each a tcp_proxy to the rule's backends, with the TLS inspector when any
 * chain matches on SNI. Rules whose port is set and differs from the listener's do not
 * apply to it.
 *
 * A UDP listener becomes a UDP socket whose udp_proxy listener filter forwards to the
 * one backend of the one UDP route rule that applies to it.
 *
 * Routes attach to listeners through attached_routes only; parent_refs are how the
 * producer of the IR decided those attachments and are not read here.
 */
#include "server/translate/translate.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

#include "envoy/config/core/v3/address.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/listener/v3/udp_listener_config.pb-c.h"
#include "envoy/extensions/filters/http/router/v3/router.pb-c.h"
#include "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.pb-c.h"
#include "envoy/extensions/filters/udp/udp_proxy/v3/udp_proxy.pb-c.h"

typedef Envoy__Config__Listener__V3__Listener ev_listener;
typedef Envoy__Config__Listener__V3__FilterChain ev_chain;
typedef Envoy__Config__Listener__V3__Filter ev_filter;
typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager
    ev_hcm;
typedef Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy ev_tcp;
typedef Gateway__Control__V1__StreamRule ir_stream_rule;

#define P_HTTP        GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTP
#define P_HTTPS       GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTPS
#define P_GRPC        GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_GRPC
#define P_HTTP3       GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTP3
#define P_TCP         GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_TCP
#define P_UDP         GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_UDP
#define P_PASSTHROUGH GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_TLS_PASSTHROUGH
#define P_TLS         GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_TLS

#define HCM_FILTER    "envoy.filters.network.http_connection_manager"
#define TCP_FILTER    "envoy.filters.network.tcp_proxy"
#define ROUTER        "envoy.filters.http.router"
#define TLS_INSPECTOR "envoy.filters.listener.tls_inspector"

/* Emits a Listener unless one of that name exists already. */
static void emit_listener(tr_ctx *tr, ev_listener *l, const char *path)
{
    for (size_t i = 0; i < tr->out[TR_LDS].count; i++) {
        if (strcmp(tr->out[TR_LDS].items[i].name, l->name) == 0) {
            tr_error(tr, path, "listener name \"%s\" is used twice", l->name);
            return;
        }
    }
    tr_emit(tr, TR_LDS, l->name, &l->base);
}

static Envoy__Config__Core__V3__Address *socket_address(tr_ctx *tr, const char *addr, uint32_t port,
                                                        const char *path)
{
    unsigned char raw[sizeof(struct in6_addr)];
    const char *a = tr_empty(addr) ? "0.0.0.0" : addr;
    if (inet_pton(AF_INET, a, raw) != 1 && inet_pton(AF_INET6, a, raw) != 1)
        tr_error(tr, path, "\"%s\" is not an ip address", a);
    Envoy__Config__Core__V3__SocketAddress *sa = TR_NEW(
        tr, Envoy__Config__Core__V3__SocketAddress, ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__INIT);
    sa->address = tr_strdup(tr, a);
    sa->port_specifier_case = ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PORT_SPECIFIER_PORT_VALUE;
    sa->port_value = port;
    Envoy__Config__Core__V3__Address *ad =
        TR_NEW(tr, Envoy__Config__Core__V3__Address, ENVOY__CONFIG__CORE__V3__ADDRESS__INIT);
    ad->address_case = ENVOY__CONFIG__CORE__V3__ADDRESS__ADDRESS_SOCKET_ADDRESS;
    ad->socket_address = sa;
    return ad;
}

/* A socket Listener of l: address, additional addresses; chains are the caller's. */
static ev_listener *socket_listener(tr_ctx *tr, const ir_listener *l, const char *path)
{
    ev_listener *out = TR_NEW(tr, ev_listener, ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT);
    out->name = tr_strdup(tr, l->name);
    out->address = socket_address(tr, l->address, l->port, tr_printf(tr, "%s.address", path));
    out->n_additional_addresses = l->n_addresses;
    out->additional_addresses =
        (Envoy__Config__Listener__V3__AdditionalAddress **)tr_ptrs(tr, l->n_addresses);
    for (size_t i = 0; i < l->n_addresses; i++) {
        Envoy__Config__Listener__V3__AdditionalAddress *aa =
            TR_NEW(tr, Envoy__Config__Listener__V3__AdditionalAddress,
                   ENVOY__CONFIG__LISTENER__V3__ADDITIONAL_ADDRESS__INIT);
        aa->address = socket_address(tr, l->addresses[i], l->port,
                                     tr_printf(tr, "%s.addresses[%zu]", path, i));
        out->additional_addresses[i] = aa;
    }
    return out;
}

static void tls_inspector(tr_ctx *tr, ev_listener *out)
{
    Envoy__Config__Listener__V3__ListenerFilter *f =
        TR_NEW(tr, Envoy__Config__Listener__V3__ListenerFilter,
               ENVOY__CONFIG__LISTENER__V3__LISTENER_FILTER__INIT);
    f->name = TLS_INSPECTOR;
    f->config_type_case = ENVOY__CONFIG__LISTENER__V3__LISTENER_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    Envoy__Extensions__Filters__Listener__TlsInspector__V3__TlsInspector *ti =
        TR_NEW(tr, Envoy__Extensions__Filters__Listener__TlsInspector__V3__TlsInspector,
               ENVOY__EXTENSIONS__FILTERS__LISTENER__TLS_INSPECTOR__V3__TLS_INSPECTOR__INIT);
    f->typed_config = tr_any(tr, &ti->base);
    out->n_listener_filters = 1;
    out->listener_filters = (Envoy__Config__Listener__V3__ListenerFilter **)tr_ptrs(tr, 1);
    out->listener_filters[0] = f;
}

static ev_filter *network_filter(tr_ctx *tr, const char *name, const ProtobufCMessage *config)
{
    ev_filter *f = TR_NEW(tr, ev_filter, ENVOY__CONFIG__LISTENER__V3__FILTER__INIT);
    f->name = (char *)name;
    f->config_type_case = ENVOY__CONFIG__LISTENER__V3__FILTER__CONFIG_TYPE_TYPED_CONFIG;
    f->typed_config = tr_any(tr, config);
    return f;
}

/* The filter chain match on the SNI hosts of t (as server names, lower case), or NULL when
 * t names none. */
static Envoy__Config__Listener__V3__FilterChainMatch *
sni_match(tr_ctx *tr, const Gateway__Control__V1__TlsConfig *t)
{
    if (t == NULL || t->n_sni_hosts == 0)
        return NULL;
    Envoy__Config__Listener__V3__FilterChainMatch *m =
        TR_NEW(tr, Envoy__Config__Listener__V3__FilterChainMatch,
               ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN_MATCH__INIT);
    m->n_server_names = t->n_sni_hosts;
    m->server_names = (char **)tr_ptrs(tr, t->n_sni_hosts);
    for (size_t i = 0; i < t->n_sni_hosts; i++)
        m->server_names[i] = tr_lower(tr, t->sni_hosts[i]);
    return m;
}

/* Whether one of the n routes needs a filter in its connection manager: with ratelimit
 * false, the stateful session filter (it keeps sessions, translate_session.c); with
 * ratelimit true, the local rate limit (it carries a token policy, translate_ratelimit.c). */
static bool routes_need(const tr_ctx *tr, const tr_name **routes, size_t n, bool ratelimit)
{
    for (size_t a = 0; a < n; a++) {
        const tr_route_set *s = routes[a]->kind == TR_ROUTE_HTTP   ? &tr->http_sets[routes[a]->idx]
                                : routes[a]->kind == TR_ROUTE_GRPC ? &tr->grpc_sets[routes[a]->idx]
                                                                   : NULL;
        if (s && (ratelimit ? s->ratelimited : s->sessions))
            return true;
    }
    return false;
}

/* The HTTP connection manager: RDS over ADS for route_config, the local rate limit
 * filter when a route carries a token policy's limit and the stateful session filter
 * when a route keeps sessions (both optional: clients without them ignore them), the
 * router last. */
static ev_hcm *connection_manager(tr_ctx *tr, const char *stat_prefix, const char *route_config,
                                  bool strip_port, bool sessions, bool limits)
{
    ev_hcm *h = TR_NEW(
        tr, ev_hcm,
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__INIT);
    h->codec_type =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__CODEC_TYPE__AUTO;
    h->stat_prefix = tr_strdup(tr, stat_prefix);
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__Rds *rds =
        TR_NEW(tr, Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__Rds,
               ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__RDS__INIT);
    rds->config_source = tr_ads(tr);
    rds->route_config_name = tr_strdup(tr, route_config);
    h->route_specifier_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__ROUTE_SPECIFIER_RDS;
    h->rds = rds;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *router =
        TR_NEW(tr, Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter,
               ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__INIT);
    router->name = ROUTER;
    router->config_type_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    Envoy__Extensions__Filters__Http__Router__V3__Router *r =
        TR_NEW(tr, Envoy__Extensions__Filters__Http__Router__V3__Router,
               ENVOY__EXTENSIONS__FILTERS__HTTP__ROUTER__V3__ROUTER__INIT);
    router->typed_config = tr_any(tr, &r->base);
    h->http_filters =
        (Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter **)tr_ptrs(tr,
                                                                                               3);
    if (limits)
        h->http_filters[h->n_http_filters++] =
            tr_http_filter(tr, TR_RATELIMIT_FILTER, tr_token_policy_filter_config(tr), true);
    if (sessions)
        h->http_filters[h->n_http_filters++] =
            tr_http_filter(tr, TR_SESSION_FILTER, tr_session_filter_config(tr), true);
    h->http_filters[h->n_http_filters++] = router;
    if (strip_port) {
        /* Virtual hosts are matched on the host without its port. */
        h->strip_port_mode_case =
            ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__STRIP_PORT_MODE_STRIP_ANY_HOST_PORT;
        h->strip_any_host_port = 1;
    }
    return h;
}

/* ---------------------------------------------------------------- backend TLS */

static bool same_backend_tls(tr_ctx *tr, const Gateway__Control__V1__BackendTlsConfig *a,
                             const Gateway__Control__V1__BackendTlsConfig *b)
{
    if (a == b)
        return true;
    size_t na = protobuf_c_message_get_packed_size(&a->base),
           nb = protobuf_c_message_get_packed_size(&b->base);
    if (na != nb)
        return false;
    uint8_t *x = tr_alloc(tr, na + 1), *y = tr_alloc(tr, nb + 1);
    protobuf_c_message_pack(&a->base, x);
    protobuf_c_message_pack(&b->base, y);
    return memcmp(x, y, na) == 0;
}

/* Records that listener li's backend_tls applies to backend bi. */
static void mark_backend(tr_ctx *tr, size_t li, size_t bi)
{
    const Gateway__Control__V1__BackendTlsConfig *bt = tr->ir->listeners[li]->backend_tls;
    if (bt == NULL || (tr_empty(bt->client_certificate_ref) && bt->n_options == 0))
        return;
    const char *from = tr_printf(tr, "listeners[%zu].backend_tls", li);
    if (tr->backend_tls[bi] == NULL) {
        tr->backend_tls[bi] = bt;
        tr->backend_tls_from[bi] = from;
        return;
    }
    if (!same_backend_tls(tr, tr->backend_tls[bi], bt))
        tr_error(tr, from, "backend \"%s\" is also reached from %s with other tls settings",
                 tr_qname(tr, tr->ir->backends[bi]->namespace_, tr->ir->backends[bi]->name),
                 tr->backend_tls_from[bi]);
}

/* Records which clusters gRPC clients of a proxyless listener will ask for: the ones
 * its routes forward to (not mirrors, not zero weights; gRPC does not read those). */
static void mark_cluster(tr_ctx *tr, const char *name, const char *path)
{
    long bi = tr_backend_find(tr, name);
    if (bi >= 0 && tr->proxyless_from[bi] == NULL)
        tr->proxyless_from[bi] = path;
}

static void mark_proxyless(tr_ctx *tr, const tr_name **routes, size_t n, const char *path)
{
    for (size_t a = 0; a < n; a++) {
        const tr_route_set *set = routes[a]->kind == TR_ROUTE_HTTP ? &tr->http_sets[routes[a]->idx]
                                                                   : &tr->grpc_sets[routes[a]->idx];
        for (size_t k = 0; k < set->count; k++) {
            const Envoy__Config__Route__V3__Route *r = set->items[k].msg;
            if (r->action_case != ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE)
                continue;
            const Envoy__Config__Route__V3__RouteAction *ra = r->route;
            if (ra->cluster_specifier_case ==
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER)
                mark_cluster(tr, ra->cluster, path);
            else if (ra->cluster_specifier_case ==
                     ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS)
                for (size_t c = 0; c < ra->weighted_clusters->n_clusters; c++)
                    mark_cluster(tr, ra->weighted_clusters->clusters[c]->name, path);
        }
    }
}

/* ---------------------------------------------------------------- HTTP listeners */

/* The attached routes of listener li, resolved and without repeats. */
static size_t attached_routes(tr_ctx *tr, size_t li, const tr_name ***out)
{
    const ir_listener *l = tr->ir->listeners[li];
    /* An HTTP, a gRPC and a stream route at most per name. */
    const tr_name **v = tr_alloc(tr, (3 * l->n_attached_routes + 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < l->n_attached_routes; i++) {
        const tr_name *e;
        size_t k = tr_route_ref(tr, l->attached_routes[i],
                                tr_printf(tr, "listeners[%zu].attached_routes[%zu]", li, i), &e);
        for (size_t m = 0; m < k; m++) {
            bool dup = false;
            for (size_t j = 0; j < n && !dup; j++)
                dup = v[j] == &e[m];
            if (!dup)
                v[n++] = &e[m];
        }
    }
    *out = v;
    return n;
}

static void http_listener(tr_ctx *tr, size_t li, const tr_name **routes, size_t n, const char *path)
{
    const ir_listener *l = tr->ir->listeners[li];
    const Gateway__Control__V1__TlsConfig *t = l->tls;
    bool terminate = l->protocol == P_HTTPS || (t && t->enabled);
    if (t && t->passthrough)
        tr_error(tr, tr_printf(tr, "%s.tls.passthrough", path),
                 "tls passthrough needs a TLS_PASSTHROUGH listener");
    if (t && !terminate && (t->n_secret_refs || t->n_sni_hosts))
        tr_error(tr, tr_printf(tr, "%s.tls", path),
                 "tls is configured but not enabled: set enabled or use protocol HTTPS");

    ev_listener *out = socket_listener(tr, l, path);
    ev_chain *fc = TR_NEW(tr, ev_chain, ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN__INIT);
    ev_hcm *hcm = connection_manager(tr, l->name, l->name, true, routes_need(tr, routes, n, false),
                                     routes_need(tr, routes, n, true));
    fc->n_filters = 1;
    fc->filters = (ev_filter **)tr_ptrs(tr, 1);
    fc->filters[0] = network_filter(tr, HCM_FILTER, &hcm->base);
    if (terminate) {
        fc->transport_socket = tr_downstream_tls(tr, li, true, path);
        fc->filter_chain_match = sni_match(tr, t);
        if (fc->filter_chain_match)
            tls_inspector(tr, out);
    }
    out->n_filter_chains = 1;
    out->filter_chains = (ev_chain **)tr_ptrs(tr, 1);
    out->filter_chains[0] = fc;
    emit_listener(tr, out, path);
    tr_route_config(tr, li, l->name, routes, n, false);
}

/* The transport of every address of a Listener: UDP. */
static void bind_udp(Envoy__Config__Core__V3__Address *a)
{
    if (a && a->socket_address)
        a->socket_address->protocol = ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PROTOCOL__UDP;
}

/* An HTTP/3 listener: a UDP socket taking QUIC (udp_listener_config.quic_options with
 * QUIC's defaults), TLS from the listener's secrets with ALPN h3 in the QUIC transport
 * socket (QUIC always encrypts, so the secrets are required), SNI hosts as the chain's
 * server names (QUIC reads them without a listener filter), and the HTTP connection
 * manager with codec HTTP3. Proxyless gRPC clients never ask for it: they read only
 * the listeners named by the hostnames they dial. */
static void http3_listener(tr_ctx *tr, size_t li, const tr_name **routes, size_t n,
                           const char *path)
{
    const ir_listener *l = tr->ir->listeners[li];
    const Gateway__Control__V1__TlsConfig *t = l->tls;
    if (l->port == 0)
        tr_error(tr, tr_printf(tr, "%s.port", path), "an http/3 listener needs a port");
    if (t && t->passthrough)
        tr_error(tr, tr_printf(tr, "%s.tls.passthrough", path),
                 "http/3 terminates tls in quic: it cannot pass tls through");
    ev_listener *out = socket_listener(tr, l, path);
    bind_udp(out->address);
    for (size_t i = 0; i < out->n_additional_addresses; i++)
        bind_udp(out->additional_addresses[i]->address);
    Envoy__Config__Listener__V3__UdpListenerConfig *u =
        TR_NEW(tr, Envoy__Config__Listener__V3__UdpListenerConfig,
               ENVOY__CONFIG__LISTENER__V3__UDP_LISTENER_CONFIG__INIT);
    u->quic_options = TR_NEW(tr, Envoy__Config__Listener__V3__QuicProtocolOptions,
                             ENVOY__CONFIG__LISTENER__V3__QUIC_PROTOCOL_OPTIONS__INIT);
    out->udp_listener_config = u;

    ev_chain *fc = TR_NEW(tr, ev_chain, ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN__INIT);
    ev_hcm *hcm = connection_manager(tr, l->name, l->name, true, routes_need(tr, routes, n, false),
                                     routes_need(tr, routes, n, true));
    hcm->codec_type =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__CODEC_TYPE__HTTP3;
    hcm->http3_protocol_options = TR_NEW(tr, Envoy__Config__Core__V3__Http3ProtocolOptions,
                                         ENVOY__CONFIG__CORE__V3__HTTP3_PROTOCOL_OPTIONS__INIT);
    fc->n_filters = 1;
    fc->filters = (ev_filter **)tr_ptrs(tr, 1);
    fc->filters[0] = network_filter(tr, HCM_FILTER, &hcm->base);
    fc->transport_socket = tr_downstream_quic(tr, li, path);
    fc->filter_chain_match = sni_match(tr, t);
    out->n_filter_chains = 1;
    out->filter_chains = (ev_chain **)tr_ptrs(tr, 1);
    out->filter_chains[0] = fc;
    emit_listener(tr, out, path);
    tr_route_config(tr, li, l->name, routes, n, false);
}

static void proxyless_listeners(tr_ctx *tr, size_t li, const tr_name **routes, size_t n,
                                const char *path)
{
    const ir_listener *l = tr->ir->listeners[li];
    if (l->tls && (l->tls->enabled || l->tls->n_secret_refs))
        tr_error(tr, tr_printf(tr, "%s.tls", path),
                 "a proxyless listener (port 0) has no socket to terminate tls on");
    if (l->n_hostnames == 0)
        tr_error(tr, tr_printf(tr, "%s.hostnames", path),
                 "a proxyless grpc listener (port 0) needs the hostnames clients dial");
    for (size_t i = 0; i < l->n_hostnames; i++) {
        const char *h = l->hostnames[i];
        const char *hp = tr_printf(tr, "%s.hostnames[%zu]", path, i);
        if (tr_empty(h) || strchr(h, '*')) {
            tr_error(tr, hp, "a proxyless grpc listener needs exact hostnames, not \"%s\"",
                     h ? h : "");
            continue;
        }
        ev_hcm *hcm = connection_manager(tr, h, l->name, false, routes_need(tr, routes, n, false),
                                         routes_need(tr, routes, n, true));
        Envoy__Config__Listener__V3__ApiListener *api =
            TR_NEW(tr, Envoy__Config__Listener__V3__ApiListener,
                   ENVOY__CONFIG__LISTENER__V3__API_LISTENER__INIT);
        api->api_listener = tr_any(tr, &hcm->base);
        ev_listener *out = TR_NEW(tr, ev_listener, ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT);
        out->name = tr_strdup(tr, h);
        out->api_listener = api;
        emit_listener(tr, out, hp);
    }
    tr_route_config(tr, li, l->name, routes, n, true);
}

/* ---------------------------------------------------------------- UDP listeners */

/* A UDP listener: a UDP socket whose udp_proxy listener filter forwards every datagram
 * to the backend of the one UDP route rule that applies to it (rules whose port is set
 * and differs do not). Envoy's UDP proxy names one cluster: more rules, or a rule
 * splitting traffic between backends, cannot be expressed and are refused. */
static void udp_listener(tr_ctx *tr, size_t li, const tr_name **routes, size_t n, const char *path)
{
    const ir_listener *l = tr->ir->listeners[li];
    if (l->port == 0)
        tr_error(tr, tr_printf(tr, "%s.port", path), "a udp listener needs a port");
    if (l->tls && (l->tls->enabled || l->tls->n_secret_refs || l->tls->n_sni_hosts))
        tr_error(tr, tr_printf(tr, "%s.tls", path), "a udp listener does not use tls");
    const ir_stream_rule *rule = NULL;
    const char *ns = NULL, *where = NULL;
    size_t applying = 0;
    for (size_t a = 0; a < n; a++) {
        const ir_stream_route *sr =
            routes[a]->kind == TR_ROUTE_STREAM ? tr->ir->stream_routes[routes[a]->idx] : NULL;
        if (sr == NULL || sr->kind != GATEWAY__CONTROL__V1__ROUTE_KIND__ROUTE_KIND_UDP) {
            tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                     "route \"%s\" cannot attach to a udp listener: only udp routes can",
                     routes[a]->qname);
            continue;
        }
        for (size_t k = 0; k < sr->n_rules; k++) {
            if (sr->rules[k]->port != 0 && sr->rules[k]->port != l->port)
                continue;
            if (applying++ == 0) {
                rule = sr->rules[k];
                ns = sr->namespace_;
                where = tr_printf(tr, "stream_routes[%zu].rules[%zu]", routes[a]->idx, k);
            }
        }
    }
    if (applying == 0) {
        tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                 "a udp listener needs an attached udp route rule to forward datagrams to");
        return;
    }
    if (applying > 1) {
        tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                 "%zu udp route rules apply to listener \"%s\": envoy's udp proxy forwards a "
                 "listener to one of them",
                 applying, l->name);
        return;
    }
    const char **names;
    uint32_t *weights;
    long m = tr_weighted_backends(tr, rule->backend_refs, rule->n_backend_refs, ns, where, &names,
                                  &weights);
    for (size_t r = 0; r < rule->n_backend_refs; r++) {
        const ir_backend_ref *ref = rule->backend_refs[r];
        long bi = tr_backend_find(
            tr, tr_qname(tr, !tr_empty(ref->namespace_) ? ref->namespace_ : ns, ref->name));
        if (bi >= 0)
            mark_backend(tr, li, (size_t)bi);
    }
    if (m == 0)
        tr_error(tr, where, "a udp rule needs a backend with a weight above 0");
    else if (m > 1)
        tr_error(tr, tr_printf(tr, "%s.backend_refs", where),
                 "envoy's udp proxy forwards to one backend, not %ld weighted ones", m);
    if (m != 1)
        return;
    Envoy__Extensions__Filters__Udp__UdpProxy__V3__UdpProxyConfig *u =
        TR_NEW(tr, Envoy__Extensions__Filters__Udp__UdpProxy__V3__UdpProxyConfig,
               ENVOY__EXTENSIONS__FILTERS__UDP__UDP_PROXY__V3__UDP_PROXY_CONFIG__INIT);
    u->stat_prefix = tr_strdup(tr, l->name);
    u->route_specifier_case =
        ENVOY__EXTENSIONS__FILTERS__UDP__UDP_PROXY__V3__UDP_PROXY_CONFIG__ROUTE_SPECIFIER_CLUSTER;
    u->cluster = (char *)names[0];
    Envoy__Config__Listener__V3__ListenerFilter *f =
        TR_NEW(tr, Envoy__Config__Listener__V3__ListenerFilter,
               ENVOY__CONFIG__LISTENER__V3__LISTENER_FILTER__INIT);
    f->name = "envoy.filters.udp_listener.udp_proxy";
    f->config_type_case = ENVOY__CONFIG__LISTENER__V3__LISTENER_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    f->typed_config = tr_any(tr, &u->base);
    ev_listener *out = socket_listener(tr, l, path);
    bind_udp(out->address);
    for (size_t i = 0; i < out->n_additional_addresses; i++)
        bind_udp(out->additional_addresses[i]->address);
    out->n_listener_filters = 1;
    out->listener_filters = (Envoy__Config__Listener__V3__ListenerFilter **)tr_ptrs(tr, 1);
    out->listener_filters[0] = f;
    emit_listener(tr, out, path);
}

/* ---------------------------------------------------------------- stream listeners */

typedef struct stream_chain {
    const char *sni; /* "" for the chain without SNI */
    const ir_stream_rule *rule;
    const char *ns;
    const char *where;
} stream_chain;

static int cmp_chain(const void *a, const void *b)
{
    return strcmp(((const stream_chain *)a)->sni, ((const stream_chain *)b)->sni);
}

static void stream_listener(tr_ctx *tr, size_t li, const tr_name **routes, size_t n,
                            const char *path)
{
    const ir_listener *l = tr->ir->listeners[li];
    const Gateway__Control__V1__TlsConfig *t = l->tls;
    bool terminate = l->protocol == P_TLS, passthrough = l->protocol == P_PASSTHROUGH;
    if (l->port == 0)
        tr_error(tr, tr_printf(tr, "%s.port", path), "a stream listener needs a port");
    if (l->protocol == P_TCP && t && (t->enabled || t->n_secret_refs || t->n_sni_hosts))
        tr_error(tr, tr_printf(tr, "%s.tls", path),
                 "a TCP listener does not use tls: use protocol TLS or TLS_PASSTHROUGH");

    size_t cap = 0;
    for (size_t a = 0; a < n; a++)
        cap += tr->ir->stream_routes[routes[a]->idx]->n_rules;
    stream_chain *chains = tr_alloc(tr, (cap + 1) * sizeof *chains);
    size_t nc = 0;
    for (size_t a = 0; a < n; a++) {
        size_t ri = routes[a]->idx;
        const ir_stream_route *sr = tr->ir->stream_routes[ri];
        const char *rp = tr_printf(tr, "stream_routes[%zu]", ri);
        bool tcp = sr->kind == GATEWAY__CONTROL__V1__ROUTE_KIND__ROUTE_KIND_TCP;
        if (sr->kind == GATEWAY__CONTROL__V1__ROUTE_KIND__ROUTE_KIND_UDP) {
            tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                     "udp route \"%s\" attaches to UDP listeners only", routes[a]->qname);
            continue;
        }
        if (sr->kind != GATEWAY__CONTROL__V1__ROUTE_KIND__ROUTE_KIND_TLS && !tcp) {
            tr_error(tr, tr_printf(tr, "%s.kind", rp), "route kind is not set");
            continue;
        }
        if (tcp && passthrough) {
            tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                     "tcp route \"%s\" cannot attach to a TLS_PASSTHROUGH listener",
                     routes[a]->qname);
            continue;
        }
        size_t used = 0;
        for (size_t k = 0; k < sr->n_rules; k++) {
            const ir_stream_rule *rule = sr->rules[k];
            const char *where = tr_printf(tr, "%s.rules[%zu]", rp, k);
            if (rule->port != 0 && rule->port != l->port)
                continue;
            used++;
            if (rule->mode == GATEWAY__CONTROL__V1__TLS_ROUTE_MODE__TLS_ROUTE_MODE_PASSTHROUGH &&
                !passthrough)
                tr_error(tr, tr_printf(tr, "%s.mode", where),
                         "passthrough rules need a TLS_PASSTHROUGH listener (\"%s\" is not)",
                         l->name);
            if (rule->mode == GATEWAY__CONTROL__V1__TLS_ROUTE_MODE__TLS_ROUTE_MODE_TERMINATE &&
                !terminate)
                tr_error(tr, tr_printf(tr, "%s.mode", where),
                         "terminate rules need a TLS listener (\"%s\" is not)", l->name);
            if (!tr_empty(rule->sni_hostname) && l->protocol == P_TCP)
                tr_error(tr, tr_printf(tr, "%s.sni_hostname", where),
                         "sni matching needs a TLS or TLS_PASSTHROUGH listener");
            chains[nc++] =
                (stream_chain){tr_empty(rule->sni_hostname) ? "" : tr_lower(tr, rule->sni_hostname),
                               rule, sr->namespace_, where};
        }
        if (used == 0)
            tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                     "route \"%s\" has no rule for port %u", routes[a]->qname, l->port);
    }
    if (nc == 0) {
        tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                 "a stream listener needs an attached route to forward connections to");
        return;
    }
    qsort(chains, nc, sizeof *chains, cmp_chain);
    for (size_t i = 1; i < nc; i++)
        if (strcmp(chains[i].sni, chains[i - 1].sni) == 0)
            tr_error(tr, chains[i].where, "%s and %s both take %s%s%s on listener \"%s\"",
                     chains[i - 1].where, chains[i].where, chains[i].sni[0] ? "sni \"" : "",
                     chains[i].sni[0] ? chains[i].sni : "every connection",
                     chains[i].sni[0] ? "\"" : "", l->name);

    ev_listener *out = socket_listener(tr, l, path);
    out->n_filter_chains = nc;
    out->filter_chains = (ev_chain **)tr_ptrs(tr, nc);
    bool sni = false;
    for (size_t i = 0; i < nc; i++) {
        const stream_chain *c = &chains[i];
        const char **names;
        uint32_t *weights;
        long m = tr_weighted_backends(tr, c->rule->backend_refs, c->rule->n_backend_refs, c->ns,
                                      c->where, &names, &weights);
        for (size_t r = 0; r < c->rule->n_backend_refs; r++) {
            const ir_backend_ref *ref = c->rule->backend_refs[r];
            long bi = tr_backend_find(
                tr, tr_qname(tr, !tr_empty(ref->namespace_) ? ref->namespace_ : c->ns, ref->name));
            if (bi >= 0)
                mark_backend(tr, li, (size_t)bi);
        }
        if (m == 0)
            tr_error(tr, c->where, "a stream rule needs a backend with a weight above 0");
        ev_tcp *tp =
            TR_NEW(tr, ev_tcp, ENVOY__EXTENSIONS__FILTERS__NETWORK__TCP_PROXY__V3__TCP_PROXY__INIT);
        tp->stat_prefix = tr_strdup(tr, l->name);
        if (m == 1) {
            tp->cluster_specifier_case =
                ENVOY__EXTENSIONS__FILTERS__NETWORK__TCP_PROXY__V3__TCP_PROXY__CLUSTER_SPECIFIER_CLUSTER;
            tp->cluster = (char *)names[0];
        } else if (m > 1) {
            Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy__WeightedCluster *wc = TR_NEW(
                tr, Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy__WeightedCluster,
                ENVOY__EXTENSIONS__FILTERS__NETWORK__TCP_PROXY__V3__TCP_PROXY__WEIGHTED_CLUSTER__INIT);
            wc->n_clusters = (size_t)m;
            wc->clusters =
                (Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy__WeightedCluster__ClusterWeight
                     **)tr_ptrs(tr, (size_t)m);
            for (long k = 0; k < m; k++) {
                Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy__WeightedCluster__ClusterWeight
                    *cw = TR_NEW(
                        tr,
                        Envoy__Extensions__Filters__Network__TcpProxy__V3__TcpProxy__WeightedCluster__ClusterWeight,
                        ENVOY__EXTENSIONS__FILTERS__NETWORK__TCP_PROXY__V3__TCP_PROXY__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT);
                cw->name = (char *)names[k];
                cw->weight = weights[k];
                wc->clusters[k] = cw;
            }
            tp->cluster_specifier_case =
                ENVOY__EXTENSIONS__FILTERS__NETWORK__TCP_PROXY__V3__TCP_PROXY__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS;
            tp->weighted_clusters = wc;
        }
        ev_chain *fc = TR_NEW(tr, ev_chain, ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN__INIT);
        fc->n_filters = 1;
        fc->filters = (ev_filter **)tr_ptrs(tr, 1);
        fc->filters[0] = network_filter(tr, TCP_FILTER, &tp->base);
        /* SNI of the rule; the rule without SNI on a TLS listener takes tls.sni_hosts. */
        char **sn = NULL;
        size_t n_sn = 0;
        if (c->sni[0]) {
            sn = (char **)tr_ptrs(tr, 1);
            sn[0] = (char *)c->sni;
            n_sn = 1;
        } else if (t && t->n_sni_hosts && l->protocol != P_TCP) {
            n_sn = t->n_sni_hosts;
            sn = (char **)tr_ptrs(tr, n_sn);
            for (size_t k = 0; k < n_sn; k++)
                sn[k] = tr_lower(tr, t->sni_hosts[k]);
        }
        if (n_sn) {
            Envoy__Config__Listener__V3__FilterChainMatch *fm =
                TR_NEW(tr, Envoy__Config__Listener__V3__FilterChainMatch,
                       ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN_MATCH__INIT);
            fm->n_server_names = n_sn;
            fm->server_names = sn;
            fc->filter_chain_match = fm;
            sni = true;
        }
        if (terminate)
            fc->transport_socket = tr_downstream_tls(tr, li, false, path);
        out->filter_chains[i] = fc;
    }
    if (sni || passthrough)
        tls_inspector(tr, out);
    emit_listener(tr, out, path);
}

/* ---------------------------------------------------------------- all listeners */

void tr_listeners(tr_ctx *tr)
{
    for (size_t li = 0; li < tr->ir->n_listeners; li++) {
        const ir_listener *l = tr->ir->listeners[li];
        const char *path = tr_printf(tr, "listeners[%zu]", li);
        if (tr_empty(l->name)) {
            tr_error(tr, tr_printf(tr, "%s.name", path), "listener name must not be empty");
            continue;
        }
        const tr_name **routes;
        size_t n = attached_routes(tr, li, &routes);
        bool http = l->protocol == P_HTTP || l->protocol == P_HTTPS || l->protocol == P_GRPC ||
                    l->protocol == P_HTTP3;
        bool stream = l->protocol == P_TCP || l->protocol == P_TLS || l->protocol == P_PASSTHROUGH;
        for (size_t a = 0; a < n; a++) {
            bool is_stream = routes[a]->kind == TR_ROUTE_STREAM;
            if ((http && is_stream) || (stream && !is_stream))
                tr_error(tr, tr_printf(tr, "%s.attached_routes", path),
                         "%s route \"%s\" cannot attach to a %s listener",
                         is_stream ? "stream" : "http", routes[a]->qname,
                         is_stream ? "http" : "stream");
        }
        if (http) {
            for (size_t a = 0; a < n; a++) {
                const tr_route_set *set =
                    routes[a]->kind == TR_ROUTE_HTTP   ? &tr->http_sets[routes[a]->idx]
                    : routes[a]->kind == TR_ROUTE_GRPC ? &tr->grpc_sets[routes[a]->idx]
                                                       : NULL;
                for (size_t b = 0; set && b < set->n_backends; b++)
                    mark_backend(tr, li, set->backends[b]);
            }
            /* Only HTTP and gRPC routes go into the route configuration. */
            size_t k = 0;
            for (size_t a = 0; a < n; a++)
                if (routes[a]->kind != TR_ROUTE_STREAM)
                    routes[k++] = routes[a];
            if (l->protocol == P_HTTP3) {
                http3_listener(tr, li, routes, k, path);
            } else if (l->port == 0 && l->protocol == P_GRPC) {
                mark_proxyless(tr, routes, k, path);
                proxyless_listeners(tr, li, routes, k, path);
            } else if (l->port == 0)
                tr_error(tr, tr_printf(tr, "%s.port", path),
                         "port 0 is only for proxyless grpc listeners (protocol GRPC)");
            else
                http_listener(tr, li, routes, k, path);
        } else if (stream) {
            size_t k = 0;
            for (size_t a = 0; a < n; a++)
                if (routes[a]->kind == TR_ROUTE_STREAM)
                    routes[k++] = routes[a];
            stream_listener(tr, li, routes, k, path);
        } else if (l->protocol == P_UDP) {
            udp_listener(tr, li, routes, n, path);
        } else {
            tr_error(tr, tr_printf(tr, "%s.protocol", path), "protocol is not set");
        }
    }
}
