/*
 * control.h — the gateway.control.v1 protocol of one StreamConfiguration stream, and
 * the checks on a DataplaneStatusReport, without any I/O.
 *
 * The protocol (proto/gateway/control/v1/control.proto and its protocol page): the
 * data plane subscribes with a DiscoveryRequest{node_id, cluster, subscriptions}; the
 * control plane answers with DiscoveryResponse{version, nonce, snapshot} and pushes a
 * new one for every new snapshot version of the node's group; the data plane answers
 * every response with result_status ACK, or NACK with error_detail, echoing its nonce.
 *
 * Rules kept here, as on the ADS streams:
 *   - a fresh nonce per response; version is the snapshot version in decimal;
 *   - a request with an empty nonce (the first one, or a reconnect carrying the
 *     version it got from another replica) is answered, unless it is the stream's
 *     first and its version is the one the stream is served (the group's current
 *     snapshot, or the version a rollout holds the node on): that client holds it
 *     already, and is sent nothing until a newer version comes (checked when the
 *     stream next evaluates, against the version it then has); one whose nonce is not
 *     the latest response's is stale and ignored;
 *   - ACK/NACK match the response awaiting an answer; nothing is re-sent after either;
 *     a new version waits for the answer to the previous one, and only the newest
 *     version is then sent (coalescing);
 *   - subscriptions select parts of the ConfigSnapshot: "listeners", "http_routes",
 *     "grpc_routes", "stream_routes", "backends", "secrets", "extensions" (the
 *     ConfigSnapshot field names); an empty list means all of them. id and
 *     generated_at are always sent. The first request (empty nonce) sets them; a later
 *     request changes them only when it carries a non-empty list, so ACKs need not
 *     repeat them. An unknown name is an invalid request.
 *
 * Not thread-safe: the owner serialises calls (the stream's lock).
 */
#ifndef SX_XDS_CONTROL_H
#define SX_XDS_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/control/v1/control.pb-c.h"
#include "server/base/err.h"
#include "server/xds/nonce.h"
#include "server/xds/push.h"
#include "server/xds/sotw.h"

/* Subscribable parts of a ConfigSnapshot; bit i is ConfigSnapshot field i + 3. */
#define XDS_CTL_PARTS       7
#define XDS_CTL_ALL         ((1u << XDS_CTL_PARTS) - 1)
#define XDS_CTL_FIRST_FIELD 3

/* Name of part i ("listeners", ...), i < XDS_CTL_PARTS. */
const char *xds_ctl_part_name(unsigned i);

/* Parses a subscriptions list into a mask (XDS_CTL_ALL when empty). Returns 0, or
 * SX_EINVAL naming the unknown entry in err. */
int xds_ctl_parse_subscriptions(char *const *names, size_t n, unsigned *mask,
                                sx_err *err) SX_MUSTCHECK;

typedef struct xds_ctl {
    unsigned mask;      /* subscribed parts */
    long long current;  /* newest snapshot version of the group; 0 before any */
    unsigned sent_mask; /* parts the last response carried */
    long long claimed;  /* version the first request said the client holds; 0: none or
                           already checked */
    bool requested;
    xds_push push; /* push.sent_version: version of the last response */
    xds_nonce nonce;
} xds_ctl;

/* A decoded gateway.control.v1.DiscoveryRequest; borrowed for the call. */
typedef struct xds_ctl_request {
    const char *nonce;      /* "" when absent */
    bool is_nack;           /* result_status NACK, or error_detail set */
    bool has_subscriptions; /* the list was not empty */
    unsigned mask;          /* parsed subscriptions when has_subscriptions */
    const char *version;    /* the version the client holds; NULL or "" when none */
} xds_ctl_request;

typedef struct xds_ctl_response {
    long long version;
    unsigned mask;
    char nonce[XDS_NONCE_LEN];
} xds_ctl_response;

void xds_ctl_init(xds_ctl *c, uint64_t nonce_seed);
void xds_ctl_on_request(xds_ctl *c, const xds_ctl_request *req, int64_t now_ms,
                        xds_req_outcome *out);
/* A new snapshot version of the group (ignored unless newer). */
xds_adopt xds_ctl_on_snapshot(xds_ctl *c, long long version, int64_t published_ms);
bool xds_ctl_next(xds_ctl *c, int64_t now_ms, xds_ctl_response *out);
int64_t xds_ctl_oldest_unacked_ms(const xds_ctl *c);
long long xds_ctl_synced_version(const xds_ctl *c);

/* ------------------------------------------------------------------ status reports */

/* Why a status report was refused: the reason label of
 * sextant_xds_status_report_rejections_total. */
typedef enum xds_reject {
    XDS_REJECT_SHUTDOWN,        /* the server is shutting down */
    XDS_REJECT_INVALID_REQUEST, /* undecodable or failing xds_ctl_check_report */
    XDS_REJECT_UNKNOWN_NODE,    /* no stream of this node is known here */
    XDS_REJECT_OTHER,
    XDS_REJECT_COUNT,
} xds_reject;

const char *xds_reject_name(xds_reject r);

/* Bounds a report must keep. */
#define XDS_REPORT_NODE_ID_MAX 256
#define XDS_REPORT_MESSAGE_MAX 4096
#define XDS_REPORT_FUTURE_MS   (5 * 60 * 1000LL)       /* clock skew allowed */
#define XDS_REPORT_PAST_MS     (24 * 60 * 60 * 1000LL) /* older reports are refused */

/* Checks a report on its own: node_id present, printable and at most
 * XDS_REPORT_NODE_ID_MAX bytes; version empty or a decimal snapshot version; message
 * at most XDS_REPORT_MESSAGE_MAX bytes; observed_at, when present, a valid timestamp
 * no more than XDS_REPORT_FUTURE_MS ahead of now_unix_ms and no more than
 * XDS_REPORT_PAST_MS behind it. Returns 0 or SX_EINVAL with the reason in err. */
int xds_ctl_check_report(const Gateway__Control__V1__DataplaneStatusReport *r, int64_t now_unix_ms,
                         sx_err *err) SX_MUSTCHECK;

#endif
