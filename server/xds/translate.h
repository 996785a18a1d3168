/*
 * translate.h — the internal interface between resources.c and the translators that
 * turn one IR snapshot into Envoy messages (translate_*.c). Not used outside server/xds.
 *
 * A translation runs in one xds_tr context: the IR, an arena that owns every protobuf-c
 * struct built on the way (freed at once when the build ends), the list of problems
 * found, the lookup tables that resolve names between IR objects, and the resources
 * emitted so far. Translators never stop at the first problem: they record it with
 * xds_tr_error and carry on, so one build reports everything that is wrong; the build
 * fails when the list is not empty.
 *
 * The order of the passes (resources.c) is: index, secrets, routes, listeners (which
 * also record, per backend, the client certificate a listener presents to it and
 * whether proxyless clients read its Cluster), clusters.
 */
#ifndef SX_XDS_TRANSLATE_H
#define SX_XDS_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "envoy/config/core/v3/base.pb-c.h"
#include "envoy/config/core/v3/config_source.pb-c.h"
#include "envoy/config/route/v3/route_components.pb-c.h"
#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/wrappers.pb-c.h"
#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/ir/ir.h"
#include "server/xds/resources.h"

/* Short names for the IR types the translators read. */
typedef Gateway__Control__V1__Listener ir_listener;
typedef Gateway__Control__V1__HttpRoute ir_http_route;
typedef Gateway__Control__V1__GrpcRoute ir_grpc_route;
typedef Gateway__Control__V1__StreamRoute ir_stream_route;
typedef Gateway__Control__V1__BackendCluster ir_backend;
typedef Gateway__Control__V1__BackendRef ir_backend_ref;
typedef Gateway__Control__V1__SecretMaterial ir_secret;

/* The three kinds of IR route a listener can attach. */
typedef enum xds_route_kind {
    XDS_ROUTE_HTTP = 0,
    XDS_ROUTE_GRPC,
    XDS_ROUTE_STREAM,
} xds_route_kind;

/* One name in a lookup table: the qualified name ("<namespace>/<name>", or name when
 * the namespace is empty), the bare name, and the index of the object in its IR list. */
typedef struct xds_tr_name {
    const char *qname;
    const char *name;
    xds_route_kind kind; /* route tables only */
    size_t idx;
} xds_tr_name;

/* One Envoy Route built from one match of one IR rule, with the keys that order it
 * within a virtual host (see translate_route.c). */
typedef struct xds_tr_route {
    Envoy__Config__Route__V3__Route *msg;
    bool forwarding; /* action is route (not redirect or direct_response) */
    int path_rank;   /* 0 exact, 1 regular expression, 2 prefix */
    size_t path_len;
    bool has_method;
    size_t n_headers, n_query;
    const char *qname; /* owning route, for the tie-break */
    xds_route_kind kind;
    size_t rule, match, part;
    const char *where; /* IR path of the rule, for errors */
} xds_tr_route;

/* Every Route built from one IR HTTP or gRPC route, in rule order. */
typedef struct xds_tr_route_set {
    xds_tr_route *items;
    size_t count;
    size_t *backends; /* indexes of every backend the route sends to or mirrors to */
    size_t n_backends;
} xds_tr_route_set;

/* Resources emitted so far for one type, unsorted. */
typedef struct xds_tr_out {
    xds_resource *items;
    size_t count, cap;
} xds_tr_out;

/* At most this many problems are listed; the rest are only counted. */
#define XDS_TR_MAX_ERRORS 100

typedef struct xds_tr {
    const ir_snapshot *ir;
    sx_arena *arena;
    sx_fielderrs errs;
    size_t errs_unlisted; /* problems beyond XDS_TR_MAX_ERRORS */
    xds_tr_out out[XDS_TYPE_COUNT];

    xds_tr_name *backends; /* sorted by qname */
    size_t n_backends;
    xds_tr_name *secrets; /* sorted by qname */
    size_t n_secrets;
    xds_tr_name *routes; /* every HTTP, gRPC and stream route, sorted by qname, kind */
    size_t n_routes;

    xds_tr_route_set *http_sets; /* per IR http route */
    xds_tr_route_set *grpc_sets; /* per IR grpc route */

    /* Per backend: the backend_tls of the listener(s) whose routes send to it (the
     * certificate the gateway presents to TLS backends, and TLS options), or NULL; and
     * the path of that listener's backend_tls, for errors. */
    const Gateway__Control__V1__BackendTlsConfig **backend_tls;
    const char **backend_tls_from;
    /* Per backend: the path of a proxyless listener whose routes send to it, or NULL.
     * gRPC clients then read its Cluster, which limits what the Cluster may say. */
    const char **proxyless_from;
} xds_tr;

/* ---------------------------------------------------------------- context helpers */

/* Records a problem: path (e.g. "http_routes[2].rules[0]") and a lowercase message
 * without trailing period. The same path and message are recorded once; past
 * XDS_TR_MAX_ERRORS problems are counted in errs_unlisted instead. */
void xds_tr_error(xds_tr *tr, const char *path, const char *fmt, ...) SX_PRINTF(3, 4);

/* Arena helpers; never NULL. */
void *xds_tr_alloc(xds_tr *tr, size_t n);
char *xds_tr_strdup(xds_tr *tr, const char *s);
char *xds_tr_printf(xds_tr *tr, const char *fmt, ...) SX_PRINTF(2, 3);
/* A new array of n pointers (n may be 0: returns NULL). */
void **xds_tr_ptrs(xds_tr *tr, size_t n);

/* A protobuf-c message copied from its INIT value into the arena:
 *   Foo *f = XDS_NEW(tr, Foo, FOO__INIT); */
#define XDS_NEW(tr, T, init) ((T *)xds_tr_dup_msg((tr), &(T)init, sizeof(T)))
void *xds_tr_dup_msg(xds_tr *tr, const void *init, size_t size);

/* "<namespace>/<name>", or name when namespace is empty or NULL (arena string). */
const char *xds_tr_qname(xds_tr *tr, const char *ns, const char *name);

/* Any holding m, with type URL "type.googleapis.com/" + m's full type name. */
Google__Protobuf__Any *xds_tr_any(xds_tr *tr, const ProtobufCMessage *m);
/* ConfigSource{ads: {}, resource_api_version: V3}. */
Envoy__Config__Core__V3__ConfigSource *xds_tr_ads(xds_tr *tr);
Google__Protobuf__UInt32Value *xds_tr_u32(xds_tr *tr, uint32_t v);
/* A copy of d; checks that it is not negative (records an error at path and returns
 * NULL when it is). d NULL gives NULL. */
Google__Protobuf__Duration *xds_tr_duration(xds_tr *tr, const Google__Protobuf__Duration *d,
                                            const char *path);
/* RegexMatcher{google_re2: {}, regex: re}. */
Envoy__Type__Matcher__V3__RegexMatcher *xds_tr_regex(xds_tr *tr, const char *re);

/* Packs m into a resource of type t named name. */
void xds_tr_emit(xds_tr *tr, xds_type t, const char *name, const ProtobufCMessage *m);

/* ---------------------------------------------------------------- name lookup */

/* Builds the lookup tables; duplicate names are errors. */
void xds_tr_index(xds_tr *tr);

/* The index of the backend with qualified name qname, or -1. */
long xds_tr_backend_find(xds_tr *tr, const char *qname);
/* The backend a BackendRef names: its namespace defaults to default_ns (the route's).
 * Returns the backend index, or -1 after recording an error at path. */
long xds_tr_backend_ref(xds_tr *tr, const ir_backend_ref *ref, const char *default_ns,
                        const char *path);
/* The secret a reference names, as its qualified name (the SDS resource name): an
 * exact qualified name, or a bare name that exactly one secret has. NULL after
 * recording an error at path. */
const char *xds_tr_secret_ref(xds_tr *tr, const char *ref, const char *path);
/* The routes an attached_routes entry names (same rule as secrets): an HTTP, a gRPC and
 * a stream route may share a name, and the entry then attaches all of them. Returns
 * how many (*out points at them in the table), or 0 after recording an error at path. */
size_t xds_tr_route_ref(xds_tr *tr, const char *ref, const char *path, const xds_tr_name **out);

/* ---------------------------------------------------------------- passes */

/* translate_tls.c: one Secret per IR secret. */
void xds_tr_secrets(xds_tr *tr);
/* translate_tls.c: a Secret named name holding a validation context that trusts the
 * concatenated PEM certificates (emitted once per name). */
void xds_tr_ca_secret(xds_tr *tr, const char *name, char **pems, size_t n_pems);
/* translate_tls.c: the TLS transport socket of listener li terminating TLS with its
 * secrets (SDS over ADS); http adds ALPN h2 and http/1.1. NULL after recording errors. */
Envoy__Config__Core__V3__TransportSocket *xds_tr_downstream_tls(xds_tr *tr, size_t li, bool http,
                                                                const char *path);
/* translate_tls.c: the TLS transport socket towards backend bi (tls_validation, and the
 * client certificate and options of tr->backend_tls[bi]); h2 offers ALPN h2. NULL when
 * the backend does not use TLS, or after recording errors. */
Envoy__Config__Core__V3__TransportSocket *xds_tr_upstream_tls(xds_tr *tr, size_t bi, bool h2,
                                                              const char *path);

/* translate_route.c: the Route entries of every HTTP and gRPC route. */
void xds_tr_routes(xds_tr *tr);
/* translate_route.c: the RouteConfiguration named name for listener li, which serves
 * the listener's attached HTTP/gRPC routes (attached[0..n), table entries). When
 * proxyless, entries that are not forwarding are errors (gRPC clients reject them). */
void xds_tr_route_config(xds_tr *tr, size_t li, const char *name,
                         const xds_tr_name *const *attached, size_t n, bool proxyless);
/* translate_route.c: backend ref weights resolved into a cluster specifier; helper
 * shared with the TCP proxy. Fills names[]/weights[] (arena, merged by cluster, sorted
 * by name, zero weights dropped) and returns how many; -1 after errors. */
long xds_tr_weighted_backends(xds_tr *tr, ir_backend_ref **refs, size_t n, const char *default_ns,
                              const char *path, const char ***names, uint32_t **weights);

/* translate_listener.c: Listener and RouteConfiguration resources; also fills
 * tr->backend_tls from the listeners' backend_tls. */
void xds_tr_listeners(xds_tr *tr);

/* translate_cluster.c: one Cluster and one ClusterLoadAssignment per backend. */
void xds_tr_clusters(xds_tr *tr);

#endif
