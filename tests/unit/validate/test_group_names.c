/*
 * test_group_names.c — the rule for proxy group names (server/validate/val_groups.c):
 * the names operators and the Kubernetes source use pass, "/" included (the default
 * group of Gateway shop/web is "shop/web"); empty, too long, "." and "..", spaces,
 * wildcards, percent signs, control characters and non-ASCII bytes do not, each with
 * its reason; a config's list reports every bad entry at its index as a schema problem,
 * and a single group is refused with SX_EINVAL.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/err.h"
#include "server/validate/validate.h"

/* Proxy group names that are valid. */
static const char *good_names[] = {"edge",
                                   "shop/web",
                                   "default/web-canary",
                                   "eu-west-1.canary",
                                   "team_a:v2",
                                   "a",
                                   "A/B/C",
                                   "...",
                                   "./x",
                                   "gw-prod.api.prod",
                                   "0"};

TL_TEST(test_names_that_pass)
{
    for (size_t i = 0; i < sizeof(good_names) / sizeof(good_names[0]); i++) {
        const char *why = val_group_name_problem(good_names[i]);
        if (why)
            print_message("%s: %s\n", good_names[i], why);
        assert_null(why);
    }
    char longest[VAL_GROUP_NAME_MAX + 1];
    memset(longest, 'g', VAL_GROUP_NAME_MAX);
    longest[VAL_GROUP_NAME_MAX] = '\0';
    assert_null(val_group_name_problem(longest));
}

TL_TEST(test_names_that_fail)
{
    static const char chars[] = "may hold only ASCII letters, digits and the characters - _ . : /";
    const struct {
        const char *name, *why;
    } bad[] = {
        {"", "must not be empty"},
        {".", "must not be \".\" or \"..\""},
        {"..", "must not be \".\" or \"..\""},
        {"shop web", chars},
        {"edge-*", chars},
        {"shop%2Fweb", chars},
        {"a\tb", chars},
        {"caf\xc3\xa9", chars},
        {"a\\b", chars},
        {"a?b", chars},
        {"a#b", chars},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = val_group_name_problem(bad[i].name);
        assert_non_null(why);
        assert_string_equal(why, bad[i].why);
    }
    assert_string_equal(val_group_name_problem(NULL), "must not be empty");
    char too_long[VAL_GROUP_NAME_MAX + 2];
    memset(too_long, 'g', VAL_GROUP_NAME_MAX + 1);
    too_long[VAL_GROUP_NAME_MAX + 1] = '\0';
    assert_string_equal(val_group_name_problem(too_long), "must be at most 253 bytes");
}

TL_TEST(test_group_lists)
{
    val_result out = {0};
    sx_err err;
    sx_err_clear(&err);
    const char *fine[] = {"shop/web", "edge"};
    assert_int_equal(val_check_groups(fine, 2, &out, &err), 0);
    assert_int_equal(out.count, 0);
    assert_int_equal(val_check_groups(NULL, 0, &out, &err), 0);

    /* Every bad entry is a schema problem at its index; err counts them. */
    const char *mixed[] = {"shop/web", "a b", "edge", ".."};
    assert_int_equal(val_check_groups(mixed, 4, &out, &err), SX_EVALIDATION);
    assert_int_equal(out.count, 2);
    assert_string_equal(val_stage_name(out.items[0].stage), "schema");
    assert_string_equal(out.items[0].path, "groups[1]");
    assert_string_equal(out.items[0].message,
                        "may hold only ASCII letters, digits and the characters - _ . : /");
    assert_string_equal(out.items[1].path, "groups[3]");
    assert_string_equal(out.items[1].message, "must not be \".\" or \"..\"");
    assert_int_equal(err.code, SX_EVALIDATION);
    assert_string_equal(err.message, "configuration is invalid: 2 problems");
    assert_string_equal(err.detail, "groups[1]: may hold only ASCII letters, digits and the "
                                    "characters - _ . : /");
    val_result_free(&out);

    /* Without a list to fill, err alone says it. */
    sx_err_clear(&err);
    const char *one[] = {""};
    assert_int_equal(val_check_groups(one, 1, NULL, &err), SX_EVALIDATION);
    assert_string_equal(err.message, "configuration is invalid: 1 problem");
    assert_string_equal(err.detail, "groups[0]: must not be empty");
}

TL_TEST(test_one_group)
{
    sx_err err;
    sx_err_clear(&err);
    assert_int_equal(val_check_group_name("shop/web", &err), 0);
    assert_int_equal(val_check_group_name("shop web", &err), SX_EINVAL);
    assert_string_equal(err.message, "invalid proxy group name: may hold only ASCII letters, "
                                     "digits and the characters - _ . : /");
    assert_int_equal(val_check_group_name("..", &err), SX_EINVAL);
    assert_string_equal(err.message, "invalid proxy group name: must not be \".\" or \"..\"");
}

TL_MAIN()
