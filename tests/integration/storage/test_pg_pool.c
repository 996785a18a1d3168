/*
 * test_pg_pool.c — the connection pool against a real PostgreSQL: reuse, SQL errors
 * mapped to project codes, statement_timeout, replacement of a killed backend, an
 * unreachable server and its back-off, exhaustion, transactions that roll back, and
 * statements prepared once per connection.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/metrics.h"
#include "storage/pg_pool.h"
#include "tests/integration/storage/db_fixture.h"

static pg_pool *make_pool(int size, int statement_timeout_ms, int acquire_timeout_ms, sx_metrics *m)
{
    pg_pool_options o = {.url = db_url,
                         .size = size,
                         .statement_timeout_ms = statement_timeout_ms,
                         .acquire_timeout_ms = acquire_timeout_ms,
                         .metrics = m};
    pg_pool *p = NULL;
    sx_err err;
    assert_int_equal(pg_pool_create(&o, &p, &err), 0);
    return p;
}

/* A connection of p; fails the test when none can be had. */
static pg_conn *acquire(pg_pool *p)
{
    pg_conn *c = NULL;
    TL_OK(pg_acquire(p, &c, &e_));
    return c;
}

/* Runs sql (no parameters) and returns the single value as a new string. */
static char *query_one(pg_conn *c, const char *sql)
{
    PGresult *res;
    sx_err err;
    int rc = pg_exec(c, sql, 0, NULL, &res, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", sql, err.message);
    assert_int_equal(rc, 0);
    assert_int_equal(PQntuples(res), 1);
    char *v = strdup(pg_get(res, 0, 0));
    PQclear(res);
    return v;
}

static void exec_ok(pg_conn *c, const char *sql)
{
    sx_err err;
    int rc = pg_exec(c, sql, 0, NULL, NULL, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", sql, err.message);
    assert_int_equal(rc, 0);
}

/* Asserts that sql, run on c, returns want as its single value. */
static void assert_query_one(pg_conn *c, const char *sql, const char *want)
{
    char *got = query_one(c, sql);
    assert_string_equal(got, want);
    free(got);
}

TL_TEST(test_acquire_release_reuse)
{
    sx_metrics *m = sx_metrics_create();
    pg_pool *p = make_pool(2, 0, 0, m);
    sx_metric *open = sx_metrics_gauge(m, "sextant_db_connections", "", NULL);
    sx_err err;
    pg_conn *c1, *c2;

    assert_int_equal(pg_acquire(p, &c1, &err), 0);
    char *pid1 = query_one(c1, "SELECT pg_backend_pid()");
    pg_release(p, c1);
    assert_int_equal(pg_acquire(p, &c1, &err), 0);
    char *again = query_one(c1, "SELECT pg_backend_pid()");
    assert_string_equal(pid1, again); /* the idle connection was reused */
    assert_int_equal(sx_metric_value(open, NULL), 1);

    assert_int_equal(pg_acquire(p, &c2, &err), 0);
    char *pid2 = query_one(c2, "SELECT pg_backend_pid()");
    assert_string_not_equal(pid1, pid2);
    assert_int_equal(sx_metric_value(open, NULL), 2);

    /* The connection carries the pool's application_name and UTF8. */
    char *app = query_one(c2, "SELECT current_setting('application_name')");
    assert_string_equal(app, "sextant");
    char *enc = query_one(c2, "SHOW client_encoding");
    assert_string_equal(enc, "UTF8");

    /* Parameters are sent apart from the SQL text, so quotes are just data. */
    const char *params[] = {"O'Brien'); DROP TABLE x; --", NULL};
    PGresult *res;
    assert_int_equal(pg_exec(c2, "SELECT $1::text, $2::text IS NULL", 2, params, &res, &err), 0);
    assert_string_equal(pg_get(res, 0, 0), params[0]);
    assert_string_equal(pg_get(res, 0, 1), "t");
    assert_false(pg_is_null(res, 0, 0));
    PQclear(res);
    long long n = 0;
    assert_int_equal(pg_exec(c2, "SELECT 9007199254740993::bigint", 0, NULL, &res, &err), 0);
    assert_int_equal(pg_get_i64(res, 0, 0, &n), 0);
    assert_true(n == 9007199254740993LL);
    PQclear(res);

    pg_release(p, c1);
    pg_release(p, c2);
    assert_int_equal(pg_pool_ping(p, &err), 0);
    free(pid1);
    free(again);
    free(pid2);
    free(app);
    free(enc);
    pg_pool_destroy(p);
    sx_metrics_destroy(m);
}

TL_TEST(test_errors_map_to_codes)
{
    pg_pool *p = make_pool(1, 0, 0, NULL);
    sx_err err;
    pg_conn *c = acquire(p);
    exec_ok(c, "CREATE TABLE uniq (id int PRIMARY KEY)");
    exec_ok(c, "INSERT INTO uniq VALUES (1)");

    assert_int_equal(pg_exec(c, "INSERT INTO uniq VALUES (1)", 0, NULL, NULL, &err), SX_ECONFLICT);
    assert_int_equal(err.code, SX_ECONFLICT);
    assert_string_equal(err.sqlstate, "23505");
    assert_non_null(strstr(err.message, "duplicate key value violates unique constraint"));
    assert_non_null(strstr(err.detail, "Key (id)=(1) already exists."));

    PGresult *res = (PGresult *)&err;
    assert_int_equal(pg_exec(c, "SELEC 1", 0, NULL, &res, &err), SX_EINTERNAL);
    assert_null(res);
    assert_string_equal(err.sqlstate, "42601");
    assert_non_null(strstr(err.message, "syntax error"));

    assert_int_equal(pg_exec(c, "SELECT 1/0", 0, NULL, NULL, &err), SX_EINVAL);
    assert_string_equal(err.sqlstate, "22012");
    assert_non_null(strstr(err.message, "division by zero"));

    const char *params[] = {"not a number"};
    assert_int_equal(pg_exec(c, "SELECT $1::int", 1, params, NULL, &err), SX_EINVAL);
    assert_string_equal(err.sqlstate, "22P02");

    /* The connection is still good after errors outside a transaction. */
    assert_query_one(c, "SELECT 1", "1");
    pg_release(p, c);
    pg_pool_destroy(p);
}

TL_TEST(test_statement_timeout)
{
    pg_pool *p = make_pool(1, 200, 0, NULL);
    sx_err err;
    pg_conn *c = acquire(p);
    assert_query_one(c, "SHOW statement_timeout", "200ms");

    long long t0 = tl_now_ms();
    assert_int_equal(pg_exec(c, "SELECT pg_sleep(2)", 0, NULL, NULL, &err), SX_ETIMEOUT);
    assert_true(tl_now_ms() - t0 < 1500);
    assert_string_equal(err.sqlstate, "57014");
    assert_non_null(strstr(err.message, "statement timeout"));
    pg_release(p, c);

    /* The timed-out connection goes back to the pool and works. */
    c = acquire(p);
    assert_query_one(c, "SELECT 1", "1");
    pg_release(p, c);
    pg_pool_destroy(p);
}

static void admin_terminate(const char *pid)
{
    PGconn *a = PQconnectdb(db_url);
    assert_int_equal(PQstatus(a), CONNECTION_OK);
    const char *params[] = {pid};
    PGresult *r =
        PQexecParams(a, "SELECT pg_terminate_backend($1::int)", 1, NULL, params, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    /* Wait until the backend is gone, as a restart or an operator's kill would be. */
    long long deadline = tl_now_ms() + 5000;
    bool gone = false;
    while (!gone && tl_now_ms() < deadline) {
        r = PQexecParams(a, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int", 1, NULL,
                         params, NULL, NULL, 0);
        gone = strcmp(PQgetvalue(r, 0, 0), "0") == 0;
        PQclear(r);
        if (!gone)
            tl_sleep_ms(10);
    }
    assert_true(gone);
    PQfinish(a);
}

TL_TEST(test_terminated_backend_replaced)
{
    pg_pool *p = make_pool(1, 0, 0, NULL);
    sx_err err;
    pg_conn *c = acquire(p);
    char *pid = query_one(c, "SELECT pg_backend_pid()");
    pg_release(p, c);

    admin_terminate(pid);

    /* The next acquire notices the idle connection died and opens another. */
    c = acquire(p);
    char *pid2 = query_one(c, "SELECT pg_backend_pid()");
    assert_string_not_equal(pid, pid2);
    pg_release(p, c);

    /* A connection killed while in use fails its statement as unavailable and is
     * closed on release rather than returned to the pool. */
    c = acquire(p);
    admin_terminate(pid2);
    assert_int_equal(pg_exec(c, "SELECT 1", 0, NULL, NULL, &err), SX_EUNAVAILABLE);
    pg_release(p, c);
    assert_int_equal(pg_pool_ping(p, &err), 0);

    free(pid);
    free(pid2);
    pg_pool_destroy(p);
}

TL_TEST(test_unreachable_server)
{
    char url[128];
    snprintf(url, sizeof(url), "postgresql://sextant@127.0.0.1:%d/nothing", tl_free_port());
    sx_metrics *m = sx_metrics_create();
    pg_pool_options o = {.url = url, .size = 2, .connect_timeout_ms = 2000, .metrics = m};
    pg_pool *p;
    sx_err err;
    assert_int_equal(pg_pool_create(&o, &p, &err), 0);

    pg_conn *c = (pg_conn *)&err;
    assert_int_equal(pg_acquire(p, &c, &err), SX_EUNAVAILABLE);
    assert_null(c);
    assert_non_null(strstr(err.message, "could not connect to postgresql"));
    assert_non_null(strcasestr(err.message, "connection refused"));

    /* Inside the back-off window the pool does not even try: it fails at once. */
    long long t0 = tl_now_ms();
    assert_int_equal(pg_acquire(p, &c, &err), SX_EUNAVAILABLE);
    assert_true(tl_now_ms() - t0 < 50);
    assert_non_null(strcasestr(err.message, "connection refused"));
    assert_non_null(strstr(err.detail, "next connection attempt"));
    assert_int_equal(pg_pool_ping(p, &err), SX_EUNAVAILABLE);

    sx_metric *fails = sx_metrics_counter(m, "sextant_db_connect_failures_total", "", NULL);
    /* The first attempt failed; the reconnector may have tried again since. */
    assert_true(sx_metric_value(fails, NULL) >= 1);
    pg_pool_destroy(p);
    sx_metrics_destroy(m);

    /* A multi-host URL: the error names every host, not only the first. */
    int p1 = tl_free_port(), p2 = tl_free_port();
    snprintf(url, sizeof(url), "postgresql://sextant@127.0.0.1:%d,127.0.0.1:%d/nothing", p1, p2);
    o.url = url;
    o.metrics = NULL;
    assert_int_equal(pg_pool_create(&o, &p, &err), 0);
    assert_int_equal(pg_acquire(p, &c, &err), SX_EUNAVAILABLE);
    char port1[32], port2[32];
    snprintf(port1, sizeof(port1), "port %d failed", p1);
    snprintf(port2, sizeof(port2), "port %d failed", p2);
    assert_non_null(strstr(err.message, port1));
    assert_non_null(strstr(err.message, port2));
    assert_null(strchr(err.message, '\n'));
    assert_non_null(strstr(err.message, "; "));
    pg_pool_destroy(p);

    /* Bad options are refused up front. */
    o.url = "";
    assert_int_equal(pg_pool_create(&o, &p, &err), SX_EINVAL);
    o.url = db_url;
    o.size = 0;
    assert_int_equal(pg_pool_create(&o, &p, &err), SX_EINVAL);
}

static double gauge(sx_metrics *m, const char *name)
{
    return sx_metric_value(sx_metrics_gauge(m, name, "", NULL), NULL);
}

/* While the server refuses the pool, the pool reconnects by itself in the background
 * (no request needed) once the server takes connections again, and it says so: the
 * reconnection is counted and the server it reached is named. */
TL_TEST(test_reconnects_in_background)
{
    char *url = tl_role_create(db_url);
    sx_metrics *m = sx_metrics_create();
    pg_pool_options o = {.url = url, .size = 2, .connect_timeout_ms = 2000, .metrics = m};
    pg_pool *p;
    sx_err err;
    assert_int_equal(pg_pool_create(&o, &p, &err), 0);
    pg_conn *c = acquire(p);
    pg_release(p, c);
    assert_true(gauge(m, "sextant_db_connections") == 1);

    tl_role_allow(url, false);
    /* The idle connection is dead, and a new one is refused. */
    assert_int_equal(pg_acquire(p, &c, &err), SX_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "not permitted to log in"));
    assert_true(gauge(m, "sextant_db_connections") == 0);

    tl_role_allow(url, true);
    /* No acquire: the reconnector opens a connection on its own. */
    for (long long end = tl_now_ms() + 10000;
         gauge(m, "sextant_db_connections") < 1 && tl_now_ms() < end;)
        tl_sleep_ms(10);
    assert_true(gauge(m, "sextant_db_connections") == 1);
    sx_metric *rec = sx_metrics_counter(m, "sextant_db_reconnects_total", "", "connection");
    const char *pool_label[] = {"pool"};
    assert_true(sx_metric_value(rec, pool_label) == 1);
    c = acquire(p);
    assert_query_one(c, "SELECT 1", "1");
    pg_release(p, c);
    pg_pool_destroy(p);

    sx_buf out = {0};
    sx_metrics_render(m, &out);
    assert_non_null(strstr(out.data, "sextant_db_server_info{host=\"127.0.0.1\""));
    sx_buf_free(&out);
    sx_metrics_destroy(m);
    tl_role_drop(url);
}

typedef struct releaser {
    pg_pool *p;
    pg_conn *c;
} releaser;

static void *release_later(void *arg)
{
    releaser *r = arg;
    tl_sleep_ms(100);
    pg_release(r->p, r->c);
    return NULL;
}

TL_TEST(test_exhaustion)
{
    pg_pool *p = make_pool(1, 0, 300, NULL);
    sx_err err;
    pg_conn *c1, *c2;
    assert_int_equal(pg_acquire(p, &c1, &err), 0);
    long long t0 = tl_now_ms();
    assert_int_equal(pg_acquire(p, &c2, &err), SX_ETIMEOUT);
    long long waited = tl_now_ms() - t0;
    assert_true(waited >= 280 && waited < 3000);
    assert_non_null(strstr(err.message, "all 1 in use"));

    /* A waiter gets the connection as soon as it is released. */
    releaser r = {p, c1};
    pthread_t t;
    pthread_create(&t, NULL, release_later, &r);
    assert_int_equal(pg_acquire(p, &c2, &err), 0);
    pthread_join(t, NULL);
    assert_ptr_equal(c2, c1);
    pg_release(p, c2);
    pg_pool_destroy(p);
}

typedef struct tx_ctx {
    int attempts;
    int fail_mode; /* 0 commit, 1 SQL error, 2 caller error, 3 ignored error, 4 retry once */
} tx_ctx;

static int tx_fn(pg_conn *c, void *arg, sx_err *err)
{
    tx_ctx *t = arg;
    t->attempts++;
    int rc = pg_exec(c, "INSERT INTO items VALUES (1)", 0, NULL, NULL, err);
    if (rc)
        return rc;
    switch (t->fail_mode) {
    case 1:
        return pg_exec(c, "INSERT INTO items VALUES (1)", 0, NULL, NULL, err);
    case 2:
        return sx_err_set(err, SX_EVALIDATION, "refused by validation");
    case 3:
        if (pg_exec(c, "SELECT 1/0", 0, NULL, NULL, err) != SX_EINVAL)
            return SX_EINTERNAL;
        return 0; /* a buggy fn that swallows an error */
    case 4:
        if (t->attempts == 1)
            return pg_exec(c,
                           "DO $$ BEGIN RAISE EXCEPTION 'conflict' "
                           "USING ERRCODE = 'serialization_failure'; END $$",
                           0, NULL, NULL, err);
        return 0;
    default:
        return 0;
    }
}

static long long count_items(pg_pool *p)
{
    pg_conn *c = acquire(p);
    char *v = query_one(c, "SELECT count(*) FROM items");
    long long n = strtoll(v, NULL, 10);
    free(v);
    pg_release(p, c);
    return n;
}

TL_TEST(test_tx_rolls_back)
{
    pg_pool *p = make_pool(2, 0, 0, NULL);
    sx_err err;
    pg_conn *c = acquire(p);
    exec_ok(c, "CREATE TABLE items (id int PRIMARY KEY)");
    pg_release(p, c);

    tx_ctx t = {0, 1};
    assert_int_equal(pg_tx(p, tx_fn, &t, &err), SX_ECONFLICT);
    assert_int_equal(t.attempts, 1); /* a unique violation is not retried */
    assert_int_equal(count_items(p), 0);

    t = (tx_ctx){0, 2};
    assert_int_equal(pg_tx(p, tx_fn, &t, &err), SX_EVALIDATION);
    assert_string_equal(err.message, "refused by validation");
    assert_int_equal(count_items(p), 0);

    t = (tx_ctx){0, 3};
    assert_int_not_equal(pg_tx(p, tx_fn, &t, &err), 0); /* COMMIT of a failed tx */
    assert_int_equal(count_items(p), 0);

    t = (tx_ctx){0, 4};
    assert_int_equal(pg_tx(p, tx_fn, &t, &err), 0);
    assert_int_equal(t.attempts, 2); /* a serialization failure reruns the whole tx */
    assert_int_equal(count_items(p), 1);

    /* A connection released inside a transaction is rolled back, not committed. */
    c = acquire(p);
    assert_int_equal(pg_begin(c, &err), 0);
    exec_ok(c, "INSERT INTO items VALUES (2)");
    pg_release(p, c);
    assert_int_equal(count_items(p), 1);
    c = acquire(p);
    assert_int_equal(PQtransactionStatus(pg_conn_raw(c)), PQTRANS_IDLE);
    pg_release(p, c);
    pg_pool_destroy(p);
}

/* With prepared_statements, a text is parsed and planned once per session and run by
 * name after; errors, aborted transactions and a table changing under a statement give
 * the answers they give unprepared. */
TL_TEST(test_prepared_statements)
{
    pg_pool_options o = {.url = db_url, .size = 1, .prepared_statements = true};
    pg_pool *p = NULL;
    sx_err err;
    assert_int_equal(pg_pool_create(&o, &p, &err), 0);
    pg_conn *c = acquire(p);
    const char *add = "SELECT $1::int + 1";
    const char *count = "SELECT count(*) FROM pg_prepared_statements WHERE statement = "
                        "'SELECT $1::int + 1'";
    for (int i = 0; i < 3; i++) {
        const char *params[] = {i == 1 ? "9" : "41"};
        PGresult *res;
        assert_int_equal(pg_exec(c, add, 1, params, &res, &err), 0);
        assert_string_equal(pg_get(res, 0, 0), i == 1 ? "10" : "42");
        PQclear(res);
    }
    assert_query_one(c, count, "1"); /* three runs, one statement on the session */

    /* Errors read as they do unprepared, and leave the session's statements usable. */
    assert_int_equal(pg_exec(c, "SELEC 1", 0, NULL, NULL, &err), SX_EINTERNAL);
    assert_string_equal(err.sqlstate, "42601");
    const char *bad[] = {"not a number"};
    assert_int_equal(pg_exec(c, add, 1, bad, NULL, &err), SX_EINVAL);
    assert_string_equal(err.sqlstate, "22P02");

    /* Inside a failed transaction a prepared statement and a new text both fail, then
     * both work after the rollback. */
    assert_int_equal(pg_begin(c, &err), 0);
    assert_int_equal(pg_exec(c, "SELECT 1/0", 0, NULL, NULL, &err), SX_EINVAL);
    const char *params[] = {"1"};
    assert_int_not_equal(pg_exec(c, add, 1, params, NULL, &err), 0);
    assert_string_equal(err.sqlstate, "25P02");
    assert_int_not_equal(pg_exec(c, "SELECT $1::int * 3", 1, params, NULL, &err), 0);
    assert_string_equal(err.sqlstate, "25P02");
    pg_rollback(c);
    PGresult *res;
    assert_int_equal(pg_exec(c, "SELECT $1::int * 3", 1, params, &res, &err), 0);
    assert_string_equal(pg_get(res, 0, 0), "3");
    PQclear(res);
    assert_query_one(c, count, "1");

    /* A table whose columns change under a prepared SELECT *: that statement fails once
     * (PostgreSQL refuses to change a prepared result's shape), the session is replaced,
     * and the next run on the new one sees the new column. */
    exec_ok(c, "CREATE TABLE shape (a int)");
    exec_ok(c, "INSERT INTO shape VALUES (7)");
    assert_query_one(c, "SELECT * FROM shape", "7");
    char *pid = query_one(c, "SELECT pg_backend_pid()");
    exec_ok(c, "ALTER TABLE shape ADD COLUMN b int DEFAULT 8");
    assert_int_equal(pg_exec(c, "SELECT * FROM shape", 0, NULL, NULL, &err), SX_EINTERNAL);
    assert_string_equal(err.sqlstate, "0A000");
    pg_release(p, c);
    c = acquire(p);
    char *pid2 = query_one(c, "SELECT pg_backend_pid()");
    assert_string_not_equal(pid, pid2);
    assert_int_equal(pg_exec(c, "SELECT * FROM shape", 0, NULL, &res, &err), 0);
    assert_int_equal(PQnfields(res), 2);
    assert_string_equal(pg_get(res, 0, 1), "8");
    PQclear(res);
    free(pid);
    free(pid2);
    pg_release(p, c);
    pg_pool_destroy(p);

    /* Without the option nothing is prepared. */
    p = make_pool(1, 0, 0, NULL);
    c = acquire(p);
    assert_int_equal(pg_exec(c, add, 1, params, NULL, &err), 0);
    assert_query_one(c, "SELECT count(*) FROM pg_prepared_statements", "0");
    pg_release(p, c);
    pg_pool_destroy(p);
}

TL_MAIN_GROUP(db_setup, db_teardown)
