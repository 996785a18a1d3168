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
    int backoff_min_ms;     /* first wait before reconnecting; 0 = 50 */
    int backoff_max_ms;     /* longest wait between attempts; 0 = 1000 */
} redis_cache_options;

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
/* Whether the last operation reached Redis (false when disabled). */
bool redis_cache_up(redis_cache *c);

#endif
