/*
 * pg_lock.c — named session-level advisory locks on a dedicated PostgreSQL connection,
 * with a deadline on every statement (see pg_lock.h for the lease this makes).
 */
#include "storage/pg_lock.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/mem.h"
#include "storage/pg_link.h"

struct pg_lock_session {
    PGconn *conn;
    int check_timeout_ms;
    int pid;
    bool lost;
};

/* libpq's message in one line, every line of it kept (one per host of a multi-host
 * URL). */
static void first_line(char *dst, size_t n, const char *src)
{
    pg_link_error_text(dst, n, src);
}

static int lost(pg_lock_session *s, sx_err *err, const char *what, const char *why)
{
    s->lost = true;
    return sx_err_set(err, SX_EUNAVAILABLE, "the lock session is lost (%s): %s", what, why);
}

/* Runs one parameterised statement within the session's deadline; *out receives the
 * result of a successful one (the caller clears it). */
static int run(pg_lock_session *s, const char *what, const char *sql, int n,
               const char *const *params, PGresult **out, sx_err *err)
{
    *out = NULL;
    if (s->lost)
        return sx_err_set(err, SX_EUNAVAILABLE, "the lock session is lost");
    char why[256];
    if (!PQsendQueryParams(s->conn, sql, n, NULL, params, NULL, NULL, 0)) {
        first_line(why, sizeof(why), PQerrorMessage(s->conn));
        return lost(s, err, what, why);
    }
    int64_t deadline = sx_monotonic_ms() + s->check_timeout_ms;
    while (PQisBusy(s->conn)) {
        int64_t left = deadline - sx_monotonic_ms();
        if (left <= 0) {
            snprintf(why, sizeof(why), "no answer within %d ms", s->check_timeout_ms);
            return lost(s, err, what, why);
        }
        struct pollfd pfd = {PQsocket(s->conn), POLLIN, 0};
        int rc = poll(&pfd, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || (rc > 0 && !PQconsumeInput(s->conn))) {
            first_line(why, sizeof(why), rc < 0 ? strerror(errno) : PQerrorMessage(s->conn));
            return lost(s, err, what, why);
        }
    }
    PGresult *r, *res = NULL;
    while ((r = PQgetResult(s->conn)) != NULL) {
        if (res == NULL)
            res = r;
        else
            PQclear(r);
    }
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        first_line(why, sizeof(why), PQerrorMessage(s->conn));
        PQclear(res);
        if (PQstatus(s->conn) != CONNECTION_OK)
            return lost(s, err, what, why);
        return sx_err_set(err, SX_EINTERNAL, "%s failed: %s", what, why);
    }
    *out = res;
    return 0;
}

int pg_lock_open(const pg_lock_options *opt, pg_lock_session **out, sx_err *err)
{
    *out = NULL;
    if (opt == NULL || opt->url == NULL || opt->url[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "the lock session needs a database URL");
    int lease = opt->lease_ms > 0 ? opt->lease_ms : 10000;
    int check = opt->check_timeout_ms > 0 ? opt->check_timeout_ms : lease / 3;
    int connect_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 5000;
    char connect_s[16], user_timeout[16];
    snprintf(connect_s, sizeof(connect_s), "%d", connect_ms < 2000 ? 2 : (connect_ms + 999) / 1000);
    snprintf(user_timeout, sizeof(user_timeout), "%d", check);
    /* Client side: a socket with unacknowledged data for check_timeout_ms is closed by
     * the kernel. The URL comes after so that an operator's own settings win. */
    const char *keys[] = {"keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          "connect_timeout",
                          "dbname",
                          "application_name",
                          "client_encoding",
                          NULL};
    const char *vals[] = {
        "1",          "1",
        "1",          "3",
        user_timeout, connect_s,
        opt->url,     opt->application_name ? opt->application_name : "sextant-lock",
        "UTF8",       NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        char why[SX_ERR_MESSAGE_MAX];
        first_line(why, sizeof(why), conn ? PQerrorMessage(conn) : "out of memory");
        PQfinish(conn);
        return sx_err_set(err, SX_EUNAVAILABLE, "could not open the lock session: %s", why);
    }
    pg_lock_session *s = sx_calloc(1, sizeof(*s));
    s->conn = conn;
    s->check_timeout_ms = check;
    /* Server side: the session of a holder the server has not heard from for lease_ms
     * is closed, which frees its locks. Keepalive probes start after a third of the
     * lease, one a second, the last unanswered one ending the session. */
    char user_ms[16], idle[16], count[16];
    int idle_s = lease / 3000 > 0 ? lease / 3000 : 1;
    int count_n = (lease / 1000 - idle_s) > 0 ? lease / 1000 - idle_s : 1;
    snprintf(user_ms, sizeof(user_ms), "%d", lease);
    snprintf(idle, sizeof(idle), "%d", idle_s);
    snprintf(count, sizeof(count), "%d", count_n);
    const char *params[] = {user_ms, idle, count};
    PGresult *r;
    int rc = run(s, "session settings",
                 "SELECT set_config('tcp_user_timeout', $1, false), "
                 "set_config('tcp_keepalives_idle', $2, false), "
                 "set_config('tcp_keepalives_interval', '1', false), "
                 "set_config('tcp_keepalives_count', $3, false), pg_backend_pid()",
                 3, params, &r, err);
    if (rc != 0) {
        pg_lock_close(s);
        return rc;
    }
    s->pid = atoi(PQgetvalue(r, 0, 4));
    PQclear(r);
    *out = s;
    return 0;
}

int pg_lock_try(pg_lock_session *s, const char *name, bool *held, sx_err *err)
{
    *held = false;
    const char *params[] = {name};
    PGresult *r;
    int rc = run(s, "pg_try_advisory_lock", "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                 1, params, &r, err);
    if (rc != 0)
        return rc;
    *held = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return 0;
}

int pg_lock_release(pg_lock_session *s, const char *name, sx_err *err)
{
    const char *params[] = {name};
    PGresult *r;
    int rc = run(s, "pg_advisory_unlock", "SELECT pg_advisory_unlock(hashtextextended($1, 0))", 1,
                 params, &r, err);
    PQclear(r);
    return rc;
}

int pg_lock_check(pg_lock_session *s, sx_err *err)
{
    PGresult *r;
    int rc = run(s, "check", "SELECT 1", 0, NULL, &r, err);
    PQclear(r);
    return rc;
}

int pg_lock_backend_pid(const pg_lock_session *s)
{
    return s ? s->pid : 0;
}

void pg_lock_close(pg_lock_session *s)
{
    if (s == NULL)
        return;
    PQfinish(s->conn);
    sx_free(s);
}
