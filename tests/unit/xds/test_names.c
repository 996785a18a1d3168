/*
 * test_names.c — the server's table of interned resource names (server/xds/names.c)
 * and subscriptions that share their names through it (server/xds/subs.c).
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>

#include "server/xds/names.h"
#include "server/xds/subs.h"

TL_TEST(test_intern_shares_and_refcounts)
{
    xds_names *t = xds_names_create();
    char buf[8];
    snprintf(buf, sizeof(buf), "a/b");
    const char *x = xds_names_intern(t, buf);
    const char *y = xds_names_intern(t, "a/b");
    assert_ptr_equal(x, y);
    assert_ptr_not_equal(x, buf);
    assert_string_equal(x, "a/b");
    assert_int_equal(xds_names_count(t), 1);
    const char *z = xds_names_intern(t, "");
    assert_string_equal(z, "");
    assert_int_equal(xds_names_count(t), 2);
    xds_names_release(t, x);
    assert_int_equal(xds_names_count(t), 2); /* y still holds it */
    assert_string_equal(y, "a/b");
    xds_names_release(t, y);
    xds_names_release(t, z);
    xds_names_release(t, NULL);
    assert_int_equal(xds_names_count(t), 0);
    xds_names_destroy(t);
}

TL_TEST(test_many_names_grow_the_table)
{
    xds_names *t = xds_names_create();
    enum { N = 5000 };
    static char text[N][16];
    static const char *in[N], *out[N], *again[N];
    for (int i = 0; i < N; i++) {
        snprintf(text[i], sizeof(text[i]), "ns/c-%d", i);
        in[i] = text[i];
    }
    xds_names_intern_many(t, in, N, out);
    xds_names_intern_many(t, in, N, again);
    assert_int_equal(xds_names_count(t), N);
    for (int i = 0; i < N; i++) {
        assert_string_equal(out[i], text[i]);
        assert_ptr_equal(out[i], again[i]);
        assert_ptr_equal(xds_names_intern(t, text[i]), out[i]);
        xds_names_release(t, out[i]);
    }
    xds_names_release_many(t, out, N);
    assert_int_equal(xds_names_count(t), N);
    xds_names_release_many(t, again, N);
    assert_int_equal(xds_names_count(t), 0);
    /* Destroying a table that still holds names frees them too. */
    (void)xds_names_intern(t, "left/over");
    xds_names_destroy(t);
    xds_names_destroy(NULL);
}

/* Two streams on the same names share one copy; changes keep the counts right. */
TL_TEST(test_subs_share_pooled_names)
{
    xds_names *t = xds_names_create();
    xds_subs a = {.pool = t}, b = {.pool = t};
    char *list1[] = {"c", "a", "b", "a"};
    assert_true(xds_subs_set_sotw(&a, false, list1, 4));
    assert_true(xds_subs_set_sotw(&b, false, list1, 3));
    assert_int_equal(a.count, 3);
    assert_int_equal(xds_names_count(t), 3);
    for (size_t i = 0; i < 3; i++)
        assert_ptr_equal(a.names[i], b.names[i]);
    assert_string_equal(a.names[0], "a");
    assert_string_equal(a.names[2], "c");

    /* The same list again, sorted or not, changes nothing. */
    char *sorted[] = {"a", "b", "c"};
    assert_false(xds_subs_set_sotw(&a, false, sorted, 3));
    assert_false(xds_subs_set_sotw(&a, false, list1, 4));
    assert_int_equal(xds_names_count(t), 3);

    /* A new list keeps shared names and drops the others once nobody holds them. */
    char *list2[] = {"d", "b"};
    assert_true(xds_subs_set_sotw(&a, false, list2, 2));
    assert_int_equal(a.count, 2);
    assert_string_equal(a.names[0], "b");
    assert_string_equal(a.names[1], "d");
    assert_int_equal(xds_names_count(t), 4); /* b still holds a, b, c */
    xds_subs_clear(&b);
    assert_ptr_equal(b.pool, t);
    assert_int_equal(xds_names_count(t), 2);

    /* Incremental adds and removes (Delta) intern and release one name at a time. */
    assert_true(xds_subs_add(&b, "x"));
    assert_false(xds_subs_add(&b, "x"));
    assert_true(xds_subs_add(&b, "d"));
    assert_true(xds_subs_add(&b, "*"));
    assert_true(b.wildcard);
    assert_ptr_equal(b.names[0], a.names[1]);
    assert_int_equal(xds_names_count(t), 3);
    assert_true(xds_subs_remove(&b, "x"));
    assert_false(xds_subs_remove(&b, "x"));
    assert_true(xds_subs_has(&b, "d"));
    assert_int_equal(xds_names_count(t), 2);

    /* "*" and an empty list follow the wildcard rules as without a pool. */
    char *star[] = {"*", "b"};
    assert_true(xds_subs_set_sotw(&a, true, star, 2));
    assert_true(a.wildcard);
    assert_int_equal(a.count, 1);
    assert_true(xds_subs_wants(&a, "zzz"));
    assert_true(xds_subs_set_sotw(&a, true, NULL, 0));
    assert_false(a.wildcard);
    assert_int_equal(a.count, 0);

    xds_subs_clear(&a);
    xds_subs_clear(&b);
    assert_int_equal(xds_names_count(t), 0);
    xds_names_destroy(t);
}

TL_MAIN()
