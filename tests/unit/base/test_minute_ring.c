/*
 * test_minute_ring.c — a counter's growth per minute over the last hour
 * (server/base/minute_ring.h) and the sum of a metric family's series
 * (sx_metrics_total), as a replica's heartbeat reports its pushes.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/metrics.h"
#include "server/base/minute_ring.h"

/* 2026-11-27 00:00:00 UTC: a minute start. */
#define T0 1795737600LL

static json_int_t at(json_t *o, long long minute_start)
{
    char key[24];
    snprintf(key, sizeof(key), "%lld", minute_start);
    json_t *v = json_object_get(o, key);
    return v ? json_integer_value(v) : -1;
}

TL_TEST(test_ring_minutes)
{
    sx_minute_ring r;
    memset(&r, 0, sizeof(r));
    sx_minute_ring_sample(&r, 4, T0 + 5);    /* 4 since the start, in minute 0 */
    sx_minute_ring_sample(&r, 10, T0 + 55);  /* +6 in minute 0 */
    sx_minute_ring_sample(&r, 10, T0 + 65);  /* nothing in minute 1 */
    sx_minute_ring_sample(&r, 13, T0 + 125); /* +3 in minute 2 */
    json_t *o = sx_minute_ring_json(&r, T0 + 130);
    assert_int_equal(json_object_size(o), 2);
    assert_int_equal(at(o, T0), 10);
    assert_int_equal(at(o, T0 + 120), 3);
    assert_int_equal(at(o, T0 + 60), -1);
    json_decref(o);

    /* A reset (a total below the last) counts from 0. */
    sx_minute_ring_sample(&r, 2, T0 + 130);
    o = sx_minute_ring_json(&r, T0 + 130);
    assert_int_equal(at(o, T0 + 120), 5);
    json_decref(o);

    /* An hour later minute 0 has left the window, and its slot is reused by minute 60
     * without what minute 0 held. */
    o = sx_minute_ring_json(&r, T0 + 3600);
    assert_int_equal(at(o, T0), -1);
    assert_int_equal(at(o, T0 + 120), 5);
    json_decref(o);
    sx_minute_ring_sample(&r, 3, T0 + 3600 + 1);
    o = sx_minute_ring_json(&r, T0 + 3600 + 1);
    assert_int_equal(at(o, T0 + 3600), 1);
    assert_int_equal(at(o, T0), -1);
    json_decref(o);
}

TL_TEST(test_metrics_total)
{
    sx_metrics *reg = sx_metrics_create();
    assert_true(sx_metrics_total(reg, "pushes_total") == 0);
    sx_metric *m = sx_metrics_counter(reg, "pushes_total", "pushes", "type");
    const char *cds[] = {"cds"}, *eds[] = {"eds"};
    sx_metric_add(m, cds, 3);
    sx_metric_add(m, eds, 4);
    sx_metric_inc(sx_metrics_counter(reg, "other_total", "other", NULL), NULL);
    assert_true(sx_metrics_total(reg, "pushes_total") == 7);
    assert_true(sx_metrics_total(reg, "other_total") == 1);
    sx_metrics_destroy(reg);
}

TL_MAIN()
