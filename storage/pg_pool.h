/*
 * pg_pool.h — PostgreSQL connection pool on libpq, and the query helpers every
 * repository uses. The only way Sextant speaks SQL.
 *
 * Connections are opened lazily up to the pool size and reused. A connection that
 * breaks is dropped and reopened on a later acquire. Once a connection attempt has
 * failed, acquire fails fast with SX_EUNAVAILABLE (the error carries libpq's whole
 * message: one line per host of a multi-host URL) and a background thread retries,
 * spaced by an exponential back-off (the pg_link's bounds, 50 ms doubling to 1 s by
 * default), until the server answers; a connection any other part of the daemon opens
 * to the server (the listener) ends the back-off at once. Every connection carries the
 * configured statement_timeout. Queries are parameterised only: there is no helper
 * that takes a formatted SQL string.
 *
 * Thread safety: the pool is thread-safe; a pg_conn belongs to the thread that
 * acquired it until it is released.
 */
#ifndef SX_STORAGE_PG_POOL_H
#define SX_STORAGE_PG_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/base/seal.h"
#include "storage/pg_link.h"

typedef struct pg_pool pg_pool;
typedef struct pg_conn pg_conn;

typedef struct pg_pool_options {
    const char *url;              /* libpq URL or keyword string; required */
    int size;                     /* maximum open connections, >= 1 */
    int connect_timeout_ms;       /* per host tried (libpq connect_timeout: whole seconds,
                                   * at least 2); 0 = 5000 */
    int statement_timeout_ms;     /* server-side statement_timeout; 0 = none */
    bool prepared_statements;     /* prepare each statement text once per connection and
                                   * run it by name after (false: unnamed, parsed and
                                   * planned every time, as a transaction pooler needs) */
    int acquire_timeout_ms;       /* how long acquire waits for a free connection; 0 = 10000 */
    const char *application_name; /* shown in pg_stat_activity; NULL = "sextant" */
    sx_metrics *metrics;          /* NULL allowed: no metrics */
    pg_link *link; /* borrowed, shared with the listener; NULL: a link of the pool's own
                    * with the default back-off */
} pg_pool_options;

/* Creates a pool (copies the options; opens no connection yet). Never fails for
 * valid options; returns SX_EINVAL for a missing URL or size < 1. *out is owned by the
 * caller and freed with pg_pool_destroy. */
int pg_pool_create(const pg_pool_options *opt, pg_pool **out, sx_err *err) SX_MUSTCHECK;
/* Stops the reconnector (waiting for an attempt in progress, at most connect_timeout),
 * closes every idle connection and frees the pool. Every connection must have been
 * released first. NULL allowed. */
void pg_pool_destroy(pg_pool *p);

/* Acquires a connection, opening one when none is idle and the pool is not full, else
 * waiting up to acquire_timeout_ms. Fails with SX_EUNAVAILABLE (server unreachable,
 * err says why) or SX_ETIMEOUT (pool exhausted). On failure *out is NULL. */
int pg_acquire(pg_pool *p, pg_conn **out, sx_err *err) SX_MUSTCHECK;
/* Returns a connection to the pool. A connection left inside a transaction is rolled
 * back; a broken one is closed. NULL allowed. */
void pg_release(pg_pool *p, pg_conn *c);

/* Checks the server answers (acquire + SELECT 1 + release). */
int pg_pool_ping(pg_pool *p, sx_err *err) SX_MUSTCHECK;
/* The URL the pool was created with (not redacted: never log it as is). */
const char *pg_pool_url(const pg_pool *p);

/* The underlying libpq connection (owned by c), for LISTEN-style uses. */
PGconn *pg_conn_raw(pg_conn *c);

/* What the repositories do with the private keys of configs and snapshots
 * (storage/secret_seal.h): seal them with keys (borrowed; must outlive the pool), or,
 * keys NULL, store them as they are when allow_plaintext, else refuse them. Call once,
 * before the pool is shared; a new pool refuses them. */
void pg_pool_set_secrets(pg_pool *p, const sx_keyring *keys, bool allow_plaintext);
/* The keyring of the pool c came from (NULL: none) and, into *allow_plaintext (NULL
 * allowed), whether private keys may be stored unsealed. */
const sx_keyring *pg_conn_secrets(const pg_conn *c, bool *allow_plaintext);
/* The same for the pool itself. */
const sx_keyring *pg_pool_secrets(const pg_pool *p, bool *allow_plaintext);

/*
 * Runs one parameterised statement. params are n text-format values (NULL entries
 * are SQL NULL). On success returns 0 and, when out is not NULL, *out is a PGresult
 * the caller frees with PQclear. On failure *out is NULL and the code is mapped from
 * SQLSTATE: connection loss → SX_EUNAVAILABLE; unique/exclusion violation, serialization
 * failure, deadlock → SX_ECONFLICT; statement timeout / cancel → SX_ETIMEOUT; data
 * exceptions, check/foreign-key/not-null violations → SX_EINVAL; insufficient privilege
 * or a raised exception (P0001) → SX_EFORBIDDEN / SX_EINVAL; anything else → SX_EINTERNAL;
 * err->sqlstate holds the SQLSTATE and detail/hint come from the server.
 */
int pg_exec(pg_conn *c, const char *sql, int n, const char *const *params, PGresult **out,
            sx_err *err) SX_MUSTCHECK;

/* Like pg_exec with per-parameter lengths and formats (1 = binary, for bytea) and a
 * result format (1 = binary results). lengths/formats may be NULL for all-text. */
int pg_exec_ex(pg_conn *c, const char *sql, int n, const char *const *params, const int *lengths,
               const int *formats, int result_format, PGresult **out, sx_err *err) SX_MUSTCHECK;

/* Transactions on one connection. pg_rollback is best effort and never fails. */
int pg_begin(pg_conn *c, sx_err *err) SX_MUSTCHECK;
int pg_commit(pg_conn *c, sx_err *err) SX_MUSTCHECK;
void pg_rollback(pg_conn *c);

/* Runs fn inside BEGIN … COMMIT on a pooled connection, rolling back when fn fails.
 * A serialization failure or deadlock (SQLSTATE 40001/40P01) reruns the whole
 * transaction up to 3 times. fn must be repeatable. Returns fn's or the commit's code. */
typedef int (*pg_tx_fn)(pg_conn *c, void *ctx, sx_err *err);
int pg_tx(pg_pool *p, pg_tx_fn fn, void *ctx, sx_err *err) SX_MUSTCHECK;

/* Maps a failed result (or a connection with no result) to an sx_err code; exposed
 * for the listener, which runs its own connection. res may be NULL. */
int pg_result_error(PGconn *conn, const PGresult *res, const char *what, sx_err *err);
/* Whether res (NULL allowed) is a successful command or query result; if so it goes to
 * *out, or is cleared when out is NULL. A failed result stays with the caller, for
 * pg_result_error and then PQclear. */
bool pg_result_take(PGresult *res, PGresult **out);

/* Helpers for reading results: value of row/col as a string ("" when NULL), and
 * whether it is NULL. */
const char *pg_get(const PGresult *res, int row, int col);
bool pg_is_null(const PGresult *res, int row, int col);
/* Parses an integer column; returns 0 on success, SX_EINTERNAL when it is not one. */
int pg_get_i64(const PGresult *res, int row, int col, long long *out) SX_MUSTCHECK;

#endif
