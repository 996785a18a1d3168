/*
 * test_migrate.c — `sextant migrate` against a real PostgreSQL: from an empty database
 * every table exists and every file is recorded with its checksum; a re-run applies
 * nothing; two runs at once both succeed and apply each file once; a changed applied
 * file is refused by name with nothing applied; a broken new file rolls back alone;
 * history tables refuse changes; migrate_status counts what is pending.
 */
#include "tests/lib/testlib.h"

#include <dirent.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/base/hash.h"
#include "storage/migrate.h"
#include "storage/pg_pool.h"
#include "tests/integration/storage/db_fixture.h"

static const char *const TABLES[] = {
    "configs",     "config_versions", "proxy_groups",     "snapshots", "proxy_nodes",
    "node_status", "deployments",     "deployment_waves", "audit_log", "schema_migrations",
};

static int embedded_count(void)
{
    int n = 0;
    while (migrate_embedded_files[n].name)
        n++;
    return n;
}

static PGconn *db_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    return c;
}

/* Runs sql and returns the first column of the first row (caller frees), or NULL
 * when there is no row or the value is NULL. Fails the test on an SQL error. */
static char *q1(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        fail();
    }
    char *v = NULL;
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static long q_long(PGconn *c, const char *sql)
{
    char *v = q1(c, sql);
    assert_non_null(v);
    long n = strtol(v, NULL, 10);
    free(v);
    return n;
}

static bool table_exists(PGconn *c, const char *table)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT to_regclass('%s')::text", table);
    char *v = q1(c, sql);
    bool ok = v != NULL;
    free(v);
    return ok;
}

/* Runs sql expecting it to fail; returns the error message (caller frees). */
static char *expect_sql_error(PGconn *c, const char *sql, char sqlstate[6])
{
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
    snprintf(sqlstate, 6, "%s", PQresultErrorField(r, PG_DIAG_SQLSTATE));
    char *msg = strdup(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
    PQclear(r);
    return msg;
}

/* ------------------------------------------------------------- temp folders */

static char *source_migrations_dir(void)
{
    const char *src = getenv("SEXTANT_SOURCE_DIR");
    if (src && src[0]) {
        size_t n = strlen(src) + 16;
        char *d = malloc(n);
        snprintf(d, n, "%s/migrations", src);
        return d;
    }
    /* __FILE__ is tests/integration/storage/test_migrate.c under the source root. */
    const char *f = __FILE__;
    const char *cut = strstr(f, "tests/integration/storage/");
    assert_non_null(cut);
    size_t n = (size_t)(cut - f) + 16;
    char *d = malloc(n);
    snprintf(d, n, "%.*smigrations", (int)(cut - f), f);
    return d;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static void write_file(const char *dir, const char *name, const char *text, const char *mode)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, mode);
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* A new temporary folder holding a copy of the .sql files of migrations/ (free with rm_dir). */
static char *copy_migrations(void)
{
    char *tmp = strdup("/tmp/sx_test_migrations_XXXXXX");
    assert_non_null(mkdtemp(tmp));
    char *src = source_migrations_dir();
    DIR *d = opendir(src);
    assert_non_null(d);
    struct dirent *e;
    int copied = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".sql") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", src, e->d_name);
        size_t len;
        char *text = read_all(path, &len);
        write_file(tmp, e->d_name, text, "wb");
        free(text);
        copied++;
    }
    closedir(d);
    free(src);
    assert_int_equal(copied, embedded_count());
    return tmp;
}

static void rm_dir(char *dir)
{
    tl_rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------- tests */

DB_TEST(test_from_empty)
{
    sx_err err;
    int applied = -1;
    int rc = migrate_run(db_url, NULL, &applied, &err);
    if (rc)
        fprintf(stderr, "migrate: %s (%s)\n", err.message, err.detail);
    assert_int_equal(rc, 0);
    assert_int_equal(applied, embedded_count());

    PGconn *c = db_connect(db_url);
    for (size_t i = 0; i < sizeof(TABLES) / sizeof(TABLES[0]); i++) {
        if (!table_exists(c, TABLES[i]))
            fprintf(stderr, "table %s is missing\n", TABLES[i]);
        assert_true(table_exists(c, TABLES[i]));
    }
    /* Each file is recorded once with the sha256 of its bytes, which are the bytes of
     * the file in the source tree. */
    assert_int_equal(q_long(c, "SELECT count(*) FROM schema_migrations"), embedded_count());
    char *src = source_migrations_dir();
    for (int i = 0; migrate_embedded_files[i].name; i++) {
        const migrate_file *f = &migrate_embedded_files[i];
        char path[512], want[SX_SHA256_HEX_LEN + 1], sql[256];
        snprintf(path, sizeof(path), "%s/%s", src, f->name);
        size_t len;
        char *text = read_all(path, &len);
        sx_sha256_hex(text, len, want);
        free(text);
        snprintf(sql, sizeof(sql),
                 "SELECT checksum FROM schema_migrations WHERE name = '%s' AND applied_at <= now()",
                 f->name);
        char *got = q1(c, sql);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
    }
    free(src);
    /* Every table carries a comment saying what it is. */
    assert_int_equal(q_long(c, "SELECT count(*) FROM pg_tables t WHERE schemaname = 'public'"
                               " AND tablename <> 'schema_migrations'"
                               " AND obj_description(('public.' || tablename)::regclass) IS NULL"),
                     0);
    PQfinish(c);
}

DB_TEST(test_rerun_is_noop)
{
    int applied = -1;
    assert_int_equal(migrate_run(db_url, NULL, &applied, NULL), 0);
    assert_int_equal(applied, embedded_count());
    PGconn *c = db_connect(db_url);
    char *before = q1(c, "SELECT max(applied_at)::text FROM schema_migrations");
    assert_int_equal(migrate_run(db_url, NULL, &applied, NULL), 0);
    assert_int_equal(applied, 0);
    char *after = q1(c, "SELECT max(applied_at)::text FROM schema_migrations");
    assert_string_equal(before, after);
    assert_int_equal(q_long(c, "SELECT count(*) FROM schema_migrations"), embedded_count());
    free(before);
    free(after);
    PQfinish(c);
}

typedef struct run_arg {
    const char *url;
    int rc;
    int applied;
    sx_err err;
} run_arg;

static void *run_thread(void *p)
{
    run_arg *a = p;
    a->rc = migrate_run(a->url, NULL, &a->applied, &a->err);
    return NULL;
}

DB_TEST(test_concurrent_runs)
{
    run_arg args[2] = {{.url = db_url}, {.url = db_url}};
    tl_race(run_thread, args, sizeof(args[0]), 2);
    for (int i = 0; i < 2; i++) {
        if (args[i].rc)
            fprintf(stderr, "run %d: %s\n", i, args[i].err.message);
        assert_int_equal(args[i].rc, 0);
    }
    /* Between them they applied every file exactly once. */
    assert_int_equal(args[0].applied + args[1].applied, embedded_count());
    PGconn *c = db_connect(db_url);
    assert_int_equal(q_long(c, "SELECT count(*) FROM schema_migrations"), embedded_count());
    assert_int_equal(q_long(c, "SELECT count(DISTINCT name) FROM schema_migrations"),
                     embedded_count());
    assert_true(table_exists(c, "audit_log"));
    PQfinish(c);
}

DB_TEST(test_changed_file_refused)
{
    char *dir = copy_migrations();
    int applied = -1;
    sx_err err;
    assert_int_equal(migrate_run(db_url, dir, &applied, &err), 0);
    assert_int_equal(applied, embedded_count());

    char path[512], before[SX_SHA256_HEX_LEN + 1], after[SX_SHA256_HEX_LEN + 1];
    snprintf(path, sizeof(path), "%s/0001_init.sql", dir);
    size_t len;
    char *text = read_all(path, &len);
    sx_sha256_hex(text, len, before);
    free(text);
    write_file(dir, "0001_init.sql", "-- an edit after the fact\n", "ab");
    text = read_all(path, &len);
    sx_sha256_hex(text, len, after);
    free(text);
    write_file(dir, "0900_later.sql", "CREATE TABLE later_table (id int);\n", "wb");

    int rc = migrate_run(db_url, dir, &applied, &err);
    assert_int_equal(rc, SX_ECONFLICT);
    assert_int_equal(err.code, SX_ECONFLICT);
    assert_int_equal(applied, 0);
    assert_string_equal(err.message, "migration 0001_init.sql was changed after it was applied");
    assert_non_null(strstr(err.detail, before));
    assert_non_null(strstr(err.detail, after));

    /* Nothing else was applied. */
    PGconn *c = db_connect(db_url);
    assert_false(table_exists(c, "later_table"));
    assert_int_equal(q_long(c, "SELECT count(*) FROM schema_migrations"), embedded_count());
    PQfinish(c);
    rm_dir(dir);
}

DB_TEST(test_broken_file_rolls_back_alone)
{
    char *dir = copy_migrations();
    write_file(dir, "0900_good.sql", "CREATE TABLE good_table (id int);\n", "wb");
    write_file(dir, "0901_broken.sql",
               "CREATE TABLE half_table (id int);\n"
               "INSERT INTO no_such_table VALUES (1);\n",
               "wb");
    write_file(dir, "0902_after.sql", "CREATE TABLE after_table (id int);\n", "wb");

    int applied = -1;
    sx_err err;
    int rc = migrate_run(db_url, dir, &applied, &err);
    assert_int_not_equal(rc, 0);
    assert_int_equal(applied, embedded_count() + 1);
    assert_non_null(strstr(err.message, "migration 0901_broken.sql failed"));
    assert_non_null(strstr(err.message, "no_such_table"));
    assert_non_null(strstr(err.detail, "line 2"));
    assert_string_equal(err.sqlstate, "42P01");

    PGconn *c = db_connect(db_url);
    assert_true(table_exists(c, "good_table"));   /* earlier file stays applied */
    assert_false(table_exists(c, "half_table"));  /* the broken file left no trace */
    assert_false(table_exists(c, "after_table")); /* later files were not attempted */
    assert_int_equal(q_long(c, "SELECT count(*) FROM schema_migrations"), embedded_count() + 1);
    assert_int_equal(q_long(c, "SELECT count(*) FROM schema_migrations WHERE name = "
                               "'0901_broken.sql'"),
                     0);

    /* Fixed (it was never applied, so editing it is fine), the rest goes through. */
    write_file(dir, "0901_broken.sql", "CREATE TABLE half_table (id int);\n", "wb");
    assert_int_equal(migrate_run(db_url, dir, &applied, &err), 0);
    assert_int_equal(applied, 2);
    assert_true(table_exists(c, "half_table"));
    assert_true(table_exists(c, "after_table"));
    PQfinish(c);
    rm_dir(dir);
}

static void expect_refused(PGconn *c, const char *sql)
{
    char state[6];
    char *msg = expect_sql_error(c, sql, state);
    if (strstr(msg, "immutable") == NULL)
        fprintf(stderr, "%s: %s\n", sql, msg);
    assert_non_null(strstr(msg, "immutable"));
    assert_string_equal(state, "23001");
    free(msg);
}

DB_TEST(test_history_tables_refuse_changes)
{
    assert_int_equal(migrate_run(db_url, NULL, NULL, NULL), 0);
    PGconn *c = db_connect(db_url);
    free(q1(c, "INSERT INTO audit_log (actor, action, resource_type, resource_id, result,"
               " source_ip, details) VALUES ('alice', 'config.create', 'config', 'c1',"
               " 'success', '10.0.0.1', '{\"after_version\": 1}')"));
    expect_refused(c, "UPDATE audit_log SET actor = 'mallory'");
    expect_refused(c, "DELETE FROM audit_log");
    expect_refused(c, "TRUNCATE audit_log");
    char *actor = q1(c, "SELECT actor FROM audit_log");
    assert_string_equal(actor, "alice");
    free(actor);
    assert_int_equal(q_long(c, "SELECT count(*) FROM audit_log"), 1);

    free(q1(c, "INSERT INTO configs (id, namespace, name, latest_version, created_by)"
               " VALUES ('00000000-0000-0000-0000-000000000001', 'default', 'web', 1, 'alice')"));
    free(q1(c, "INSERT INTO config_versions (config_id, version, spec, checksum, author)"
               " VALUES ('00000000-0000-0000-0000-000000000001', 1, '{}', repeat('a', 64),"
               " 'alice')"));
    expect_refused(c, "UPDATE config_versions SET spec = '{\"x\": 1}'");
    expect_refused(c, "DELETE FROM config_versions");

    free(q1(c, "INSERT INTO proxy_groups (name, latest_snapshot_version) VALUES ('edge', 1)"));
    free(q1(c, "INSERT INTO snapshots (group_name, version, ir, encoded, checksum, created_by)"
               " VALUES ('edge', 1, '{}', '\\x0001', repeat('b', 64), 'alice')"));
    expect_refused(c, "UPDATE snapshots SET encoded = '\\x02'");
    expect_refused(c, "DELETE FROM snapshots");
    char *enc = q1(c, "SELECT encode(encoded, 'hex') FROM snapshots");
    assert_string_equal(enc, "0001");
    free(enc);

    /* The one exception, resealing secrets: their columns alone, under sextant.rekey. */
    expect_refused(c, "BEGIN; SELECT set_config('sextant.rekey', 'on', true);"
                      " UPDATE config_versions SET spec = '{}', author = 'mallory'");
    free(q1(c, "ROLLBACK"));
    expect_refused(c, "BEGIN; SELECT set_config('sextant.rekey', 'on', true);"
                      " UPDATE snapshots SET encoded = '\\x02', reason = 'forged'");
    free(q1(c, "ROLLBACK"));
    free(q1(c, "BEGIN; SELECT set_config('sextant.rekey', 'on', true);"
               " UPDATE config_versions SET spec = '{\"sealed\": 1}';"
               " UPDATE snapshots SET ir = '{\"sealed\": 2}', encoded = '\\x03'; COMMIT"));
    char *sealed = q1(c, "SELECT v.spec::text || s.ir::text || encode(s.encoded, 'hex')"
                         " FROM config_versions v, snapshots s");
    assert_string_equal(sealed, "{\"sealed\": 1}{\"sealed\": 2}03");
    free(sealed);
    expect_refused(c, "UPDATE config_versions SET spec = '{}'"); /* the setting was local */
    expect_refused(c, "BEGIN; SELECT set_config('sextant.rekey', 'on', true);"
                      " DELETE FROM snapshots");
    free(q1(c, "ROLLBACK"));

    /* Deployment states are constrained to the nine documented values. */
    char st[6];
    free(q1(c, "INSERT INTO deployments (config_id, config_version, created_by) VALUES"
               " ('00000000-0000-0000-0000-000000000001', 1, 'alice')"));
    free(expect_sql_error(c, "UPDATE deployments SET state = 'InProgress'", st));
    assert_string_equal(st, "23514");
    free(q1(c, "UPDATE deployments SET state = 'rollback_failed'"));
    PQfinish(c);
}

DB_TEST(test_status_counts_pending)
{
    pg_pool *pool;
    pg_pool_options opt = {.url = db_url, .size = 2};
    assert_int_equal(pg_pool_create(&opt, &pool, NULL), 0);

    int pending = -1;
    sx_err err;
    assert_int_equal(migrate_status(pool, &pending, &err), 0); /* no schema_migrations yet */
    assert_int_equal(pending, embedded_count());

    assert_int_equal(migrate_run(db_url, NULL, NULL, NULL), 0);
    assert_int_equal(migrate_status(pool, &pending, &err), 0);
    assert_int_equal(pending, 0);

    PGconn *c = db_connect(db_url);
    free(q1(c, "DELETE FROM schema_migrations WHERE name = '0001_init.sql'"));
    assert_int_equal(migrate_status(pool, &pending, &err), 0);
    assert_int_equal(pending, 1);
    free(q1(c, "INSERT INTO schema_migrations (name, checksum) VALUES ('0001_init.sql', 'bad')"));
    assert_int_equal(migrate_status(pool, &pending, &err), SX_ECONFLICT);
    assert_non_null(strstr(err.message, "0001_init.sql"));
    PQfinish(c);
    pg_pool_destroy(pool);
}

TL_TEST(test_bad_inputs)
{
    char url[128];
    snprintf(url, sizeof(url), "postgresql://sextant@127.0.0.1:%d/none?connect_timeout=2",
             tl_free_port());
    sx_err err;
    int applied = -1;
    assert_int_equal(migrate_run(url, NULL, &applied, &err), SX_EUNAVAILABLE);
    assert_int_equal(applied, 0);
    assert_non_null(strstr(err.message, "could not connect to postgresql"));

    char *db = tl_db_create();
    assert_int_equal(migrate_run(db, "/nonexistent/migrations", &applied, &err), SX_EIO);
    assert_non_null(strstr(err.message, "/nonexistent/migrations"));
    tl_db_drop(db);
}

TL_MAIN()
