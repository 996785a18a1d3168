/*
 * test_redis_cache.c — the Redis cache against real redis-server processes: round
 * trips of binary values, TTLs, AUTH and SELECT, and what a caller sees when Redis
 * goes away, hangs and comes back (misses, skipped writes, one log line each way,
 * metrics), plus a disabled cache and malformed URLs.
 */
#include "tests/lib/testlib.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/base/buf.h"
#include "server/base/log.h"
#include "server/base/metrics.h"
#include "storage/redis_cache.h"

/* A key prefix no other run of this test shares on the shared Redis. */
static char prefix[96];

static double requests(sx_metrics *m, const char *op, const char *result)
{
    sx_metric *f = sx_metrics_counter(m, "sextant_cache_requests_total", "", "op,result");
    const char *labels[] = {op, result};
    return sx_metric_value(f, labels);
}

static bool rendered_has(sx_metrics *m, const char *line)
{
    sx_buf b = {0};
    sx_metrics_render(m, &b);
    bool found = strstr(sx_buf_cstr(&b), line) != NULL;
    sx_buf_free(&b);
    return found;
}

/* The back-off of the caches that go through an outage: one step, long enough that
 * the calls a test makes right after a failure are all inside the window. */
#define OUTAGE_BACKOFF_MS 5000

static redis_cache *make_cache_backoff(const char *url, int timeout_ms, int backoff_ms,
                                       sx_metrics *m)
{
    redis_cache_options o = {.url = url,
                             .timeout_ms = timeout_ms,
                             .key_prefix = prefix,
                             .metrics = m,
                             .backoff_min_ms = backoff_ms,
                             .backoff_max_ms = backoff_ms};
    redis_cache *c = NULL;
    TL_OK(redis_cache_create(&o, &c, &e_));
    assert_non_null(c);
    return c;
}

static redis_cache *make_cache(const char *url, int timeout_ms, sx_metrics *m)
{
    return make_cache_backoff(url, timeout_ms, 0, m);
}

/* The integer reply of a command on a direct hiredis connection, to check what the
 * cache really stored. */
static long long raw_integer(redisContext *r, const char *fmt, const char *arg)
{
    redisReply *rep = redisCommand(r, fmt, arg);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    long long v = rep->integer;
    freeReplyObject(rep);
    return v;
}

/* Log lines go to a temporary file so tests can count them. */
static int log_fd = -1;
static char log_path[64];

static void log_capture_start(void)
{
    snprintf(log_path, sizeof(log_path), "/tmp/sx_test_redis_log_XXXXXX");
    log_fd = mkstemp(log_path);
    assert_true(log_fd >= 0);
    sx_log_set_fd(log_fd);
}

static char *log_capture_read(void)
{
    sx_buf b = {0};
    assert_int_equal(sx_buf_read_file(&b, log_path, SIZE_MAX), 0);
    return sx_buf_steal(&b);
}

static void log_capture_stop(void)
{
    sx_log_set_fd(2);
    close(log_fd);
    unlink(log_path);
    log_fd = -1;
}

static int count_substr(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* A cache on a Redis server of the test's own, with metrics and the log captured. */
typedef struct own {
    tl_redis r;
    sx_metrics *m;
    redis_cache *c;
} own;

static void own_open(own *o, int timeout_ms)
{
    memset(o, 0, sizeof(*o));
    tl_redis_start(&o->r);
    o->m = sx_metrics_create();
    o->c = make_cache_backoff(o->r.url, timeout_ms, OUTAGE_BACKOFF_MS, o->m);
    log_capture_start();
}

static void own_close(own *o)
{
    log_capture_stop();
    redis_cache_destroy(o->c);
    sx_metrics_destroy(o->m);
    tl_redis_stop(&o->r);
}

/* Polls key every 50 ms (writing refill first when not NULL) until it is a hit, for
 * at most 60 s (a bound on a hang, well past the back-off); returns the last code of
 * redis_cache_get. */
static int wait_hit(redis_cache *c, const char *key, const char *refill, char **got, size_t *len)
{
    long long deadline = tl_now_ms() + 60000;
    int rc = SX_ENOTFOUND;
    while (rc != 0 && tl_now_ms() < deadline) {
        tl_sleep_ms(50);
        if (refill)
            redis_cache_set(c, key, refill, strlen(refill), 0);
        rc = redis_cache_get(c, key, got, len);
    }
    return rc;
}

TL_TEST(test_round_trip_binary)
{
    sx_metrics *m = sx_metrics_create();
    redis_cache *c = make_cache(tl_env("SEXTANT_TEST_REDIS_URL"), 0, m);

    const char value[] = {'s', 'n', 'a', 'p', '\0', 0x01, '\0', (char)0xff, 'x'};
    redis_cache_set(c, "snap/edge/42", value, sizeof(value), 0);
    char *got = NULL;
    size_t len = 0;
    assert_int_equal(redis_cache_get(c, "snap/edge/42", &got, &len), 0);
    assert_int_equal(len, sizeof(value));
    assert_memory_equal(got, value, sizeof(value));
    assert_int_equal(got[len], '\0'); /* terminated for convenience */
    free(got);

    /* The key in Redis carries the prefix. */
    redisContext *raw = tl_redis_connect(tl_env("SEXTANT_TEST_REDIS_URL"));
    char full[160];
    snprintf(full, sizeof(full), "%ssnap/edge/42", prefix);
    assert_int_equal(raw_integer(raw, "EXISTS %s", full), 1);

    /* Overwrite, then an empty value is a hit of length 0, not a miss. */
    redis_cache_set(c, "snap/edge/42", "v2", 2, 0);
    assert_int_equal(redis_cache_get(c, "snap/edge/42", &got, &len), 0);
    assert_int_equal(len, 2);
    assert_memory_equal(got, "v2", 2);
    free(got);
    redis_cache_set(c, "empty", "", 0, 0);
    assert_int_equal(redis_cache_get(c, "empty", &got, &len), 0);
    assert_int_equal(len, 0);
    free(got);

    redis_cache_del(c, "snap/edge/42");
    redis_cache_del(c, "empty");
    assert_int_equal(raw_integer(raw, "EXISTS %s", full), 0);
    got = (char *)"sentinel";
    assert_int_equal(redis_cache_get(c, "snap/edge/42", &got, &len), SX_ENOTFOUND);
    assert_null(got);
    assert_int_equal(redis_cache_get(c, "never-set", &got, &len), SX_ENOTFOUND);

    assert_true(redis_cache_up(c));
    assert_int_equal(requests(m, "get", "hit"), 3);
    assert_int_equal(requests(m, "get", "miss"), 2);
    assert_int_equal(requests(m, "set", "ok"), 3);
    assert_int_equal(requests(m, "del", "ok"), 2);
    assert_int_equal(requests(m, "get", "error"), 0);
    assert_true(rendered_has(m, "\nsextant_cache_up 1\n"));

    redisFree(raw);
    redis_cache_destroy(c);
    sx_metrics_destroy(m);
}

TL_TEST(test_ttl)
{
    redis_cache *c = make_cache(tl_env("SEXTANT_TEST_REDIS_URL"), 0, NULL);
    redisContext *raw = tl_redis_connect(tl_env("SEXTANT_TEST_REDIS_URL"));
    char full[160];

    redis_cache_set(c, "ttl/long", "x", 1, 60);
    snprintf(full, sizeof(full), "%sttl/long", prefix);
    long long ttl = raw_integer(raw, "TTL %s", full);
    assert_true(ttl > 0 && ttl <= 60);

    redis_cache_set(c, "ttl/none", "x", 1, 0);
    snprintf(full, sizeof(full), "%sttl/none", prefix);
    assert_int_equal(raw_integer(raw, "TTL %s", full), -1); /* no expiry */

    redis_cache_set(c, "ttl/short", "x", 1, 1);
    char *got = NULL;
    size_t len;
    assert_int_equal(redis_cache_get(c, "ttl/short", &got, &len), 0);
    free(got);
    long long deadline = tl_now_ms() + 60000; /* bounds a hang: the TTL is 1 s */
    int rc = 0;
    while (tl_now_ms() < deadline) {
        rc = redis_cache_get(c, "ttl/short", &got, &len);
        free(got);
        if (rc == SX_ENOTFOUND)
            break;
        tl_sleep_ms(100);
    }
    assert_int_equal(rc, SX_ENOTFOUND);

    redis_cache_del(c, "ttl/long");
    redis_cache_del(c, "ttl/none");
    redisFree(raw);
    redis_cache_destroy(c);
}

TL_TEST(test_outage_and_recovery)
{
    const int timeout_ms = 500;
    own o;
    own_open(&o, timeout_ms);

    redis_cache_set(o.c, "k", "before", 6, 0);
    char *got = NULL;
    size_t len;
    assert_int_equal(redis_cache_get(o.c, "k", &got, &len), 0);
    free(got);
    assert_true(redis_cache_up(o.c));

    tl_redis_stop(&o.r);

    /* Every read is a miss and every write is skipped; nothing fails. The first read
     * finds the connection gone; the calls after it, inside the back-off window, are
     * skipped without touching the network (counted "skipped", not "error"). */
    for (int i = 0; i < 20; i++) {
        got = (char *)"sentinel";
        assert_int_equal(redis_cache_get(o.c, "k", &got, &len), SX_ENOTFOUND);
        assert_null(got);
        redis_cache_set(o.c, "k", "during", 6, 10);
        redis_cache_del(o.c, "k");
        tl_sleep_ms(10);
    }
    assert_false(redis_cache_up(o.c));
    assert_true(requests(o.m, "get", "error") >= 1);
    assert_true(requests(o.m, "get", "skipped") >= 1);
    assert_int_equal(requests(o.m, "get", "error") + requests(o.m, "get", "skipped"), 20);
    assert_int_equal(requests(o.m, "get", "miss"), 0);
    assert_true(requests(o.m, "set", "skipped") >= 1);
    assert_int_equal(requests(o.m, "set", "ok"), 1); /* the one before the outage */
    assert_true(rendered_has(o.m, "\nsextant_cache_up 0\n"));

    /* Back on the same port: once the back-off has passed, the cache is used again. */
    tl_redis_start(&o.r);
    assert_int_equal(wait_hit(o.c, "k", "after", &got, &len), 0);
    assert_int_equal(len, 5);
    assert_memory_equal(got, "after", 5);
    free(got);
    assert_true(redis_cache_up(o.c));
    assert_true(rendered_has(o.m, "\nsextant_cache_up 1\n"));

    /* One line when Redis went away, one when it came back. */
    char *log = log_capture_read();
    assert_int_equal(count_substr(log, "redis unavailable, serving from postgresql: "), 1);
    assert_int_equal(count_substr(log, "redis available again"), 1);
    assert_non_null(strstr(log, "\"level\":\"warn\""));
    free(log);

    own_close(&o);
}

TL_TEST(test_hung_redis_times_out)
{
    const int timeout_ms = 200;
    own o;
    own_open(&o, timeout_ms);

    redis_cache_set(o.c, "k", "v", 1, 0);
    assert_true(redis_cache_up(o.c));

    /* A stopped (not exited) server accepts nothing and answers nothing: the read
     * gives up at its timeout, as a miss, and the failure it logs is that timeout. */
    kill(o.r.pid, SIGSTOP);
    char *got = (char *)"sentinel";
    size_t len;
    assert_int_equal(redis_cache_get(o.c, "k", &got, &len), SX_ENOTFOUND);
    assert_null(got);
    assert_int_equal(requests(o.m, "get", "error"), 1);
    assert_false(redis_cache_up(o.c));
    char *log = log_capture_read();
    assert_non_null(strstr(log, "redis unavailable, serving from postgresql: get failed at "));
    assert_non_null(strstr(log, "timed out after 200 ms"));
    free(log);
    /* The next calls are inside the back-off window: skipped, without another attempt
     * on the hung server. */
    redis_cache_set(o.c, "k", "v", 1, 0);
    assert_int_equal(redis_cache_get(o.c, "k", &got, &len), SX_ENOTFOUND);
    assert_int_equal(requests(o.m, "set", "skipped"), 1);
    assert_int_equal(requests(o.m, "get", "skipped"), 1);
    assert_int_equal(requests(o.m, "get", "error"), 1);

    /* Once the server answers again the same cache is used again: the value written
     * before the hang is read back. */
    kill(o.r.pid, SIGCONT);
    assert_int_equal(wait_hit(o.c, "k", NULL, &got, &len), 0);
    assert_int_equal(len, 1);
    assert_memory_equal(got, "v", 1);
    free(got);
    assert_true(redis_cache_up(o.c));
    assert_true(rendered_has(o.m, "\nsextant_cache_up 1\n"));
    log = log_capture_read();
    assert_int_equal(count_substr(log, "redis available again"), 1);
    free(log);
    own_close(&o);
}

TL_TEST(test_auth_and_select)
{
    tl_redis r = {0};
    tl_redis_start(&r);
    redisContext *raw = tl_redis_connect(r.url);
    redisReply *rep = redisCommand(raw, "CONFIG SET requirepass %s", "s3cr3t-pw");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    rep = redisCommand(raw, "AUTH %s", "s3cr3t-pw");
    freeReplyObject(rep);

    char url[160];
    snprintf(url, sizeof(url), "redis://:s3cr3t-pw@127.0.0.1:%d/3", r.port);
    redis_cache *c = make_cache(url, 0, NULL);
    redis_cache_set(c, "selected", "db3", 3, 0);
    char *got = NULL;
    size_t len;
    assert_int_equal(redis_cache_get(c, "selected", &got, &len), 0);
    free(got);

    /* The value is in database 3, not 0. */
    char full[160];
    snprintf(full, sizeof(full), "%sselected", prefix);
    assert_int_equal(raw_integer(raw, "EXISTS %s", full), 0);
    rep = redisCommand(raw, "SELECT 3");
    freeReplyObject(rep);
    assert_int_equal(raw_integer(raw, "EXISTS %s", full), 1);
    redis_cache_destroy(c);

    /* A wrong password is an outage like any other, and is never logged. */
    log_capture_start();
    snprintf(url, sizeof(url), "redis://:wr0ng-pw@127.0.0.1:%d", r.port);
    c = make_cache(url, 0, NULL);
    assert_int_equal(redis_cache_get(c, "selected", &got, &len), SX_ENOTFOUND);
    assert_false(redis_cache_up(c));
    char *log = log_capture_read();
    assert_non_null(strstr(log, "authentication failed"));
    assert_null(strstr(log, "wr0ng-pw"));
    free(log);
    log_capture_stop();
    redis_cache_destroy(c);

    redisFree(raw);
    tl_redis_stop(&r);
}

TL_TEST(test_disabled)
{
    sx_metrics *m = sx_metrics_create();
    log_capture_start();
    const char *urls[] = {"", NULL};
    for (int i = 0; i < 2; i++) {
        redis_cache *c = make_cache(urls[i], 0, m);
        char *got = (char *)"sentinel";
        size_t len = 7;
        assert_int_equal(redis_cache_get(c, "k", &got, &len), SX_ENOTFOUND);
        assert_null(got);
        redis_cache_set(c, "k", "v", 1, 0);
        redis_cache_del(c, "k");
        assert_false(redis_cache_up(c));
        redis_cache_destroy(c);
    }
    assert_int_equal(requests(m, "get", "skipped"), 2);
    assert_int_equal(requests(m, "set", "skipped"), 2);
    assert_int_equal(requests(m, "get", "miss"), 0);
    char *log = log_capture_read();
    assert_string_equal(log, ""); /* nothing logged per call */
    free(log);
    log_capture_stop();
    sx_metrics_destroy(m);
}

TL_TEST(test_malformed_urls)
{
    const char *bad[] = {
        "http://127.0.0.1:6379",  "redis://",           "redis://:6379",
        "redis://127.0.0.1:0",    "redis://host:99999", "redis://host:12ab",
        "redis://host:6379/db1",  "redis://host:/1",    "redis://:p%zzw@host:1",
        "redis://[::1:6379",      "redis://host:1?x=1", "rediss://host:6379",
        "redis://user@host:6379",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redis_cache_options o = {.url = bad[i]};
        redis_cache *c = (redis_cache *)&o;
        sx_err err;
        int rc = redis_cache_create(&o, &c, &err);
        if (rc != SX_EINVAL)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        assert_int_equal(rc, SX_EINVAL);
        assert_null(c);
        assert_non_null(strstr(err.message, "invalid redis url"));
    }
    /* The password never appears in the message. */
    redis_cache_options o = {.url = "redis://:hunter2@host:notaport"};
    redis_cache *c;
    sx_err err;
    assert_int_equal(redis_cache_create(&o, &c, &err), SX_EINVAL);
    assert_null(strstr(err.message, "hunter2"));

    const char *good[] = {"redis://127.0.0.1:6379", "redis://localhost", "redis://h:1/15",
                          "redis://:p%40ss@h:2/", "redis://user:pw@[::1]:6380/0"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        o.url = good[i];
        assert_int_equal(redis_cache_create(&o, &c, &err), 0);
        redis_cache_destroy(c);
    }
}

int main(void)
{
    snprintf(prefix, sizeof(prefix), "sxtest:%d:%lld:", (int)getpid(), tl_now_ms());
    return tl_run("tests", NULL, NULL);
}
