/*
 * status.h — what this replica learns about the proxies connected to it, persisted to
 * proxy_nodes / node_status through a debounced, bounded queue.
 *
 * The xDS streams report events here from their own threads and never wait for the
 * database: events are merged per node in memory and flushed by one thread every
 * flush interval, in batches. The queue is bounded (max pending nodes); when full,
 * non-critical updates are dropped and counted. Critical events (a node's first
 * connection, a NACK, a disconnect) wake the flusher at once instead of waiting for
 * the interval. Each flush also writes, in its transaction, the live events of what it
 * records (server/events.h): proxy_connected, config_applied (the acked version
 * changed), config_rejected and proxy_disconnected.
 *
 * Connects and disconnects carry the generation of their stream (a newer stream of a
 * node has a higher one, also across replicas: see xds_streams_add), and are ordered by
 * it, not by arrival: the end of a stream that was superseded never overwrites the
 * newer stream's connect, neither in the pending record nor in the database, where the
 * row keeps the generation it describes (a node can move between replicas, whose
 * flushers then write the same row).
 */
#ifndef SX_NODES_STATUS_H
#define SX_NODES_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "storage/pg_pool.h"

typedef struct node_status_queue node_status_queue;

/* Identity of a node as its first request gives it. Borrowed for the call. */
typedef struct node_identity {
    const char *node_id;    /* required */
    const char *group;      /* proxy group it was assigned */
    const char *protocol;   /* "ads-sotw", "ads-delta", "control-v1" */
    const char *user_agent; /* "envoy 1.30.1", "grpc-node-js 1.14.0", ... ("" when none) */
    const json_t *labels;   /* object of strings (from node metadata "labels"), NULL = {} */
    const json_t *metadata; /* node metadata as JSON, NULL = {} */
    const json_t *locality; /* {"region","zone","sub_zone"}, NULL = {} */
    long long stream_gen;   /* generation of the stream (> 0; higher = newer) */
} node_identity;

typedef struct node_status_options {
    pg_pool *pool;          /* borrowed */
    const char *replica_id; /* this replica */
    int flush_interval_ms;  /* debounce window; 0 = 1000 */
    int max_pending;        /* bound on nodes with unflushed updates; 0 = 10000 */
    sx_metrics *metrics;    /* NULL allowed */
} node_status_options;

/* Creates the queue and starts its flusher thread. *out freed by node_status_destroy. */
int node_status_create(const node_status_options *opt, node_status_queue **out,
                       sx_err *err) SX_MUSTCHECK;
/* Flushes what is pending (best effort, bounded by one flush), stops the thread, frees. */
void node_status_destroy(node_status_queue *q);

/* A stream for node opened (critical). */
void node_status_connected(node_status_queue *q, const node_identity *id);
/* The node's stream of generation stream_gen ended (critical); reason is a termination
 * reason label. Ignored when a newer stream of the node connected. */
void node_status_disconnected(node_status_queue *q, const char *node_id, long long stream_gen,
                              const char *reason);
/* Activity on the node's stream (any request): refreshes last_seen (debounced). */
void node_status_seen(node_status_queue *q, const char *node_id);
/* The node ACKed snapshot version of its group for one resource type (debounced). */
void node_status_ack(node_status_queue *q, const char *node_id, long long version);
/* The same for an ACK a deployment waits for (the node is pinned at that version):
 * critical, so that the wave moves on at the speed of ACKs rather than of the flush
 * interval. ACKs that arrive while a flush writes are taken by the next one, so a
 * wave of thousands of ACKs is still written in a few batches. */
void node_status_ack_awaited(node_status_queue *q, const char *node_id, long long version);
/* The node NACKed snapshot version with an error (critical). */
void node_status_nack(node_status_queue *q, const char *node_id, long long version,
                      const char *error);
/* The snapshot version last sent to the node (debounced): node_status shows it next to
 * the ACKed one, so "sent but not yet ACKed" is visible. */
void node_status_desired(node_status_queue *q, const char *node_id, long long version);

/* A data plane's health report (debounced; the newest wins). observed_at is RFC 3339
 * or NULL for "now"; all strings are copied. */
void node_status_report(node_status_queue *q, const char *node_id, bool ready, const char *version,
                        const char *message, const char *observed_at);

/* Calls fn(ctx) on the flusher thread after each flush that committed a connection, an
 * ACK, a NACK or a disconnection — what a rollout waits for (the rollout driver wakes on
 * it). fn must return at once; NULL removes the hook. */
void node_status_on_flush(node_status_queue *q, void (*fn)(void *ctx), void *ctx);

/* Forces a flush now and waits for it; for tests and shutdown. */
int node_status_flush(node_status_queue *q, sx_err *err) SX_MUSTCHECK;

#endif
