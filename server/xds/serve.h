/*
 * serve.h — what each stream is served: the publisher's fan-out, rollout pins, and the
 * snapshot a node should have.
 */
#ifndef SX_XDS_SERVE_H
#define SX_XDS_SERVE_H

#include <stdbool.h>

#include "server/xds/wire.h"
#include "server/xds/xds_internal.h"

/* The publisher's fan-out (xds_pub_options.fanout; ctx: the xds_server): every active,
 * unpinned (or pinned to this version) stream of snap's group adopts snap and sends
 * what it made due. Locks each stream in turn; snap stays the caller's. */
void xds_serve_fanout(void *ctx, xds_wire_snap *snap);

/* What node_id in group should be served: its pinned version, else the group's current
 * one; a reference, or NULL when there is none yet. For an unpinned node, exact asks
 * for the version the store holds as current even when the publisher has not built it
 * yet (built here, blocking); otherwise the publisher's latest build. Must be called
 * without the node's stream locked. */
xds_wire_snap *xds_serve_wanted(xds_server *s, const char *node_id, const char *group, bool exact);

/* Snapshot loader callbacks of the pins channel (ctx: the xds_server): reload every pin
 * from the database and re-serve the nodes whose pin changed. Run on the loader's
 * thread; a failed reload is logged and returns its error, and the loader calls again
 * after a back-off until it succeeds. */
int xds_serve_pins_notify(void *ctx, const char *channel, const char *payload);
int xds_serve_pins_resync(void *ctx);

#endif
