/*
 * bench_ads.c — one Envoy-like ADS call of a benchmark client.
 *
 * The batches follow Envoy: the first request carries the initial metadata (waiting
 * for the connection rather than failing while thousands connect at once) and the
 * node; the initial metadata is received in a batch of its own (a server that sends it
 * on accepting the call tells the client so); a receive is always armed while the call
 * runs; the status batch tells when the call is over. A batch that cannot
 * be started is a bug of the benchmark: it aborts.
 */
#include "tests/bench/lib/bench_ads.h"

#include "tests/bench/lib/bench.h"

#include <grpc/byte_buffer.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/config/core/v3/base.pb-c.h"
#include "envoy/service/discovery/v3/discovery.pb-c.h"

#define ADS_METHOD                                                                                 \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"

void bench_ads_init(bench_ads_call *c, const char *prog, unsigned idx, void *owner,
                    pthread_mutex_t *mu, const bench_ads_hooks *hooks, const char *target)
{
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->idx = idx;
    c->owner = owner;
    c->hooks = hooks;
    c->mu = mu;
    c->t_send = (bench_ads_tag){c, BENCH_ADS_SEND};
    c->t_meta = (bench_ads_tag){c, BENCH_ADS_META};
    c->t_recv = (bench_ads_tag){c, BENCH_ADS_RECV};
    c->t_status = (bench_ads_tag){c, BENCH_ADS_STATUS};
    grpc_arg args[2] = {
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value.integer = 1},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, .value.integer = -1},
    };
    grpc_channel_args ca = {.num_args = 2, .args = args};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    c->ch = grpc_channel_create(target, creds, &ca);
    grpc_channel_credentials_release(creds);
}

static void batch(bench_ads_call *c, const grpc_op *ops, size_t n, bench_ads_tag *tag)
{
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, tag, NULL);
    if (e != GRPC_CALL_OK) {
        fprintf(stderr, "%s: stream %u: grpc_call_start_batch: error %d\n", c->prog, c->idx,
                (int)e);
        abort();
    }
    c->ops_out++;
}

static void arm_recv(bench_ads_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv_buf;
    batch(c, &op, 1, &c->t_recv);
}

void bench_ads_start(bench_ads_call *c, grpc_completion_queue *cq)
{
    c->call = grpc_channel_create_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                       grpc_slice_from_static_string(ADS_METHOD), NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    c->ops_out = 0;
    c->call_over = false;
    c->sending = false;
    c->sent_first = false;
    grpc_metadata_array_init(&c->md_init);
    grpc_metadata_array_init(&c->md_trail);
    c->hooks->pump(c);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_INITIAL_METADATA;
    op.data.recv_initial_metadata.recv_initial_metadata = &c->md_init;
    batch(c, &op, 1, &c->t_meta);
    arm_recv(c);
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    op.data.recv_status_on_client.trailing_metadata = &c->md_trail;
    op.data.recv_status_on_client.status = &c->status;
    op.data.recv_status_on_client.status_details = &c->details;
    batch(c, &op, 1, &c->t_status);
}

void bench_ads_send(bench_ads_call *c, const char *node_id, const char *cluster,
                    const char *type_url, char *version, char *nonce, char **names, size_t n_names)
{
    Envoy__Config__Core__V3__Node node = ENVOY__CONFIG__CORE__V3__NODE__INIT;
    node.id = (char *)node_id;
    node.cluster = (char *)cluster;
    node.user_agent_name = "sextant-bench";
    Envoy__Service__Discovery__V3__DiscoveryRequest req =
        ENVOY__SERVICE__DISCOVERY__V3__DISCOVERY_REQUEST__INIT;
    req.version_info = version;
    req.response_nonce = nonce;
    req.type_url = (char *)type_url;
    if (!c->sent_first)
        req.node = &node; /* like Envoy: the node goes in the first request only */
    req.n_resource_names = n_names;
    req.resource_names = names;
    size_t len = envoy__service__discovery__v3__discovery_request__get_packed_size(&req);
    grpc_slice slice = grpc_slice_malloc(len);
    envoy__service__discovery__v3__discovery_request__pack(&req, GRPC_SLICE_START_PTR(slice));
    c->send_buf = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);

    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (!c->sent_first) {
        /* Wait for the connection rather than fail while 10,000 connect at once. */
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY |
                       GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
        n++;
        c->sent_first = true;
    }
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = c->send_buf;
    n++;
    c->sending = true;
    batch(c, ops, n, &c->t_send);
}

static void complete(bench_ads_tag *tag, bool success, int64_t at)
{
    bench_ads_call *c = tag->c;
    c->ops_out--;
    switch (tag->kind) {
    case BENCH_ADS_SEND:
        grpc_byte_buffer_destroy(c->send_buf);
        c->send_buf = NULL;
        c->sending = false;
        if (success)
            c->hooks->pump(c);
        break;
    case BENCH_ADS_META:
        if (success && c->hooks->on_metadata != NULL)
            c->hooks->on_metadata(c, at);
        break;
    case BENCH_ADS_RECV:
        if (success && c->recv_buf != NULL) {
            c->hooks->on_response(c, at);
            if (!c->call_over)
                arm_recv(c);
        }
        /* Otherwise the call is over; RECV_STATUS_ON_CLIENT says why. */
        break;
    case BENCH_ADS_STATUS:
        c->call_over = true;
        if (c->hooks->log_end(c)) {
            char *d = grpc_slice_to_c_string(c->details);
            fprintf(stderr, "%s: stream %u ended: status %d: %s\n", c->prog, c->idx, (int)c->status,
                    d);
            gpr_free(d);
        }
        break;
    }
    if (c->call_over && c->ops_out == 0) {
        grpc_call_unref(c->call);
        c->call = NULL;
        grpc_metadata_array_destroy(&c->md_init);
        grpc_metadata_array_destroy(&c->md_trail);
        grpc_slice_unref(c->details);
        c->hooks->over(c);
    }
}

void bench_cq_run(grpc_completion_queue *cq, void (*on_done)(void *tag, bool ok, void *arg),
                  void *arg)
{
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            return;
        if (ev.type == GRPC_OP_COMPLETE)
            on_done(ev.tag, ev.success != 0, arg);
    }
}

static void on_ads_done(void *t, bool ok, void *arg)
{
    (void)arg;
    int64_t at = bench_now_ns(); /* before any work: the arrival time of a response */
    bench_ads_tag *tag = t;
    pthread_mutex_lock(tag->c->mu);
    complete(tag, ok, at);
    pthread_mutex_unlock(tag->c->mu);
}

void *bench_ads_cq_thread(void *cq)
{
    bench_cq_run(cq, on_ads_done, NULL);
    return NULL;
}

void bench_ads_cancel(bench_ads_call *c)
{
    if (c->call != NULL)
        grpc_call_cancel(c->call, NULL);
}

void bench_ads_destroy(bench_ads_call *c)
{
    grpc_channel_destroy(c->ch);
}
