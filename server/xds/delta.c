/*
 * delta.c — incremental ADS protocol of one stream (see delta.h).
 *
 * Per type the state keeps the subscription and "known": what the client holds, one
 * entry per name, sorted. Evaluating a type is one merge of three sorted lists (the
 * current resources of the type, the known entries, the explicit names), so a
 * response costs O(resources + known) whatever changed, and the new known list is
 * built in the same pass. Two markers sit in known beside real versions: "" (the
 * client was told the name does not exist, so it is not told again) and "?" (the
 * client must be told about this name whatever happens: an unsubscription while on
 * the wildcard).
 */
#include "server/xds/delta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"

#define MARK_ABSENT ""
#define MARK_REPORT "?"
/* Stands for a version longer than ours (from another server): never equal to one. */
#define MARK_FOREIGN "~"

static bool full_state(tr_type t)
{
    return t == TR_LDS || t == TR_CDS;
}

static bool is_star(const char *name)
{
    return strcmp(name, "*") == 0;
}

static bool real_version(const char *v)
{
    return v[0] != '\0' && strcmp(v, MARK_REPORT) != 0;
}

static void set_version(xds_known *k, const char *v)
{
    if (strlen(v) >= sizeof(k->version))
        v = MARK_FOREIGN;
    snprintf(k->version, sizeof(k->version), "%s", v);
}

/* ------------------------------------------------------------------ known */

static ptrdiff_t known_search(const xds_delta_type *dt, const char *name, size_t *at)
{
    size_t lo = 0, hi = dt->nknown;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(dt->known[mid].name, name);
        if (c == 0)
            return (ptrdiff_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (at)
        *at = lo;
    return -1;
}

static void known_remove(xds_delta_type *dt, const char *name)
{
    ptrdiff_t i = known_search(dt, name, NULL);
    if (i < 0)
        return;
    sx_free(dt->known[i].name);
    memmove(dt->known + i, dt->known + i + 1, (dt->nknown - (size_t)i - 1) * sizeof(xds_known));
    dt->nknown--;
}

static void known_put(xds_delta_type *dt, const char *name, const char *version)
{
    size_t at = 0;
    ptrdiff_t i = known_search(dt, name, &at);
    if (i >= 0) {
        set_version(&dt->known[i], version);
        return;
    }
    if (dt->nknown == dt->capknown) {
        dt->capknown = dt->capknown ? dt->capknown * 2 : 8;
        dt->known = sx_realloc(dt->known, dt->capknown * sizeof(xds_known));
    }
    memmove(dt->known + at + 1, dt->known + at, (dt->nknown - at) * sizeof(xds_known));
    dt->known[at].name = sx_strdup(name);
    set_version(&dt->known[at], version);
    dt->nknown++;
}

static int cmp_known(const void *a, const void *b)
{
    return strcmp(((const xds_known *)a)->name, ((const xds_known *)b)->name);
}

/* initial_resource_versions: appended in bulk, then sorted, duplicates dropped (a
 * reconnecting client may list thousands). */
static void known_load(xds_delta_type *dt, char *const *names, char *const *versions, size_t n)
{
    if (n == 0)
        return;
    if (dt->nknown + n > dt->capknown) {
        dt->capknown = dt->nknown + n;
        dt->known = sx_realloc(dt->known, dt->capknown * sizeof(xds_known));
    }
    for (size_t i = 0; i < n; i++) {
        xds_known *k = &dt->known[dt->nknown++];
        k->name = sx_strdup(names[i]);
        set_version(k, versions[i] ? versions[i] : MARK_FOREIGN);
    }
    qsort(dt->known, dt->nknown, sizeof(xds_known), cmp_known);
    size_t w = 0;
    for (size_t r = 0; r < dt->nknown; r++) {
        if (w > 0 && strcmp(dt->known[w - 1].name, dt->known[r].name) == 0) {
            sx_free(dt->known[w - 1].name);
            dt->known[w - 1] = dt->known[r];
            continue;
        }
        dt->known[w++] = dt->known[r];
    }
    dt->nknown = w;
}

/* ------------------------------------------------------------------ evaluation */

/* A changed cluster is followed by its endpoints (see sotw.c): forget that the client
 * holds the ClusterLoadAssignment of the same name. */
static void refresh_endpoints(xds_delta *d, const tr_resources *cur, const uint32_t *clusters,
                              size_t n, int64_t now_ms)
{
    xds_delta_type *e = &d->t[TR_EDS];
    for (size_t k = 0; k < n; k++) {
        const char *name = cur->items[TR_CDS][clusters[k]].name;
        ptrdiff_t i = known_search(e, name, NULL);
        if (i >= 0 && real_version(e->known[i].version) && xds_subs_wants(&e->subs, name)) {
            known_remove(e, name);
            xds_push_mark_dirty(&e->push, now_ms);
        }
    }
}

/* Whether the client runs the listeners and routes of the current snapshot: every
 * requested LDS/RDS type was evaluated against it, answered, and not NACKed. */
static bool routes_settled(const xds_delta *d)
{
    static const tr_type route_types[] = {TR_LDS, TR_RDS};
    for (size_t i = 0; i < 2; i++) {
        const xds_delta_type *dt = &d->t[route_types[i]];
        if (dt->subs.requested &&
            (dt->push.dirty || dt->push.awaiting || dt->push.nacked || !dt->evaluated))
            return false;
    }
    return true;
}

/* Once the routes are settled, the removal of the clusters held back is owed. */
static void release_deferred(xds_delta *d, int64_t now_ms)
{
    if (d->cds_deferred && routes_settled(d))
        xds_push_mark_dirty(&d->t[TR_CDS].push, now_ms);
}

static bool evaluate(xds_delta *d, tr_type t, int64_t now_ms, xds_response *out)
{
    /* Make before break: a cluster gone from the snapshot is removed only once the
     * client has accepted the routes that may have used it. */
    bool defer = t == TR_CDS && !routes_settled(d);
    size_t ndeferred = 0;
    xds_delta_type *dt = &d->t[t];
    tr_resources *cur = d->current;
    const tr_resource *items = cur->items[t];
    size_t n = cur->count[t], nk = dt->nknown, ns = dt->subs.count;
    const char **names = dt->subs.names;

    size_t cap = n + nk + ns;
    xds_known *next = cap ? sx_malloc(cap * sizeof(xds_known)) : NULL;
    uint32_t *fresh = n ? sx_malloc(n * sizeof(uint32_t)) : NULL;
    char **removed = (nk + ns) ? sx_malloc((nk + ns) * sizeof(char *)) : NULL;
    size_t nnext = 0, nfresh = 0, nremoved = 0;

    size_t i = 0, k = 0, m = 0;
    while (i < n || k < nk || m < ns) {
        const char *name = NULL;
        if (i < n)
            name = items[i].name;
        if (k < nk && (name == NULL || strcmp(dt->known[k].name, name) < 0))
            name = dt->known[k].name;
        if (m < ns && (name == NULL || strcmp(names[m], name) < 0))
            name = names[m];
        const tr_resource *r = (i < n && strcmp(items[i].name, name) == 0) ? &items[i++] : NULL;
        xds_known *kn = (k < nk && strcmp(dt->known[k].name, name) == 0) ? &dt->known[k++] : NULL;
        bool named = m < ns && strcmp(names[m], name) == 0;
        if (named)
            m++;
        bool interested = named || dt->subs.wildcard;

        if (r != NULL && interested) {
            if (kn == NULL || strcmp(kn->version, r->version) != 0)
                fresh[nfresh++] = (uint32_t)(r - items);
            xds_known *nx = &next[nnext++];
            nx->name = kn ? kn->name : sx_strdup(r->name);
            set_version(nx, r->version);
            continue;
        }
        if (r == NULL && interested && defer && kn && real_version(kn->version)) {
            xds_known *nx = &next[nnext++];
            nx->name = kn->name;
            set_version(nx, kn->version);
            ndeferred++;
            continue;
        }
        if (r == NULL && interested) {
            if (kn == NULL || kn->version[0] != '\0')
                removed[nremoved++] = sx_strdup(name);
            if (named) {
                xds_known *nx = &next[nnext++];
                nx->name = kn ? kn->name : sx_strdup(name);
                set_version(nx, MARK_ABSENT);
            } else if (kn) {
                sx_free(kn->name);
            }
            continue;
        }
        /* Not of interest any more: forget it, telling the client only when owed. */
        if (kn && strcmp(kn->version, MARK_REPORT) == 0)
            removed[nremoved++] = sx_strdup(name);
        if (kn)
            sx_free(kn->name);
    }
    sx_free(dt->known);
    if (cap > 2 * nnext + 8) { /* give back what the merge reserved */
        cap = nnext;
        if (cap == 0) {
            sx_free(next);
            next = NULL;
        } else {
            next = sx_realloc(next, cap * sizeof(xds_known));
        }
    }
    dt->known = next;
    dt->nknown = nnext;
    dt->capknown = cap;

    if (t == TR_CDS)
        d->cds_deferred = ndeferred > 0;
    bool respond = nfresh > 0 || nremoved > 0 || dt->push.must_respond;
    if (t == TR_CDS && nfresh > 0)
        refresh_endpoints(d, cur, fresh, nfresh, now_ms);
    if (respond) {
        out->type = t;
        out->res = cur;
        out->idx = fresh;
        out->n = nfresh;
        out->removed = removed;
        out->nremoved = nremoved;
    } else {
        sx_free(fresh);
        sx_free(removed);
    }
    dt->evaluated = true;
    return respond;
}

/* ------------------------------------------------------------------ public */

void xds_delta_init(xds_delta *d, uint64_t nonce_seed)
{
    memset(d, 0, sizeof(*d));
    xds_nonce_init(&d->nonce, nonce_seed);
}

void xds_delta_free(xds_delta *d)
{
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        xds_delta_type *dt = &d->t[t];
        xds_subs_clear(&dt->subs);
        for (size_t i = 0; i < dt->nknown; i++)
            sx_free(dt->known[i].name);
        sx_free(dt->known);
        dt->known = NULL;
        dt->nknown = dt->capknown = 0;
    }
    tr_resources_unref(d->current);
    d->current = NULL;
}

void xds_delta_on_request(xds_delta *d, const xds_delta_request *req, int64_t now_ms,
                          xds_req_outcome *out)
{
    xds_delta_type *dt = &d->t[req->type];
    *out = (xds_req_outcome){.kind = XDS_REQ_SUBSCRIBE};
    if (req->nonce[0] != '\0') {
        if (dt->push.has_sent && dt->push.awaiting &&
            xds_nonce_equals(dt->push.sent_nonce, req->nonce)) {
            xds_push_answer(&dt->push, req->is_nack, now_ms, out);
        } else {
            /* Only the ACK/NACK part is stale; the subscription changes still count. */
            out->kind = XDS_REQ_STALE;
        }
    }

    bool first = !dt->subs.requested;
    bool changed = first;
    dt->subs.requested = true;
    if (first) {
        known_load(dt, req->initial_names, req->initial_versions, req->ninitial);
        if (req->nsubscribe == 0 && req->nunsubscribe == 0 && full_state(req->type))
            dt->subs.wildcard = true; /* legacy wildcard */
        dt->push.must_respond = true;
    }
    for (size_t i = 0; i < req->nsubscribe; i++) {
        const char *name = req->subscribe[i];
        dt->subs.explicit_ever = true;
        changed |= xds_subs_add(&dt->subs, name);
        if (!first && !is_star(name)) {
            /* Named again: the client may have forgotten it, so it is sent again. */
            known_remove(dt, name);
            changed = true;
        }
    }
    for (size_t i = 0; i < req->nunsubscribe; i++) {
        const char *name = req->unsubscribe[i];
        bool was = xds_subs_remove(&dt->subs, name);
        if (is_star(name)) {
            changed |= was;
        } else if (dt->subs.wildcard) {
            /* Still covered by the wildcard, or not: either way the client is told. */
            known_put(dt, name, MARK_REPORT);
            changed = true;
        } else if (was) {
            known_remove(dt, name);
        }
    }
    if (changed)
        xds_push_mark_dirty(&dt->push, now_ms);
    release_deferred(d, now_ms);
}

xds_adopt xds_delta_on_resources(xds_delta *d, tr_resources *res, int64_t published_ms)
{
    if (d->current != NULL && res->version == d->current->version)
        return XDS_ADOPT_IGNORED;
    bool coalesced = false;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        xds_delta_type *dt = &d->t[t];
        dt->evaluated = false;
        if (!dt->subs.requested)
            continue;
        coalesced |= xds_push_offer(&dt->push, published_ms);
    }
    tr_resources_unref(d->current);
    d->current = tr_resources_ref(res);
    return coalesced ? XDS_ADOPT_COALESCED : XDS_ADOPT_NEW;
}

bool xds_delta_next(xds_delta *d, int64_t now_ms, xds_response *out)
{
    memset(out, 0, sizeof(*out));
    if (d->current == NULL)
        return false;
    for (int i = 0; i < TR_TYPE_COUNT; i++) {
        tr_type t = (tr_type)i;
        xds_delta_type *dt = &d->t[t];
        if (!xds_push_due(dt->subs.requested, &dt->push))
            continue;
        if (xds_push_evaluated(&dt->push, evaluate(d, t, now_ms, out), &d->nonce,
                               d->current->version, now_ms, out->nonce, &out->version))
            return true;
        release_deferred(d, now_ms);
    }
    return false;
}

int64_t xds_delta_oldest_unacked_ms(const xds_delta *d)
{
    int64_t oldest = 0;
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        oldest = xds_push_oldest(oldest, &d->t[t].push);
    return oldest;
}

long long xds_delta_synced_version(const xds_delta *d)
{
    if (d->current == NULL)
        return 0;
    bool any = false;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        const xds_delta_type *dt = &d->t[t];
        if (!dt->subs.requested)
            continue;
        if (dt->push.dirty || dt->push.awaiting || dt->push.nacked || !dt->evaluated)
            return 0;
        any = true;
    }
    if (d->cds_deferred) /* the removal of old clusters is still owed */
        return 0;
    return any ? d->current->version : 0;
}
