/*
 * test_policy_scope.c — rules scoped to groups and namespaces (api/policy.c): what a
 * scoped rule grants on which object, the scope it names for the audit, and the
 * patterns the loader refuses because they can never match.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "tests/lib/testlib.h"

#include "api/policy.h"

static const char scoped_yaml[] = "roles:\n"
                                  "  - name: edge\n"
                                  "    permissions:\n"
                                  "      - resource: configs\n"
                                  "        actions: [read, update]\n"
                                  "        groups: [\"edge-*\", \"canary\"]\n"
                                  "      - resource: configs\n"
                                  "        actions: [read]\n"
                                  "        namespaces: [\"team-a\"]\n"
                                  "      - resource: auth\n"
                                  "        actions: [read]\n"
                                  "  - name: mixed\n"
                                  "    permissions:\n"
                                  "      - resource: \"*\"\n"
                                  "        actions: [read]\n"
                                  "        groups: [\"edge-*\"]\n"
                                  "      - resource: configs\n"
                                  "        actions: [read]\n";

static policy *load(const char *yaml)
{
    policy *p = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = policy_parse(yaml, strlen(yaml), "rbac.yaml", &p, NULL, &err);
    if (rc != 0)
        print_message("%s\n", err.message);
    assert_int_equal(rc, 0);
    return p;
}

TL_TEST(test_scoped_grants)
{
    policy *p = load(scoped_yaml);
    const char *edge_a[] = {"edge-a"}, *mixed[] = {"edge-a", "prod"}, *two[] = {"edge-a", "canary"};
    policy_object in = {edge_a, 1, "default"}, out = {mixed, 2, "default"},
                  both = {two, 2, "default"}, team = {mixed, 2, "team-a"};

    /* The route-level question: may the role update some config at all. */
    assert_true(policy_allows(p, "edge", "configs", NULL, "update"));
    assert_false(policy_allows(p, "edge", "configs", NULL, "delete"));
    assert_true(policy_allows_object(p, "edge", "configs", NULL, "update", &in, NULL));
    assert_true(policy_allows_object(p, "edge", "configs", NULL, "update", &both, NULL));
    /* Every group must be covered: one outside is enough to refuse. */
    assert_false(policy_allows_object(p, "edge", "configs", NULL, "update", &out, NULL));
    /* The namespace rule reads configs of team-a in any group, and grants nothing else. */
    assert_true(policy_allows_object(p, "edge", "configs", NULL, "read", &team, NULL));
    assert_false(policy_allows_object(p, "edge", "configs", NULL, "read", &out, NULL));
    assert_false(policy_allows_object(p, "edge", "configs", NULL, "update", &team, NULL));

    /* The scope that allowed, and the one that refused, for the audit row. */
    json_t *scope = NULL;
    assert_true(policy_allows_object(p, "edge", "configs", NULL, "update", &in, &scope));
    assert_non_null(scope);
    assert_int_equal(json_integer_value(json_object_get(scope, "permission")), 0);
    assert_string_equal(json_string_value(json_array_get(json_object_get(scope, "groups"), 0)),
                        "edge-*");
    json_decref(scope);
    assert_false(policy_allows_object(p, "edge", "configs", NULL, "update", &out, &scope));
    assert_non_null(scope);
    json_t *outside = json_object_get(scope, "outside");
    assert_int_equal(json_array_size(outside), 1);
    assert_string_equal(json_string_value(json_array_get(outside, 0)), "prod");
    json_decref(scope);

    /* A scoped "*" rule grants nothing on a type without groups; an unscoped rule names no
     * scope. */
    assert_false(policy_allows(p, "mixed", "audit", NULL, "read"));
    assert_true(policy_allows(p, "mixed", "snapshots", NULL, "read"));
    const char *prod[] = {"prod"};
    policy_object pr = {prod, 1, NULL};
    assert_false(policy_allows_object(p, "mixed", "snapshots", NULL, "read", &pr, NULL));
    scope = NULL;
    assert_true(policy_allows_object(p, "mixed", "configs", NULL, "read", &pr, &scope));
    assert_null(scope);
    policy_free(p);
}

TL_TEST(test_never_matching)
{
    static const struct {
        const char *permission; /* one rule of role "ops" */
        const char *msg;        /* in the error */
    } bad[] = {
        {"resource: \"snapshots/edge-*\"\n        actions: [read]", "\"edge-*\" can never match"},
        {"resource: \"configs/prod\"\n        actions: [read]", "\"prod\" can never match"},
        {"resource: \"replicas/r1\"\n        actions: [read]", "can never match"},
        {"resource: config\n        actions: [read]", "unknown resource \"config\""},
        {"resource: configs\n        actions: [read]\n        groups: [\"edge *\"]",
         "group pattern \"edge *\" can never match"},
        {"resource: configs\n        actions: [read]\n        groups: [\".\"]",
         "group pattern \".\" can never match"},
        {"resource: configs\n        actions: [read]\n        groups: []", "at least one group"},
        {"resource: audit\n        actions: [read]\n        groups: [\"edge-*\"]",
         "groups: never applies to audit"},
        {"resource: groups\n        actions: [read]\n        namespaces: [\"a\"]",
         "namespaces: never applies to groups"},
        {"resource: configs\n        actions: [read]\n        namespaces: [\"Team\"]",
         "namespace pattern \"Team\" can never match"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char yaml[512];
        snprintf(yaml, sizeof(yaml), "roles:\n  - name: ops\n    permissions:\n      - %s\n",
                 bad[i].permission);
        policy *p = NULL;
        sx_err err;
        sx_err_clear(&err);
        int rc = policy_parse(yaml, strlen(yaml), "rbac.yaml", &p, NULL, &err);
        if (rc != SX_EINVAL || strstr(err.message, bad[i].msg) == NULL)
            print_message("case %zu: rc %d: %s\n", i, rc, err.message);
        assert_int_equal(rc, SX_EINVAL);
        assert_null(p);
        assert_non_null(strstr(err.message, bad[i].msg));
        if (strstr(bad[i].msg, "at least") == NULL)
            assert_non_null(strstr(err.message, "role ops"));
    }

    /* Patterns that can match are kept: a glob standing for a valid name, a config id
     * prefix, a node id pattern, ".*" (".a" is a name), a UUID. */
    policy *p = load("roles:\n  - name: ops\n    permissions:\n"
                     "      - resource: \"configs/9b2f*\"\n        actions: [read]\n"
                     "      - resource: \"proxies/edge-*\"\n        actions: [read]\n"
                     "      - resource: \"snapshots/1*\"\n        actions: [read]\n"
                     "      - resource: \"*\"\n        actions: [read]\n"
                     "        groups: [\".*\", \"*\", \"ns/gw-*\"]\n"
                     "      - resource: configs\n        actions: [read]\n"
                     "        namespaces: [\"team-*\"]\n");
    assert_true(policy_allows(p, "ops", "proxies", "edge-1", "read"));
    policy_free(p);
}

TL_MAIN()
