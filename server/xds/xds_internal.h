/*
 * xds_internal.h — what the modules of the xDS engine share: the server struct, the
 * completion-queue tags and the debug-line macro. Not included outside server/xds.
 *
 * The engine is one gRPC server (server.c: accepting, completion-queue threads,
 * timeouts, start and stop) whose streams are call objects (call.c: lifecycle,
 * batches, sends); a stream's requests are handled by ads.c, their ACKs and NACKs
 * accounted for by acks.c, status reports checked by report.c, and the publisher's
 * snapshots and rollout pins reach the streams through serve.c. Every batch started on
 * a call carries an xds_tag naming what completed and on which object, so the
 * completion-queue threads dispatch without allocating per operation.
 */
#ifndef SX_XDS_INTERNAL_H
#define SX_XDS_INTERNAL_H

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/base/log.h"
#include "server/config.h"
#include "server/denials.h"
#include "server/xds/identity.h"
#include "server/xds/metrics.h"
#include "server/xds/names.h"
#include "server/xds/pins.h"
#include "server/xds/publisher.h"
#include "server/xds/server.h"
#include "server/xds/streams.h"

/* The component name of every log line of the engine. */
#define XDS_LOG_COMPONENT "xds"

/* The gRPC methods served (server.c): SotW, Delta, StreamConfiguration, ReportStatus. */
#define XDS_METHOD_COUNT 4

typedef enum xds_tag_kind {
    XDS_TAG_ACCEPT,   /* a request slot got a call (rpc_slot) */
    XDS_TAG_RECV,     /* RECV_MESSAGE of a stream (xds_call) */
    XDS_TAG_SEND,     /* SEND_MESSAGE of a stream */
    XDS_TAG_CLOSE,    /* RECV_CLOSE_ON_SERVER of a stream: the call is over */
    XDS_TAG_STATUS,   /* SEND_STATUS_FROM_SERVER of a stream ending normally */
    XDS_TAG_UNARY,    /* the one batch of a ReportStatus call (xds_unary_call) */
    XDS_TAG_SHUTDOWN, /* grpc_server_shutdown_and_notify finished (xds_server) */
} xds_tag_kind;

typedef struct xds_tag {
    xds_tag_kind kind;
    void *obj;
} xds_tag;

/* The server: configuration, the shared tables, the gRPC objects and the threads. */
struct xds_server {
    xds_server_options o;
    _Atomic uint64_t tls_generation; /* the certificate version gRPC serves (0: none yet) */
    const sextant_config *cfg;
    xds_metrics metrics;
    xds_streams *streams;
    xds_names *names; /* subscribed resource names, shared by every stream */
    xds_pub *pub;
    xds_pins *pins;          /* rollout pins: nodes served a version other than the current */
    pthread_mutex_t pins_mu; /* serialises pin reloads */
    char *control_plane_id;  /* ControlPlane.identifier in responses */
    char *listen;            /* grpc.listen as configured */
    xds_ident *ident;        /* xds.auth: who may speak for which node ids */
    denials *denials;        /* refusals for credentials: logged and audited in aggregate */

    grpc_server *server;
    grpc_completion_queue **cqs; /* ncqs queues; calls are spread over them */
    int ncqs;
    void *methods[XDS_METHOD_COUNT];
    struct rpc_slot *slots;
    size_t nslots;
    struct cq_worker *workers; /* worker i polls cqs[i] */
    int nthreads;              /* workers started */
    int port;
    bool grpc_initialised;
    atomic_bool running; /* start() succeeded, stop() not yet called */
    atomic_bool stopping;

    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;
    bool shutdown_seen; /* the shutdown tag came back */
    size_t calls_live;  /* xds_call objects not yet freed (stop waits for none) */
    bool sweeper_running;
    pthread_t sweeper;
    int64_t last_touch_ms; /* sweeper thread only: when live streams' nodes were last touched */
    xds_tag t_shutdown;
};

/* Per-message debug lines (every send, ACK and request): their fields are built only
 * when debug lines are written at all, as json_pack costs more than the rest of an
 * ACK's handling. */
#define XDS_DEBUG_FIELDS(srv, ...)                                                                 \
    do {                                                                                           \
        if ((srv)->cfg->log.level <= SX_LOG_DEBUG)                                                 \
            sx_log_fields(SX_LOG_DEBUG, __VA_ARGS__);                                              \
    } while (0)

/* Records a client refused for its credentials (reason failure) and ends nothing:
 * counts sextant_xds_auth_failures_total{reason}, and logs and audits it in aggregate
 * (server/denials.h). */
void xds_auth_refused(struct xds_server *s, const xds_cred *cred, xds_auth_fail failure,
                      const char *node_id, const char *protocol, const char *msg);

#endif
