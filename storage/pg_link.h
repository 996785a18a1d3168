/*
 * pg_link.h — the one picture every connection of the daemon shares of its PostgreSQL
 * server: which server it reached last, whether a connection was lost, and the bounds of
 * the reconnect back-off.
 *
 * The pool (storage/pg_pool.h) and the listener (storage/pg_listener.h) each run their
 * own back-off, with the bounds the link holds. Each of them reports here: every
 * connection that succeeds (pg_link_up) and every attempt that fails or connection that
 * is lost (pg_link_down). A success after a loss — whichever connection made it — is the
 * news that the database is back: the link's generation moves on and every watcher is
 * called, so every back-off ends at once instead of running out its timer. The first
 * connection of each kind, any reconnection, and a connection to a server other than the
 * previous one (a failover behind a multi-host URL, a DNS name or a virtual IP) are
 * logged with the server's host and port.
 *
 * Metrics: sextant_db_server_info{host,port} (1 for the server of the last successful
 * connection, 0 for one used before) and sextant_db_reconnects_total{connection}.
 *
 * Thread safety: every function is thread-safe. Watchers are called on the thread that
 * connected, with no lock of the link held; they must only wake their owner.
 */
#ifndef SX_STORAGE_PG_LINK_H
#define SX_STORAGE_PG_LINK_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/base/metrics.h"

typedef struct pg_link pg_link;

typedef struct pg_link_options {
    int backoff_min_ms;  /* first wait before reconnecting; 0 = 50 */
    int backoff_max_ms;  /* longest wait; 0 = 1000; raised to the minimum when below it */
    sx_metrics *metrics; /* NULL allowed: no metrics */
} pg_link_options;

/* A new link (options copied); never NULL. Free with pg_link_destroy once no pool or
 * listener uses it. */
pg_link *pg_link_create(const pg_link_options *opt);
/* Frees the link. NULL allowed. */
void pg_link_destroy(pg_link *k);
/* The link a pool or a listener uses: given (borrowed) when not NULL, else a new one
 * with default options and metrics m, which sets *own: the caller destroys it. */
pg_link *pg_link_given_or_own(pg_link *given, sx_metrics *m, bool *own);

/* The back-off step after current_ms (0: the first failure), within the link's bounds. */
int pg_link_backoff_next(const pg_link *k, int current_ms);
/* The bounds of the back-off: the shortest step (also the wait after a connection that
 * was up is lost) and the longest. */
int pg_link_backoff_min(const pg_link *k);
int pg_link_backoff_max(const pg_link *k);

/* Generation of the link: moves on each time a connection succeeds after one failed or
 * was lost. A back-off that began under an older generation is over. */
unsigned long pg_link_generation(pg_link *k);

/* connection (a short static name: "pool", "listener") connected to conn's server. Logs
 * and counts as described above; ends every back-off when something was down. */
void pg_link_up(pg_link *k, const char *connection, PGconn *conn);
/* connection failed to connect, or lost its connection (its owner logs why). */
void pg_link_down(pg_link *k, const char *connection);

/* Calls fn(ctx) each time the generation moves on. Returns 0, or -1 when the (small)
 * table of watchers is full. */
int pg_link_watch(pg_link *k, void (*fn)(void *ctx), void *ctx);
/* Removes a watcher (same fn and ctx); returns once no call of it is running. */
void pg_link_unwatch(pg_link *k, void (*fn)(void *ctx), void *ctx);

/* libpq's error text made one line: every line kept (a multi-host URL gives one per
 * host), joined with "; ", trailing newlines and spaces dropped, truncated to n - 1
 * bytes. src NULL gives "". Returns dst. */
char *pg_link_error_text(char *dst, size_t n, const char *src);

#endif
