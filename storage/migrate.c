/*
 * migrate.c — applies pending SQL migrations once each, in order, under an advisory lock.
 *
 * Design: one dedicated libpq connection (a migration may run longer than a pool's
 * statement timeout, and the session advisory lock must live on one session). The
 * lock is taken before schema_migrations is even created, so two runs never race on
 * CREATE TABLE, never both see a file as pending, and the second simply finds nothing
 * to do. Every file is checked against its recorded checksum before anything is
 * applied, so a changed file stops the run with the database untouched. Each pending
 * file then runs as one simple-protocol query (it may hold many statements) inside its
 * own transaction together with the row that records it: a failing file leaves no
 * trace, and the files before it stay applied.
 */
#include "storage/migrate.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/base/buf.h"
#include "server/base/hash.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "storage/pg_link.h"

#define COMPONENT "migrate"

typedef struct mfile {
    char *name;
    char *sql; /* NUL-terminated file text */
    char checksum[SX_SHA256_HEX_LEN + 1];
    const char *applied_checksum; /* from schema_migrations; NULL when pending */
} mfile;

typedef struct mset {
    mfile *v;
    size_t n;
    size_t cap;
} mset;

static void mset_add(mset *s, const char *name, char *sql_owned, size_t len)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = sx_realloc(s->v, s->cap * sizeof(*s->v));
    }
    mfile *f = &s->v[s->n++];
    memset(f, 0, sizeof(*f));
    f->name = sx_strdup(name);
    f->sql = sql_owned;
    sx_sha256_hex(sql_owned, len, f->checksum);
}

static void mset_free(mset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        sx_free(s->v[i].name);
        sx_free(s->v[i].sql);
    }
    sx_free(s->v);
    memset(s, 0, sizeof(*s));
}

static int cmp_mfile(const void *a, const void *b)
{
    return strcmp(((const mfile *)a)->name, ((const mfile *)b)->name);
}

static void load_embedded(mset *s)
{
    for (const migrate_file *f = migrate_embedded_files; f->name; f++)
        mset_add(s, f->name, sx_strdup(f->sql), strlen(f->sql));
    qsort(s->v, s->n, sizeof(*s->v), cmp_mfile);
}

static bool has_sql_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".sql") == 0 && name[0] != '.';
}

static int read_file(const char *path, const char *name, char **out, size_t *len, sx_err *err)
{
    *out = NULL;
    *len = 0;
    sx_buf b = {0};
    int rc = sx_buf_read_file(&b, path, SIZE_MAX);
    if (rc) {
        int e = errno;
        sx_buf_free(&b);
        if (rc < 0)
            return sx_err_set(err, SX_EIO, "could not open migration %s: %s", path, strerror(e));
        return sx_err_set(err, SX_EIO, "could not read migration %s", path);
    }
    if (b.len != strlen(sx_buf_cstr(&b))) {
        sx_buf_free(&b);
        return sx_err_set(err, SX_EINVAL, "migration %s contains a NUL byte", name);
    }
    *len = b.len;
    sx_buf_putc(&b, '\0'); /* make sure data is allocated even for an empty file */
    b.len--;
    *out = sx_buf_steal(&b);
    return 0;
}

static int load_dir(const char *dir, mset *s, sx_err *err)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return sx_err_set(err, SX_EIO, "could not open migrations folder %s: %s", dir,
                          strerror(errno));
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!has_sql_suffix(e->d_name))
            continue;
        char *path = sx_asprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            sx_free(path);
            continue;
        }
        char *sql;
        size_t len;
        rc = read_file(path, e->d_name, &sql, &len, err);
        sx_free(path);
        if (rc)
            break;
        mset_add(s, e->d_name, sql, len);
    }
    closedir(d);
    if (rc == 0)
        qsort(s->v, s->n, sizeof(*s->v), cmp_mfile);
    return rc;
}

/* Notices ("relation already exists, skipping") go to the debug log, not stderr. */
static void on_notice(void *arg, const char *message)
{
    (void)arg;
    size_t n = strcspn(message, "\n");
    sx_log(SX_LOG_DEBUG, COMPONENT, "server notice: %.*s", (int)n, message);
}

static int exec_simple(PGconn *conn, const char *sql, int n, const char *const *params,
                       PGresult **out, const char *what, sx_err *err)
{
    if (out)
        *out = NULL;
    PGresult *r = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    if (pg_result_take(r, out))
        return 0;
    int rc = pg_result_error(conn, r, what, err);
    PQclear(r);
    return rc;
}

/* Line (1-based) of the character at 1-based position pos of text (UTF-8 aware). */
static int line_of(const char *text, long pos)
{
    int line = 1;
    long chars = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p & 0xC0) == 0x80)
            continue;
        if (++chars >= pos)
            break;
        if (*p == '\n')
            line++;
    }
    return line;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Applies one file in its own transaction together with its schema_migrations row. */
static int apply_one(PGconn *conn, const mfile *f, sx_err *err)
{
    long long t0 = mono_ms();
    char what[320];
    snprintf(what, sizeof(what), "migration %s failed", f->name);
    int rc = exec_simple(conn, "BEGIN", 0, NULL, NULL, what, err);
    if (rc)
        return rc;
    PGresult *r = PQexec(conn, f->sql);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
        rc = pg_result_error(conn, r, what, err);
        const char *pos = r ? PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION) : NULL;
        if (err && pos) {
            char server_detail[SX_ERR_DETAIL_MAX];
            snprintf(server_detail, sizeof(server_detail), "%s", err->detail);
            sx_err_detail(err, "The error is at line %d of the file.%s%s",
                          line_of(f->sql, strtol(pos, NULL, 10)), server_detail[0] ? " " : "",
                          server_detail);
        }
        PQclear(r);
        PQclear(PQexec(conn, "ROLLBACK"));
        return rc;
    }
    PQclear(r);
    if (PQtransactionStatus(conn) != PQTRANS_INTRANS) {
        PQclear(PQexec(conn, "ROLLBACK"));
        sx_err_set(err, SX_EINVAL, "migration %s ended its transaction", f->name);
        sx_err_detail(err, "A migration file runs inside a transaction that migrate opens and "
                           "commits; it must not contain BEGIN, COMMIT or ROLLBACK.");
        return SX_EINVAL;
    }
    const char *params[] = {f->name, f->checksum};
    rc = exec_simple(conn, "INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)", 2,
                     params, NULL, what, err);
    if (rc == 0)
        rc = exec_simple(conn, "COMMIT", 0, NULL, NULL, what, err);
    if (rc) {
        PQclear(PQexec(conn, "ROLLBACK"));
        return rc;
    }
    json_t *fields = json_pack("{s:s, s:s, s:I}", "file", f->name, "checksum", f->checksum,
                               "duration_ms", (json_int_t)(mono_ms() - t0));
    sx_log_fields(SX_LOG_INFO, COMPONENT, fields, "applied migration %s", f->name);
    return 0;
}

static const char CREATE_TABLE_SQL[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                       " name text PRIMARY KEY,"
                                       " checksum text NOT NULL,"
                                       " applied_at timestamptz NOT NULL DEFAULT now())";

/* Marks which files are applied and checks their checksums; fails on the first
 * changed one. */
static int check_applied(const PGresult *r, mset *s, sx_err *err)
{
    int rows = PQntuples(r);
    for (int i = 0; i < rows; i++) {
        const char *name = PQgetvalue(r, i, 0);
        const char *sum = PQgetvalue(r, i, 1);
        mfile key = {.name = (char *)name};
        mfile *f = bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_mfile);
        if (f == NULL) {
            sx_log(SX_LOG_WARN, COMPONENT,
                   "migration %s is recorded as applied but is not among the files", name);
            continue;
        }
        f->applied_checksum = sum;
    }
    for (size_t i = 0; i < s->n; i++) {
        mfile *f = &s->v[i];
        if (f->applied_checksum && strcmp(f->applied_checksum, f->checksum) != 0) {
            sx_err_set(err, SX_ECONFLICT, "migration %s was changed after it was applied", f->name);
            sx_err_detail(err, "The recorded checksum is %s; the file's checksum is now %s.",
                          f->applied_checksum, f->checksum);
            sx_err_hint(err, "Restore the file as it was and put the change in a new "
                             "migration file.");
            return SX_ECONFLICT;
        }
    }
    return 0;
}

static int run_locked(PGconn *conn, mset *s, int *applied, sx_err *err)
{
    int rc = exec_simple(conn, CREATE_TABLE_SQL, 0, NULL, NULL,
                         "could not create schema_migrations", err);
    if (rc)
        return rc;
    PGresult *r;
    rc = exec_simple(conn, "SELECT name, checksum FROM schema_migrations", 0, NULL, &r,
                     "could not read schema_migrations", err);
    if (rc)
        return rc;
    rc = check_applied(r, s, err);
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        if (s->v[i].applied_checksum)
            continue;
        rc = apply_one(conn, &s->v[i], err);
        if (rc == 0)
            (*applied)++;
    }
    PQclear(r); /* applied_checksum pointers point into r */
    return rc;
}

int migrate_run(const char *database_url, const char *dir_or_null, int *applied_count, sx_err *err)
{
    int applied = 0;
    if (applied_count)
        *applied_count = 0;
    mset s = {0};
    int rc = 0;
    if (dir_or_null)
        rc = load_dir(dir_or_null, &s, err);
    else
        load_embedded(&s);
    if (rc) {
        mset_free(&s);
        return rc;
    }

    const char *keys[] = {"dbname", "application_name", "connect_timeout", NULL};
    const char *vals[] = {database_url ? database_url : "", "sextant-migrate", "10", NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        char m[SX_ERR_MESSAGE_MAX];
        pg_link_error_text(m, sizeof(m), conn ? PQerrorMessage(conn) : "out of memory");
        sx_err_set(err, SX_EUNAVAILABLE, "could not connect to postgresql: %s", m);
        PQfinish(conn);
        mset_free(&s);
        return SX_EUNAVAILABLE;
    }
    PQsetNoticeProcessor(conn, on_notice, NULL);

    char key[32];
    snprintf(key, sizeof(key), "%lld", MIGRATE_LOCK_KEY);
    const char *params[] = {key};
    rc = exec_simple(conn, "SELECT pg_advisory_lock($1::bigint)", 1, params, NULL,
                     "could not take the migration lock", err);
    if (rc == 0) {
        rc = run_locked(conn, &s, &applied, err);
        /* Closing the session would release the lock too; unlocking keeps it tidy. */
        PQclear(PQexec(conn, "ROLLBACK"));
        PQclear(PQexecParams(conn, "SELECT pg_advisory_unlock($1::bigint)", 1, NULL, params, NULL,
                             NULL, 0));
    }
    PQfinish(conn);
    if (rc == 0 && applied == 0)
        sx_log(SX_LOG_INFO, COMPONENT, "database schema is current (%zu migrations)", s.n);
    mset_free(&s);
    if (applied_count)
        *applied_count = applied;
    return rc;
}

int migrate_status(pg_pool *pool, int *pending, sx_err *err)
{
    *pending = 0;
    mset s = {0};
    load_embedded(&s);
    pg_conn *c;
    int rc = pg_acquire(pool, &c, err);
    if (rc) {
        mset_free(&s);
        return rc;
    }
    PGresult *r = NULL;
    rc = pg_exec(c, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0, NULL, &r, err);
    bool exists = rc == 0 && strcmp(pg_get(r, 0, 0), "t") == 0;
    PQclear(r);
    r = NULL;
    if (rc == 0 && exists)
        rc = pg_exec(c, "SELECT name, checksum FROM schema_migrations", 0, NULL, &r, err);
    if (rc == 0 && r)
        rc = check_applied(r, &s, err);
    if (rc == 0)
        for (size_t i = 0; i < s.n; i++)
            if (s.v[i].applied_checksum == NULL)
                (*pending)++;
    PQclear(r);
    pg_release(pool, c);
    mset_free(&s);
    return rc;
}
