/*
 * redis_cache.c — the Redis hot cache in front of PostgreSQL, on hiredis.
 *
 * Design: one blocking hiredis connection behind a mutex. Commands are short (GET,
 * SET, DEL, RENAME) so serialising them costs little, and one connection keeps
 * the outage logic in one place. Every command runs with the configured timeout, so
 * a hung Redis costs a caller at most timeout_ms once; the failure then marks the
 * cache down and drops the connection, and until the back-off window has passed
 * (100 ms doubling to 5 s) every call is skipped at once without touching the
 * network. The first call after the window tries to reconnect; it does so outside
 * the mutex, with a "connecting" flag that makes concurrent calls skip rather than
 * queue behind a slow connect. One warn line is logged when Redis goes away and one
 * info line when it is back, whatever the number of calls in between.
 *
 * hiredis writes with write(2), which raises SIGPIPE on a socket the server has
 * closed; like libpq we block SIGPIPE in the calling thread around every command and
 * swallow one that our own write raised, so the cache never depends on the process
 * ignoring SIGPIPE.
 */
#include "storage/redis_cache.h"

#include <ctype.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/buf.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/num.h"

#define COMPONENT          "redis_cache"
#define DEFAULT_TIMEOUT_MS 500
#define DEFAULT_PORT       6379
#define BACKOFF_MIN_MS     50 /* defaults of redis_cache_options' back-off bounds */
#define BACKOFF_MAX_MS     1000

enum op { OP_GET, OP_SET, OP_DEL, OP_RENAME, OP_EVAL };
static const char *const op_names[] = {"get", "set", "del", "rename", "eval"};

struct redis_cache {
    pthread_mutex_t mu; /* guards every field below that changes after create */
    bool enabled;       /* false when the URL was NULL or "": every call is skipped */
    char *host;         /* owned; NULL when disabled */
    int port;           /* TCP port */
    char *user;         /* owned ACL user name, NULL for the default user */
    char *password;     /* owned, NULL when none; never logged */
    int db;             /* SELECT index, -1 when the URL named none */
    char where[300];    /* "host:port" for messages */
    int timeout_ms;     /* connect and command timeout */
    char *prefix;       /* owned key prefix */
    bool quiet;         /* outage and recovery lines at debug level (the owner logs them) */
    redisContext *ctx;  /* the connection; NULL while down or not yet opened */
    bool up;            /* the last operation reached Redis */
    bool outage_logged; /* the warn line of the current outage was written */
    bool connecting;    /* a thread is opening a connection outside the mutex */
    long long retry_at; /* monotonic ms before which no reconnect is tried */
    int backoff_ms;     /* current back-off step; 0 after a success */
    int backoff_min_ms; /* bounds of the back-off (redis.reconnect_backoff_min/_max) */
    int backoff_max_ms;
    sx_metric *m_req; /* sextant_cache_requests_total{op,result} */
    sx_metric *m_up;  /* sextant_cache_up */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void count(redis_cache *c, enum op op, const char *result)
{
    if (c->m_req) {
        const char *labels[] = {op_names[op], result};
        sx_metric_inc(c->m_req, labels);
    }
}

/* ------------------------------------------------------------------ URL parsing */

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = (char)tolower((unsigned char)ch);
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into a new string; NULL when an escape is malformed. */
static char *pct_decode(const char *s, size_t n)
{
    char *out = sx_malloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n) {
                sx_free(out);
                return NULL;
            }
            int hi = hexval(s[i + 1]);
            int lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0) {
                sx_free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* redis://[[user]:password@]host[:port][/db] */
static int parse_url(redis_cache *c, const char *url, sx_err *err)
{
    char shown[512];
    sx_redact_url(url, shown, sizeof(shown));
    static const char scheme[] = "redis://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return sx_err_set(err, SX_EINVAL, "invalid redis url \"%s\": must start with redis://",
                          shown);
    const char *p = url + sizeof(scheme) - 1;
    const char *end = p + strcspn(p, "/?#");
    const char *at = memchr(p, '@', (size_t)(end - p));
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *user_end = colon ? colon : at;
        if (user_end > p) {
            c->user = pct_decode(p, (size_t)(user_end - p));
            if (c->user == NULL)
                return sx_err_set(err, SX_EINVAL,
                                  "invalid redis url \"%s\": bad percent-escape in user name",
                                  shown);
        }
        if (colon) {
            c->password = pct_decode(colon + 1, (size_t)(at - colon - 1));
            if (c->password == NULL)
                return sx_err_set(err, SX_EINVAL,
                                  "invalid redis url \"%s\": bad percent-escape in password",
                                  shown);
        }
        if (c->user && c->password == NULL)
            return sx_err_set(err, SX_EINVAL,
                              "invalid redis url \"%s\": a user name needs a password", shown);
        p = at + 1;
    }
    const char *host_end;
    const char *after;
    if (*p == '[') {
        host_end = memchr(p, ']', (size_t)(end - p));
        if (host_end == NULL)
            return sx_err_set(err, SX_EINVAL, "invalid redis url \"%s\": unterminated [", shown);
        c->host = sx_strndup(p + 1, (size_t)(host_end - p - 1));
        after = host_end + 1;
    } else {
        host_end = memchr(p, ':', (size_t)(end - p));
        if (host_end == NULL)
            host_end = end;
        c->host = sx_strndup(p, (size_t)(host_end - p));
        after = host_end;
    }
    if (c->host[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "invalid redis url \"%s\": host is empty", shown);
    c->port = DEFAULT_PORT;
    if (after < end) {
        if (*after != ':')
            return sx_err_set(err, SX_EINVAL, "invalid redis url \"%s\": junk after host", shown);
        long long port = sx_parse_digits(after + 1, (size_t)(end - after - 1), 10, 1, 65535);
        if (port < 0)
            return sx_err_set(err, SX_EINVAL,
                              "invalid redis url \"%s\": port must be between 1 and 65535", shown);
        c->port = (int)port;
    }
    c->db = -1;
    if (*end == '/' && end[1] != '\0') {
        long long db = sx_parse_digits(end + 1, strlen(end + 1), 10, 0, INT_MAX);
        if (db < 0)
            return sx_err_set(err, SX_EINVAL,
                              "invalid redis url \"%s\": database must be a non-negative integer",
                              shown);
        c->db = (int)db;
    } else if (*end != '\0' && strcmp(end, "/") != 0) {
        return sx_err_set(err, SX_EINVAL,
                          "invalid redis url \"%s\": query strings and fragments are not supported",
                          shown);
    }
    snprintf(c->where, sizeof(c->where), "%s:%d", c->host, c->port);
    return 0;
}

/* ------------------------------------------------------------------ SIGPIPE */

typedef struct sigpipe_guard {
    sigset_t old;
    bool was_pending;
} sigpipe_guard;

static void sigpipe_block(sigpipe_guard *g)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
    sigemptyset(&pending);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
}

static void sigpipe_restore(sigpipe_guard *g)
{
    if (!g->was_pending) {
        sigset_t pipe_set, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        sigemptyset(&pending);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ------------------------------------------------------------------ connection */

/* Why a hiredis context failed, lowercase, with a timeout named as such. */
static void ctx_why(const redisContext *ctx, int timeout_ms, char *why, size_t n)
{
    if (ctx == NULL) {
        snprintf(why, n, "out of memory");
        return;
    }
    if (ctx->err == REDIS_ERR_IO && strstr(ctx->errstr, "temporarily unavailable")) {
        snprintf(why, n, "timed out after %d ms", timeout_ms);
        return;
    }
    if (ctx->err == REDIS_ERR_EOF) {
        snprintf(why, n, "server closed the connection");
        return;
    }
    snprintf(why, n, "%s", ctx->errstr[0] ? ctx->errstr : "unknown error");
    why[0] = (char)tolower((unsigned char)why[0]);
}

/* Runs one setup command (AUTH, SELECT) on a fresh connection. */
static bool setup_cmd(redisContext *ctx, int timeout_ms, char *why, size_t n, const char *what,
                      int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(ctx, argc, argv, NULL);
    if (r == NULL) {
        char inner[200];
        ctx_why(ctx, timeout_ms, inner, sizeof(inner));
        snprintf(why, n, "%s: %s", what, inner);
        return false;
    }
    bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        snprintf(why, n, "%s: %.*s", what, (int)(r->len > 200 ? 200 : r->len), r->str);
        why[0] = (char)tolower((unsigned char)why[0]);
    }
    freeReplyObject(r);
    return ok;
}

/* Opens and prepares a connection; runs without the mutex. NULL and why on failure. */
static redisContext *open_ctx(redis_cache *c, char *why, size_t n)
{
    struct timeval tv = {c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000};
    redisContext *ctx = redisConnectWithTimeout(c->host, c->port, tv);
    if (ctx == NULL || ctx->err) {
        char inner[200];
        ctx_why(ctx, c->timeout_ms, inner, sizeof(inner));
        snprintf(why, n, "could not connect to redis at %s: %s", c->where, inner);
        if (ctx)
            redisFree(ctx);
        return NULL;
    }
    if (redisSetTimeout(ctx, tv) != REDIS_OK) {
        snprintf(why, n, "could not set the timeout of the redis connection to %s", c->where);
        redisFree(ctx);
        return NULL;
    }
    (void)redisEnableKeepAlive(ctx); /* best effort: only speeds up detecting dead peers */
    char step[220];
    if (c->password) {
        const char *argv[] = {"AUTH", c->user ? c->user : c->password, c->password};
        int argc = c->user ? 3 : 2;
        if (!setup_cmd(ctx, c->timeout_ms, step, sizeof(step), "authentication failed", argc,
                       argv)) {
            snprintf(why, n, "could not connect to redis at %s: %s", c->where, step);
            redisFree(ctx);
            return NULL;
        }
    }
    if (c->db >= 0) {
        char dbs[16];
        snprintf(dbs, sizeof(dbs), "%d", c->db);
        const char *argv[] = {"SELECT", dbs};
        if (!setup_cmd(ctx, c->timeout_ms, step, sizeof(step), "could not select database", 2,
                       argv)) {
            snprintf(why, n, "could not connect to redis at %s: %s", c->where, step);
            redisFree(ctx);
            return NULL;
        }
    }
    return ctx;
}

static void set_up(redis_cache *c, bool up)
{
    c->up = up;
    if (c->m_up)
        sx_metric_set(c->m_up, NULL, up ? 1 : 0);
}

/* Records a failure (with c->mu held): drops the connection, starts or lengthens the
 * back-off, and logs the outage once. */
static void mark_down(redis_cache *c, const char *why)
{
    if (c->ctx) {
        redisFree(c->ctx);
        c->ctx = NULL;
    }
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : c->backoff_min_ms;
    if (c->backoff_ms > c->backoff_max_ms)
        c->backoff_ms = c->backoff_max_ms;
    c->retry_at = now_ms() + c->backoff_ms;
    set_up(c, false);
    if (!c->outage_logged) {
        c->outage_logged = true;
        if (c->quiet)
            SX_DEBUG(COMPONENT, "redis unavailable: %s", why);
        else
            SX_WARN(COMPONENT, "redis unavailable, serving from postgresql: %s", why);
    } else {
        SX_DEBUG(COMPONENT, "redis still unavailable: %s", why);
    }
}

/*
 * Takes the connection for one command: returns with c->mu held and c->ctx set, or
 * returns false without the mutex when the call must be skipped (*tried tells
 * whether a connection attempt failed, which counts as an error, not a skip).
 */
static bool take_conn(redis_cache *c, bool *tried)
{
    *tried = false;
    pthread_mutex_lock(&c->mu);
    if (c->ctx)
        return true;
    if (c->connecting || now_ms() < c->retry_at) {
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    c->connecting = true;
    pthread_mutex_unlock(&c->mu);

    char why[512];
    sigpipe_guard g;
    sigpipe_block(&g);
    redisContext *ctx = open_ctx(c, why, sizeof(why));
    sigpipe_restore(&g);

    pthread_mutex_lock(&c->mu);
    c->connecting = false;
    if (ctx == NULL) {
        mark_down(c, why);
        pthread_mutex_unlock(&c->mu);
        *tried = true;
        return false;
    }
    c->ctx = ctx;
    c->backoff_ms = 0;
    c->retry_at = 0;
    if (c->outage_logged) {
        c->outage_logged = false;
        if (c->quiet)
            SX_DEBUG(COMPONENT, "redis available again");
        else
            SX_INFO(COMPONENT, "redis available again");
    } else {
        SX_DEBUG(COMPONENT, "connected to redis at %s", c->where);
    }
    set_up(c, true);
    return true;
}

/* Runs one command on the taken connection (c->mu held); NULL after a failure, which
 * has then been recorded with mark_down. */
static redisReply *run(redis_cache *c, enum op op, int argc, const char **argv, const size_t *lens)
{
    sigpipe_guard g;
    sigpipe_block(&g);
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, lens);
    sigpipe_restore(&g);
    if (r == NULL) {
        char inner[256], why[640];
        ctx_why(c->ctx, c->timeout_ms, inner, sizeof(inner));
        snprintf(why, sizeof(why), "%s failed at %s: %s", op_names[op], c->where, inner);
        mark_down(c, why);
        return NULL;
    }
    set_up(c, true);
    return r;
}

static char *full_key(const redis_cache *c, const char *key, size_t *len)
{
    char *k = sx_asprintf("%s%s", c->prefix, key);
    *len = strlen(k);
    return k;
}

/* ------------------------------------------------------------------ public */

int redis_cache_create(const redis_cache_options *opt, redis_cache **out, sx_err *err)
{
    *out = NULL;
    redis_cache *c = sx_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->backoff_min_ms = opt->backoff_min_ms > 0 ? opt->backoff_min_ms : BACKOFF_MIN_MS;
    c->backoff_max_ms = opt->backoff_max_ms > 0 ? opt->backoff_max_ms : BACKOFF_MAX_MS;
    if (c->backoff_max_ms < c->backoff_min_ms)
        c->backoff_max_ms = c->backoff_min_ms;
    c->prefix = sx_strdup(opt->key_prefix ? opt->key_prefix : "sextant:");
    c->quiet = opt->quiet;
    c->db = -1;
    c->enabled = opt->url != NULL && opt->url[0] != '\0';
    if (c->enabled) {
        int rc = parse_url(c, opt->url, err);
        if (rc) {
            redis_cache_destroy(c);
            return rc;
        }
    }
    if (opt->metrics) {
        c->m_req = sx_metrics_counter(opt->metrics, "sextant_cache_requests_total",
                                      "Redis cache operations by result", "op,result");
        c->m_up = sx_metrics_gauge(opt->metrics, "sextant_cache_up",
                                   "Whether the last Redis cache operation reached Redis", NULL);
        sx_metric_set(c->m_up, NULL, 0);
    }
    *out = c;
    return 0;
}

void redis_cache_destroy(redis_cache *c)
{
    if (c == NULL)
        return;
    if (c->ctx)
        redisFree(c->ctx);
    pthread_mutex_destroy(&c->mu);
    sx_free(c->host);
    sx_free(c->user);
    if (c->password) {
        memset(c->password, 0, strlen(c->password));
        sx_free(c->password);
    }
    sx_free(c->prefix);
    sx_free(c);
}

int redis_cache_get(redis_cache *c, const char *key, char **val, size_t *len)
{
    *val = NULL;
    if (len)
        *len = 0;
    bool tried;
    if (!c->enabled || !take_conn(c, &tried)) {
        count(c, OP_GET, c->enabled && tried ? "error" : "skipped");
        return SX_ENOTFOUND;
    }
    size_t klen;
    char *k = full_key(c, key, &klen);
    const char *argv[] = {"GET", k};
    size_t lens[] = {3, klen};
    redisReply *r = run(c, OP_GET, 2, argv, lens);
    pthread_mutex_unlock(&c->mu);
    sx_free(k);
    if (r == NULL) {
        count(c, OP_GET, "error");
        return SX_ENOTFOUND;
    }
    int rc = SX_ENOTFOUND;
    if (r->type == REDIS_REPLY_STRING) {
        char *v = sx_malloc(r->len + 1);
        memcpy(v, r->str, r->len);
        v[r->len] = '\0';
        *val = v;
        if (len)
            *len = r->len;
        rc = 0;
        count(c, OP_GET, "hit");
    } else if (r->type == REDIS_REPLY_NIL) {
        count(c, OP_GET, "miss");
    } else {
        /* Redis answered with an error (WRONGTYPE, OOM, LOADING): it is reachable, so
         * the connection stays, but the read falls back like any miss. */
        SX_DEBUG(COMPONENT, "redis get refused: %.*s",
                 r->type == REDIS_REPLY_ERROR ? (int)r->len : 0,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
        count(c, OP_GET, "error");
    }
    freeReplyObject(r);
    return rc;
}

/* Runs SET, DEL or RENAME and counts the outcome; true when Redis carried it out. */
static bool write_cmd(redis_cache *c, enum op op, int argc, const char **argv, const size_t *lens)
{
    bool tried;
    if (!c->enabled || !take_conn(c, &tried)) {
        count(c, op, c->enabled && tried ? "error" : "skipped");
        return false;
    }
    redisReply *r = run(c, op, argc, argv, lens);
    pthread_mutex_unlock(&c->mu);
    if (r == NULL) {
        count(c, op, "error");
        return false;
    }
    bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) {
        SX_DEBUG(COMPONENT, "redis %s refused: %.*s", op_names[op], (int)r->len, r->str);
        count(c, op, "error");
    } else {
        count(c, op, "ok");
    }
    freeReplyObject(r);
    return ok;
}

void redis_cache_set(redis_cache *c, const char *key, const void *val, size_t len, int ttl_seconds)
{
    if (!c->enabled) {
        count(c, OP_SET, "skipped");
        return;
    }
    size_t klen;
    char *k = full_key(c, key, &klen);
    char ttl[16];
    snprintf(ttl, sizeof(ttl), "%d", ttl_seconds);
    const char *argv[] = {"SET", k, len ? (const char *)val : "", "EX", ttl};
    size_t lens[] = {3, klen, len, 2, strlen(ttl)};
    (void)write_cmd(c, OP_SET, ttl_seconds > 0 ? 5 : 3, argv, lens);
    sx_free(k);
}

void redis_cache_rename(redis_cache *c, const char *from, const char *to, int ttl_seconds)
{
    if (!c->enabled) {
        count(c, OP_RENAME, "skipped");
        return;
    }
    size_t flen, tlen;
    char *f = full_key(c, from, &flen);
    char *t = full_key(c, to, &tlen);
    char ttl[16];
    snprintf(ttl, sizeof(ttl), "%d", ttl_seconds);
    const char *argv[] = {"RENAME", f, t};
    size_t lens[] = {6, flen, tlen};
    /* RENAME keeps the source's TTL; the new name's comes second (a missing source is
     * refused, and then there is nothing to expire). */
    if (write_cmd(c, OP_RENAME, 3, argv, lens) && ttl_seconds > 0) {
        const char *xargv[] = {"EXPIRE", t, ttl};
        size_t xlens[] = {6, tlen, strlen(ttl)};
        (void)write_cmd(c, OP_RENAME, 3, xargv, xlens);
    }
    sx_free(f);
    sx_free(t);
}

void redis_cache_del(redis_cache *c, const char *key)
{
    if (!c->enabled) {
        count(c, OP_DEL, "skipped");
        return;
    }
    size_t klen;
    char *k = full_key(c, key, &klen);
    const char *argv[] = {"DEL", k};
    size_t lens[] = {3, klen};
    (void)write_cmd(c, OP_DEL, 2, argv, lens);
    sx_free(k);
}

int redis_cache_eval(redis_cache *c, const char *script, const char *sha1, const char *key,
                     int nargs, const char *const *args, long long *out, size_t nout)
{
    bool tried;
    if (!c->enabled || !take_conn(c, &tried)) {
        count(c, OP_EVAL, c->enabled && tried ? "error" : "skipped");
        return c->enabled && tried ? SX_EUNAVAILABLE : REDIS_CACHE_SKIPPED;
    }
    if (nargs < 0 || nargs > 16)
        nargs = nargs < 0 ? 0 : 16;
    size_t klen;
    char *k = full_key(c, key, &klen);
    const char *argv[20] = {"EVALSHA", sha1, "1", k};
    size_t lens[20] = {7, strlen(sha1), 1, klen};
    for (int i = 0; i < nargs; i++) {
        argv[4 + i] = args[i];
        lens[4 + i] = strlen(args[i]);
    }
    redisReply *r = run(c, OP_EVAL, 4 + nargs, argv, lens);
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* The server does not have the script (first use, a restart, SCRIPT FLUSH):
         * EVAL sends it and caches it for the EVALSHA calls that follow. */
        freeReplyObject(r);
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = script;
        lens[1] = strlen(script);
        r = run(c, OP_EVAL, 4 + nargs, argv, lens);
    }
    pthread_mutex_unlock(&c->mu);
    sx_free(k);
    if (r == NULL) {
        count(c, OP_EVAL, "error");
        return SX_EUNAVAILABLE;
    }
    bool ok = r->type == REDIS_REPLY_ARRAY && r->elements >= nout;
    for (size_t i = 0; ok && i < nout; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            ok = false;
        else
            out[i] = r->element[i]->integer;
    }
    if (!ok) {
        /* Reachable but refusing (OOM, BUSY, a script error): this call fails, the
         * connection stays. */
        SX_DEBUG(COMPONENT, "redis eval refused: %.*s",
                 r->type == REDIS_REPLY_ERROR ? (int)r->len : 0,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
        count(c, OP_EVAL, "error");
    } else {
        count(c, OP_EVAL, "ok");
    }
    freeReplyObject(r);
    return ok ? 0 : SX_EUNAVAILABLE;
}

bool redis_cache_up(redis_cache *c)
{
    if (!c->enabled)
        return false;
    pthread_mutex_lock(&c->mu);
    bool up = c->up;
    pthread_mutex_unlock(&c->mu);
    return up;
}
