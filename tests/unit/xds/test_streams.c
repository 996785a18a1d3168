/*
 * test_streams.c — the active-stream registry: one stream per node (the newer one
 * supersedes), per-group lists for fan-out, the per-protocol gauge
 * (server/xds/streams.c).
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/xds/streams.h"

typedef struct owner {
    int refs;
    xds_stream_link link;
    char node[32];
    char group[32];
} owner;

static void ref(void *o)
{
    ((owner *)o)->refs++;
}

static const xds_streams_ops ops = {ref};

static owner *make(const char *node, const char *group, xds_protocol p)
{
    owner *o = sx_calloc(1, sizeof(*o));
    snprintf(o->node, sizeof(o->node), "%s", node);
    snprintf(o->group, sizeof(o->group), "%s", group);
    o->link.node_id = o->node;
    o->link.group = o->group;
    o->link.protocol = p;
    o->link.owner = o;
    return o;
}

TL_TEST(test_supersede_and_groups)
{
    sx_metrics *reg = sx_metrics_create();
    xds_metrics m;
    xds_metrics_init(&m, reg);
    xds_streams *r = xds_streams_create(&ops, &m);
    owner *a1 = make("node-a", "edge", XDS_PROTO_SOTW);
    owner *b = make("node-b", "edge", XDS_PROTO_DELTA);
    owner *c = make("node-c", "core", XDS_PROTO_CONTROL);
    assert_null(xds_streams_add(r, &a1->link));
    assert_null(xds_streams_add(r, &b->link));
    assert_null(xds_streams_add(r, &c->link));
    assert_int_equal(xds_streams_count(r), 3);
    assert_true(xds_streams_has_node(r, "node-a"));
    assert_false(xds_streams_has_node(r, "node-z"));
    assert_int_equal(sx_metric_value(m.streams, (const char *[]){"ads-sotw"}), 1);

    void **list = NULL;
    assert_int_equal(xds_streams_list(r, "edge", &list), 2);
    assert_int_equal(a1->refs + b->refs, 2);
    sx_free(list);
    assert_int_equal(xds_streams_list(r, "nobody", &list), 0);
    assert_null(list);
    assert_int_equal(xds_streams_list(r, NULL, &list), 3);
    sx_free(list);

    /* A second stream of node-a (now over Delta, in another group) supersedes the
     * first, which is handed back with a reference for its owner to cancel. */
    owner *a2 = make("node-a", "core", XDS_PROTO_DELTA);
    int before = a1->refs;
    assert_ptr_equal(xds_streams_add(r, &a2->link), a1);
    assert_int_equal(a1->refs, before + 1);
    assert_false(a1->link.registered);
    assert_false(xds_streams_remove(r, &a1->link)); /* already out */
    assert_int_equal(xds_streams_count(r), 3);
    assert_int_equal(xds_streams_list(r, "core", &list), 2);
    sx_free(list);
    assert_int_equal(xds_streams_list(r, "edge", &list), 1);
    assert_ptr_equal(list[0], b);
    sx_free(list);
    assert_int_equal(sx_metric_value(m.streams, (const char *[]){"ads-sotw"}), 0);
    assert_int_equal(sx_metric_value(m.streams, (const char *[]){"ads-delta"}), 2);

    assert_true(xds_streams_remove(r, &a2->link));
    assert_true(xds_streams_remove(r, &b->link));
    assert_true(xds_streams_remove(r, &c->link));
    assert_int_equal(xds_streams_count(r), 0);
    assert_int_equal(xds_streams_list(r, "edge", &list), 0);
    xds_streams_destroy(r);
    sx_free(a1);
    sx_free(a2);
    sx_free(b);
    sx_free(c);
    sx_metrics_destroy(reg);
}

TL_TEST(test_many_nodes)
{
    xds_streams *r = xds_streams_create(&ops, NULL);
    enum { N = 3000 };
    owner **o = sx_calloc(N, sizeof(*o));
    for (int i = 0; i < N; i++) {
        char node[32], group[32];
        snprintf(node, sizeof(node), "n%d", i);
        snprintf(group, sizeof(group), "g%d", i % 7);
        o[i] = make(node, group, XDS_PROTO_SOTW);
        assert_null(xds_streams_add(r, &o[i]->link));
    }
    assert_int_equal(xds_streams_count(r), N);
    for (int i = 0; i < N; i += 2)
        assert_true(xds_streams_remove(r, &o[i]->link));
    for (int i = 0; i < N; i++) {
        char node[32];
        snprintf(node, sizeof(node), "n%d", i);
        assert_int_equal(xds_streams_has_node(r, node), i % 2 == 1);
    }
    void **list = NULL;
    size_t total = 0;
    for (int g = 0; g < 7; g++) {
        char group[32];
        snprintf(group, sizeof(group), "g%d", g);
        total += xds_streams_list(r, group, &list);
        sx_free(list);
    }
    assert_int_equal(total, N / 2);
    for (int i = 1; i < N; i += 2)
        assert_true(xds_streams_remove(r, &o[i]->link));
    for (int i = 0; i < N; i++)
        sx_free(o[i]);
    sx_free(o);
    xds_streams_destroy(r);
}

/* A cap bounds new nodes only; a superseding stream always gets a higher generation. */
TL_TEST(test_cap_and_generations)
{
    xds_streams *r = xds_streams_create(&ops, NULL);
    owner *a = make("node-a", "edge", XDS_PROTO_SOTW);
    owner *b = make("node-b", "edge", XDS_PROTO_SOTW);
    owner *c = make("node-c", "edge", XDS_PROTO_SOTW);
    owner *a2 = make("node-a", "edge", XDS_PROTO_SOTW);
    bool full = true, conflict = true;
    assert_null(xds_streams_add_capped(r, &a->link, 2, &full, &conflict));
    assert_false(full);
    assert_false(conflict);
    assert_null(xds_streams_add_capped(r, &b->link, 2, &full, &conflict));
    assert_false(full);
    assert_null(xds_streams_add_capped(r, &c->link, 2, &full, &conflict));
    assert_true(full);
    assert_false(xds_streams_has_node(r, "node-c"));
    assert_int_equal(xds_streams_count(r), 2);
    assert_ptr_equal(xds_streams_add_capped(r, &a2->link, 2, &full, &conflict), a);
    assert_false(full);
    assert_false(conflict);
    assert_true(a2->link.gen > a->link.gen);
    assert_true(b->link.gen > a->link.gen);
    assert_true(a2->link.gen > b->link.gen);
    assert_true(xds_streams_remove(r, &a2->link));
    assert_true(xds_streams_remove(r, &b->link));
    xds_streams_destroy(r);
    sx_free(a);
    sx_free(b);
    sx_free(c);
    sx_free(a2);
}

/* Only a stream of the same identity supersedes the node's stream; another one is
 * refused and leaves the registry as it was. */
TL_TEST(test_identity)
{
    xds_streams *r = xds_streams_create(&ops, NULL);
    owner *a = make("node-a", "edge", XDS_PROTO_SOTW);
    owner *impostor = make("node-a", "edge", XDS_PROTO_DELTA);
    owner *a2 = make("node-a", "edge", XDS_PROTO_SOTW);
    a->link.identity = "x509:spiffe://example.org/ns/prod/node/node-a";
    impostor->link.identity = "jwt:someone-else";
    a2->link.identity = "x509:spiffe://example.org/ns/prod/node/node-a";
    bool full = false, conflict = false;
    assert_null(xds_streams_add_capped(r, &a->link, 0, &full, &conflict));
    assert_null(xds_streams_add_capped(r, &impostor->link, 0, &full, &conflict));
    assert_true(conflict);
    assert_false(impostor->link.registered);
    void *found = xds_streams_find(r, "node-a");
    assert_ptr_equal(found, a);
    a->refs--;
    assert_ptr_equal(xds_streams_add_capped(r, &a2->link, 0, &full, &conflict), a);
    assert_false(conflict);
    assert_false(a->link.registered);
    assert_true(xds_streams_remove(r, &a2->link));
    xds_streams_destroy(r);
    sx_free(a);
    sx_free(impostor);
    sx_free(a2);
}

TL_TEST(test_names)
{
    const char *want[] = {"shutdown",        "client_disconnect", "stream_error",
                          "send_timeout",    "ack_timeout",       "superseded",
                          "invalid_request", "permission_denied", "other"};
    for (int i = 0; i < XDS_TERM_COUNT; i++)
        assert_string_equal(xds_term_name((xds_term)i), want[i]);
    assert_string_equal(xds_protocol_name(XDS_PROTO_SOTW), "ads-sotw");
    assert_string_equal(xds_protocol_name(XDS_PROTO_DELTA), "ads-delta");
    assert_string_equal(xds_protocol_name(XDS_PROTO_CONTROL), "control-v1");
}

TL_MAIN()
