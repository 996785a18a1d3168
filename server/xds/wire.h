/*
 * wire.h — a snapshot's bytes as every stream sends them: encoded once per version,
 * shared by reference, assembled per response without copying payloads.
 *
 * For each snapshot version the engine keeps:
 *   - xds_wire_res: the Envoy resources (tr_resources) with every resource already
 *     encoded as the repeated field entry it becomes in a response: a
 *     google.protobuf.Any entry of DiscoveryResponse.resources (SotW; Resource
 *     wrappers are not used in SotW), or a Resource{name, version, Any} entry of
 *     DeltaDiscoveryResponse.resources (built on first use, as Delta streams are
 *     rarer). The entries of one type lie back to back in one refcounted grpc_slice,
 *     in name order, so a response is a small header slice plus sub-slices of it —
 *     a full LDS/CDS response is a single sub-slice;
 *   - xds_wire_snap: the group's snapshot entry (the encoded ConfigSnapshot for
 *     gateway.control.v1, wrapped in a slice without copying, with the position of its
 *     top-level fields so that a subscription to some parts takes sub-slices) and the
 *     xds_wire_res in force for ADS (the last one that could be built).
 *
 * A response is a grpc_byte_buffer that references those slices (protobuf allows a
 * message's fields in any order, so the header fields go first); N streams sending
 * the same snapshot share one copy of the payload. The caller owns each buffer and
 * destroys it when its send completes.
 *
 * Thread safety: wire objects are immutable once created (the lazily built Delta
 * entries are guarded) and may be used from any thread.
 */
#ifndef SX_XDS_WIRE_H
#define SX_XDS_WIRE_H

#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "server/snapshot/store.h"
#include "server/translate/resources.h"

typedef struct xds_wire_entries {
    grpc_slice all; /* every entry of the type, concatenated */
    size_t *off;    /* count + 1 offsets into all: entry i is [off[i], off[i + 1]) */
} xds_wire_entries;

typedef struct xds_wire_res {
    atomic_int refs;
    tr_resources *res; /* one reference */
    xds_wire_entries sotw[TR_TYPE_COUNT];
    pthread_mutex_t delta_mu;
    atomic_bool delta_built;
    xds_wire_entries delta[TR_TYPE_COUNT];
} xds_wire_res;

/* Encodes res (a reference is taken). Never NULL. */
xds_wire_res *xds_wire_res_create(tr_resources *res);
xds_wire_res *xds_wire_res_ref(xds_wire_res *w);
void xds_wire_res_unref(xds_wire_res *w); /* NULL allowed */

/* A top-level field of the encoded ConfigSnapshot. */
typedef struct xds_wire_span {
    uint32_t field; /* field number; 0 for bytes that did not parse (always sent) */
    size_t off;
    size_t len;
} xds_wire_span;

typedef struct xds_wire_snap {
    atomic_int refs;
    snap_entry *entry;    /* one reference */
    xds_wire_res *wire;   /* ADS resources in force for the group, or NULL (one reference) */
    grpc_slice ir;        /* entry->encoded, holding its own entry reference */
    xds_wire_span *spans; /* top-level fields in order */
    size_t nspans;
    int64_t published_ms; /* monotonic time the engine received the version */
} xds_wire_snap;

/* Wraps entry (a reference is taken) with wire (a reference is taken; NULL allowed).
 * Never NULL. */
xds_wire_snap *xds_wire_snap_create(snap_entry *entry, xds_wire_res *wire, int64_t published_ms);
xds_wire_snap *xds_wire_snap_ref(xds_wire_snap *s);
void xds_wire_snap_unref(xds_wire_snap *s); /* NULL allowed */

/* An envoy.service.discovery.v3.DiscoveryResponse of type t carrying the entries idx
 * (ascending indices into w->res->items[t]). control_plane may be NULL. */
grpc_byte_buffer *xds_wire_sotw_response(const xds_wire_res *w, tr_type t, long long version,
                                         const char *nonce, const uint32_t *idx, size_t n,
                                         const char *control_plane);
/* The same with kept[0..nkept) appended: resources no longer in w that the response
 * still carries (clusters kept until the routes that used them are gone). */
grpc_byte_buffer *xds_wire_sotw_response_kept(const xds_wire_res *w, tr_type t, long long version,
                                              const char *nonce, const uint32_t *idx, size_t n,
                                              const tr_resource *kept, size_t nkept,
                                              const char *control_plane);

/* An envoy.service.discovery.v3.DeltaDiscoveryResponse: resources idx and removed
 * names. Builds w's Delta entries on first use. */
grpc_byte_buffer *xds_wire_delta_response(xds_wire_res *w, tr_type t, long long version,
                                          const char *nonce, const uint32_t *idx, size_t n,
                                          char *const *removed, size_t nremoved,
                                          const char *control_plane);

/* A gateway.control.v1.DiscoveryResponse carrying the parts of s's snapshot in mask
 * (bit i: ConfigSnapshot field i + 3; id, generated_at and unknown fields always). */
grpc_byte_buffer *xds_wire_control_response(const xds_wire_snap *s, const char *nonce,
                                            unsigned mask);

/* Any protobuf-c message, packed into a new buffer. */
grpc_byte_buffer *xds_wire_pack(const ProtobufCMessage *m);

/* The bytes of a received buffer as one slice (decompressed); the caller unrefs it.
 * Returns false when the buffer cannot be read. */
bool xds_wire_read(grpc_byte_buffer *bb, grpc_slice *out);

#endif
