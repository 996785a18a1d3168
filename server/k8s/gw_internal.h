/*
 * gw_internal.h — what the files of the Gateway API translator share (gw.c runs the
 * translation; gw_util.c, gw_listeners.c, gw_routes.c, gw_rules.c, gw_backends.c,
 * gw_spec.c and gw_status.c are its parts). Not used outside server/k8s.
 *
 * One translation lives in one gw_ctx: the input indexed by namespace/name, an arena
 * that owns every internal string and struct (freed at once at the end), the Gateways
 * of ours with their listeners, every route that names one of them, and the table of
 * backends (one per Service, port and protocol) the routes resolved. json_t values the
 * context builds are owned by the structure that holds them and released by gw.c.
 *
 * Order of work (gw.c): index the input; judge the GatewayClasses; take our Gateways
 * and judge their listeners (gw_listeners.c); collect the routes naming them and
 * analyse each once (gw_rules.c, resolving backends with gw_backends.c); attach routes
 * to listeners per Gateway (gw_routes.c); build each Gateway's spec (gw_spec.c); write
 * every status (gw_status.c).
 */
#ifndef SX_K8S_GW_INTERNAL_H
#define SX_K8S_GW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "server/base/arena.h"
#include "server/k8s/gw.h"

/* ---------------------------------------------------------------- input */

/* One input object with its namespace ("" when cluster-scoped) and name. */
typedef struct gw_obj {
    const json_t *o;
    const char *ns, *name;
} gw_obj;

/* The objects of one kind, sorted by (namespace, name), duplicates dropped. */
typedef struct gw_index {
    gw_obj *v;
    size_t n;
} gw_index;

/* ---------------------------------------------------------------- conditions */

/* One condition as computed; rendered with observedGeneration and lastTransitionTime
 * by gw_status.c. Strings are static or arena-owned. */
typedef struct gw_cond {
    const char *type;
    bool ok;            /* status "True" */
    const char *reason; /* NULL: the condition is not set */
    const char *message;
} gw_cond;

/* ---------------------------------------------------------------- routes */

typedef enum gw_rk {
    RK_HTTP = 0,
    RK_GRPC,
    RK_TLS,
    RK_TCP,
    RK_UDP,
    RK_COUNT,
} gw_rk;

#define RK_BIT(k) (1u << (k))

/* The gw_kind of a route kind, and its Kubernetes kind name. */
gw_kind gw_rk_kind(gw_rk k);
const char *gw_rk_name(gw_rk k);

/* One backend: a Service port spoken to with one protocol, the same for every spec. */
/* The kinds of Sextant's own policies (gw_sextant.c). */
typedef enum gw_sx_kind {
    GW_SX_LB = 0, /* BackendLBPolicy */
    GW_SX_AI,     /* AIService */
    GW_SX_TOKEN,  /* TokenPolicy */
    GW_SX_WASM,   /* WasmPlugin */
    GW_SX_COUNT,
} gw_sx_kind;

typedef struct gw_backend {
    const char *svc_ns, *svc;
    long port;
    const char *protocol; /* "" (HTTP/1.1 or TCP), "GRPC" or "H2C" */
    const char *name;     /* IR name: "<svc>:<port>[:grpc|:h2c]" */
    json_t *ir;           /* IR BackendCluster, owned by the context */
    size_t n_endpoints;
    const char *policy_key;           /* the BackendTLSPolicy target it falls under, or NULL */
    bool blocked;                     /* a policy targets it but cannot be applied: no traffic */
    const char *sx_keys[GW_SX_COUNT]; /* the Service target of a Sextant policy of each kind
                                         it falls under (gw_sextant_attach.c), or NULL */
} gw_backend;

/* One rule of a route after analysis. */
typedef struct gw_rule {
    json_t *ir;       /* IR rule (HttpRule / GrpcRule), or for a stream route the
                         backend_refs array of its rule; owned; NULL when dropped */
    size_t *backends; /* backend table indexes the rule names (refs, mirrors), kept or not */
    size_t n_backends;
    size_t wasm; /* the WasmPlugin an ExtensionRef filter of the rule names: its index in
                    ctx->sxps + 1, or 0 */
} gw_rule;

/* One parentRef of a route that names a Gateway of ours. */
typedef struct gw_parent {
    size_t ref;          /* index in spec.parentRefs */
    size_t gw;           /* index in ctx->gws */
    const char *section; /* sectionName, or NULL */
    long port;           /* port, or 0 */
    json_t *ref_json;    /* the parentRef spelled out for status; owned */
    gw_cond accepted;
} gw_parent;

typedef struct gw_route {
    gw_rk kind;
    const gw_obj *obj;
    const char *created; /* metadata.creationTimestamp, "" when absent */
    char **hostnames;    /* spec.hostnames, lower case */
    size_t n_hostnames;
    gw_parent *parents;
    size_t n_parents;
    /* Why it lost a listener of the Gateway being attached to an older route of the
     * other kind (HTTPRoute against GRPCRoute), or NULL (gw_routes.c). */
    const char *conflict;
    /* Analysis (gw_rules.c), done when n_parents > 0. */
    const char *refused_reason; /* Accepted=False for every parent: UnsupportedValue,
                                   IncompatibleFilters; NULL when accepted */
    const char *refused_message;
    gw_cond resolved; /* ResolvedRefs */
    gw_rule *rules;
    size_t n_rules;
    size_t n_kept; /* rules with an IR rule */
} gw_route;

/* ---------------------------------------------------------------- Gateways */

typedef enum gw_proto {
    GP_UNKNOWN = 0,
    GP_HTTP,
    GP_HTTPS,
    GP_TLS_PASSTHROUGH,
    GP_TLS_TERMINATE,
    GP_TCP,
    GP_UDP,
    GP_PROXYLESS,
} gw_proto;

typedef enum gw_from {
    FROM_SAME = 0,
    FROM_ALL,
    FROM_SELECTOR,
    FROM_NONE,
} gw_from;

/* One listener of a Gateway. */
typedef struct gw_lis {
    const json_t *spec;
    const char *name;
    long port;
    gw_proto proto;
    const char *hostname; /* lower case; NULL: any */
    gw_from from;
    const json_t *selector;
    unsigned kinds;          /* route kinds allowed (RK_BIT), supported ones only */
    json_t *supported_kinds; /* status supportedKinds; owned */
    const char *tls_min, *tls_max;
    const char **secrets; /* qualified names of the IR secrets it terminates with */
    size_t n_secrets;
    gw_cond accepted, programmed, resolved, conflicted;
    bool ok;  /* served: goes into the spec */
    long irl; /* index of its IR listener in the Gateway, or -1 */
    /* Routes attached (Accepted for this listener), without repeats. */
    gw_route **routes;
    size_t n_routes, cap_routes;
    size_t attached; /* status attachedRoutes */
} gw_lis;

/* One IR listener: the served Gateway listeners of one port (or one proxyless one). */
typedef struct gw_irl {
    const char *name;
    long port; /* 0 for proxyless */
    gw_proto proto;
    size_t *lis; /* gateway listener indexes, in spec order */
    size_t n_lis;
} gw_irl;

/* One secret a Gateway's listeners terminate TLS with. */
typedef struct gw_secret {
    const char *ns, *name;
    json_t *ir; /* IR SecretMaterial; owned */
} gw_secret;

/* One address of a Gateway's status.addresses. */
typedef struct gw_addr {
    const char *type; /* "IPAddress" or "Hostname" */
    const char *value;
} gw_addr;

typedef struct gw_gw {
    const gw_obj *obj;
    const char *class_name;
    const char *group;
    const char *refused; /* Accepted=False reason when the Gateway is refused whole */
    const char *refused_message;
    /* Where its proxies are reachable (gw_addresses.c). */
    gw_addr *addrs;
    size_t n_addrs;
    const char *address_source;  /* the data-plane Service it came from, or NULL */
    const char *address_problem; /* Programmed=False message, or NULL */
    const char *address_reason;  /* AddressNotUsable or AddressNotAssigned */
    gw_lis *lis;
    size_t n_lis;
    gw_irl *irl;
    size_t n_irl;
    gw_secret *secrets;
    size_t n_secrets;
    /* The result (gw_spec.c). */
    json_t *spec;      /* owned until handed to the output */
    const char *error; /* why there is no spec */
    const char *error_reason;
    size_t objects, endpoints;
} gw_gw;

/* One BackendTLSPolicy. */
typedef struct gw_policy {
    const gw_obj *obj;
    const char *created;
    gw_cond accepted, resolved;
    json_t *tls; /* the IR BackendTlsValidation it gives; owned; NULL when unusable */
    size_t *gws; /* ancestors: Gateways whose spec uses a backend it targets */
    size_t n_gws, cap_gws;
} gw_policy;

/* One Gateway a Sextant policy reaches: why its group cannot take it (or NULL), whether
 * the policy applies to a backend there, else the more specific or older policy that
 * applies instead (an index in ctx->sxps, -1 when none). */
typedef struct gw_sx_anc {
    size_t gi;
    const char *refused;
    bool applied;
    long lost_to;
} gw_sx_anc;

/* A target of a Sextant policy that is not there (TargetNotFound), as its targetRef
 * names it, with the message saying what is missing. */
typedef struct gw_sx_missing {
    const char *group, *kind, *name, *message;
} gw_sx_missing;

/* One of Sextant's policies (sextant.dev, gw_sextant.c). */
typedef struct gw_sxp {
    gw_sx_kind sk;
    const gw_obj *obj;
    const char *created;
    gw_cond accepted;
    json_t *ir;             /* the IR it gives a backend; owned; NULL when invalid */
    unsigned takes;         /* data planes that take ir (GW_PLANE_* bits) */
    gw_sx_missing *missing; /* targets that do not exist */
    size_t n_missing;
    gw_sx_anc *gws; /* ancestors: Gateways whose spec uses a backend it targets */
    size_t n_gws, cap_gws;
} gw_sxp;

/* One GatewayClass whose controllerName is ours. */
typedef struct gw_class {
    const gw_obj *obj;
    gw_cond accepted;
} gw_class;

/* ---------------------------------------------------------------- the context */

typedef struct gw_ctx {
    const gw_input *in;
    sx_arena *a;
    const char *controller;
    int64_t now;
    char now_text[32]; /* RFC 3339 */
    gw_index idx[GW_KIND_COUNT];
    gw_obj *slices; /* EndpointSlices sorted by (namespace, service name, name) */
    const char **slice_svc;
    size_t n_slices;
    gw_class *classes;
    size_t n_classes;
    gw_gw *gws; /* sorted by namespace/name */
    size_t n_gws;
    gw_route *routes[RK_COUNT]; /* routes naming a Gateway of ours, or with our
                                   entries in their status; sorted by namespace/name */
    size_t n_routes[RK_COUNT];
    gw_backend *backends;
    size_t n_backends, cap_backends;
    json_t *backend_keys; /* "<ns>/<svc>:<port>:<protocol>" -> backend index */
    gw_policy *policies;  /* BackendTLSPolicies, by (creationTimestamp, namespace, name) */
    size_t n_policies;
    json_t *policy_targets; /* "<ns>/<svc>/<port name or *>" -> [policy index, ...], the
                               first one applying, the others Conflicted */
    gw_sxp *sxps;           /* Sextant's policies, by (kind, creationTimestamp, namespace, name) */
    size_t n_sxps;
    json_t *sx_targets; /* target key (gw_sextant_attach.c) -> [policy index, ...], oldest
                           first */
    json_t *sx_uses;    /* "<gateway index>|<backend index>" -> [policy of each kind, ...,
                           whether the uses there disagree] (gw_sextant_attach.c) */
    bool over_input;    /* max_input_objects exceeded: nothing is translated */
    const char *over_input_message;
} gw_ctx;

/* ---------------------------------------------------------------- gw_addresses.c */

/* The Gateway's addresses, from k8s.gateway_addresses or its data-plane Services, and
 * whether those its spec asks for are among them (address_problem). */
void gw_addresses_build(gw_ctx *c, gw_gw *g);
/* status.addresses of the Gateway; a new reference (an empty array when none). */
json_t *gw_addresses_json(const gw_gw *g);

/* ---------------------------------------------------------------- gw_util.c */

/* Member key of o when o is an object, else NULL. */
const json_t *gw_get(const json_t *o, const char *key);
/* gw_get down a dotted path ("spec.tls.mode"). */
const json_t *gw_path(const json_t *o, const char *path);
/* The string at key, or NULL when absent or not a string. */
const char *gw_str(const json_t *o, const char *key);
/* The string at key, or dflt when absent (an empty string is kept). */
const char *gw_str_or(const json_t *o, const char *key, const char *dflt);
/* The integer at key into *v; false when absent or not an integer. */
bool gw_int(const json_t *o, const char *key, long long *v);
/* The array at key, or NULL; *n its size (0 when NULL). */
const json_t *gw_array(const json_t *o, const char *key, size_t *n);
/* metadata.generation (0 when absent). */
int64_t gw_generation(const json_t *o);

/* Arena helpers. */
char *gw_strdup(gw_ctx *c, const char *s);
char *gw_printf(gw_ctx *c, const char *fmt, ...) SX_PRINTF(2, 3);
char *gw_lower(gw_ctx *c, const char *s);
/* Grows *v (elements of size es) to hold at least need, doubling *cap. */
void *gw_grow(gw_ctx *c, void *v, size_t es, size_t *cap, size_t need);

/* An index's entry with that namespace and name, or NULL. */
const gw_obj *gw_find(const gw_index *x, const char *ns, const char *name);

/* Hostnames (Gateway API): whether wildcard w ("*.suffix") covers h (an exact name or a
 * narrower wildcard); the intersection of a listener and a route hostname (the more
 * specific one, or NULL when they are disjoint). Case-insensitive. */
bool gw_host_covers(const char *w, const char *h);
const char *gw_host_intersect(const char *l, const char *r);
/* Whether h is a valid exact hostname (no wildcard, not an IP). */
bool gw_host_exact(const char *h);

/* Whether a metav1.LabelSelector selects labels (an object; NULL: no labels). A
 * selector with an unknown operator selects nothing. */
bool gw_selector_match(const json_t *selector, const json_t *labels);
/* The labels of namespace ns, with kubernetes.io/metadata.name set as the API server
 * sets it; a new reference. */
json_t *gw_namespace_labels(gw_ctx *c, const char *ns);

/* Whether a ReferenceGrant in to_ns lets (from_group, from_kind) objects of from_ns
 * refer to the to_kind object to_name of to_group there. */
bool gw_grant_allows(gw_ctx *c, const char *from_group, const char *from_kind, const char *from_ns,
                     const char *to_group, const char *to_kind, const char *to_ns,
                     const char *to_name);

/* A Gateway API duration ("1h30m", "250ms", GEP-2257) in milliseconds; false when it
 * does not parse. */
bool gw_duration_ms(const char *s, int64_t *ms);
/* A duration in the IR's JSON form ("1.5s"); a new reference. */
json_t *gw_duration_json(int64_t ms);

/* Decodes standard base64 (whitespace ignored) into a new arena string; NULL when it
 * is not base64. */
char *gw_base64(gw_ctx *c, const char *s, size_t *len);

/* Sorts a JSON array of objects by the string member key (then by the whole value's
 * canonical text, so the order is total). */
void gw_sort_by(json_t *array, const char *key);

/* ---------------------------------------------------------------- gw_listeners.c */

/* Judges the listeners of g (conditions, TLS certificates, allowed routes, conflicts)
 * and groups the served ones into IR listeners. */
void gw_listeners_build(gw_ctx *c, gw_gw *g);

/* ---------------------------------------------------------------- gw_backends.c */

/* Resolves one backendRef (a BackendObjectReference) of a route of kind rk in
 * namespace ns, to be spoken to with protocol (NULL: from the Service port's
 * appProtocol). Returns the backend table index, or -1 with *reason (ResolvedRefs
 * reason) and *message set. */
long gw_backend_ref(gw_ctx *c, gw_rk rk, const char *ns, const json_t *ref, const char *protocol,
                    const char **reason, const char **message);
/* Releases the backend table. */
void gw_backends_free(gw_ctx *c);

/* ---------------------------------------------------------------- gw_policies.c */

/* Judges every BackendTLSPolicy and records which Service ports each one targets. */
void gw_policies_build(gw_ctx *c);
/* Applies the policy targeting port port_name of Service ns/svc (if any) to backend b. */
void gw_policies_apply(gw_ctx *c, gw_backend *b, const char *port_name);
/* Records that Gateway gi's spec uses backend b (its policies' ancestors). */
void gw_policies_used(gw_ctx *c, const gw_backend *b, size_t gi);
/* Appends the status of every policy with a Gateway of ours as ancestor (or with an
 * entry of ours to remove). */
void gw_policies_status(gw_ctx *c, gw_output *out, size_t *cap);
void gw_policies_free(gw_ctx *c);

/* ---------------------------------------------------------------- gw_sextant.c */

/* Judges every Sextant policy and records what each one targets (gw_sx_targets). */
void gw_sx_build(gw_ctx *c);
/* Appends the status of every Sextant policy. */
void gw_sx_status(gw_ctx *c, gw_output *out, size_t *cap);
void gw_sx_free(gw_ctx *c);
/* The Kubernetes kind of Sextant policy kind k, and the IR BackendCluster field it sets. */
const char *gw_sx_kind_name(int k);
const char *gw_sx_field(int k);
/* The refusal of policy p in Gateway gi's group when the group's data planes cannot all
 * take it (an arena string), or NULL. */
const char *gw_sx_refusal(gw_ctx *c, const gw_sxp *p, size_t gi);

/* ---------------------------------------------------------------- gw_sextant_attach.c */

/* Resolves the targetRefs of policy pi (valid or not): records the targets that exist
 * (Service ports, Gateways and their listeners, routes and their rules), the missing
 * ones, and the targets it may not have (Invalid). */
void gw_sx_targets(gw_ctx *c, size_t pi);
/* Records which Service-targeting policies fall on backend b (port port_name). */
void gw_sx_apply(gw_ctx *c, gw_backend *b, const char *port_name);
/* The policy of each kind (index in ctx->sxps, -1 for none) that applies where rule k of
 * route r uses backend b in Gateway gi (r NULL: what applies without route-specific
 * targets); the most specific target wins, then the oldest policy. */
void gw_sx_pick(gw_ctx *c, const gw_backend *b, const gw_route *r, size_t k, size_t gi,
                long w[GW_SX_COUNT]);
/* Records that rule k of route r in Gateway gi uses backend b: the ancestors of every
 * policy that targets it there, and which one applies. */
void gw_sx_used(gw_ctx *c, const gw_backend *b, const gw_route *r, size_t k, size_t gi);
/* The IR name of backend b where w applies in Gateway gi: b->name when every use of b
 * there gets the same policies, or w is what b gets without route-specific targets;
 * else "<b->name>~<8 hex digits of w>" (a backend of its own in that spec). */
const char *gw_sx_name(gw_ctx *c, const gw_backend *b, const long w[GW_SX_COUNT], size_t gi);
/* Adds to ir (a copy of a backend's IR in Gateway gi's spec) what the policies w give it
 * there. */
void gw_sx_decorate(gw_ctx *c, const long w[GW_SX_COUNT], size_t gi, json_t *ir);
/* The WasmPlugin of namespace ns named name (an index in ctx->sxps), or -1. */
long gw_sx_find_wasm(const gw_ctx *c, const char *ns, const char *name);
/* Adds to p's ancestors the Gateways it targets and the parent Gateways of the routes it
 * targets that it did not reach through a backend. */
void gw_sx_target_ancestors(gw_ctx *c, gw_sxp *p);

/* ---------------------------------------------------------------- gw_rules.c */

/* Analyses route r: its rules into IR rules, its backend references, what the IR
 * cannot express. */
void gw_route_analyse(gw_ctx *c, gw_route *r);

/* ---------------------------------------------------------------- gw_routes.c */

/* Finds every route naming a Gateway of ours (and every route whose status has our
 * entries) and analyses it. */
void gw_routes_collect(gw_ctx *c);
/* Attaches the routes that name g to its listeners, setting each parent's Accepted. */
void gw_routes_attach(gw_ctx *c, gw_gw *g, size_t gi);
/* Releases what the routes own. */
void gw_routes_free(gw_ctx *c);

/* ---------------------------------------------------------------- gw_spec.c */

/* Builds g's spec (or its error) from its listeners and attached routes, within the
 * limits. gi is g's index (it marks the backends g takes). */
void gw_spec_build(gw_ctx *c, gw_gw *g, size_t gi);

/* ---------------------------------------------------------------- gw_status.c */

/* The conditions array: ours rendered (reason NULL ones skipped), then every condition
 * of prev (an array or NULL) whose type is not among ours. lastTransitionTime is kept
 * from prev's condition of the same type when status and reason are the same, else
 * now_text. A new reference. */
json_t *gw_conditions(const gw_cond *ours, size_t n, const json_t *prev, int64_t generation,
                      const char *now_text);
/* Whether an entry of a status.parents or status.ancestors list is ours: its
 * controllerName is our controller's. */
bool gw_status_is_ours(const gw_ctx *c, const json_t *entry);
/* A new array of copies of the entries of old (a list of n) that another controller
 * wrote; sets *ours (when not NULL) when one of them is ours. */
json_t *gw_status_others(const gw_ctx *c, const json_t *old, size_t n, bool *ours);
/* A copy of status prev (an empty object when prev is not an object) with member key
 * set to value (stolen). A new reference. */
json_t *gw_status_set(const json_t *prev, const char *key, json_t *value);
/* Appends the status of object o of kind (its current status read from it) to out;
 * *cap is out->statuses' capacity. */
void gw_status_push(gw_output *out, size_t *cap, gw_kind kind, const gw_obj *o, json_t *status);
/* Appends the status of every judged object to out. */
void gw_status_all(gw_ctx *c, gw_output *out);
/* The Gateway status of g, given the previous status (NULL allowed). */
json_t *gw_status_gateway(gw_ctx *c, const gw_gw *g, const json_t *prev);

#endif
