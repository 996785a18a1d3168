/*
 * pins.h — this replica's copy of the rollout pins: which nodes are served a given
 * snapshot version of their group instead of the group's current one.
 *
 * The database holds the truth (storage/repo_pins.h); the xDS server reloads the whole
 * table whenever PINS_NOTIFY_CHANNEL fires (and after the listener reconnects) and
 * hands it to xds_pins_replace, which answers with the nodes whose assignment changed
 * so that only their streams are re-served. A table of a few thousand pins is a sorted
 * array searched by bisection.
 *
 * Thread safety: all functions are thread-safe (one read-write lock).
 */
#ifndef SX_XDS_PINS_H
#define SX_XDS_PINS_H

#include <stdbool.h>
#include <stddef.h>

#include "storage/repo_pins.h"

typedef struct xds_pins xds_pins;

/* An empty table. Never NULL. */
xds_pins *xds_pins_create(void);
void xds_pins_destroy(xds_pins *p); /* NULL allowed */

/* Replaces the table with v[0..n) (copied; any order, one entry per node). Returns the
 * number of nodes whose pin appeared, disappeared or changed group or version, and
 * their ids in *changed (a new array of new strings: free with xds_pins_free_ids). */
size_t xds_pins_replace(xds_pins *p, const pin_record *v, size_t n, char ***changed);
void xds_pins_free_ids(char **ids, size_t n);

/* The version node_id is pinned to while in group, or 0 when it follows the group. */
long long xds_pins_get(xds_pins *p, const char *node_id, const char *group);

/* Whether some node is pinned to (group, version). */
bool xds_pins_uses(xds_pins *p, const char *group, long long version);

/* Number of pins. */
size_t xds_pins_count(xds_pins *p);

#endif
