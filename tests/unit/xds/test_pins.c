/*
 * test_pins.c — the replica's pin table (server/xds/pins.c): lookups by node and group,
 * the nodes a reload reports as changed, and which versions are still in use.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/xds/pins.h"

static char *join(char **ids, size_t n)
{
    static char buf[512];
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, ids[i]);
    }
    return buf;
}

TL_TEST(test_replace_reports_changes)
{
    xds_pins *p = xds_pins_create();
    char **changed = NULL;
    pin_record v1[] = {
        {"n3", "g", 4, NULL},
        {"n1", "g", 4, NULL},
        {"n2", "g", 5, NULL},
    };
    size_t n = xds_pins_replace(p, v1, 3, &changed);
    assert_string_equal(join(changed, n), "n1,n2,n3");
    xds_pins_free_ids(changed, n);
    assert_int_equal(xds_pins_get(p, "n1", "g"), 4);
    assert_int_equal(xds_pins_get(p, "n2", "g"), 5);
    assert_int_equal(xds_pins_get(p, "n2", "other"), 0); /* the pin is for group g only */
    assert_int_equal(xds_pins_get(p, "n9", "g"), 0);
    assert_true(xds_pins_uses(p, "g", 5));
    assert_false(xds_pins_uses(p, "g", 6));

    /* n1 unchanged, n2 moved, n3 released, n4 new. */
    pin_record v2[] = {
        {"n4", "g", 5, NULL},
        {"n2", "g", 4, NULL},
        {"n1", "g", 4, NULL},
    };
    n = xds_pins_replace(p, v2, 3, &changed);
    assert_string_equal(join(changed, n), "n2,n3,n4");
    xds_pins_free_ids(changed, n);
    assert_int_equal(xds_pins_get(p, "n3", "g"), 0);
    assert_int_equal(xds_pins_count(p), 3);

    /* Everything released. */
    n = xds_pins_replace(p, NULL, 0, &changed);
    assert_string_equal(join(changed, n), "n1,n2,n4");
    xds_pins_free_ids(changed, n);
    assert_int_equal(xds_pins_count(p), 0);
    assert_int_equal(xds_pins_get(p, "n1", "g"), 0);
    xds_pins_destroy(p);
}

TL_TEST(test_group_change_is_a_change)
{
    xds_pins *p = xds_pins_create();
    char **changed = NULL;
    pin_record a[] = {{"n1", "g1", 2, NULL}};
    pin_record b[] = {{"n1", "g2", 2, NULL}};
    size_t n = xds_pins_replace(p, a, 1, &changed);
    xds_pins_free_ids(changed, n);
    n = xds_pins_replace(p, b, 1, &changed);
    assert_string_equal(join(changed, n), "n1");
    xds_pins_free_ids(changed, n);
    assert_int_equal(xds_pins_get(p, "n1", "g1"), 0);
    assert_int_equal(xds_pins_get(p, "n1", "g2"), 2);
    xds_pins_destroy(p);
}

TL_MAIN()
