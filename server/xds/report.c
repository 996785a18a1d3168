/*
 * report.c — gateway.control.v1 status reports: the unary ReportStatus and the reports
 * a StreamConfiguration request carries (see report.h).
 *
 * A report is checked (xds_ctl_check_report: fields, bounds, clock skew), then
 * recorded with node_status_report. A stream may only report for its own node; the
 * unary call may report for any node this replica has a stream of, or that
 * known_node (the database) knows. A refused report is counted by reason and logged;
 * the unary call still answers OK, with StatusAck.accepted false. ReportStatus is
 * answered by one batch (initial metadata, message, status, close) whose tag is the
 * call's only one.
 */
#include "server/xds/report.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/xds/control.h"
#include "server/xds/wire.h"

/* One ReportStatus call: a single batch answers it. */
struct xds_unary_call {
    xds_tag tag;
    struct xds_server *srv;
    grpc_call *call;
    grpc_byte_buffer *resp;
    int cancelled;
};

static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
int xds_report_take(xds_server *s, const Gateway__Control__V1__DataplaneStatusReport *rep,
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
        sx_log_fields(SX_LOG_INFO, XDS_LOG_COMPONENT,
                      json_pack("{s:s,s:s,s:s}", "node", rep->node_id ? rep->node_id : "", "reason",
                                xds_reject_name((xds_reject)reject), "error", err.message),
                      "status report refused: %s", err.message);
        return reject;
    }
    char when[64];
    if (s->o.nodes)
        node_status_report(s->o.nodes, rep->node_id, rep->ready, rep->version, rep->message,
                           report_time(rep, when, sizeof(when)));
    XDS_DEBUG_FIELDS(s, XDS_LOG_COMPONENT,
                     json_pack("{s:s,s:s,s:b,s:s}", "node", rep->node_id, "version", rep->version,
                               "ready", (int)rep->ready, "message", rep->message),
                     "status report");
    return -1;
}

void xds_report_status(xds_server *s, grpc_call *call, grpc_byte_buffer *payload, xds_cred *cred)
{
    int reject = -1;
    bool denied = false;
    char denied_msg[512] = "";
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
    if (reject < 0 && rep->node_id && rep->node_id[0]) {
        /* Only a client whose credentials cover the node may report for it, and it
         * learns nothing else first. The group is not known here, so a token's "groups"
         * claim is not checked. */
        const char *identity;
        xds_auth_fail f = xds_ident_check(s->ident, cred, rep->node_id, NULL, &identity, denied_msg,
                                          sizeof(denied_msg));
        if (f != XDS_AUTH_OK) {
            denied = true;
            xds_auth_refused(s, cred, f, rep->node_id, "control-v1-report", denied_msg);
        }
    }
    xds_cred_free(cred);

    if (denied) {
        /* counted and logged as a refusal for credentials (server/denials.h) */
    } else if (reject >= 0) {
        xds_metrics_inc(s->metrics.report_rejections, xds_reject_name((xds_reject)reject));
        sx_log_fields(SX_LOG_INFO, XDS_LOG_COMPONENT,
                      json_pack("{s:s,s:s}", "reason", xds_reject_name((xds_reject)reject), "error",
                                err.message),
                      "status report refused: %s", err.message);
    } else {
        reject = xds_report_take(s, rep, NULL);
    }
    if (rep)
        gateway__control__v1__dataplane_status_report__free_unpacked(rep, NULL);

    Gateway__Control__V1__StatusAck ack = GATEWAY__CONTROL__V1__STATUS_ACK__INIT;
    ack.accepted = reject < 0;
    xds_unary_call *u = sx_calloc(1, sizeof(*u));
    u->tag = (xds_tag){XDS_TAG_UNARY, u};
    u->srv = s;
    u->call = call;
    u->resp = xds_wire_pack(&ack.base);
    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    size_t nops = 0;
    grpc_slice details = grpc_slice_from_copied_string(denied_msg);
    ops[nops++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (!denied) {
        ops[nops].op = GRPC_OP_SEND_MESSAGE;
        ops[nops++].data.send_message.send_message = u->resp;
    }
    ops[nops].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[nops].data.send_status_from_server.status =
        denied ? GRPC_STATUS_PERMISSION_DENIED : GRPC_STATUS_OK;
    if (denied)
        ops[nops].data.send_status_from_server.status_details = &details;
    nops++;
    ops[nops].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[nops++].data.recv_close_on_server.cancelled = &u->cancelled;
    grpc_call_error e = grpc_call_start_batch(call, ops, nops, &u->tag, NULL);
    grpc_slice_unref(details);
    if (e != GRPC_CALL_OK) {
        grpc_byte_buffer_destroy(u->resp);
        grpc_call_unref(call);
        sx_free(u);
    }
}

void xds_report_done(xds_unary_call *u)
{
    grpc_byte_buffer_destroy(u->resp);
    grpc_call_unref(u->call);
    sx_free(u);
}
