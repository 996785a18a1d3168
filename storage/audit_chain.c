/*
 * audit_chain.c — verifies and archives the audit log's per-writer hash chains (see
 * audit_chain.h).
 *
 * Design: rows are read through a cursor in (writer, seq) order, a few thousand at a
 * time, and fed to one checker that holds the current writer's expected seq and
 * prev_hash; verify and archive differ only in where a chain starts (its archive
 * anchor) and what is done at its end (verify compares with the writer's head). The
 * canonical bytes are rebuilt here from the row's text columns exactly as
 * sextant_audit_canonical() builds them in SQL, so the check does not trust any
 * function stored in the database.
 */
#include "storage/audit_chain.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "server/base/mem.h"
#include "storage/repo_common.h"

/* The columns every walk reads, in canonical order from column 5 on. */
#define CHAIN_COLS                                                                                 \
    "id, writer, seq, encode(prev_hash, 'hex'), encode(hash, 'hex'), " REPO_TS(                    \
        "at") ", actor,"                                                                           \
              " actor_role, action, resource_type, resource_id, result, status_code::text, "       \
              "request_id,"                                                                        \
              " source_ip::text, details::text"
enum { COL_ID, COL_WRITER, COL_SEQ, COL_PREV, COL_HASH, COL_AT, COL_DETAILS = 15, NCOLS };

#define ZERO_HASH  "0000000000000000000000000000000000000000000000000000000000000000"
#define FETCH_ROWS "2000"

/* ------------------------------------------------------------------ canonical bytes */

typedef struct buf {
    unsigned char *p;
    size_t len, cap;
} buf;

static void buf_put(buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->p = sx_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void buf_be(buf *b, uint64_t v, int bytes)
{
    unsigned char o[8];
    for (int i = 0; i < bytes; i++)
        o[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    buf_put(b, o, (size_t)bytes);
}

/* F(v): int4 -1 for NULL, else int4 byte length and the bytes. */
static void buf_field(buf *b, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) {
        buf_be(b, 0xffffffffu, 4);
        return;
    }
    size_t n = (size_t)PQgetlength(r, row, col);
    buf_be(b, n, 4);
    buf_put(b, PQgetvalue(r, row, col), n);
}

static bool unhex(const char *hex, unsigned char *out, size_t n)
{
    if (strlen(hex) != 2 * n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = hex[2 * i + (size_t)k];
            v <<= 4;
            if (ch >= '0' && ch <= '9')
                v |= (unsigned)(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                v |= (unsigned)(ch - 'a' + 10);
            else
                return false;
        }
        out[i] = (unsigned char)v;
    }
    return true;
}

/* sha256 hex of the row's canonical bytes into out (65 bytes); false when prev_hash is
 * not 32 bytes (then nothing can match). */
static bool row_hash(buf *b, const PGresult *r, int row, char out[65])
{
    unsigned char prev[32];
    if (!unhex(PQgetvalue(r, row, COL_PREV), prev, sizeof(prev)))
        return false;
    long long id = strtoll(PQgetvalue(r, row, COL_ID), NULL, 10);
    long long seq = strtoll(PQgetvalue(r, row, COL_SEQ), NULL, 10);
    b->len = 0;
    buf_put(b, "sextant-audit-v1", 16);
    buf_put(b, prev, sizeof(prev));
    buf_be(b, (uint64_t)id, 8);
    buf_field(b, r, row, COL_WRITER);
    buf_be(b, (uint64_t)seq, 8);
    for (int col = COL_AT; col <= COL_DETAILS; col++)
        buf_field(b, r, row, col);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(b->p, b->len, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
        abort(); /* only fails when OpenSSL itself is broken */
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
    return true;
}

/* ------------------------------------------------------------------ the checker */

/* A writer's known position: an archive anchor or a head. */
typedef struct chain_pos {
    char *writer;
    long long seq;
    char hash[65];
    bool seen; /* a row of the writer was walked */
} chain_pos;

typedef struct chain_pos_list {
    chain_pos *items;
    size_t count;
} chain_pos_list;

static void pos_list_free(chain_pos_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        sx_free(l->items[i].writer);
    sx_free(l->items);
    memset(l, 0, sizeof(*l));
}

static chain_pos *pos_find(chain_pos_list *l, const char *writer)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i].writer, writer) == 0)
            return &l->items[i];
    return NULL;
}

/* Reads (writer, seq, hex hash) rows of sql into *l. */
static int pos_list_load(pg_conn *c, const char *sql, chain_pos_list *l, sx_err *err)
{
    memset(l, 0, sizeof(*l));
    PGresult *r = NULL;
    int rc = pg_exec(c, sql, 0, NULL, &r, err);
    if (rc)
        return rc;
    int n = PQntuples(r);
    l->items = sx_calloc((size_t)n + 1, sizeof(chain_pos));
    for (int i = 0; i < n; i++) {
        chain_pos *p = &l->items[l->count++];
        p->writer = sx_strdup(PQgetvalue(r, i, 0));
        p->seq = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        snprintf(p->hash, sizeof(p->hash), "%s", PQgetvalue(r, i, 2));
    }
    PQclear(r);
    return 0;
}

typedef struct checker {
    chain_pos_list anchors;
    char *writer;       /* the chain being walked; NULL before the first row */
    long long next_seq; /* the seq the next row must have */
    char prev[65];      /* the hash the next row's prev_hash must be */
    long long last_id;  /* id of the chain's last good row; 0 none */
    bool broken;        /* a finding was made in this chain: skip its other rows */
    long long rows;     /* rows walked */
    long long chains;   /* writers walked */
    audit_chain_report *rep;
    buf b;
} checker;

static void finding(checker *k, const char *fmt, ...) SX_PRINTF(2, 3);

static void finding(checker *k, const char *fmt, ...)
{
    k->broken = true;
    audit_chain_report *rep = k->rep;
    if (rep->problems >= AUDIT_CHAIN_MAX_PROBLEMS) {
        rep->more_problems++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->problem[rep->problems++], sizeof(rep->problem[0]), fmt, ap);
    va_end(ap);
}

/* Starts the chain of writer at its anchor, or at the beginning. */
static void chain_start(checker *k, const char *writer)
{
    sx_free(k->writer);
    k->writer = sx_strdup(writer);
    chain_pos *a = pos_find(&k->anchors, writer);
    k->next_seq = a ? a->seq + 1 : 1;
    snprintf(k->prev, sizeof(k->prev), "%s", a ? a->hash : ZERO_HASH);
    k->last_id = 0;
    k->broken = false;
    k->chains++;
}

/* Checks one row against its chain; rows must come in (writer, seq) order. */
static void chain_row(checker *k, const PGresult *r, int row)
{
    const char *writer = PQgetvalue(r, row, COL_WRITER);
    if (k->writer == NULL || strcmp(k->writer, writer) != 0)
        chain_start(k, writer);
    k->rows++;
    if (k->broken)
        return;
    const char *id = PQgetvalue(r, row, COL_ID);
    long long seq = strtoll(PQgetvalue(r, row, COL_SEQ), NULL, 10);
    if (seq > k->next_seq) {
        if (seq == k->next_seq + 1)
            finding(k, "writer %s: row seq %lld is missing (before row %s, seq %lld)", writer,
                    k->next_seq, id, seq);
        else
            finding(k, "writer %s: rows seq %lld to %lld are missing (before row %s, seq %lld)",
                    writer, k->next_seq, seq - 1, id, seq);
        return;
    }
    if (seq < k->next_seq) {
        finding(k, "writer %s: row %s (seq %lld) repeats or precedes seq %lld of the chain", writer,
                id, seq, k->next_seq - 1);
        return;
    }
    if (strcmp(PQgetvalue(r, row, COL_PREV), k->prev) != 0) {
        finding(k, "writer %s: row %s (seq %lld): prev_hash is not the hash of seq %lld", writer,
                id, seq, seq - 1);
        return;
    }
    char h[65];
    if (!row_hash(&k->b, r, row, h) || strcmp(h, PQgetvalue(r, row, COL_HASH)) != 0) {
        finding(k, "writer %s: row %s (seq %lld): hash does not match the row's contents", writer,
                id, seq);
        return;
    }
    snprintf(k->prev, sizeof(k->prev), "%s", h);
    k->next_seq = seq + 1;
    k->last_id = strtoll(id, NULL, 10);
}

static void checker_free(checker *k)
{
    pos_list_free(&k->anchors);
    sx_free(k->writer);
    sx_free(k->b.p);
}

/* Runs sql (a SELECT of CHAIN_COLS) through a cursor, feeding every row to fn. */
typedef int (*walk_fn)(void *ctx, const PGresult *r, int row, sx_err *err);

static int walk(pg_conn *c, const char *sql, int n, const char *const *p, walk_fn fn, void *ctx,
                sx_err *err)
{
    char decl[1024];
    snprintf(decl, sizeof(decl), "DECLARE sx_audit_walk NO SCROLL CURSOR FOR %s", sql);
    int rc = pg_exec(c, decl, n, p, NULL, err);
    for (;;) {
        PGresult *r = NULL;
        if (rc || (rc = pg_exec(c, "FETCH FORWARD " FETCH_ROWS " FROM sx_audit_walk", 0, NULL, &r,
                                err)) != 0)
            return rc;
        int rows = PQntuples(r);
        for (int i = 0; i < rows && rc == 0; i++)
            rc = fn(ctx, r, i, err);
        PQclear(r);
        if (rc || rows == 0)
            break;
    }
    if (rc == 0)
        rc = pg_exec(c, "CLOSE sx_audit_walk", 0, NULL, NULL, err);
    return rc;
}

/* ------------------------------------------------------------------ verify */

/* The end of a chain in verify: its head must be its last row. */
static void verify_chain_end(checker *k, chain_pos_list *heads)
{
    if (k->writer == NULL)
        return;
    chain_pos *h = pos_find(heads, k->writer);
    if (h)
        h->seen = true;
    if (k->broken)
        return;
    long long last = k->next_seq - 1;
    if (h == NULL)
        finding(k, "writer %s: no head records the chain (its last row is seq %lld)", k->writer,
                last);
    else if (h->seq > last)
        finding(k, "writer %s: row seq %lld%s missing (the head is at seq %lld, the last row %s)",
                k->writer, last + 1, h->seq > last + 1 ? " and later are" : " is", h->seq,
                k->last_id ? "below it" : "archived");
    else if (h->seq < last || strcmp(h->hash, k->prev) != 0)
        finding(k,
                "writer %s: the head (seq %lld) does not match the last row (row %lld, seq %lld)",
                k->writer, h->seq, k->last_id, last);
}

typedef struct verify_ctx {
    checker k;
    chain_pos_list heads;
} verify_ctx;

static int verify_row(void *ctx, const PGresult *r, int row, sx_err *err)
{
    (void)err;
    verify_ctx *v = ctx;
    const char *writer = PQgetvalue(r, row, COL_WRITER);
    if (v->k.writer && strcmp(v->k.writer, writer) != 0)
        verify_chain_end(&v->k, &v->heads);
    chain_row(&v->k, r, row);
    return 0;
}

int audit_chain_verify(pg_conn *c, audit_chain_report *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    verify_ctx v = {.k = {.rep = out}};
    int rc = pg_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, err);
    if (rc == 0)
        rc = pos_list_load(c,
                           "SELECT writer, seq, encode(hash, 'hex') FROM audit_chain_anchors"
                           " ORDER BY writer",
                           &v.k.anchors, err);
    if (rc == 0)
        rc = pos_list_load(c,
                           "SELECT writer, seq, encode(hash, 'hex') FROM audit_chain_heads"
                           " ORDER BY writer",
                           &v.heads, err);
    if (rc == 0)
        rc = walk(c, "SELECT " CHAIN_COLS " FROM audit_log ORDER BY writer, seq", 0, NULL,
                  verify_row, &v, err);
    if (rc == 0) {
        verify_chain_end(&v.k, &v.heads);
        /* Heads whose rows are all gone (and were not archived). */
        for (size_t i = 0; i < v.heads.count; i++) {
            chain_pos *h = &v.heads.items[i];
            if (h->seen)
                continue;
            chain_pos *a = pos_find(&v.k.anchors, h->writer);
            long long from = a ? a->seq : 0;
            v.k.chains++;
            if (h->seq > from)
                finding(&v.k, "writer %s: rows seq %lld to %lld are missing (no row remains)",
                        h->writer, from + 1, h->seq);
        }
        rc = pg_exec(c, "COMMIT", 0, NULL, NULL, err);
    } else {
        pg_rollback(c);
    }
    out->rows = v.k.rows;
    out->chains = v.k.chains;
    pos_list_free(&v.heads);
    checker_free(&v.k);
    return rc;
}

/* ------------------------------------------------------------------ archive */

typedef struct archive_ctx {
    checker k;
    FILE *out;
    bool io_failed;
    chain_pos_list ends; /* per writer of the month: its last row */
    long long rows;
} archive_ctx;

static bool emit(archive_ctx *x, json_t *line)
{
    if (!x->io_failed && (json_dumpf(line, x->out, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 ||
                          fputc('\n', x->out) == EOF))
        x->io_failed = true;
    json_decref(line);
    return !x->io_failed;
}

static json_t *col_str(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_string(PQgetvalue(r, row, col));
}

/* Records where the month's chain of writer ends (its last row so far). */
static void note_end(archive_ctx *x, const char *writer, long long seq, const char *hash)
{
    chain_pos *e = pos_find(&x->ends, writer);
    if (e == NULL) {
        x->ends.items = sx_realloc(x->ends.items, (x->ends.count + 1) * sizeof(chain_pos));
        e = &x->ends.items[x->ends.count++];
        memset(e, 0, sizeof(*e));
        e->writer = sx_strdup(writer);
    }
    e->seq = seq;
    snprintf(e->hash, sizeof(e->hash), "%s", hash);
}

static int archive_row(void *ctx, const PGresult *r, int row, sx_err *err)
{
    archive_ctx *x = ctx;
    const char *writer = PQgetvalue(r, row, COL_WRITER);
    if (x->k.writer == NULL || strcmp(x->k.writer, writer) != 0) {
        chain_pos *a = pos_find(&x->k.anchors, writer);
        emit(x, json_pack("{s:s,s:s,s:I,s:s}", "type", "anchor", "writer", writer, "seq",
                          (json_int_t)(a ? a->seq : 0), "hash", a ? a->hash : ZERO_HASH));
    }
    chain_row(&x->k, r, row);
    if (x->k.broken)
        return sx_err_set(err, SX_ECONFLICT, "the audit chain is broken: %s", x->k.rep->problem[0]);
    json_t *details = json_loads(PQgetvalue(r, row, COL_DETAILS), 0, NULL);
    json_t *line = json_pack(
        "{s:s,s:I,s:s,s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:s,s:s}", "type", "row",
        "id", (json_int_t)strtoll(PQgetvalue(r, row, COL_ID), NULL, 10), "writer", writer, "seq",
        (json_int_t)strtoll(PQgetvalue(r, row, COL_SEQ), NULL, 10), "at",
        PQgetvalue(r, row, COL_AT), "actor", PQgetvalue(r, row, 6), "actor_role",
        PQgetvalue(r, row, 7), "action", PQgetvalue(r, row, 8), "resource_type",
        PQgetvalue(r, row, 9), "resource_id", PQgetvalue(r, row, 10), "result",
        PQgetvalue(r, row, 11), "details_text", PQgetvalue(r, row, COL_DETAILS), "status_code",
        PQgetisnull(r, row, 12) ? json_null()
                                : json_integer(strtoll(PQgetvalue(r, row, 12), NULL, 10)),
        "request_id", col_str(r, row, 13), "source_ip", col_str(r, row, 14), "details",
        details ? details : json_object(), "prev_hash", PQgetvalue(r, row, COL_PREV), "hash",
        PQgetvalue(r, row, COL_HASH));
    x->rows++;
    note_end(x, writer, x->k.next_seq - 1, x->k.prev);
    if (!emit(x, line))
        return sx_err_set(err, SX_EIO, "could not write the archive: %s", strerror(errno));
    return 0;
}

/* Whether name is a monthly partition's: audit_log_YYYY_MM. */
static bool partition_name(const char *name)
{
    static const char prefix[] = "audit_log_";
    size_t n = sizeof(prefix) - 1;
    if (strncmp(name, prefix, n) != 0 || strlen(name) != n + 7 || name[n + 4] != '_')
        return false;
    for (size_t i = n; i < n + 7; i++)
        if (i != n + 4 && (name[i] < '0' || name[i] > '9'))
            return false;
    return true;
}

/* Flushes out and, when it is a regular file, fsyncs it. */
static int archive_sync(FILE *out, sx_err *err)
{
    if (fflush(out) != 0)
        return sx_err_set(err, SX_EIO, "could not write the archive: %s", strerror(errno));
    struct stat st;
    int fd = fileno(out);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fsync(fd) != 0)
        return sx_err_set(err, SX_EIO, "could not sync the archive: %s", strerror(errno));
    return 0;
}

/* Exports, checks, anchors and detaches one month; in the caller's transaction. */
static int archive_month(pg_conn *c, const char *part, const char *from, const char *to, FILE *out,
                         long long *rows, sx_err *err)
{
    audit_chain_report rep;
    memset(&rep, 0, sizeof(rep));
    archive_ctx x = {.k = {.rep = &rep}, .out = out};
    char sql[512];
    /* SHARE waits for the transactions still inserting into the month and keeps out
     * new ones while it is exported. */
    snprintf(sql, sizeof(sql), "LOCK TABLE %s IN SHARE MODE", part);
    int rc = pg_exec(c, sql, 0, NULL, NULL, err);
    if (rc == 0)
        rc = pos_list_load(c,
                           "SELECT writer, seq, encode(hash, 'hex') FROM audit_chain_anchors"
                           " ORDER BY writer",
                           &x.k.anchors, err);
    if (rc == 0 && !emit(&x, json_pack("{s:s,s:s,s:s,s:s}", "type", "partition", "name", part,
                                       "from", from, "to", to)))
        rc = sx_err_set(err, SX_EIO, "could not write the archive: %s", strerror(errno));
    snprintf(sql, sizeof(sql), "SELECT " CHAIN_COLS " FROM %s ORDER BY writer, seq", part);
    if (rc == 0)
        rc = walk(c, sql, 0, NULL, archive_row, &x, err);
    for (size_t i = 0; rc == 0 && i < x.ends.count; i++) {
        chain_pos *e = &x.ends.items[i];
        if (!emit(&x, json_pack("{s:s,s:s,s:I,s:s}", "type", "head", "writer", e->writer, "seq",
                                (json_int_t)e->seq, "hash", e->hash)))
            rc = sx_err_set(err, SX_EIO, "could not write the archive: %s", strerror(errno));
        char seq[24];
        snprintf(seq, sizeof(seq), "%lld", e->seq);
        const char *p[] = {e->writer, seq, e->hash, to};
        if (rc == 0)
            rc = pg_exec(c,
                         "INSERT INTO audit_chain_anchors (writer, seq, hash, archived_before)"
                         " VALUES ($1, $2::bigint, decode($3, 'hex'), $4::timestamptz)"
                         " ON CONFLICT (writer) DO UPDATE SET seq = EXCLUDED.seq,"
                         "   hash = EXCLUDED.hash, archived_before = EXCLUDED.archived_before,"
                         "   archived_at = now()",
                         4, p, NULL, err);
    }
    if (rc == 0)
        rc = archive_sync(out, err);
    snprintf(sql, sizeof(sql), "ALTER TABLE audit_log DETACH PARTITION %s", part);
    if (rc == 0)
        rc = pg_exec(c, sql, 0, NULL, NULL, err);
    *rows = x.rows;
    pos_list_free(&x.ends);
    checker_free(&x.k);
    return rc;
}

int audit_chain_archive(pg_conn *c, const char *before, FILE *out, audit_archive_report *rep,
                        sx_err *err)
{
    memset(rep, 0, sizeof(rep[0]));
    /* The months wholly before `before` and before this month, oldest first. */
    const char *p[] = {before};
    PGresult *r = NULL;
    int rc = pg_exec(
        c,
        "WITH parts AS ("
        "  SELECT c.relname AS name,"
        "         to_date(substr(c.relname, 11), 'YYYY_MM')::timestamp AT TIME ZONE 'UTC' AS lo"
        "    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        "   WHERE i.inhparent = 'audit_log'::regclass"
        "     AND c.relname ~ '^audit_log_[0-9]{4}_[0-9]{2}$')"
        " SELECT name, " REPO_TS("lo") ", " REPO_TS(
            "lo + interval '1 month'") " FROM parts"
                                       "  WHERE lo + interval '1 month' <= $1::timestamptz"
                                       "    AND lo < date_trunc('month', now() AT TIME ZONE 'UTC') "
                                       "AT TIME ZONE 'UTC'"
                                       "  ORDER BY lo",
        1, p, &r, err);
    if (rc == SX_EINVAL && err && strncmp(err->sqlstate, "22", 2) == 0)
        return sx_err_set(err, SX_EINVAL, "--before \"%s\" is not a date or time", before);
    if (rc)
        return rc;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        const char *part = PQgetvalue(r, i, 0);
        if (!partition_name(part))
            continue;
        long long rows = 0;
        if ((rc = pg_begin(c, err)) != 0)
            break;
        rc = archive_month(c, part, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), out, &rows, err);
        if (rc == 0)
            rc = pg_commit(c, err);
        else
            pg_rollback(c);
        if (rc) {
            sx_err_prefix(err, "could not archive %s", part);
            break;
        }
        if (rep->partitions++ == 0)
            snprintf(rep->first, sizeof(rep->first), "%s", part);
        snprintf(rep->last, sizeof(rep->last), "%s", part);
        rep->rows += rows;
    }
    PQclear(r);
    return rc;
}

/* ------------------------------------------------------------------ roles, partitions */

int audit_chain_ensure_partitions(pg_conn *c, int *created, sx_err *err)
{
    long long n = 0;
    int rc = repo_query_i64(c, "SELECT sextant_audit_partitions_ensure(2)", 0, NULL, &n, err);
    if (created)
        *created = (int)n;
    return rc;
}

int audit_chain_grant_runtime(pg_conn *c, const char *role, bool *granted, sx_err *err)
{
    *granted = false;
    PGresult *r = NULL;
    int rc = pg_exec(c, "SELECT to_regprocedure('sextant_grant_runtime_role(text)') IS NOT NULL", 0,
                     NULL, &r, err);
    bool exists = rc == 0 && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    const char *p[] = {role};
    if (rc == 0 && exists &&
        (rc = pg_exec(c, "SELECT sextant_grant_runtime_role($1)", 1, p, NULL, err)) == 0)
        *granted = true;
    return rc;
}

int audit_chain_session_owns(pg_conn *c, bool *owner, sx_err *err)
{
    *owner = false;
    PGresult *r = NULL;
    int rc = pg_exec(c,
                     "SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class"
                     " WHERE oid = 'audit_log'::regclass",
                     0, NULL, &r, err);
    if (rc == 0 && PQntuples(r) == 1)
        *owner = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return rc;
}
