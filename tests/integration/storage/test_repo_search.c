/*
 * test_repo_search.c — finding proxies, configs, groups and deployments by a fragment
 * of their name or id, on a real PostgreSQL: a fragment matches anywhere and ignores
 * case; exact and prefix matches come first; % _ and \ in the fragment match only
 * themselves (a fragment "%" does not find everything); deleted configs are not found;
 * the limit holds per kind; bad input is refused.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/arena.h"
#include "storage/repo_search.h"
#include "tests/integration/storage/db_conn_fixture.h"

#define CFG_WEB  "11111111-1111-4111-8111-111111111111"
#define CFG_GONE "22222222-2222-4222-8222-222222222222"
#define CFG_PCT  "33333333-3333-4333-8333-333333333333"
#define DEPLOY   "44444444-4444-4444-8444-4444aa55bb66"

static int setup(void **state)
{
    db_conn_setup(state);
    exec("INSERT INTO proxy_nodes (node_id, group_name) VALUES"
         " ('edge-7f3a9c-west', 'edge'), ('EDGE-7F3A', 'edge'), ('db-proxy-1', 'data'),"
         " ('sidecar_100%', 'mesh'), ('sidecarX100Y', 'mesh'), ('back\\slash', 'mesh')");
    exec("INSERT INTO proxy_groups (name) VALUES ('edge'), ('edge-canary')");
    exec("INSERT INTO configs (id, namespace, name, groups, latest_version, created_by) VALUES"
         " ('" CFG_WEB "', 'team', 'web', '{edge}', 1, 't'),"
         " ('" CFG_GONE "', 'team', 'web-old', '{edge}', 1, 't'),"
         " ('" CFG_PCT "', 'team', '100%-off', '{mesh}', 1, 't')");
    exec("UPDATE configs SET deleted_at = now() WHERE id = '" CFG_GONE "'");
    exec("INSERT INTO config_versions (config_id, version, spec, checksum, author)"
         " SELECT id, 1, '{}', repeat('a', 64), 't' FROM configs");
    exec("INSERT INTO deployments (id, config_id, config_version, created_by, groups, state)"
         " VALUES ('" DEPLOY "', '" CFG_WEB "', 1, 't', '{edge}', 'in_progress')");
    return 0;
}

/* The hits of q as "kind:id" joined by spaces. */
static const char *find(sx_arena *a, const char *q, int limit)
{
    search_list l;
    TL_OK(search_repo_find(conn, q, limit, a, &l, &e_));
    static char buf[2048];
    buf[0] = '\0';
    for (size_t i = 0; i < l.count; i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, l.items[i].kind);
        strcat(buf, ":");
        strcat(buf, l.items[i].id);
    }
    return buf;
}

TL_TEST(test_fragments)
{
    sx_arena *a = sx_arena_create();
    /* a fragment of a proxy's id, any case; the exact match comes first */
    assert_string_equal(find(a, "7f3a", 8), "proxy:EDGE-7F3A proxy:edge-7f3a9c-west");
    assert_string_equal(find(a, "edge-7f3a", 8), "proxy:EDGE-7F3A proxy:edge-7f3a9c-west");
    /* a group by name (exact first), and the config and deployment of that group are
     * not found by the group's name, only by their own */
    assert_string_equal(find(a, "edge-c", 8), "group:edge-canary");
    assert_string_equal(find(a, "EDGE", 8), "proxy:EDGE-7F3A proxy:edge-7f3a9c-west group:edge "
                                            "group:edge-canary");
    /* a config by name or namespace/name; the deleted one is not found; its deployment
     * is found by the config's name too */
    assert_string_equal(find(a, "team/we", 8), "config:" CFG_WEB " deployment:" DEPLOY);
    /* a deployment and a config by a fragment of their ids */
    assert_string_equal(find(a, "aa55BB", 8), "deployment:" DEPLOY);
    assert_string_equal(find(a, "1111-4111", 8), "config:" CFG_WEB);

    search_list l;
    TL_OK(search_repo_find(conn, "aa55bb", 8, a, &l, &e_));
    assert_string_equal(l.items[0].label, "team/web v1");
    assert_string_equal(l.items[0].detail, "in_progress");
    assert_int_equal(l.items[0].group_count, 1);
    assert_string_equal(l.items[0].groups[0], "edge");
    TL_OK(search_repo_find(conn, "team/web", 8, a, &l, &e_));
    assert_string_equal(l.items[0].kind, "config");
    assert_string_equal(l.items[0].label, "team/web");
    assert_string_equal(l.items[0].ns, "team");
    assert_string_equal(l.items[0].detail, "edge");
    sx_arena_destroy(a);
}

TL_TEST(test_wildcards_are_literal)
{
    sx_arena *a = sx_arena_create();
    /* % and _ match only themselves */
    assert_string_equal(find(a, "%", 8), "proxy:sidecar_100% config:" CFG_PCT);
    assert_string_equal(find(a, "r_1", 8), "proxy:sidecar_100%");
    assert_string_equal(find(a, "_", 8), "proxy:sidecar_100%");
    /* and so does the escape character */
    assert_string_equal(find(a, "k\\s", 8), "proxy:back\\slash");
    assert_string_equal(find(a, "\\", 8), "proxy:back\\slash");
    /* nothing found is an empty answer */
    assert_string_equal(find(a, "no-such-thing", 8), "");
    assert_string_equal(find(a, "'; DROP TABLE proxy_nodes; --", 8), "");
    assert_string_equal(find(a, "db-proxy", 8), "proxy:db-proxy-1");
    sx_arena_destroy(a);
}

TL_TEST(test_limit_per_kind)
{
    sx_arena *a = sx_arena_create();
    assert_string_equal(find(a, "e", 1),
                        "proxy:EDGE-7F3A config:" CFG_PCT " group:edge deployment:" DEPLOY);
    sx_arena_destroy(a);
}

TL_TEST(test_bad_input)
{
    sx_arena *a = sx_arena_create();
    search_list l;
    sx_err e_;
    char longq[SEARCH_QUERY_MAX + 2];
    memset(longq, 'a', sizeof(longq) - 1);
    longq[sizeof(longq) - 1] = '\0';
    assert_int_equal(search_repo_find(conn, NULL, 8, a, &l, &e_), SX_EINVAL);
    assert_int_equal(search_repo_find(conn, "", 8, a, &l, &e_), SX_EINVAL);
    assert_int_equal(search_repo_find(conn, "  \t", 8, a, &l, &e_), SX_EINVAL);
    assert_int_equal(search_repo_find(conn, longq, 8, a, &l, &e_), SX_EINVAL);
    assert_non_null(strstr(e_.message, "at most 200"));
    assert_int_equal(search_repo_find(conn, "edge", 0, a, &l, &e_), SX_EINVAL);
    assert_int_equal(search_repo_find(conn, "edge", SEARCH_LIMIT_MAX + 1, a, &l, &e_), SX_EINVAL);
    assert_int_equal(l.count, 0);
    /* the longest fragment allowed is searched */
    longq[SEARCH_QUERY_MAX] = '\0';
    assert_int_equal(search_repo_find(conn, longq, SEARCH_LIMIT_MAX, a, &l, &e_), 0);
    assert_int_equal(l.count, 0);
    sx_arena_destroy(a);
}

TL_MAIN_GROUP(setup, db_conn_teardown)
