/*
 * server.h — the xDS gRPC server: Envoy ADS (state of the world and Delta) and
 * gateway.control.v1 (StreamConfiguration, ReportStatus) on the gRPC C core.
 *
 * One port (grpc.listen; plaintext, TLS with grpc.tls.cert_file/key_file, mTLS when
 * grpc.tls.client_ca_file is set too) serves:
 *   /envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources
 *   /envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources
 *   /gateway.control.v1.ConfigurationDiscoveryService/StreamConfiguration
 *   /gateway.control.v1.ConfigurationDiscoveryService/ReportStatus
 *
 * Clients are authenticated as xds.auth says (identity.h): a stream whose first request
 * names a node id its credentials do not cover, or a status report about one, is refused
 * with PERMISSION_DENIED, counted, and logged and audited in aggregate (server/denials.h).
 *
 * Each stream is one call object with an explicit state machine (call.c), its
 * protocol state (sotw.h, delta.h, control.h) and at most one send in flight. New
 * snapshots are built once by the publisher (publisher.h) and pushed by it into the
 * streams of their group; the push starts the send from the publishing thread under
 * the stream's lock, so no thread polls. Streams are registered by node id and group
 * (streams.h): a second stream of a node supersedes the first.
 *
 * Lifecycle: xds_server_create (nothing runs), then the supervisor component "xds"
 * (xds_sup_ops): start binds the port (a bind failure is fatal) and starts the
 * completion-queue threads, the publisher and the timeout sweeper; ready once
 * listening; stop cancels every stream (reason shutdown), shuts the gRPC server down,
 * drains the completion queue and joins every thread. xds_server_destroy afterwards.
 */
#ifndef SX_XDS_SERVER_H
#define SX_XDS_SERVER_H

#include <stdbool.h>

#include "server/base/err.h"
#include "server/base/jwt.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/nodes/status.h"
#include "server/snapshot/store.h"
#include "server/supervisor.h"
#include "storage/repo_audit.h"

typedef struct xds_server xds_server;

typedef struct xds_server_options {
    const sextant_config *config; /* grpc.listen, grpc.tls.*, xds.*, replica.id; borrowed */
    snap_store *store;            /* borrowed; snapshots to serve */
    sx_metrics *metrics;          /* borrowed; NULL allowed */
    node_status_queue *nodes;     /* borrowed; NULL: node status is not recorded */
    /* Whether a status report from node_id may be accepted although the node has no
     * stream on this replica (for instance, it is connected to another one). NULL: only
     * nodes with a stream here are known. Called from a gRPC thread; must not block. */
    bool (*known_node)(void *ctx, const char *node_id);
    void *known_node_ctx;
    /* borrowed; NULL: rollout pins are not loaded (every node follows its group) */
    pg_pool *pool;
    /* Writes the audit rows of refused clients (server/denials.h); NULL: not audited. */
    int (*audit)(void *ctx, const audit_new *row, sx_err *err);
    void *audit_ctx;
    /* Whether a proxy token is revoked (server/base/jwt.h); NULL: none is. */
    sx_jwt_revoked_fn token_revoked;
    void *token_revoked_ctx;

    /* borrowed; the certificate of TLS (server/certs.h, listener CERTS_GRPC), fetched at
     * each handshake; NULL or a listener without TLS: plaintext */
    struct certs *certs;
} xds_server_options;

/* Creates the server (nothing is bound or started; the publisher already watches the
 * store so that no snapshot is missed). Returns 0 and *out, or SX_EINVAL. */
int xds_server_create(const xds_server_options *opt, xds_server **out, sx_err *err) SX_MUSTCHECK;

/* Frees the server after it was stopped (or never started). NULL allowed. */
void xds_server_destroy(xds_server *s);

/* The supervisor callbacks of component "xds" (ctx: the xds_server). */
extern const sup_ops xds_sup_ops;

/* Creates the xDS server from srv (config, metrics, snapshot store, node status queue;
 * so after the storage wiring) and registers it with srv->sup as "xds". On success *out
 * must be freed with xds_server_destroy after sup_stop_all returned 0. */
struct sx_server;
int xds_server_register(struct sx_server *srv, xds_server **out, sx_err *err) SX_MUSTCHECK;

/* The port bound by start (useful with an ephemeral port), or 0 before. */
int xds_server_port(const xds_server *s);

/* The proxy group a node belongs to: its cluster (node.cluster on ADS, cluster on
 * gateway.control.v1) when not empty, else xds.default_group. The one place that
 * decides it (rollouts will assign per node here). The result is cluster or a string
 * owned by the server; never NULL. */
const char *xds_group_for_node(const xds_server *s, const char *node_id, const char *cluster);

#endif
