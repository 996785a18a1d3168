/*
 * acks.c — a stream's ACKs and NACKs as the fleet sees them: metrics, log lines and
 * node status (see acks.h).
 *
 * The protocol state (sotw.c, delta.c, control.c) decides what a request was; this
 * module only accounts for it. A node is reported synced at a version once every type
 * its stream asked for is ACKed (or unchanged) at that version, and desired at the
 * version the stream adopted; each is reported when it changes, not per request. A
 * NACK is logged as a warning and recorded with its message; it also forgets the synced
 * version, so that the next time the stream is in step it is reported again, even at
 * the version reported before (a rollback): the ACK then clears "nacking".
 */
#include "server/xds/acks.h"

#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"

void xds_acks_report_synced(xds_call *c)
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
        /* A node pinned at this version is one a deployment's wave waits for. */
        if (c->srv->o.nodes && xds_pins_get(c->srv->pins, c->node_id, c->group) == v)
            node_status_ack_awaited(c->srv->o.nodes, c->node_id, v);
        else if (c->srv->o.nodes)
            node_status_ack(c->srv->o.nodes, c->node_id, v);
    }
}

void xds_acks_report_desired(xds_call *c, long long version)
{
    if (version > 0 && version != c->reported_desired) {
        c->reported_desired = version;
        if (c->srv->o.nodes)
            node_status_desired(c->srv->o.nodes, c->node_id, version);
    }
}

void xds_acks_note(xds_call *c, const char *type, const xds_req_outcome *oc, const char *nonce,
                   size_t names, int err_code, const char *err_msg)
{
    xds_server *s = c->srv;
    xds_metrics_inc(s->metrics.requests, type);
    switch (oc->kind) {
    case XDS_REQ_ACK:
        xds_metrics_inc(s->metrics.acks, type);
        xds_metrics_observe(s->metrics.push_ack_seconds, type, (double)oc->latency_ms / 1000.0);
        XDS_DEBUG_FIELDS(s, XDS_LOG_COMPONENT,
                         json_pack("{s:s,s:s,s:I,s:s}", "node", xds_call_node(c), "type", type,
                                   "version", (json_int_t)oc->version, "nonce", nonce),
                         "xds ack");
        break;
    case XDS_REQ_NACK: {
        /* The proxy's message and nonce are outside text: JSON (the log line, the node's
         * status) needs them as UTF-8. */
        char *msg = sx_utf8_sanitize(err_msg ? err_msg : "");
        char *nonce_text = sx_utf8_sanitize(nonce ? nonce : "");
        xds_metrics_inc(s->metrics.nacks, type);
        xds_metrics_observe(s->metrics.push_ack_seconds, type, (double)oc->latency_ms / 1000.0);
        sx_log_fields(SX_LOG_WARN, XDS_LOG_COMPONENT,
                      json_pack("{s:s,s:s,s:s,s:I,s:s,s:i,s:s}", "node", xds_call_node(c), "group",
                                c->group ? c->group : "", "type", type, "version",
                                (json_int_t)oc->version, "nonce", nonce_text, "error_code",
                                err_code, "error", msg),
                      "proxy rejected %s version %lld: %s", type, oc->version, msg);
        if (s->o.nodes)
            node_status_nack(s->o.nodes, c->node_id, oc->version, msg);
        /* The next time the stream is in step it is reported again, even at the version
         * reported before the NACK (a rollback): the ACK then clears "nacking". */
        c->reported_synced = 0;
        sx_free(msg);
        sx_free(nonce_text);
        break;
    }
    case XDS_REQ_STALE:
        XDS_DEBUG_FIELDS(
            s, XDS_LOG_COMPONENT,
            json_pack("{s:s,s:s,s:s}", "node", xds_call_node(c), "type", type, "nonce", nonce),
            "ignoring a request with a stale nonce");
        break;
    case XDS_REQ_SUBSCRIBE:
        XDS_DEBUG_FIELDS(s, XDS_LOG_COMPONENT,
                         json_pack("{s:s,s:s,s:s,s:I}", "node", xds_call_node(c), "type", type,
                                   "nonce", nonce, "names", (json_int_t)names),
                         "xds subscription request");
        break;
    }
}
