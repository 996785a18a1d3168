/*
 * kinds.h — the Kubernetes kinds Sextant reads, and the API paths that name them.
 *
 * A kind is what the client lists and watches and what a watchable map holds: its name
 * (the map's name), API group and version, the plural resource name of its URLs, and
 * whether its objects live in namespaces. The table of the kinds of the Gateway API
 * release Sextant targets (v1.3.0: standard channel, plus the experimental TCP, TLS and UDP
 * routes and BackendTLSPolicy v1alpha3) and of the core kinds the translator reads is here, so that
 * one place says which versions are served.
 */
#ifndef SX_K8S_KINDS_H
#define SX_K8S_KINDS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct k8s_kind {
    const char *kind;     /* "HTTPRoute": the object's kind and its map's name */
    const char *group;    /* "gateway.networking.k8s.io"; "" for the core group */
    const char *version;  /* "v1" */
    const char *plural;   /* "httproutes" */
    bool namespaced;      /* false for cluster-scoped kinds (GatewayClass, Namespace) */
    const char *selector; /* a fieldSelector for list and watch ("type=kubernetes.io/tls"),
                             or NULL */
} k8s_kind;

/* The kinds Sextant watches, in a fixed order; *n receives their number. Static data. */
const k8s_kind *k8s_kind_table(size_t *n);
/* The entry of kinds named kind (its "kind" field), or NULL. */
const k8s_kind *k8s_kind_find(const char *kind);
/* "group/version", or "version" for the core group: the apiVersion of its objects, into
 * out (at least 128 bytes). Returns out. */
const char *k8s_kind_api_version(const k8s_kind *k, char *out, size_t outlen);

/*
 * The path of a collection or of one object, as a new string (free it):
 * ns NULL (or a cluster-scoped kind) and name NULL: every object, "/apis/g/v/plural";
 * ns set: "/apis/g/v/namespaces/ns/plural"; name set: ".../plural/name"; subresource set
 * (with a name): ".../name/status". Core kinds start with "/api/v1". Names are
 * percent-encoded.
 */
char *k8s_kind_path(const k8s_kind *k, const char *ns, const char *name, const char *subresource);

#endif
