/*
 * resources.h — a snapshot translated into Envoy xDS v3 resources, built once per
 * snapshot version and shared by every stream that serves it.
 *
 * tr_resources_build turns the IR (gateway.control.v1.ConfigSnapshot) of one proxy
 * group at one version into the serialized Envoy messages of each type: Cluster,
 * ClusterLoadAssignment, Listener, RouteConfiguration and Secret. Each resource
 * carries its name, its serialized bytes (the bare message, not wrapped in Any) and a
 * per-resource version: a content hash of those bytes, which Delta xDS sends and
 * clients echo back in initial_resource_versions. The set is immutable once built and
 * reference-counted; streams hold a reference while they send from it.
 *
 * Names (what clients subscribe to):
 *   - Cluster and ClusterLoadAssignment: the backend's qualified name, "<namespace>/<name>",
 *     or "<name>" when the namespace is empty (also eds service_name). A BackendRef names
 *     (ref.namespace, or the route's namespace when empty; ref.name) under the same rule.
 *   - Listener: the IR listener's name; for a GRPC listener with port 0 (proxyless
 *     clients dialing xds:///HOST), one Listener per hostname, named exactly HOST.
 *   - RouteConfiguration: the IR listener's name (proxyless Listeners of one IR listener
 *     share it); one virtual host per hostname, domains = [that hostname], "*" if none.
 *   - Secret: the IR secret's qualified name; inline CA bundles become "ca:<cluster>"
 *     (backend verification) and "client-ca:<listener>" (client certificates).
 *   Listener-side references (attached_routes, tls.secret_refs, client_certificate_ref)
 *   are a qualified name, or a bare name that exactly one object has.
 *
 * The type order of tr_type is the make-before-break order in which a change is
 * pushed on an ADS stream: CDS, EDS, LDS, RDS (SDS first of all, since clusters and
 * listeners reference secrets).
 */
#ifndef SX_TRANSLATE_RESOURCES_H
#define SX_TRANSLATE_RESOURCES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/err.h"
#include "server/ir/ir.h"

typedef enum tr_type {
    TR_SDS = 0, /* envoy.extensions.transport_sockets.tls.v3.Secret */
    TR_CDS,     /* envoy.config.cluster.v3.Cluster */
    TR_EDS,     /* envoy.config.endpoint.v3.ClusterLoadAssignment */
    TR_LDS,     /* envoy.config.listener.v3.Listener */
    TR_RDS,     /* envoy.config.route.v3.RouteConfiguration */
    TR_TYPE_COUNT,
} tr_type;

/* "type.googleapis.com/envoy.config.cluster.v3.Cluster", ... */
const char *tr_type_url(tr_type t);
/* Short name for logs and metric labels: "sds", "cds", "eds", "lds", "rds". */
const char *tr_type_name(tr_type t);
/* The type of a type URL; returns 0, or SX_ENOTFOUND for a type Sextant does not serve. */
int tr_type_from_url(const char *type_url, tr_type *out);

typedef struct tr_resource {
    char *name;       /* resource name, unique within its type */
    char version[17]; /* 16 hex digits of the sha256 of bytes */
    uint8_t *bytes;   /* the serialized resource message */
    size_t len;
} tr_resource;

typedef struct tr_resources {
    atomic_int refs;
    char *group;                       /* proxy group */
    long long version;                 /* snapshot version (per group, from the database) */
    char version_info[24];             /* version as decimal text: the SotW version_info */
    tr_resource *items[TR_TYPE_COUNT]; /* per type, sorted by name (strcmp) */
    size_t count[TR_TYPE_COUNT];
} tr_resources;

/* Frees n resources and the array holding them; each name and bytes is owned by its
 * resource, as in a built set (and in copies taken of its resources). NULL allowed
 * when n is 0. */
void tr_resource_items_free(tr_resource *items, size_t n);

/* Translates ir into resources for (group, version). On success *out holds one
 * reference. Fails with SX_EVALIDATION when the IR cannot be expressed (err says which
 * object and why); *out is then NULL. */
int tr_resources_build(const ir_snapshot *ir, const char *group, long long version,
                       tr_resources **out, sx_err *err) SX_MUSTCHECK;
tr_resources *tr_resources_ref(tr_resources *r);
/* Drops a reference; frees with the last. NULL allowed. */
void tr_resources_unref(tr_resources *r);
/* The resource of type t named name, or NULL (binary search). */
const tr_resource *tr_resources_find(const tr_resources *r, tr_type t, const char *name);

#endif
