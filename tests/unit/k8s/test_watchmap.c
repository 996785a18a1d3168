/*
 * test_watchmap.c — the watchable maps: stores of deep-equal values change and notify
 * nothing, managedFields are dropped, a replace deletes what vanished, subscriptions
 * start with the current state and coalesce what happened since the last read, and a
 * table's snapshot of every map is taken at one instant.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/k8s/watchmap.h"

/* An object named ns/name whose spec.n is n. */
static json_t *obj(const char *ns, const char *name, int n)
{
    return json_pack("{s:{s:s,s:s},s:{s:i}}", "metadata", "namespace", ns, "name", name, "spec",
                     "n", n);
}

static int spec_n(const json_t *v)
{
    return (int)json_integer_value(json_object_get(json_object_get(v, "spec"), "n"));
}

/* The table of a test (its state), made before and destroyed after it. */
static int setup(void **state)
{
    *state = wm_table_create();
    return 0;
}

static int teardown(void **state)
{
    wm_table_destroy(*state);
    return 0;
}

TL_TEST_FX(test_store_noop_and_managed_fields)
{
    wm_table *t = *state;
    wm_map *m = wm_table_add(t, "HTTPRoute");
    assert_ptr_equal(wm_table_add(t, "HTTPRoute"), m);
    assert_ptr_equal(wm_table_find(t, "HTTPRoute"), m);
    assert_null(wm_table_find(t, "Gateway"));
    assert_string_equal(wm_map_kind(m), "HTTPRoute");

    assert_int_equal(wm_map_generation(m), 0);
    assert_int_equal(wm_store(m, "default/web", obj("default", "web", 1)), 1);
    assert_int_equal(wm_map_generation(m), 1);
    /* A new object with the same content is a no-op. */
    assert_int_equal(wm_store(m, "default/web", obj("default", "web", 1)), 0);
    assert_int_equal(wm_map_generation(m), 1);
    /* managedFields are dropped, so a value differing only in them is a no-op too. */
    json_t *mf = obj("default", "web", 1);
    json_object_set_new(json_object_get(mf, "metadata"), "managedFields",
                        tl_json("[{'manager':'kubectl','operation':'Apply'}]"));
    assert_int_equal(wm_store(m, "default/web", mf), 0);
    json_t *got = wm_get(m, "default/web");
    assert_null(json_object_get(json_object_get(got, "metadata"), "managedFields"));
    json_decref(got);
    /* A stored value with managedFields loses them. */
    mf = obj("default", "api", 7);
    json_object_set_new(json_object_get(mf, "metadata"), "managedFields", json_array());
    assert_int_equal(wm_store(m, "default/api", mf), 1);
    got = wm_get(m, "default/api");
    assert_int_equal(spec_n(got), 7);
    assert_null(json_object_get(json_object_get(got, "metadata"), "managedFields"));
    json_decref(got);
    /* A changed value is stored. */
    assert_int_equal(wm_store(m, "default/web", obj("default", "web", 2)), 1);
    got = wm_get(m, "default/web");
    assert_int_equal(spec_n(got), 2);
    json_decref(got);
    assert_int_equal(wm_map_generation(m), 3);
    assert_int_equal(wm_size(m), 2);

    /* Bad input changes nothing. */
    assert_int_equal(wm_store(m, "", obj("default", "x", 1)), SX_EINVAL);
    assert_int_equal(wm_store(m, "default/x", json_string("not an object")), SX_EINVAL);
    assert_int_equal(wm_size(m), 2);
    assert_int_equal(wm_map_generation(m), 3);

    /* Deleting what is there changes the map; deleting it again does not. */
    assert_int_equal(wm_delete(m, "default/api"), 1);
    assert_int_equal(wm_delete(m, "default/api"), 0);
    assert_null(wm_get(m, "default/api"));
    assert_int_equal(wm_map_generation(m), 4);
    assert_int_equal(wm_table_generation(t), 4);
}

TL_TEST_FX(test_replace)
{
    wm_table *t = *state;
    wm_map *m = wm_table_add(t, "Service");
    assert_int_equal(wm_store(m, "a/one", obj("a", "one", 1)), 1);
    assert_int_equal(wm_store(m, "a/two", obj("a", "two", 2)), 1);
    assert_int_equal(wm_store(m, "a/three", obj("a", "three", 3)), 1);
    wm_sub *sub = wm_subscribe(m);
    wm_snapshot *snap;
    assert_int_equal(wm_sub_next(sub, 0, &snap), 0);
    wm_snapshot_free(snap);
    uint64_t gen = wm_map_generation(m);

    /* one vanishes, two is unchanged, three changes, four is new. */
    json_t *items = json_object();
    json_object_set_new(items, "a/two", obj("a", "two", 2));
    json_object_set_new(items, "a/three", obj("a", "three", 33));
    json_object_set_new(items, "a/four", obj("a", "four", 4));
    assert_int_equal(wm_replace(m, items), 3);
    assert_int_equal(wm_map_generation(m), gen + 1);

    assert_int_equal(wm_sub_next(sub, 0, &snap), 0);
    assert_int_equal(snap->state->n, 3);
    assert_string_equal(snap->state->keys[0], "a/four");
    assert_string_equal(snap->state->keys[1], "a/three");
    assert_string_equal(snap->state->keys[2], "a/two");
    assert_int_equal(snap->nupdates, 3);
    assert_string_equal(snap->updates[0].key, "a/four");
    assert_int_equal(spec_n(snap->updates[0].value), 4);
    assert_string_equal(snap->updates[1].key, "a/one");
    assert_null(snap->updates[1].value);
    assert_string_equal(snap->updates[2].key, "a/three");
    assert_int_equal(spec_n(snap->updates[2].value), 33);
    wm_snapshot_free(snap);

    /* The same content again is a no-op that wakes nobody. */
    items = json_object();
    json_object_set_new(items, "a/two", obj("a", "two", 2));
    json_object_set_new(items, "a/three", obj("a", "three", 33));
    json_object_set_new(items, "a/four", obj("a", "four", 4));
    assert_int_equal(wm_replace(m, items), 0);
    assert_int_equal(wm_sub_next(sub, 0, &snap), SX_ETIMEOUT);
    assert_null(snap);

    /* A bad item refuses the whole replace. */
    items = json_object();
    json_object_set_new(items, "a/two", json_integer(2));
    assert_int_equal(wm_replace(m, items), SX_EINVAL);
    assert_int_equal(wm_size(m), 3);
    /* An empty replace empties the map. */
    assert_int_equal(wm_replace(m, json_object()), 3);
    assert_int_equal(wm_size(m), 0);
    wm_sub_close(sub);
}

TL_TEST_FX(test_subscribe_coalesces)
{
    wm_table *t = *state;
    wm_map *m = wm_table_add(t, "Gateway");
    assert_int_equal(wm_store(m, "ns/gw", obj("ns", "gw", 0)), 1);
    wm_sub *sub = wm_subscribe(m);

    /* The first read returns at once with the current state and no updates. */
    wm_snapshot *snap;
    assert_int_equal(wm_sub_next(sub, -1, &snap), 0);
    assert_int_equal(snap->state->n, 1);
    assert_string_equal(snap->state->kind, "Gateway");
    assert_int_equal(snap->nupdates, 0);
    wm_snapshot_free(snap);
    assert_int_equal(wm_sub_next(sub, 0, &snap), SX_ETIMEOUT);
    assert_int_equal(wm_sub_next(sub, 20, &snap), SX_ETIMEOUT);

    /* A no-op store notifies nobody. */
    assert_int_equal(wm_store(m, "ns/gw", obj("ns", "gw", 0)), 0);
    assert_int_equal(wm_sub_next(sub, 0, &snap), SX_ETIMEOUT);

    /* 100 changes of one key, another key added and deleted: one read, the newest. */
    for (int i = 1; i <= 100; i++)
        assert_int_equal(wm_store(m, "ns/gw", obj("ns", "gw", i)), 1);
    assert_int_equal(wm_store(m, "ns/tmp", obj("ns", "tmp", 1)), 1);
    assert_int_equal(wm_delete(m, "ns/tmp"), 1);
    assert_int_equal(wm_sub_next(sub, 0, &snap), 0);
    assert_int_equal(snap->state->n, 1);
    assert_int_equal(spec_n(snap->state->values[0]), 100);
    assert_int_equal(snap->nupdates, 2);
    assert_string_equal(snap->updates[0].key, "ns/gw");
    assert_int_equal(spec_n(snap->updates[0].value), 100);
    assert_string_equal(snap->updates[1].key, "ns/tmp");
    assert_null(snap->updates[1].value);
    assert_int_equal(snap->state->generation, wm_map_generation(m));
    /* The snapshot stays valid while the map moves on. */
    assert_int_equal(wm_store(m, "ns/gw", obj("ns", "gw", 101)), 1);
    assert_int_equal(spec_n(snap->state->values[0]), 100);
    wm_snapshot_free(snap);
    /* ... and nothing is left over: no backlog. */
    assert_int_equal(wm_sub_next(sub, 0, &snap), 0);
    assert_int_equal(snap->nupdates, 1);
    wm_snapshot_free(snap);
    assert_int_equal(wm_sub_next(sub, 0, &snap), SX_ETIMEOUT);

    /* A second subscription sees changes made before its first read as updates. */
    wm_sub *late = wm_subscribe(m);
    assert_int_equal(wm_store(m, "ns/other", obj("ns", "other", 5)), 1);
    assert_int_equal(wm_sub_next(late, 0, &snap), 0);
    assert_int_equal(snap->state->n, 2);
    assert_int_equal(snap->nupdates, 1);
    assert_string_equal(snap->updates[0].key, "ns/other");
    wm_snapshot_free(snap);
    wm_sub_close(late);

    /* Cancelling makes reads return. */
    wm_sub_cancel(sub);
    assert_int_equal(wm_sub_next(sub, -1, &snap), SX_EUNAVAILABLE);
    wm_sub_close(sub);
}

TL_TEST(test_states_shared_and_outlive_table)
{
    wm_table *t = wm_table_create();
    wm_map *m = wm_table_add(t, "Namespace");
    assert_int_equal(wm_store(m, "b", obj("", "b", 2)), 1);
    assert_int_equal(wm_store(m, "a", obj("", "a", 1)), 1);
    wm_state *s1 = wm_map_load_all(m);
    wm_state *s2 = wm_map_load_all(m);
    /* No change in between: the same state. */
    assert_ptr_equal(s1, s2);
    wm_state_release(s2);
    assert_int_equal(s1->n, 2);
    assert_string_equal(s1->keys[0], "a");
    assert_int_equal(wm_state_find(s1, "b"), 1);
    assert_int_equal(wm_state_find(s1, "c"), -1);
    assert_int_equal(wm_store(m, "c", obj("", "c", 3)), 1);
    s2 = wm_map_load_all(m);
    assert_ptr_not_equal(s1, s2);
    assert_int_equal(s2->n, 3);
    assert_int_equal(s1->n, 2);
    wm_table_destroy(t);
    /* States outlive the table. */
    assert_string_equal(s1->kind, "Namespace");
    assert_int_equal(spec_n(s2->values[2]), 3);
    wm_state_release(s1);
    wm_state_release(s2);
}

TL_TEST(test_keys)
{
    json_t *o = obj("default", "web", 1);
    char *k = wm_key_of(o);
    assert_string_equal(k, "default/web");
    sx_free(k);
    json_decref(o);
    o = tl_json("{'metadata':{'name':'sextant'}}");
    k = wm_key_of(o);
    assert_string_equal(k, "sextant");
    sx_free(k);
    json_decref(o);
    o = tl_json("{'metadata':{'namespace':'x'}}");
    assert_null(wm_key_of(o));
    json_decref(o);
}

/* ---------------------------------------------------------------- threads */

typedef struct writer_arg {
    wm_map *a, *b;
    int n;
    int bad; /* stores that did not change the map (cmocka may only fail on the main thread) */
} writer_arg;

/* Stores i into A, then into B, for i in 1..n: at any instant A holds B's value or one
 * more. */
static void *writer(void *p)
{
    writer_arg *w = p;
    for (int i = 1; i <= w->n; i++) {
        w->bad += wm_store(w->a, "x/k", obj("x", "k", i)) != 1;
        w->bad += wm_store(w->b, "x/k", obj("x", "k", i)) != 1;
    }
    return NULL;
}

TL_TEST_FX(test_table_snapshot_is_consistent)
{
    wm_table *t = *state;
    writer_arg w = {wm_table_add(t, "A"), wm_table_add(t, "B"), 20000, 0};
    assert_int_equal(wm_store(w.a, "x/k", obj("x", "k", 0)), 1);
    assert_int_equal(wm_store(w.b, "x/k", obj("x", "k", 0)), 1);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer, &w), 0);
    int last_b = 0, reads = 0;
    while (last_b < w.n) {
        wm_table_state *ts = wm_table_load_all(t);
        const wm_state *a = wm_table_state_find(ts, "A");
        const wm_state *b = wm_table_state_find(ts, "B");
        assert_non_null(a);
        assert_non_null(b);
        int va = spec_n(a->values[0]), vb = spec_n(b->values[0]);
        if (va != vb && va != vb + 1)
            fail_msg("snapshot mixes instants: A=%d B=%d", va, vb);
        assert_true(ts->generation == a->generation + b->generation);
        assert_true(vb >= last_b);
        last_b = vb;
        reads++;
        wm_table_state_free(ts);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(w.bad, 0);
    assert_true(reads > 0);
}

typedef struct reader_arg {
    wm_sub *sub;
    int want; /* the last value the writer stores */
    int reads;
    int bad; /* a read that went backwards */
} reader_arg;

/* Reads until it has seen the last value; each read must show a newer value. */
static void *slow_reader(void *p)
{
    reader_arg *r = p;
    int last = -1;
    for (;;) {
        wm_snapshot *snap;
        if (wm_sub_next(r->sub, -1, &snap) != 0)
            break;
        int v = snap->state->n ? spec_n(snap->state->values[0]) : -1;
        if (v <= last && r->reads > 0)
            r->bad++;
        last = v;
        r->reads++;
        wm_snapshot_free(snap);
        if (v == r->want)
            break;
    }
    return NULL;
}

TL_TEST_FX(test_slow_subscriber_sees_newest)
{
    wm_table *t = *state;
    wm_map *m = wm_table_add(t, "EndpointSlice");
    reader_arg r = {.sub = wm_subscribe(m), .want = 5000};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, slow_reader, &r), 0);
    for (int i = 0; i <= r.want; i++)
        assert_int_equal(wm_store(m, "ns/slice", obj("ns", "slice", i)), 1);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.bad, 0);
    /* However the reads fell, none is left behind. */
    wm_snapshot *snap;
    assert_int_equal(wm_sub_next(r.sub, 0, &snap), SX_ETIMEOUT);
    wm_sub_close(r.sub);
}

typedef struct waiter_arg {
    wm_table *t;
    uint64_t seen;
    uint64_t got;
    wm_sub *sub;
    int rc;
} waiter_arg;

static void *table_waiter(void *p)
{
    waiter_arg *a = p;
    a->got = wm_table_wait(a->t, a->seen, -1);
    return NULL;
}

static void *sub_waiter(void *p)
{
    waiter_arg *a = p;
    wm_snapshot *snap;
    a->rc = wm_sub_next(a->sub, -1, &snap);
    wm_snapshot_free(snap);
    return NULL;
}

TL_TEST_FX(test_waits_wake)
{
    wm_table *t = *state;
    wm_map *m = wm_table_add(t, "Secret");
    /* A generation other than seen returns at once; a timeout returns seen. */
    assert_int_equal(wm_table_wait(t, 42, -1), 0);
    assert_int_equal(wm_table_wait(t, 0, 10), 0);
    /* A change wakes a waiter without limit. */
    waiter_arg a = {.t = t, .seen = 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, table_waiter, &a), 0);
    assert_int_equal(wm_store(m, "ns/s", obj("ns", "s", 1)), 1);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(a.got, 1);
    /* wm_table_wake ends a wait without a change (possibly before it began: then the
     * waiter waits for the change that follows, which ends it too). */
    a.seen = 1;
    assert_int_equal(pthread_create(&th, NULL, table_waiter, &a), 0);
    wm_table_wake(t);
    assert_int_equal(wm_delete(m, "ns/s"), 1);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(a.got == 1 || a.got == 2);

    /* Cancelling a subscription ends a read blocked on it. */
    a.sub = wm_subscribe(m);
    wm_snapshot *snap;
    assert_int_equal(wm_sub_next(a.sub, 0, &snap), 0);
    wm_snapshot_free(snap);
    assert_int_equal(pthread_create(&th, NULL, sub_waiter, &a), 0);
    wm_sub_cancel(a.sub);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(a.rc, SX_EUNAVAILABLE);
    wm_sub_close(a.sub);
}

TL_MAIN()
