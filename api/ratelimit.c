/*
 * ratelimit.c — the REST API's token buckets: shared through Redis, per replica as the
 * fallback, with bounded memory.
 *
 * ratelimit_check asks the shared store (storage/redis_bucket.h) first; an answer
 * there is final and switches the mode to "shared". A failure switches it to "per
 * replica" and the take is answered from the buckets below; a skip (Redis in back-off,
 * or another thread reconnecting) is answered from them too but changes no mode, so
 * that neither a reconnect in progress nor the start-up's first connect makes the mode
 * flap. Each switch is one log line, a gauge and, towards per replica, a counter.
 *
 * The per-replica buckets: keys (users, client addresses) live in a chained hash table
 * and, at the same time, in a list ordered by last use. Every take moves the key to the
 * front; then entries are dropped from the back while the table is over max_users or
 * the last entry has been idle long enough for every bucket it used to be full again (a
 * full bucket is indistinguishable from a missing one, so dropping it changes no answer
 * but the count of refusals not yet reported, which the Redis key's expiry drops too). That keeps
 * memory proportional to the users active in the last refill period, with the LRU bound as a
 * backstop against a flood of distinct names. Tokens are kept in thousandths so that integer
 * arithmetic refills exactly. One mutex guards everything: a take is a hash lookup and a few
 * additions.
 */
#include "api/ratelimit.h"

#include <pthread.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/list.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/locked.h"
#include "storage/redis_bucket.h"

#define COMPONENT         "ratelimit"
#define MILLI             1000
#define DEFAULT_MAX_USERS 100000

static const char *const kind_names[RATELIMIT_KINDS] = {"read", "write", "auth"};

/* Where takes are decided; changed only in set_mode. */
typedef enum rl_mode {
    MODE_UNKNOWN = 0, /* no take has reached Redis nor failed to yet */
    MODE_SHARED,      /* the last take that tried Redis got its answer there */
    MODE_LOCAL,       /* the last take that tried Redis failed: this replica's buckets */
} rl_mode;

typedef struct bucket {
    int64_t tokens_milli; /* tokens × 1000, 0 .. burst × 1000 */
    int64_t updated_ms;   /* when tokens_milli was last brought up to date */
    int64_t refused;      /* refusals since the last allowed take */
} bucket;

typedef struct entry {
    char *user;
    uint64_t hash;
    bucket b[RATELIMIT_KINDS]; /* indexed by ratelimit_kind */
    int64_t last_ms;           /* last take, for idleness */
    unsigned used;             /* bit k: bucket k has been taken from */
    struct entry *next_hash;   /* chain in the bucket array */
    sx_link lru;               /* in ratelimit.lru */
} entry;

struct ratelimit {
    pthread_mutex_t mu;
    int64_t rate[RATELIMIT_KINDS], burst[RATELIMIT_KINDS]; /* per kind */
    int64_t full_ms[RATELIMIT_KINDS]; /* time an empty bucket of each kind takes to fill */
    size_t max_users;
    entry **table;
    size_t nslots; /* power of two */
    size_t count;
    sx_list lru;          /* every entry, the most recently used first */
    sx_metric *m_limited; /* sextant_api_rate_limited_total{kind} */

    struct redis_bucket *shared; /* borrowed; NULL when per replica only */
    pthread_mutex_t mode_mu;     /* guards mode */
    rl_mode mode;
    sx_metric *m_shared;    /* sextant_ratelimit_shared */
    sx_metric *m_fallbacks; /* sextant_ratelimit_fallbacks_total */
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static int64_t clamp_pos(int64_t v)
{
    return v < 1 ? 1 : v;
}

ratelimit *ratelimit_create(const ratelimit_options *opt, sx_metrics *metrics)
{
    ratelimit *rl = sx_calloc(1, sizeof(*rl));
    pthread_mutex_init(&rl->mu, NULL);
    rl->rate[RATELIMIT_READ] = clamp_pos(opt->read_rate);
    rl->burst[RATELIMIT_READ] = clamp_pos(opt->read_burst);
    rl->rate[RATELIMIT_WRITE] = clamp_pos(opt->write_rate);
    rl->burst[RATELIMIT_WRITE] = clamp_pos(opt->write_burst);
    rl->rate[RATELIMIT_AUTH_FAIL] = opt->auth_rate ? clamp_pos(opt->auth_rate) : 1;
    rl->burst[RATELIMIT_AUTH_FAIL] = opt->auth_burst ? clamp_pos(opt->auth_burst) : 20;
    for (int k = 0; k < RATELIMIT_KINDS; k++) {
        int64_t full_ms = (rl->burst[k] * MILLI + rl->rate[k] - 1) / rl->rate[k];
        rl->full_ms[k] = full_ms;
    }
    rl->max_users = opt->max_users ? opt->max_users : DEFAULT_MAX_USERS;
    rl->nslots = 256;
    rl->table = sx_calloc(rl->nslots, sizeof(entry *));
    if (metrics)
        rl->m_limited = sx_metrics_counter(metrics, "sextant_api_rate_limited_total",
                                           "API requests refused by the per-user rate limit, by "
                                           "bucket",
                                           "kind");
    pthread_mutex_init(&rl->mode_mu, NULL);
    rl->shared = redis_bucket_enabled(opt->shared) ? opt->shared : NULL;
    if (metrics) {
        rl->m_shared = sx_metrics_gauge(metrics, "sextant_ratelimit_shared",
                                        "Whether API rate limits are shared by every replica "
                                        "through Redis (1) or kept by this replica alone (0)",
                                        NULL);
        sx_metric_set(rl->m_shared, NULL, 0);
        rl->m_fallbacks = sx_metrics_counter(metrics, "sextant_ratelimit_fallbacks_total",
                                             "Switches of the API rate limits from Redis to "
                                             "this replica's own buckets",
                                             NULL);
    }
    if (rl->shared == NULL)
        SX_INFO(COMPONENT, "no redis is configured: every replica enforces the API rate limits "
                           "on its own");
    return rl;
}

static void free_entry(entry *e)
{
    sx_free(e->user);
    sx_free(e);
}

void ratelimit_destroy(ratelimit *rl)
{
    if (rl == NULL)
        return;
    for (sx_link *l = rl->lru.head; l;) {
        entry *e = SX_CONTAINER(l, entry, lru);
        l = l->next;
        free_entry(e);
    }
    sx_free(rl->table);
    pthread_mutex_destroy(&rl->mu);
    pthread_mutex_destroy(&rl->mode_mu);
    sx_free(rl);
}

/* ------------------------------------------------------------------ table and list */

/* The least recently used entry, or NULL. */
static entry *lru_oldest(const ratelimit *rl)
{
    return rl->lru.tail ? SX_CONTAINER(rl->lru.tail, entry, lru) : NULL;
}

static void table_remove(ratelimit *rl, entry *e)
{
    entry **pp = &rl->table[e->hash & (rl->nslots - 1)];
    while (*pp && *pp != e)
        pp = &(*pp)->next_hash;
    if (*pp)
        *pp = e->next_hash;
    sx_list_remove(&rl->lru, &e->lru);
    rl->count--;
    free_entry(e);
}

static void grow(ratelimit *rl)
{
    size_t n = rl->nslots * 2;
    entry **t = sx_calloc(n, sizeof(entry *));
    for (size_t i = 0; i < rl->nslots; i++) {
        for (entry *e = rl->table[i]; e;) {
            entry *next = e->next_hash;
            e->next_hash = t[e->hash & (n - 1)];
            t[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    sx_free(rl->table);
    rl->table = t;
    rl->nslots = n;
}

static entry *lookup_or_add(ratelimit *rl, const char *user, int64_t now_ms)
{
    uint64_t h = fnv1a(user);
    for (entry *e = rl->table[h & (rl->nslots - 1)]; e; e = e->next_hash)
        if (e->hash == h && strcmp(e->user, user) == 0)
            return e;
    entry *e = sx_calloc(1, sizeof(*e));
    e->user = sx_strdup(user);
    e->hash = h;
    for (int k = 0; k < RATELIMIT_KINDS; k++) {
        e->b[k].tokens_milli = rl->burst[k] * MILLI;
        e->b[k].updated_ms = now_ms;
    }
    if (rl->count + 1 > rl->nslots && rl->nslots < (1u << 24))
        grow(rl);
    e->next_hash = rl->table[h & (rl->nslots - 1)];
    rl->table[h & (rl->nslots - 1)] = e;
    sx_list_push_front(&rl->lru, &e->lru);
    rl->count++;
    return e;
}

/* After this long without a take, every bucket e has used is full again. */
static int64_t idle_ms(const ratelimit *rl, const entry *e)
{
    int64_t ms = 0;
    for (int k = 0; k < RATELIMIT_KINDS; k++)
        if ((e->used & (1u << k)) && rl->full_ms[k] > ms)
            ms = rl->full_ms[k];
    return ms;
}

/* Drops idle users from the back of the list, and any beyond max_users; never keep. */
static void trim(ratelimit *rl, const entry *keep, int64_t now_ms)
{
    entry *e;
    while ((e = lru_oldest(rl)) != NULL && e != keep &&
           (rl->count > rl->max_users || now_ms - e->last_ms >= idle_ms(rl, e)))
        table_remove(rl, e);
}

/* ------------------------------------------------------------------ taking */

static void refill(const ratelimit *rl, bucket *b, ratelimit_kind k, int64_t now_ms)
{
    int64_t dt = now_ms - b->updated_ms;
    if (dt <= 0)
        return; /* a clock that did not move (or a caller's older reading) adds nothing */
    int64_t cap = rl->burst[k] * MILLI;
    /* dt × rate may overflow only after centuries of idleness at absurd rates; clamp. */
    int64_t add = dt > cap ? cap * rl->rate[k] : dt * rl->rate[k];
    b->tokens_milli = b->tokens_milli + add > cap ? cap : b->tokens_milli + add;
    b->updated_ms = now_ms;
}

/* Whole seconds until a token is back after wait_ms, rounded up, 1..86400. */
static int retry_seconds(int64_t wait_ms)
{
    int64_t s = (wait_ms + 999) / 1000;
    return s < 1 ? 1 : s > 86400 ? 86400 : (int)s;
}

static ratelimit_kind valid_kind(ratelimit_kind kind)
{
    return kind == RATELIMIT_WRITE || kind == RATELIMIT_AUTH_FAIL ? kind : RATELIMIT_READ;
}

static void count_refusal(ratelimit *rl, ratelimit_kind k)
{
    const char *label[] = {kind_names[k]};
    if (rl->m_limited)
        sx_metric_inc(rl->m_limited, label);
}

static void decide_local(ratelimit *rl, const char *key, ratelimit_kind k, int64_t now_ms,
                         ratelimit_verdict *v)
{
    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&rl->mu);
    entry *e = lookup_or_add(rl, key ? key : "", now_ms);
    sx_list_remove(&rl->lru, &e->lru);
    sx_list_push_front(&rl->lru, &e->lru);
    bucket *b = &e->b[k];
    refill(rl, b, k, now_ms);
    v->allowed = b->tokens_milli >= MILLI;
    if (v->allowed) {
        b->tokens_milli -= MILLI;
        v->refused = b->refused;
        b->refused = 0;
    } else {
        v->refused = ++b->refused;
        int64_t missing = MILLI - b->tokens_milli;
        v->retry_after_s = retry_seconds((missing + rl->rate[k] - 1) / rl->rate[k]);
    }
    if (now_ms > e->last_ms)
        e->last_ms = now_ms;
    e->used |= 1u << k;
    trim(rl, e, now_ms);
    pthread_mutex_unlock(&rl->mu);
}

void ratelimit_local_at(ratelimit *rl, const char *key, ratelimit_kind kind, int64_t now_ms,
                        ratelimit_verdict *v)
{
    ratelimit_kind k = valid_kind(kind);
    decide_local(rl, key, k, now_ms, v);
    if (!v->allowed)
        count_refusal(rl, k);
}

bool ratelimit_take_at(ratelimit *rl, const char *user, ratelimit_kind kind, int64_t now_ms,
                       int *retry_after_s)
{
    ratelimit_verdict v;
    ratelimit_local_at(rl, user, kind, now_ms, &v);
    if (!v.allowed && retry_after_s)
        *retry_after_s = v.retry_after_s;
    return v.allowed;
}

/* ------------------------------------------------------------------ shared or not */

static void set_mode(ratelimit *rl, rl_mode m)
{
    pthread_mutex_lock(&rl->mode_mu);
    rl_mode old = rl->mode;
    if (old != m) {
        rl->mode = m;
        if (m == MODE_SHARED) {
            if (rl->m_shared)
                sx_metric_set(rl->m_shared, NULL, 1);
            SX_INFO(COMPONENT, "%s",
                    old == MODE_LOCAL ? "redis answers again: API rate limits are shared by "
                                        "every replica again"
                                      : "API rate limits are shared by every replica through "
                                        "redis");
        } else {
            if (rl->m_shared)
                sx_metric_set(rl->m_shared, NULL, 0);
            if (rl->m_fallbacks)
                sx_metric_inc(rl->m_fallbacks, NULL);
            SX_WARN(COMPONENT, "redis did not answer within ratelimit.redis_timeout: each "
                               "replica enforces the API rate limits on its own until it does");
        }
    }
    pthread_mutex_unlock(&rl->mode_mu);
}

void ratelimit_check(ratelimit *rl, const char *key, ratelimit_kind kind, ratelimit_verdict *v)
{
    ratelimit_kind k = valid_kind(kind);
    if (rl->shared) {
        char *name = sx_asprintf("%s:%s", kind_names[k], key ? key : "");
        redis_bucket_result res;
        int rc = redis_bucket_take(rl->shared, name, rl->rate[k], rl->burst[k], &res);
        sx_free(name);
        if (rc == 0) {
            set_mode(rl, MODE_SHARED);
            memset(v, 0, sizeof(*v));
            v->allowed = res.allowed;
            v->refused = res.refused;
            v->shared = true;
            if (!v->allowed) {
                v->retry_after_s = retry_seconds(res.retry_after_ms);
                count_refusal(rl, k);
            }
            return;
        }
        if (rc != REDIS_BUCKET_SKIPPED)
            set_mode(rl, MODE_LOCAL);
    }
    ratelimit_local_at(rl, key, k, sx_monotonic_ms(), v);
}

bool ratelimit_shared(ratelimit *rl)
{
    pthread_mutex_lock(&rl->mode_mu);
    bool shared = rl->mode == MODE_SHARED;
    pthread_mutex_unlock(&rl->mode_mu);
    return shared;
}

size_t ratelimit_tracked(ratelimit *rl)
{
    return sx_locked_size(&rl->mu, &rl->count);
}
