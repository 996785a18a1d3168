/*
 * redis_bucket.h — token buckets kept in Redis, so that every replica draws from the
 * same bucket.
 *
 * A bucket is a Redis hash under <redis.key_prefix>rl:<name>; one Lua script reads,
 * refills, takes and writes it atomically in one round trip, with Redis's own clock, so
 * replicas whose clocks differ still agree. The math is the per-replica buckets' (tokens
 * in thousandths, refilled at rate per second up to burst, one taken per request), and
 * the key expires once the bucket would be full again, so an idle user costs nothing.
 * The bucket also counts the refusals since its last allowed take, which lets the audit
 * write one row for many refusals.
 *
 * The connection is its own (redis_cache underneath, with its timeout, back-off and
 * reconnection), so a rate-limit check never queues behind a large snapshot read.
 * Thread-safe.
 */
#ifndef SX_STORAGE_REDIS_BUCKET_H
#define SX_STORAGE_REDIS_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/err.h"

typedef struct redis_bucket redis_bucket;

typedef struct redis_bucket_options {
    const char *url;        /* redis://...; NULL or "" disables (every take is skipped) */
    int timeout_ms;         /* connect and command timeout; 0 = 100 */
    const char *key_prefix; /* NULL = "sextant:" */
} redis_bucket_options;

/* One take's answer. */
typedef struct redis_bucket_result {
    bool allowed;
    int64_t retry_after_ms; /* refused: milliseconds until a token is back (>= 1); else 0 */
    int64_t refused;        /* allowed: refusals since the previous allowed take (the count
                             * is then reset); refused: the same count, this one included */
} redis_bucket_result;

/* What redis_bucket_take returns when it sent nothing (see REDIS_CACHE_SKIPPED). */
#define REDIS_BUCKET_SKIPPED 1

/* Fails only for a malformed URL (SX_EINVAL). Connects lazily. */
int redis_bucket_create(const redis_bucket_options *opt, redis_bucket **out,
                        sx_err *err) SX_MUSTCHECK;
/* NULL allowed. */
void redis_bucket_destroy(redis_bucket *b);

/* Whether a URL was configured. */
bool redis_bucket_enabled(const redis_bucket *b);

/* Takes one token from the bucket name (rate tokens per second, burst tokens at most;
 * both >= 1). Returns 0 with *res; REDIS_BUCKET_SKIPPED when nothing was sent (not
 * configured, in back-off after a failure, or another thread is connecting); or
 * SX_EUNAVAILABLE when Redis failed to answer now. The caller decides by itself in both
 * of the latter cases. */
int redis_bucket_take(redis_bucket *b, const char *name, int64_t rate, int64_t burst,
                      redis_bucket_result *res);

/* redis_bucket_take with now_ms (>= 0) in place of Redis's clock: for tests that
 * compare the script's math with the per-replica buckets', step by step. */
int redis_bucket_take_at(redis_bucket *b, const char *name, int64_t rate, int64_t burst,
                         int64_t now_ms, redis_bucket_result *res);

#endif
