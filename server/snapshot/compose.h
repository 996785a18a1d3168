/*
 * compose.h — merging the configs of one proxy group into the group's snapshot.
 *
 * A proxy group's snapshot is the union of the latest applied version of every config
 * that names the group. The merge order is defined and documented so that the same
 * inputs always give the same bytes: configs are taken in ascending (namespace, name)
 * order; repeated fields (listeners, http_routes, grpc_routes, stream_routes,
 * backends, secrets) are concatenated in that order; `extensions` objects are merged
 * key by key, a later config's key replacing an earlier one's. The snapshot's own
 * `id` and `generated_at` are set by the composer, never taken from a config.
 * Conflicts between configs (two claiming one listener address) are refused before
 * a change is saved, by validation; composing does not re-check them.
 */
#ifndef SX_SNAPSHOT_COMPOSE_H
#define SX_SNAPSHOT_COMPOSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/ir/ir.h"

typedef struct snap_compose_input {
    const char *namespace; /* config namespace */
    const char *name;      /* config name */
    const json_t *spec;    /* the config version's spec: a ConfigSnapshot in JSON */
    const ir_snapshot *ir; /* spec decoded without a problem, when the change has it; or NULL */
} snap_compose_input;

/* Merges sources (in any order: they are sorted here) into one ConfigSnapshot JSON
 * object with "id" = id and "generated_at" = generated_at (RFC 3339; NULL omits it).
 * Returns a new reference owned by the caller; never NULL. */
json_t *snap_compose_json(const snap_compose_input *sources, size_t n, const char *id,
                          const char *generated_at);

/*
 * The same merge on the decoded inputs, so that a change decodes each spec once: fills
 * *out with the ConfigSnapshot that decoding snap_compose_json(sources, n, id, ...)
 * would give, with generated_at (borrowed; NULL = none), borrowing the inputs' objects.
 * Returns false, leaving *out empty, when an input has no decoded form or its spec is
 * not of the plain shape whose merge the decoded form can reproduce exactly (every
 * top-level key spelled as in the proto, lists as arrays, extensions as an object);
 * then decode the JSON instead. Release *out with snap_compose_ir_release (the inputs
 * stay untouched).
 */
bool snap_compose_ir(const snap_compose_input *sources, size_t n, const char *id,
                     Google__Protobuf__Timestamp *generated_at, ir_snapshot *out);
/* Frees what snap_compose_ir allocated in m (not the borrowed objects). */
void snap_compose_ir_release(ir_snapshot *m);

#endif
