/*
 * streams.h — the registry of active xDS streams: by node id (one stream per node)
 * and by proxy group (whom a new snapshot goes to).
 *
 * A stream enters the registry once its first request has been validated and leaves
 * it when it ends. A second stream from the same node id and identity supersedes the
 * first: add takes the older one out and hands it back so that its owner cancels it
 * (reason superseded); one of another identity is not registered. Fan-out and
 * shutdown take a snapshot of the members with a reference on each (through the ops
 * the registry was created with), so no lock is held while streams are being written
 * to.
 *
 * The registry also keeps sextant_xds_streams{protocol}, and names the protocols and
 * the termination reasons used as metric labels.
 *
 * Thread safety: every function is thread-safe (one mutex); the ops callbacks run
 * under it and must not call back into the registry.
 */
#ifndef SX_XDS_STREAMS_H
#define SX_XDS_STREAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/list.h"
#include "server/xds/metrics.h"

typedef enum xds_protocol {
    XDS_PROTO_SOTW,    /* ADS state of the world */
    XDS_PROTO_DELTA,   /* ADS incremental */
    XDS_PROTO_CONTROL, /* gateway.control.v1 StreamConfiguration */
    XDS_PROTO_COUNT,
} xds_protocol;

/* "ads-sotw", "ads-delta", "control-v1" (the node_status protocol names too). */
const char *xds_protocol_name(xds_protocol p);

/* Why a stream ended: the reason label of sextant_xds_stream_terminations_total. */
typedef enum xds_term {
    XDS_TERM_SHUTDOWN,          /* the server is shutting down */
    XDS_TERM_CLIENT_DISCONNECT, /* the client closed or cancelled the stream */
    XDS_TERM_STREAM_ERROR,      /* a gRPC operation failed, or a message did not decode */
    XDS_TERM_SEND_TIMEOUT,      /* a response was not written within xds.send_timeout */
    XDS_TERM_ACK_TIMEOUT,       /* a response was not answered within xds.ack_timeout */
    XDS_TERM_SUPERSEDED,        /* a newer stream from the same node replaced it */
    XDS_TERM_INVALID_REQUEST,   /* the first request was malformed */
    XDS_TERM_PERMISSION_DENIED, /* the credentials do not cover the node id (identity.h) */
    XDS_TERM_OTHER,
    XDS_TERM_COUNT,
} xds_term;

const char *xds_term_name(xds_term r);

typedef struct xds_group_slot xds_group_slot;

/* Embedded in the owner (one per stream). The owner sets the first five fields before
 * xds_streams_add and keeps them unchanged (and alive) until xds_streams_remove. */
typedef struct xds_stream_link {
    const char *node_id;
    const char *group;
    xds_protocol protocol;
    void *owner; /* handed to the ops and returned by the lookups */
    /* Who the client authenticated as (identity.h; NULL or "" when nobody is): only a
     * stream of the same identity supersedes the node's stream. Set before add, like the
     * fields above. */
    const char *identity;
    /* Set by xds_streams_add: the stream's generation, which orders the streams of a
     * node (node_status): the wall clock in microseconds, strictly increasing in the
     * registry, so above the generation of the stream it supersedes; across replicas a
     * stream that starts later has a higher one (as far as their clocks agree). */
    long long gen;
    /* Private to the registry. */
    struct xds_stream_link *node_next;
    sx_link group_link; /* in slot->members */
    xds_group_slot *slot;
    bool registered;
} xds_stream_link;

typedef struct xds_streams_ops {
    void (*ref)(void *owner); /* takes a reference on a stream, which the caller drops */
} xds_streams_ops;

typedef struct xds_streams xds_streams;

/* New empty registry; ops copied; metrics borrowed (NULL allowed). Never NULL. */
xds_streams *xds_streams_create(const xds_streams_ops *ops, xds_metrics *metrics);
/* Frees the registry, which must be empty. NULL allowed. */
void xds_streams_destroy(xds_streams *r);

/* Registers l and sets l->gen. When another stream of the same node id was registered, it is taken
 * out and its owner returned with a reference the caller must drop (after cancelling
 * it); otherwise NULL. */
void *xds_streams_add(xds_streams *r, xds_stream_link *l);
/* The same, unless the node's stream has another identity (*conflict set) or l would
 * make more than cap streams (0 = no bound; *full set): then nothing changes (NULL
 * returned, l not registered). A stream that supersedes one of its node is never
 * refused for the cap. */
void *xds_streams_add_capped(xds_streams *r, xds_stream_link *l, size_t cap, bool *full,
                             bool *conflict);

/* Takes l out; returns false when it was not registered (already superseded). */
bool xds_streams_remove(xds_streams *r, xds_stream_link *l);

/* The owners of every stream of group (or of every stream when group is NULL), each
 * with a reference taken; *out is a new array the caller frees after dropping the
 * references. Returns the count (0 leaves *out NULL). */
size_t xds_streams_list(xds_streams *r, const char *group, void ***out);

/* Whether a stream of node_id is registered. */
bool xds_streams_has_node(xds_streams *r, const char *node_id);

/* The owner of node_id's stream with a reference taken, or NULL. */
void *xds_streams_find(xds_streams *r, const char *node_id);

/* Number of registered streams. */
size_t xds_streams_count(xds_streams *r);

#endif
