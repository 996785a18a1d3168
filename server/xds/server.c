/*
 * server.c — the xDS gRPC server on the C core: calls, their state machine, pushes,
 * timeouts and shutdown (see server.h).
 *
 * Threads. xds.cq_threads threads each wait in grpc_completion_queue_next on a queue
 * of their own and run its completions: accepted calls, received messages, finished
 * sends, closed calls. Request slots are spread over the queues, so each call is
 * bound to one queue and its completions come to one thread. The publisher thread
 * pushes new snapshots: it locks each stream of the group in turn, updates its
 * protocol state and, when the stream has no send in flight, starts the send itself
 * with grpc_call_start_batch (batches on one call only need external serialisation,
 * which the stream's lock gives). The sweeper thread checks send and ACK timeouts
 * once a second. Each stream has its own mutex;
 * no thread ever holds two of them.
 *
 * Tags. Every batch has a tag that names its kind and its object; each call embeds
 * one tag per kind of batch, so no allocation happens per operation. A call holds
 * one reference per batch in flight (plus temporary ones taken by the publisher and
 * the sweeper); the last reference frees it, which can only happen after its close
 * batch (RECV_CLOSE_ON_SERVER) completed, so the registry never sees a freed call.
 *
 * Sends. A call has at most one SEND_MESSAGE in flight. When it completes, the
 * protocol state is asked for the next response; updates that arrived meanwhile
 * were merged into that state (coalesced), so only the newest snapshot goes out.
 */
#include "server/xds/server.h"

#include <dlfcn.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "gateway/control/v1/control.pb-c.h"
#include "server/base/arena.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/ir/pbjson.h"
#include "server/server.h"
#include "server/snapshot/loader.h"
#include "server/xds/control.h"
#include "server/xds/delta.h"
#include "server/xds/metrics.h"
#include "server/xds/names.h"
#include "server/xds/pins.h"
#include "server/xds/publisher.h"
#include "server/xds/sotw.h"
#include "server/xds/streams.h"
#include "server/xds/wire.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/repo_nodes.h"
#include "storage/repo_pins.h"

#define COMPONENT          "xds"
#define SWEEP_INTERVAL_MS  1000
#define NODE_ID_MAX        256
#define GROUP_MAX          128
#define TLS_FILE_MAX       (1024 * 1024)
#define KEEPALIVE_TIME_MS  60000
#define KEEPALIVE_WAIT_MS  20000
#define CLIENT_PING_MIN_MS 10000

/* ------------------------------------------------------------------ methods, tags */

enum method { M_SOTW, M_DELTA, M_CONTROL, M_REPORT, M_COUNT };

static const char *const method_paths[M_COUNT] = {
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
    "/gateway.control.v1.ConfigurationDiscoveryService/StreamConfiguration",
    "/gateway.control.v1.ConfigurationDiscoveryService/ReportStatus",
};

/* How many grpc_server_request_registered_call are kept outstanding per method: a
 * burst of reconnecting proxies is accepted without waiting for re-arms. */
static const int method_slots[M_COUNT] = {64, 16, 16, 8};

typedef enum tag_kind {
    TAG_ACCEPT,   /* a request slot got a call (rpc_slot) */
    TAG_RECV,     /* RECV_MESSAGE of a stream (xds_call) */
    TAG_SEND,     /* SEND_MESSAGE of a stream */
    TAG_CLOSE,    /* RECV_CLOSE_ON_SERVER of a stream: the call is over */
    TAG_STATUS,   /* SEND_STATUS_FROM_SERVER of a stream ending normally */
    TAG_UNARY,    /* the one batch of a ReportStatus call (unary_call) */
    TAG_SHUTDOWN, /* grpc_server_shutdown_and_notify finished (xds_server) */
} tag_kind;

typedef struct xtag {
    tag_kind kind;
    void *obj;
} xtag;

/* One outstanding grpc_server_request_registered_call. */
typedef struct rpc_slot {
    xtag tag;
    struct xds_server *srv;
    grpc_completion_queue *cq; /* the accepted call is bound to it */
    enum method method;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload; /* ReportStatus: the request message */
} rpc_slot;

/* ------------------------------------------------------------------ calls */

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

typedef struct xds_call {
    pthread_mutex_t mu;
    atomic_int refs;
    struct xds_server *srv;
    grpc_call *call;
    xds_protocol protocol;
    xds_call_state state;
    xds_term reason; /* valid when has_reason */
    bool has_reason;
    xtag t_recv, t_send, t_close, t_status;
    grpc_byte_buffer *recv_buf; /* RECV_MESSAGE target */
    grpc_byte_buffer *send_buf; /* the message in flight */
    int close_cancelled;        /* RECV_CLOSE_ON_SERVER result */
    bool send_pending;
    bool status_wanted; /* send OK status once the send in flight is done */
    int64_t send_started_ms;
    int64_t opened_ms;
    char *user_agent; /* from the HTTP/2 headers, "" when none */
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

/* One ReportStatus call: a single batch answers it. */
typedef struct unary_call {
    xtag tag;
    struct xds_server *srv;
    grpc_call *call;
    grpc_byte_buffer *resp;
    int cancelled;
} unary_call;

/* ------------------------------------------------------------------ server */

struct xds_server {
    xds_server_options o;
    const sextant_config *cfg;
    xds_metrics metrics;
    xds_streams *streams;
    xds_names *names; /* subscribed resource names, shared by every stream */
    xds_pub *pub;
    xds_pins *pins;          /* rollout pins: nodes served a version other than the current */
    pthread_mutex_t pins_mu; /* serialises pin reloads */
    char *control_plane_id;  /* ControlPlane.identifier in responses */
    char *listen;            /* grpc.listen as configured */

    grpc_server *server;
    grpc_completion_queue **cqs; /* ncqs queues; calls are spread over them */
    int ncqs;
    void *methods[M_COUNT];
    rpc_slot *slots;
    size_t nslots;
    struct cq_worker *workers; /* worker i polls cqs[i] */
    int nthreads;              /* workers started */
    int port;
    bool grpc_initialised;
    atomic_bool running; /* start() succeeded, stop() not yet called */
    atomic_bool stopping;

    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;
    bool shutdown_seen; /* the shutdown tag came back */
    bool sweeper_running;
    pthread_t sweeper;
    int64_t last_touch_ms; /* sweeper thread only: when live streams' nodes were last touched */
    xtag t_shutdown;
};

static void call_kick(xds_call *c);
static void call_unref(xds_call *c);
static xds_wire_snap *wanted_snapshot(xds_server *s, const char *node_id, const char *group,
                                      bool exact);

/* Per-message debug lines (every send, ACK and request): their fields are built only
 * when debug lines are written at all, as json_pack costs more than the rest of an
 * ACK's handling. */
#define DEBUG_FIELDS(srv, ...)                                                                     \
    do {                                                                                           \
        if ((srv)->cfg->log.level <= SX_LOG_DEBUG)                                                 \
            sx_log_fields(SX_LOG_DEBUG, __VA_ARGS__);                                              \
    } while (0)

/* ------------------------------------------------------------------ helpers */

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

static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *xds_group_for_node(const xds_server *s, const char *node_id, const char *cluster)
{
    (void)node_id; /* rollouts will assign groups per node here */
    if (cluster != NULL && cluster[0] != '\0')
        return cluster;
    return s->cfg->xds.default_group ? s->cfg->xds.default_group : "default";
}

int xds_server_port(const xds_server *s)
{
    return s->port;
}

static char *read_small_file(const char *path, sx_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sx_err_set(err, SX_EIO, "could not open %s", path), NULL;
    char *buf = sx_malloc(TLS_FILE_MAX + 1);
    size_t n = fread(buf, 1, TLS_FILE_MAX + 1, f);
    bool bad = ferror(f) || n > TLS_FILE_MAX;
    fclose(f);
    if (bad) {
        sx_free(buf);
        sx_err_set(err, SX_EIO, "could not read %s (unreadable, or larger than 1 MiB)", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* ------------------------------------------------------------------ call objects */

static void call_ref_owner(void *owner)
{
    atomic_fetch_add(&((xds_call *)owner)->refs, 1);
}

static const xds_streams_ops stream_ops = {call_ref_owner};

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
    sx_free(c->node_id);
    sx_free(c->group);
    pthread_mutex_destroy(&c->mu);
    sx_free(c);
}

static void call_unref(xds_call *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        call_free(c);
}

/* Starts a batch holding a reference for it. Returns 0, or -1 (no reference kept). */
static int call_batch(xds_call *c, const grpc_op *ops, size_t n, xtag *tag)
{
    atomic_fetch_add(&c->refs, 1);
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, tag, NULL);
    if (e == GRPC_CALL_OK)
        return 0;
    atomic_fetch_sub(&c->refs, 1); /* the caller still holds its own */
    sx_log_fields(SX_LOG_ERROR, COMPONENT, json_pack("{s:i}", "grpc_call_error", (int)e),
                  "could not start a gRPC batch on an xDS stream");
    return -1;
}

static const char *call_node(const xds_call *c)
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
        node_status_disconnected(s->o.nodes, c->node_id, reason);
    sx_log_fields(c->node_id ? SX_LOG_INFO : SX_LOG_DEBUG, COMPONENT,
                  json_pack("{s:s,s:s,s:s,s:s,s:I}", "node", call_node(c), "group",
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
static void call_end(xds_call *c, xds_term reason, grpc_status_code code, const char *msg)
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
static void call_end_from_outside(xds_call *c, xds_term reason, grpc_status_code code,
                                  const char *msg)
{
    pthread_mutex_lock(&c->mu);
    call_end(c, reason, code, msg);
    pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------------ node status */

static void report_synced(xds_call *c)
{
    long long v = 0;
    switch (c->protocol) {
    case XDS_PROTO_SOTW:
        v = xds_sotw_synced_version(&c->p.sotw);
        break;
    case XDS_PROTO_DELTA:
        v = xds_delta_synced_version(&c->p.delta);
        break;
    default:
        v = xds_ctl_synced_version(&c->p.ctl);
        break;
    }
    if (v > 0 && v != c->reported_synced) {
        c->reported_synced = v;
        if (c->srv->o.nodes)
            node_status_ack(c->srv->o.nodes, c->node_id, v);
    }
}

static void report_desired(xds_call *c, long long version)
{
    if (version > 0 && version != c->reported_desired) {
        c->reported_desired = version;
        if (c->srv->o.nodes)
            node_status_desired(c->srv->o.nodes, c->node_id, version);
    }
}

/* Accounts for what a request turned out to be. */
static void note_outcome(xds_call *c, const char *type, const xds_req_outcome *oc,
                         const char *nonce, size_t names, int err_code, const char *err_msg)
{
    xds_server *s = c->srv;
    switch (oc->kind) {
    case XDS_REQ_ACK:
        xds_metrics_inc(s->metrics.acks, type);
        xds_metrics_observe(s->metrics.push_ack_seconds, type, (double)oc->latency_ms / 1000.0);
        DEBUG_FIELDS(s, COMPONENT,
                     json_pack("{s:s,s:s,s:I,s:s}", "node", call_node(c), "type", type, "version",
                               (json_int_t)oc->version, "nonce", nonce),
                     "xds ack");
        break;
    case XDS_REQ_NACK:
        xds_metrics_inc(s->metrics.nacks, type);
        xds_metrics_observe(s->metrics.push_ack_seconds, type, (double)oc->latency_ms / 1000.0);
        sx_log_fields(
            SX_LOG_WARN, COMPONENT,
            json_pack("{s:s,s:s,s:s,s:I,s:s,s:i,s:s}", "node", call_node(c), "group",
                      c->group ? c->group : "", "type", type, "version", (json_int_t)oc->version,
                      "nonce", nonce, "error_code", err_code, "error", err_msg ? err_msg : ""),
            "proxy rejected %s version %lld: %s", type, oc->version, err_msg ? err_msg : "");
        if (s->o.nodes)
            node_status_nack(s->o.nodes, c->node_id, oc->version, err_msg ? err_msg : "");
        /* The next time the stream is in step it is reported again, even at the version
         * reported before the NACK (a rollback): the ACK then clears "nacking". */
        c->reported_synced = 0;
        break;
    case XDS_REQ_STALE:
        DEBUG_FIELDS(s, COMPONENT,
                     json_pack("{s:s,s:s,s:s}", "node", call_node(c), "type", type, "nonce", nonce),
                     "ignoring a request with a stale nonce");
        break;
    case XDS_REQ_SUBSCRIBE:
        DEBUG_FIELDS(s, COMPONENT,
                     json_pack("{s:s,s:s,s:s,s:I}", "node", call_node(c), "type", type, "nonce",
                               nonce, "names", (json_int_t)names),
                     "xds subscription request");
        break;
    }
}

/* ------------------------------------------------------------------ sending */

/* Starts the next send if the stream can send and has something to say (locked). */
static void call_kick(xds_call *c)
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
    case XDS_PROTO_SOTW: {
        xds_sotw_response r;
        while (bb == NULL && xds_sotw_next(&c->p.sotw, now, &r)) {
            if (w && w->res == r.res) {
                bb = xds_wire_sotw_response_kept(w, r.type, r.version, r.nonce, r.idx, r.n, r.kept,
                                                 r.nkept, s->control_plane_id);
                type = xds_type_name(r.type);
                version = r.version;
                count = r.n + r.nkept;
                memcpy(nonce, r.nonce, sizeof(nonce));
            }
            xds_sotw_response_clear(&r);
        }
        break;
    }
    case XDS_PROTO_DELTA: {
        xds_delta_response r;
        while (bb == NULL && xds_delta_next(&c->p.delta, now, &r)) {
            if (w && w->res == r.res) {
                bb = xds_wire_delta_response(w, r.type, r.version, r.nonce, r.idx, r.n, r.removed,
                                             r.nremoved, s->control_plane_id);
                type = xds_type_name(r.type);
                version = r.version;
                count = r.n + r.nremoved;
                memcpy(nonce, r.nonce, sizeof(nonce));
            }
            xds_delta_response_clear(&r);
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
        report_synced(c);
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
        call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not send");
        return;
    }
    xds_metrics_inc(s->metrics.pushes, type);
    DEBUG_FIELDS(s, COMPONENT,
                 json_pack("{s:s,s:s,s:I,s:s,s:I}", "node", call_node(c), "type", type, "version",
                           (json_int_t)version, "nonce", nonce, "resources", (json_int_t)count),
                 "xds response sent");
}

/* Adopts a snapshot of the stream's group (locked); returns whether it was new. */
/* Makes snap the stream's snapshot (locked). A fan-out only moves a stream forward
 * (exact == false: a late older version is ignored); an assignment (exact == true)
 * moves it to exactly that version, older or newer. */
static void call_adopt(xds_call *c, xds_wire_snap *snap, bool count_coalesced, bool exact)
{
    if (c->snap && (exact ? snap->entry->version == c->snap->entry->version
                          : snap->entry->version <= c->snap->entry->version))
        return;
    xds_wire_snap_unref(c->snap);
    c->snap = xds_wire_snap_ref(snap);
    xds_adopt a = XDS_ADOPT_IGNORED;
    switch (c->protocol) {
    case XDS_PROTO_SOTW:
        if (snap->wire)
            a = xds_sotw_on_resources(&c->p.sotw, snap->wire->res, snap->published_ms);
        break;
    case XDS_PROTO_DELTA:
        if (snap->wire)
            a = xds_delta_on_resources(&c->p.delta, snap->wire->res, snap->published_ms);
        break;
    default:
        a = xds_ctl_on_snapshot(&c->p.ctl, snap->entry->version, snap->published_ms);
        break;
    }
    if (a == XDS_ADOPT_COALESCED && count_coalesced)
        xds_metrics_inc(c->srv->metrics.coalesced, NULL);
    if (a != XDS_ADOPT_IGNORED)
        report_desired(c, snap->entry->version);
}

/* The publisher's fan-out: every stream of the snapshot's group gets it. */
static void fanout(void *ctx, xds_wire_snap *snap)
{
    xds_server *s = ctx;
    void **calls = NULL;
    size_t n = xds_streams_list(s->streams, snap->entry->group, &calls);
    for (size_t i = 0; i < n; i++) {
        xds_call *c = calls[i];
        pthread_mutex_lock(&c->mu);
        /* A pinned node keeps its pin; it follows the group again once released. */
        long long pinned = xds_pins_get(s->pins, c->node_id, snap->entry->group);
        if (c->state == XDS_CALL_ACTIVE && (pinned == 0 || pinned == snap->entry->version)) {
            call_adopt(c, snap, true, false);
            call_kick(c);
        }
        pthread_mutex_unlock(&c->mu);
        call_unref(c);
    }
    sx_free(calls);
    sx_log_fields(SX_LOG_INFO, COMPONENT,
                  json_pack("{s:s,s:I,s:I,s:b}", "group", snap->entry->group, "version",
                            (json_int_t)snap->entry->version, "streams", (json_int_t)n, "ads",
                            snap->wire != NULL && snap->wire->res->version == snap->entry->version),
                  "snapshot %s v%lld pushed to %zu stream%s", snap->entry->group,
                  snap->entry->version, n, n == 1 ? "" : "s");
}

/* ------------------------------------------------------------------ pins */

/* Re-serves node_id's stream on this replica, if any, what its assignment now says. */
static void retarget(xds_server *s, const char *node_id)
{
    xds_call *c = xds_streams_find(s->streams, node_id);
    if (c == NULL)
        return;
    /* group is fixed while the stream is registered; the lookup may block (not locked). */
    xds_wire_snap *snap = wanted_snapshot(s, node_id, c->group, true);
    if (snap) {
        pthread_mutex_lock(&c->mu);
        if (c->state == XDS_CALL_ACTIVE) {
            call_adopt(c, snap, false, true);
            call_kick(c);
        }
        pthread_mutex_unlock(&c->mu);
        xds_wire_snap_unref(snap);
    }
    call_unref(c);
}

static bool pin_in_use(void *ctx, const char *group, long long version)
{
    return xds_pins_uses(ctx, group, version);
}

/* Reloads every pin from the database and re-serves the nodes whose pin changed. Runs
 * on the snapshot loader's thread (NOTIFY and resync: server/snapshot/loader.h). */
static void reload_pins(xds_server *s)
{
    if (s->o.pool == NULL)
        return;
    pthread_mutex_lock(&s->pins_mu);
    sx_err err;
    sx_err_clear(&err);
    pg_conn *conn = NULL;
    sx_arena *a = sx_arena_create();
    pin_record *v = NULL;
    size_t n = 0;
    int rc = pg_acquire(s->o.pool, &conn, &err);
    if (rc == 0) {
        rc = pin_repo_load(conn, a, &v, &n, &err);
        pg_release(s->o.pool, conn);
    }
    if (rc != 0) {
        /* The next notification or resync repairs it. */
        sx_log_err(SX_LOG_ERROR, COMPONENT, &err);
    } else {
        /* Build the pinned versions before anyone is moved to them: once per distinct
         * (group, version) — a handful, however many nodes are pinned. */
        const pin_record **built = n ? sx_arena_alloc(a, n * sizeof(*built)) : NULL;
        size_t nbuilt = 0;
        for (size_t i = 0; i < n; i++) {
            bool seen = false;
            for (size_t j = 0; j < nbuilt && !seen; j++)
                seen =
                    built[j]->version == v[i].version && strcmp(built[j]->group, v[i].group) == 0;
            if (seen)
                continue;
            built[nbuilt++] = &v[i];
            sx_err e2;
            sx_err_clear(&e2);
            xds_wire_snap *w = xds_pub_get_version(s->pub, v[i].group, v[i].version, &e2);
            if (w == NULL)
                sx_log_err(SX_LOG_ERROR, COMPONENT, &e2);
            xds_wire_snap_unref(w);
        }
        char **changed = NULL;
        size_t nchanged = xds_pins_replace(s->pins, v, n, &changed);
        for (size_t i = 0; i < nchanged; i++)
            retarget(s, changed[i]);
        if (nchanged > 0)
            sx_log_fields(
                SX_LOG_INFO, COMPONENT,
                json_pack("{s:I,s:I}", "pins", (json_int_t)n, "changed", (json_int_t)nchanged),
                "rollout assignments changed for %zu node%s", nchanged, nchanged == 1 ? "" : "s");
        xds_pins_free_ids(changed, nchanged);
        xds_pub_prune_versions(s->pub, pin_in_use, s->pins);
    }
    sx_arena_destroy(a);
    pthread_mutex_unlock(&s->pins_mu);
}

static void on_pins_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    (void)payload;
    reload_pins(ctx);
}

static void on_pins_resync(void *ctx)
{
    reload_pins(ctx);
}

/* ------------------------------------------------------------------ first request */

/* Identity of an ADS node for node_status_connected. */
static void report_connected_ads(xds_call *c, const Envoy__Config__Core__V3__Node *n)
{
    if (c->srv->o.nodes == NULL)
        return;
    char ua[256];
    const char *ver =
        n->user_agent_version_type_case ==
                ENVOY__CONFIG__CORE__V3__NODE__USER_AGENT_VERSION_TYPE_USER_AGENT_VERSION
            ? n->user_agent_version
            : "";
    if (n->user_agent_name && n->user_agent_name[0])
        snprintf(ua, sizeof(ua), "%s%s%s", n->user_agent_name, ver[0] ? " " : "", ver);
    else
        snprintf(ua, sizeof(ua), "%s", c->user_agent);
    json_t *metadata = n->metadata ? pbjson_encode(&n->metadata->base, 0) : NULL;
    json_t *labels = metadata ? json_object_get(metadata, "labels") : NULL;
    if (labels && !json_is_object(labels))
        labels = NULL;
    json_t *locality = n->locality
                           ? json_pack("{s:s,s:s,s:s}", "region", n->locality->region, "zone",
                                       n->locality->zone, "sub_zone", n->locality->sub_zone)
                           : NULL;
    node_identity id = {
        .node_id = c->node_id,
        .group = c->group,
        .protocol = xds_protocol_name(c->protocol),
        .user_agent = ua,
        .labels = labels,
        .metadata = metadata,
        .locality = locality,
    };
    node_status_connected(c->srv->o.nodes, &id);
    json_decref(metadata);
    json_decref(locality);
}

/* What node_id in group should be served: its pinned version, else the group's current
 * one; a reference, or NULL when there is none yet. For an unpinned node, exact asks
 * for the version the store holds as current even when the publisher has not built it
 * yet (built here, blocking: the loader thread re-serving released pins must not move
 * a node back to the previous build); otherwise the publisher's latest build. */
static xds_wire_snap *wanted_snapshot(xds_server *s, const char *node_id, const char *group,
                                      bool exact)
{
    long long pinned = xds_pins_get(s->pins, node_id, group);
    if (pinned == 0 && exact && s->o.store) {
        snap_entry *e = snap_store_get(s->o.store, group);
        pinned = e ? e->version : 0;
        snap_entry_unref(e);
    }
    if (pinned == 0)
        return xds_pub_get(s->pub, group);
    sx_err err;
    sx_err_clear(&err);
    xds_wire_snap *snap = xds_pub_get_version(s->pub, group, pinned, &err);
    if (snap == NULL)
        sx_log_fields(SX_LOG_ERROR, COMPONENT,
                      json_pack("{s:s,s:s,s:I,s:s}", "node", node_id, "group", group, "version",
                                (json_int_t)pinned, "error", err.message),
                      "could not load snapshot %s v%lld that node %s is assigned", group, pinned,
                      node_id);
    return snap;
}

/* Moves a stream from WAITING to ACTIVE under node_id in group (locked). Returns the
 * stream it superseded, with a reference, for the caller to end after unlocking. */
static xds_call *call_activate(xds_call *c, const char *node_id, const char *group)
{
    c->node_id = sx_strdup(node_id);
    c->group = sx_strdup(group);
    c->link.node_id = c->node_id;
    c->link.group = c->group;
    c->link.protocol = c->protocol;
    c->link.owner = c;
    /* Registered before the snapshot is looked up, so that a snapshot published in
     * between reaches the stream by fan-out if not by the lookup. */
    xds_call *old = xds_streams_add(c->srv->streams, &c->link);
    call_set_state(c, XDS_CALL_ACTIVE);
    sx_log_fields(SX_LOG_INFO, COMPONENT,
                  json_pack("{s:s,s:s,s:s,s:s,s:b}", "node", c->node_id, "group", c->group,
                            "protocol", xds_protocol_name(c->protocol), "user_agent", c->user_agent,
                            "superseded", old != NULL),
                  "xds stream opened");
    xds_wire_snap *snap = wanted_snapshot(c->srv, node_id, group, false);
    if (snap) {
        call_adopt(c, snap, false, true);
        xds_wire_snap_unref(snap);
    }
    return old;
}

/* Validates the node of a first request; ends the stream when it is unusable. */
/* Whether s is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF):
 * node ids and groups are stored as PostgreSQL text, which refuses anything else. */
static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t n = c < 0x80             ? 0
                   : (c & 0xE0) == 0xC0 ? 1
                   : (c & 0xF0) == 0xE0 ? 2
                   : (c & 0xF8) == 0xF0 ? 3
                                        : 9;
        if (n == 9 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4))
            return false;
        unsigned cp = n ? c & (0x3F >> n) : c;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        p += n + 1;
    }
    return true;
}

static bool check_node(xds_call *c, const char *node_id, const char *group)
{
    const char *why = NULL;
    if (node_id == NULL || node_id[0] == '\0')
        why = c->protocol == XDS_PROTO_CONTROL ? "the first request must carry node_id"
                                               : "the first request must carry node.id";
    else if (strlen(node_id) > NODE_ID_MAX)
        why = "the node id is longer than 256 bytes";
    else if (strlen(group) > GROUP_MAX)
        why = "the node's cluster (its proxy group) is longer than 128 bytes";
    else if (!valid_utf8(node_id) || !valid_utf8(group))
        why = "the node id and cluster must be valid UTF-8";
    if (why == NULL)
        return true;
    sx_log_fields(SX_LOG_WARN, COMPONENT,
                  json_pack("{s:s,s:s}", "protocol", xds_protocol_name(c->protocol), "user_agent",
                            c->user_agent),
                  "refusing an xds stream: %s", why);
    call_end(c, XDS_TERM_INVALID_REQUEST, GRPC_STATUS_INVALID_ARGUMENT, why);
    return false;
}

/* ------------------------------------------------------------------ requests */

/*
 * What every ADS request (SotW or Delta) does first: the first request activates the
 * stream for its node (a superseded older stream comes back in *old), every request
 * counts as activity, and a type Sextant does not serve is ignored. Returns false when
 * the request needs nothing more.
 */
static bool ads_request_prologue(xds_call *c, const Envoy__Config__Core__V3__Node *n,
                                 const char *type_url, xds_type *t, xds_call **old)
{
    if (c->state == XDS_CALL_WAITING) {
        const char *id = n ? n->id : NULL;
        const char *group = xds_group_for_node(c->srv, id, n ? n->cluster : NULL);
        if (!check_node(c, id, group))
            return false;
        *old = call_activate(c, id, group);
        report_connected_ads(c, n);
    }
    if (c->srv->o.nodes)
        node_status_seen(c->srv->o.nodes, c->node_id);
    if (xds_type_from_url(type_url, t) != 0) {
        DEBUG_FIELDS(c->srv, COMPONENT,
                     json_pack("{s:s,s:s}", "node", call_node(c), "type_url", type_url),
                     "ignoring a request for a type Sextant does not serve");
        return false;
    }
    return true;
}

static xds_call *on_sotw_request(xds_call *c, const uint8_t *data, size_t len)
{
    xds_call *old = NULL;
    Envoy__Service__Discovery__V3__DiscoveryRequest *req =
        envoy__service__discovery__v3__discovery_request__unpack(NULL, len, data);
    if (req == NULL) {
        bool first = c->state == XDS_CALL_WAITING;
        call_end(c, first ? XDS_TERM_INVALID_REQUEST : XDS_TERM_STREAM_ERROR,
                 GRPC_STATUS_INVALID_ARGUMENT, "could not decode the DiscoveryRequest");
        return NULL;
    }
    xds_type t;
    if (!ads_request_prologue(c, req->node, req->type_url, &t, &old))
        goto out;
    xds_sotw_request r = {
        .type = t,
        .nonce = req->response_nonce,
        .names = req->resource_names,
        .name_count = req->n_resource_names,
        .is_nack = req->error_detail != NULL,
    };
    xds_req_outcome oc;
    xds_sotw_on_request(&c->p.sotw, &r, sx_monotonic_ms(), &oc);
    note_outcome(c, xds_type_name(t), &oc, req->response_nonce, req->n_resource_names,
                 req->error_detail ? req->error_detail->code : 0,
                 req->error_detail ? req->error_detail->message : NULL);
    call_kick(c);
    report_synced(c);
out:
    envoy__service__discovery__v3__discovery_request__free_unpacked(req, NULL);
    return old;
}

static xds_call *on_delta_request(xds_call *c, const uint8_t *data, size_t len)
{
    xds_call *old = NULL;
    Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *req =
        envoy__service__discovery__v3__delta_discovery_request__unpack(NULL, len, data);
    if (req == NULL) {
        bool first = c->state == XDS_CALL_WAITING;
        call_end(c, first ? XDS_TERM_INVALID_REQUEST : XDS_TERM_STREAM_ERROR,
                 GRPC_STATUS_INVALID_ARGUMENT, "could not decode the DeltaDiscoveryRequest");
        return NULL;
    }
    xds_type t;
    if (!ads_request_prologue(c, req->node, req->type_url, &t, &old))
        goto out;
    size_t ni = req->n_initial_resource_versions;
    char **inames = ni ? sx_malloc(ni * sizeof(char *)) : NULL;
    char **ivers = ni ? sx_malloc(ni * sizeof(char *)) : NULL;
    for (size_t i = 0; i < ni; i++) {
        inames[i] = req->initial_resource_versions[i]->key;
        ivers[i] = req->initial_resource_versions[i]->value;
    }
    xds_delta_request r = {
        .type = t,
        .nonce = req->response_nonce,
        .is_nack = req->error_detail != NULL,
        .subscribe = req->resource_names_subscribe,
        .nsubscribe = req->n_resource_names_subscribe,
        .unsubscribe = req->resource_names_unsubscribe,
        .nunsubscribe = req->n_resource_names_unsubscribe,
        .initial_names = inames,
        .initial_versions = ivers,
        .ninitial = ni,
    };
    xds_req_outcome oc;
    xds_delta_on_request(&c->p.delta, &r, sx_monotonic_ms(), &oc);
    sx_free(inames);
    sx_free(ivers);
    note_outcome(c, xds_type_name(t), &oc, req->response_nonce,
                 req->n_resource_names_subscribe + req->n_resource_names_unsubscribe,
                 req->error_detail ? req->error_detail->code : 0,
                 req->error_detail ? req->error_detail->message : NULL);
    call_kick(c);
    report_synced(c);
out:
    envoy__service__discovery__v3__delta_discovery_request__free_unpacked(req, NULL);
    return old;
}

static int take_report(xds_server *s, const Gateway__Control__V1__DataplaneStatusReport *rep,
                       const char *stream_node);

static xds_call *on_control_request(xds_call *c, const uint8_t *data, size_t len)
{
    xds_call *old = NULL;
    Gateway__Control__V1__DiscoveryRequest *req =
        gateway__control__v1__discovery_request__unpack(NULL, len, data);
    if (req == NULL) {
        bool first = c->state == XDS_CALL_WAITING;
        call_end(c, first ? XDS_TERM_INVALID_REQUEST : XDS_TERM_STREAM_ERROR,
                 GRPC_STATUS_INVALID_ARGUMENT, "could not decode the DiscoveryRequest");
        return NULL;
    }
    unsigned mask = XDS_CTL_ALL;
    sx_err err;
    sx_err_clear(&err);
    if (xds_ctl_parse_subscriptions(req->subscriptions, req->n_subscriptions, &mask, &err) != 0) {
        sx_log_fields(SX_LOG_WARN, COMPONENT,
                      json_pack("{s:s,s:s}", "node", req->node_id, "error", err.message),
                      "refusing a gateway.control.v1 request: %s", err.message);
        call_end(c, XDS_TERM_INVALID_REQUEST, GRPC_STATUS_INVALID_ARGUMENT, err.message);
        goto out;
    }
    bool first_request = c->state == XDS_CALL_WAITING;
    if (first_request) {
        const char *group = xds_group_for_node(c->srv, req->node_id, req->cluster);
        if (!check_node(c, req->node_id, group))
            goto out;
        old = call_activate(c, req->node_id, group);
        if (c->srv->o.nodes) {
            node_identity id = {
                .node_id = c->node_id,
                .group = c->group,
                .protocol = xds_protocol_name(c->protocol),
                .user_agent = c->user_agent,
            };
            node_status_connected(c->srv->o.nodes, &id);
        }
    }
    if (c->srv->o.nodes)
        node_status_seen(c->srv->o.nodes, c->node_id);
    if (req->status_report) {
        bool report_only = !first_request && req->nonce[0] == '\0' && req->n_subscriptions == 0 &&
                           req->result_status == 0 && req->error_detail[0] == '\0';
        take_report(c->srv, req->status_report, c->node_id);
        if (report_only)
            goto out; /* carries no ACK/NACK: the protocol state is untouched */
    }
    bool nack = req->result_status ==
                    GATEWAY__CONTROL__V1__DISCOVERY_RESULT_STATUS__DISCOVERY_RESULT_STATUS_NACK ||
                (req->error_detail && req->error_detail[0]);
    xds_ctl_request r = {
        .nonce = req->nonce,
        .is_nack = nack,
        .has_subscriptions = req->n_subscriptions > 0,
        .mask = mask,
    };
    xds_req_outcome oc;
    xds_ctl_on_request(&c->p.ctl, &r, sx_monotonic_ms(), &oc);
    note_outcome(c, "snapshot", &oc, req->nonce, req->n_subscriptions, 0,
                 nack ? req->error_detail : NULL);
    call_kick(c);
    report_synced(c);
out:
    gateway__control__v1__discovery_request__free_unpacked(req, NULL);
    return old;
}

/* ------------------------------------------------------------------ completions */

static void arm_recv(xds_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv_buf;
    if (call_batch(c, &op, 1, &c->t_recv) != 0)
        call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not receive");
}

static void on_recv(xds_call *c, bool ok)
{
    xds_call *old = NULL;
    pthread_mutex_lock(&c->mu);
    grpc_byte_buffer *bb = c->recv_buf;
    c->recv_buf = NULL;
    if (!ok || bb == NULL) {
        /* Half-close (the client is done: finish with OK) or cancellation (the close
         * batch will tell). */
        if (ok && c->state < XDS_CALL_CLOSING)
            call_end(c, XDS_TERM_CLIENT_DISCONNECT, GRPC_STATUS_OK, NULL);
        if (bb)
            grpc_byte_buffer_destroy(bb);
        pthread_mutex_unlock(&c->mu);
        call_unref(c);
        return;
    }
    if (c->state < XDS_CALL_CLOSING) {
        grpc_slice msg;
        if (!xds_wire_read(bb, &msg)) {
            call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not read a message");
        } else {
            const uint8_t *p = GRPC_SLICE_START_PTR(msg);
            size_t len = GRPC_SLICE_LENGTH(msg);
            switch (c->protocol) {
            case XDS_PROTO_SOTW:
                old = on_sotw_request(c, p, len);
                break;
            case XDS_PROTO_DELTA:
                old = on_delta_request(c, p, len);
                break;
            default:
                old = on_control_request(c, p, len);
                break;
            }
            grpc_slice_unref(msg);
        }
        if (c->state < XDS_CALL_CLOSING)
            arm_recv(c);
    }
    grpc_byte_buffer_destroy(bb);
    pthread_mutex_unlock(&c->mu);
    if (old) {
        call_end_from_outside(old, XDS_TERM_SUPERSEDED, GRPC_STATUS_ABORTED,
                              "superseded by a newer stream of the same node");
        call_unref(old);
    }
    call_unref(c);
}

static void on_send(xds_call *c, bool ok)
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
        call_kick(c);
    } else if (c->state == XDS_CALL_CLOSING && c->status_wanted) {
        send_status_ok(c);
    }
    pthread_mutex_unlock(&c->mu);
    call_unref(c);
}

static void on_close(xds_call *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->has_reason) {
        c->reason = atomic_load(&c->srv->stopping) ? XDS_TERM_SHUTDOWN : XDS_TERM_CLIENT_DISCONNECT;
        c->has_reason = true;
    }
    call_set_state(c, XDS_CALL_CLOSED);
    pthread_mutex_unlock(&c->mu);
    call_unref(c);
}

static void call_start(xds_server *s, enum method m, grpc_call *call, const char *user_agent)
{
    xds_call *c = sx_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    atomic_init(&c->refs, 1); /* ours, until the batches below hold their own */
    c->srv = s;
    c->call = call;
    c->protocol = m == M_SOTW ? XDS_PROTO_SOTW : m == M_DELTA ? XDS_PROTO_DELTA : XDS_PROTO_CONTROL;
    c->state = XDS_CALL_WAITING;
    c->opened_ms = sx_monotonic_ms();
    c->user_agent = sx_strdup(user_agent);
    c->t_recv = (xtag){TAG_RECV, c};
    c->t_send = (xtag){TAG_SEND, c};
    c->t_close = (xtag){TAG_CLOSE, c};
    c->t_status = (xtag){TAG_STATUS, c};
    uint64_t seed = random_seed();
    switch (c->protocol) {
    case XDS_PROTO_SOTW:
        xds_sotw_init(&c->p.sotw, seed);
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            c->p.sotw.t[t].subs.pool = s->names;
        break;
    case XDS_PROTO_DELTA:
        xds_delta_init(&c->p.delta, seed);
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            c->p.delta.t[t].subs.pool = s->names;
        break;
    default:
        xds_ctl_init(&c->p.ctl, seed);
        break;
    }

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
        call_unref(c);
        return;
    }
    if (call_batch(c, first, 2, &c->t_recv) != 0)
        call_end(c, XDS_TERM_STREAM_ERROR, GRPC_STATUS_INTERNAL, "could not start the stream");
    pthread_mutex_unlock(&c->mu);
    call_unref(c);
}

/* ------------------------------------------------------------------ ReportStatus */

static bool node_known(xds_server *s, const char *node_id)
{
    if (xds_streams_has_node(s->streams, node_id))
        return true;
    return s->o.known_node && s->o.known_node(s->o.known_node_ctx, node_id);
}

/* observed_at as RFC 3339 into out (n bytes); NULL when the report has none. */
static const char *report_time(const Gateway__Control__V1__DataplaneStatusReport *rep, char *out,
                               size_t n)
{
    if (rep->observed_at == NULL)
        return NULL;
    time_t secs = (time_t)rep->observed_at->seconds;
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL)
        return NULL;
    size_t k = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + k, n - k, ".%09dZ", (int)rep->observed_at->nanos);
    return out;
}

/*
 * Checks a status report and records it. stream_node is the node of the stream that
 * carried it (NULL for the unary ReportStatus): a stream may only report for its own
 * node. Returns -1 when accepted, else the xds_reject reason (counted and logged here).
 */
static int take_report(xds_server *s, const Gateway__Control__V1__DataplaneStatusReport *rep,
                       const char *stream_node)
{
    int reject = -1;
    sx_err err;
    sx_err_clear(&err);
    if (atomic_load(&s->stopping)) {
        reject = XDS_REJECT_SHUTDOWN;
        sx_err_set(&err, SX_EUNAVAILABLE, "the server is shutting down");
    } else if (xds_ctl_check_report(rep, unix_ms(), &err) != 0) {
        reject = XDS_REJECT_INVALID_REQUEST;
    } else if (stream_node && strcmp(rep->node_id, stream_node) != 0) {
        reject = XDS_REJECT_INVALID_REQUEST;
        sx_err_set(&err, SX_EINVAL, "a stream of node \"%.64s\" reported for node \"%.64s\"",
                   stream_node, rep->node_id);
    } else if (stream_node == NULL && !node_known(s, rep->node_id)) {
        reject = XDS_REJECT_UNKNOWN_NODE;
        sx_err_set(&err, SX_ENOTFOUND, "node \"%.64s\" is not known", rep->node_id);
    }
    if (reject >= 0) {
        xds_metrics_inc(s->metrics.report_rejections, xds_reject_name((xds_reject)reject));
        sx_log_fields(SX_LOG_INFO, COMPONENT,
                      json_pack("{s:s,s:s,s:s}", "node", rep->node_id ? rep->node_id : "", "reason",
                                xds_reject_name((xds_reject)reject), "error", err.message),
                      "status report refused: %s", err.message);
        return reject;
    }
    char when[64];
    if (s->o.nodes)
        node_status_report(s->o.nodes, rep->node_id, rep->ready, rep->version, rep->message,
                           report_time(rep, when, sizeof(when)));
    DEBUG_FIELDS(s, COMPONENT,
                 json_pack("{s:s,s:s,s:b,s:s}", "node", rep->node_id, "version", rep->version,
                           "ready", (int)rep->ready, "message", rep->message),
                 "status report");
    return -1;
}

static void report_status(xds_server *s, grpc_call *call, grpc_byte_buffer *payload)
{
    int reject = -1;
    sx_err err;
    sx_err_clear(&err);
    Gateway__Control__V1__DataplaneStatusReport *rep = NULL;
    if (atomic_load(&s->stopping)) {
        reject = XDS_REJECT_SHUTDOWN;
        sx_err_set(&err, SX_EUNAVAILABLE, "the server is shutting down");
    } else if (payload == NULL) {
        reject = XDS_REJECT_INVALID_REQUEST;
        sx_err_set(&err, SX_EINVAL, "no report in the request");
    } else {
        grpc_slice msg;
        if (!xds_wire_read(payload, &msg)) {
            reject = XDS_REJECT_OTHER;
            sx_err_set(&err, SX_EINTERNAL, "could not read the request");
        } else {
            rep = gateway__control__v1__dataplane_status_report__unpack(
                NULL, GRPC_SLICE_LENGTH(msg), GRPC_SLICE_START_PTR(msg));
            grpc_slice_unref(msg);
            if (rep == NULL) {
                reject = XDS_REJECT_INVALID_REQUEST;
                sx_err_set(&err, SX_EINVAL, "could not decode the DataplaneStatusReport");
            }
        }
    }
    if (payload)
        grpc_byte_buffer_destroy(payload);

    if (reject >= 0) {
        xds_metrics_inc(s->metrics.report_rejections, xds_reject_name((xds_reject)reject));
        sx_log_fields(SX_LOG_INFO, COMPONENT,
                      json_pack("{s:s,s:s}", "reason", xds_reject_name((xds_reject)reject), "error",
                                err.message),
                      "status report refused: %s", err.message);
    } else {
        reject = take_report(s, rep, NULL);
    }
    if (rep)
        gateway__control__v1__dataplane_status_report__free_unpacked(rep, NULL);

    Gateway__Control__V1__StatusAck ack = GATEWAY__CONTROL__V1__STATUS_ACK__INIT;
    ack.accepted = reject < 0;
    unary_call *u = sx_calloc(1, sizeof(*u));
    u->tag = (xtag){TAG_UNARY, u};
    u->srv = s;
    u->call = call;
    u->resp = xds_wire_pack(&ack.base);
    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = u->resp;
    ops[2].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[2].data.send_status_from_server.status = GRPC_STATUS_OK;
    ops[3].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[3].data.recv_close_on_server.cancelled = &u->cancelled;
    if (grpc_call_start_batch(call, ops, 4, &u->tag, NULL) != GRPC_CALL_OK) {
        grpc_byte_buffer_destroy(u->resp);
        grpc_call_unref(call);
        sx_free(u);
    }
}

static void on_unary_done(unary_call *u)
{
    grpc_byte_buffer_destroy(u->resp);
    grpc_call_unref(u->call);
    sx_free(u);
}

/* ------------------------------------------------------------------ accepting */

static void slot_arm(rpc_slot *sl)
{
    xds_server *s = sl->srv;
    sl->call = NULL;
    sl->payload = NULL;
    grpc_metadata_array_init(&sl->md);
    grpc_call_error e = grpc_server_request_registered_call(
        s->server, s->methods[sl->method], &sl->call, &sl->deadline, &sl->md,
        sl->method == M_REPORT ? &sl->payload : NULL, sl->cq, sl->cq, &sl->tag);
    if (e != GRPC_CALL_OK) {
        grpc_metadata_array_destroy(&sl->md);
        sx_log_fields(SX_LOG_ERROR, COMPONENT, json_pack("{s:i}", "grpc_call_error", (int)e),
                      "could not wait for xDS calls on %s", method_paths[sl->method]);
    }
}

static void on_accept(rpc_slot *sl, bool ok)
{
    xds_server *s = sl->srv;
    if (!ok) { /* the server is shutting down */
        grpc_metadata_array_destroy(&sl->md);
        return;
    }
    grpc_call *call = sl->call;
    grpc_byte_buffer *payload = sl->payload;
    char ua[256] = "";
    for (size_t i = 0; i < sl->md.count; i++) {
        if (grpc_slice_str_cmp(sl->md.metadata[i].key, "user-agent") == 0) {
            grpc_slice v = sl->md.metadata[i].value;
            snprintf(ua, sizeof(ua), "%.*s", (int)GRPC_SLICE_LENGTH(v),
                     (const char *)GRPC_SLICE_START_PTR(v));
        }
    }
    grpc_metadata_array_destroy(&sl->md);
    enum method m = sl->method;
    if (!atomic_load(&s->stopping))
        slot_arm(sl);
    if (m == M_REPORT)
        report_status(s, call, payload);
    else
        call_start(s, m, call, ua);
}

/* One completion-queue thread and its queue. */
typedef struct cq_worker {
    xds_server *srv;
    grpc_completion_queue *cq;
    pthread_t thread;
} cq_worker;

static void *cq_thread(void *arg)
{
    cq_worker *w = arg;
    xds_server *s = w->srv;
    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        xtag *t = ev.tag;
        bool ok = ev.success != 0;
        switch (t->kind) {
        case TAG_ACCEPT:
            on_accept(t->obj, ok);
            break;
        case TAG_RECV:
            on_recv(t->obj, ok);
            break;
        case TAG_SEND:
            on_send(t->obj, ok);
            break;
        case TAG_CLOSE:
            on_close(t->obj);
            break;
        case TAG_STATUS:
            call_unref(t->obj);
            break;
        case TAG_UNARY:
            on_unary_done(t->obj);
            break;
        case TAG_SHUTDOWN:
            pthread_mutex_lock(&s->mu);
            s->shutdown_seen = true;
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
            break;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ timeouts */

/* Checks send and ACK timeouts, and every fleet.stale_after / 4 marks the node of every
 * live stream as seen, so an idle but healthy proxy (nothing to ask for, nothing sent)
 * does not turn stale; node_status debounces the writes into one batch. */
static void sweep(xds_server *s)
{
    int64_t send_to = s->cfg->xds.send_timeout_ms, ack_to = s->cfg->xds.ack_timeout_ms;
    int64_t now = sx_monotonic_ms();
    int64_t touch_every = s->cfg->fleet.stale_after_ms / 4;
    bool touch = s->o.nodes != NULL && touch_every > 0 && now - s->last_touch_ms >= touch_every;
    if (touch)
        s->last_touch_ms = now;
    if (send_to <= 0 && ack_to <= 0 && !touch)
        return;
    void **calls = NULL;
    size_t n = xds_streams_list(s->streams, NULL, &calls);
    for (size_t i = 0; i < n; i++) {
        xds_call *c = calls[i];
        pthread_mutex_lock(&c->mu);
        if (touch && c->state == XDS_CALL_ACTIVE && c->node_id)
            node_status_seen(s->o.nodes, c->node_id);
        if (c->state == XDS_CALL_ACTIVE && (send_to > 0 || ack_to > 0)) {
            int64_t oldest = 0;
            switch (c->protocol) {
            case XDS_PROTO_SOTW:
                oldest = xds_sotw_oldest_unacked_ms(&c->p.sotw);
                break;
            case XDS_PROTO_DELTA:
                oldest = xds_delta_oldest_unacked_ms(&c->p.delta);
                break;
            default:
                oldest = xds_ctl_oldest_unacked_ms(&c->p.ctl);
                break;
            }
            if (send_to > 0 && c->send_pending && now - c->send_started_ms > send_to)
                call_end(c, XDS_TERM_SEND_TIMEOUT, GRPC_STATUS_UNAVAILABLE,
                         "a response was not read in time");
            else if (ack_to > 0 && oldest > 0 && now - oldest > ack_to)
                call_end(c, XDS_TERM_ACK_TIMEOUT, GRPC_STATUS_UNAVAILABLE,
                         "a response was not acknowledged in time");
        }
        pthread_mutex_unlock(&c->mu);
        call_unref(c);
    }
    sx_free(calls);
}

static void *sweeper_thread(void *arg)
{
    xds_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (s->sweeper_running) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += SWEEP_INTERVAL_MS / 1000;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (!s->sweeper_running)
            break;
        pthread_mutex_unlock(&s->mu);
        sweep(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------------ lifecycle */

/* Every series of a known label set exists from the start (at 0), so that rates and
 * alerts work before the first event. */
static void metrics_zero(xds_metrics *m)
{
    static const char *const types[] = {"sds", "cds", "eds", "lds", "rds", "snapshot"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        xds_metrics_add(m->pushes, types[i], 0);
        xds_metrics_add(m->acks, types[i], 0);
        xds_metrics_add(m->nacks, types[i], 0);
    }
    for (int r = 0; r < XDS_TERM_COUNT; r++)
        xds_metrics_add(m->terminations, xds_term_name((xds_term)r), 0);
    for (int r = 0; r < XDS_REJECT_COUNT; r++)
        xds_metrics_add(m->report_rejections, xds_reject_name((xds_reject)r), 0);
    xds_metrics_add(m->coalesced, NULL, 0);
    xds_metrics_add(m->build_failures, NULL, 0);
}

int xds_server_create(const xds_server_options *opt, xds_server **out, sx_err *err)
{
    *out = NULL;
    if (opt->config == NULL)
        return sx_err_set(err, SX_EINVAL, "the xDS server needs a configuration");
    xds_server *s = sx_calloc(1, sizeof(*s));
    s->o = *opt;
    s->cfg = opt->config;
    xds_metrics_init(&s->metrics, opt->metrics);
    metrics_zero(&s->metrics);
    s->streams = xds_streams_create(&stream_ops, &s->metrics);
    s->names = xds_names_create();
    s->control_plane_id = sx_asprintf("sextant/%s", s->cfg->replica.id ? s->cfg->replica.id : "");
    s->listen = sx_strdup(s->cfg->grpc.listen.text ? s->cfg->grpc.listen.text : "");
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&s->stopping, false);
    atomic_init(&s->running, false);
    s->t_shutdown = (xtag){TAG_SHUTDOWN, s};
    xds_pub_options po = {
        .store = opt->store,
        .metrics = &s->metrics,
        .fanout = fanout,
        .ctx = s,
    };
    s->pub = xds_pub_create(&po);
    s->pins = xds_pins_create();
    pthread_mutex_init(&s->pins_mu, NULL);
    *out = s;
    return 0;
}

static grpc_server_credentials *make_credentials(xds_server *s, sx_err *err)
{
    const config_tls *tls = &s->cfg->grpc.tls;
    if (tls->cert_file == NULL || tls->key_file == NULL)
        return grpc_insecure_server_credentials_create();
    char *cert = read_small_file(tls->cert_file, err);
    char *key = cert ? read_small_file(tls->key_file, err) : NULL;
    char *ca = key && tls->client_ca_file ? read_small_file(tls->client_ca_file, err) : NULL;
    grpc_server_credentials *creds = NULL;
    if (cert && key && (tls->client_ca_file == NULL || ca)) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = key, .cert_chain = cert};
        creds = grpc_ssl_server_credentials_create_ex(
            ca, &pair, 1,
            ca ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
               : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
            NULL);
        if (creds == NULL)
            sx_err_set(err, SX_EINVAL, "could not set up TLS for gRPC from %s and %s",
                       tls->cert_file, tls->key_file);
    }
    if (key)
        memset(key, 0, strlen(key));
    sx_free(cert);
    sx_free(key);
    sx_free(ca);
    return creds;
}

static void teardown_grpc(xds_server *s)
{
    if (s->server) {
        grpc_server_destroy(s->server);
        s->server = NULL;
    }
    for (int i = 0; i < s->ncqs; i++)
        grpc_completion_queue_shutdown(s->cqs[i]);
    for (int i = 0; i < s->nthreads; i++)
        pthread_join(s->workers[i].thread, NULL);
    for (int i = s->nthreads; i < s->ncqs; i++) /* nobody drained these */
        while (
            grpc_completion_queue_next(s->cqs[i], gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
            GRPC_QUEUE_SHUTDOWN) {
        }
    for (int i = 0; i < s->ncqs; i++)
        grpc_completion_queue_destroy(s->cqs[i]);
    sx_free(s->cqs);
    s->cqs = NULL;
    s->ncqs = 0;
    sx_free(s->workers);
    s->workers = NULL;
    s->nthreads = 0;
    sx_free(s->slots);
    s->slots = NULL;
    s->nslots = 0;
    if (s->grpc_initialised) {
        grpc_shutdown_blocking();
        s->grpc_initialised = false;
    }
}

/* The gRPC of Debian is linked against an Abseil built without NDEBUG, whose every
 * mutex lock updates a lock-order graph to detect deadlocks (absl's debug-only
 * deadlock detection): ~6% of the CPU of a push to 10,000 streams, and ~1.5 KB per
 * stream for the graph's nodes. It detects bugs in gRPC itself, not in our use of
 * it, so it is turned off when this Abseil exports the switch (a C++ function, hence
 * looked up by its mangled name; other builds keep their default). */
static void quiet_absl_deadlock_detection(void)
{
    static const char *const names[] = {
        "_ZN4absl7debian329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
        "_ZN4absl12lts_2022062329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
        "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *sym = dlsym(RTLD_DEFAULT, names[i]);
        if (sym == NULL)
            continue;
        void (*set_mode)(int);
        memcpy(&set_mode, &sym, sizeof(set_mode));
        set_mode(0); /* absl::OnDeadlockCycle::kIgnore */
        return;
    }
}

static int xds_start(void *ctx, sx_err *err)
{
    xds_server *s = ctx;
    atomic_store(&s->stopping, false);
    quiet_absl_deadlock_detection();
    grpc_init();
    s->grpc_initialised = true;
    /* One queue per thread: gRPC's completion queue serialises its completions on
     * one mutex (and, in the Debian build, scans every outstanding tag under it), so
     * a single queue shared by all threads makes them take turns. */
    int want = (int)s->cfg->xds.cq_threads;
    if (want < 1)
        want = 1;
    s->ncqs = want;
    s->cqs = sx_calloc((size_t)want, sizeof(*s->cqs));
    for (int i = 0; i < want; i++)
        s->cqs[i] = grpc_completion_queue_create_for_next(NULL);
    grpc_arg args[] = {
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_KEEPALIVE_TIME_MS,
         .value.integer = KEEPALIVE_TIME_MS},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
         .value.integer = KEEPALIVE_WAIT_MS},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
         .value.integer = 1},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
         .value.integer = CLIENT_PING_MIN_MS},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_MAX_PING_STRIKES, .value.integer = 0},
        /* gRPC binds with SO_REUSEPORT by default: a second replica on the same port
         * would then share connections silently instead of failing to start. */
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ALLOW_REUSEPORT, .value.integer = 0},
    };
    grpc_channel_args cargs = {.num_args = sizeof(args) / sizeof(args[0]), .args = args};
    s->server = grpc_server_create(&cargs, NULL);
    for (int i = 0; i < s->ncqs; i++)
        grpc_server_register_completion_queue(s->server, s->cqs[i], NULL);
    for (int m = 0; m < M_COUNT; m++)
        s->methods[m] = grpc_server_register_method(
            s->server, method_paths[m], NULL,
            m == M_REPORT ? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER : GRPC_SRM_PAYLOAD_NONE, 0);

    grpc_server_credentials *creds = make_credentials(s, err);
    if (creds == NULL) {
        teardown_grpc(s);
        return err && err->code ? err->code : SX_EINVAL;
    }
    s->port = grpc_server_add_http2_port(s->server, s->listen, creds);
    grpc_server_credentials_release(creds);
    if (s->port == 0) {
        int rc = sx_err_set(err, SX_EIO, "could not listen for gRPC on %s", s->listen);
        sx_err_hint(err, "Another process may be using the port (grpc.listen), or the address "
                         "is not local to this host.");
        teardown_grpc(s);
        return rc;
    }
    grpc_server_start(s->server);

    size_t n = 0;
    for (int m = 0; m < M_COUNT; m++)
        n += (size_t)method_slots[m];
    s->slots = sx_calloc(n, sizeof(rpc_slot));
    s->nslots = n;
    size_t k = 0;
    for (int m = 0; m < M_COUNT; m++)
        for (int i = 0; i < method_slots[m]; i++, k++) {
            rpc_slot *sl = &s->slots[k];
            sl->tag = (xtag){TAG_ACCEPT, sl};
            sl->srv = s;
            sl->cq = s->cqs[k % (size_t)s->ncqs];
            sl->method = (enum method)m;
            slot_arm(sl);
        }

    s->workers = sx_calloc((size_t)s->ncqs, sizeof(*s->workers));
    for (int i = 0; i < s->ncqs; i++) {
        s->workers[i] = (cq_worker){.srv = s, .cq = s->cqs[i]};
        if (pthread_create(&s->workers[i].thread, NULL, cq_thread, &s->workers[i]) != 0)
            break;
        s->nthreads++;
    }
    int rc = 0;
    if (s->nthreads < s->ncqs)
        rc = sx_err_set(err, SX_EINTERNAL, "could not start the gRPC completion queue threads");
    if (rc == 0)
        rc = xds_pub_start(s->pub, err);
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        s->sweeper_running = true;
        pthread_mutex_unlock(&s->mu);
        if (pthread_create(&s->sweeper, NULL, sweeper_thread, s) != 0) {
            s->sweeper_running = false;
            rc = sx_err_set(err, SX_EINTERNAL, "could not start the xDS timeout thread");
        }
    }
    if (rc != 0) {
        atomic_store(&s->stopping, true);
        xds_pub_stop(s->pub);
        grpc_server_shutdown_and_notify(s->server, s->cqs[0], &s->t_shutdown);
        grpc_server_cancel_all_calls(s->server);
        pthread_mutex_lock(&s->mu);
        while (!s->shutdown_seen && s->nthreads > 0)
            pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        teardown_grpc(s);
        return rc;
    }
    atomic_store(&s->running, true);
    sx_log_fields(SX_LOG_INFO, COMPONENT,
                  json_pack("{s:s,s:i,s:b,s:b,s:i}", "listen", s->listen, "port", s->port, "tls",
                            s->cfg->grpc.tls.cert_file != NULL, "mtls",
                            s->cfg->grpc.tls.client_ca_file != NULL, "cq_threads", s->nthreads),
                  "xds server listening on %s", s->listen);
    return 0;
}

static void xds_stop(void *ctx)
{
    xds_server *s = ctx;
    if (!atomic_exchange(&s->running, false))
        return;
    atomic_store(&s->stopping, true);
    xds_pub_stop(s->pub);
    pthread_mutex_lock(&s->mu);
    bool sweeping = s->sweeper_running;
    s->sweeper_running = false;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (sweeping)
        pthread_join(s->sweeper, NULL);

    /* Streams first, with their reason; then whatever is left (calls still waiting for
     * a first request, unary calls) goes with the server. */
    void **calls = NULL;
    size_t n = xds_streams_list(s->streams, NULL, &calls);
    for (size_t i = 0; i < n; i++) {
        call_end_from_outside(calls[i], XDS_TERM_SHUTDOWN, GRPC_STATUS_UNAVAILABLE,
                              "the control plane is shutting down");
        call_unref(calls[i]);
    }
    sx_free(calls);
    grpc_server_shutdown_and_notify(s->server, s->cqs[0], &s->t_shutdown);
    grpc_server_cancel_all_calls(s->server);
    pthread_mutex_lock(&s->mu);
    while (!s->shutdown_seen)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    teardown_grpc(s);
    sx_log_fields(SX_LOG_INFO, COMPONENT, json_pack("{s:I}", "streams", (json_int_t)n),
                  "xds server stopped");
}

static bool xds_ready(void *ctx)
{
    xds_server *s = ctx;
    return atomic_load(&s->running) && !atomic_load(&s->stopping);
}

const sup_ops xds_sup_ops = {xds_start, xds_stop, xds_ready};

void xds_server_destroy(xds_server *s)
{
    if (s == NULL)
        return;
    if (atomic_load(&s->running))
        xds_stop(s);
    xds_pub_destroy(s->pub);
    xds_pins_destroy(s->pins);
    pthread_mutex_destroy(&s->pins_mu);
    xds_streams_destroy(s->streams);
    xds_names_destroy(s->names);
    sx_free(s->control_plane_id);
    sx_free(s->listen);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    sx_free(s);
}

/* A ReportStatus from a node whose stream is on another replica: the database knows
 * every node any replica has seen. One indexed read on a completion-queue thread;
 * unary reports are rare next to stream traffic. */
static bool known_in_database(void *ctx, const char *node_id)
{
    struct sx_server *srv = ctx;
    pg_conn *c = NULL;
    sx_err err;
    if (srv->db == NULL || pg_acquire(srv->db, &c, &err) != 0)
        return false;
    sx_arena *a = sx_arena_create();
    node_record *n = NULL;
    bool known = node_repo_get(c, node_id, a, &n, &err) == 0;
    pg_release(srv->db, c);
    sx_arena_destroy(a);
    return known;
}

int xds_server_register(struct sx_server *srv, xds_server **out, sx_err *err)
{
    *out = NULL;
    xds_server_options o = {
        .config = srv->config,
        .store = srv->snapshots,
        .metrics = srv->metrics,
        .nodes = srv->nodes,
        .known_node = known_in_database,
        .known_node_ctx = srv,
        .pool = srv->db,
    };
    xds_server *s = NULL;
    int rc = xds_server_create(&o, &s, err);
    if (rc != 0)
        return rc;
    if (srv->loader && (rc = snap_loader_subscribe(srv->loader, PINS_NOTIFY_CHANNEL, on_pins_notify,
                                                   on_pins_resync, s, err)) != 0) {
        xds_server_destroy(s);
        return rc;
    }
    if ((rc = sup_register(srv->sup, "xds", &xds_sup_ops, s, err)) != 0) {
        xds_server_destroy(s);
        return rc;
    }
    *out = s;
    return 0;
}
