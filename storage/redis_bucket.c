/*
 * redis_bucket.c — token buckets kept in Redis, taken with one Lua script.
 *
 * The script (below) is the whole algorithm, so that a take is atomic and costs one
 * round trip: it reads the hash {t = tokens × 1000, u = last refill in Redis's
 * milliseconds, n = refusals since the last allowed take}, refills t by the elapsed
 * milliseconds × rate (capped at burst × 1000, the same integer math as the
 * per-replica buckets in api/ratelimit.c), takes 1000 or counts a refusal, writes the
 * hash back and sets it to expire when it would be full again (plus a second, so the
 * refusal count survives a bucket that is only just full). A missing hash is a full
 * bucket. Time is Redis's TIME, not the caller's, so replicas with skewed clocks share
 * one timeline; should that clock step back, the bucket restarts its refill from the
 * new time rather than wait for the old one.
 *
 * EVALSHA is sent first with the script's SHA-1 (computed once here); a server that
 * does not know it (first use, restart, SCRIPT FLUSH) answers NOSCRIPT and the same
 * call sends EVAL, which caches it again (storage/redis_cache.c).
 */
#include "storage/redis_bucket.h"

#include <inttypes.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/redis_cache.h"

#define DEFAULT_TIMEOUT_MS 100

/* KEYS[1] the bucket; ARGV[1] rate (tokens per second), ARGV[2] burst, ARGV[3] (tests
 * only) the time in milliseconds instead of Redis's clock.
 * Returns {allowed (0 or 1), milliseconds until a token is back, refusals}. */
static const char script[] =
    "local rate = tonumber(ARGV[1])\n"
    "local cap = tonumber(ARGV[2]) * 1000\n"
    "local now = tonumber(ARGV[3])\n"
    "if not now then\n"
    "  local clock = redis.call('TIME')\n"
    "  now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)\n"
    "end\n"
    "local s = redis.call('HMGET', KEYS[1], 't', 'u', 'n')\n"
    "local t = tonumber(s[1]) or cap\n"
    "local u = tonumber(s[2]) or now\n"
    "local n = tonumber(s[3]) or 0\n"
    "if t > cap then t = cap end\n"
    "local dt = now - u\n"
    "if dt > 0 then\n"
    "  if dt > cap then dt = cap end\n"
    "  t = math.min(cap, t + dt * rate)\n"
    "end\n"
    "u = now\n"
    "local allowed, wait, refused = 0, 0, 0\n"
    "if t >= 1000 then\n"
    "  t = t - 1000\n"
    "  allowed = 1\n"
    "  refused = n\n"
    "  n = 0\n"
    "else\n"
    "  n = n + 1\n"
    "  refused = n\n"
    "  wait = math.ceil((1000 - t) / rate)\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 't', string.format('%d', t), 'u', string.format('%d', u),\n"
    "           'n', string.format('%d', n))\n"
    "redis.call('PEXPIRE', KEYS[1], math.ceil((cap - t) / rate) + 1000)\n"
    "return {allowed, wait, refused}\n";

struct redis_bucket {
    redis_cache *conn; /* owned; its own connection */
    bool enabled;
    char sha1[41]; /* hex SHA-1 of script */
};

int redis_bucket_create(const redis_bucket_options *opt, redis_bucket **out, sx_err *err)
{
    *out = NULL;
    redis_cache_options co = {.url = opt->url,
                              .timeout_ms =
                                  opt->timeout_ms > 0 ? opt->timeout_ms : DEFAULT_TIMEOUT_MS,
                              .key_prefix = opt->key_prefix,
                              .metrics = NULL,
                              .quiet = true};
    redis_cache *conn;
    int rc = redis_cache_create(&co, &conn, err);
    if (rc != 0)
        return rc;
    redis_bucket *b = sx_calloc(1, sizeof(*b));
    b->conn = conn;
    b->enabled = opt->url != NULL && opt->url[0] != '\0';
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)script, strlen(script), md);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(b->sha1 + 2 * i, 3, "%02x", md[i]);
    *out = b;
    return 0;
}

void redis_bucket_destroy(redis_bucket *b)
{
    if (b == NULL)
        return;
    redis_cache_destroy(b->conn);
    sx_free(b);
}

bool redis_bucket_enabled(const redis_bucket *b)
{
    return b != NULL && b->enabled;
}

/* One take; now_ms < 0 for Redis's clock. */
static int take(redis_bucket *b, const char *name, int64_t rate, int64_t burst, int64_t now_ms,
                redis_bucket_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!redis_bucket_enabled(b))
        return REDIS_BUCKET_SKIPPED;
    char r[24], c[24], t[24];
    char *key = sx_asprintf("rl:%s", name);
    snprintf(r, sizeof(r), "%" PRId64, rate < 1 ? 1 : rate);
    snprintf(c, sizeof(c), "%" PRId64, burst < 1 ? 1 : burst);
    snprintf(t, sizeof(t), "%" PRId64, now_ms);
    const char *args[] = {r, c, t};
    long long v[3];
    int rc = redis_cache_eval(b->conn, script, b->sha1, key, now_ms < 0 ? 2 : 3, args, v, 3);
    sx_free(key);
    if (rc == REDIS_CACHE_SKIPPED)
        return REDIS_BUCKET_SKIPPED;
    if (rc != 0)
        return SX_EUNAVAILABLE;
    res->allowed = v[0] == 1;
    res->retry_after_ms = res->allowed ? 0 : (v[1] < 1 ? 1 : v[1]);
    res->refused = v[2] < 0 ? 0 : v[2];
    return 0;
}

int redis_bucket_take(redis_bucket *b, const char *name, int64_t rate, int64_t burst,
                      redis_bucket_result *res)
{
    return take(b, name, rate, burst, -1, res);
}

int redis_bucket_take_at(redis_bucket *b, const char *name, int64_t rate, int64_t burst,
                         int64_t now_ms, redis_bucket_result *res)
{
    return take(b, name, rate, burst, now_ms < 0 ? 0 : now_ms, res);
}
