/*
 * translate.h — the internal interface between resources.c and the translators that
 * turn one IR snapshot into Envoy messages (translate_*.c). Not used outside server/translate.
 *
 * A translation runs in one tr_ctx context: the IR, an arena that owns every protobuf-c
 * struct built on the way (freed at once when the build ends), the list of problems
 * found, the lookup tables that resolve names between IR objects, and the resources
 * emitted so far. Translators never stop at the first problem: they record it with
 * tr_error and carry on, so one build reports everything that is wrong; the build
 * fails when the list is not empty.
 *
 * The order of the passes (resources.c) is: index, secrets, routes, listeners (which
 * also record, per backend, the client certificate a listener presents to it and
 * whether proxyless clients read its Cluster), clusters.
 */
#ifndef SX_TRANSLATE_TRANSLATE_H
#define SX_TRANSLATE_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "envoy/config/core/v3/base.pb-c.h"
#include "envoy/config/core/v3/config_source.pb-c.h"
#include "envoy/config/route/v3/route_components.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/wrappers.pb-c.h"
#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/ir/ir.h"
#include "server/translate/resources.h"

/* Short names for the IR types the translators read. */
typedef Gateway__Control__V1__Listener ir_listener;
typedef Gateway__Control__V1__HttpRoute ir_http_route;
typedef Gateway__Control__V1__GrpcRoute ir_grpc_route;
typedef Gateway__Control__V1__StreamRoute ir_stream_route;
typedef Gateway__Control__V1__BackendCluster ir_backend;
typedef Gateway__Control__V1__BackendRef ir_backend_ref;
typedef Gateway__Control__V1__SecretMaterial ir_secret;

/* The three kinds of IR route a listener can attach. */
typedef enum tr_route_kind {
    TR_ROUTE_HTTP = 0,
    TR_ROUTE_GRPC,
    TR_ROUTE_STREAM,
} tr_route_kind;

/* One name in a lookup table: the qualified name ("<namespace>/<name>", or name when
 * the namespace is empty), the bare name, and the index of the object in its IR list. */
typedef struct tr_name {
    const char *qname;
    const char *name;
    tr_route_kind kind; /* route tables only */
    size_t idx;
} tr_name;

/* One Envoy Route built from one match of one IR rule, with the keys that order it
 * within a virtual host (see translate_vhost.c). */
typedef struct tr_route {
    Envoy__Config__Route__V3__Route *msg;
    bool forwarding; /* action is route (not redirect or direct_response) */
    int path_rank;   /* 0 exact, 1 regular expression, 2 prefix */
    size_t path_len;
    bool has_method;
    size_t n_headers, n_query;
    const char *qname; /* owning route, for the tie-break */
    tr_route_kind kind;
    size_t rule, match, part;
    const char *where; /* IR path of the rule, for errors */
} tr_route;

/* Every Route built from one IR HTTP or gRPC route, in rule order. */
typedef struct tr_route_set {
    tr_route *items;
    size_t count;
    size_t *backends; /* indexes of every backend the route sends to or mirrors to */
    size_t n_backends;
    bool sessions;    /* a Route keeps sessions: its connection manager needs the filter */
    bool ratelimited; /* a Route carries a token policy's rate limit (likewise) */
} tr_route_set;

/* Resources emitted so far for one type, unsorted. */
typedef struct tr_out {
    tr_resource *items;
    size_t count, cap;
} tr_out;

/* At most this many problems are listed; the rest are only counted. */
#define TR_MAX_ERRORS 100

typedef struct tr_ctx {
    const ir_snapshot *ir;
    sx_arena *arena;
    sx_fielderrs errs;
    size_t errs_unlisted; /* problems beyond TR_MAX_ERRORS */
    tr_out out[TR_TYPE_COUNT];

    tr_name *backends; /* sorted by qname */
    size_t n_backends;
    tr_name *secrets; /* sorted by qname */
    size_t n_secrets;
    tr_name *routes; /* every HTTP, gRPC and stream route, sorted by qname, kind */
    size_t n_routes;

    tr_route_set *http_sets; /* per IR http route */
    tr_route_set *grpc_sets; /* per IR grpc route */

    /* Per backend: the backend_tls of the listener(s) whose routes send to it (the
     * certificate the gateway presents to TLS backends, and TLS options), or NULL; and
     * the path of that listener's backend_tls, for errors. */
    const Gateway__Control__V1__BackendTlsConfig **backend_tls;
    const char **backend_tls_from;
    /* Per backend: the path of a proxyless listener whose routes send to it, or NULL.
     * gRPC clients then read its Cluster, which limits what the Cluster may say. */
    const char **proxyless_from;
} tr_ctx;

/* ---------------------------------------------------------------- context helpers */

/* Records a problem: path (e.g. "http_routes[2].rules[0]") and a lowercase message
 * without trailing period. The same path and message are recorded once; past
 * TR_MAX_ERRORS problems are counted in errs_unlisted instead. */
void tr_error(tr_ctx *tr, const char *path, const char *fmt, ...) SX_PRINTF(3, 4);

/* Arena helpers; never NULL. */
void *tr_alloc(tr_ctx *tr, size_t n);
char *tr_strdup(tr_ctx *tr, const char *s);
char *tr_printf(tr_ctx *tr, const char *fmt, ...) SX_PRINTF(2, 3);
/* A new array of n pointers (n may be 0: returns NULL). */
void **tr_ptrs(tr_ctx *tr, size_t n);

/* Whether s is NULL or "". */
static inline bool tr_empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}
/* An arena copy of s in ASCII lower case (hostnames, header names). */
char *tr_lower(tr_ctx *tr, const char *s);

/* A growing array of pointers in the arena (the old array is left to the arena). */
typedef struct tr_pvec {
    void **v;
    size_t n, cap;
} tr_pvec;
void tr_pv_push(tr_ctx *tr, tr_pvec *p, void *x);

/* A protobuf-c message copied from its INIT value into the arena:
 *   Foo *f = TR_NEW(tr, Foo, FOO__INIT); */
#define TR_NEW(tr, T, init) ((T *)tr_dup_msg((tr), &(T)init, sizeof(T)))
void *tr_dup_msg(tr_ctx *tr, const void *init, size_t size);

/* "<namespace>/<name>", or name when namespace is empty or NULL (arena string). */
const char *tr_qname(tr_ctx *tr, const char *ns, const char *name);

/* Any holding m, with type URL "type.googleapis.com/" + m's full type name. */
Google__Protobuf__Any *tr_any(tr_ctx *tr, const ProtobufCMessage *m);
/* An HTTP filter named name with config (typed_config); optional: clients that do not
 * know it skip it instead of refusing what carries it. */
Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *
tr_http_filter(tr_ctx *tr, const char *name, Google__Protobuf__Any *config, bool optional);
/* ConfigSource{ads: {}, resource_api_version: V3}. */
Envoy__Config__Core__V3__ConfigSource *tr_ads(tr_ctx *tr);
Google__Protobuf__UInt32Value *tr_u32(tr_ctx *tr, uint32_t v);
Google__Protobuf__UInt64Value *tr_u64(tr_ctx *tr, uint64_t v);
/* A copy of d; checks that it is not negative (records an error at path and returns
 * NULL when it is). d NULL gives NULL. */
Google__Protobuf__Duration *tr_duration(tr_ctx *tr, const Google__Protobuf__Duration *d,
                                        const char *path);
/* RegexMatcher{google_re2: {}, regex: re}. */
Envoy__Type__Matcher__V3__RegexMatcher *tr_regex(tr_ctx *tr, const char *re);

/* Packs m into a resource of type t named name. */
void tr_emit(tr_ctx *tr, tr_type t, const char *name, const ProtobufCMessage *m);

/* ---------------------------------------------------------------- name lookup */

/* Builds the lookup tables; duplicate names are errors. */
void tr_index(tr_ctx *tr);

/* The index of the backend with qualified name qname, or -1. */
long tr_backend_find(tr_ctx *tr, const char *qname);
/* The backend a BackendRef names: its namespace defaults to default_ns (the route's).
 * Returns the backend index, or -1 after recording an error at path. */
long tr_backend_ref(tr_ctx *tr, const ir_backend_ref *ref, const char *default_ns,
                    const char *path);
/* The secret a reference names, as its qualified name (the SDS resource name): an
 * exact qualified name, or a bare name that exactly one secret has. NULL after
 * recording an error at path. */
const char *tr_secret_ref(tr_ctx *tr, const char *ref, const char *path);
/* The routes an attached_routes entry names (same rule as secrets): an HTTP, a gRPC and
 * a stream route may share a name, and the entry then attaches all of them. Returns
 * how many (*out points at them in the table), or 0 after recording an error at path. */
size_t tr_route_ref(tr_ctx *tr, const char *ref, const char *path, const tr_name **out);

/* ---------------------------------------------------------------- passes */

/* translate_tls.c: one Secret per IR secret. */
void tr_secrets(tr_ctx *tr);
/* translate_tls.c: a Secret named name holding a validation context that trusts the
 * concatenated PEM certificates (emitted once per name). */
void tr_ca_secret(tr_ctx *tr, const char *name, char **pems, size_t n_pems);
/* translate_tls.c: the TLS transport socket of listener li terminating TLS with its
 * secrets (SDS over ADS); http adds ALPN h2 and http/1.1. NULL after recording errors. */
Envoy__Config__Core__V3__TransportSocket *tr_downstream_tls(tr_ctx *tr, size_t li, bool http,
                                                            const char *path);
/* translate_tls.c: the same context with ALPN h3, in a QUIC transport socket
 * (envoy.transport_sockets.quic: QuicDownstreamTransport), for an HTTP/3 listener. */
Envoy__Config__Core__V3__TransportSocket *tr_downstream_quic(tr_ctx *tr, size_t li,
                                                             const char *path);
/* translate_tls.c: the TLS transport socket towards backend bi (tls_validation, and the
 * client certificate and options of tr->backend_tls[bi]); h2 offers ALPN h2. NULL when
 * the backend does not use TLS, or after recording errors. */
Envoy__Config__Core__V3__TransportSocket *tr_upstream_tls(tr_ctx *tr, size_t bi, bool h2,
                                                          const char *path);

/* translate_route.c: the Route entries of every HTTP and gRPC route. */
void tr_routes(tr_ctx *tr);
/* translate_vhost.c: the RouteConfiguration named name for listener li, which serves
 * the listener's attached HTTP/gRPC routes (attached[0..n), table entries). When
 * proxyless, entries that are not forwarding are errors (gRPC clients reject them). */
void tr_route_config(tr_ctx *tr, size_t li, const char *name, const tr_name *const *attached,
                     size_t n, bool proxyless);
/* translate_action.c: backend ref weights resolved into a cluster specifier; helper
 * shared with the TCP proxy. Fills names[]/weights[] (arena, merged by cluster, sorted
 * by name, zero weights dropped) and returns how many; -1 after errors. */
long tr_weighted_backends(tr_ctx *tr, ir_backend_ref **refs, size_t n, const char *default_ns,
                          const char *path, const char ***names, uint32_t **weights);

/* translate_action.c: what the filters and backends of one rule make of every Route
 * built from it (arena memory, filled by the two calls below). */
typedef struct tr_rule_out {
    tr_pvec req_add, req_remove, resp_add, resp_remove, mirrors;
    Envoy__Config__Route__V3__RouteAction *action;      /* forwarding: copied per route */
    Envoy__Config__Route__V3__RedirectAction *redirect; /* redirect: copied per route */
    const char *prefix_repl;  /* ReplacePrefixMatch value (action or redirect), or NULL */
    const char *prefix_where; /* its IR path, for errors */
    bool has_rewrite;
    Google__Protobuf__Any *session;   /* the rule's per-route stateful session, or NULL */
    Google__Protobuf__Any *ratelimit; /* its backend's per-route rate limit, or NULL */
} tr_rule_out;
/* translate_action.c: applies the filters of a rule (at IR path where) to ro; grpc: a
 * gRPC rule (redirects and rewrites are HTTP-only). Backends the filters name (mirrors)
 * are noted in set (NULL allowed). Returns the URL rewrite filter, if any; problems are
 * recorded. */
const Gateway__Control__V1__UrlRewriteFilter *
tr_rule_filters(tr_ctx *tr, Gateway__Control__V1__Filter **filters, size_t n, const char *ns,
                bool grpc, tr_rule_out *ro, tr_route_set *set, const char *where);
/* translate_action.c: finishes ro->action from the rule's backends (namespace ns by
 * default) and URL rewrite rw (NULL allowed); leaves it NULL for a redirect or when
 * nothing is forwarded to (the caller answers 500). */
void tr_rule_action(tr_ctx *tr, tr_rule_out *ro, ir_backend_ref **refs, size_t n, const char *ns,
                    const Gateway__Control__V1__UrlRewriteFilter *rw, tr_route_set *set,
                    const char *where);
/* translate_action.c: timeouts and retries of an HTTP rule on forwarding action a. */
void tr_http_policies(tr_ctx *tr, Envoy__Config__Route__V3__RouteAction *a,
                      const Gateway__Control__V1__HttpRule *rule, const char *where);

/* translate_session.c: session persistence as Envoy's stateful session filter. */
#define TR_SESSION_FILTER "envoy.filters.http.stateful_session"
/* The typed_per_filter_config value (FilterConfig{StatefulSessionPerRoute}, optional) of
 * a rule's session persistence sp at IR path where; NULL for NULL sp. What Envoy cannot
 * express is recorded as problems. */
Google__Protobuf__Any *tr_session_route_config(tr_ctx *tr,
                                               const Gateway__Control__V1__SessionPersistence *sp,
                                               const char *where);
/* Adds cfg (NULL: nothing) as r's per-route config of the HTTP filter named filter. */
void tr_route_filter_config(tr_ctx *tr, Envoy__Config__Route__V3__Route *r, const char *filter,
                            Google__Protobuf__Any *cfg);
/* The connection manager's StatefulSession (empty: per-route configs decide). */
Google__Protobuf__Any *tr_session_filter_config(tr_ctx *tr);

/* translate_ratelimit.c: a backend's token policy as Envoy's local rate limit. */
#define TR_RATELIMIT_FILTER   "envoy.filters.http.local_ratelimit"
#define TR_TOKEN_POLICY_STATS "token_policy"
/* The typed_per_filter_config value (FilterConfig{LocalRateLimit}, optional) of a rule
 * (IR path where) forwarding to refs (namespace ns by default) when one of them has a
 * token policy; NULL when none has. What Envoy cannot express is recorded. */
Google__Protobuf__Any *tr_token_policy_route_config(tr_ctx *tr, ir_backend_ref **refs, size_t n,
                                                    const char *ns, const char *where);
/* The connection manager's LocalRateLimit (no bucket: the routes' configs limit). */
Google__Protobuf__Any *tr_token_policy_filter_config(tr_ctx *tr);

/* translate_wasm.c: backend b's Wasm plugin (IR path of the backend: path) as the
 * upstream HTTP filters of its cluster (the Wasm filter, then the upstream codec) into
 * *out (arena); returns how many, 0 when b has no plugin or after recording what Envoy
 * cannot run of it. */
size_t tr_wasm_upstream_filters(
    tr_ctx *tr, const ir_backend *b, const char *path,
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter ***out);

/* translate_listener.c: Listener and RouteConfiguration resources; also fills
 * tr->backend_tls from the listeners' backend_tls. */
void tr_listeners(tr_ctx *tr);

/* translate_cluster.c: one Cluster and one ClusterLoadAssignment per backend. */
void tr_clusters(tr_ctx *tr);

#endif
