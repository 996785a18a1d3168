/*
 * pg_listener.h — PostgreSQL LISTEN/NOTIFY on a dedicated connection, with a thread
 * that dispatches notifications to subscribers and tells them to resynchronise after
 * the connection was lost.
 *
 * The listener owns one libpq connection of its own (not from the pool: a pooled
 * connection would lose its LISTENs when it is handed to someone else) and one
 * thread. The thread waits on the connection's socket and on a wake-up pipe, so
 * pg_listener_stop returns at once even while connecting or backing off.
 *
 * Resynchronisation: notifications sent while the listener is disconnected are lost
 * (PostgreSQL queues them only for sessions that are listening). So after every
 * reconnection the thread first re-issues LISTEN for every channel and THEN calls
 * every subscriber's on_resync, in that order, so a change committed after the
 * resync started is either seen by the reload or arrives as a notification. The very
 * first connection does not call on_resync: nothing was being listened to before it.
 * A component that loads state at start-up must therefore load it only after
 * pg_listener_connected() is true (pg_listener_wait_connected), so that no change
 * can fall between its load and the LISTEN.
 *
 * Callbacks run on the listener thread, one at a time, in subscription order; they
 * must not block for long (every other notification waits) and must not call
 * pg_listener_stop or pg_listener_destroy. They may call pg_listener_subscribe.
 *
 * Thread safety: all functions are thread-safe except destroy, which must not race
 * with any other call.
 */
#ifndef SX_STORAGE_PG_LISTENER_H
#define SX_STORAGE_PG_LISTENER_H

#include <stdbool.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "storage/pg_link.h"
#include "storage/pg_pool.h"

typedef struct pg_listener pg_listener;

typedef struct pg_listener_options {
    const char *url;              /* libpq URL or keyword string; required */
    const char *application_name; /* shown in pg_stat_activity; NULL = "sextant-listener" */
    int connect_timeout_ms;       /* per host of a connection attempt; 0 = 5000 */
    sx_metrics *metrics;          /* NULL allowed: no metrics */
    pg_link *link; /* borrowed, shared with the pool: back-off bounds, and a connection
                    * the pool makes ends the listener's back-off; NULL: its own */
} pg_listener_options;

/* A notification: channel as given to pg_listener_subscribe, payload "" when none.
 * Both strings are valid only during the call. */
typedef void (*pg_listener_notify_fn)(void *ctx, const char *channel, const char *payload);
/* The connection was re-established: notifications may have been missed. */
typedef void (*pg_listener_resync_fn)(void *ctx);

/* Creates a stopped listener (copies the options; opens no connection). Returns
 * SX_EINVAL for a missing URL, SX_EINTERNAL when its wake-up pipe cannot be created.
 * *out is owned by the caller, freed with pg_listener_destroy; NULL on failure. */
int pg_listener_create(const pg_listener_options *opt, pg_listener **out, sx_err *err) SX_MUSTCHECK;

/*
 * Subscribes to channel (1 to 63 bytes, case-sensitive: it is quoted, not folded).
 * on_notify is required; on_resync may be NULL. ctx is passed back untouched and must
 * stay valid until pg_listener_stop has returned; subscriptions last until destroy.
 * Several subscribers may share a channel. May be called before or after start: when
 * the listener is connected, this returns once the LISTEN is active, so a
 * notification committed after the return is delivered. Fails with SX_EINVAL for a
 * bad channel or a NULL on_notify (and then never calls the callbacks).
 */
int pg_listener_subscribe(pg_listener *l, const char *channel, pg_listener_notify_fn on_notify,
                          pg_listener_resync_fn on_resync, void *ctx, sx_err *err) SX_MUSTCHECK;

/* Starts the thread, which connects (retrying with the link's back-off, 50 ms doubling
 * to 1 s by default, while the server is unreachable; a connection the pool makes ends
 * the back-off at once). Does not wait for the connection. A listener is
 * started at most once: SX_EINVAL when already started; SX_EINTERNAL when the thread
 * cannot be created. */
int pg_listener_start(pg_listener *l, sx_err *err) SX_MUSTCHECK;

/* Stops the thread and closes the connection; returns once the thread has exited
 * (promptly: the thread is woken, never waited out). No callback runs after it
 * returns. Idempotent; a never-started listener is fine. */
void pg_listener_stop(pg_listener *l);

/* Stops (if needed) and frees the listener. NULL allowed. */
void pg_listener_destroy(pg_listener *l);

/* Whether the connection is up with every channel listened to (readiness). */
bool pg_listener_connected(pg_listener *l);

/* Waits up to timeout_ms for pg_listener_connected; returns its value. */
bool pg_listener_wait_connected(pg_listener *l, int timeout_ms);

/* Sends a notification (SELECT pg_notify($1, $2), parameterised) on a pooled
 * connection. Inside a transaction it is delivered at commit, and not at all on
 * rollback. payload NULL means "". PostgreSQL refuses payloads of 8000 bytes or more
 * (SX_EINVAL). */
int pg_notify(pg_conn *c, const char *channel, const char *payload, sx_err *err) SX_MUSTCHECK;

#endif
