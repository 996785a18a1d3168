/*
 * ads.c — what a stream does with each request: decode it, activate the stream on its
 * first request, hand it to the protocol state, account for it, and send what it made
 * due. ADS (state of the world and Delta) and gateway.control.v1 StreamConfiguration.
 *
 * The first request names the node: its id and cluster are checked (present, bounded,
 * valid UTF-8, since they are stored as PostgreSQL text), its group is decided
 * (xds_group_for_node) and, when the client's credentials cover the node
 * (xds_call_activate, identity.h), the stream becomes ACTIVE under that node,
 * superseding an older stream of the same node and identity. Every request then counts as activity
 * (node_status_seen). A request that cannot be decoded ends the stream: as an invalid
 * request when it was the first, else as a stream error. A type Sextant does not serve
 * is ignored, not refused: clients ask for types they can do without.
 */
#include "server/xds/ads.h"

#include <stdio.h>
#include <string.h>

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "gateway/control/v1/control.pb-c.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"
#include "server/ir/pbjson.h"
#include "server/xds/acks.h"
#include "server/xds/report.h"

#define NODE_ID_MAX 256
#define GROUP_MAX   128

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
    /* The proxy's locality is outside text: JSON needs it as UTF-8. */
    json_t *locality = NULL;
    if (n->locality) {
        char *region = sx_utf8_sanitize(n->locality->region ? n->locality->region : "");
        char *zone = sx_utf8_sanitize(n->locality->zone ? n->locality->zone : "");
        char *sub_zone = sx_utf8_sanitize(n->locality->sub_zone ? n->locality->sub_zone : "");
        locality = json_pack("{s:s,s:s,s:s}", "region", region, "zone", zone, "sub_zone", sub_zone);
        sx_free(region);
        sx_free(zone);
        sx_free(sub_zone);
    }
    node_identity id = {
        .node_id = c->node_id,
        .group = c->group,
        .protocol = xds_protocol_name(c->protocol),
        .user_agent = ua,
        .labels = labels,
        .metadata = metadata,
        .locality = locality,
        .stream_gen = c->link.gen,
    };
    node_status_connected(c->srv->o.nodes, &id);
    json_decref(metadata);
    json_decref(locality);
}

/* Validates the node of a first request; ends the stream when it is unusable. */
static bool check_node(xds_call *c, const char *node_id, const char *group)
{
    const char *why = NULL;
    if (node_id && strlen(node_id) > NODE_ID_MAX) {
        xds_call_refuse(c, "node_id", GRPC_STATUS_INVALID_ARGUMENT,
                        "the node id is longer than 256 bytes");
        return false;
    }
    if (node_id == NULL || node_id[0] == '\0')
        why = c->protocol == XDS_PROTO_CONTROL ? "the first request must carry node_id"
                                               : "the first request must carry node.id";
    else if (strlen(group) > GROUP_MAX)
        why = "the node's cluster (its proxy group) is longer than 128 bytes";
    else if (!sx_utf8_valid(node_id) || !sx_utf8_valid(group))
        why = "the node id and cluster must be valid UTF-8";
    if (why == NULL)
        return true;
    sx_log_fields(SX_LOG_WARN, XDS_LOG_COMPONENT,
                  json_pack("{s:s,s:s}", "protocol", xds_protocol_name(c->protocol), "user_agent",
                            c->user_agent),
                  "refusing an xds stream: %s", why);
    xds_call_end(c, XDS_TERM_INVALID_REQUEST, GRPC_STATUS_INVALID_ARGUMENT, why);
    return false;
}

/* Refuses the stream when the node's metadata, encoded, is past
 * xds.max_node_metadata_bytes: it is kept in memory and stored with the node. */
static bool check_metadata(xds_call *c, const Envoy__Config__Core__V3__Node *n)
{
    long long max = (long long)c->srv->cfg->xds.max_node_metadata_bytes;
    if (n == NULL || n->metadata == NULL ||
        (long long)protobuf_c_message_get_packed_size(&n->metadata->base) <= max)
        return true;
    char msg[128];
    snprintf(msg, sizeof(msg), "the node metadata is larger than %lld bytes (encoded)", max);
    xds_call_refuse(c, "node_metadata", GRPC_STATUS_INVALID_ARGUMENT, msg);
    return false;
}

/* Refuses the stream when a request carries more resource names than
 * xds.max_resource_names, or one longer than xds.max_resource_name_length. */
static bool check_names(xds_call *c, char *const *a, size_t na, char *const *b, size_t nb)
{
    long long max = (long long)c->srv->cfg->xds.max_resource_names;
    long long max_len = (long long)c->srv->cfg->xds.max_resource_name_length;
    char msg[128];
    if ((long long)(na + nb) > max) {
        snprintf(msg, sizeof(msg), "the request names %zu resources, more than %lld", na + nb, max);
        xds_call_refuse(c, "resource_names", GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
        return false;
    }
    for (size_t i = 0; i < na + nb; i++) {
        const char *name = i < na ? a[i] : b[i - na];
        if ((long long)strlen(name) > max_len) {
            snprintf(msg, sizeof(msg), "a resource name is longer than %lld bytes", max_len);
            xds_call_refuse(c, "resource_name_length", GRPC_STATUS_INVALID_ARGUMENT, msg);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ requests */

/* The request message d describes, decoded from data (free it with
 * protobuf_c_message_free_unpacked); NULL when it cannot be decoded, after ending the
 * stream: as an invalid request when it was the first, else as a stream error. */
static void *decode(xds_call *c, const ProtobufCMessageDescriptor *d, const uint8_t *data,
                    size_t len, const char *why)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, data);
    if (m == NULL) {
        bool first = c->state == XDS_CALL_WAITING;
        xds_metrics_inc(c->srv->metrics.limit_refusals, "malformed_request");
        xds_call_end(c, first ? XDS_TERM_INVALID_REQUEST : XDS_TERM_STREAM_ERROR,
                     GRPC_STATUS_INVALID_ARGUMENT, why);
    }
    return m;
}

/* After the protocol state took a request: account for what it was, send what it made
 * due, report the node in step when it is. */
static void request_done(xds_call *c, const char *type, const xds_req_outcome *oc,
                         const char *nonce, size_t names, int err_code, const char *err_msg)
{
    xds_acks_note(c, type, oc, nonce, names, err_code, err_msg);
    xds_call_kick(c);
    xds_acks_report_synced(c);
}

/* A DiscoveryRequest of type t on a state-of-the-world stream. */
static void on_sotw_request(xds_call *c, const Envoy__Service__Discovery__V3__DiscoveryRequest *req,
                            tr_type t)
{
    xds_sotw_request r = {
        .type = t,
        .nonce = req->response_nonce,
        .version_info = req->version_info,
        .names = req->resource_names,
        .name_count = req->n_resource_names,
        .is_nack = req->error_detail != NULL,
    };
    xds_req_outcome oc;
    xds_sotw_on_request(&c->p.sotw, &r, sx_monotonic_ms(), &oc);
    request_done(c, tr_type_name(t), &oc, req->response_nonce, req->n_resource_names,
                 req->error_detail ? req->error_detail->code : 0,
                 req->error_detail ? req->error_detail->message : NULL);
}

void xds_ads_delta_request(xds_delta *d,
                           const Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *req,
                           tr_type t, const char *nonce, int64_t now_ms, xds_req_outcome *out)
{
    size_t ni = req->n_initial_resource_versions;
    char **inames = ni ? sx_malloc(ni * sizeof(char *)) : NULL;
    char **ivers = ni ? sx_malloc(ni * sizeof(char *)) : NULL;
    for (size_t i = 0; i < ni; i++) {
        inames[i] = req->initial_resource_versions[i]->key;
        ivers[i] = req->initial_resource_versions[i]->value;
    }
    xds_delta_request r = {
        .type = t,
        .nonce = nonce ? nonce : req->response_nonce,
        .is_nack = req->error_detail != NULL,
        .subscribe = req->resource_names_subscribe,
        .nsubscribe = req->n_resource_names_subscribe,
        .unsubscribe = req->resource_names_unsubscribe,
        .nunsubscribe = req->n_resource_names_unsubscribe,
        .initial_names = inames,
        .initial_versions = ivers,
        .ninitial = ni,
    };
    xds_delta_on_request(d, &r, now_ms, out);
    sx_free(inames);
    sx_free(ivers);
}

/* A DeltaDiscoveryRequest of type t on a Delta stream. */
static void on_delta_request(xds_call *c,
                             const Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *req,
                             tr_type t)
{
    xds_req_outcome oc;
    xds_ads_delta_request(&c->p.delta, req, t, NULL, sx_monotonic_ms(), &oc);
    request_done(c, tr_type_name(t), &oc, req->response_nonce,
                 req->n_resource_names_subscribe + req->n_resource_names_unsubscribe,
                 req->error_detail ? req->error_detail->code : 0,
                 req->error_detail ? req->error_detail->message : NULL);
}

/*
 * An ADS request (SotW or Delta). What every one does first: the first request
 * activates the stream for its node (returning the superseded older stream, if any),
 * every request counts as activity, and a type Sextant does not serve is ignored; then
 * the protocol's own handling.
 */
static xds_call *on_ads_request(xds_call *c, const uint8_t *data, size_t len)
{
    bool delta = c->protocol == XDS_PROTO_DELTA;
    const Envoy__Service__Discovery__V3__DiscoveryRequest *sotw = NULL;
    const Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *dreq = NULL;
    ProtobufCMessage *m =
        delta ? decode(c, &envoy__service__discovery__v3__delta_discovery_request__descriptor, data,
                       len, "could not decode the DeltaDiscoveryRequest")
              : decode(c, &envoy__service__discovery__v3__discovery_request__descriptor, data, len,
                       "could not decode the DiscoveryRequest");
    if (m == NULL)
        return NULL;
    if (delta)
        dreq = (const Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *)m;
    else
        sotw = (const Envoy__Service__Discovery__V3__DiscoveryRequest *)m;
    const Envoy__Config__Core__V3__Node *n = delta ? dreq->node : sotw->node;
    const char *type_url = delta ? dreq->type_url : sotw->type_url;
    xds_call *old = NULL;
    if (!(delta ? check_names(c, dreq->resource_names_subscribe, dreq->n_resource_names_subscribe,
                              dreq->resource_names_unsubscribe, dreq->n_resource_names_unsubscribe)
                : check_names(c, sotw->resource_names, sotw->n_resource_names, NULL, 0)))
        goto out;
    if (c->state == XDS_CALL_WAITING) {
        const char *id = n ? n->id : NULL;
        const char *group = xds_group_for_node(c->srv, id, n ? n->cluster : NULL);
        if (!check_node(c, id, group))
            goto out;
        if (!check_metadata(c, n) || !xds_call_activate(c, id, group, &old))
            goto out;
        report_connected_ads(c, n);
    }
    if (c->srv->o.nodes)
        node_status_seen(c->srv->o.nodes, c->node_id);
    tr_type t;
    if (tr_type_from_url(type_url, &t) != 0) {
        XDS_DEBUG_FIELDS(c->srv, XDS_LOG_COMPONENT,
                         json_pack("{s:s,s:s}", "node", xds_call_node(c), "type_url", type_url),
                         "ignoring a request for a type Sextant does not serve");
        goto out;
    }
    if (delta)
        on_delta_request(c, dreq, t);
    else
        on_sotw_request(c, sotw, t);
out:
    protobuf_c_message_free_unpacked(m, NULL);
    return old;
}

static xds_call *on_control_request(xds_call *c, const uint8_t *data, size_t len)
{
    xds_call *old = NULL;
    Gateway__Control__V1__DiscoveryRequest *req =
        decode(c, &gateway__control__v1__discovery_request__descriptor, data, len,
               "could not decode the DiscoveryRequest");
    if (req == NULL)
        return NULL;
    unsigned mask = XDS_CTL_ALL;
    sx_err err;
    sx_err_clear(&err);
    if (xds_ctl_parse_subscriptions(req->subscriptions, req->n_subscriptions, &mask, &err) != 0) {
        sx_log_fields(SX_LOG_WARN, XDS_LOG_COMPONENT,
                      json_pack("{s:s,s:s}", "node", req->node_id, "error", err.message),
                      "refusing a gateway.control.v1 request: %s", err.message);
        xds_call_end(c, XDS_TERM_INVALID_REQUEST, GRPC_STATUS_INVALID_ARGUMENT, err.message);
        goto out;
    }
    bool first_request = c->state == XDS_CALL_WAITING;
    if (first_request) {
        const char *group = xds_group_for_node(c->srv, req->node_id, req->cluster);
        if (!check_node(c, req->node_id, group))
            goto out;
        if (!xds_call_activate(c, req->node_id, group, &old))
            goto out;
        if (c->srv->o.nodes) {
            node_identity id = {
                .node_id = c->node_id,
                .group = c->group,
                .protocol = xds_protocol_name(c->protocol),
                .user_agent = c->user_agent,
                .stream_gen = c->link.gen,
            };
            node_status_connected(c->srv->o.nodes, &id);
        }
    }
    if (c->srv->o.nodes)
        node_status_seen(c->srv->o.nodes, c->node_id);
    if (req->status_report) {
        bool report_only = !first_request && req->nonce[0] == '\0' && req->n_subscriptions == 0 &&
                           req->result_status == 0 && req->error_detail[0] == '\0';
        xds_report_take(c->srv, req->status_report, c->node_id);
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
        .version = req->version,
    };
    xds_req_outcome oc;
    xds_ctl_on_request(&c->p.ctl, &r, sx_monotonic_ms(), &oc);
    request_done(c, "snapshot", &oc, req->nonce, req->n_subscriptions, 0,
                 nack ? req->error_detail : NULL);
out:
    protobuf_c_message_free_unpacked(&req->base, NULL);
    return old;
}

xds_call *xds_ads_on_message(xds_call *c, const uint8_t *data, size_t len)
{
    if (c->protocol == XDS_PROTO_CONTROL)
        return on_control_request(c, data, len);
    return on_ads_request(c, data, len);
}
