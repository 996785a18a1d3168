/*
 * test_diff.c — the structured diff of two config specs (server/diff.c): added, removed
 * and changed paths with their values, named arrays matched by name, other arrays by
 * index, type changes, quoting of odd keys, and equal documents.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/diff.h"

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (j == NULL)
        fail_msg("bad test JSON at %d:%d: %s", e.line, e.column, e.text);
    return j;
}

/* Checks diff_json(from, to, root) against the expected result, both as JSON text. */
static void expect_diff(const char *from, const char *to, const char *root, const char *want)
{
    json_t *a = parse(from), *b = parse(to), *w = parse(want);
    json_t *d = diff_json(a, b, root);
    tl_assert_json_equal(d, w);
    json_decref(a);
    json_decref(b);
    json_decref(w);
    json_decref(d);
}

TL_TEST(test_equal_documents)
{
    expect_diff("{\"a\":1,\"b\":[1,2],\"c\":{\"d\":null}}",
                "{\"c\":{\"d\":null},\"b\":[1,2],\"a\":1}", "spec",
                "{\"added\":[],\"removed\":[],\"changed\":[]}");
    json_t *x = parse("{}");
    json_t *d = diff_json(x, x, NULL);
    assert_int_equal(diff_count(d), 0);
    json_decref(d);
    json_decref(x);
}

TL_TEST(test_scalars_and_keys)
{
    expect_diff("{\"a\":1,\"b\":\"x\",\"gone\":true}", "{\"a\":2,\"b\":\"x\",\"new\":[1]}", "spec",
                "{\"added\":[{\"path\":\"spec.new\",\"value\":[1]}],"
                "\"removed\":[{\"path\":\"spec.gone\",\"value\":true}],"
                "\"changed\":[{\"path\":\"spec.a\",\"old\":1,\"new\":2}]}");
    /* Without a root the first key has no leading dot. */
    expect_diff(
        "{\"a\":{\"b\":1}}", "{\"a\":{\"b\":2}}", NULL,
        "{\"added\":[],\"removed\":[],\"changed\":[{\"path\":\"a.b\",\"old\":1,\"new\":2}]}");
}

TL_TEST(test_type_change_is_one_change)
{
    expect_diff("{\"a\":{\"b\":1}}", "{\"a\":[1]}", "spec",
                "{\"added\":[],\"removed\":[],"
                "\"changed\":[{\"path\":\"spec.a\",\"old\":{\"b\":1},\"new\":[1]}]}");
    expect_diff("{\"a\":1}", "{\"a\":1.0}", "",
                "{\"added\":[],\"removed\":[],"
                "\"changed\":[{\"path\":\"a\",\"old\":1,\"new\":1.0}]}");
    /* A different document type at the root is a change of the root itself. */
    expect_diff(
        "[1]", "{}", "spec",
        "{\"added\":[],\"removed\":[],\"changed\":[{\"path\":\"spec\",\"old\":[1],\"new\":{}}]}");
}

TL_TEST(test_named_arrays_match_by_name)
{
    /* A listener inserted in front does not make the others look changed. */
    expect_diff(
        "{\"listeners\":[{\"name\":\"web\",\"port\":80},{\"name\":\"old\",\"port\":1}]}",
        "{\"listeners\":[{\"name\":\"edge\",\"port\":443},{\"name\":\"web\",\"port\":8080}]}",
        "spec",
        "{\"added\":[{\"path\":\"spec.listeners[\\\"edge\\\"]\","
        "\"value\":{\"name\":\"edge\",\"port\":443}}],"
        "\"removed\":[{\"path\":\"spec.listeners[\\\"old\\\"]\","
        "\"value\":{\"name\":\"old\",\"port\":1}}],"
        "\"changed\":[{\"path\":\"spec.listeners[\\\"web\\\"].port\",\"old\":80,\"new\":8080}]}");
    /* From nothing: the first element is named too. */
    expect_diff("{\"backends\":[]}", "{\"backends\":[{\"name\":\"b\"}]}", "spec",
                "{\"added\":[{\"path\":\"spec.backends[\\\"b\\\"]\",\"value\":{\"name\":\"b\"}}],"
                "\"removed\":[],\"changed\":[]}");
}

TL_TEST(test_other_arrays_by_index)
{
    expect_diff("{\"h\":[\"a\",\"b\",\"c\"]}", "{\"h\":[\"a\",\"x\"]}", "spec",
                "{\"added\":[],\"removed\":[{\"path\":\"spec.h[2]\",\"value\":\"c\"}],"
                "\"changed\":[{\"path\":\"spec.h[1]\",\"old\":\"b\",\"new\":\"x\"}]}");
    expect_diff(
        "{\"h\":[1]}", "{\"h\":[1,2,3]}", "spec",
        "{\"added\":[{\"path\":\"spec.h[1]\",\"value\":2},{\"path\":\"spec.h[2]\",\"value\":3}],"
        "\"removed\":[],\"changed\":[]}");
    /* Duplicate names: matched by index, not by name. */
    expect_diff("{\"r\":[{\"name\":\"a\",\"v\":1},{\"name\":\"a\",\"v\":2}]}",
                "{\"r\":[{\"name\":\"a\",\"v\":1},{\"name\":\"a\",\"v\":3}]}", "spec",
                "{\"added\":[],\"removed\":[],"
                "\"changed\":[{\"path\":\"spec.r[1].v\",\"old\":2,\"new\":3}]}");
    /* Nested named arrays inside indexed ones. */
    expect_diff("{\"x\":[{\"rules\":[{\"name\":\"r1\",\"t\":\"1s\"}]}]}",
                "{\"x\":[{\"rules\":[{\"name\":\"r1\",\"t\":\"2s\"}]}]}", "spec",
                "{\"added\":[],\"removed\":[],"
                "\"changed\":[{\"path\":\"spec.x[0].rules[\\\"r1\\\"].t\",\"old\":\"1s\",\"new\":"
                "\"2s\"}]}");
}

TL_TEST(test_odd_keys_are_quoted)
{
    expect_diff("{\"extensions\":{\"a.b\":1,\"9x\":1,\"q\\\"k\":1}}",
                "{\"extensions\":{\"a.b\":2,\"9x\":2,\"q\\\"k\":2}}", "spec",
                "{\"added\":[],\"removed\":[],\"changed\":["
                "{\"path\":\"spec.extensions[\\\"9x\\\"]\",\"old\":1,\"new\":2},"
                "{\"path\":\"spec.extensions[\\\"a.b\\\"]\",\"old\":1,\"new\":2},"
                "{\"path\":\"spec.extensions[\\\"q\\\\\\\"k\\\"]\",\"old\":1,\"new\":2}]}");
}

TL_TEST(test_values_are_copies)
{
    json_t *a = parse("{\"a\":{\"deep\":[1]}}"), *b = parse("{}");
    json_t *d = diff_json(a, b, "spec");
    json_decref(a);
    json_decref(b);
    /* The result outlives its inputs. */
    json_t *v = json_object_get(json_array_get(json_object_get(d, "removed"), 0), "value");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "deep"), 0)), 1);
    assert_int_equal(diff_count(d), 1);
    json_decref(d);
}

TL_MAIN()
