/*
 * translate_ratelimit.c — a backend's token policy as Envoy's local rate limit HTTP
 * filter (envoy.filters.http.local_ratelimit), where the two mean the same thing.
 *
 * Envoy's local rate limit counts requests in a token bucket per proxy. Of a token
 * policy, that expresses requests_per_minute (tokens_per_fill, refilled every minute)
 * with its burst multiplier (the bucket holds requests_per_minute × burst, at least one
 * minute's worth), answering 429 when the bucket is empty (on_limit "" or "reject").
 * Counting LLM tokens (tokens_per_minute, tokens_per_hour), a scope other than the
 * proxy's own ("" or "proxy"), and any other action have no counterpart and are
 * refused with their paths (validation says the same per data plane).
 *
 * Like session persistence (translate_session.c), the filter sits in the connection
 * manager with no bucket (it limits nothing there) and optional, and each Route whose
 * rule forwards to a backend with a token policy carries that backend's bucket in an
 * optional FilterConfig. A rule that spreads its requests over several backends of
 * which one has a policy cannot be limited per backend by a per-route filter and is
 * refused.
 */
#include <string.h>

#include "envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.pb-c.h"
#include "envoy/type/v3/token_bucket.pb-c.h"
#include "server/translate/translate.h"

typedef Envoy__Extensions__Filters__Http__LocalRatelimit__V3__LocalRateLimit ev_local_rl;

static Envoy__Config__Core__V3__RuntimeFractionalPercent *all_of(tr_ctx *tr, const char *key)
{
    Envoy__Config__Core__V3__RuntimeFractionalPercent *p =
        TR_NEW(tr, Envoy__Config__Core__V3__RuntimeFractionalPercent,
               ENVOY__CONFIG__CORE__V3__RUNTIME_FRACTIONAL_PERCENT__INIT);
    p->default_value =
        TR_NEW(tr, Envoy__Type__V3__FractionalPercent, ENVOY__TYPE__V3__FRACTIONAL_PERCENT__INIT);
    p->default_value->numerator = 100;
    p->default_value->denominator = ENVOY__TYPE__V3__FRACTIONAL_PERCENT__DENOMINATOR_TYPE__HUNDRED;
    p->runtime_key = (char *)key;
    return p;
}

/* The per-route value of backend bi's token policy (path of the backend: bp), or NULL
 * after recording what Envoy cannot express. */
static Google__Protobuf__Any *route_config(tr_ctx *tr, const ir_backend *b, const char *bp)
{
    const Gateway__Control__V1__TokenPolicyConfig *t = b->token_policy;
    const char *tp = tr_printf(tr, "%s.token_policy", bp);
    size_t errs = tr->errs.count;
    if (t->tokens_per_minute)
        tr_error(tr, tr_printf(tr, "%s.tokens_per_minute", tp),
                 "envoy's local rate limit counts requests, not tokens");
    if (t->tokens_per_hour)
        tr_error(tr, tr_printf(tr, "%s.tokens_per_hour", tp),
                 "envoy's local rate limit counts requests, not tokens");
    if (!tr_empty(t->scope) && strcmp(t->scope, "proxy") != 0)
        tr_error(tr, tr_printf(tr, "%s.scope", tp),
                 "envoy's local rate limit counts per proxy: scope \"%s\" has no counterpart "
                 "(leave it empty or use \"proxy\")",
                 t->scope);
    if (!tr_empty(t->on_limit) && strcmp(t->on_limit, "reject") != 0)
        tr_error(tr, tr_printf(tr, "%s.on_limit", tp),
                 "envoy's local rate limit rejects (429): on_limit \"%s\" has no counterpart",
                 t->on_limit);
    if (t->requests_per_minute == 0)
        tr_error(tr, tr_printf(tr, "%s.requests_per_minute", tp),
                 "envoy's local rate limit needs requests_per_minute");
    else if (t->requests_per_minute > UINT32_MAX)
        tr_error(tr, tr_printf(tr, "%s.requests_per_minute", tp), "must be at most %u", UINT32_MAX);
    if (tr->errs.count != errs)
        return NULL;
    double cap = (double)t->requests_per_minute * (t->burst > 1.0 ? t->burst : 1.0);
    Envoy__Type__V3__TokenBucket *bucket =
        TR_NEW(tr, Envoy__Type__V3__TokenBucket, ENVOY__TYPE__V3__TOKEN_BUCKET__INIT);
    uint32_t whole = cap >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    bucket->max_tokens = whole < UINT32_MAX && (double)whole < cap ? whole + 1 : whole;
    bucket->tokens_per_fill = tr_u32(tr, (uint32_t)t->requests_per_minute);
    Google__Protobuf__Duration minute = GOOGLE__PROTOBUF__DURATION__INIT;
    minute.seconds = 60;
    bucket->fill_interval = tr_duration(tr, &minute, tp);
    ev_local_rl *rl =
        TR_NEW(tr, ev_local_rl,
               ENVOY__EXTENSIONS__FILTERS__HTTP__LOCAL_RATELIMIT__V3__LOCAL_RATE_LIMIT__INIT);
    rl->stat_prefix = TR_TOKEN_POLICY_STATS;
    rl->token_bucket = bucket;
    rl->filter_enabled = all_of(tr, "sextant.token_policy.enabled");
    rl->filter_enforced = all_of(tr, "sextant.token_policy.enforced");
    Envoy__Config__Route__V3__FilterConfig *fc = TR_NEW(
        tr, Envoy__Config__Route__V3__FilterConfig, ENVOY__CONFIG__ROUTE__V3__FILTER_CONFIG__INIT);
    fc->config = tr_any(tr, &rl->base);
    fc->is_optional = 1;
    return tr_any(tr, &fc->base);
}

Google__Protobuf__Any *tr_token_policy_route_config(tr_ctx *tr, ir_backend_ref **refs, size_t n,
                                                    const char *ns, const char *where)
{
    long with = -1;
    size_t n_with = 0, n_known = 0;
    for (size_t i = 0; i < n; i++) {
        if (refs[i] == NULL)
            continue;
        long bi = tr_backend_find(
            tr,
            tr_qname(tr, !tr_empty(refs[i]->namespace_) ? refs[i]->namespace_ : ns, refs[i]->name));
        if (bi < 0)
            continue; /* reported by the action */
        n_known++;
        if (tr->ir->backends[bi]->token_policy && bi != with) {
            n_with++;
            with = bi;
        }
    }
    if (n_with == 0)
        return NULL;
    if (n_with > 1 || n_known > 1) {
        tr_error(tr, tr_printf(tr, "%s.backend_refs", where),
                 "envoy limits a route, not one of its backends: a rule whose backends have a "
                 "token policy forwards to that one backend only");
        return NULL;
    }
    return route_config(tr, tr->ir->backends[with], tr_printf(tr, "backends[%ld]", with));
}

Google__Protobuf__Any *tr_token_policy_filter_config(tr_ctx *tr)
{
    ev_local_rl *rl =
        TR_NEW(tr, ev_local_rl,
               ENVOY__EXTENSIONS__FILTERS__HTTP__LOCAL_RATELIMIT__V3__LOCAL_RATE_LIMIT__INIT);
    rl->stat_prefix = TR_TOKEN_POLICY_STATS;
    return tr_any(tr, &rl->base);
}
