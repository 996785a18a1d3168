/*
 * ir.h — the internal representation: a gateway.control.v1 ConfigSnapshot, in and out of
 * JSON and protobuf, with the value-range rules its types cannot express.
 *
 * Everything Sextant serves converges on one ir_snapshot: REST documents are decoded
 * into it, Gateway API objects are translated into it, and the xDS encoders read it.
 * Checks here are local to one value (a port, a TLS version name); rules that relate
 * objects to each other (a route naming a backend that exists) belong to validation.
 */
#ifndef SX_IR_IR_H
#define SX_IR_IR_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "gateway/control/v1/control.pb-c.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"

typedef Gateway__Control__V1__ConfigSnapshot ir_snapshot;

/* Decodes a ConfigSnapshot JSON document (the proto3 JSON mapping, see pbjson.h) and
 * checks the value-range rules (ports, weights, retry attempts, TLS versions, match
 * types, ...). path_prefix (NULL or "" for none) starts every error path, e.g. "spec".
 * On success returns 0 and *out owns the snapshot (free with ir_snapshot_free). On
 * failure returns SX_EINVAL, sets *out to NULL and appends to errs every problem found,
 * decoding and range errors together, one per offending value. errs must not be NULL. */
int ir_snapshot_from_json(const json_t *json, const char *path_prefix, ir_snapshot **out,
                          sx_fielderrs *errs) SX_MUSTCHECK;

/* Checks the value-range rules alone on a snapshot (e.g. one unpacked from bytes) and
 * appends every violation to errs. Returns 0 or SX_EINVAL. A path already present in
 * errs is not reported twice. */
int ir_snapshot_check(const ir_snapshot *snap, const char *path_prefix,
                      sx_fielderrs *errs) SX_MUSTCHECK;

/* Encodes the snapshot as a new JSON object owned by the caller; never NULL. Fields at
 * their default are omitted. */
json_t *ir_snapshot_to_json(const ir_snapshot *snap);

/* Packs the snapshot into protobuf bytes. Returns a new buffer (free with free or
 * sx_free; never NULL, even for an empty snapshot) and stores its length in *len. */
uint8_t *ir_snapshot_pack(const ir_snapshot *snap, size_t *len);

/* Unpacks protobuf bytes. On success returns 0 and *out owns the snapshot (free with
 * ir_snapshot_free). On malformed input returns SX_EINVAL with the reason in err (NULL
 * allowed) and sets *out to NULL. The range rules are not checked; see ir_snapshot_check. */
int ir_snapshot_unpack(const uint8_t *data, size_t len, ir_snapshot **out,
                       sx_err *err) SX_MUSTCHECK;

/* Frees a snapshot from any function of this module; NULL allowed. */
void ir_snapshot_free(ir_snapshot *snap);

/* The i-th of the snapshots ir_snapshot_concat joins; never NULL. */
typedef const ir_snapshot *(*ir_snapshot_part_fn)(const void *ctx, size_t i);

/* Sets *out to a snapshot whose listeners, HTTP, gRPC and stream routes, backends and
 * secrets are those of part(ctx, 0..n) one after the other. The objects are borrowed from
 * the parts (which must outlive *out); only the six lists are allocated, and every other
 * field is left at its default. Release with ir_snapshot_unconcat, never
 * ir_snapshot_free. out and part must not be NULL. */
void ir_snapshot_concat(ir_snapshot *out, size_t n, ir_snapshot_part_fn part, const void *ctx);
/* Frees the six lists ir_snapshot_concat allocated in m (not the objects) and leaves
 * those lists empty; the other fields are left as they are. m must not be NULL. */
void ir_snapshot_unconcat(ir_snapshot *m);

/* The canonical text of a JSON value: compact, object keys sorted, UTF-8, reals with 17
 * significant digits. Equal documents give equal text, so sha256 of it is a checksum.
 * json must not be NULL. Returns a new string the caller frees with free; never NULL. */
char *ir_canonical_json(const json_t *json);

#endif
