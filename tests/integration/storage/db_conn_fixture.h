/*
 * db_conn_fixture.h — the group fixture of the storage tests that run on one migrated
 * database through one held connection: db_conn_setup creates the database and acquires
 * conn, db_conn_teardown releases it and drops the database; exec runs a statement that
 * must succeed.
 */
#ifndef SX_TESTS_DB_CONN_FIXTURE_H
#define SX_TESTS_DB_CONN_FIXTURE_H

#include "storage/pg_pool.h"
#include "storage/repo_common.h"
#include "tests/lib/testlib.h"

static char *url;
static pg_pool *pool;
static pg_conn *conn;

static int db_conn_setup(void **state)
{
    (void)state;
    url = tl_db_create_migrated();
    pool = tl_pool(url, 1);
    sx_err err;
    assert_int_equal(pg_acquire(pool, &conn, &err), 0);
    return 0;
}

static int db_conn_teardown(void **state)
{
    (void)state;
    pg_release(pool, conn);
    pg_pool_destroy(pool);
    tl_db_drop(url);
    return 0;
}

static inline void exec(const char *sql)
{
    TL_OK(repo_exec_count(conn, sql, 0, NULL, NULL, &e_));
}

#endif
