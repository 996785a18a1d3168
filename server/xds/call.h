/*
 * call.h — one xDS stream on the gRPC server: the call object, its lifecycle and its
 * batches (receive, send, close).
 *
 * A call is reference-counted: one reference per batch in flight, plus temporary
 * ones taken by the registry's lists (publisher, sweeper, shutdown); the last one frees
 * it, which can only happen after its close batch (RECV_CLOSE_ON_SERVER) completed, so
 * the streams registry never sees a freed call. Its state changes in one function
 * (call.c); every xds_call_* function below that takes a call expects its mutex held
 * unless it says otherwise. A call has at most one SEND_MESSAGE in flight; when it
 * completes, the protocol state is asked for the next response, so updates that
 * arrived meanwhile are coalesced and only the newest snapshot goes out.
 */
#ifndef SX_XDS_CALL_H
#define SX_XDS_CALL_H

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/xds/control.h"
#include "server/xds/delta.h"
#include "server/xds/sotw.h"
#include "server/xds/streams.h"
#include "server/xds/wire.h"
#include "server/xds/xds_internal.h"

/*
 * Lifecycle of a stream. Only call_set_state() changes it.
 */
typedef enum xds_call_state {
    /* Accepted; no valid first request yet. Referenced only by its own batches (and,
     * briefly, by nothing else): not in the streams registry, gets no pushes. */
    XDS_CALL_WAITING,
    /* The first request named a node: registered in the streams registry under its
     * node id and group, receives pushes from the publisher and is swept for
     * timeouts. */
    XDS_CALL_ACTIVE,
    /* Ending: the reason is fixed and the call was cancelled, or its OK status is
     * sent (or waits for the send in flight). Out of the registry; only its
     * outstanding batches still reference it. */
    XDS_CALL_CLOSING,
    /* RECV_CLOSE_ON_SERVER completed: the termination was counted and reported.
     * Freed when its last batch returns. */
    XDS_CALL_CLOSED,
} xds_call_state;

/* One stream. Fields past the tags are guarded by mu; refs and srv are not. */
typedef struct xds_call {
    pthread_mutex_t mu;
    atomic_int refs;
    struct xds_server *srv;
    grpc_call *call;
    xds_protocol protocol;
    xds_call_state state;
    xds_term reason; /* valid when has_reason */
    bool has_reason;
    xds_tag t_recv, t_send, t_close, t_status;
    grpc_byte_buffer *recv_buf; /* RECV_MESSAGE target */
    grpc_byte_buffer *send_buf; /* the message in flight */
    int close_cancelled;        /* RECV_CLOSE_ON_SERVER result */
    bool send_pending;
    bool status_wanted; /* send OK status once the send in flight is done */
    int64_t send_started_ms;
    int64_t opened_ms;
    char *user_agent; /* from the HTTP/2 headers, "" when none */
    xds_cred *cred;   /* what the client presented when the call was accepted */
    char *node_id;    /* NULL until the first valid request */
    char *group;
    xds_stream_link link;
    xds_wire_snap *snap;        /* newest snapshot of the group adopted (a reference) */
    long long reported_synced;  /* last version reported to node_status_ack */
    long long reported_desired; /* last version reported to node_status_desired */
    union {
        xds_sotw sotw;
        xds_delta delta;
        xds_ctl ctl;
    } p;
} xds_call;

/* The registry's hooks for calls (a reference per listed call). */
extern const xds_streams_ops xds_call_stream_ops;

/* Starts a stream accepted on s speaking protocol (not locked: the call is new). Takes
 * over call and cred; user_agent is copied. When even the close batch cannot start the
 * call is cancelled and dropped. */
void xds_call_start(xds_server *s, xds_protocol protocol, grpc_call *call, const char *user_agent,
                    xds_cred *cred);
/* Drops a reference; frees the call with the last (not locked). */
void xds_call_unref(xds_call *c);
/* The node id of the stream, "" before its first valid request. */
const char *xds_call_node(const xds_call *c);
/* The state an ADS stream (state of the world or Delta) shares with the other ADS
 * protocol; NULL for a gateway.control.v1 stream. */
xds_state *xds_call_ads_state(xds_call *c);

/* Ends the stream from the server's side (locked): fixes the reason, leaves ACTIVE,
 * and either finishes with OK (the client half-closed) or cancels with code/msg. No-op
 * once closing. */
void xds_call_end(xds_call *c, xds_term reason, grpc_status_code code, const char *msg);
/* Locks c to end it (superseded, shutdown, timeouts); c must not be locked. */
void xds_call_end_from_outside(xds_call *c, xds_term reason, grpc_status_code code,
                               const char *msg);
/* Moves a stream from WAITING to ACTIVE under node_id in group (locked): registers it
 * and adopts what the node is to be served; *old gets the stream it superseded, with a
 * reference, for the caller to end after unlocking c, or NULL. False when c is refused
 * and ended: its credentials do not cover node_id in group, or the node has a live
 * stream of another identity (PERMISSION_DENIED; identity.h), or the replica serves
 * xds.max_streams already (RESOURCE_EXHAUSTED). */
bool xds_call_activate(xds_call *c, const char *node_id, const char *group, xds_call **old);
/* Ends c (locked), whose input is past a limit: counted in
 * sextant_xds_limit_refusals_total{limit} (one of xds_limit_names), logged, cancelled
 * with code and msg. */
void xds_call_refuse(xds_call *c, const char *limit, grpc_status_code code, const char *msg);

/* Makes snap the stream's snapshot (locked; snap stays the caller's). A fan-out only
 * moves a stream forward (exact == false: a late older version is ignored); an
 * assignment (exact == true) moves it to exactly that version, older or newer.
 * count_coalesced counts a snapshot that replaced an unsent one. */
void xds_call_adopt(xds_call *c, xds_wire_snap *snap, bool count_coalesced, bool exact);
/* Starts the next send if the stream can send and has something to say (locked); else
 * reports the node in step when it is. A send that cannot start ends the stream. */
void xds_call_kick(xds_call *c);

/* Completions, from the call's completion-queue thread (not locked; each takes the
 * lock and drops the batch's reference): a received message (or the end of the
 * client's messages), a finished send, the close of the call. */
void xds_call_on_recv(xds_call *c, bool ok);
void xds_call_on_send(xds_call *c, bool ok);
void xds_call_on_close(xds_call *c);

#endif
