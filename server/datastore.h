/*
 * datastore.h — the daemon's storage components: the PostgreSQL pool (with the
 * migrations check), the Redis cache, the LISTEN/NOTIFY listener and the snapshot
 * store, created together and registered with the supervisor.
 *
 * Readiness, as /readyz reports it:
 *   database   the server answers and no migration is pending (re-checked every 5 s,
 *              so a database that goes away closes the gate again);
 *   listener   the LISTEN connection is up and listening on every channel;
 *   snapshots  every group's latest snapshot has been loaded once.
 *   events     the reader of the live events behind GET /api/v1/events has read its
 *              position once (server/events_feed.h).
 * The Redis cache is not a readiness dependency: without it reads go to PostgreSQL;
 * neither is "fleet", the sextant_proxies{state} gauge (server/fleet.h).
 */
#ifndef SX_SERVER_DATASTORE_H
#define SX_SERVER_DATASTORE_H

#include "server/base/err.h"

struct sx_server;

/* Creates the pool, cache, listener, snapshot repository and store and the events feed,
 * stores them in srv's storage fields, and registers the components "database",
 * "listener", "snapshots", "events" and "fleet" with srv->sup. Fails only for configuration the
 * objects refuse (SX_EINVAL), leaving srv's storage fields NULL. */
int datastore_register(struct sx_server *srv, sx_err *err) SX_MUSTCHECK;

/* Frees what datastore_register created and clears srv's storage fields. Call after
 * sup_stop_all returned 0. NULL-safe for a server that never registered. */
void datastore_release(struct sx_server *srv);

#endif
