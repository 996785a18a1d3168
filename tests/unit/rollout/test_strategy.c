/*
 * test_strategy.c — wave plans and rollout policy from request JSON
 * (server/rollout/strategy.c): wave sizes of every strategy, rounding of percentages,
 * refusal of malformed strategies with paths, and policy overrides.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/rollout/strategy.h"

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (j == NULL)
        fail_msg("bad test JSON: %s", e.text);
    return j;
}

/* The wave sizes of strategy text for n nodes, as "a,b,c". */
static void expect_waves(const char *strategy, size_t n, const char *want)
{
    json_t *j = parse(strategy);
    rollout_strategy s;
    sx_fielderrs errs = {0};
    assert_int_equal(rollout_strategy_parse(j, &s, &errs), 0);
    size_t *sizes = NULL;
    size_t count = rollout_wave_sizes(&s, n, &sizes);
    char got[256] = "";
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        char part[24];
        snprintf(part, sizeof(part), "%s%zu", i ? "," : "", sizes[i]);
        strcat(got, part);
        assert_true(sizes[i] > 0);
        total += sizes[i];
    }
    assert_int_equal(total, n);
    if (strcmp(got, want) != 0)
        fail_msg("%s over %zu nodes: got %s, want %s", strategy, n, got, want);
    free(sizes);
    sx_fielderrs_free(&errs);
    json_decref(j);
}

TL_TEST(test_wave_sizes)
{
    expect_waves("{\"type\":\"all_at_once\"}", 7, "7");
    expect_waves("{\"type\":\"rolling\",\"wave_size\":5}", 20, "5,5,5,5");
    expect_waves("{\"type\":\"rolling\",\"wave_size\":5}", 12, "5,5,2");
    expect_waves("{\"type\":\"rolling\",\"wave_size\":50}", 3, "3");
    expect_waves("{\"type\":\"rolling\",\"wave_percent\":25}", 20, "5,5,5,5");
    expect_waves("{\"type\":\"rolling\",\"wave_percent\":30}", 10, "3,3,3,1");
    expect_waves("{\"type\":\"rolling\",\"wave_percent\":1}", 3, "1,1,1");
    /* 10%, then 50%, 90% and all: the last wave takes the remainder. */
    expect_waves("{\"type\":\"canary\",\"initial_percent\":10,\"increment_percent\":40}", 10,
                 "1,4,4,1");
    expect_waves("{\"type\":\"canary\",\"initial_percent\":10,\"increment_percent\":45}", 10,
                 "1,5,4");
    expect_waves("{\"type\":\"canary\",\"initial_percent\":10,\"increment_percent\":20}", 100,
                 "10,20,20,20,20,10");
    /* 10% of 3 nodes rounds up to one; increments that add no node are skipped. */
    expect_waves("{\"type\":\"canary\",\"initial_percent\":10,\"increment_percent\":10}", 3,
                 "1,1,1");
    expect_waves("{\"type\":\"canary\",\"initial_percent\":100,\"increment_percent\":10}", 4, "4");
}

/* Parsing text gives exactly the problem paths in want ("a;b"). */
static void expect_refused(const char *strategy, const char *want)
{
    json_t *j = parse(strategy);
    rollout_strategy s;
    sx_fielderrs errs = {0};
    assert_true(rollout_strategy_parse(j, &s, &errs) > 0);
    char got[512] = "";
    for (size_t i = 0; i < errs.count; i++) {
        if (i)
            strcat(got, ";");
        strcat(got, errs.items[i].path);
    }
    if (strcmp(got, want) != 0)
        fail_msg("%s: got problems at %s, want %s", strategy, got, want);
    sx_fielderrs_free(&errs);
    json_decref(j);
}

TL_TEST(test_refusals)
{
    expect_refused("{\"type\":\"red_black\"}", "strategy.type");
    expect_refused("{}", "strategy.type");
    expect_refused("[1]", "strategy");
    expect_refused("{\"type\":\"rolling\"}", "strategy.wave_size");
    expect_refused("{\"type\":\"rolling\",\"wave_size\":2,\"wave_percent\":5}",
                   "strategy.wave_size");
    expect_refused("{\"type\":\"rolling\",\"wave_size\":0}", "strategy.wave_size");
    expect_refused("{\"type\":\"rolling\",\"wave_percent\":101}", "strategy.wave_percent");
    expect_refused("{\"type\":\"rolling\",\"wave_size\":2,\"pause\":\"soon\"}", "strategy.pause");
    expect_refused("{\"type\":\"canary\",\"initial_percent\":10}", "strategy.increment_percent");
    expect_refused("{\"type\":\"all_at_once\",\"wave_size\":3}", "strategy.wave_size");
    /* Blue-green: green is required and must pick nodes; the hold and its end checked. */
    expect_refused("{\"type\":\"blue_green\"}", "strategy.green");
    expect_refused("{\"type\":\"blue_green\",\"green\":{}}", "strategy.green");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"node_ids\":[]}}", "strategy.green");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"node_ids\":[\"a\",\"\"]}}",
                   "strategy.green.node_ids[1]");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"labels\":{\"a\":1}}}",
                   "strategy.green.labels");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"zone\":\"a\",\"node_ids\":[\"n\"]}}",
                   "strategy.green");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"node_ids\":[\"n\"]},"
                   "\"promote_timeout\":\"later\",\"on_timeout\":\"wait\"}",
                   "strategy.promote_timeout;strategy.on_timeout");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"node_ids\":[\"n\"]},"
                   "\"promote_timeout\":\"25h\"}",
                   "strategy.promote_timeout");
    expect_refused("{\"type\":\"blue_green\",\"green\":{\"node_ids\":[\"n\"]},\"pause\":\"1s\"}",
                   "strategy.pause");
}

/* Blue-green: green first, then every other node in one wave; the stored form keeps
 * green, the hold and what its end does, with defaults (1h, rollback). */
TL_TEST(test_blue_green)
{
    json_t *j = parse("{\"type\":\"blue_green\",\"green\":{\"labels\":{\"slot\":\"g\"}}}");
    rollout_strategy s;
    sx_fielderrs errs = {0};
    assert_int_equal(rollout_strategy_parse(j, &s, &errs), 0);
    assert_int_equal(s.kind, ROLLOUT_BLUE_GREEN);
    assert_int_equal(s.promote_timeout_ms, ROLLOUT_PROMOTE_TIMEOUT_DEFAULT_MS);
    assert_int_equal(s.on_timeout, ROLLOUT_TIMEOUT_ROLLBACK);
    size_t *sizes = NULL;
    s.green_count = 2;
    assert_int_equal(rollout_wave_sizes(&s, 10, &sizes), 2);
    assert_true(sizes[0] == 2 && sizes[1] == 8);
    free(sizes);
    json_t *stored = rollout_strategy_json(&s);
    assert_true(rollout_strategy_is_blue_green(stored));
    assert_false(rollout_strategy_is_blue_green(json_object_get(j, "green")));
    assert_string_equal(json_string_value(json_object_get(stored, "promote_timeout")), "1h");
    assert_string_equal(json_string_value(json_object_get(stored, "on_timeout")), "rollback");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(stored, "green"), "labels"), "slot")),
                        "g");
    assert_int_equal(rollout_strategy_promote_timeout_ms(stored), 3600000);
    assert_int_equal(rollout_strategy_on_timeout(stored), ROLLOUT_TIMEOUT_ROLLBACK);
    assert_int_equal(rollout_strategy_pause_ms(stored), 0);
    json_decref(stored);
    json_decref(j);

    j = parse("{\"type\":\"blue_green\",\"green\":{\"node_ids\":[\"a\"]},"
              "\"promote_timeout\":\"90s\",\"on_timeout\":\"promote\"}");
    assert_int_equal(rollout_strategy_parse(j, &s, &errs), 0);
    stored = rollout_strategy_json(&s);
    assert_int_equal(rollout_strategy_promote_timeout_ms(stored), 90000);
    assert_int_equal(rollout_strategy_on_timeout(stored), ROLLOUT_TIMEOUT_PROMOTE);
    /* The stored form parses back to the same strategy. */
    rollout_strategy again;
    assert_int_equal(rollout_strategy_parse(stored, &again, &errs), 0);
    assert_true(again.kind == ROLLOUT_BLUE_GREEN && again.promote_timeout_ms == 90000 &&
                again.on_timeout == ROLLOUT_TIMEOUT_PROMOTE);
    json_decref(stored);
    json_decref(j);
    assert_int_equal(errs.count, 0);
}

TL_TEST(test_round_trip_and_pause)
{
    json_t *j = parse("{\"type\":\"canary\",\"initial_percent\":10,\"increment_percent\":30,"
                      "\"interval\":\"1m30s\"}");
    rollout_strategy s;
    sx_fielderrs errs = {0};
    assert_int_equal(rollout_strategy_parse(j, &s, &errs), 0);
    assert_int_equal(s.pause_ms, 90000);
    json_t *stored = rollout_strategy_json(&s);
    assert_int_equal(rollout_strategy_pause_ms(stored), 90000);
    assert_string_equal(json_string_value(json_object_get(stored, "type")), "canary");
    rollout_strategy again;
    assert_int_equal(rollout_strategy_parse(stored, &again, &errs), 0);
    assert_true(again.initial_percent == 10 && again.increment_percent == 30);
    json_decref(stored);
    json_decref(j);
    /* No strategy at all is one wave. */
    assert_int_equal(rollout_strategy_parse(NULL, &s, &errs), 0);
    assert_int_equal(s.kind, ROLLOUT_ALL_AT_ONCE);
}

TL_TEST(test_policy)
{
    rollout_policy p = {0.05, 10, 600000, 3, true};
    sx_fielderrs errs = {0};
    json_t *j = parse("{\"nack_threshold\":0.2,\"nack_min_sample\":4,\"wave_timeout\":\"3s\","
                      "\"health_failures\":1,\"promote\":false}");
    assert_int_equal(rollout_policy_parse(j, &p, &errs), 0);
    assert_true(p.nack_threshold > 0.199 && p.nack_threshold < 0.201);
    assert_int_equal(p.nack_min_sample, 4);
    assert_int_equal(p.wave_timeout_ms, 3000);
    assert_int_equal(p.health_failures, 1);
    assert_false(p.promote);
    json_decref(j);
    j = parse("{\"nack_threshold\":5,\"wave_timeout\":\"10\",\"nack_min_sample\":-1}");
    assert_int_equal(rollout_policy_parse(j, &p, &errs), 3);
    assert_true(p.nack_threshold > 0.199 && p.nack_threshold < 0.201); /* unchanged */
    sx_fielderrs_free(&errs);
    json_decref(j);
}

TL_MAIN()
