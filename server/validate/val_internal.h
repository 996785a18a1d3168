/*
 * val_internal.h — what the stages of the validation pipeline share (validate.c runs
 * them; each val_*.c file is one stage or one helper). Not used outside server/validate.
 *
 * A run works on documents: docs[0] is the config being validated, docs[1..] its peers
 * (the other live configs of its groups), each decoded into the IR. The config's IR may
 * be partial (schema errors): repeated elements that did not decode are NULL and must
 * be skipped, strings may be NULL. Names are resolved exactly the way the Envoy
 * translator (server/translate/translate.c) resolves them in the merged snapshot of a group,
 * so that a config that validates also translates:
 *   - backends, secrets and routes are known by their qualified name "<namespace>/<name>"
 *     ("<name>" when the namespace is empty); listeners by their name;
 *   - a BackendRef names (ref.namespace, or the route's namespace when empty; ref.name);
 *   - listener-side references (attached_routes, tls.secret_refs,
 *     backend_tls.client_certificate_ref) are a qualified name, or a bare name that
 *     exactly one qualified name has.
 */
#ifndef SX_VALIDATE_VAL_INTERNAL_H
#define SX_VALIDATE_VAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"
#include "server/ir/ir.h"
#include "server/validate/validate.h"

typedef Gateway__Control__V1__Listener val_listener;
typedef Gateway__Control__V1__HttpRoute val_http_route;
typedef Gateway__Control__V1__HttpRule val_http_rule;
typedef Gateway__Control__V1__HttpMatch val_http_match;
typedef Gateway__Control__V1__GrpcRoute val_grpc_route;
typedef Gateway__Control__V1__GrpcRule val_grpc_rule;
typedef Gateway__Control__V1__GrpcMatch val_grpc_match;
typedef Gateway__Control__V1__HeaderMatch val_header_match;
typedef Gateway__Control__V1__QueryMatch val_query_match;
typedef Gateway__Control__V1__StreamRoute val_stream_route;
typedef Gateway__Control__V1__StreamRule val_stream_rule;
typedef Gateway__Control__V1__BackendCluster val_backend;
typedef Gateway__Control__V1__BackendEndpoint val_endpoint;
typedef Gateway__Control__V1__BackendRef val_backend_ref;
typedef Gateway__Control__V1__Filter val_filter;
typedef Gateway__Control__V1__SecretMaterial val_secret;

#define VAL_P_HTTP  GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTP
#define VAL_P_HTTPS GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_HTTPS
#define VAL_P_GRPC  GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_GRPC

/* Longest path a stage writes; paths hold list indexes and field names only. */
#define VAL_PATH_MAX 256

/* A string of the IR, "" for NULL (partial decodes leave NULL strings). */
#define VAL_S(s) ((s) ? (s) : "")

/* The kinds of route, in the translator's order. */
typedef enum val_route_kind {
    VAL_ROUTE_HTTP = 0,
    VAL_ROUTE_GRPC,
    VAL_ROUTE_STREAM,
} val_route_kind;

/* One named object of one document, in a name table. */
typedef struct val_name {
    char *qname;      /* owned: qualified name (listeners: the name) */
    const char *name; /* bare name */
    size_t doc;       /* index in ctx->docs */
    int kind;         /* route tables: val_route_kind; else 0 */
    size_t idx;       /* index in the document's list */
} val_name;

/* Names sorted by (qname, doc, kind, idx). */
typedef struct val_table {
    val_name *v;
    size_t n;
} val_table;

typedef struct val_doc {
    ir_snapshot *ir;      /* never NULL; partial when !clean */
    bool clean;           /* decoded without any error */
    const val_peer *peer; /* NULL for the config itself */
    char *ref;            /* peers: "namespace/name (id)"; the config: NULL */
} val_doc;

typedef struct val_ctx {
    val_doc *docs; /* docs[0] is the config */
    size_t ndocs;
    val_limits limits;
    long long now;
    val_result *out;
    val_stage stage; /* the stage problems are being added to */
    val_table backends, secrets, routes, listeners;
} val_ctx;

/* ---------------------------------------------------------------- problems (validate.c) */

/* Adds a problem of the current stage. */
void val_add(val_ctx *c, const char *path, const char *fmt, ...) SX_PRINTF(3, 4);
/* Adds a conflict-stage problem naming the other config (with: "namespace/name (id)"). */
void val_add_conflict(val_ctx *c, const char *path, const char *with, const char *fmt, ...)
    SX_PRINTF(4, 5);
/* Adds a problem of the current stage about a feature the data plane plane ("envoy")
 * cannot take. */
void val_add_plane(val_ctx *c, const char *path, const char *plane, const char *fmt, ...)
    SX_PRINTF(4, 5);
/* The data planes the config's groups serve together (val_planes.c). */
unsigned val_ctx_planes(const val_ctx *c);
/* buf (VAL_PATH_MAX bytes) set to the path fmt makes, cut to fit as snprintf does;
 * returns buf, so that a path is made where it is passed. */
const char *val_path(char buf[VAL_PATH_MAX], const char *fmt, ...) SX_PRINTF(2, 3);
/* Whether s is NULL or "". */
static inline bool val_empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}
/* Whether a problem with exactly this path and message was already added. */
bool val_has(const val_ctx *c, const char *path, const char *message);

/* "this config" for docs[0], else "config <ns>/<name> (<id>)"; into buf. */
const char *val_doc_label(const val_ctx *c, size_t doc, char *buf, size_t n);

/* ---------------------------------------------------------------- names (val_names.c) */

/* Builds the four tables over every document; val_names_free releases them. */
void val_names_build(val_ctx *c);
void val_names_free(val_ctx *c);
/* "<ns>/<name>", or name when ns is empty, into buf. */
const char *val_qname(const char *ns, const char *name, char *buf, size_t n);
/* The first entry of t whose qname is qname and how many share it (*count), or NULL. */
const val_name *val_find(const val_table *t, const char *qname, size_t *count);
/* The backend a BackendRef names (namespace defaulting to default_ns), or NULL with the
 * reason in why (a lowercase message). */
const val_name *val_resolve_backend(const val_ctx *c, const val_backend_ref *ref,
                                    const char *default_ns, char *why, size_t n);
/* Resolves a listener-side reference (qualified, or a bare name one qualified name has)
 * in t; what is "route" or "secret". Returns the first entry and *count entries sharing
 * its qualified name, or NULL with the reason in why. */
const val_name *val_resolve(const val_table *t, const char *ref, const char *what, size_t *count,
                            char *why, size_t n);
/* Whether l is for proxyless gRPC clients (protocol GRPC, port 0): the translator then
 * emits one Listener per hostname, named by it, instead of a socket listener. */
bool val_listener_proxyless(const val_listener *l);

/* ---------------------------------------------------------------- addresses (val_addr.c) */

/* Whether two listener addresses (IP literals, "" for any) can take the same socket: the
 * same address, or either is a wildcard ("", 0.0.0.0, ::). */
bool val_addrs_overlap(const char *a, const char *b);
/* "0.0.0.0:80", "[::1]:80" for a listener address ("" is 0.0.0.0). */
const char *val_addr_port(const char *addr, unsigned port, char *buf, size_t n);
/* When listeners a and b (either may be NULL) take the same socket: both bind the same
 * port, not 0 (proxyless listeners have no socket), over the same transport (HTTP/3 and
 * UDP listeners bind UDP, the others TCP), and an address of a overlaps one of
 * b's (see val_addrs_overlap). Returns the first such address of a, else NULL. */
const char *val_sockets_clash(const val_listener *a, const val_listener *b);
/* The k-th address a listener binds (0: address, then addresses[k-1]) with its field
 * name ("address", "addresses[0]") in field; NULL past the last. */
const char *val_listener_addr(const val_listener *l, size_t k, char *field, size_t n);

/* ---------------------------------------------------------------- routes (val_routes.c) */

/* A route of any kind, as the stages that treat the kinds alike see it. */
typedef struct val_route {
    val_route_kind kind;
    size_t idx;       /* index in its list */
    const char *path; /* "spec.http_routes[0]" */
    const char *name, *namespace_;
    char **hostnames; /* HTTP and gRPC routes; stream routes have none */
    size_t n_hostnames;
    size_t n_rules;
    const void *msg; /* the val_http_route, val_grpc_route or val_stream_route */
} val_route;

/* A rule of a route, likewise. */
typedef struct val_rule {
    const val_route *route;
    size_t idx;       /* index in the route's rules */
    const char *path; /* "spec.http_routes[0].rules[1]" */
    val_backend_ref **backend_refs;
    size_t n_backend_refs;
    val_filter **filters; /* HTTP and gRPC rules; stream rules have none */
    size_t n_filters;
    size_t n_matches;                                                    /* stream rules: 0 */
    const Gateway__Control__V1__SessionPersistence *session_persistence; /* or NULL */
    const void *msg; /* the val_http_rule, val_grpc_rule or val_stream_rule */
} val_rule;

/* The kinds a walk visits: VAL_KIND(VAL_ROUTE_HTTP) | ..., or VAL_KINDS_ALL. */
#define VAL_KIND(k) (1u << (k))
#define VAL_KINDS_ALL                                                                              \
    (VAL_KIND(VAL_ROUTE_HTTP) | VAL_KIND(VAL_ROUTE_GRPC) | VAL_KIND(VAL_ROUTE_STREAM))

/* Visits the routes of ir of the given kinds, in the translator's order (HTTP, gRPC,
 * stream routes, each list in order), skipping those that did not decode (NULL): calls
 * on_route for the route, then on_rule for each of its rules that decoded. Either
 * function may be NULL; both get arg. The views live only for the call. */
void val_each_route(const ir_snapshot *ir, unsigned kinds,
                    void (*on_route)(void *arg, const val_route *r),
                    void (*on_rule)(void *arg, const val_rule *r), void *arg);
/* Match j (below r->n_matches) of an HTTP rule (a val_http_match) or a gRPC rule (a
 * val_grpc_match); NULL when it did not decode. */
const void *val_rule_match(const val_rule *r, size_t j);

/* ---------------------------------------------------------------- stages */

void val_schema(val_ctx *c);
void val_semantic(val_ctx *c);
void val_dependency(val_ctx *c);
void val_security(val_ctx *c);
void val_quota(val_ctx *c);
void val_conflict(val_ctx *c);
void val_traps(val_ctx *c);
/* What the data planes of the config's groups can take (val_planes.c). */
void val_planes_check(val_ctx *c);
/* The translator over the merged IR of the config and its peers (val_translate.c). */
void val_translate_check(val_ctx *c);

#endif
