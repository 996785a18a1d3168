/*
 * translate_cluster.c — IR backends into Clusters and ClusterLoadAssignments.
 *
 * Every backend becomes a Cluster named by its qualified name ("<namespace>/<name>",
 * or "<name>") whose endpoints come over EDS on the same ADS stream
 * (eds_config.ads {} present, resource_api_version V3; service_name = the cluster
 * name), and a ClusterLoadAssignment of that name. Endpoints are grouped by zone into
 * one locality each, sorted (zone, then address, then port) since their order means
 * nothing; every locality carries a load_balancing_weight above 0, the number of its
 * healthy endpoints (at least 1), because gRPC clients weight localities and treat a
 * missing weight as 0 (every call fails). All endpoints are priority 0.
 *
 * A backend's Wasm plugin runs in the cluster's upstream HTTP filters
 * (translate_wasm.c), carried with the upstream protocol in HttpProtocolOptions.
 *
 * What Envoy cannot be told about a backend (AI services, session persistence on the
 * backend) is refused, not dropped: a proxy that silently skips a token limit is worse
 * than a snapshot that does not publish.
 */
#include "server/translate/translate.h"
#include "server/base/num.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/core/v3/address.pb-c.h"
#include "envoy/config/core/v3/protocol.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb-c.h"

typedef Envoy__Config__Cluster__V3__Cluster ev_cluster;
typedef Envoy__Config__Endpoint__V3__ClusterLoadAssignment ev_cla;
typedef Envoy__Config__Endpoint__V3__LocalityLbEndpoints ev_locality;
typedef Envoy__Config__Endpoint__V3__LbEndpoint ev_lb_endpoint;
typedef Gateway__Control__V1__BackendEndpoint ir_endpoint;

#define DEFAULT_CONNECT_TIMEOUT_S 5
/* gRPC clients refuse larger rings (grpc-js: 8M). */
#define MAX_RING_SIZE 8388608u
/* Envoy's largest Maglev table. */
#define MAX_MAGLEV_TABLE 5000011u

static bool is_prime(uint64_t n)
{
    if (n < 2)
        return false;
    for (uint64_t d = 2; d * d <= n; d++)
        if (n % d == 0)
            return false;
    return true;
}

/* Whether the backend speaks HTTP/2 (and so gRPC) to its endpoints. */
static int protocol_h2(const char *p, bool *h2)
{
    static const char *const h1[] = {"", "HTTP", "HTTP1", "HTTP/1.1", "HTTPS", "TCP", "TLS", NULL};
    static const char *const h2s[] = {"HTTP2", "H2", "H2C", "GRPC", "GRPCS", NULL};
    for (int i = 0; h1[i]; i++)
        if (strcasecmp(p ? p : "", h1[i]) == 0) {
            *h2 = false;
            return 0;
        }
    for (int i = 0; h2s[i]; i++)
        if (strcasecmp(p, h2s[i]) == 0) {
            *h2 = true;
            return 0;
        }
    return -1;
}

static void unsupported(tr_ctx *tr, const ir_backend *b, const char *path)
{
    if (b->ai_service)
        tr_error(tr, tr_printf(tr, "%s.ai_service", path),
                 "ai services are not supported by the envoy translation");
    if (b->session_persistence)
        tr_error(tr, tr_printf(tr, "%s.session_persistence", path),
                 "session persistence is not supported by the envoy translation");
}

static void load_balancing(tr_ctx *tr, ev_cluster *c,
                           const Gateway__Control__V1__LoadBalancingPolicy *lb, const char *path)
{
    if (lb == NULL)
        return;
    const char *lp = tr_printf(tr, "%s.load_balancing", path);
    bool hashing = false;
    switch (lb->algorithm) {
    case GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_UNSPECIFIED:
    case GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_ROUND_ROBIN:
        c->lb_policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__ROUND_ROBIN;
        break;
    case GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_LEAST_REQUEST:
        c->lb_policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__LEAST_REQUEST;
        break;
    case GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_RANDOM:
        c->lb_policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RANDOM;
        break;
    case GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_RING_HASH:
        hashing = true;
        c->lb_policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH;
        if (lb->minimum_ring_size > MAX_RING_SIZE) {
            tr_error(tr, tr_printf(tr, "%s.minimum_ring_size", lp), "must be at most %u",
                     MAX_RING_SIZE);
        } else if (lb->minimum_ring_size > 0) {
            c->lb_config_case = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_CONFIG_RING_HASH_LB_CONFIG;
            c->ring_hash_lb_config =
                TR_NEW(tr, Envoy__Config__Cluster__V3__Cluster__RingHashLbConfig,
                       ENVOY__CONFIG__CLUSTER__V3__CLUSTER__RING_HASH_LB_CONFIG__INIT);
            c->ring_hash_lb_config->minimum_ring_size = tr_u64(tr, lb->minimum_ring_size);
        }
        break;
    case GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_MAGLEV:
        hashing = true;
        c->lb_policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__MAGLEV;
        if (lb->maglev_table_size > 0) {
            if (lb->maglev_table_size > MAX_MAGLEV_TABLE || !is_prime(lb->maglev_table_size)) {
                tr_error(tr, tr_printf(tr, "%s.maglev_table_size", lp),
                         "must be a prime number at most %u", MAX_MAGLEV_TABLE);
            } else {
                c->lb_config_case = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_CONFIG_MAGLEV_LB_CONFIG;
                c->maglev_lb_config =
                    TR_NEW(tr, Envoy__Config__Cluster__V3__Cluster__MaglevLbConfig,
                           ENVOY__CONFIG__CLUSTER__V3__CLUSTER__MAGLEV_LB_CONFIG__INIT);
                c->maglev_lb_config->table_size = tr_u64(tr, lb->maglev_table_size);
            }
        }
        break;
    default:
        tr_error(tr, tr_printf(tr, "%s.algorithm", lp), "unknown load balancing algorithm %d",
                 (int)lb->algorithm);
    }
    if (!hashing && (lb->minimum_ring_size || lb->maglev_table_size))
        tr_error(tr, lp, "ring and table sizes apply to RING_HASH and MAGLEV only");
    if (!tr_empty(lb->hash_on)) {
        if (!hashing)
            tr_error(tr, tr_printf(tr, "%s.hash_on", lp),
                     "hash_on applies to RING_HASH and MAGLEV only");
        else if (strcmp(lb->hash_on, "SourceIP") != 0 && tr_empty(lb->hash_key))
            tr_error(tr, tr_printf(tr, "%s.hash_key", lp), "hashing on %s needs a hash_key",
                     lb->hash_on);
    }
}

/* HttpProtocolOptions: HTTP/2 (h2) or HTTP/1.1 upstream, with the upstream HTTP
 * filters[0..n). */
static Google__Protobuf__Any *protocol_options(
    tr_ctx *tr, bool h2,
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter **filters, size_t n)
{
    Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions__ExplicitHttpConfig *e = TR_NEW(
        tr, Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions__ExplicitHttpConfig,
        ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__EXPLICIT_HTTP_CONFIG__INIT);
    if (h2) {
        e->protocol_config_case =
            ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__EXPLICIT_HTTP_CONFIG__PROTOCOL_CONFIG_HTTP2_PROTOCOL_OPTIONS;
        e->http2_protocol_options = TR_NEW(tr, Envoy__Config__Core__V3__Http2ProtocolOptions,
                                           ENVOY__CONFIG__CORE__V3__HTTP2_PROTOCOL_OPTIONS__INIT);
    } else {
        e->protocol_config_case =
            ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__EXPLICIT_HTTP_CONFIG__PROTOCOL_CONFIG_HTTP_PROTOCOL_OPTIONS;
        e->http_protocol_options = TR_NEW(tr, Envoy__Config__Core__V3__Http1ProtocolOptions,
                                          ENVOY__CONFIG__CORE__V3__HTTP1_PROTOCOL_OPTIONS__INIT);
    }
    Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions *o =
        TR_NEW(tr, Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions,
               ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__INIT);
    o->upstream_protocol_options_case =
        ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__UPSTREAM_PROTOCOL_OPTIONS_EXPLICIT_HTTP_CONFIG;
    o->explicit_http_config = e;
    o->http_filters = filters;
    o->n_http_filters = n;
    return tr_any(tr, &o->base);
}

/* gRPC clients NACK a Cluster with another load balancing policy, and take upstream
 * TLS only from certificate providers of their own bootstrap, never over SDS. */
static void proxyless_limits(tr_ctx *tr, size_t bi, const ev_cluster *c, const char *path)
{
    const char *from = tr->proxyless_from[bi];
    if (from == NULL)
        return;
    if (c->lb_policy != ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__ROUND_ROBIN &&
        c->lb_policy != ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH)
        tr_error(tr, tr_printf(tr, "%s.load_balancing.algorithm", path),
                 "proxyless grpc clients (%s) support ROUND_ROBIN and RING_HASH only", from);
    if (tr->ir->backends[bi]->tls_validation)
        tr_error(tr, tr_printf(tr, "%s.tls_validation", path),
                 "proxyless grpc clients (%s) cannot take backend tls from the control plane",
                 from);
    if (tr->ir->backends[bi]->wasm_plugin)
        tr_error(tr, tr_printf(tr, "%s.wasm_plugin", path),
                 "proxyless grpc clients (%s) run no wasm plugins", from);
}

static void cluster(tr_ctx *tr, size_t bi, const char *qname, const char *path)
{
    const ir_backend *b = tr->ir->backends[bi];
    ev_cluster *c = TR_NEW(tr, ev_cluster, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__INIT);
    c->name = (char *)qname;
    c->cluster_discovery_type_case =
        ENVOY__CONFIG__CLUSTER__V3__CLUSTER__CLUSTER_DISCOVERY_TYPE_TYPE;
    c->type = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__EDS;
    c->eds_cluster_config = TR_NEW(tr, Envoy__Config__Cluster__V3__Cluster__EdsClusterConfig,
                                   ENVOY__CONFIG__CLUSTER__V3__CLUSTER__EDS_CLUSTER_CONFIG__INIT);
    c->eds_cluster_config->eds_config = tr_ads(tr);
    c->eds_cluster_config->service_name = (char *)qname;

    const char *tp = tr_printf(tr, "%s.connect_timeout", path);
    c->connect_timeout = tr_duration(tr, b->connect_timeout, tp);
    if (b->connect_timeout && c->connect_timeout && c->connect_timeout->seconds == 0 &&
        c->connect_timeout->nanos == 0)
        tr_error(tr, tp, "must be positive");
    if (b->connect_timeout == NULL) {
        c->connect_timeout =
            TR_NEW(tr, Google__Protobuf__Duration, GOOGLE__PROTOBUF__DURATION__INIT);
        c->connect_timeout->seconds = DEFAULT_CONNECT_TIMEOUT_S;
    }
    load_balancing(tr, c, b->load_balancing, path);

    bool h2 = false;
    if (protocol_h2(b->protocol, &h2) != 0)
        tr_error(tr, tr_printf(tr, "%s.protocol", path),
                 "unknown protocol \"%s\": use HTTP, HTTP2, GRPC, TCP or TLS (or leave it empty)",
                 b->protocol);
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter **filters = NULL;
    size_t n_filters = tr_wasm_upstream_filters(tr, b, path, &filters);
    if (h2 || n_filters) {
        Envoy__Config__Cluster__V3__Cluster__TypedExtensionProtocolOptionsEntry *e = TR_NEW(
            tr, Envoy__Config__Cluster__V3__Cluster__TypedExtensionProtocolOptionsEntry,
            ENVOY__CONFIG__CLUSTER__V3__CLUSTER__TYPED_EXTENSION_PROTOCOL_OPTIONS_ENTRY__INIT);
        e->key = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
        e->value = protocol_options(tr, h2, filters, n_filters);
        c->n_typed_extension_protocol_options = 1;
        c->typed_extension_protocol_options =
            (Envoy__Config__Cluster__V3__Cluster__TypedExtensionProtocolOptionsEntry **)tr_ptrs(tr,
                                                                                                1);
        c->typed_extension_protocol_options[0] = e;
    }
    c->transport_socket = tr_upstream_tls(tr, bi, h2, path);
    proxyless_limits(tr, bi, c, path);
    tr_emit(tr, TR_CDS, qname, &c->base);
}

/* An endpoint with its address in canonical text, for sorting and duplicates. */
typedef struct ep {
    const ir_endpoint *in;
    const char *zone;
    char addr[INET6_ADDRSTRLEN];
    size_t idx;
} ep;

static int cmp_addr(const void *a, const void *b)
{
    const ep *x = a, *y = b;
    int c = strcmp(x->addr, y->addr);
    if (c == 0)
        c = SX_CMP(x->in->port, y->in->port);
    return c ? c : SX_CMP(x->idx, y->idx);
}

static int cmp_ep(const void *a, const void *b)
{
    const ep *x = a, *y = b;
    int c = strcmp(x->zone, y->zone);
    return c ? c : cmp_addr(a, b);
}

static ev_lb_endpoint *lb_endpoint(tr_ctx *tr, const ep *e)
{
    Envoy__Config__Core__V3__SocketAddress *sa = TR_NEW(
        tr, Envoy__Config__Core__V3__SocketAddress, ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__INIT);
    sa->address = tr_strdup(tr, e->addr);
    sa->port_specifier_case = ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PORT_SPECIFIER_PORT_VALUE;
    sa->port_value = e->in->port;
    Envoy__Config__Core__V3__Address *a =
        TR_NEW(tr, Envoy__Config__Core__V3__Address, ENVOY__CONFIG__CORE__V3__ADDRESS__INIT);
    a->address_case = ENVOY__CONFIG__CORE__V3__ADDRESS__ADDRESS_SOCKET_ADDRESS;
    a->socket_address = sa;
    Envoy__Config__Endpoint__V3__Endpoint *en = TR_NEW(tr, Envoy__Config__Endpoint__V3__Endpoint,
                                                       ENVOY__CONFIG__ENDPOINT__V3__ENDPOINT__INIT);
    en->address = a;
    ev_lb_endpoint *le = TR_NEW(tr, ev_lb_endpoint, ENVOY__CONFIG__ENDPOINT__V3__LB_ENDPOINT__INIT);
    le->host_identifier_case = ENVOY__CONFIG__ENDPOINT__V3__LB_ENDPOINT__HOST_IDENTIFIER_ENDPOINT;
    le->endpoint = en;
    le->health_status = e->in->healthy ? ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__HEALTHY
                                       : ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__UNHEALTHY;
    return le;
}

static void load_assignment(tr_ctx *tr, size_t bi, const char *qname, const char *path)
{
    const ir_backend *b = tr->ir->backends[bi];
    ep *eps = tr_alloc(tr, (b->n_endpoints + 1) * sizeof *eps);
    size_t n = 0;
    for (size_t i = 0; i < b->n_endpoints; i++) {
        const ir_endpoint *in = b->endpoints[i];
        unsigned char raw[sizeof(struct in6_addr)];
        ep *e = &eps[n];
        e->in = in;
        e->zone = in->zone ? in->zone : "";
        e->idx = i;
        if (in->address && inet_pton(AF_INET, in->address, raw) == 1) {
            inet_ntop(AF_INET, raw, e->addr, sizeof e->addr);
        } else if (in->address && inet_pton(AF_INET6, in->address, raw) == 1) {
            inet_ntop(AF_INET6, raw, e->addr, sizeof e->addr);
        } else {
            tr_error(tr, tr_printf(tr, "%s.endpoints[%zu].address", path, i),
                     "\"%s\" is not an ip address: endpoints must be ip literals",
                     in->address ? in->address : "");
            continue;
        }
        if (in->port == 0 || in->port > 65535) {
            tr_error(tr, tr_printf(tr, "%s.endpoints[%zu].port", path, i),
                     "must be between 1 and 65535");
            continue;
        }
        n++;
    }
    /* The same address twice is refused by gRPC clients, whatever the zone. */
    qsort(eps, n, sizeof *eps, cmp_addr);
    for (size_t i = 1; i < n; i++)
        if (eps[i].in->port == eps[i - 1].in->port && strcmp(eps[i].addr, eps[i - 1].addr) == 0)
            tr_error(tr, tr_printf(tr, "%s.endpoints[%zu]", path, eps[i].idx),
                     "duplicate endpoint %s port %u (also endpoints[%zu])", eps[i].addr,
                     eps[i].in->port, eps[i - 1].idx);
    /* Within one zone the order by address is the order by zone and address. */
    bool one_zone = true;
    for (size_t i = 1; i < n && one_zone; i++)
        one_zone = strcmp(eps[i].zone, eps[0].zone) == 0;
    if (!one_zone)
        qsort(eps, n, sizeof *eps, cmp_ep);

    size_t n_loc = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(eps[i].zone, eps[i - 1].zone) != 0)
            n_loc++;
    ev_cla *cla = TR_NEW(tr, ev_cla, ENVOY__CONFIG__ENDPOINT__V3__CLUSTER_LOAD_ASSIGNMENT__INIT);
    cla->cluster_name = (char *)qname;
    cla->n_endpoints = n_loc;
    cla->endpoints = (ev_locality **)tr_ptrs(tr, n_loc);
    size_t start = 0;
    for (size_t l = 0; l < n_loc; l++) {
        size_t end = start + 1;
        while (end < n && strcmp(eps[end].zone, eps[start].zone) == 0)
            end++;
        ev_locality *loc =
            TR_NEW(tr, ev_locality, ENVOY__CONFIG__ENDPOINT__V3__LOCALITY_LB_ENDPOINTS__INIT);
        loc->locality =
            TR_NEW(tr, Envoy__Config__Core__V3__Locality, ENVOY__CONFIG__CORE__V3__LOCALITY__INIT);
        loc->locality->zone = tr_strdup(tr, eps[start].zone);
        loc->n_lb_endpoints = end - start;
        loc->lb_endpoints = (ev_lb_endpoint **)tr_ptrs(tr, end - start);
        uint32_t healthy = 0;
        for (size_t i = start; i < end; i++) {
            loc->lb_endpoints[i - start] = lb_endpoint(tr, &eps[i]);
            healthy += eps[i].in->healthy ? 1 : 0;
        }
        loc->load_balancing_weight = tr_u32(tr, healthy ? healthy : 1);
        loc->priority = 0;
        cla->endpoints[l] = loc;
        start = end;
    }
    tr_emit(tr, TR_EDS, qname, &cla->base);
}

void tr_clusters(tr_ctx *tr)
{
    for (size_t i = 0; i < tr->ir->n_backends; i++) {
        const ir_backend *b = tr->ir->backends[i];
        const char *path = tr_printf(tr, "backends[%zu]", i);
        const char *qname = tr_qname(tr, b->namespace_, b->name);
        unsupported(tr, b, path);
        cluster(tr, i, qname, path);
        load_assignment(tr, i, qname, path);
    }
}
