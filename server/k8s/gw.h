/*
 * gw.h — the Gateway API translator: Kubernetes objects in, one Sextant IR spec per
 * Gateway of ours and the status every judged object should carry out.
 *
 * A pure function: no I/O, no clock, no globals. The caller hands in every object of
 * the watched kinds as the API server sent them (borrowed json_t objects, in any order)
 * with the options and the current time; the same input in any order gives the same
 * output, byte for byte once dumped with JSON_SORT_KEYS (ir_canonical_json), so an
 * unchanged translation is detected by comparing.
 *
 * Mapping:
 *   - a GatewayClass is ours when spec.controllerName is options.controller_name; each
 *     Gateway of one of our accepted classes becomes one proxy group, named from
 *     options.group_template, and one entry of gw_output.gateways whose spec is exactly
 *     the "spec" a REST PUT /api/v1/configs/{id} takes;
 *   - Gateway listeners sharing a port become one IR listener named
 *     "<gateway namespace>/<gateway name>:<port>" (HTTP and HTTPS listeners serve
 *     HTTPRoutes and GRPCRoutes, TLS Passthrough and Terminate TLSRoutes, TCP TCPRoutes);
 *     a listener of protocol GW_PROTOCOL_PROXYLESS_GRPC becomes a listener for proxyless
 *     gRPC clients (port 0 in the IR; its port is ignored), named
 *     "<namespace>/<gateway>/<listener name>", serving GRPCRoutes on the listener's
 *     hostname or else on the exact hostnames of the routes attached to it;
 *   - each route becomes one IR route per distinct set of virtual hosts it needs
 *     (usually exactly one, named like the route), backends are named
 *     "<service>:<port>" (":grpc" or ":h2c" appended when that is the protocol spoken
 *     to them) in the Service's namespace, secrets keep the Secret's namespace/name;
 *   - a BackendTLSPolicy gives the backends of the Service ports it targets their
 *     tls_validation (CA bundles from a ConfigMap's or a Secret's ca.crt, or the
 *     system's; hostname; subjectAltNames); one that cannot be applied leaves them
 *     without traffic rather than speaking plain text to them;
 *   - Sextant's own policies (sextant.dev/v1alpha1 BackendLBPolicy, AIService, TokenPolicy,
 *     WasmPlugin) give the backends of the Services, routes (rules) and Gateways
 *     (listeners) they target load_balancing, ai_service, token_policy and wasm_plugin,
 *     the most specific target winning, when the Gateway's group serves data planes that
 *     take them (gw_sextant.c, gw_sextant_attach.c); a backend whose routes get
 *     different policies is split into copies "<name>~<hash>"; a WasmPlugin an
 *     ExtensionRef filter names runs on that rule's backends.
 *
 * What the IR cannot say is never dropped silently: the route or listener carrying it
 * is refused in its status (UnsupportedValue and the field). What Sextant's validation
 * refuses but the Gateway API allows is adapted, and said here: a backendRef whose
 * Service has no ready endpoint gets weight 0 in the IR, and a rule left with nothing to
 * forward to (no valid backend with an endpoint, no redirect) is left out of the IR, so
 * its requests get 404 (or a less specific rule of the listener) rather than the 500 or
 * 503 the Gateway API describes.
 */
#ifndef SX_K8S_GW_H
#define SX_K8S_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "server/base/err.h"

#define GW_DEFAULT_CONTROLLER     "sextant.dev/gateway-controller"
#define GW_DEFAULT_GROUP_TEMPLATE "<namespace>/<gateway>"
/* The implementation-specific listener protocol for proxyless gRPC clients (a domain,
 * a slash and letters or digits only: the Gateway API's ProtocolType pattern). */
#define GW_PROTOCOL_PROXYLESS_GRPC "sextant.dev/ProxylessGRPC"
/* The API group of every Gateway API kind. */
#define GW_GROUP "gateway.networking.k8s.io"

/* The kinds the translator reads. */
typedef enum gw_kind {
    GW_GATEWAY_CLASS = 0,
    GW_GATEWAY,
    GW_HTTP_ROUTE,
    GW_GRPC_ROUTE,
    GW_TCP_ROUTE,
    GW_TLS_ROUTE,
    GW_UDP_ROUTE,
    GW_REFERENCE_GRANT,
    GW_BACKEND_TLS_POLICY,
    GW_SERVICE,
    GW_ENDPOINT_SLICE,
    GW_SECRET,
    GW_NAMESPACE,
    GW_CONFIG_MAP, /* CA bundles of BackendTLSPolicies (key ca.crt); only referenced ones matter */
    /* Sextant's own policies (sextant.dev/v1alpha1; gw_sextant.c). */
    GW_BACKEND_LB_POLICY,
    GW_AI_SERVICE,
    GW_TOKEN_POLICY,
    GW_WASM_PLUGIN,
    GW_KIND_COUNT,
} gw_kind;

/* "GatewayClass", "HTTPRoute", "EndpointSlice", ... (the Kubernetes kind). */
const char *gw_kind_name(gw_kind k);

/* Objects of one kind: borrowed, in any order, each the object as the API server sent
 * it (metadata, spec, status). NULL entries are skipped. */
typedef struct gw_objects {
    const json_t *const *items;
    size_t count;
} gw_objects;

/* Limits from configuration; 0 means no limit. */
typedef struct gw_limits {
    size_t max_input_objects;      /* all objects of all kinds handed in */
    size_t max_snapshot_objects;   /* listeners, routes, backends and secrets of one spec */
    size_t max_snapshot_endpoints; /* endpoints of the backends of one spec */
} gw_limits;

/* Data planes of a proxy group (the same bits as server/validate's VAL_PLANE_*). */
#define GW_PLANE_ENVOY   1u
#define GW_PLANE_GRPC    2u
#define GW_PLANE_CONTROL 4u
#define GW_PLANES_ALL    (GW_PLANE_ENVOY | GW_PLANE_GRPC | GW_PLANE_CONTROL)

/* The data planes one group serves; planes 0: the group never chose (the default). */
typedef struct gw_group_planes {
    const char *group;
    unsigned planes;
} gw_group_planes;

typedef struct gw_options {
    /* GatewayClass spec.controllerName that is ours; NULL: GW_DEFAULT_CONTROLLER. */
    const char *controller_name;
    /* Proxy group name of a Gateway: "<namespace>", "<gateway>" and "<class>" are
     * replaced by the Gateway's namespace, name and class; NULL: the default. */
    const char *group_template;
    gw_limits limits;
    /* Largest RE2 program size of a route's regex (validation.regex_max_program_size);
     * 0: Envoy's default, 100. */
    long long regex_max_program_size;
    /* Addresses written to every Gateway's status.addresses (an IP literal becomes an
     * IPAddress, anything else a Hostname); borrowed. */
    const char *const *gateway_addresses;
    size_t n_gateway_addresses;
    /* The data planes of the groups of Gateways (borrowed; groups not listed serve
     * default_planes; 0: every one). A Sextant policy a Gateway's group cannot take is
     * left out of its spec and says so in its status (gw_sextant.c). */
    const gw_group_planes *group_planes;
    size_t n_group_planes;
    unsigned default_planes;
} gw_options;

typedef struct gw_input {
    gw_objects objects[GW_KIND_COUNT];
    gw_options options;
    /* Now, in Unix seconds: certificates are judged at this time, and a condition whose
     * status or reason changes gets it as lastTransitionTime (an unchanged one keeps the
     * time it had in the object's status), so the output depends on the input only. */
    int64_t now;
} gw_input;

/* One Gateway of ours. */
typedef struct gw_gateway_out {
    char *ns, *name;  /* the Gateway */
    char *group;      /* proxy group (from the template) */
    char *source_ref; /* "Gateway <namespace>/<name>", for the config's source */
    json_t *spec;     /* the IR spec (REST "spec" JSON), owned; NULL when error is set */
    char *error;      /* why no spec was built (lowercase, no period), or NULL */
    size_t objects;   /* listeners, routes, backends and secrets in spec */
    size_t endpoints; /* endpoints in spec */
} gw_gateway_out;

/*
 * The status one object should carry. status is the whole status object, complete:
 * keys the old status had and this one lacks are meant to be removed, so a writer using
 * a JSON merge patch on /status must send null for them (or replace the status). It
 * keeps what other controllers own:
 *   - conditions of types the translator does not set keep their place and content,
 *     after the translator's own (which always come in the same order);
 *   - a route's status.parents holds, first, every entry of another controllerName
 *     exactly as the object had it, then this controller's entries, one per parentRef
 *     of the route that names a Gateway of ours, in the order of spec.parentRefs (with
 *     group, kind and namespace spelled out). Entries of this controller for parents
 *     that are no longer ours or no longer referenced are dropped. A merge patch
 *     replaces the whole array, so the writer sends metadata.resourceVersion with it
 *     (resource_version below): if another controller wrote in between, the API server
 *     answers 409 and the next translation of the newer object merges again.
 * A BackendTLSPolicy's status.ancestors is kept the same way: other controllers' entries
 * first, then one entry of ours per Gateway of ours whose routes name a Service port it
 * targets. Sextant's own policies (sextant.dev) likewise, plus entries naming targets
 * that do not exist (TargetNotFound); see gw_sextant.c. Conditions carry observedGeneration =
 * metadata.generation of the object.
 */
typedef struct gw_status_out {
    char *api_version; /* the object's apiVersion, e.g. "gateway.networking.k8s.io/v1" */
    gw_kind kind;
    char *ns; /* NULL for cluster-scoped GatewayClass */
    char *name;
    int64_t generation;     /* metadata.generation: the observed generation */
    char *resource_version; /* metadata.resourceVersion of the object read, or NULL */
    json_t *status;         /* owned */
    bool changed;           /* status differs from the object's current status */
    json_t *prev_;          /* the object's status when read (internal: gw_output_fail) */
} gw_status_out;

/* Counters for metrics. */
typedef struct gw_counters {
    size_t objects_in[GW_KIND_COUNT];                       /* objects handed in, per kind */
    size_t gateways;                                        /* Gateways of ours */
    size_t gateways_failed;                                 /* of which without a spec */
    size_t listeners, routes, backends, secrets, endpoints; /* resources out, all specs */
} gw_counters;

typedef struct gw_output {
    gw_gateway_out *gateways; /* sorted by namespace/name */
    size_t n_gateways;
    /* GatewayClasses, Gateways, BackendTLSPolicies, Sextant's policies, then routes by kind (HTTP,
     * gRPC, TLS, TCP, UDP); each sorted by namespace/name */
    gw_status_out *statuses;
    size_t n_statuses;
    gw_counters counters;
    int64_t now;     /* the input's now (internal: gw_output_fail) */
    bool over_input; /* over k8s.max_input_objects: statuses hold classes and Gateways only */
} gw_output;

/*
 * Translates in into out (zeroed first; free with gw_output_free, also after a failure).
 * Returns 0, or SX_EINVAL when the options are unusable (an empty group template, or one
 * with an unknown placeholder) with the reason in err (NULL allowed). Every
 * problem of the objects themselves is reported in their status, never here; a Gateway
 * over a limit gets an error instead of a spec and says why in its status.
 */
int gw_translate(const gw_input *in, gw_output *out, sx_err *err) SX_MUSTCHECK;

/*
 * Records that the spec of gateways[i] could not be applied after all (the writer's
 * validation refused it, say): frees its spec, sets error to message, and turns its
 * Gateway status to Programmed=False with reason (a Gateway API reason such as
 * "Invalid") and message, every listener to Programmed=False with reason "Invalid".
 * Returns 0, or SX_EINVAL when i is out of range.
 */
int gw_output_fail(gw_output *out, size_t i, const char *reason, const char *message) SX_MUSTCHECK;

/* Frees everything out owns and zeroes it; NULL allowed. */
void gw_output_free(gw_output *out);

#endif
