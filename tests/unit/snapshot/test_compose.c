/*
 * test_compose.c — a group's snapshot is the documented merge of its configs, and the
 * merge of the decoded configs gives exactly the bytes of the decoded JSON merge (or
 * declines, for the shapes where it could not).
 */
#include "tests/lib/testlib.h"

#include <stdlib.h>
#include <string.h>

#include "server/snapshot/compose.h"

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    assert_non_null(j);
    return j;
}

TL_TEST(test_merge_order_and_union)
{
    json_t *b = parse("{\"listeners\":[{\"name\":\"b-l\"}],\"backends\":[{\"name\":\"b\"}],"
                      "\"extensions\":{\"x\":1,\"y\":\"b\"},\"id\":\"ignored\"}");
    json_t *a = parse("{\"listeners\":[{\"name\":\"a-l\"}],\"http_routes\":[{\"name\":\"r\"}],"
                      "\"extensions\":{\"y\":\"a\",\"z\":true}}");
    json_t *c = parse("{\"backends\":[{\"name\":\"c\"}]}");
    /* Given out of order on purpose: composition sorts by (namespace, name). */
    snap_compose_input src[] = {
        {"team-b", "edge", b, NULL},
        {"team-a", "edge", a, NULL},
        {"team-a", "zeta", c, NULL},
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

TL_TEST(test_empty_group)
{
    json_t *out = snap_compose_json(NULL, 0, "empty:1", NULL);
    assert_string_equal(json_string_value(json_object_get(out, "id")), "empty:1");
    assert_int_equal(json_object_size(out), 1);
    json_decref(out);
}

static ir_snapshot *decode(const json_t *j)
{
    sx_fielderrs errs = {0};
    ir_snapshot *ir = NULL;
    if (ir_snapshot_from_json(j, NULL, &ir, &errs) != 0) {
        char *why = sx_fielderrs_join(&errs);
        fprintf(stderr, "decode failed: %s\n", why);
        free(why);
        fail();
    }
    sx_fielderrs_free(&errs);
    return ir;
}

/* Packs the decoded merge and the decoded JSON merge of src and compares the bytes. */
static void assert_same_bytes(snap_compose_input *src, size_t n, const char *when)
{
    json_t *composed = snap_compose_json(src, n, "g:3", when);
    ir_snapshot *want = decode(composed);
    json_t *stamp_json = json_pack("{s:s}", "generated_at", when ? when : "");
    ir_snapshot *stamp = when ? decode(stamp_json) : NULL;
    ir_snapshot got;
    assert_true(snap_compose_ir(src, n, "g:3", stamp ? stamp->generated_at : NULL, &got));
    size_t lw = 0, lg = 0;
    uint8_t *bw = ir_snapshot_pack(want, &lw);
    uint8_t *bg = ir_snapshot_pack(&got, &lg);
    assert_int_equal(lg, lw);
    assert_memory_equal(bg, bw, lw);
    free(bw);
    free(bg);
    snap_compose_ir_release(&got);
    ir_snapshot_free(stamp);
    ir_snapshot_free(want);
    json_decref(stamp_json);
    json_decref(composed);
}

TL_TEST(test_decoded_merge_gives_the_same_bytes)
{
    json_t *a = parse("{\"backends\":[{\"name\":\"a\",\"namespace\":\"team\","
                      "\"endpoints\":[{\"address\":\"10.0.0.1\",\"port\":80}]}],"
                      "\"extensions\":{\"y\":\"a\",\"z\":true,\"w\":[1,2]},"
                      "\"id\":\"ignored\",\"generatedAt\":\"2020-01-01T00:00:00Z\"}");
    json_t *b = parse("{\"backends\":[{\"name\":\"b\",\"namespace\":\"team\"}],"
                      "\"extensions\":{\"x\":1,\"y\":\"b\"}}");
    json_t *c = parse("{\"secrets\":[],\"backends\":[{\"name\":\"c\"}]}");
    ir_snapshot *ia = decode(a), *ib = decode(b), *ic = decode(c);
    snap_compose_input src[] = {
        {"team-b", "edge", b, ib},
        {"team-a", "edge", a, ia},
        {"team-a", "zeta", c, ic},
    };
    assert_same_bytes(src, 3, "2026-11-21T10:11:12.123456Z");
    assert_same_bytes(src, 3, NULL);
    assert_same_bytes(src, 1, NULL);
    assert_same_bytes(NULL, 0, "2026-11-21T10:11:12Z");

    /* Shapes the decoded merge cannot reproduce, and a missing decoded form: declined. */
    json_t *camel = parse("{\"httpRoutes\":[]}");
    json_t *null_list = parse("{\"backends\":null}");
    ir_snapshot *icamel = decode(camel), *inull = decode(null_list);
    ir_snapshot out;
    snap_compose_input d1[] = {{"a", "a", a, ia}, {"b", "b", camel, icamel}};
    assert_false(snap_compose_ir(d1, 2, "g:1", NULL, &out));
    snap_compose_input d2[] = {{"a", "a", a, ia}, {"b", "b", null_list, inull}};
    assert_false(snap_compose_ir(d2, 2, "g:1", NULL, &out));
    snap_compose_input d3[] = {{"a", "a", a, ia}, {"b", "b", b, NULL}};
    assert_false(snap_compose_ir(d3, 2, "g:1", NULL, &out));

    ir_snapshot_free(icamel);
    ir_snapshot_free(inull);
    json_decref(camel);
    json_decref(null_list);
    ir_snapshot_free(ia);
    ir_snapshot_free(ib);
    ir_snapshot_free(ic);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

TL_MAIN()
