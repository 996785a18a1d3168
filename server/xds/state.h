/*
 * state.h — what the state of the world (sotw.h) and Delta (delta.h) ADS protocols keep
 * alike for one stream, without any I/O: per resource type the subscriptions and the
 * push state, the group's newest resources, and the nonces.
 *
 * A protocol embeds one xds_state and keeps beside it only what it tracks of the
 * client's copy (held bits, known versions); a zeroed protocol state whose xds_state
 * was set up by xds_state_init is a new stream. This module adopts new resources, picks
 * the next type due a response in push order (SDS, CDS, EDS, LDS, RDS) and asks the
 * protocol to evaluate it, and says when the stream is in step with its group.
 *
 * Not thread-safe: the owner serialises calls (the stream's lock).
 */
#ifndef SX_XDS_STATE_H
#define SX_XDS_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "server/translate/resources.h"
#include "server/xds/nonce.h"
#include "server/xds/push.h"
#include "server/xds/subs.h"

/* What adopting a snapshot did. */
typedef enum xds_adopt {
    XDS_ADOPT_IGNORED,   /* not newer than the one held */
    XDS_ADOPT_NEW,       /* adopted */
    XDS_ADOPT_COALESCED, /* adopted, replacing a snapshot not yet fully sent */
} xds_adopt;

typedef struct xds_state {
    xds_subs subs[TR_TYPE_COUNT];
    xds_push push[TR_TYPE_COUNT];
    bool evaluated[TR_TYPE_COUNT]; /* evaluated against current since it was adopted */
    tr_resources *current;         /* newest resources of the stream's group (a reference) */
    xds_nonce nonce;
} xds_state;

/* How a protocol answers for one type: evaluate compares what the client should hold
 * of type t with what it holds and fills out when a response is due (returning true);
 * idle runs after an evaluation that sends nothing, so that a response held back for
 * it can be released. Both get the protocol's state (proto). */
typedef struct xds_state_ops {
    bool (*evaluate)(void *proto, tr_type t, int64_t now_ms, xds_response *out);
    void (*idle)(void *proto, int64_t now_ms);
} xds_state_ops;

/* Initialises s for a new stream: seed makes its nonces unique (random); names is the
 * table its subscribed names are interned in (NULL: each stream keeps its own). */
void xds_state_init(xds_state *s, uint64_t nonce_seed, xds_names *names);
/* Releases the names and the resources s holds. */
void xds_state_free(xds_state *s);

/* Offers the group's resources, published at published_ms: s takes its own reference
 * when it adopts them (a higher version than the current one), and every requested
 * type becomes due an evaluation. */
xds_adopt xds_state_adopt(xds_state *s, tr_resources *res, int64_t published_ms);

/* Evaluates the types due one (requested, something may have changed, no response
 * awaiting its answer) in push order until one responds: fills out, records it as sent
 * (awaiting its ACK) and returns true; false when nothing is to be sent now. */
bool xds_state_next(xds_state *s, int64_t now_ms, xds_response *out, const xds_state_ops *ops,
                    void *proto);

/* Whether type t is in step: not requested, or evaluated against the current resources,
 * answered, and not NACKed. */
bool xds_state_in_step(const xds_state *s, tr_type t);

/* When the oldest response still awaiting an ACK was sent, or 0 when none waits. */
int64_t xds_state_oldest_unacked_ms(const xds_state *s);

/* The snapshot version the client has fully applied: every type it requested is in
 * step and the protocol owes no response (owed: one it holds back). 0 when the stream
 * is not in step, or has requested nothing. */
long long xds_state_synced_version(const xds_state *s, bool owed);

/* A version_info (or a gateway.control.v1 version) as the snapshot version it names: a
 * positive decimal integer without leading zeros, else 0 (absent, or not one of ours). */
long long xds_state_version_of(const char *v);

#endif
