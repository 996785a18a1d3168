/*
 * push.h — what a stream's protocol state tracks per resource type about pushing:
 * whether something may have to be sent, the response awaiting its answer, and the
 * answer. Shared by the state of the world (sotw.c), Delta (delta.c) and
 * gateway.control.v1 (control.c) protocols, which differ in what they send, not in how
 * a response waits for its ACK.
 *
 * A type is dirty when something may have changed for it (a request, a snapshot);
 * dirty_ms is when it first became so since the last send, which is what the
 * push-to-ACK latency is measured from. At most one response per type awaits an
 * answer; changes that arrive meanwhile stay dirty, coalesced, until the client
 * answers. Header-only: these run on the push path of every stream.
 */
#ifndef SX_XDS_PUSH_H
#define SX_XDS_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/translate/resources.h"
#include "server/xds/nonce.h"

/* What a request turned out to be. */
typedef enum xds_req_kind {
    XDS_REQ_STALE,     /* nonce of an older response: ignored */
    XDS_REQ_SUBSCRIBE, /* a first request, a reconnect, or a subscription change */
    XDS_REQ_ACK,       /* accepted the response awaiting an answer */
    XDS_REQ_NACK,      /* rejected it (error_detail) */
} xds_req_kind;

typedef struct xds_req_outcome {
    xds_req_kind kind;
    long long version;  /* ACK/NACK: snapshot version of the answered response */
    int64_t latency_ms; /* ACK/NACK: from the change becoming known to the answer */
} xds_req_outcome;

/* Push state of one type of one stream. */
typedef struct xds_push {
    long long sent_version; /* snapshot version of the last response, 0 before */
    uint64_t sent_nonce;    /* its nonce (valid when has_sent) */
    int64_t sent_ms;        /* when it was produced */
    int64_t trigger_ms;     /* when the change it carries became known */
    int64_t dirty_ms;       /* when the type first became dirty since the last send */
    bool has_sent;          /* a response of this type went out on this stream */
    bool awaiting;          /* that response awaits its ACK or NACK */
    bool dirty;             /* something may have to be sent: evaluate on next() */
    bool must_respond;      /* answer even if nothing changed */
    bool push_pending;      /* dirty because of a snapshot not evaluated yet */
    bool nacked;            /* the last answered response was NACKed */
} xds_push;

/* Something may have changed at when_ms. */
static inline void xds_push_mark_dirty(xds_push *p, int64_t when_ms)
{
    if (p->dirty_ms == 0 || when_ms < p->dirty_ms)
        p->dirty_ms = when_ms;
    p->dirty = true;
}

/* A new snapshot, published at published_ms, for a requested type. Returns whether it
 * replaced one that was not evaluated yet (coalesced). */
static inline bool xds_push_offer(xds_push *p, int64_t published_ms)
{
    bool coalesced = p->push_pending;
    p->push_pending = true;
    xds_push_mark_dirty(p, published_ms);
    return coalesced;
}

/* The client answered the response awaiting an answer (is_nack: with error_detail) at
 * now_ms; out says which, for which version, how long after the change. */
static inline void xds_push_answer(xds_push *p, bool is_nack, int64_t now_ms, xds_req_outcome *out)
{
    p->awaiting = false;
    p->nacked = is_nack;
    out->kind = is_nack ? XDS_REQ_NACK : XDS_REQ_ACK;
    out->version = p->sent_version;
    out->latency_ms = now_ms - p->trigger_ms;
}

/* The type was evaluated at now_ms: what was pending is taken. Returns when the change
 * it carries became known. */
static inline int64_t xds_push_take(xds_push *p, int64_t now_ms)
{
    int64_t since = p->dirty_ms ? p->dirty_ms : now_ms;
    p->dirty = false;
    p->dirty_ms = 0;
    p->push_pending = false;
    p->must_respond = false;
    return since;
}

/* A response of snapshot version, carrying the change known since since, goes out at
 * now_ms with the stream's next nonce (written to nonce_out); it awaits its answer. */
static inline void xds_push_sent(xds_push *p, xds_nonce *n, long long version, int64_t now_ms,
                                 int64_t since, char nonce_out[XDS_NONCE_LEN])
{
    p->has_sent = true;
    p->awaiting = true;
    p->sent_nonce = xds_nonce_next(n);
    p->sent_version = version;
    p->sent_ms = now_ms;
    p->trigger_ms = since;
    xds_nonce_format(p->sent_nonce, nonce_out);
}

/* The earlier of oldest (0: none) and when p's awaiting response was sent. */
static inline int64_t xds_push_oldest(int64_t oldest, const xds_push *p)
{
    return p->awaiting && (oldest == 0 || p->sent_ms < oldest) ? p->sent_ms : oldest;
}

/* One response of the state of the world (sotw.h) or Delta (delta.h) protocol: the
 * resources (indices into res->items[type], ascending, owned) and, per protocol, what
 * else it carries. res is the stream's current resources, valid until the next call
 * into the state. Release with xds_response_clear. */
typedef struct xds_response {
    tr_type type;
    tr_resources *res;
    uint32_t *idx;
    size_t n;
    const tr_resource *kept; /* SotW, CDS: removed clusters sent as well (borrowed) */
    size_t nkept;
    char **removed; /* Delta: names of removed resources (owned) */
    size_t nremoved;
    long long version; /* snapshot version (SotW: version_info is its decimal text) */
    char nonce[XDS_NONCE_LEN];
} xds_response;

static inline void xds_response_clear(xds_response *r)
{
    sx_free(r->idx);
    for (size_t i = 0; i < r->nremoved; i++)
        sx_free(r->removed[i]);
    sx_free(r->removed);
    memset(r, 0, sizeof(*r));
}

#endif
