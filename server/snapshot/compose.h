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
#include <stddef.h>

typedef struct snap_compose_input {
    const char *namespace; /* config namespace */
    const char *name;      /* config name */
    const json_t *spec;    /* the config version's spec: a ConfigSnapshot in JSON */
} snap_compose_input;

/* Merges sources (in any order: they are sorted here) into one ConfigSnapshot JSON
 * object with "id" = id and "generated_at" = generated_at (RFC 3339; NULL omits it).
 * Returns a new reference owned by the caller; never NULL. */
json_t *snap_compose_json(const snap_compose_input *sources, size_t n, const char *id,
                          const char *generated_at);

#endif
