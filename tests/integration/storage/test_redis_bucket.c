/*
 * test_redis_bucket.c — the Redis token buckets against a real redis-server: the Lua
 * script's math step for step the same as the per-replica buckets' (api/ratelimit.c)
 * over long pseudo-random sequences of takes, refusal counts, expiring keys, the
 * EVALSHA → EVAL fallback after SCRIPT FLUSH, and what a caller sees when Redis is not
 * configured or does not answer.
 */
#include "tests/lib/testlib.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/ratelimit.h"
#include "storage/redis_bucket.h"

/* A key prefix no other run of this test shares on the shared Redis. */
static char prefix[96];

static redis_bucket *make(const char *url)
{
    redis_bucket_options o = {.url = url, .timeout_ms = 2000, .key_prefix = prefix};
    redis_bucket *b = NULL;
    TL_OK(redis_bucket_create(&o, &b, &e_));
    return b;
}

static int retry_seconds(int64_t ms)
{
    int64_t s = (ms + 999) / 1000;
    return s < 1 ? 1 : s > 86400 ? 86400 : (int)s;
}

/* Same rate and burst on both sides; steps of 0..step_max ms between takes. */
static void compare(int64_t rate, int64_t burst, int64_t step_max, int takes, unsigned seed)
{
    redis_bucket *b = make(tl_env("SEXTANT_TEST_REDIS_URL"));
    ratelimit_options ro = {
        .read_rate = rate, .read_burst = burst, .write_rate = 1, .write_burst = 1};
    ratelimit *rl = ratelimit_create(&ro, NULL);
    char name[64];
    snprintf(name, sizeof(name), "cmp-%lld-%lld-%u", (long long)rate, (long long)burst, seed);
    int64_t t = 1700000000000LL;
    int allowed = 0, refused = 0;
    srand(seed);
    for (int i = 0; i < takes; i++) {
        /* Bursts of takes at one instant, then pauses, so buckets both empty and fill. */
        t += rand() % 4 == 0 ? rand() % (step_max + 1) : 0;
        redis_bucket_result r;
        assert_int_equal(redis_bucket_take_at(b, name, rate, burst, t, &r), 0);
        ratelimit_verdict v;
        ratelimit_local_at(rl, name, RATELIMIT_READ, t, &v);
        if (r.allowed != v.allowed || r.refused != v.refused ||
            (!r.allowed && retry_seconds(r.retry_after_ms) != v.retry_after_s))
            fail_msg("take %d at +%lld ms (rate %lld, burst %lld): redis %d/%lld/%lld ms, "
                     "local %d/%lld/%d s",
                     i, (long long)(t - 1700000000000LL), (long long)rate, (long long)burst,
                     r.allowed, (long long)r.refused, (long long)r.retry_after_ms, v.allowed,
                     (long long)v.refused, v.retry_after_s);
        if (r.allowed)
            allowed++;
        else
            refused++;
    }
    /* Both outcomes happened, or the comparison proved little. */
    assert_true(allowed > 0);
    assert_true(refused > 0);
    ratelimit_destroy(rl);
    redis_bucket_destroy(b);
}

TL_TEST(test_same_math_as_local_buckets)
{
    compare(1, 5, 1500, 400, 1);
    compare(2, 10, 900, 400, 2);
    compare(7, 3, 300, 400, 3);
    compare(50, 100, 40, 1000, 4);
    compare(1000, 1, 3, 400, 5);
}

TL_TEST(test_refusals_counted_until_allowed)
{
    redis_bucket *b = make(tl_env("SEXTANT_TEST_REDIS_URL"));
    redis_bucket_result r;
    int64_t t = 5000000;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(redis_bucket_take_at(b, "count", 1, 3, t, &r), 0);
        assert_true(r.allowed);
        assert_int_equal(r.refused, 0);
    }
    for (int i = 1; i <= 4; i++) {
        assert_int_equal(redis_bucket_take_at(b, "count", 1, 3, t + 100 * i, &r), 0);
        assert_false(r.allowed);
        assert_int_equal(r.refused, i);
        assert_int_equal(r.retry_after_ms, 1000 - 100 * i);
    }
    /* A token is back after a second: the allowed take reports the four refusals, and
     * the count starts again. */
    assert_int_equal(redis_bucket_take_at(b, "count", 1, 3, t + 1000, &r), 0);
    assert_true(r.allowed);
    assert_int_equal(r.refused, 4);
    assert_int_equal(redis_bucket_take_at(b, "count", 1, 3, t + 1000, &r), 0);
    assert_false(r.allowed);
    assert_int_equal(r.refused, 1);
    redis_bucket_destroy(b);
}

TL_TEST(test_keys_expire_and_scripts_reload)
{
    const char *url = tl_env("SEXTANT_TEST_REDIS_URL");
    redis_bucket *b = make(url);
    redisContext *raw = tl_redis_connect(url);
    redis_bucket_result r;
    /* With Redis's own clock: the bucket is a hash with a TTL of about the time it
     * takes to fill again (2 tokens at 1/s: 2 s) plus a second. */
    assert_int_equal(redis_bucket_take(b, "ttl", 1, 2, &r), 0);
    assert_true(r.allowed);
    assert_int_equal(redis_bucket_take(b, "ttl", 1, 2, &r), 0);
    assert_true(r.allowed);
    char key[160];
    snprintf(key, sizeof(key), "%srl:ttl", prefix);
    redisReply *rep = redisCommand(raw, "PTTL %s", key);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_true(rep->integer > 0 && rep->integer <= 3000);
    freeReplyObject(rep);
    /* A server that forgot the script (restart, SCRIPT FLUSH) gets it again by EVAL. */
    assert_int_equal(redis_bucket_take_at(b, "flush", 1, 1, 1000, &r), 0);
    assert_true(r.allowed);
    rep = redisCommand(raw, "SCRIPT FLUSH");
    assert_non_null(rep);
    freeReplyObject(rep);
    assert_int_equal(redis_bucket_take_at(b, "flush", 1, 1, 1250, &r), 0);
    assert_false(r.allowed);
    assert_int_equal(r.refused, 1);
    assert_int_equal(r.retry_after_ms, 750);
    redisFree(raw);
    redis_bucket_destroy(b);
}

TL_TEST(test_disabled_and_unreachable)
{
    redis_bucket_result r;
    redis_bucket *off = make("");
    assert_false(redis_bucket_enabled(off));
    assert_int_equal(redis_bucket_take(off, "x", 1, 1, &r), REDIS_BUCKET_SKIPPED);
    redis_bucket_destroy(off);

    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", tl_free_port());
    redis_bucket *down = make(url);
    assert_true(redis_bucket_enabled(down));
    assert_int_equal(redis_bucket_take(down, "x", 1, 1, &r), SX_EUNAVAILABLE);
    /* Each failure lengthens the back-off, within which nothing is sent. */
    int rc = SX_EUNAVAILABLE;
    for (int i = 0; i < 8 && rc == SX_EUNAVAILABLE; i++)
        rc = redis_bucket_take(down, "x", 1, 1, &r);
    assert_int_equal(rc, REDIS_BUCKET_SKIPPED);
    redis_bucket_destroy(down);

    redis_bucket *bad = NULL;
    redis_bucket_options o = {.url = "http://nope"};
    sx_err err;
    assert_int_equal(redis_bucket_create(&o, &bad, &err), SX_EINVAL);
    assert_null(bad);
}

int main(void)
{
    snprintf(prefix, sizeof(prefix), "sxtest:%d:%lld:", (int)getpid(), tl_now_ms());
    return tl_run("tests", NULL, NULL);
}
