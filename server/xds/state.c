/*
 * state.c — the stream state both ADS protocols share (see state.h).
 *
 * A new snapshot marks every requested type dirty (xds_push_offer) and makes every type
 * unevaluated; next() walks the types in push order and lets the protocol evaluate the
 * first one due. The walk is the same for both protocols: only the evaluation, and what
 * a type that sends nothing may release, are theirs.
 */
#include "server/xds/state.h"

#include <stdlib.h>
#include <string.h>

void xds_state_init(xds_state *s, uint64_t nonce_seed, xds_names *names)
{
    memset(s, 0, sizeof(*s));
    xds_nonce_init(&s->nonce, nonce_seed);
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        s->subs[t].pool = names;
}

void xds_state_free(xds_state *s)
{
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        xds_subs_clear(&s->subs[t]);
    tr_resources_unref(s->current);
    s->current = NULL;
}

xds_adopt xds_state_adopt(xds_state *s, tr_resources *res, int64_t published_ms)
{
    if (s->current != NULL && res->version == s->current->version)
        return XDS_ADOPT_IGNORED;
    bool coalesced = false;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        s->evaluated[t] = false;
        if (s->subs[t].requested)
            coalesced |= xds_push_offer(&s->push[t], published_ms);
    }
    tr_resources_unref(s->current);
    s->current = tr_resources_ref(res);
    return coalesced ? XDS_ADOPT_COALESCED : XDS_ADOPT_NEW;
}

bool xds_state_next(xds_state *s, int64_t now_ms, xds_response *out, const xds_state_ops *ops,
                    void *proto)
{
    memset(out, 0, sizeof(*out));
    if (s->current == NULL)
        return false;
    for (int i = 0; i < TR_TYPE_COUNT; i++) {
        tr_type t = (tr_type)i;
        xds_push *p = &s->push[t];
        if (!s->subs[t].requested || !p->dirty || p->awaiting)
            continue;
        bool respond = ops->evaluate(proto, t, now_ms, out);
        s->evaluated[t] = true;
        int64_t since = xds_push_take(p, now_ms);
        if (respond) {
            xds_push_sent(p, &s->nonce, s->current->version, now_ms, since, out->nonce);
            out->version = s->current->version;
            return true;
        }
        ops->idle(proto, now_ms);
    }
    return false;
}

bool xds_state_in_step(const xds_state *s, tr_type t)
{
    const xds_push *p = &s->push[t];
    return !s->subs[t].requested || (!p->dirty && !p->awaiting && !p->nacked && s->evaluated[t]);
}

int64_t xds_state_oldest_unacked_ms(const xds_state *s)
{
    int64_t oldest = 0;
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        oldest = xds_push_oldest(oldest, &s->push[t]);
    return oldest;
}

long long xds_state_synced_version(const xds_state *s, bool owed)
{
    if (s->current == NULL || owed)
        return 0;
    bool any = false;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        if (!xds_state_in_step(s, (tr_type)t))
            return 0;
        any |= s->subs[t].requested;
    }
    return any ? s->current->version : 0;
}

long long xds_state_version_of(const char *v)
{
    if (v == NULL || *v < '1' || *v > '9' || strlen(v) > 18)
        return 0;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    return *end == '\0' ? n : 0;
}
