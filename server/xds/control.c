/*
 * control.c — gateway.control.v1 stream protocol and status report checks (see
 * control.h).
 *
 * The stream state is that of one SotW type with a single resource, the snapshot:
 * a response is due when an answer is owed, the group has a newer version than the
 * one sent, or the subscribed parts changed.
 */
#include "server/xds/control.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const part_names[XDS_CTL_PARTS] = {
    "listeners", "http_routes", "grpc_routes", "stream_routes", "backends", "secrets", "extensions",
};

const char *xds_ctl_part_name(unsigned i)
{
    return i < XDS_CTL_PARTS ? part_names[i] : "";
}

int xds_ctl_parse_subscriptions(char *const *names, size_t n, unsigned *mask, sx_err *err)
{
    unsigned m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned bit = 0;
        for (unsigned p = 0; p < XDS_CTL_PARTS; p++)
            if (strcmp(names[i], part_names[p]) == 0)
                bit = 1u << p;
        if (bit == 0) {
            int rc = sx_err_set(err, SX_EINVAL, "unknown subscription \"%.64s\"", names[i]);
            sx_err_detail(err, "Subscriptions name parts of the ConfigSnapshot: listeners, "
                               "http_routes, grpc_routes, stream_routes, backends, secrets, "
                               "extensions; an empty list subscribes to all of them.");
            return rc;
        }
        m |= bit;
    }
    *mask = n == 0 ? XDS_CTL_ALL : m;
    return 0;
}

void xds_ctl_init(xds_ctl *c, uint64_t nonce_seed)
{
    memset(c, 0, sizeof(*c));
    c->mask = XDS_CTL_ALL;
    xds_nonce_init(&c->nonce, nonce_seed);
}

void xds_ctl_on_request(xds_ctl *c, const xds_ctl_request *req, int64_t now_ms,
                        xds_req_outcome *out)
{
    *out = (xds_req_outcome){.kind = XDS_REQ_SUBSCRIBE};
    bool restart = req->nonce[0] == '\0' || !c->push.has_sent;
    if (!restart && !xds_nonce_equals(c->push.sent_nonce, req->nonce)) {
        out->kind = XDS_REQ_STALE;
        return;
    }
    if (restart) {
        c->claimed = c->requested ? 0 : xds_state_version_of(req->version);
        c->requested = true;
        c->push.awaiting = false;
        c->push.must_respond = true;
        c->mask = req->has_subscriptions ? req->mask : XDS_CTL_ALL;
        xds_push_mark_dirty(&c->push, now_ms);
        return;
    }
    if (c->push.awaiting) {
        xds_push_answer(&c->push, req->is_nack, now_ms, out);
    }
    if (req->has_subscriptions && req->mask != c->mask) {
        c->mask = req->mask;
        xds_push_mark_dirty(&c->push, now_ms);
    }
}

xds_adopt xds_ctl_on_snapshot(xds_ctl *c, long long version, int64_t published_ms)
{
    if (version == c->current)
        return XDS_ADOPT_IGNORED;
    c->current = version;
    if (!c->requested)
        return XDS_ADOPT_NEW;
    return xds_push_offer(&c->push, published_ms) ? XDS_ADOPT_COALESCED : XDS_ADOPT_NEW;
}

bool xds_ctl_next(xds_ctl *c, int64_t now_ms, xds_ctl_response *out)
{
    memset(out, 0, sizeof(*out));
    if (!c->requested || !c->push.dirty || c->push.awaiting || c->current == 0)
        return false;
    if (c->claimed != 0) {
        /* The first request's version is what the stream is served: the client holds it
         * (with the parts it subscribes to) and is owed nothing. */
        if (c->claimed == c->current) {
            c->push.must_respond = false;
            c->push.sent_version = c->current;
            c->sent_mask = c->mask;
        }
        c->claimed = 0;
    }
    bool respond =
        c->push.must_respond || c->current != c->push.sent_version || c->mask != c->sent_mask;
    int64_t since = xds_push_take(&c->push, now_ms);
    if (!respond)
        return false;
    xds_push_sent(&c->push, &c->nonce, c->current, now_ms, since, out->nonce);
    c->sent_mask = c->mask;
    out->version = c->current;
    out->mask = c->mask;
    return true;
}

int64_t xds_ctl_oldest_unacked_ms(const xds_ctl *c)
{
    return xds_push_oldest(0, &c->push);
}

long long xds_ctl_synced_version(const xds_ctl *c)
{
    if (!c->requested || c->current == 0 || c->push.dirty || c->push.awaiting || c->push.nacked ||
        c->push.sent_version != c->current)
        return 0;
    return c->current;
}

/* ------------------------------------------------------------------ status reports */

static const char *const reject_names[XDS_REJECT_COUNT] = {
    "shutdown",
    "invalid_request",
    "unknown_node",
    "other",
};

const char *xds_reject_name(xds_reject r)
{
    return r < XDS_REJECT_COUNT ? reject_names[r] : "other";
}

int xds_ctl_check_report(const Gateway__Control__V1__DataplaneStatusReport *r, int64_t now_unix_ms,
                         sx_err *err)
{
    const char *id = r->node_id ? r->node_id : "";
    size_t idlen = strlen(id);
    if (idlen == 0)
        return sx_err_set(err, SX_EINVAL, "node_id is required");
    if (idlen > XDS_REPORT_NODE_ID_MAX)
        return sx_err_set(err, SX_EINVAL, "node_id is longer than %d bytes",
                          XDS_REPORT_NODE_ID_MAX);
    for (const char *p = id; *p; p++)
        if (!isprint((unsigned char)*p) && !((unsigned char)*p & 0x80))
            return sx_err_set(err, SX_EINVAL, "node_id contains a control character");

    const char *v = r->version ? r->version : "";
    size_t vlen = strlen(v);
    bool digits = vlen <= 18;
    for (const char *p = v; digits && *p; p++)
        digits = *p >= '0' && *p <= '9';
    if (!digits)
        return sx_err_set(err, SX_EINVAL, "version \"%.32s\" is not a snapshot version", v);

    if (r->message && strlen(r->message) > XDS_REPORT_MESSAGE_MAX)
        return sx_err_set(err, SX_EINVAL, "message is longer than %d bytes",
                          XDS_REPORT_MESSAGE_MAX);

    if (r->observed_at) {
        const Google__Protobuf__Timestamp *ts = r->observed_at;
        if (ts->nanos < 0 || ts->nanos > 999999999)
            return sx_err_set(err, SX_EINVAL, "observed_at has invalid nanos %d", ts->nanos);
        /* Bound the seconds first so that the millisecond sum cannot overflow. */
        int64_t now_s = now_unix_ms / 1000;
        if (ts->seconds < now_s - XDS_REPORT_PAST_MS / 1000)
            return sx_err_set(err, SX_EINVAL, "observed_at is more than a day old");
        if (ts->seconds > now_s + XDS_REPORT_FUTURE_MS / 1000 + 1 ||
            (int64_t)ts->seconds * 1000 + ts->nanos / 1000000 > now_unix_ms + XDS_REPORT_FUTURE_MS)
            return sx_err_set(err, SX_EINVAL, "observed_at is in the future");
    }
    return 0;
}
