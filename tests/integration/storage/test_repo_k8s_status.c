/*
 * test_repo_k8s_status.c — the k8s_status table on a real PostgreSQL: a status stored
 * is read back through the configs it is linked to (the Gateway first), exactly as
 * stored; storing the same status again keeps when it was written, a change moves it;
 * deleting one object and keeping a set drop exactly the others; bad input is refused
 * and changes nothing.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/arena.h"
#include "storage/pg_pool.h"
#include "storage/repo_common.h"
#include "storage/repo_k8s_status.h"
#include "tests/integration/storage/db_conn_fixture.h"

static long long count_rows(void)
{
    long long n = -1;
    TL_OK(repo_query_i64(conn, "SELECT count(*) FROM k8s_status", 0, NULL, &n, &e_));
    return n;
}

static void put(const char *kind, const char *ns, const char *name, long long gen,
                const char *status_json, const char *ref)
{
    json_t *st = json_loads(status_json, 0, NULL);
    assert_non_null(st);
    const char *refs[] = {ref};
    k8s_status_put p = {kind, ns, name, gen, st, refs, ref ? 1 : 0};
    TL_OK(k8s_status_repo_put(conn, &p, &e_));
    json_decref(st);
}

#define GW_STATUS                                                                                  \
    "{\"conditions\":[{\"type\":\"Accepted\",\"status\":\"True\",\"reason\":\"Accepted\"}],"       \
    "\"listeners\":[{\"name\":\"http\",\"attachedRoutes\":1}]}"
#define ROUTE_STATUS                                                                               \
    "{\"parents\":[{\"parentRef\":{\"name\":\"web\"},\"conditions\":[{\"type\":\"ResolvedRefs\","  \
    "\"status\":\"False\",\"reason\":\"BackendNotFound\"}]}]}"

TL_TEST(test_put_read_keep)
{
    put("HTTPRoute", "shop", "a-route", 3, ROUTE_STATUS, "Gateway shop/web");
    put("Gateway", "shop", "web", 1, GW_STATUS, "Gateway shop/web");
    put("Gateway", "shop", "other", 1, GW_STATUS, "Gateway shop/other");
    put("GatewayClass", NULL, "sextant", 1, "{\"conditions\":[]}", NULL);
    assert_int_equal(count_rows(), 4);

    sx_arena *a = sx_arena_create();
    k8s_status_record *r;
    size_t n;
    TL_OK(k8s_status_repo_for_ref(conn, "Gateway shop/web", a, &r, &n, &e_));
    assert_int_equal(n, 2);
    assert_string_equal(r[0].kind, "Gateway"); /* the Gateway first */
    assert_string_equal(r[0].name, "web");
    assert_string_equal(r[1].kind, "HTTPRoute");
    assert_string_equal(r[1].ns, "shop");
    assert_int_equal(r[1].generation, 3);
    json_t *want = json_loads(ROUTE_STATUS, 0, NULL);
    assert_true(json_equal(r[1].status, want));
    json_decref(want);
    assert_int_equal(r[1].n_source_refs, 1);
    assert_string_equal(r[1].source_refs[0], "Gateway shop/web");

    /* the same status again keeps written_at; a new generation moves it */
    TL_OK(repo_exec_count(conn, "UPDATE k8s_status SET written_at = now() - interval '1 hour'", 0,
                          NULL, NULL, &e_));
    TL_OK(k8s_status_repo_for_ref(conn, "Gateway shop/web", a, &r, &n, &e_));
    char *written = sx_arena_strdup(a, r[1].written_at);
    put("HTTPRoute", "shop", "a-route", 3, ROUTE_STATUS, "Gateway shop/web");
    TL_OK(k8s_status_repo_for_ref(conn, "Gateway shop/web", a, &r, &n, &e_));
    assert_string_equal(r[1].written_at, written);
    put("HTTPRoute", "shop", "a-route", 4, ROUTE_STATUS, "Gateway shop/web");
    TL_OK(k8s_status_repo_for_ref(conn, "Gateway shop/web", a, &r, &n, &e_));
    assert_int_equal(r[1].generation, 4);
    assert_string_not_equal(r[1].written_at, written);
    assert_true(strcmp(r[1].written_at, written) > 0);

    /* one object deleted; then only a set kept */
    TL_OK(k8s_status_repo_delete(conn, "Gateway", "shop", "other", &e_));
    assert_int_equal(count_rows(), 3);
    TL_OK(k8s_status_repo_delete(conn, "Gateway", "shop", "other", &e_)); /* gone: nothing */
    const char *kinds[] = {"Gateway", "GatewayClass"};
    const char *nss[] = {"shop", NULL};
    const char *names[] = {"web", "sextant"};
    int deleted = -1;
    TL_OK(k8s_status_repo_keep(conn, kinds, nss, names, 2, a, &deleted, &e_));
    assert_int_equal(deleted, 1);
    TL_OK(k8s_status_repo_for_ref(conn, "Gateway shop/web", a, &r, &n, &e_));
    assert_int_equal(n, 1);
    assert_string_equal(r[0].name, "web");
    TL_OK(k8s_status_repo_for_ref(conn, "Gateway nowhere/none", a, &r, &n, &e_));
    assert_int_equal(n, 0);
    assert_null(r);
    sx_arena_destroy(a);
}

TL_TEST(test_bad_input)
{
    long long before = count_rows();
    sx_err err;
    json_t *obj = json_object(), *arr = json_array();
    k8s_status_put no_kind = {"", "shop", "x", 1, obj, NULL, 0};
    assert_int_equal(k8s_status_repo_put(conn, &no_kind, &err), SX_EINVAL);
    k8s_status_put no_name = {"Gateway", "shop", "", 1, obj, NULL, 0};
    assert_int_equal(k8s_status_repo_put(conn, &no_name, &err), SX_EINVAL);
    k8s_status_put negative = {"Gateway", "shop", "x", -1, obj, NULL, 0};
    assert_int_equal(k8s_status_repo_put(conn, &negative, &err), SX_EINVAL);
    assert_string_equal(err.message, "generation must not be negative");
    k8s_status_put not_object = {"Gateway", "shop", "x", 1, arr, NULL, 0};
    assert_int_equal(k8s_status_repo_put(conn, &not_object, &err), SX_EINVAL);
    assert_string_equal(err.message, "status must be a JSON object");
    const char *empty_ref[] = {""};
    k8s_status_put bad_ref = {"Gateway", "shop", "x", 1, obj, empty_ref, 1};
    assert_int_equal(k8s_status_repo_put(conn, &bad_ref, &err), SX_EINVAL);
    json_decref(obj);
    json_decref(arr);
    assert_int_equal(count_rows(), before);
    sx_arena *a = sx_arena_create();
    k8s_status_record *r;
    size_t n;
    assert_int_equal(k8s_status_repo_for_ref(conn, "", a, &r, &n, &err), SX_EINVAL);
    assert_int_equal(k8s_status_repo_delete(conn, "Gateway", "shop", NULL, &err), SX_EINVAL);
    sx_arena_destroy(a);
}

TL_MAIN_GROUP(db_conn_setup, db_conn_teardown)
