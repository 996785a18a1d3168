/*
 * pg_lock.h — PostgreSQL session-level advisory locks on a connection of their own:
 * the database is the coordinator of work that must run on one replica at a time.
 *
 * A session-level advisory lock lasts as long as the session that took it, so the
 * session is the lease: when the holder dies, or is cut off long enough for the server
 * to drop its session, the lock is free for another replica. Two settings bound how
 * long that takes, and both are set when the session opens:
 *   - server side, tcp_user_timeout and the TCP keepalives of the session's socket are
 *     set so that PostgreSQL closes the session of a holder it has not heard from for
 *     lease_ms;
 *   - client side, every statement (pg_lock_try, pg_lock_check) has a deadline of
 *     check_timeout_ms, after which the session counts as lost and is closed.
 * With check_timeout_ms well below lease_ms, a holder cut off from the database learns
 * it has lost the lock before the server lets another replica take it.
 *
 * Locks are named; the key is PostgreSQL's hashtextextended of the name (the name is
 * a query parameter, never formatted into SQL).
 *
 * Thread safety: a session belongs to one thread at a time.
 */
#ifndef SX_STORAGE_PG_LOCK_H
#define SX_STORAGE_PG_LOCK_H

#include <stdbool.h>

#include "server/base/err.h"

typedef struct pg_lock_session pg_lock_session;

typedef struct pg_lock_options {
    const char *url;              /* libpq URL or keyword string; required */
    const char *application_name; /* shown in pg_stat_activity; NULL = "sextant-lock" */
    int connect_timeout_ms;       /* 0 = 5000 */
    int lease_ms;                 /* how long the server keeps a silent session; 0 = 10000 */
    int check_timeout_ms;         /* deadline of each statement; 0 = lease_ms / 3 */
} pg_lock_options;

/* Opens a session (blocking, at most connect_timeout_ms plus one statement's deadline).
 * SX_EINVAL without a URL, SX_EUNAVAILABLE when the server cannot be reached (err says
 * why). *out is owned by the caller, closed with pg_lock_close. */
int pg_lock_open(const pg_lock_options *opt, pg_lock_session **out, sx_err *err) SX_MUSTCHECK;

/* Tries to take the named lock without waiting: *held is true when this session holds
 * it now. Locks stack: a session that takes one twice must release it twice, so a
 * holder checks the session (pg_lock_check) rather than taking it again. An error (SX_EUNAVAILABLE)
 * means the session is lost: close it; any lock it held is gone or going. */
int pg_lock_try(pg_lock_session *s, const char *name, bool *held, sx_err *err) SX_MUSTCHECK;

/* Releases the named lock if this session holds it. */
int pg_lock_release(pg_lock_session *s, const char *name, sx_err *err) SX_MUSTCHECK;

/* One round trip within the deadline: 0 while the session (and so every lock it holds)
 * is alive, SX_EUNAVAILABLE once it is lost. */
int pg_lock_check(pg_lock_session *s, sx_err *err) SX_MUSTCHECK;

/* The server process id of the session (pg_backend_pid), for logs and tests. */
int pg_lock_backend_pid(const pg_lock_session *s);

/* Ends the session, which releases every lock it holds. NULL allowed. */
void pg_lock_close(pg_lock_session *s);

#endif
