/*
 * ratelimit.h — token buckets for the REST API: per user, one for reads and one for
 * writes; per client address, one for failed authentications. Shared by every replica
 * through Redis, per replica while Redis is unreachable.
 *
 * Each user has a read bucket and a write bucket, and each client address a bucket of
 * failed authentications. A bucket holds up to burst tokens
 * and refills at rate tokens per second; a request takes one token or is refused with
 * the number of whole seconds after which one will be there (the Retry-After value).
 * Buckets are created on first use and dropped when idle long enough to be full again
 * (which is the same as never having existed); when more than max_users are tracked the
 * least recently used user is dropped too, so memory stays bounded whatever the number
 * of distinct users.
 *
 * With a shared store (storage/redis_bucket.h) every take goes to Redis first, so the
 * replicas together allow burst + rate × elapsed, not that much each. When Redis fails
 * to answer, the take is decided by this replica's own buckets (the same math; each
 * replica then allows its own share, which is the price of not failing requests), and
 * the next take tries Redis again once its back-off has passed. The mode in use is the
 * gauge sextant_ratelimit_shared (1 shared, 0 per replica), every switch to per-replica
 * buckets counts in sextant_ratelimit_fallbacks_total, and each switch, either way, is
 * one log line. Thread-safe.
 */
#ifndef SX_API_RATELIMIT_H
#define SX_API_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/metrics.h"

struct redis_bucket;

typedef enum ratelimit_kind {
    RATELIMIT_READ = 0,      /* GET and HEAD, keyed by user */
    RATELIMIT_WRITE = 1,     /* everything else, keyed by user */
    RATELIMIT_AUTH_FAIL = 2, /* failed authentications, keyed by client address */
} ratelimit_kind;

#define RATELIMIT_KINDS 3

typedef struct ratelimit_options {
    int64_t read_rate, read_burst;   /* tokens per second, bucket size; both >= 1 */
    int64_t write_rate, write_burst; /* same for writes */
    int64_t auth_rate, auth_burst;   /* same for failed authentications; 0 = 1 and 20 */
    size_t max_users;                /* users tracked at most; 0 = 100000 */
    struct redis_bucket *shared;     /* borrowed; NULL or disabled: per replica only */
} ratelimit_options;

/* The answer of one take. */
typedef struct ratelimit_verdict {
    bool allowed;
    int retry_after_s; /* refused: whole seconds until a token is back (1..86400); else 0 */
    int64_t refused;   /* allowed: refusals since the bucket's previous allowed take (the
                        * count restarts); refused: the same count, this one included */
    bool shared;       /* decided by the shared store, not by this replica's buckets */
} ratelimit_verdict;

typedef struct ratelimit ratelimit;

/* Creates a limiter; metrics (borrowed, NULL allowed) receives
 * sextant_api_rate_limited_total{kind="read|write"}. Never NULL. */
ratelimit *ratelimit_create(const ratelimit_options *opt, sx_metrics *metrics);
/* NULL allowed. */
void ratelimit_destroy(ratelimit *rl);

/* Takes one token of kind from key's bucket: from the shared store when there is one
 * and it answers, else from this replica's (see the top of this file). Counts a
 * refusal in sextant_api_rate_limited_total{kind}. */
void ratelimit_check(ratelimit *rl, const char *key, ratelimit_kind kind, ratelimit_verdict *v);

/* This replica's buckets only, at now_ms (a monotonic clock in milliseconds). */
void ratelimit_local_at(ratelimit *rl, const char *key, ratelimit_kind kind, int64_t now_ms,
                        ratelimit_verdict *v);

/* ratelimit_local_at's allowed; *retry_after_s (NULL allowed) as in the verdict. */
bool ratelimit_take_at(ratelimit *rl, const char *user, ratelimit_kind kind, int64_t now_ms,
                       int *retry_after_s);

/* Whether the last take was decided by the shared store. */
bool ratelimit_shared(ratelimit *rl);

/* Users currently tracked; for tests and metrics. */
size_t ratelimit_tracked(ratelimit *rl);

#endif
