/*
 * test_ratelimit.c — the per-user token buckets: a burst and then refusals with a
 * Retry-After, refill over time, read and write buckets apart, users apart, bounded
 * memory, the metric, and exact accounting under concurrent takes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include "api/ratelimit.h"
#include "server/base/metrics.h"
#include "tests/lib/testlib.h"

static ratelimit *make(int64_t rr, int64_t rb, int64_t wr, int64_t wb, size_t max_users,
                       sx_metrics *m)
{
    ratelimit_options o = {.read_rate = rr,
                           .read_burst = rb,
                           .write_rate = wr,
                           .write_burst = wb,
                           .max_users = max_users};
    return ratelimit_create(&o, m);
}

TL_TEST(test_burst_then_refusal)
{
    sx_metrics *m = sx_metrics_create();
    ratelimit *rl = make(1, 3, 1, 1, 0, m);
    int retry = -1;
    for (int i = 0; i < 3; i++)
        assert_true(ratelimit_take_at(rl, "alice", RATELIMIT_READ, 1000, &retry));
    assert_int_equal(retry, -1); /* untouched when allowed */
    assert_false(ratelimit_take_at(rl, "alice", RATELIMIT_READ, 1000, &retry));
    assert_int_equal(retry, 1);
    const char *read[] = {"read"}, *write[] = {"write"};
    assert_true(sx_metric_value(sx_metrics_counter(m, "sextant_api_rate_limited_total", "", "kind"),
                                read) == 1.0);
    assert_true(sx_metric_value(sx_metrics_counter(m, "sextant_api_rate_limited_total", "", "kind"),
                                write) == 0.0);
    ratelimit_destroy(rl);
    sx_metrics_destroy(m);
}

TL_TEST(test_refill_over_time)
{
    ratelimit *rl = make(2, 4, 1, 1, 0, NULL);
    int64_t t = 50000;
    for (int i = 0; i < 4; i++)
        assert_true(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t, NULL));
    int retry = 0;
    assert_false(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t, &retry));
    assert_int_equal(retry, 1);
    /* 2 per second: one token after 500 ms, not before. */
    assert_false(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t + 499, NULL));
    assert_true(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t + 500, NULL));
    assert_false(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t + 500, NULL));
    /* A long pause refills up to the burst, never beyond it. */
    t += 3600 * 1000;
    for (int i = 0; i < 4; i++)
        assert_true(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t, NULL));
    assert_false(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t, NULL));
    /* A clock reading older than the last one adds nothing. */
    assert_false(ratelimit_take_at(rl, "bob", RATELIMIT_READ, t - 10000, NULL));
    ratelimit_destroy(rl);
}

TL_TEST(test_read_and_write_apart)
{
    ratelimit *rl = make(10, 2, 1, 1, 0, NULL);
    assert_true(ratelimit_take_at(rl, "carol", RATELIMIT_WRITE, 0, NULL));
    int retry = 0;
    assert_false(ratelimit_take_at(rl, "carol", RATELIMIT_WRITE, 0, &retry));
    assert_int_equal(retry, 1);
    /* Reads still have their own bucket. */
    assert_true(ratelimit_take_at(rl, "carol", RATELIMIT_READ, 0, NULL));
    assert_true(ratelimit_take_at(rl, "carol", RATELIMIT_READ, 0, NULL));
    assert_false(ratelimit_take_at(rl, "carol", RATELIMIT_READ, 0, NULL));
    /* The write bucket refills at its own (slower) rate. */
    assert_true(ratelimit_take_at(rl, "carol", RATELIMIT_READ, 100, NULL));
    assert_false(ratelimit_take_at(rl, "carol", RATELIMIT_WRITE, 999, NULL));
    assert_true(ratelimit_take_at(rl, "carol", RATELIMIT_WRITE, 1000, NULL));
    ratelimit_destroy(rl);
}

TL_TEST(test_users_apart)
{
    ratelimit *rl = make(1, 1, 1, 1, 0, NULL);
    assert_true(ratelimit_take_at(rl, "dave", RATELIMIT_READ, 0, NULL));
    assert_false(ratelimit_take_at(rl, "dave", RATELIMIT_READ, 0, NULL));
    assert_true(ratelimit_take_at(rl, "erin", RATELIMIT_READ, 0, NULL));
    assert_true(ratelimit_take_at(rl, "dave2", RATELIMIT_READ, 0, NULL));
    assert_false(ratelimit_take_at(rl, "erin", RATELIMIT_READ, 0, NULL));
    assert_int_equal(ratelimit_tracked(rl), 3);
    ratelimit_destroy(rl);
}

TL_TEST(test_bounded_memory)
{
    ratelimit *rl = make(1, 5, 1, 5, 10, NULL);
    char user[32];
    /* A flood of distinct names keeps at most max_users. */
    for (int i = 0; i < 1000; i++) {
        snprintf(user, sizeof(user), "user-%d", i);
        assert_true(ratelimit_take_at(rl, user, RATELIMIT_READ, 1000, NULL));
        assert_true(ratelimit_tracked(rl) <= 10);
    }
    assert_int_equal(ratelimit_tracked(rl), 10);
    /* The most recent users are the ones kept: user-999 is still limited... */
    for (int i = 0; i < 4; i++)
        assert_true(ratelimit_take_at(rl, "user-999", RATELIMIT_READ, 1000, NULL));
    assert_false(ratelimit_take_at(rl, "user-999", RATELIMIT_READ, 1000, NULL));
    /* ...and once everyone has been idle long enough to be full again (5 s), they are
     * dropped as soon as someone else shows up. */
    assert_true(ratelimit_take_at(rl, "late", RATELIMIT_READ, 1000 + 5000, NULL));
    assert_int_equal(ratelimit_tracked(rl), 1);
    /* Dropping an idle user changed nothing: a full bucket again. */
    for (int i = 0; i < 5; i++)
        assert_true(ratelimit_take_at(rl, "user-999", RATELIMIT_READ, 6000, NULL));
    assert_false(ratelimit_take_at(rl, "user-999", RATELIMIT_READ, 6000, NULL));
    ratelimit_destroy(rl);
}

typedef struct worker {
    ratelimit *rl;
    int allowed;
} worker;

static void *taker(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 2000; i++)
        if (ratelimit_take_at(w->rl, i % 2 ? "shared" : "other", RATELIMIT_WRITE, 7777, NULL))
            w->allowed++;
    return NULL;
}

TL_TEST(test_concurrent_takes_exact)
{
    ratelimit *rl = make(1, 1, 1, 50, 0, NULL);
    pthread_t th[4];
    worker w[4] = {{rl, 0}, {rl, 0}, {rl, 0}, {rl, 0}};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, taker, &w[i]), 0);
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += w[i].allowed;
    }
    /* Two users, a burst of 50 each, the clock standing still: exactly 100. */
    assert_int_equal(total, 100);
    ratelimit_destroy(rl);
}

TL_MAIN()
