/*
 * test_compose.c — a group's snapshot is the documented merge of its configs.
 */
#include "tests/lib/testlib.h"

#include "server/snapshot/compose.h"

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    assert_non_null(j);
    return j;
}

static void test_merge_order_and_union(void **state)
{
    (void)state;
    json_t *b = parse("{\"listeners\":[{\"name\":\"b-l\"}],\"backends\":[{\"name\":\"b\"}],"
                      "\"extensions\":{\"x\":1,\"y\":\"b\"},\"id\":\"ignored\"}");
    json_t *a = parse("{\"listeners\":[{\"name\":\"a-l\"}],\"http_routes\":[{\"name\":\"r\"}],"
                      "\"extensions\":{\"y\":\"a\",\"z\":true}}");
    json_t *c = parse("{\"backends\":[{\"name\":\"c\"}]}");
    /* Given out of order on purpose: composition sorts by (namespace, name). */
    snap_compose_input src[] = {
        {"team-b", "edge", b},
        {"team-a", "edge", a},
        {"team-a", "zeta", c},
    };
    json_t *out = snap_compose_json(src, 3, "demo:7", "2026-11-21T00:00:00Z");
    json_t *want = parse("{\"listeners\":[{\"name\":\"a-l\"},{\"name\":\"b-l\"}],"
                         "\"http_routes\":[{\"name\":\"r\"}],"
                         "\"backends\":[{\"name\":\"c\"},{\"name\":\"b\"}],"
                         "\"extensions\":{\"y\":\"b\",\"z\":true,\"x\":1},"
                         "\"id\":\"demo:7\",\"generated_at\":\"2026-11-21T00:00:00Z\"}");
    assert_true(json_equal(out, want));
    /* The inputs are not modified. */
    assert_int_equal(json_array_size(json_object_get(a, "listeners")), 1);
    json_decref(out);
    json_decref(want);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_empty_group(void **state)
{
    (void)state;
    json_t *out = snap_compose_json(NULL, 0, "empty:1", NULL);
    assert_string_equal(json_string_value(json_object_get(out, "id")), "empty:1");
    assert_int_equal(json_object_size(out), 1);
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_order_and_union),
        cmocka_unit_test(test_empty_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
