/*
 * server.c — the xDS gRPC server on the C core: its methods, accepting calls, the
 * completion-queue threads, the timeout sweeper, start, stop and the wiring into the
 * daemon (see server.h).
 *
 * Threads. xds.cq_threads threads each wait in grpc_completion_queue_next on a queue
 * of their own and run its completions: accepted calls, received messages, finished
 * sends, closed calls. Request slots are spread over the queues, so each call is
 * bound to one queue and its completions come to one thread. The publisher thread
 * pushes new snapshots (serve.c) and starts sends itself (call.c). The sweeper thread
 * checks send and ACK timeouts once a second, and keeps the nodes of idle but healthy
 * streams from turning stale.
 *
 * Tags. Every batch has a tag that names its kind and its object (xds_internal.h):
 * request slots, calls (call.c), ReportStatus calls (report.c) and the server's own
 * shutdown; the completion-queue threads dispatch on the kind.
 */
#include "server/xds/server.h"

#include <dlfcn.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/base/arena.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"
#include "server/certs.h"
#include "server/changes.h"
#include "server/revocations.h"
#include "server/server.h"
#include "server/snapshot/loader.h"
#include "server/xds/call.h"
#include "server/xds/report.h"
#include "server/xds/serve.h"
#include "server/xds/xds_internal.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/repo_nodes.h"
#include "storage/repo_pins.h"

#define SWEEP_INTERVAL_MS 1000
#define KEEPALIVE_TIME_MS 60000
#define KEEPALIVE_WAIT_MS 20000

/* ------------------------------------------------------------------ methods */

enum method { M_SOTW, M_DELTA, M_CONTROL, M_REPORT, M_COUNT };
_Static_assert(M_COUNT == XDS_METHOD_COUNT, "xds_server.methods holds every method");

static const char *const method_paths[M_COUNT] = {
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
    "/gateway.control.v1.ConfigurationDiscoveryService/StreamConfiguration",
    "/gateway.control.v1.ConfigurationDiscoveryService/ReportStatus",
};

/* How many grpc_server_request_registered_call are kept outstanding per method: a
 * burst of reconnecting proxies is accepted without waiting for re-arms. */
static const int method_slots[M_COUNT] = {64, 16, 16, 8};

/* One outstanding grpc_server_request_registered_call. */
typedef struct rpc_slot {
    xds_tag tag;
    struct xds_server *srv;
    grpc_completion_queue *cq; /* the accepted call is bound to it */
    enum method method;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload; /* ReportStatus: the request message */
} rpc_slot;

const char *xds_group_for_node(const xds_server *s, const char *node_id, const char *cluster)
{
    (void)node_id; /* rollouts will assign groups per node here */
    if (cluster != NULL && cluster[0] != '\0')
        return cluster;
    return s->cfg->xds.default_group ? s->cfg->xds.default_group : "default";
}

int xds_server_port(const xds_server *s)
{
    return s->port;
}

/* ------------------------------------------------------------------ accepting */

static void slot_arm(rpc_slot *sl)
{
    xds_server *s = sl->srv;
    sl->call = NULL;
    sl->payload = NULL;
    grpc_metadata_array_init(&sl->md);
    grpc_call_error e = grpc_server_request_registered_call(
        s->server, s->methods[sl->method], &sl->call, &sl->deadline, &sl->md,
        sl->method == M_REPORT ? &sl->payload : NULL, sl->cq, sl->cq, &sl->tag);
    if (e != GRPC_CALL_OK) {
        grpc_metadata_array_destroy(&sl->md);
        sx_log_fields(SX_LOG_ERROR, XDS_LOG_COMPONENT,
                      json_pack("{s:i}", "grpc_call_error", (int)e),
                      "could not wait for xDS calls on %s", method_paths[sl->method]);
    }
}

static void on_accept(rpc_slot *sl, bool ok)
{
    xds_server *s = sl->srv;
    if (!ok) { /* the server is shutting down */
        grpc_metadata_array_destroy(&sl->md);
        return;
    }
    grpc_call *call = sl->call;
    grpc_byte_buffer *payload = sl->payload;
    char ua[256] = "";
    for (size_t i = 0; i < sl->md.count; i++) {
        if (grpc_slice_str_cmp(sl->md.metadata[i].key, "user-agent") == 0) {
            grpc_slice v = sl->md.metadata[i].value;
            snprintf(ua, sizeof(ua), "%.*s", (int)GRPC_SLICE_LENGTH(v),
                     (const char *)GRPC_SLICE_START_PTR(v));
        }
    }
    /* The credentials are read now, while the metadata is at hand; the node they must
     * cover is only known from the first request. */
    xds_cred *cred = xds_cred_read(s->ident, call, &sl->md, (int64_t)time(NULL));
    grpc_metadata_array_destroy(&sl->md);
    enum method m = sl->method;
    if (!atomic_load(&s->stopping))
        slot_arm(sl);
    if (m == M_REPORT)
        xds_report_status(s, call, payload, cred);
    else
        xds_call_start(s,
                       m == M_SOTW    ? XDS_PROTO_SOTW
                       : m == M_DELTA ? XDS_PROTO_DELTA
                                      : XDS_PROTO_CONTROL,
                       call, ua, cred);
}

/* One completion-queue thread and its queue. */
typedef struct cq_worker {
    xds_server *srv;
    grpc_completion_queue *cq;
    pthread_t thread;
} cq_worker;

static void *cq_thread(void *arg)
{
    cq_worker *w = arg;
    xds_server *s = w->srv;
    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        xds_tag *t = ev.tag;
        bool ok = ev.success != 0;
        switch (t->kind) {
        case XDS_TAG_ACCEPT:
            on_accept(t->obj, ok);
            break;
        case XDS_TAG_RECV:
            xds_call_on_recv(t->obj, ok);
            break;
        case XDS_TAG_SEND:
            xds_call_on_send(t->obj, ok);
            break;
        case XDS_TAG_CLOSE:
            xds_call_on_close(t->obj);
            break;
        case XDS_TAG_STATUS:
            xds_call_unref(t->obj);
            break;
        case XDS_TAG_UNARY:
            xds_report_done(t->obj);
            break;
        case XDS_TAG_SHUTDOWN:
            pthread_mutex_lock(&s->mu);
            s->shutdown_seen = true;
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
            break;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ timeouts */

/* Checks send and ACK timeouts, and every fleet.stale_after / 4 marks the node of every
 * live stream as seen, so an idle but healthy proxy (nothing to ask for, nothing sent)
 * does not turn stale; node_status debounces the writes into one batch. */
static void sweep(xds_server *s)
{
    int64_t send_to = s->cfg->xds.send_timeout_ms, ack_to = s->cfg->xds.ack_timeout_ms;
    int64_t now = sx_monotonic_ms();
    denials_flush(s->denials, now, false);
    int64_t touch_every = s->cfg->fleet.stale_after_ms / 4;
    bool touch = s->o.nodes != NULL && touch_every > 0 && now - s->last_touch_ms >= touch_every;
    if (touch)
        s->last_touch_ms = now;
    if (send_to <= 0 && ack_to <= 0 && !touch)
        return;
    void **calls = NULL;
    size_t n = xds_streams_list(s->streams, NULL, &calls);
    for (size_t i = 0; i < n; i++) {
        xds_call *c = calls[i];
        pthread_mutex_lock(&c->mu);
        if (touch && c->state == XDS_CALL_ACTIVE && c->node_id)
            node_status_seen(s->o.nodes, c->node_id);
        if (c->state == XDS_CALL_ACTIVE && (send_to > 0 || ack_to > 0)) {
            xds_state *st = xds_call_ads_state(c);
            int64_t oldest =
                st ? xds_state_oldest_unacked_ms(st) : xds_ctl_oldest_unacked_ms(&c->p.ctl);
            if (send_to > 0 && c->send_pending && now - c->send_started_ms > send_to)
                xds_call_end(c, XDS_TERM_SEND_TIMEOUT, GRPC_STATUS_UNAVAILABLE,
                             "a response was not read in time");
            else if (ack_to > 0 && oldest > 0 && now - oldest > ack_to)
                xds_call_end(c, XDS_TERM_ACK_TIMEOUT, GRPC_STATUS_UNAVAILABLE,
                             "a response was not acknowledged in time");
        }
        pthread_mutex_unlock(&c->mu);
        xds_call_unref(c);
    }
    sx_free(calls);
}

static void *sweeper_thread(void *arg)
{
    xds_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (s->sweeper_running) {
        struct timespec ts = sx_deadline_in(SWEEP_INTERVAL_MS);
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (!s->sweeper_running)
            break;
        pthread_mutex_unlock(&s->mu);
        sweep(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------------ lifecycle */

/* Every series of a known label set exists from the start (at 0), so that rates and
 * alerts work before the first event. */
static void metrics_zero(xds_metrics *m)
{
    static const char *const types[] = {"sds", "cds", "eds", "lds", "rds", "snapshot"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        xds_metrics_add(m->pushes, types[i], 0);
        xds_metrics_add(m->requests, types[i], 0);
        xds_metrics_add(m->acks, types[i], 0);
        xds_metrics_add(m->nacks, types[i], 0);
    }
    for (int r = 0; r < XDS_TERM_COUNT; r++)
        xds_metrics_add(m->terminations, xds_term_name((xds_term)r), 0);
    for (int r = 0; r < XDS_REJECT_COUNT; r++)
        xds_metrics_add(m->report_rejections, xds_reject_name((xds_reject)r), 0);
    for (int l = 0; l < XDS_LIMIT_COUNT; l++)
        xds_metrics_add(m->limit_refusals, xds_limit_names[l], 0);
    for (int f = XDS_AUTH_OK + 1; f < XDS_AUTH_FAIL_COUNT; f++)
        xds_metrics_add(m->auth_failures, xds_auth_fail_name((xds_auth_fail)f), 0);
    xds_metrics_add(m->coalesced, NULL, 0);
    xds_metrics_add(m->build_failures, NULL, 0);
}

int xds_server_create(const xds_server_options *opt, xds_server **out, sx_err *err)
{
    *out = NULL;
    if (opt->config == NULL)
        return sx_err_set(err, SX_EINVAL, "the xDS server needs a configuration");
    xds_ident *ident = NULL;
    int rc = xds_ident_create(opt->config, &ident, err);
    if (rc != 0)
        return rc;
    xds_ident_set_revoked(ident, opt->token_revoked, opt->token_revoked_ctx);
    xds_server *s = sx_calloc(1, sizeof(*s));
    s->ident = ident;
    s->denials = denials_create(opt->config->xds.auth_failure_interval_ms, "nodes", opt->audit,
                                opt->audit_ctx);
    s->o = *opt;
    s->cfg = opt->config;
    xds_metrics_init(&s->metrics, opt->metrics);
    metrics_zero(&s->metrics);
    s->streams = xds_streams_create(&xds_call_stream_ops, &s->metrics);
    s->names = xds_names_create();
    s->control_plane_id = sx_asprintf("sextant/%s", s->cfg->replica.id ? s->cfg->replica.id : "");
    s->listen = sx_strdup(s->cfg->grpc.listen.text ? s->cfg->grpc.listen.text : "");
    pthread_mutex_init(&s->mu, NULL);
    sx_cond_init_monotonic(&s->cv);
    atomic_init(&s->stopping, false);
    atomic_init(&s->running, false);
    s->t_shutdown = (xds_tag){XDS_TAG_SHUTDOWN, s};
    xds_pub_options po = {
        .store = opt->store,
        .metrics = &s->metrics,
        .fanout = xds_serve_fanout,
        .ctx = s,
    };
    s->pub = xds_pub_create(&po);
    s->pins = xds_pins_create();
    pthread_mutex_init(&s->pins_mu, NULL);
    *out = s;
    return 0;
}

/* gRPC's certificate config fetcher, called at each TLS handshake: a new version of the
 * certificate (server/certs.h) goes to the connections made from then on, while those
 * open keep their session and their streams. */
static grpc_ssl_certificate_config_reload_status
fetch_certificate(void *ud, grpc_ssl_server_certificate_config **config)
{
    xds_server *s = ud;
    certs_pem *p = certs_current(s->o.certs, CERTS_GRPC);
    if (p == NULL)
        return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
    uint64_t served = atomic_load(&s->tls_generation);
    grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
    if (p->generation != served &&
        atomic_compare_exchange_strong(&s->tls_generation, &served, p->generation)) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = p->key, .cert_chain = p->cert};
        /* gRPC 1.51 insists on root certificates in a fetched config even when clients
         * are not asked for theirs; without a client CA the chain itself stands in, and
         * GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE never uses it. */
        *config = grpc_ssl_server_certificate_config_create(p->ca ? p->ca : p->cert, &pair,
                                                            1); /* copies */
        st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
    }
    certs_pem_release(p);
    return st;
}

/* The one place the listener's credentials are made: plaintext, or TLS (mTLS with
 * grpc.tls.client_ca_file) whose certificate is fetched at each handshake. */
static grpc_server_credentials *make_credentials(xds_server *s, sx_err *err)
{
    if (!certs_enabled(s->o.certs, CERTS_GRPC))
        return grpc_insecure_server_credentials_create();
    atomic_store(&s->tls_generation, 0);
    grpc_ssl_server_credentials_options *opts =
        grpc_ssl_server_credentials_create_options_using_config_fetcher(
            certs_verifies_clients(s->o.certs, CERTS_GRPC)
                ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
            fetch_certificate, s);
    grpc_server_credentials *creds =
        opts ? grpc_ssl_server_credentials_create_with_options(opts) : NULL; /* takes opts over */
    if (creds == NULL)
        sx_err_set(err, SX_EINVAL, "could not set up TLS for gRPC (grpc.tls.*)");
    return creds;
}

static void teardown_grpc(xds_server *s)
{
    if (s->server) {
        grpc_server_destroy(s->server);
        s->server = NULL;
    }
    for (int i = 0; i < s->ncqs; i++)
        grpc_completion_queue_shutdown(s->cqs[i]);
    for (int i = 0; i < s->nthreads; i++)
        pthread_join(s->workers[i].thread, NULL);
    for (int i = s->nthreads; i < s->ncqs; i++) /* nobody drained these */
        while (
            grpc_completion_queue_next(s->cqs[i], gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
            GRPC_QUEUE_SHUTDOWN) {
        }
    for (int i = 0; i < s->ncqs; i++)
        grpc_completion_queue_destroy(s->cqs[i]);
    sx_free(s->cqs);
    s->cqs = NULL;
    s->ncqs = 0;
    sx_free(s->workers);
    s->workers = NULL;
    s->nthreads = 0;
    sx_free(s->slots);
    s->slots = NULL;
    s->nslots = 0;
    if (s->grpc_initialised) {
        grpc_shutdown_blocking();
        s->grpc_initialised = false;
    }
}

/* The gRPC of Debian is linked against an Abseil built without NDEBUG, whose every
 * mutex lock updates a lock-order graph to detect deadlocks (absl's debug-only
 * deadlock detection): ~6% of the CPU of a push to 10,000 streams, and ~1.5 KB per
 * stream for the graph's nodes. It detects bugs in gRPC itself, not in our use of
 * it, so it is turned off when this Abseil exports the switch (a C++ function, hence
 * looked up by its mangled name; other builds keep their default). */
static void quiet_absl_deadlock_detection(void)
{
    static const char *const names[] = {
        "_ZN4absl7debian329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
        "_ZN4absl12lts_2022062329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
        "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *sym = dlsym(RTLD_DEFAULT, names[i]);
        if (sym == NULL)
            continue;
        void (*set_mode)(int);
        memcpy(&set_mode, &sym, sizeof(set_mode));
        set_mode(0); /* absl::OnDeadlockCycle::kIgnore */
        return;
    }
}

/* A duration key (at most a day, so it fits an int) as a gRPC channel argument in
 * milliseconds; 0 (off) is INT_MAX, gRPC's "never". */
static int grpc_ms(int64_t ms)
{
    return ms > 0 && ms < INT_MAX ? (int)ms : INT_MAX;
}

static int xds_start(void *ctx, sx_err *err)
{
    xds_server *s = ctx;
    atomic_store(&s->stopping, false);
    quiet_absl_deadlock_detection();
    grpc_init();
    s->grpc_initialised = true;
    /* One queue per thread: gRPC's completion queue serialises its completions on
     * one mutex (and, in the Debian build, scans every outstanding tag under it), so
     * a single queue shared by all threads makes them take turns. */
    int want = (int)s->cfg->xds.cq_threads;
    if (want < 1)
        want = 1;
    s->ncqs = want;
    s->cqs = sx_calloc((size_t)want, sizeof(*s->cqs));
    for (int i = 0; i < want; i++)
        s->cqs[i] = grpc_completion_queue_create_for_next(NULL);
    grpc_arg args[] = {
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_KEEPALIVE_TIME_MS,
         .value.integer = KEEPALIVE_TIME_MS},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
         .value.integer = KEEPALIVE_WAIT_MS},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
         .value.integer = 1},
        /* A client pinging more often than this without data gets a strike, and GOAWAY
         * (ENHANCE_YOUR_CALM) past the strikes: a ping flood costs it its connection. */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
         .value.integer = (int)s->cfg->xds.min_client_ping_interval_ms},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_HTTP2_MAX_PING_STRIKES,
         .value.integer = (int)s->cfg->xds.max_ping_strikes},
        /* gRPC refuses a larger message with RESOURCE_EXHAUSTED before it is read. */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
         .value.integer = (int)s->cfg->xds.max_receive_message_bytes},
        /* Streams rebalance: a connection past its age gets GOAWAY (gRPC adds +-10%
         * jitter, so connections made together do not all leave together), and what is
         * still open on it is closed after the grace. The proxy reconnects, through the
         * load balancer to whichever replica it picks, resuming with its version_info. */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_MAX_CONNECTION_AGE_MS,
         .value.integer = grpc_ms(s->cfg->xds.max_connection_age_ms)},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
         .value.integer = (int)s->cfg->xds.max_connection_age_grace_ms},
        /* gRPC binds with SO_REUSEPORT by default: a second replica on the same port
         * would then share connections silently instead of failing to start. */
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ALLOW_REUSEPORT, .value.integer = 0},
    };
    grpc_channel_args cargs = {.num_args = sizeof(args) / sizeof(args[0]), .args = args};
    s->server = grpc_server_create(&cargs, NULL);
    for (int i = 0; i < s->ncqs; i++)
        grpc_server_register_completion_queue(s->server, s->cqs[i], NULL);
    for (int m = 0; m < M_COUNT; m++)
        s->methods[m] = grpc_server_register_method(
            s->server, method_paths[m], NULL,
            m == M_REPORT ? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER : GRPC_SRM_PAYLOAD_NONE, 0);

    grpc_server_credentials *creds = make_credentials(s, err);
    if (creds == NULL) {
        teardown_grpc(s);
        return err && err->code ? err->code : SX_EINVAL;
    }
    s->port = grpc_server_add_http2_port(s->server, s->listen, creds);
    grpc_server_credentials_release(creds);
    if (s->port == 0) {
        int rc = sx_err_set(err, SX_EIO, "could not listen for gRPC on %s", s->listen);
        sx_err_hint(err, "Another process may be using the port (grpc.listen), or the address "
                         "is not local to this host.");
        teardown_grpc(s);
        return rc;
    }
    grpc_server_start(s->server);

    size_t n = 0;
    for (int m = 0; m < M_COUNT; m++)
        n += (size_t)method_slots[m];
    s->slots = sx_calloc(n, sizeof(rpc_slot));
    s->nslots = n;
    size_t k = 0;
    for (int m = 0; m < M_COUNT; m++)
        for (int i = 0; i < method_slots[m]; i++, k++) {
            rpc_slot *sl = &s->slots[k];
            sl->tag = (xds_tag){XDS_TAG_ACCEPT, sl};
            sl->srv = s;
            sl->cq = s->cqs[k % (size_t)s->ncqs];
            sl->method = (enum method)m;
            slot_arm(sl);
        }

    s->workers = sx_calloc((size_t)s->ncqs, sizeof(*s->workers));
    for (int i = 0; i < s->ncqs; i++) {
        s->workers[i] = (cq_worker){.srv = s, .cq = s->cqs[i]};
        if (pthread_create(&s->workers[i].thread, NULL, cq_thread, &s->workers[i]) != 0)
            break;
        s->nthreads++;
    }
    int rc = 0;
    if (s->nthreads < s->ncqs)
        rc = sx_err_set(err, SX_EINTERNAL, "could not start the gRPC completion queue threads");
    if (rc == 0)
        rc = xds_pub_start(s->pub, err);
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        s->sweeper_running = true;
        pthread_mutex_unlock(&s->mu);
        if (pthread_create(&s->sweeper, NULL, sweeper_thread, s) != 0) {
            s->sweeper_running = false;
            rc = sx_err_set(err, SX_EINTERNAL, "could not start the xDS timeout thread");
        }
    }
    if (rc != 0) {
        atomic_store(&s->stopping, true);
        xds_pub_stop(s->pub);
        grpc_server_shutdown_and_notify(s->server, s->cqs[0], &s->t_shutdown);
        grpc_server_cancel_all_calls(s->server);
        pthread_mutex_lock(&s->mu);
        while (!s->shutdown_seen && s->nthreads > 0)
            pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        teardown_grpc(s);
        return rc;
    }
    atomic_store(&s->running, true);
    sx_log_fields(SX_LOG_INFO, XDS_LOG_COMPONENT,
                  json_pack("{s:s,s:i,s:b,s:b,s:i,s:s}", "listen", s->listen, "port", s->port,
                            "tls", certs_enabled(s->o.certs, CERTS_GRPC), "mtls",
                            certs_verifies_clients(s->o.certs, CERTS_GRPC), "cq_threads",
                            s->nthreads, "auth", xds_ident_modes_text(s->ident)),
                  "xds server listening on %s", s->listen);
    if (xds_ident_modes(s->ident) == 0)
        sx_log_fields(SX_LOG_WARN, XDS_LOG_COMPONENT, json_pack("{s:s}", "auth", "none"),
                      "xds clients are not authenticated (xds.auth: none): anyone who can reach "
                      "%s may claim any node id and take over its stream; never run like this "
                      "outside development",
                      s->listen);
    return 0;
}

static void xds_stop(void *ctx)
{
    xds_server *s = ctx;
    if (!atomic_exchange(&s->running, false))
        return;
    atomic_store(&s->stopping, true);
    xds_pub_stop(s->pub);
    pthread_mutex_lock(&s->mu);
    bool sweeping = s->sweeper_running;
    s->sweeper_running = false;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (sweeping)
        pthread_join(s->sweeper, NULL);

    /* Streams first, with their reason; then whatever is left (calls still waiting for
     * a first request, unary calls) goes with the server. */
    void **calls = NULL;
    size_t n = xds_streams_list(s->streams, NULL, &calls);
    for (size_t i = 0; i < n; i++) {
        xds_call_end_from_outside(calls[i], XDS_TERM_SHUTDOWN, GRPC_STATUS_UNAVAILABLE,
                                  "the control plane is shutting down");
        xds_call_unref(calls[i]);
    }
    sx_free(calls);
    grpc_server_shutdown_and_notify(s->server, s->cqs[0], &s->t_shutdown);
    grpc_server_cancel_all_calls(s->server);
    /* Every call's last batch must have come back before the queues shut down: a call
     * accepted while the streams above were being ended (a client reconnecting at once)
     * is only cancelled here, and its handlers may still start a batch, which gRPC
     * refuses with an abort on a queue already shut down. */
    pthread_mutex_lock(&s->mu);
    while (!s->shutdown_seen || s->calls_live > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    teardown_grpc(s);
    denials_flush(s->denials, sx_monotonic_ms(), true);
    sx_log_fields(SX_LOG_INFO, XDS_LOG_COMPONENT, json_pack("{s:I}", "streams", (json_int_t)n),
                  "xds server stopped");
}

static bool xds_ready(void *ctx)
{
    xds_server *s = ctx;
    return atomic_load(&s->running) && !atomic_load(&s->stopping);
}

const sup_ops xds_sup_ops = {xds_start, xds_stop, xds_ready};

void xds_server_destroy(xds_server *s)
{
    if (s == NULL)
        return;
    if (atomic_load(&s->running))
        xds_stop(s);
    xds_pub_destroy(s->pub);
    xds_pins_destroy(s->pins);
    pthread_mutex_destroy(&s->pins_mu);
    xds_streams_destroy(s->streams);
    xds_names_destroy(s->names);
    denials_destroy(s->denials);
    xds_ident_destroy(s->ident);
    sx_free(s->control_plane_id);
    sx_free(s->listen);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    sx_free(s);
}

/* At most max bytes of what a client sent, valid UTF-8, for the log. Caller frees. */
static char *client_text(const char *s, size_t max)
{
    char *cut = sx_strndup(s, max);
    char *out = sx_utf8_sanitize(cut);
    sx_free(cut);
    return out;
}

void xds_auth_refused(xds_server *s, const xds_cred *cred, xds_auth_fail failure,
                      const char *node_id, const char *protocol, const char *msg)
{
    const char *reason = xds_auth_fail_name(failure);
    xds_metrics_inc(s->metrics.auth_failures, reason);
    const char *source = xds_cred_source(cred), *who = xds_cred_who(cred);
    denial in = {.action = "proxy.connect",
                 .resource_type = "proxy",
                 .status_code = 403,
                 .source = source,
                 .client = who,
                 .reason = reason,
                 .target = node_id};
    if (!denials_note(s->denials, &in, sx_monotonic_ms()))
        return;
    /* The first of its address's interval is logged; the rest are counted. What the
     * client sent is cut and made valid UTF-8 first. */
    char *node = client_text(node_id ? node_id : "", 256);
    char *client = client_text(who ? who : "", 256);
    char *said = client_text(msg ? msg : "", 1024);
    const char *src = source ? source : "";
    sx_log_fields(SX_LOG_WARN, "xds",
                  json_pack("{s:s,s:s,s:s,s:s,s:s}", "source", src, "reason", reason, "node", node,
                            "client", client, "protocol", protocol ? protocol : ""),
                  "refused an xds client from %s: %s (its further refusals in the next %llds "
                  "are counted, not logged)",
                  src[0] ? src : "an unknown address", said,
                  (long long)(s->cfg->xds.auth_failure_interval_ms / 1000));
    sx_free(node);
    sx_free(client);
    sx_free(said);
}

/* The audit rows of refused clients, through the write side of the domain. */
static int audit_refusals(void *ctx, const audit_new *row, sx_err *err)
{
    return changes_audit(ctx, row, err);
}

/* A ReportStatus from a node whose stream is on another replica: the database knows
 * every node any replica has seen. One indexed read on a completion-queue thread;
 * unary reports are rare next to stream traffic. */
static bool known_in_database(void *ctx, const char *node_id)
{
    struct sx_server *srv = ctx;
    pg_conn *c = NULL;
    sx_err err;
    if (srv->db == NULL || pg_acquire(srv->db, &c, &err) != 0)
        return false;
    sx_arena *a = sx_arena_create();
    node_record *n = NULL;
    bool known = node_repo_get(c, node_id, a, &n, &err) == 0;
    pg_release(srv->db, c);
    sx_arena_destroy(a);
    return known;
}

int xds_server_register(struct sx_server *srv, xds_server **out, sx_err *err)
{
    *out = NULL;
    xds_server_options o = {
        .config = srv->config,
        .store = srv->snapshots,
        .metrics = srv->metrics,
        .nodes = srv->nodes,
        .known_node = known_in_database,
        .known_node_ctx = srv,
        .pool = srv->db,
        .audit = srv->db ? audit_refusals : NULL,
        .audit_ctx = srv,
        .token_revoked = srv->revocations ? revocations_check : NULL,
        .token_revoked_ctx = srv->revocations,
        .certs = srv->certs,
    };
    xds_server *s = NULL;
    int rc = xds_server_create(&o, &s, err);
    if (rc != 0)
        return rc;
    if (srv->loader &&
        (rc = snap_loader_subscribe(srv->loader, PINS_NOTIFY_CHANNEL, xds_serve_pins_notify,
                                    xds_serve_pins_resync, s, err)) != 0) {
        xds_server_destroy(s);
        return rc;
    }
    if ((rc = sup_register(srv->sup, "xds", &xds_sup_ops, s, err)) != 0) {
        xds_server_destroy(s);
        return rc;
    }
    *out = s;
    return 0;
}
