/*
 * test_repo_replicas.c — the replicas table on a real PostgreSQL: a heartbeat creates
 * and then refreshes a replica's row; the list says which replicas are alive (within
 * the window, by the database's clock) and counts a replica as leader only while
 * alive; pages by id; the clean-up deletes only rows silent for longer than asked; bad
 * input is refused and changes nothing.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/arena.h"
#include "storage/repo_replicas.h"
#include "tests/integration/storage/db_conn_fixture.h"

static long long count_rows(const char *where)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM replicas WHERE %s", where);
    long long n = -1;
    TL_OK(repo_query_i64(conn, sql, 0, NULL, &n, &e_));
    return n;
}

TL_TEST(test_beat_list_forget)
{
    replica_beat a = {.replica_id = "a",
                      .version = "1.2.3",
                      .http_address = "10.0.0.1:8080",
                      .grpc_address = "10.0.0.1:18000",
                      .started_at = 1795000000.25,
                      .leader = true,
                      .term = 4};
    replica_beat b = {.replica_id = "b", .started_at = 1795000001};
    TL_OK(replica_repo_beat(conn, &a, &e_));
    TL_OK(replica_repo_beat(conn, &b, &e_));
    assert_int_equal(count_rows("true"), 2);

    sx_arena *ar = sx_arena_create();
    replica_list l;
    TL_OK(replica_repo_list(conn, 60000, 0, NULL, ar, &l, &e_));
    assert_int_equal(l.count, 2);
    assert_null(l.next_cursor);
    assert_string_equal(l.items[0].replica_id, "a");
    assert_string_equal(l.items[0].version, "1.2.3");
    assert_string_equal(l.items[0].http_address, "10.0.0.1:8080");
    assert_string_equal(l.items[0].grpc_address, "10.0.0.1:18000");
    assert_string_equal(l.items[0].started_at, "2026-11-18T11:06:40.250000Z");
    assert_true(l.items[0].alive);
    assert_true(l.items[0].leader);
    assert_int_equal(l.items[0].term, 4);
    assert_string_equal(l.items[1].replica_id, "b");
    assert_string_equal(l.items[1].version, "");
    assert_false(l.items[1].leader);
    assert_int_equal(l.items[1].term, 0);

    /* a page of one, then the rest */
    TL_OK(replica_repo_list(conn, 60000, 1, NULL, ar, &l, &e_));
    assert_int_equal(l.count, 1);
    assert_non_null(l.next_cursor);
    const char *next = l.next_cursor;
    TL_OK(replica_repo_list(conn, 60000, 1, next, ar, &l, &e_));
    assert_int_equal(l.count, 1);
    assert_string_equal(l.items[0].replica_id, "b");
    assert_null(l.next_cursor);

    /* a went silent ten minutes ago: not alive, and so not leader any more */
    exec("UPDATE replicas SET last_seen = now() - interval '10 minutes' WHERE replica_id = 'a'");
    TL_OK(replica_repo_list(conn, 60000, 0, NULL, ar, &l, &e_));
    assert_false(l.items[0].alive);
    assert_false(l.items[0].leader);
    assert_true(l.items[1].alive);

    /* its next heartbeat brings it back, stepped down */
    a.leader = false;
    TL_OK(replica_repo_beat(conn, &a, &e_));
    TL_OK(replica_repo_list(conn, 60000, 0, NULL, ar, &l, &e_));
    assert_true(l.items[0].alive);
    assert_false(l.items[0].leader);
    assert_int_equal(l.items[0].term, 0);
    assert_int_equal(count_rows("true"), 2);

    /* the clean-up takes only rows older than asked */
    exec("UPDATE replicas SET last_seen = now() - interval '2 days' WHERE replica_id = 'b'");
    int deleted = -1;
    TL_OK(replica_repo_forget(conn, 24LL * 3600 * 1000, &deleted, &e_));
    assert_int_equal(deleted, 1);
    assert_int_equal(count_rows("replica_id = 'b'"), 0);
    assert_int_equal(count_rows("replica_id = 'a'"), 1);
    TL_OK(replica_repo_forget(conn, 24LL * 3600 * 1000, &deleted, &e_));
    assert_int_equal(deleted, 0);
    sx_arena_destroy(ar);
}

TL_TEST(test_bad_input)
{
    exec("DELETE FROM replicas");
    sx_err err;
    replica_beat none = {.replica_id = ""};
    assert_int_equal(replica_repo_beat(conn, &none, &err), SX_EINVAL);
    assert_string_equal(err.message, "replica_id is required");
    char long_id[300];
    memset(long_id, 'x', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    replica_beat longer = {.replica_id = long_id};
    assert_int_equal(replica_repo_beat(conn, &longer, &err), SX_EINVAL);
    replica_beat negative = {.replica_id = "n", .leader = true, .term = -1};
    assert_int_equal(replica_repo_beat(conn, &negative, &err), SX_EINVAL);
    assert_int_equal(count_rows("true"), 0);
    assert_int_equal(replica_repo_forget(conn, 0, NULL, &err), SX_EINVAL);
    sx_arena *ar = sx_arena_create();
    replica_list l;
    assert_int_equal(replica_repo_list(conn, 0, 0, NULL, ar, &l, &err), SX_EINVAL);
    assert_int_equal(replica_repo_list(conn, 1000, 0, "not-a-cursor", ar, &l, &err), SX_EINVAL);
    assert_int_equal(l.count, 0);
    sx_arena_destroy(ar);
}

TL_MAIN_GROUP(db_conn_setup, db_conn_teardown)
