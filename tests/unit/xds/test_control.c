/*
 * test_control.c — the gateway.control.v1 stream protocol (subscriptions, nonces,
 * ACK/NACK, stale requests, coalescing) and the status report checks
 * (server/xds/control.c).
 */
#include "tests/lib/testlib.h"

#include <string.h>
#include <time.h>

#include "server/xds/control.h"

static xds_req_kind request(xds_ctl *c, const char *nonce, bool nack, bool has_subs, unsigned mask,
                            xds_req_outcome *oc)
{
    xds_ctl_request r = {
        .nonce = nonce, .is_nack = nack, .has_subscriptions = has_subs, .mask = mask};
    xds_req_outcome local;
    xds_ctl_on_request(c, &r, 100, oc ? oc : &local);
    return (oc ? oc : &local)->kind;
}

TL_TEST(test_subscription_names)
{
    unsigned mask = 0;
    sx_err err;
    sx_err_clear(&err);
    assert_int_equal(xds_ctl_parse_subscriptions(NULL, 0, &mask, &err), 0);
    assert_int_equal(mask, XDS_CTL_ALL);
    char *some[] = {"listeners", "backends", "extensions"};
    assert_int_equal(xds_ctl_parse_subscriptions(some, 3, &mask, &err), 0);
    assert_int_equal(mask, (1u << 0) | (1u << 4) | (1u << 6));
    char *all[] = {"listeners", "http_routes", "grpc_routes", "stream_routes",
                   "backends",  "secrets",     "extensions"};
    assert_int_equal(xds_ctl_parse_subscriptions(all, 7, &mask, &err), 0);
    assert_int_equal(mask, XDS_CTL_ALL);
    for (unsigned i = 0; i < XDS_CTL_PARTS; i++)
        assert_string_equal(xds_ctl_part_name(i), all[i]);
    char *bad[] = {"listeners", "clusters"};
    assert_int_equal(xds_ctl_parse_subscriptions(bad, 2, &mask, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "unknown subscription \"clusters\""));
}

TL_TEST(test_stream_protocol)
{
    xds_ctl c;
    xds_ctl_init(&c, 9);
    xds_ctl_response r;
    /* The first request is answered once a snapshot exists. */
    assert_int_equal(request(&c, "", false, true, 1u, NULL), XDS_REQ_SUBSCRIBE);
    assert_false(xds_ctl_next(&c, 100, &r));
    assert_int_equal(xds_ctl_on_snapshot(&c, 1, 50), XDS_ADOPT_NEW);
    assert_true(xds_ctl_next(&c, 100, &r));
    assert_int_equal(r.version, 1);
    assert_int_equal(r.mask, 1u);
    char n1[XDS_NONCE_LEN];
    memcpy(n1, r.nonce, sizeof(n1));
    assert_int_equal(strlen(n1), 16);
    /* ACK: nothing re-sent; the stream is in step. */
    xds_req_outcome oc;
    assert_int_equal(request(&c, n1, false, false, 0, &oc), XDS_REQ_ACK);
    assert_int_equal(oc.version, 1);
    assert_int_equal(oc.latency_ms, 50);
    assert_false(xds_ctl_next(&c, 100, &r));
    assert_int_equal(xds_ctl_synced_version(&c), 1);
    /* A new version; while it awaits its answer, two more arrive: only the newest
     * is sent next. */
    assert_int_equal(xds_ctl_on_snapshot(&c, 2, 60), XDS_ADOPT_NEW);
    assert_true(xds_ctl_next(&c, 100, &r));
    char n2[XDS_NONCE_LEN];
    memcpy(n2, r.nonce, sizeof(n2));
    assert_string_not_equal(n1, n2);
    assert_int_equal(xds_ctl_oldest_unacked_ms(&c), 100);
    assert_int_equal(xds_ctl_on_snapshot(&c, 3, 70), XDS_ADOPT_NEW);
    assert_int_equal(xds_ctl_on_snapshot(&c, 4, 80), XDS_ADOPT_COALESCED);
    assert_int_equal(xds_ctl_on_snapshot(&c, 4, 80), XDS_ADOPT_IGNORED);
    assert_false(xds_ctl_next(&c, 100, &r));
    /* A stale nonce is ignored. */
    assert_int_equal(request(&c, n1, false, true, XDS_CTL_ALL, NULL), XDS_REQ_STALE);
    assert_false(xds_ctl_next(&c, 100, &r));
    /* NACK of v2: recorded, nothing re-sent, then v4 goes out. */
    assert_int_equal(request(&c, n2, true, false, 0, &oc), XDS_REQ_NACK);
    assert_int_equal(oc.version, 2);
    assert_true(xds_ctl_next(&c, 100, &r));
    assert_int_equal(r.version, 4);
    assert_int_equal(xds_ctl_synced_version(&c), 0);
    /* The ACK may change the subscription: answered with the new parts. */
    assert_int_equal(request(&c, r.nonce, false, true, XDS_CTL_ALL, NULL), XDS_REQ_ACK);
    assert_true(xds_ctl_next(&c, 100, &r));
    assert_int_equal(r.mask, XDS_CTL_ALL);
    assert_int_equal(r.version, 4);
    /* An ACK without subscriptions keeps them. */
    assert_int_equal(request(&c, r.nonce, false, false, 0, NULL), XDS_REQ_ACK);
    assert_false(xds_ctl_next(&c, 100, &r));
    assert_int_equal(xds_ctl_synced_version(&c), 4);
    /* An empty nonce (a reconnect) is always answered. */
    assert_int_equal(request(&c, "", false, false, 0, NULL), XDS_REQ_SUBSCRIBE);
    assert_true(xds_ctl_next(&c, 100, &r));
    assert_int_equal(r.version, 4);
    assert_int_equal(r.mask, XDS_CTL_ALL);
}

static Gateway__Control__V1__DataplaneStatusReport report(const char *node, const char *version)
{
    Gateway__Control__V1__DataplaneStatusReport r =
        GATEWAY__CONTROL__V1__DATAPLANE_STATUS_REPORT__INIT;
    r.node_id = (char *)node;
    r.version = (char *)version;
    r.ready = true;
    r.message = "ok";
    return r;
}

/* A first request carrying version (the client reconnected holding it). */
static void request_holding(xds_ctl *c, const char *version)
{
    xds_ctl_request r = {.nonce = "", .version = version};
    xds_req_outcome oc;
    xds_ctl_on_request(c, &r, 100, &oc);
    assert_int_equal(oc.kind, XDS_REQ_SUBSCRIBE);
}

TL_TEST(test_reconnect_holding_version)
{
    xds_ctl_response r;
    /* Holding the version the stream is served: nothing is sent, and it is in step. */
    xds_ctl c;
    xds_ctl_init(&c, 3);
    assert_int_equal(xds_ctl_on_snapshot(&c, 5, 50), XDS_ADOPT_NEW);
    request_holding(&c, "5");
    assert_false(xds_ctl_next(&c, 100, &r));
    assert_int_equal(xds_ctl_synced_version(&c), 5);
    /* The next version is sent, and ACKed as usual. */
    assert_int_equal(xds_ctl_on_snapshot(&c, 6, 60), XDS_ADOPT_NEW);
    assert_true(xds_ctl_next(&c, 100, &r));
    assert_int_equal(r.version, 6);
    assert_int_equal(request(&c, r.nonce, false, false, 0, NULL), XDS_REQ_ACK);
    assert_int_equal(xds_ctl_synced_version(&c), 6);

    /* The claim is checked when the stream has a snapshot (a replica starting up). */
    xds_ctl_init(&c, 4);
    request_holding(&c, "5");
    assert_false(xds_ctl_next(&c, 100, &r));
    assert_int_equal(xds_ctl_on_snapshot(&c, 5, 50), XDS_ADOPT_NEW);
    assert_false(xds_ctl_next(&c, 100, &r));
    assert_int_equal(xds_ctl_synced_version(&c), 5);

    /* Another version (older, or a rollout holding the node on another one), or none:
     * sent. */
    const char *others[] = {"4", "6", "", "05x", NULL};
    for (int i = 0; others[i]; i++) {
        xds_ctl_init(&c, 5);
        assert_int_equal(xds_ctl_on_snapshot(&c, 5, 50), XDS_ADOPT_NEW);
        request_holding(&c, others[i]);
        assert_true(xds_ctl_next(&c, 100, &r));
        assert_int_equal(r.version, 5);
    }

    /* Only the stream's first request is taken at its word. */
    xds_ctl_init(&c, 6);
    assert_int_equal(xds_ctl_on_snapshot(&c, 5, 50), XDS_ADOPT_NEW);
    request_holding(&c, "4");
    assert_true(xds_ctl_next(&c, 100, &r));
    request_holding(&c, "5");
    assert_true(xds_ctl_next(&c, 100, &r));
}

TL_TEST(test_report_checks)
{
    int64_t now = 1800000000000LL;
    sx_err err;
    sx_err_clear(&err);
    Gateway__Control__V1__DataplaneStatusReport r = report("node-1", "12");
    assert_int_equal(xds_ctl_check_report(&r, now, &err), 0);
    r.version = "";
    assert_int_equal(xds_ctl_check_report(&r, now, &err), 0);

    Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    r.observed_at = &ts;
    ts.seconds = now / 1000 - 10;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), 0);
    ts.seconds = now / 1000 + 3600;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "future"));
    ts.seconds = now / 1000 - 3 * 86400;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "day old"));
    ts.seconds = INT64_MIN;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    ts.seconds = INT64_MAX;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    ts.seconds = now / 1000;
    ts.nanos = -1;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "nanos"));
    r.observed_at = NULL;

    r = report("", "1");
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    assert_string_equal(err.message, "node_id is required");
    r = report("node-1", "v1.2");
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "not a snapshot version"));
    r = report("bad\nnode", "1");
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    char big[XDS_REPORT_MESSAGE_MAX + 2];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    r = report("node-1", "1");
    r.message = big;
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);
    char longid[XDS_REPORT_NODE_ID_MAX + 2];
    memset(longid, 'n', sizeof(longid) - 1);
    longid[sizeof(longid) - 1] = '\0';
    r = report(longid, "1");
    assert_int_equal(xds_ctl_check_report(&r, now, &err), SX_EINVAL);

    assert_string_equal(xds_reject_name(XDS_REJECT_SHUTDOWN), "shutdown");
    assert_string_equal(xds_reject_name(XDS_REJECT_INVALID_REQUEST), "invalid_request");
    assert_string_equal(xds_reject_name(XDS_REJECT_UNKNOWN_NODE), "unknown_node");
    assert_string_equal(xds_reject_name(XDS_REJECT_OTHER), "other");
}

TL_MAIN()
