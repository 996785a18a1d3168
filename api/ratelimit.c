/*
 * ratelimit.c — per-user read and write token buckets with bounded memory.
 *
 * Users live in a chained hash table and, at the same time, in a list ordered by last
 * use. Every take moves the user to the front; then entries are dropped from the back
 * while the table is over max_users or the last entry has been idle long enough for
 * both its buckets to be full again (a full bucket is indistinguishable from a missing
 * one, so dropping it changes no answer). That keeps memory proportional to the users
 * active in the last refill period, with the LRU bound as a backstop against a flood of
 * distinct names. Tokens are kept in thousandths so that integer arithmetic refills
 * exactly. One mutex guards everything: a take is a hash lookup and a few additions.
 */
#include "api/ratelimit.h"

#include <pthread.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/list.h"
#include "server/base/mem.h"

#define MILLI             1000
#define DEFAULT_MAX_USERS 100000

typedef struct bucket {
    int64_t tokens_milli; /* tokens × 1000, 0 .. burst × 1000 */
    int64_t updated_ms;   /* when tokens_milli was last brought up to date */
} bucket;

typedef struct entry {
    char *user;
    uint64_t hash;
    bucket b[2];             /* indexed by ratelimit_kind */
    int64_t last_ms;         /* last take, for idleness */
    struct entry *next_hash; /* chain in the bucket array */
    sx_link lru;             /* in ratelimit.lru */
} entry;

struct ratelimit {
    pthread_mutex_t mu;
    int64_t rate[2], burst[2]; /* per kind */
    int64_t idle_ms;           /* after this long without a take, both buckets are full */
    size_t max_users;
    entry **table;
    size_t nslots; /* power of two */
    size_t count;
    sx_list lru;          /* every entry, the most recently used first */
    sx_metric *m_limited; /* sextant_api_rate_limited_total{kind} */
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
    for (int k = 0; k < 2; k++) {
        int64_t full_ms = (rl->burst[k] * MILLI + rl->rate[k] - 1) / rl->rate[k];
        if (full_ms > rl->idle_ms)
            rl->idle_ms = full_ms;
    }
    rl->max_users = opt->max_users ? opt->max_users : DEFAULT_MAX_USERS;
    rl->nslots = 256;
    rl->table = sx_calloc(rl->nslots, sizeof(entry *));
    if (metrics)
        rl->m_limited = sx_metrics_counter(metrics, "sextant_api_rate_limited_total",
                                           "API requests refused by the per-user rate limit, by "
                                           "bucket",
                                           "kind");
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
    for (int k = 0; k < 2; k++) {
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

/* Drops idle users from the back of the list, and any beyond max_users; never keep. */
static void trim(ratelimit *rl, const entry *keep, int64_t now_ms)
{
    entry *e;
    while ((e = lru_oldest(rl)) != NULL && e != keep &&
           (rl->count > rl->max_users || now_ms - e->last_ms >= rl->idle_ms))
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

bool ratelimit_take_at(ratelimit *rl, const char *user, ratelimit_kind kind, int64_t now_ms,
                       int *retry_after_s)
{
    int k = kind == RATELIMIT_WRITE ? RATELIMIT_WRITE : RATELIMIT_READ;
    pthread_mutex_lock(&rl->mu);
    entry *e = lookup_or_add(rl, user ? user : "", now_ms);
    sx_list_remove(&rl->lru, &e->lru);
    sx_list_push_front(&rl->lru, &e->lru);
    bucket *b = &e->b[k];
    refill(rl, b, (ratelimit_kind)k, now_ms);
    bool ok = b->tokens_milli >= MILLI;
    int retry = 0;
    if (ok) {
        b->tokens_milli -= MILLI;
    } else {
        /* Whole seconds until the bucket holds one token again, rounded up. */
        int64_t missing = MILLI - b->tokens_milli;
        int64_t wait_ms = (missing + rl->rate[k] - 1) / rl->rate[k];
        int64_t s = (wait_ms + 999) / 1000;
        retry = s < 1 ? 1 : s > 86400 ? 86400 : (int)s;
    }
    if (now_ms > e->last_ms)
        e->last_ms = now_ms;
    trim(rl, e, now_ms);
    pthread_mutex_unlock(&rl->mu);
    if (!ok) {
        const char *label[] = {k == RATELIMIT_WRITE ? "write" : "read"};
        if (rl->m_limited)
            sx_metric_inc(rl->m_limited, label);
        if (retry_after_s)
            *retry_after_s = retry;
    }
    return ok;
}

bool ratelimit_take(ratelimit *rl, const char *user, ratelimit_kind kind, int *retry_after_s)
{
    return ratelimit_take_at(rl, user, kind, sx_monotonic_ms(), retry_after_s);
}

size_t ratelimit_tracked(ratelimit *rl)
{
    pthread_mutex_lock(&rl->mu);
    size_t n = rl->count;
    pthread_mutex_unlock(&rl->mu);
    return n;
}
