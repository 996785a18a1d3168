/*
 * redis_cache.h — the Redis hot cache in front of PostgreSQL, on hiredis.
 *
 * The cache is an optimisation, never a dependency: when Redis is down, slow or not
 * configured, every read is a miss (callers fall back to PostgreSQL) and every write
 * is skipped, counted in sextant_cache_requests_total and logged once per outage
 * (one line when Redis goes away, one when it is back) — never an error returned to
 * the caller. Reconnection is attempted on use, at most once per back-off step.
 *
 * Thread safety: all functions are thread-safe.
 */
#ifndef SX_STORAGE_REDIS_CACHE_H
#define SX_STORAGE_REDIS_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"
#include "server/base/metrics.h"

typedef struct redis_cache redis_cache;

typedef struct redis_cache_options {
    const char *url;        /* redis://host:port[/db]; NULL or "" disables the cache */
    int timeout_ms;         /* connect and command timeout; 0 = 500 */
    const char *key_prefix; /* prepended to every key; NULL = "sextant:" */
    sx_metrics *metrics;    /* NULL allowed */
    bool quiet;             /* log outages at debug level: the owner logs its own lines */
    int backoff_min_ms;     /* first wait before reconnecting; 0 = 50 */
    int backoff_max_ms;     /* longest wait between attempts; 0 = 1000 */
} redis_cache_options;

/* What redis_cache_eval returns when it did not try: Redis is not configured, the
 * back-off after a failure has not passed, or another thread is connecting. */
#define REDIS_CACHE_SKIPPED 1

/* Creates the cache; connects lazily. Fails only for a malformed URL (SX_EINVAL).
 * *out is freed with redis_cache_destroy. */
int redis_cache_create(const redis_cache_options *opt, redis_cache **out, sx_err *err) SX_MUSTCHECK;
void redis_cache_destroy(redis_cache *c);

/* On a hit returns 0 with *val (caller frees with free; NUL-terminated for
 * convenience) and *len. Returns SX_ENOTFOUND on a miss, when Redis is unavailable
 * or when the cache is disabled; *val is then NULL. */
int redis_cache_get(redis_cache *c, const char *key, char **val, size_t *len);
/* Stores val under key with a TTL in seconds (0 = none); skipped when unavailable. */
void redis_cache_set(redis_cache *c, const char *key, const void *val, size_t len, int ttl_seconds);
/* Renames from to to (replacing it) and gives to a TTL in seconds (0 = none); skipped
 * when unavailable or when from does not exist. */
void redis_cache_rename(redis_cache *c, const char *from, const char *to, int ttl_seconds);
/* Deletes key; skipped when unavailable. */
void redis_cache_del(redis_cache *c, const char *key);
/* Runs the Lua script (EVALSHA with its sha1, hex; EVAL when Redis answers NOSCRIPT)
 * with one key (prefixed like every key) and nargs (at most 16) string arguments, and
 * reads the first nout elements of its array reply, which must be integers, into out.
 * Returns 0 when Redis answered so; REDIS_CACHE_SKIPPED when nothing was sent; and
 * SX_EUNAVAILABLE when the connection or the command failed now or the reply was an
 * error or of another shape (out is then unspecified). Each step (a connection
 * attempt, the command, its one EVAL retry) waits at most the timeout. */
int redis_cache_eval(redis_cache *c, const char *script, const char *sha1, const char *key,
                     int nargs, const char *const *args, long long *out, size_t nout);
/* Whether the last operation reached Redis (false when disabled). */
bool redis_cache_up(redis_cache *c);

#endif
