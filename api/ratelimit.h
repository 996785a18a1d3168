/*
 * ratelimit.h — per-user token buckets for the REST API, one for reads and one for
 * writes.
 *
 * Each user has a read bucket and a write bucket. A bucket holds up to burst tokens
 * and refills at rate tokens per second; a request takes one token or is refused with
 * the number of whole seconds after which one will be there (the Retry-After value).
 * Buckets are created on first use and dropped when idle long enough to be full again
 * (which is the same as never having existed); when more than max_users are tracked the
 * least recently used user is dropped too, so memory stays bounded whatever the number
 * of distinct users. Thread-safe.
 */
#ifndef SX_API_RATELIMIT_H
#define SX_API_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/metrics.h"

typedef enum ratelimit_kind {
    RATELIMIT_READ = 0,  /* GET and HEAD */
    RATELIMIT_WRITE = 1, /* everything else */
} ratelimit_kind;

typedef struct ratelimit_options {
    int64_t read_rate, read_burst;   /* tokens per second, bucket size; both >= 1 */
    int64_t write_rate, write_burst; /* same for writes */
    size_t max_users;                /* users tracked at most; 0 = 100000 */
} ratelimit_options;

typedef struct ratelimit ratelimit;

/* Creates a limiter; metrics (borrowed, NULL allowed) receives
 * sextant_api_rate_limited_total{kind="read|write"}. Never NULL. */
ratelimit *ratelimit_create(const ratelimit_options *opt, sx_metrics *metrics);
/* NULL allowed. */
void ratelimit_destroy(ratelimit *rl);

/* Takes one token of kind from user's bucket at now_ms (a monotonic clock in
 * milliseconds). Returns true when allowed; false when the bucket is empty, and then
 * *retry_after_s (NULL allowed) is the whole seconds until a token is back (>= 1). */
bool ratelimit_take_at(ratelimit *rl, const char *user, ratelimit_kind kind, int64_t now_ms,
                       int *retry_after_s);

/* ratelimit_take_at with the current monotonic time. */
bool ratelimit_take(ratelimit *rl, const char *user, ratelimit_kind kind, int *retry_after_s);

/* Users currently tracked; for tests and metrics. */
size_t ratelimit_tracked(ratelimit *rl);

#endif
