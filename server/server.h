/*
 * server.h — the one server struct: the daemon's configuration and runtime state.
 *
 * Everything the running daemon owns hangs off one struct sx_server (after Redis's
 * struct redisServer); there are no other mutable globals. sx_server_create makes the
 * runtime every component stands on (configuration, metrics registry, supervisor);
 * `sextant serve` (server/main.c, the composition root) then creates every component
 * into the fields below, registers each with the supervisor, and frees them again in
 * reverse order after the supervisor has stopped them. Components get the pieces they
 * need when they are created and never reach for the struct from elsewhere.
 *
 * Every field is set once during start-up, on the main thread, before any component
 * starts; afterwards the pointers themselves never change (the objects they point to
 * have their own locking), so any thread may read them. The component fields are NULL
 * until main.c has created them and again after it has freed them.
 */
#ifndef SX_SERVER_SERVER_H
#define SX_SERVER_SERVER_H

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/supervisor.h"

struct pg_pool;
struct pg_link;
struct redis_cache;
struct redis_bucket;
struct pg_listener;
struct datastore;
struct snap_repo;
struct snap_store;
struct snap_loader;
struct revocations;
struct node_status_queue;
struct events_feed;
struct fleet_monitor;
struct alerts;
struct leader;
struct replicas_beat;
struct rollout_driver;
struct xds_server;
struct http_server;
struct certs;
struct certs_managed;
struct rest_api;
struct static_ui;

struct sx_server {
    /* ---- the runtime (sx_server_create) */

    /* The loaded configuration; owned. Read-only once loaded, so any thread reads it. */
    sextant_config *config;
    /* The Prometheus registry every component registers its families in and that
     * GET /metrics renders; owned. Holds sextant_build_info and sextant_start_time_seconds. */
    sx_metrics *metrics;
    /* Starts and stops the components in registration order and holds the readiness gate
     * behind GET /readyz; owned. */
    sup_supervisor *sup;
    /* Wall-clock start time, seconds since the epoch (sextant_start_time_seconds). */
    double start_time;

    /* ---- storage: the only code that speaks SQL or RESP (storage/) */

    /* What the pool and the listener share of the PostgreSQL server: which one, the
     * reconnect back-off (database.reconnect_backoff_*), and that a connection one of
     * them makes ends the other's back-off (storage/pg_link.h). */
    struct pg_link *db_link;
    /* The PostgreSQL connection pool (database.*) every component and handler borrows
     * connections from. */
    struct pg_pool *db;
    /* The keyring sealing private keys at rest (secrets.key_file, server/secrets.h) that
     * db's repositories use; NULL without one. Freed after db. */
    struct sx_keyring *secrets;
    /* The Redis hot cache in front of the snapshots; a cache that is always empty when
     * redis.url is "". */
    struct redis_cache *cache;
    /* The API rate limits' buckets in Redis (redis.url, on a connection of its own with
     * ratelimit.redis_timeout); takes are skipped when redis.url is "". */
    struct redis_bucket *limits;
    /* LISTEN/NOTIFY on a connection of its own; the component "listener", ready once it
     * listens on every channel. Its callbacks only enqueue (see loader and events). */
    struct pg_listener *listener;
    /* The component "database": watches that PostgreSQL answers and no migration is
     * pending (server/datastore.h). */
    struct datastore *datastore;

    /* ---- the domain (server/) */

    /* Snapshot reads and writes through the cache (storage/repo_snapshots.h). */
    struct snap_repo *snap_repo;
    /* The latest snapshot of every proxy group held by this replica, shared with the xDS
     * streams (server/snapshot/store.h). */
    struct snap_store *snapshots;
    /* The component "snapshots": the worker that loads snapshots into the store at
     * start-up, on NOTIFY and after a resync, and runs the rollout pins' reloads, all off
     * the LISTEN thread (server/snapshot/loader.h). */
    struct snap_loader *loader;
    /* The revoked bearer tokens every token verification asks (REST and xDS), reloaded
     * through the loader on NOTIFY (server/revocations.h). */
    struct revocations *revocations;
    /* Node events from the xDS streams, written to proxy_nodes / node_status in debounced
     * batches (server/nodes/status.h). */
    struct node_status_queue *nodes;
    /* The component "events": this replica's reader of the live events, which
     * GET /api/v1/events subscribes to (server/events_feed.h). */
    struct events_feed *events;
    /* The component "fleet": the sextant_proxies gauge and the stale-proxy sweep
     * (server/fleet.h). */
    struct fleet_monitor *fleet;
    /* The components "alerts" and "alert_webhooks": Sextant's own alert rules, evaluated
     * by the leader, and their delivery to the webhooks (server/alerts.h). */
    struct alerts *alerts;
    /* The component "rollouts": moves deployments forward (server/rollout/driver.h). */
    struct rollout_driver *rollouts;
    /* The component "xds": the gRPC server of ADS and gateway.control.v1
     * (server/xds/server.h). */
    struct xds_server *xds;
    /* The component "leader": whether this replica does leader-only work — the fleet
     * sweep, the replicas clean-up, the Kubernetes writes (server/leader.h). Every
     * replica takes part; one without a database URL never leads. */
    struct leader *leader;
    /* The component "replicas": this replica's heartbeat in the replicas table
     * (server/replicas.h). */
    struct replicas_beat *replicas;
    /* The component "kubernetes" (k8s.enabled only): the Gateway API source
     * (server/k8s/controller.h). */
    struct k8s_controller *k8s;

    /* The component "certs": the serving certificates of both listeners, reloaded when
     * their files change or on SIGHUP, and their expiry (server/certs.h). */
    struct certs *certs;
    /* The component "tls_managed" (tls.managed only): issues the serving certificate,
     * shares it through the database, and renews it on the leader
     * (server/certs_managed.h). */
    struct certs_managed *tls_managed;

    /* ---- HTTP (api/) */

    /* The component "http": REST, UI, /healthz, /readyz, /metrics (api/http.h). It is
     * registered first so that /healthz answers while the rest connects. */
    struct http_server *http;
    /* The REST API under /api/v1: auth, RBAC, rate limits, audit and the handlers, whose
     * routes are added to http before it starts (api/rest.h). */
    struct rest_api *api;
    /* The web UI's static files, served by http (api/static.h). */
    struct static_ui *ui;
};

/* Creates the server around cfg (ownership passes to the server, also on failure): the
 * metrics registry with the process metrics and the supervisor (shutdown.timeout). Every
 * component field is NULL: main.c creates them. Returns 0 and *out, or a negative code
 * with err. */
int sx_server_create(sextant_config *cfg, struct sx_server **out, sx_err *err) SX_MUSTCHECK;

/* Frees the supervisor, the registry and the configuration. Call only after sup_stop_all
 * returned 0 (or when nothing was started), once every component has been freed and its
 * field set to NULL. NULL allowed. */
void sx_server_destroy(struct sx_server *srv);

#endif
