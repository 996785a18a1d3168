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

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/base/sorted.h"

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
    size_t i =
        sx_sorted_first(dt->known, dt->nknown, sizeof *dt->known, offsetof(xds_known, name), name);
    if (i < dt->nknown && strcmp(dt->known[i].name, name) == 0)
        return (ptrdiff_t)i;
    if (at)
        *at = i;
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
        if (i >= 0 && real_version(e->known[i].version) &&
            xds_subs_wants(&d->st.subs[TR_EDS], name)) {
            known_remove(e, name);
            xds_push_mark_dirty(&d->st.push[TR_EDS], now_ms);
        }
    }
}

/* Whether the client runs the listeners and routes of the current snapshot: every
 * requested LDS/RDS type was evaluated against it, answered, and not NACKed. */
static bool routes_settled(const xds_delta *d)
{
    return xds_state_in_step(&d->st, TR_LDS) && xds_state_in_step(&d->st, TR_RDS);
}

/* Once the routes are settled, the removal of the clusters held back is owed. */
static void release_deferred(void *proto, int64_t now_ms)
{
    xds_delta *d = proto;
    if (d->cds_deferred && routes_settled(d))
        xds_push_mark_dirty(&d->st.push[TR_CDS], now_ms);
}

static bool evaluate(void *proto, tr_type t, int64_t now_ms, xds_response *out)
{
    xds_delta *d = proto;
    /* Make before break: a cluster gone from the snapshot is removed only once the
     * client has accepted the routes that may have used it. */
    bool defer = t == TR_CDS && !routes_settled(d);
    size_t ndeferred = 0;
    xds_delta_type *dt = &d->t[t];
    const xds_subs *subs = &d->st.subs[t];
    tr_resources *cur = d->st.current;
    const tr_resource *items = cur->items[t];
    size_t n = cur->count[t], nk = dt->nknown, ns = subs->count;
    const char **names = subs->names;

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
        bool interested = named || subs->wildcard;

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
    bool respond = nfresh > 0 || nremoved > 0 || d->st.push[t].must_respond;
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
    return respond;
}

/* ------------------------------------------------------------------ public */

void xds_delta_free(xds_delta *d)
{
    xds_state_free(&d->st);
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        xds_delta_type *dt = &d->t[t];
        for (size_t i = 0; i < dt->nknown; i++)
            sx_free(dt->known[i].name);
        sx_free(dt->known);
        dt->known = NULL;
        dt->nknown = dt->capknown = 0;
    }
}

void xds_delta_on_request(xds_delta *d, const xds_delta_request *req, int64_t now_ms,
                          xds_req_outcome *out)
{
    xds_delta_type *dt = &d->t[req->type];
    xds_push *push = &d->st.push[req->type];
    xds_subs *subs = &d->st.subs[req->type];
    *out = (xds_req_outcome){.kind = XDS_REQ_SUBSCRIBE};
    if (req->nonce[0] != '\0') {
        if (push->has_sent && push->awaiting && xds_nonce_equals(push->sent_nonce, req->nonce)) {
            xds_push_answer(push, req->is_nack, now_ms, out);
        } else {
            /* Only the ACK/NACK part is stale; the subscription changes still count. */
            out->kind = XDS_REQ_STALE;
        }
    }

    bool first = !subs->requested;
    bool changed = first;
    subs->requested = true;
    if (first) {
        known_load(dt, req->initial_names, req->initial_versions, req->ninitial);
        if (req->nsubscribe == 0 && req->nunsubscribe == 0 && full_state(req->type))
            subs->wildcard = true; /* legacy wildcard */
        push->must_respond = true;
    }
    for (size_t i = 0; i < req->nsubscribe; i++) {
        const char *name = req->subscribe[i];
        subs->explicit_ever = true;
        changed |= xds_subs_add(subs, name);
        if (!first && !is_star(name)) {
            /* Named again: the client may have forgotten it, so it is sent again. */
            known_remove(dt, name);
            changed = true;
        }
    }
    for (size_t i = 0; i < req->nunsubscribe; i++) {
        const char *name = req->unsubscribe[i];
        bool was = xds_subs_remove(subs, name);
        if (is_star(name)) {
            changed |= was;
        } else if (subs->wildcard) {
            /* Still covered by the wildcard, or not: either way the client is told. */
            known_put(dt, name, MARK_REPORT);
            changed = true;
        } else if (was) {
            known_remove(dt, name);
        }
    }
    if (changed)
        xds_push_mark_dirty(push, now_ms);
    release_deferred(d, now_ms);
}

static const xds_state_ops DELTA_OPS = {evaluate, release_deferred};

bool xds_delta_next(xds_delta *d, int64_t now_ms, xds_response *out)
{
    return xds_state_next(&d->st, now_ms, out, &DELTA_OPS, d);
}

long long xds_delta_synced_version(const xds_delta *d)
{
    /* While clusters are deferred, their removal is still owed. */
    return xds_state_synced_version(&d->st, d->cds_deferred);
}
