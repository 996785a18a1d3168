/*
 * delta.h — the incremental (Delta) ADS protocol of one stream, without any I/O.
 *
 * Same shape as sotw.h: requests and the group's newest resources go in, the next
 * response comes out when the stream can send. The rules (xds_protocol.rst,
 * "Incremental xDS"):
 *
 *   - the server tracks, per type, which version of each resource the client holds
 *     (per-resource versions are the resources' content hashes); a response carries
 *     the subscribed resources the client does not hold at their current version,
 *     and in removed_resources the subscribed names that no longer exist (or never
 *     did: that is how a client learns at once that a name does not exist);
 *   - the first request of a type may carry initial_resource_versions (a reconnect):
 *     resources the client already holds at those versions are not sent again;
 *   - subscribe/unsubscribe are applied whatever the nonce; the nonce only matches an
 *     ACK or NACK to its response (a stale one is not counted as either);
 *   - naming a resource in resource_names_subscribe again makes the server send it
 *     again (the client may have forgotten it);
 *   - wildcard: "*" subscribes to every resource of the type; for LDS/CDS a first
 *     request without any name is the legacy wildcard, which lasts until "*" is
 *     unsubscribed; unsubscribing a name while on the wildcard is answered with the
 *     resource (it is in the wildcard) or its removal;
 *   - the first request of each type is always answered, if need be with an empty
 *     response; later ones only when something is to be sent; NACKed resources are
 *     not re-sent (last good stays in force on the client) until they change again;
 *   - one response per type awaits its ACK at a time; push order SDS, CDS, EDS, LDS,
 *     RDS; a changed cluster is followed by its endpoints.
 *
 * Not thread-safe: the owner serialises calls (the stream's lock).
 */
#ifndef SX_XDS_DELTA_H
#define SX_XDS_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/translate/resources.h"
#include "server/xds/nonce.h"
#include "server/xds/push.h"
#include "server/xds/sotw.h"
#include "server/xds/state.h"
#include "server/xds/subs.h"

/* What the client holds of one resource name. */
typedef struct xds_known {
    char *name;       /* owned */
    char version[17]; /* resource version; "" = told it does not exist; "?" = must report */
} xds_known;

typedef struct xds_delta_type {
    xds_known *known; /* sorted by name */
    size_t nknown;
    size_t capknown;
} xds_delta_type;

typedef struct xds_delta {
    xds_state st; /* subscriptions, push state, current resources, nonces */
    xds_delta_type t[TR_TYPE_COUNT];
    /* Clusters gone from the snapshot whose removal waits until the client has ACKed
     * the listeners and routes of the current snapshot. */
    bool cds_deferred;
} xds_delta;

/* A decoded DeltaDiscoveryRequest; everything borrowed for the call. */
typedef struct xds_delta_request {
    tr_type type;
    const char *nonce; /* response_nonce; "" when absent */
    bool is_nack;      /* error_detail present */
    char *const *subscribe;
    size_t nsubscribe;
    char *const *unsubscribe;
    size_t nunsubscribe;
    char *const *initial_names;    /* initial_resource_versions keys ... */
    char *const *initial_versions; /* ... and values */
    size_t ninitial;
} xds_delta_request;

/* A new stream is a zeroed xds_delta whose st was set up by xds_state_init. */
void xds_delta_free(xds_delta *d);

void xds_delta_on_request(xds_delta *d, const xds_delta_request *req, int64_t now_ms,
                          xds_req_outcome *out);
/* As xds_sotw_next and xds_sotw_synced_version (no removal of clusters owed). */
bool xds_delta_next(xds_delta *d, int64_t now_ms, xds_response *out);
long long xds_delta_synced_version(const xds_delta *d);

#endif
