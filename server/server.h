/*
 * server.h — the one server struct: the daemon's configuration and runtime state.
 *
 * Everything the running daemon owns hangs off one struct sx_server created by
 * `sextant serve` (after Redis's struct redisServer); there are no other mutable
 * globals. Components get the pieces they need from it when they are created and never
 * reach for the struct from elsewhere. Fields are set once during start-up, on the main
 * thread, before any component starts; afterwards the pointers themselves never change
 * (the objects they point to have their own locking).
 */
#ifndef SX_SERVER_SERVER_H
#define SX_SERVER_SERVER_H

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/supervisor.h"

struct http_server;
struct pg_pool;
struct redis_cache;
struct pg_listener;
struct snap_store;
struct snap_repo;
struct datastore;
struct node_status_queue;
struct events_feed;

struct sx_server {
    /* The loaded configuration; owned. Read-only once loaded, so any thread reads it. */
    sextant_config *config;
    /* The Prometheus registry every component registers its families in and that
     * GET /metrics renders; owned. Holds sextant_build_info and sextant_start_time_seconds. */
    sx_metrics *metrics;
    /* Starts and stops the components in order and holds the readiness gate behind
     * GET /readyz; owned. */
    sup_supervisor *sup;
    /* The HTTP server (REST, UI, /healthz, /readyz, /metrics), registered with sup as the
     * component "http"; owned. Later REST modules add their routes to it before start. */
    struct http_server *http;
    /* Wall-clock start time, seconds since the epoch (sextant_start_time_seconds). */
    double start_time;

    /* set by the storage wiring: the PostgreSQL connection pool; NULL until wired. */
    struct pg_pool *db;
    /* set by the storage wiring: the Redis hot cache; NULL when redis.url is "" or until
     * wired. */
    struct redis_cache *cache;
    /* set by the storage wiring: the LISTEN/NOTIFY listener on its own connection. */
    struct pg_listener *listener;
    /* set by the storage wiring: the latest snapshot per proxy group, shared with xDS. */
    struct snap_store *snapshots;
    /* set by the storage wiring: snapshot reads and writes (through the cache). */
    struct snap_repo *snap_repo;
    /* set by the storage wiring: node events from the xDS streams, written to
     * proxy_nodes / node_status in debounced batches (server/nodes/status.h). */
    struct node_status_queue *nodes;
    /* set by the storage wiring: its worker threads' state (server/datastore.c). */
    struct datastore *datastore;
    /* set by the storage wiring: this replica's reader of the live events, which
     * GET /api/v1/events subscribes to (server/events_feed.h); the component "events". */
    struct events_feed *events;
};

/* Creates the server around cfg (ownership passes to the server, also on failure):
 * the metrics registry with the process metrics, the supervisor (shutdown.timeout) and
 * the HTTP server with its built-in routes. Nothing is started and nothing is
 * registered with the supervisor. Returns 0 and *out, or a negative code with err. */
int sx_server_create(sextant_config *cfg, struct sx_server **out, sx_err *err) SX_MUSTCHECK;

/* Frees the HTTP server, the supervisor, the registry and the configuration. Call only
 * after sup_stop_all returned 0 (or when nothing was started); the storage fields must
 * have been released and set to NULL by the storage wiring first. NULL allowed. */
void sx_server_destroy(struct sx_server *srv);

#endif
