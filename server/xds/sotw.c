/*
 * sotw.c — state-of-the-world ADS protocol of one stream (see sotw.h).
 *
 * Per type, the state answers one question: does the client need a response, and
 * with what? "dirty" says something may have changed (a request, a snapshot);
 * next() evaluates dirty types in push order, compares what the client should hold
 * (the subscribed resources of the current snapshot) with what it holds (held_res and
 * held_bits), and produces a response when they differ or an answer is owed
 * (must_respond). After every evaluation the client is taken to hold exactly the
 * subscribed resources of the current snapshot, so held_res always moves forward and
 * old snapshots are released as soon as each type has been evaluated against a newer
 * one. A type awaiting an ACK is not evaluated: its changes wait, coalesced, until
 * the client answers.
 */
#include "server/xds/sotw.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"

#define WORDS(n) (((n) + 63) / 64)

static bool full_state(tr_type t)
{
    return t == TR_LDS || t == TR_CDS;
}

static bool bit_get(const uint64_t *b, size_t i)
{
    return b != NULL && ((b[i >> 6] >> (i & 63)) & 1) != 0;
}

static void bit_set(uint64_t *b, size_t i)
{
    b[i >> 6] |= UINT64_C(1) << (i & 63);
}

static void bit_clear(uint64_t *b, size_t i)
{
    b[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}

/* The client holds nothing of this type any more (a reconnect or a restart). */
static void forget_all(xds_sotw_type *st)
{
    sx_free(st->held_bits);
    st->held_bits = NULL;
    tr_resources_unref(st->held_res);
    st->held_res = NULL;
}

/* Drops what the client held of names it no longer subscribes to, so that they are
 * sent again if it subscribes to them again. */
static void forget_unwanted(xds_sotw_type *st, const xds_subs *subs, tr_type t)
{
    if (st->held_res == NULL || st->held_bits == NULL)
        return;
    size_t n = st->held_res->count[t];
    for (size_t j = 0; j < n; j++)
        if (bit_get(st->held_bits, j) && !xds_subs_wants(subs, st->held_res->items[t][j].name))
            bit_clear(st->held_bits, j);
}

/* Clusters that changed are followed by their endpoints, even unchanged ones: Envoy
 * finishes warming an updated cluster only when a ClusterLoadAssignment arrives.
 * clusters are ascending indices, so their names and the held endpoints (both in
 * name order) are walked together. */
static void refresh_endpoints(xds_sotw *s, const tr_resources *cur, const uint32_t *clusters,
                              size_t n, int64_t now_ms)
{
    xds_sotw_type *e = &s->t[TR_EDS];
    if (e->held_res == NULL || e->held_bits == NULL)
        return;
    const tr_resource *held = e->held_res->items[TR_EDS];
    size_t nheld = e->held_res->count[TR_EDS], j = 0;
    for (size_t k = 0; k < n && j < nheld; k++) {
        const char *name = cur->items[TR_CDS][clusters[k]].name;
        int c = 1;
        while (j < nheld && (c = strcmp(held[j].name, name)) < 0)
            j++;
        if (j < nheld && c == 0 && bit_get(e->held_bits, j)) {
            bit_clear(e->held_bits, j);
            xds_push_mark_dirty(&s->st.push[TR_EDS], now_ms);
        }
    }
}

/* Whether the client runs the listeners and routes of the current snapshot: every
 * requested LDS/RDS type was evaluated against it, answered, and not NACKed. */
static bool routes_settled(const xds_sotw *s)
{
    return xds_state_in_step(&s->st, TR_LDS) && xds_state_in_step(&s->st, TR_RDS);
}

static int cmp_resource(const void *a, const void *b)
{
    return strcmp(((const tr_resource *)a)->name, ((const tr_resource *)b)->name);
}

/* Once the routes are settled, a CDS response without the kept clusters is owed. */
static void release_kept(void *proto, int64_t now_ms)
{
    xds_sotw *s = proto;
    if (s->nkept == 0 || !routes_settled(s))
        return;
    s->st.push[TR_CDS].must_respond = true;
    xds_push_mark_dirty(&s->st.push[TR_CDS], now_ms);
}

/* k becomes an owned copy of r (freed by tr_resource_items_free with its array). */
static void copy_resource(tr_resource *k, const tr_resource *r)
{
    *k = *r;
    k->name = sx_strdup(r->name);
    k->bytes = sx_malloc(r->len ? r->len : 1);
    memcpy(k->bytes, r->bytes, r->len);
}

/* The clusters a CDS response keeps: those the client held that are gone from cur
 * (gone[0..ngone) of held) and those kept before that are still gone — none once the
 * routes are settled. Replaces s->kept; returns whether the kept names changed. */
static bool update_kept(xds_sotw *s, const tr_resources *cur, const tr_resource *held,
                        const uint32_t *gone, size_t ngone)
{
    bool settled = routes_settled(s);
    size_t cap = settled ? 0 : ngone + s->nkept;
    tr_resource *v = cap ? sx_calloc(cap, sizeof(*v)) : NULL;
    size_t n = 0;
    for (size_t i = 0; !settled && i < ngone; i++) {
        const tr_resource *r = &held[gone[i]];
        copy_resource(&v[n++], r);
    }
    for (size_t i = 0; !settled && i < s->nkept; i++) {
        const tr_resource *r = &s->kept[i];
        bool skip = false;
        for (size_t j = 0; j < cur->count[TR_CDS] && !skip; j++)
            skip = strcmp(cur->items[TR_CDS][j].name, r->name) == 0;
        for (size_t j = 0; j < n && !skip; j++)
            skip = strcmp(v[j].name, r->name) == 0;
        if (skip)
            continue;
        copy_resource(&v[n++], r);
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_resource);
    bool changed = n != s->nkept;
    for (size_t i = 0; !changed && i < n; i++)
        changed = strcmp(v[i].name, s->kept[i].name) != 0;
    tr_resource_items_free(s->kept, s->nkept);
    if (n == 0) {
        sx_free(v);
        v = NULL;
    }
    s->kept = v;
    s->nkept = n;
    return changed;
}

/* Compares what the client should hold of type t with what it holds; fills out when a
 * response is due and returns true. Either way the client is then taken to hold the
 * subscribed resources of the current snapshot.
 *
 * The current resources, the subscribed names and the held resources are all sorted
 * by name, so one merge walk answers for every resource whether it is wanted, whether
 * the client holds it at the same version, and whether a held one is gone: about
 * n + names + held string comparisons per stream and push, instead of binary
 * searches per resource. */
static bool evaluate(void *proto, tr_type t, int64_t now_ms, xds_response *out)
{
    xds_sotw *s = proto;
    xds_sotw_type *st = &s->t[t];
    tr_resources *cur = s->st.current;
    const tr_resource *items = cur->items[t];
    size_t n = cur->count[t];
    const xds_subs *sub = &s->st.subs[t];
    const tr_resources *hr = st->held_bits ? st->held_res : NULL;
    const tr_resource *held = hr ? hr->items[t] : NULL;
    size_t nheld = hr && hr != cur ? hr->count[t] : 0;
    uint64_t *bits = n ? sx_calloc(WORDS(n), sizeof(uint64_t)) : NULL;
    uint32_t *wanted = n ? sx_malloc(n * sizeof(uint32_t)) : NULL;
    uint32_t *fresh = n ? sx_malloc(n * sizeof(uint32_t)) : NULL;
    uint32_t *gone = t == TR_CDS && nheld ? sx_malloc(nheld * sizeof(uint32_t)) : NULL;
    size_t nwanted = 0, nfresh = 0, m = 0, j = 0, ngone = 0;
    bool deleted = false;
    /* A client that started the type claiming the version it is served holds every
     * subscribed resource of it (it held nothing before on this stream: nheld is 0). */
    bool claim = st->claimed != 0 && st->claimed == cur->version;
    st->claimed = 0;
    if (claim)
        s->st.push[t].must_respond = false;
    for (size_t i = 0; i < n; i++) {
        const char *name = items[i].name;
        /* Held resources before this name are not in cur any more. */
        int hc = 1;
        while (j < nheld && (hc = strcmp(held[j].name, name)) < 0) {
            if (bit_get(st->held_bits, j) && gone)
                gone[ngone++] = (uint32_t)j;
            deleted |= bit_get(st->held_bits, j++);
        }
        size_t hj = nheld; /* the held resource of this name, if any */
        if (j < nheld && hc == 0)
            hj = j++;
        bool want = sub->wildcard;
        if (!want) {
            int c = 1;
            while (m < sub->count && (c = strcmp(sub->names[m], name)) < 0)
                m++;
            want = m < sub->count && c == 0;
        }
        if (!want)
            continue;
        bit_set(bits, i);
        wanted[nwanted++] = (uint32_t)i;
        bool holds;
        if (claim)
            holds = true;
        else if (hr == cur)
            holds = bit_get(st->held_bits, i);
        else
            holds = hj < nheld && bit_get(st->held_bits, hj) &&
                    strcmp(held[hj].version, items[i].version) == 0;
        if (!holds)
            fresh[nfresh++] = (uint32_t)i;
    }
    while (j < nheld) {
        if (bit_get(st->held_bits, j) && gone)
            gone[ngone++] = (uint32_t)j;
        deleted |= bit_get(st->held_bits, j++);
    }
    if (t == TR_CDS) {
        /* Make before break: gone clusters stay until the routes are settled — those
         * the client accepted: not those of a response it NACKed. */
        if (s->st.push[t].nacked)
            ngone = 0;
        deleted = update_kept(s, cur, held, gone, ngone) || (deleted && s->nkept == 0);
        sx_free(gone);
    }
    bool changed = nfresh > 0 || (full_state(t) && deleted);
    bool respond = changed || s->st.push[t].must_respond;
    if (t == TR_CDS && nfresh > 0)
        refresh_endpoints(s, cur, fresh, nfresh, now_ms);
    if (respond) {
        bool all = full_state(t);
        out->type = t;
        out->res = cur;
        out->idx = all ? wanted : fresh;
        out->n = all ? nwanted : nfresh;
        if (t == TR_CDS) {
            out->kept = s->kept;
            out->nkept = s->nkept;
        }
        sx_free(all ? fresh : wanted);
    } else {
        sx_free(wanted);
        sx_free(fresh);
    }
    sx_free(st->held_bits);
    st->held_bits = bits;
    if (st->held_res != cur) {
        tr_resources_unref(st->held_res);
        st->held_res = tr_resources_ref(cur);
    }
    return respond;
}

void xds_sotw_free(xds_sotw *s)
{
    xds_state_free(&s->st);
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        forget_all(&s->t[t]);
    tr_resource_items_free(s->kept, s->nkept);
    s->kept = NULL;
    s->nkept = 0;
}

void xds_sotw_on_request(xds_sotw *s, const xds_sotw_request *req, int64_t now_ms,
                         xds_req_outcome *out)
{
    xds_sotw_type *st = &s->t[req->type];
    xds_push *push = &s->st.push[req->type];
    xds_subs *subs = &s->st.subs[req->type];
    *out = (xds_req_outcome){.kind = XDS_REQ_SUBSCRIBE};
    /* A nonce that names no response of this stream (empty, or from another stream
     * or server) starts the type afresh; one that names an older response is stale. */
    bool restart = req->nonce[0] == '\0' || !push->has_sent;
    bool first = !subs->requested;
    if (!restart && !xds_nonce_equals(push->sent_nonce, req->nonce)) {
        out->kind = XDS_REQ_STALE;
        return;
    }
    if (restart) {
        forget_all(st);
        st->claimed = first ? xds_state_version_of(req->version_info) : 0;
        push->awaiting = false;
        push->must_respond = true;
        xds_push_mark_dirty(push, now_ms);
    } else if (push->awaiting) {
        xds_push_answer(push, req->is_nack, now_ms, out);
    }
    if (xds_subs_set_sotw(subs, full_state(req->type), req->names, req->name_count)) {
        if (!first)
            st->claimed = 0; /* names other than those the claim was made for */
        forget_unwanted(st, subs, req->type);
        xds_push_mark_dirty(push, now_ms);
        if (full_state(req->type))
            push->must_respond = true;
    }
    if (req->type == TR_CDS && restart) {
        /* The client holds nothing: nothing is kept for it. */
        tr_resource_items_free(s->kept, s->nkept);
        s->kept = NULL;
        s->nkept = 0;
    }
    release_kept(s, now_ms);
}

static const xds_state_ops SOTW_OPS = {evaluate, release_kept};

bool xds_sotw_next(xds_sotw *s, int64_t now_ms, xds_response *out)
{
    return xds_state_next(&s->st, now_ms, out, &SOTW_OPS, s);
}

long long xds_sotw_synced_version(const xds_sotw *s)
{
    /* While clusters are kept, the last CDS response is still owed. */
    return xds_state_synced_version(&s->st, s->nkept > 0);
}
