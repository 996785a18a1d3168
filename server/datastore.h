/*
 * datastore.h — the component "database": watches that PostgreSQL answers and that no
 * migration is pending, and holds the readiness gate closed while either is untrue.
 *
 * A thread pings the database through the pool and checks storage/migrate's status every
 * 5 s while all is well, and with back-off (the database link's bounds: 50 ms doubling to
 * 1 s by default) while it is not, so a database that goes away closes /readyz again and
 * one that comes back opens it. One
 * log line per distinct problem, not one per retry. Its verdict (datastore_ready) is also
 * what the snapshot loader waits for before its first load.
 *
 * Readiness of the storage side, as /readyz reports it: "database" (this component),
 * "listener" (the LISTEN connection is up on every channel), "snapshots" (every group's
 * snapshot loaded once: server/snapshot/loader.h) and "events" (server/events_feed.h).
 * The Redis cache is not a readiness dependency: without it reads go to PostgreSQL;
 * neither is "fleet" (server/fleet.h) nor "rollouts".
 */
#ifndef SX_SERVER_DATASTORE_H
#define SX_SERVER_DATASTORE_H

#include <stdbool.h>

#include "server/supervisor.h"
#include "storage/pg_pool.h"

typedef struct datastore datastore;

/* Creates the watcher of pool (borrowed), with the back-off bounds of link (borrowed),
 * which reports to sup (borrowed) as the component "database". Never NULL; free with
 * datastore_destroy. */
datastore *datastore_create(pg_pool *pool, pg_link *link, sup_supervisor *sup);

/* Frees the watcher; its thread must have stopped (sup_stop_all). NULL allowed. */
void datastore_destroy(datastore *d);

/* The watcher's last verdict: the database answered and no migration was pending. Any
 * thread. ctx is the datastore (the shape of snap_loader_options.database_ready). */
bool datastore_ready(void *ctx);

/* The component "database", for sup_register with sup_thread_ops: its thread is the
 * watcher, its readiness datastore_ready. */
sup_thread *datastore_component(datastore *d);

#endif
