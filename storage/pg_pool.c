/*
 * pg_pool.c — PostgreSQL connection pool and parameterised query helpers.
 *
 * Design: a mutex-protected stack of idle connections plus a count of every open
 * one (idle, in use, or being opened). Opening a connection happens outside the
 * lock so a slow connect never blocks other threads from taking idle connections.
 * A failed connect starts a back-off (bounds from the pg_link); while it lasts acquire
 * fails at once rather than stacking up connect attempts against a server that is
 * down, and the reconnector thread retries in the background. Any successful
 * connection to the server, the listener's included, ends the back-off. The pool
 * never retries a statement on its own: only pg_tx reruns a whole transaction, and
 * only for serialization failures and deadlocks, where rerunning is the documented
 * remedy.
 */
#include "storage/pg_pool.h"

#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"

#define TX_ATTEMPTS 3
/* Prepared statements per connection: an open-addressed table of STMT_SLOTS slots holding
 * at most STMT_MAX statements; texts beyond that run unprepared. */
#define STMT_SLOTS 512
#define STMT_MAX   384

/* One statement prepared on a connection as "sx<id>". */
typedef struct stmt_entry {
    uint64_t hash; /* FNV-1a of sql; 0: free slot */
    char *sql;     /* owned copy */
    unsigned id;
} stmt_entry;

struct pg_conn {
    struct pg_conn *next; /* idle stack link; NULL while in use */
    struct pg_pool *pool; /* the pool it came from */
    PGconn *conn;         /* owned */
    bool broken;          /* set when a statement found the connection dead, or the
                           * server sent a FATAL (it is about to close it) */
    bool lost;            /* broken because the server went away (not by our choice) */
    stmt_entry *stmts;    /* STMT_SLOTS slots (owned), NULL until the first statement */
    unsigned nstmts;      /* statements prepared on this session */
};

struct pg_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when a connection is released or a slot frees */
    char *url;         /* owned copy of the connection string */
    char *app;         /* application_name */
    int size;          /* maximum open connections */
    int connect_timeout_ms;
    int statement_timeout_ms;
    bool prepare; /* statements are prepared once per connection and reused */
    int acquire_timeout_ms;
    pg_conn *idle;      /* stack of idle connections */
    int open;           /* idle + in use + being opened */
    long long retry_at; /* monotonic ms before which no new connect is attempted */
    int backoff_ms;     /* current back-off step; 0 while the server is reachable */
    unsigned long gen;  /* the link's generation when the back-off began */
    char last_error[SX_ERR_MESSAGE_MAX];
    pg_link *link; /* shared picture of the server; owned when own_link */
    bool own_link;
    /* The reconnector: a thread started at the first failed connect that, while the
     * server is unreachable, keeps trying in the background, so the pool is back as soon
     * as the server is, whether or not a request arrives. */
    pthread_cond_t rc_cv; /* wakes the reconnector: back-off, link up, a free slot, stop */
    pthread_t rc_thread;
    bool rc_started;
    bool stopping;
    sx_metric *m_open;
    sx_metric *m_connect_fail;
    sx_metric *m_errors;
    const sx_keyring *secrets; /* borrowed; NULL: private keys unsealed or refused */
    bool secrets_plaintext;    /* keys NULL: private keys stored unsealed (else refused) */
};

static void on_link_up(void *ctx);

int pg_pool_create(const pg_pool_options *opt, pg_pool **out, sx_err *err)
{
    *out = NULL;
    if (opt->url == NULL || opt->url[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "database url is empty");
    if (opt->size < 1)
        return sx_err_set(err, SX_EINVAL, "pool size must be at least 1");
    pg_pool *p = sx_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    sx_cond_init_monotonic(&p->cv);
    p->url = sx_strdup(opt->url);
    p->app = sx_strdup(opt->application_name ? opt->application_name : "sextant");
    p->size = opt->size;
    p->connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 5000;
    p->statement_timeout_ms = opt->statement_timeout_ms;
    p->prepare = opt->prepared_statements;
    p->acquire_timeout_ms = opt->acquire_timeout_ms > 0 ? opt->acquire_timeout_ms : 10000;
    sx_cond_init_monotonic(&p->rc_cv);
    p->link = pg_link_given_or_own(opt->link, opt->metrics, &p->own_link);
    if (pg_link_watch(p->link, on_link_up, p) != 0)
        SX_WARN("storage", "too many watchers of the database link: the pool waits out its "
                           "back-off");
    if (opt->metrics) {
        p->m_open = sx_metrics_gauge(opt->metrics, "sextant_db_connections",
                                     "Open PostgreSQL connections in the pool", NULL);
        p->m_connect_fail =
            sx_metrics_counter(opt->metrics, "sextant_db_connect_failures_total",
                               "Failed attempts to open a PostgreSQL connection", NULL);
        p->m_errors = sx_metrics_counter(opt->metrics, "sextant_db_errors_total",
                                         "Failed SQL statements by error code", "code");
    }
    *out = p;
    return 0;
}

static void update_open_metric(pg_pool *p)
{
    if (p->m_open)
        sx_metric_set(p->m_open, NULL, p->open);
}

/* Closes c's session and frees it with its statement table. */
static void conn_free(pg_conn *c)
{
    PQfinish(c->conn);
    if (c->stmts)
        for (unsigned i = 0; i < STMT_SLOTS; i++)
            sx_free(c->stmts[i].sql);
    sx_free(c->stmts);
    sx_free(c);
}

void pg_pool_destroy(pg_pool *p)
{
    if (p == NULL)
        return;
    pg_link_unwatch(p->link, on_link_up, p);
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    bool started = p->rc_started;
    pthread_cond_broadcast(&p->rc_cv);
    pthread_mutex_unlock(&p->mu);
    if (started)
        pthread_join(p->rc_thread, NULL);
    for (pg_conn *c = p->idle; c;) {
        pg_conn *next = c->next;
        conn_free(c);
        c = next;
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->rc_cv);
    if (p->own_link)
        pg_link_destroy(p->link);
    sx_free(p->url);
    sx_free(p->app);
    sx_free(p);
}

const char *pg_pool_url(const pg_pool *p)
{
    return p->url;
}

void pg_pool_set_secrets(pg_pool *p, const sx_keyring *keys, bool allow_plaintext)
{
    p->secrets = keys;
    p->secrets_plaintext = allow_plaintext;
}

const sx_keyring *pg_pool_secrets(const pg_pool *p, bool *allow_plaintext)
{
    if (allow_plaintext)
        *allow_plaintext = p->secrets_plaintext;
    return p->secrets;
}

const sx_keyring *pg_conn_secrets(const pg_conn *c, bool *allow_plaintext)
{
    return pg_pool_secrets(c->pool, allow_plaintext);
}

PGconn *pg_conn_raw(pg_conn *c)
{
    return c->conn;
}

/*
 * Server messages outside a statement's result (NOTICE, WARNING, and the FATAL a
 * backend sends before it closes the connection) would otherwise be printed raw on
 * stderr by libpq, in the middle of the JSON log. A FATAL also marks the connection
 * broken so that acquire does not hand it out.
 */
static void on_notice(void *arg, const PGresult *res)
{
    pg_conn *c = arg;
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    bool fatal = sev && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0);
    if (fatal)
        c->broken = c->lost = true;
    sx_log(fatal || (sev && strcmp(sev, "WARNING") == 0) ? SX_LOG_WARN : SX_LOG_DEBUG, "storage",
           "postgresql %s: %s", sev ? sev : "notice", msg ? msg : "");
}

/*
 * Opens one connection; runs without the pool lock. statement_timeout is set with a
 * query rather than the "options" keyword, which would replace an options= the
 * operator put in the URL.
 */
static PGconn *open_conn(pg_pool *p, char *why, size_t whylen)
{
    char timeout[16];
    int secs = (p->connect_timeout_ms + 999) / 1000;
    snprintf(timeout, sizeof(timeout), "%d", secs < 2 ? 2 : secs);
    const char *keys[] = {"dbname", "connect_timeout", "application_name", "client_encoding", NULL};
    const char *vals[] = {p->url, timeout, p->app, "UTF8", NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        pg_link_error_text(why, whylen, conn ? PQerrorMessage(conn) : "out of memory");
        PQfinish(conn);
        return NULL;
    }
    char ms[32];
    snprintf(ms, sizeof(ms), "%d", p->statement_timeout_ms);
    const char *params[] = {ms};
    PGresult *r = PQexecParams(conn, "SELECT set_config('statement_timeout', $1, false)", 1, NULL,
                               params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        char line[400];
        pg_link_error_text(line, sizeof(line), PQerrorMessage(conn));
        snprintf(why, whylen, "could not set statement_timeout: %s", line);
        PQclear(r);
        PQfinish(conn);
        return NULL;
    }
    PQclear(r);
    return conn;
}

/*
 * Whether an idle connection is still usable, without a round trip. An idle session
 * receives nothing unless the server is closing it (a terminated backend sends a
 * FATAL, then EOF), so readable data is consumed and judged: the FATAL marks the
 * connection broken through on_notice, EOF makes PQconsumeInput fail.
 */
static bool idle_conn_alive(pg_conn *c)
{
    for (int i = 0; i < 4 && !c->broken; i++) {
        if (PQstatus(c->conn) != CONNECTION_OK)
            return false;
        struct pollfd pfd = {PQsocket(c->conn), POLLIN, 0};
        if (poll(&pfd, 1, 0) <= 0)
            break;
        if (!PQconsumeInput(c->conn))
            return false;
        PGnotify *n;
        while ((n = PQnotifies(c->conn)) != NULL)
            PQfreemem(n);
    }
    return !c->broken && PQstatus(c->conn) == CONNECTION_OK;
}

static void *reconnector(void *arg);

/* A connect attempt failed: the back-off grows and the reconnector takes over. Call with
 * the mutex held (the slot the attempt had taken is given back). */
static void connect_failed_locked(pg_pool *p, const char *why)
{
    p->open--;
    p->backoff_ms = pg_link_backoff_next(p->link, p->backoff_ms);
    p->retry_at = sx_monotonic_ms() + p->backoff_ms;
    snprintf(p->last_error, sizeof(p->last_error), "%s", why);
    if (!p->rc_started && !p->stopping && pthread_create(&p->rc_thread, NULL, reconnector, p) == 0)
        p->rc_started = true;
    pthread_cond_broadcast(&p->cv);
    pthread_cond_broadcast(&p->rc_cv);
    if (p->m_connect_fail)
        sx_metric_inc(p->m_connect_fail, NULL);
}

/* A new connection: the back-off is over. Call with the mutex held; the caller reports
 * it to the link once the mutex is released (pg_link_up calls the watchers, ours
 * included). */
static pg_conn *connected_locked(pg_pool *p, PGconn *conn)
{
    p->backoff_ms = 0;
    p->retry_at = 0;
    update_open_metric(p);
    pg_conn *c = sx_calloc(1, sizeof(*c));
    c->conn = conn;
    c->pool = p;
    PQsetNoticeReceiver(conn, on_notice, c);
    return c;
}

/* Another connection to the server (the listener's, or ours) succeeded after a failure:
 * the back-off is over, and the next acquire connects at once. */
static void on_link_up(void *ctx)
{
    pg_pool *p = ctx;
    pthread_mutex_lock(&p->mu);
    p->backoff_ms = 0;
    p->retry_at = 0;
    pthread_cond_broadcast(&p->rc_cv);
    pthread_mutex_unlock(&p->mu);
}

/* Opens the connection of a slot already counted in p->open: called with the mutex
 * held, which is released while connecting. Returns the connection with the mutex held
 * again (the caller reports it to the link once it releases the mutex), or NULL with
 * the mutex released, why filled, the failure counted and the link told. */
static pg_conn *open_slot(pg_pool *p, char *why, size_t whylen)
{
    pthread_mutex_unlock(&p->mu);
    PGconn *conn = open_conn(p, why, whylen);
    pthread_mutex_lock(&p->mu);
    if (conn == NULL) {
        connect_failed_locked(p, why);
        pthread_mutex_unlock(&p->mu);
        pg_link_down(p->link, "pool");
        return NULL;
    }
    return connected_locked(p, conn);
}

/*
 * The reconnector: while the pool is in back-off (backoff_ms > 0) it opens a connection
 * each time the back-off runs out and parks it as idle, so that the pool is back with
 * the server and not only when a request arrives. Requests meanwhile fail at once (see
 * pg_acquire), so none waits on a server that does not answer. A connection another
 * part of the daemon makes ends the back-off (on_link_up), and the next request
 * connects itself.
 */
static void *reconnector(void *arg)
{
    pg_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        long long now = sx_monotonic_ms();
        if (p->backoff_ms == 0 || p->open >= p->size) {
            pthread_cond_wait(&p->rc_cv, &p->mu);
            continue;
        }
        if (now < p->retry_at) {
            struct timespec ts = sx_deadline_in(p->retry_at - now);
            pthread_cond_timedwait(&p->rc_cv, &p->mu, &ts);
            continue;
        }
        p->open++;
        p->retry_at = now + p->backoff_ms; /* requests keep failing fast while we try */
        char why[SX_ERR_MESSAGE_MAX];
        pg_conn *c = open_slot(p, why, sizeof(why));
        if (c == NULL) {
            SX_DEBUG("storage", "database pool still cannot connect: %s", why);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        PGconn *conn = c->conn; /* c is the pool's once idle */
        c->next = p->idle;
        p->idle = c;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pg_link_up(p->link, "pool", conn);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int pg_acquire(pg_pool *p, pg_conn **out, sx_err *err)
{
    *out = NULL;
    long long deadline = sx_monotonic_ms() + p->acquire_timeout_ms;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->idle) {
            pg_conn *c = p->idle;
            p->idle = c->next;
            c->next = NULL;
            if (idle_conn_alive(c)) {
                pthread_mutex_unlock(&p->mu);
                *out = c;
                return 0;
            }
            /* Died while idle (terminated backend, server restart, failover): drop it and
             * look again, which opens a replacement when no other idle one is left. */
            conn_free(c);
            p->open--;
            update_open_metric(p);
            pg_link_down(p->link, "pool");
            continue;
        }
        if (p->open < p->size) {
            long long now = sx_monotonic_ms();
            /* In back-off, whether its time is up or not: the reconnector is on it. */
            if (p->backoff_ms > 0 && (now < p->retry_at || p->rc_started)) {
                long long wait = p->retry_at > now ? p->retry_at - now : 0;
                sx_err_set(err, SX_EUNAVAILABLE, "could not connect to postgresql: %s",
                           p->last_error);
                sx_err_detail(err, "The next connection attempt is in %lld ms.", wait);
                pthread_mutex_unlock(&p->mu);
                return SX_EUNAVAILABLE;
            }
            p->open++;
            char why[SX_ERR_MESSAGE_MAX];
            pg_conn *c = open_slot(p, why, sizeof(why));
            if (c == NULL)
                return sx_err_set(err, SX_EUNAVAILABLE, "could not connect to postgresql: %s", why);
            pthread_mutex_unlock(&p->mu);
            pg_link_up(p->link, "pool", c->conn);
            *out = c;
            return 0;
        }
        long long now = sx_monotonic_ms();
        if (now >= deadline) {
            pthread_mutex_unlock(&p->mu);
            return sx_err_set(err, SX_ETIMEOUT,
                              "could not get a database connection: all %d in use", p->size);
        }
        struct timespec ts = sx_deadline_in(deadline - now);
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
}

void pg_release(pg_pool *p, pg_conn *c)
{
    if (c == NULL)
        return;
    if (!c->broken && PQstatus(c->conn) == CONNECTION_OK) {
        PGTransactionStatusType ts = PQtransactionStatus(c->conn);
        if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) {
            PGresult *r = PQexec(c->conn, "ROLLBACK");
            PQclear(r);
            ts = PQtransactionStatus(c->conn);
        }
        if (ts != PQTRANS_IDLE)
            c->broken = true;
    } else {
        c->broken = true;
    }
    if (c->lost)
        pg_link_down(p->link, "pool");
    pthread_mutex_lock(&p->mu);
    if (c->broken) {
        conn_free(c);
        p->open--;
        update_open_metric(p);
        pthread_cond_broadcast(&p->rc_cv); /* a slot for the reconnector, if it waits */
    } else {
        c->next = p->idle;
        p->idle = c;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int pg_pool_ping(pg_pool *p, sx_err *err)
{
    pg_conn *c;
    int rc = pg_acquire(p, &c, err);
    if (rc)
        return rc;
    rc = pg_exec(c, "SELECT 1", 0, NULL, NULL, err);
    pg_release(p, c);
    return rc;
}

static int map_sqlstate(const char *s)
{
    if (s == NULL || s[0] == '\0')
        return SX_EUNAVAILABLE; /* no server answer at all: the connection is gone */
    if (strncmp(s, "08", 2) == 0 || strcmp(s, "57P01") == 0 || strcmp(s, "57P02") == 0 ||
        strcmp(s, "57P03") == 0 || strncmp(s, "53", 2) == 0)
        return SX_EUNAVAILABLE;
    if (strcmp(s, "23505") == 0 || strcmp(s, "23P01") == 0 || strcmp(s, "40001") == 0 ||
        strcmp(s, "40P01") == 0)
        return SX_ECONFLICT;
    if (strcmp(s, "57014") == 0 || strcmp(s, "55P03") == 0)
        return SX_ETIMEOUT;
    if (strncmp(s, "22", 2) == 0 || strncmp(s, "23", 2) == 0 || strcmp(s, "P0001") == 0)
        return SX_EINVAL;
    if (strcmp(s, "42501") == 0)
        return SX_EFORBIDDEN;
    return SX_EINTERNAL;
}

int pg_result_error(PGconn *conn, const PGresult *res, const char *what, sx_err *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char line[400];
    if (primary == NULL) {
        pg_link_error_text(line, sizeof(line), conn ? PQerrorMessage(conn) : "no connection");
        primary = line[0] ? line : "connection lost";
    }
    int code = map_sqlstate(state);
    if (conn && PQstatus(conn) != CONNECTION_OK)
        code = SX_EUNAVAILABLE;
    sx_err_set(err, code, "%s: %s", what, primary);
    if (err) {
        const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
        const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
        if (detail)
            sx_err_detail(err, "%s", detail);
        if (hint)
            sx_err_hint(err, "%s", hint);
        if (state)
            snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", state);
    }
    return code;
}

bool pg_result_take(PGresult *res, PGresult **out)
{
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return false;
    if (out)
        *out = res;
    else
        PQclear(res);
    return true;
}

/* FNV-1a of a statement's text, never 0 (0 marks a free slot). */
static uint64_t sql_hash(const char *sql)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *q = (const unsigned char *)sql; *q; q++)
        h = (h ^ *q) * 1099511628211ULL;
    return h ? h : 1;
}

/* Runs sql on c: when the pool prepares statements, as the statement prepared for this
 * text on this session (prepared the first time; a failed PREPARE is returned as the
 * statement's error, which it is), else unnamed. Past STMT_MAX texts, unnamed. */
static PGresult *run_sql(pg_conn *c, const char *sql, int n, const char *const *params,
                         const int *lengths, const int *formats, int result_format)
{
    if (!c->pool->prepare)
        return PQexecParams(c->conn, sql, n, NULL, params, lengths, formats, result_format);
    if (c->stmts == NULL)
        c->stmts = sx_calloc(STMT_SLOTS, sizeof(*c->stmts));
    uint64_t h = sql_hash(sql);
    size_t i = h % STMT_SLOTS;
    while (c->stmts[i].hash != 0 && (c->stmts[i].hash != h || strcmp(c->stmts[i].sql, sql) != 0))
        i = (i + 1) % STMT_SLOTS;
    stmt_entry *e = &c->stmts[i];
    char name[24];
    if (e->hash == 0) {
        if (c->nstmts >= STMT_MAX)
            return PQexecParams(c->conn, sql, n, NULL, params, lengths, formats, result_format);
        snprintf(name, sizeof(name), "sx%u", c->nstmts + 1);
        PGresult *r = PQprepare(c->conn, name, sql, n, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            return r;
        PQclear(r);
        *e = (stmt_entry){h, sx_strdup(sql), ++c->nstmts};
    } else {
        snprintf(name, sizeof(name), "sx%u", e->id);
    }
    return PQexecPrepared(c->conn, name, n, params, lengths, formats, result_format);
}

int pg_exec_ex(pg_conn *c, const char *sql, int n, const char *const *params, const int *lengths,
               const int *formats, int result_format, PGresult **out, sx_err *err)
{
    if (out)
        *out = NULL;
    PGresult *res = run_sql(c, sql, n, params, lengths, formats, result_format);
    if (pg_result_take(res, out))
        return 0;
    sx_err local;
    sx_err *e = err ? err : &local;
    int code = pg_result_error(c->conn, res, "database error", e);
    if (code == SX_EUNAVAILABLE)
        c->broken = c->lost = true;
    /* A prepared statement whose result columns changed under it (a migration altered a
     * table it reads) fails with "cached plan must not change result type" until it is
     * prepared again: replace the session, and its statements with it. */
    if (c->pool->prepare && strcmp(e->sqlstate, "0A000") == 0)
        c->broken = true;
    if (c->pool->m_errors) {
        const char *labels[] = {e->sqlstate[0] ? e->sqlstate : "none"};
        sx_metric_inc(c->pool->m_errors, labels);
    }
    PQclear(res);
    return code;
}

int pg_exec(pg_conn *c, const char *sql, int n, const char *const *params, PGresult **out,
            sx_err *err)
{
    return pg_exec_ex(c, sql, n, params, NULL, NULL, 0, out, err);
}

int pg_begin(pg_conn *c, sx_err *err)
{
    return pg_exec(c, "BEGIN", 0, NULL, NULL, err);
}

/* COMMIT of a transaction that already failed succeeds with the tag ROLLBACK: the
 * server rolled back, so that is reported as the failure it is. */
int pg_commit(pg_conn *c, sx_err *err)
{
    PGresult *res;
    int rc = pg_exec(c, "COMMIT", 0, NULL, &res, err);
    if (rc)
        return rc;
    bool rolled_back = strcmp(PQcmdStatus(res), "ROLLBACK") == 0;
    PQclear(res);
    if (rolled_back)
        return sx_err_set(err, SX_EINTERNAL,
                          "could not commit: the transaction had failed and was rolled back");
    return 0;
}

void pg_rollback(pg_conn *c)
{
    if (PQtransactionStatus(c->conn) == PQTRANS_IDLE)
        return;
    PGresult *r = PQexec(c->conn, "ROLLBACK");
    PQclear(r);
}

static bool retryable(const sx_err *e)
{
    return strcmp(e->sqlstate, "40001") == 0 || strcmp(e->sqlstate, "40P01") == 0;
}

int pg_tx(pg_pool *p, pg_tx_fn fn, void *ctx, sx_err *err)
{
    sx_err local;
    sx_err *e = err ? err : &local;
    int rc = 0;
    for (int attempt = 1; attempt <= TX_ATTEMPTS; attempt++) {
        sx_err_clear(e);
        pg_conn *c;
        rc = pg_acquire(p, &c, e);
        if (rc)
            return rc;
        rc = pg_begin(c, e);
        if (rc == 0)
            rc = fn(c, ctx, e);
        if (rc == 0)
            rc = pg_commit(c, e);
        if (rc)
            pg_rollback(c);
        pg_release(p, c);
        if (rc == 0 || !retryable(e))
            return rc;
        sx_log(SX_LOG_DEBUG, "storage", "transaction retried after %s (attempt %d)", e->sqlstate,
               attempt);
    }
    return rc;
}

const char *pg_get(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col);
}

bool pg_is_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) != 0;
}

int pg_get_i64(const PGresult *res, int row, int col, long long *out)
{
    const char *s = PQgetvalue(res, row, col);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return SX_EINTERNAL;
    *out = v;
    return 0;
}
