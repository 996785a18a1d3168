/*
 * call.c — one xDS stream: the call object, its lifecycle (the state enum and the one
 * function that changes it), its batches, sends and completions (see call.h).
 *
 * Threads. A call's completions (received messages, finished sends, its close) come
 * to the one completion-queue thread of the queue it was accepted on; the publisher
 * thread pushes new snapshots into it and, when it has no send in flight, starts the
 * send itself with grpc_call_start_batch (batches on one call only need external
 * serialisation, which the call's lock gives); the sweeper thread ends it on a send or
 * ACK timeout. Each call has its own mutex and no thread ever holds two of them: a
 * superseded stream is ended after the new one is unlocked.
 *
 * Tags. Each call embeds one tag per kind of batch (receive, send, close, status), so
 * no allocation happens per operation; each batch in flight holds a reference.
 */
#include "server/xds/call.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/xds/acks.h"
#include "server/xds/ads.h"
#include "server/xds/serve.h"

static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)ts.tv_sec;
    }
    return seed;
}

/* ------------------------------------------------------------------ call objects */

static void call_ref_owner(void *owner)
{
    atomic_fetch_add(&((xds_call *)owner)->refs, 1);
}

const xds_streams_ops xds_call_stream_ops = {call_ref_owner};

static void call_free(xds_call *c)
{
    switch (c->protocol) {
    case XDS_PROTO_SOTW:
        xds_sotw_free(&c->p.sotw);
        break;
    case XDS_PROTO_DELTA:
        xds_delta_free(&c->p.delta);
        break;
    default:
        break;
    }
    if (c->recv_buf)
        grpc_byte_buffer_destroy(c->recv_buf);
    if (c->send_buf)
        grpc_byte_buffer_destroy(c->send_buf);
    xds_wire_snap_unref(c->snap);
    grpc_call_unref(c->call);
    sx_free(c->user_agent);
    xds_cred_free(c->cred);
    sx_free(c->node_id);
    sx_free(c->group);
    pthread_mutex_destroy(&c->mu);
    xds_server *s = c->srv;
    sx_free(c);
    pthread_mutex_lock(&s->mu);
    if (--s->calls_live == 0)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void xds_call_unref(xds_call *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        call_free(c);
}

/* Starts a batch holding a reference for it. Returns 0, or -1 (no reference kept). */
static int call_batch(xds_call *c, const grpc_op *ops, size_t n, xds_tag *tag)
{
    atomic_fetch_add(&c->refs, 1);
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, tag, NULL);
    if (e == GRPC_CALL_OK)
        return 0;
    atomic_fetch_sub(&c->refs, 1); /* the caller still holds its own */
    sx_log_fields(SX_LOG_ERROR, XDS_LOG_COMPONENT, json_pack("{s:i}", "grpc_call_error", (int)e),
                  "could not start a gRPC batch on an xDS stream");
    return -1;
}

xds_state *xds_call_ads_state(xds_call *c)
{
    switch (c->protocol) {
    case XDS_PROTO_SOTW:
        return &c->p.sotw.st;
    case XDS_PROTO_DELTA:
        return &c->p.delta.st;
    default:
        return NULL;
    }
}

const char *xds_call_node(const xds_call *c)
{
    return c->node_id ? c->node_id : "";
}

/*
 * The one place a stream changes state; the side effects of each transition live
 * here: leaving ACTIVE takes the stream out of the registry; reaching CLOSED counts
 * the termination and reports the disconnect.
 */
static void call_set_state(xds_call *c, xds_call_state to)
{
    xds_server *s = c->srv;
    xds_call_state from = c->state;
    if (from == to)
        return;
    c->state = to;
    if (from == XDS_CALL_ACTIVE)
        xds_streams_remove(s->streams, &c->link);
    if (to != XDS_CALL_CLOSED)
        return;
    const char *reason = xds_term_name(c->reason);
    xds_metrics_inc(s->metrics.terminations, reason);
    if (c->node_id && s->o.nodes)
        node_status_disconnected(s->o.nodes, c->node_id, c->link.gen, reason);
    sx_log_fields(c->node_id ? SX_LOG_INFO : SX_LOG_DEBUG, XDS_LOG_COMPONENT,
                  json_pack("{s:s,s:s,s:s,s:s,s:I}", "node", xds_call_node(c), "group",
                            c->group ? c->group : "", "protocol", xds_protocol_name(c->protocol),
                            "reason", reason, "duration_ms",
                            (json_int_t)(sx_monotonic_ms() - c->opened_ms)),
                  "xds stream ended: %s", reason);
}

static void send_status_ok(xds_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    op.data.send_status_from_server.status = GRPC_STATUS_OK;
    c->status_wanted = false;
    if (call_batch(c, &op, 1, &c->t_status) != 0)
        grpc_call_cancel(c->call, NULL);
}

/* Ends the stream from the server's side (locked): fixes the reason, leaves ACTIVE,
 * and either finishes with OK (the client half-closed) or cancels with code/msg. */
void xds_call_end(xds_call *c, xds_term reason, grpc_status_code code, const char *msg)
{
    if (c->state >= XDS_CALL_CLOSING)
        return;
    if (!c->has_reason) {
        c->reason = reason;
        c->has_reason = true;
    }
    call_set_state(c, XDS_CALL_CLOSING);
    if (code == GRPC_STATUS_OK) {
        if (c->send_pending)
            c->status_wanted = true;
        else
            send_status_ok(c);
    } else {
        grpc_call_cancel_with_status(c->call, code, msg, NULL);
    }
}

/* Locks another stream to end it (superseded, shutdown, timeouts). */
void xds_call_end_from_outside(xds_call *c, xds_term reason, grpc_status_code code, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    xds_call_end(c, reason, code, msg);
    pthread_mutex_unlock(&c->mu);
}

/* Ends a stream whose input is past a limit (locked): counts it under limit, logs it,
 * and cancels with code and msg. */
void xds_call_refuse(xds_call *c, const char *limit, grpc_status_code code, const char *msg)
{
    xds_metrics_inc(c->srv->metrics.limit_refusals, limit);
    sx_log_fields(SX_LOG_WARN, XDS_LOG_COMPONENT,
                  json_pack("{s:s,s:s,s:s,s:s}", "limit", limit, "node", xds_call_node(c),
                            "protocol", xds_protocol_name(c->protocol), "user_agent",
                            c->user_agent),
                  "refusing an xds stream: %s", msg);
    xds_call_end(c, XDS_TERM_INVALID_REQUEST, code, msg);
}

/* Ends c (locked), whose credentials do not allow it to speak for node_id: counted,
 * logged and audited in aggregate, cancelled with PERMISSION_DENIED. */
static void refuse_auth(xds_call *c, xds_auth_fail f, const char *node_id, const char *msg)
{
    xds_auth_refused(c->srv, c->cred, f, node_id, xds_protocol_name(c->protocol), msg);
    xds_call_end(c, XDS_TERM_PERMISSION_DENIED, GRPC_STATUS_PERMISSION_DENIED, msg);
}

/* Moves a stream from WAITING to ACTIVE under node_id in group (locked); *old gets the
 * stream it superseded, with a reference, for the caller to end after unlocking. False
 * (the stream refused and ended) when its credentials do not cover the node, when the
 * node's live stream has another identity, or when the replica serves xds.max_streams
 * already. */
bool xds_call_activate(xds_call *c, const char *node_id, const char *group, xds_call **old)
{
    *old = NULL;
    const char *identity = "";
    char msg[512];
    xds_auth_fail f =
        xds_ident_check(c->srv->ident, c->cred, node_id, group, &identity, msg, sizeof(msg));
    if (f != XDS_AUTH_OK) {
        refuse_auth(c, f, node_id, msg);
        return false;
    }
    c->link.node_id = sx_strdup(node_id);
    c->link.group = sx_strdup(group);
    c->link.protocol = c->protocol;
    c->link.owner = c;
    c->link.identity = identity; /* owned by c->cred */
    /* Registered before the snapshot is looked up, so that a snapshot published in
     * between reaches the stream by fan-out if not by the lookup. */
    bool full = false, conflict = false;
    xds_call *prev = xds_streams_add_capped(c->srv->streams, &c->link,
                                            (size_t)c->srv->cfg->xds.max_streams, &full, &conflict);
    if (full || conflict) {
        /* Not the node's stream: its end must not be reported as the node's. */
        sx_free((char *)c->link.node_id);
        sx_free((char *)c->link.group);
        c->link.node_id = c->link.group = NULL;
    }
    if (conflict) {
        /* Both may speak for the node, but superseding would let one client disconnect
         * another: the live stream keeps the node until it ends. */
        snprintf(msg, sizeof(msg),
                 "node id \"%.256s\" has a live stream of another identity; only a client of "
                 "the same identity may replace it",
                 node_id);
        refuse_auth(c, XDS_AUTH_FAIL_IDENTITY, node_id, msg);
        return false;
    }
    if (full) {
        char msg[128];
        snprintf(msg, sizeof(msg), "this replica serves its maximum of %lld xDS streams",
                 (long long)c->srv->cfg->xds.max_streams);
        xds_metrics_inc(c->srv->metrics.limit_refusals, "streams");
        sx_log_fields(SX_LOG_WARN, XDS_LOG_COMPONENT,
                      json_pack("{s:s,s:s,s:I}", "limit", "streams", "node", node_id, "max",
                                (json_int_t)c->srv->cfg->xds.max_streams),
                      "refusing an xds stream: %s", msg);
        xds_call_end(c, XDS_TERM_OTHER, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
        return false;
    }
    c->node_id = (char *)c->link.node_id;
    c->group = (char *)c->link.group;
    call_set_state(c, XDS_CALL_ACTIVE);
    sx_log_fields(SX_LOG_INFO, XDS_LOG_COMPONENT,
                  json_pack("{s:s,s:s,s:s,s:s,s:b}", "node", c->node_id, "group", c->group,
                            "protocol", xds_protocol_name(c->protocol), "user_agent", c->user_agent,
                            "superseded", prev != NULL),
                  "xds stream opened");
    xds_wire_snap *snap = xds_serve_wanted(c->srv, node_id, group, false);
    if (snap) {
        xds_call_adopt(c, snap, false, true);
        xds_wire_snap_unref(snap);
    }
    *old = prev;
    return true;
}

/* ------------------------------------------------------------------ sending */

/* Starts the next send if the stream can send and has something to say (locked). */
void xds_call_kick(xds_call *c)
{
    if (c->state != XDS_CALL_ACTIVE || c->send_pending)
        return;
    xds_server *s = c->srv;
    int64_t now = sx_monotonic_ms();
    grpc_byte_buffer *bb = NULL;
    const char *type = NULL;
    long long version = 0;
    size_t count = 0;
    char nonce[XDS_NONCE_LEN] = "";
    xds_wire_res *w = c->snap ? c->snap->wire : NULL;

    switch (c->protocol) {
    case XDS_PROTO_SOTW:
    case XDS_PROTO_DELTA: {
        xds_response r;
        bool sotw = c->protocol == XDS_PROTO_SOTW;
        while (bb == NULL &&
               (sotw ? xds_sotw_next(&c->p.sotw, now, &r) : xds_delta_next(&c->p.delta, now, &r))) {
            if (w && w->res == r.res) {
                bb = sotw ? xds_wire_sotw_response_kept(w, r.type, r.version, r.nonce, r.idx, r.n,
                                                        r.kept, r.nkept, s->control_plane_id)
                          : xds_wire_delta_response(w, r.type, r.version, r.nonce, r.idx, r.n,
                                                    r.removed, r.nremoved, s->control_plane_id);
                type = tr_type_name(r.type);
                version = r.version;
                count = r.n + r.nkept + r.nremoved;
                memcpy(nonce, r.nonce, sizeof(nonce));
            }
            xds_response_clear(&r);
        }
        break;
    }
    default: {
        xds_ctl_response r;
        if (xds_ctl_next(&c->p.ctl, now, &r) && c->snap && c->snap->entry->version == r.version) {
            bb = xds_wire_control_response(c->snap, r.nonce, r.mask);
            type = "snapshot";
            version = r.version;
            count = 1;
            memcpy(nonce, r.nonce, sizeof(nonce));
        }
        break;
    }
    }
    if (bb == NULL) {
        xds_acks_report_synced(c);
        return;
    }

    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = bb;
    c->send_buf = bb;
    c->send_pending = true;
    c->send_started_ms = now;
    if (call_batch(c, &op, 1, &c->t_send) != 0) {
        grpc_byte_buffer_destroy(bb);
        c->send_buf = NULL;
        c->send_pending = false;
        xds_call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not send");
        return;
    }
    xds_metrics_inc(s->metrics.pushes, type);
    XDS_DEBUG_FIELDS(s, XDS_LOG_COMPONENT,
                     json_pack("{s:s,s:s,s:I,s:s,s:I}", "node", xds_call_node(c), "type", type,
                               "version", (json_int_t)version, "nonce", nonce, "resources",
                               (json_int_t)count),
                     "xds response sent");
}

/* Makes snap the stream's snapshot (locked). A fan-out only moves a stream forward
 * (exact == false: a late older version is ignored); an assignment (exact == true)
 * moves it to exactly that version, older or newer. */
void xds_call_adopt(xds_call *c, xds_wire_snap *snap, bool count_coalesced, bool exact)
{
    if (c->snap && (exact ? snap->entry->version == c->snap->entry->version
                          : snap->entry->version <= c->snap->entry->version))
        return;
    xds_wire_snap_unref(c->snap);
    c->snap = xds_wire_snap_ref(snap);
    xds_state *st = xds_call_ads_state(c);
    xds_adopt a = XDS_ADOPT_IGNORED;
    if (st == NULL)
        a = xds_ctl_on_snapshot(&c->p.ctl, snap->entry->version, snap->published_ms);
    else if (snap->wire)
        a = xds_state_adopt(st, snap->wire->res, snap->published_ms);
    if (a == XDS_ADOPT_COALESCED && count_coalesced)
        xds_metrics_inc(c->srv->metrics.coalesced, NULL);
    if (a != XDS_ADOPT_IGNORED)
        xds_acks_report_desired(c, snap->entry->version);
}

/* ------------------------------------------------------------------ completions */

static void arm_recv(xds_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv_buf;
    if (call_batch(c, &op, 1, &c->t_recv) != 0)
        xds_call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not receive");
}

void xds_call_on_recv(xds_call *c, bool ok)
{
    xds_call *old = NULL;
    pthread_mutex_lock(&c->mu);
    grpc_byte_buffer *bb = c->recv_buf;
    c->recv_buf = NULL;
    if (!ok || bb == NULL) {
        /* Half-close (the client is done: finish with OK) or cancellation (the close
         * batch will tell). */
        if (ok && c->state < XDS_CALL_CLOSING)
            xds_call_end(c, XDS_TERM_CLIENT_DISCONNECT, GRPC_STATUS_OK, NULL);
        if (bb)
            grpc_byte_buffer_destroy(bb);
        pthread_mutex_unlock(&c->mu);
        xds_call_unref(c);
        return;
    }
    if (c->state < XDS_CALL_CLOSING) {
        grpc_slice msg;
        if (!xds_wire_read(bb, &msg)) {
            xds_call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL,
                         "could not read a message");
        } else {
            old = xds_ads_on_message(c, GRPC_SLICE_START_PTR(msg), GRPC_SLICE_LENGTH(msg));
            grpc_slice_unref(msg);
        }
        if (c->state < XDS_CALL_CLOSING)
            arm_recv(c);
    }
    grpc_byte_buffer_destroy(bb);
    pthread_mutex_unlock(&c->mu);
    if (old) {
        xds_call_end_from_outside(old, XDS_TERM_SUPERSEDED, GRPC_STATUS_ABORTED,
                                  "superseded by a newer stream of the same node");
        xds_call_unref(old);
    }
    xds_call_unref(c);
}

void xds_call_on_send(xds_call *c, bool ok)
{
    pthread_mutex_lock(&c->mu);
    if (c->send_buf)
        grpc_byte_buffer_destroy(c->send_buf);
    c->send_buf = NULL;
    c->send_pending = false;
    if (!ok) {
        /* The client is most likely gone; the close batch gives the reason. */
        if (c->state < XDS_CALL_CLOSING)
            grpc_call_cancel(c->call, NULL);
    } else if (c->state == XDS_CALL_ACTIVE) {
        xds_call_kick(c);
    } else if (c->state == XDS_CALL_CLOSING && c->status_wanted) {
        send_status_ok(c);
    }
    pthread_mutex_unlock(&c->mu);
    xds_call_unref(c);
}

void xds_call_on_close(xds_call *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->has_reason) {
        c->reason = atomic_load(&c->srv->stopping) ? XDS_TERM_SHUTDOWN : XDS_TERM_CLIENT_DISCONNECT;
        c->has_reason = true;
    }
    call_set_state(c, XDS_CALL_CLOSED);
    pthread_mutex_unlock(&c->mu);
    xds_call_unref(c);
}

void xds_call_start(xds_server *s, xds_protocol protocol, grpc_call *call, const char *user_agent,
                    xds_cred *cred)
{
    xds_call *c = sx_calloc(1, sizeof(*c));
    pthread_mutex_lock(&s->mu);
    s->calls_live++;
    pthread_mutex_unlock(&s->mu);
    c->cred = cred;
    pthread_mutex_init(&c->mu, NULL);
    atomic_init(&c->refs, 1); /* ours, until the batches below hold their own */
    c->srv = s;
    c->call = call;
    c->protocol = protocol;
    c->state = XDS_CALL_WAITING;
    c->opened_ms = sx_monotonic_ms();
    c->user_agent = sx_strdup(user_agent);
    c->t_recv = (xds_tag){XDS_TAG_RECV, c};
    c->t_send = (xds_tag){XDS_TAG_SEND, c};
    c->t_close = (xds_tag){XDS_TAG_CLOSE, c};
    c->t_status = (xds_tag){XDS_TAG_STATUS, c};
    uint64_t seed = random_seed();
    xds_state *st = xds_call_ads_state(c); /* the rest of c->p is zeroed */
    if (st)
        xds_state_init(st, seed, s->names);
    else
        xds_ctl_init(&c->p.ctl, seed);

    pthread_mutex_lock(&c->mu);
    grpc_op close_op;
    memset(&close_op, 0, sizeof(close_op));
    close_op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    close_op.data.recv_close_on_server.cancelled = &c->close_cancelled;
    grpc_op first[2];
    memset(first, 0, sizeof(first));
    first[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    first[1].op = GRPC_OP_RECV_MESSAGE;
    first[1].data.recv_message.recv_message = &c->recv_buf;
    if (call_batch(c, &close_op, 1, &c->t_close) != 0) {
        /* Without a close batch nothing would ever end the call: drop it now. */
        grpc_call_cancel(call, NULL);
        pthread_mutex_unlock(&c->mu);
        xds_call_unref(c);
        return;
    }
    if (call_batch(c, first, 2, &c->t_recv) != 0)
        xds_call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not start the stream");
    pthread_mutex_unlock(&c->mu);
    xds_call_unref(c);
}
