/*
 * sotw.h — the state-of-the-world ADS protocol of one stream, without any I/O.
 *
 * The stream's gRPC code feeds it decoded requests (xds_sotw_on_request) and the
 * group's newest resources (xds_state_adopt on its st), and asks it for the next response
 * to send whenever the stream has no send in flight (xds_sotw_next). Everything Envoy's
 * protocol asks of a server lives here, so it is tested without gRPC:
 *
 *   - every response gets a fresh nonce; version_info is the snapshot version;
 *   - a request whose nonce is not the latest one sent for its type is stale and is
 *     ignored entirely; a request with an empty nonce (a new stream, or a client that
 *     reconnects carrying a version from another server) is answered, and makes the
 *     server forget what the client held of that type — except that the first request
 *     of a type on a stream whose version_info is the version the stream is served
 *     (its group's current snapshot, or the version a rollout holds it on) is taken at
 *     its word: the client holds the subscribed resources of that version, and nothing
 *     is sent until something changes (what avoids re-pushing a whole fleet when a
 *     replica dies and its proxies reconnect elsewhere). The claim is checked at the
 *     type's first evaluation, against the snapshot the stream then has; a later
 *     request that changes the names before that drops it;
 *   - ACK (no error_detail) and NACK (error_detail) are matched by nonce; after a NACK
 *     nothing is re-sent: the client keeps its last good configuration and the next
 *     change is sent as usual;
 *   - a type has at most one response awaiting its ACK; changes that arrive meanwhile
 *     are coalesced into the next response (only the newest snapshot is sent);
 *   - subscriptions follow subs.h (named, "*", legacy wildcard for LDS/CDS, [] after
 *     named = nothing); names subscribed before they exist are sent when they appear;
 *   - LDS and CDS responses carry every subscribed resource (absence deletes); other
 *     types carry only the subscribed resources that changed or that the client does
 *     not hold yet; nothing is sent when nothing changed, so an ACK never triggers a
 *     resend; a changed subscription to LDS/CDS is always answered so that the client
 *     learns at once which names do not exist;
 *   - types are pushed in make-before-break order SDS, CDS, EDS, LDS, RDS (the order of
 *     tr_type), and a cluster that changed has its endpoints re-sent right after it
 *     (Envoy finishes warming an updated cluster only on a new ClusterLoadAssignment);
 *     a cluster that is gone stays in the CDS responses until the client has ACKed the
 *     listeners and routes of the new snapshot (which may still have referred to it),
 *     then a last CDS response drops it — never when it NACKed them.
 *
 * What the client holds is tracked per type as a reference to the resources it was
 * last evaluated against and one bit per resource, so a stream costs a few hundred
 * bytes plus its subscribed names (a pointer each when the server interns them, see
 * subs.h), whatever the snapshot size.
 *
 * Not thread-safe: the owner serialises calls (the stream's lock).
 */
#ifndef SX_XDS_SOTW_H
#define SX_XDS_SOTW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/translate/resources.h"
#include "server/xds/nonce.h"
#include "server/xds/push.h"
#include "server/xds/state.h"
#include "server/xds/subs.h"

/* Per-type state; see sotw.c for how the fields move. */
typedef struct xds_sotw_type {
    tr_resources *held_res; /* resources held_bits refers to (one reference), or NULL */
    uint64_t *held_bits;    /* bit i: the client holds held_res->items[type][i] */
    long long claimed;      /* version_info of the type's first request on this stream,
                               checked at its first evaluation; 0: none */
} xds_sotw_type;

typedef struct xds_sotw {
    xds_state st; /* subscriptions, push state, current resources, nonces */
    xds_sotw_type t[TR_TYPE_COUNT];
    /* Clusters gone from the current snapshot that CDS responses still carry until the
     * client has accepted the listeners and routes of the current snapshot (owned
     * copies, sorted by name): a route must never point at a deleted cluster. */
    tr_resource *kept;
    size_t nkept;
} xds_sotw;

/* A decoded DiscoveryRequest; everything borrowed for the call. */
typedef struct xds_sotw_request {
    tr_type type;
    const char *nonce;        /* response_nonce; "" when absent */
    const char *version_info; /* version_info; NULL or "" when absent */
    char *const *names;       /* resource_names */
    size_t name_count;
    bool is_nack; /* error_detail is present */
} xds_sotw_request;

/* A new stream is a zeroed xds_sotw whose st was set up by xds_state_init. Releases
 * every reference and name s holds; s may then be freed. */
void xds_sotw_free(xds_sotw *s);

/* Applies a request at time now_ms and says what it was (see the rules above). */
void xds_sotw_on_request(xds_sotw *s, const xds_sotw_request *req, int64_t now_ms,
                         xds_req_outcome *out);

/* Produces the next response to send, if any, and records it as sent (awaiting its
 * ACK). Returns false when nothing is to be sent now. New resources are offered with
 * xds_state_adopt(&s->st, ...). */
bool xds_sotw_next(xds_sotw *s, int64_t now_ms, xds_response *out);

/* The snapshot version the client has fully applied (xds_state_synced_version): every
 * type it requested was ACKed (or did not change) at the current version, with no NACK
 * outstanding and no CDS response owed. */
long long xds_sotw_synced_version(const xds_sotw *s);

#endif
