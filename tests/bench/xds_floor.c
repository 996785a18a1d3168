/*
 * xds_floor.c — the fan-out floor: a bare gRPC C-core ADS server that holds the same
 * streams as `sextant serve` and pushes the same encoded bytes, with no control-plane
 * logic, so that xds_fanout.sh can say how far Sextant is from what gRPC itself costs
 * on this machine.
 *
 * At start it translates two ConfigSnapshot files (the bench's initial and changed
 * snapshots) with Sextant's own translator and encodes, once each, the CDS and EDS
 * DiscoveryResponses of both versions (every cluster; every ClusterLoadAssignment):
 * those are the bytes Sextant sends. Then it serves ADS: a stream's first request of a
 * type gets that type's response of the current version; ACKs and NACKs are only
 * received; a response goes out at most one at a time per stream (gRPC's rule), the
 * next one queued. On "push" (stdin) every stream is sent the changed version of each
 * type it asked for, from the one encoded buffer (the streams share its slices).
 *
 *   bench_xds_floor --listen HOST:PORT --group G SNAPSHOT.json NEXT.json
 *   stdout  "listening PORT" once serving; "pushed N" after the push was handed to
 *           gRPC for N streams; "streams N" on "count"
 *   stdin   "push", "count", "quit" (or end of file)
 */
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "google/protobuf/any.pb-c.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/ir/ir.h"
#include "server/translate/resources.h"
#include "tests/bench/lib/bench_ads.h"

#define CQ_THREADS   2
#define ACCEPT_AHEAD 64 /* calls requested from the server at once */
#define QUEUE_MAX    8  /* responses waiting to be sent on one stream */

enum { T_CDS, T_EDS, T_COUNT };
static const tr_type TR_OF[T_COUNT] = {TR_CDS, TR_EDS};

typedef enum { TAG_ACCEPT, TAG_RECV, TAG_SEND, TAG_CLOSE, TAG_SHUTDOWN } tag_kind;

typedef struct fstream fstream;
typedef struct tag {
    tag_kind kind;
    fstream *s; /* NULL for TAG_ACCEPT */
    struct accept *a;
} tag;

struct accept {
    tag t;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
};

struct fstream {
    pthread_mutex_t mu;
    grpc_call *call;
    tag t_recv, t_send, t_close;
    grpc_byte_buffer *recv_buf, *send_buf;
    grpc_byte_buffer *queue[QUEUE_MAX]; /* shared buffers, borrowed */
    size_t nqueue;
    bool asked[T_COUNT]; /* the stream subscribed to the type */
    bool sending, closed, receiving, sent_md;
    int ops_out;
    int cancelled;
    fstream *next; /* in the list of live streams */
};

static grpc_server *server;
static grpc_completion_queue *cq;
static grpc_byte_buffer *responses[2][T_COUNT]; /* [version][type] */
static _Atomic int current;                     /* 0 before the push, 1 after */
static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static fstream *streams;
static size_t nstreams;

/* ---------------------------------------------------------------- responses */

static grpc_byte_buffer *encode_response(const tr_resources *r, int t, const char *nonce)
{
    tr_type tt = TR_OF[t];
    size_t n = r->count[tt];
    Google__Protobuf__Any *any = calloc(n ? n : 1, sizeof *any);
    Google__Protobuf__Any **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        google__protobuf__any__init(&any[i]);
        any[i].type_url = (char *)tr_type_url(tt);
        any[i].value.data = r->items[tt][i].bytes;
        any[i].value.len = r->items[tt][i].len;
        ptrs[i] = &any[i];
    }
    Envoy__Service__Discovery__V3__DiscoveryResponse resp =
        ENVOY__SERVICE__DISCOVERY__V3__DISCOVERY_RESPONSE__INIT;
    resp.version_info = (char *)r->version_info;
    resp.type_url = (char *)tr_type_url(tt);
    resp.nonce = (char *)nonce;
    resp.n_resources = n;
    resp.resources = ptrs;
    size_t len = envoy__service__discovery__v3__discovery_response__get_packed_size(&resp);
    grpc_slice slice = grpc_slice_malloc(len);
    envoy__service__discovery__v3__discovery_response__pack(&resp, GRPC_SLICE_START_PTR(slice));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    free(ptrs);
    free(any);
    return bb;
}

static int load(const char *file, long long version, int slot)
{
    json_error_t je;
    json_t *j = json_load_file(file, 0, &je);
    if (j == NULL) {
        fprintf(stderr, "xds_floor: %s: %s\n", file, je.text);
        return -1;
    }
    ir_snapshot *ir = NULL;
    sx_fielderrs errs = {0};
    sx_err err;
    sx_err_clear(&err);
    tr_resources *r = NULL;
    int rc = ir_snapshot_from_json(j, NULL, &ir, &errs);
    json_decref(j);
    if (rc == 0)
        rc = tr_resources_build(ir, "bench", version, &r, &err);
    ir_snapshot_free(ir);
    sx_fielderrs_free(&errs);
    if (rc != 0) {
        fprintf(stderr, "xds_floor: %s does not translate: %s\n", file, err.message);
        return -1;
    }
    for (int t = 0; t < T_COUNT; t++) {
        char nonce[32];
        snprintf(nonce, sizeof nonce, "%lld-%d", version, t);
        responses[slot][t] = encode_response(r, t, nonce);
    }
    tr_resources_unref(r);
    return 0;
}

/* ---------------------------------------------------------------- streams */

static void start_batch(fstream *s, grpc_op *ops, size_t n, tag *t)
{
    s->ops_out++;
    grpc_call_error e = grpc_call_start_batch(s->call, ops, n, t, NULL);
    if (e != GRPC_CALL_OK) {
        s->ops_out--;
        fprintf(stderr, "xds_floor: start_batch: %d\n", (int)e);
    }
}

/* Sends the next queued response when none is in flight (s->mu held). */
static void pump(fstream *s)
{
    if (s->sending || s->closed || s->nqueue == 0)
        return;
    s->send_buf = grpc_byte_buffer_copy(s->queue[0]);
    memmove(s->queue, s->queue + 1, (s->nqueue - 1) * sizeof s->queue[0]);
    s->nqueue--;
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (!s->sent_md) {
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
        s->sent_md = true;
    }
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = s->send_buf;
    s->sending = true;
    start_batch(s, ops, n, &s->t_send);
}

static void enqueue(fstream *s, grpc_byte_buffer *bb)
{
    if (s->nqueue < QUEUE_MAX)
        s->queue[s->nqueue++] = bb;
    pump(s);
}

static void arm_recv(fstream *s)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &s->recv_buf;
    s->receiving = true;
    start_batch(s, &op, 1, &s->t_recv);
}

/* The type and whether it is a first request (no response nonce yet). */
static void on_request(fstream *s)
{
    grpc_byte_buffer_reader rd;
    if (!grpc_byte_buffer_reader_init(&rd, s->recv_buf))
        return;
    grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
    grpc_byte_buffer_reader_destroy(&rd);
    Envoy__Service__Discovery__V3__DiscoveryRequest *req =
        envoy__service__discovery__v3__discovery_request__unpack(NULL, GRPC_SLICE_LENGTH(all),
                                                                 GRPC_SLICE_START_PTR(all));
    grpc_slice_unref(all);
    if (req == NULL)
        return;
    for (int t = 0; t < T_COUNT; t++)
        if (req->type_url && strcmp(req->type_url, tr_type_url(TR_OF[t])) == 0 &&
            (req->response_nonce == NULL || req->response_nonce[0] == '\0') && !s->asked[t]) {
            s->asked[t] = true;
            enqueue(s, responses[current][t]);
        }
    envoy__service__discovery__v3__discovery_request__free_unpacked(req, NULL);
}

/* Frees s once it is over and nothing of it is out (s->mu held; released with s):
 * returns whether it did. */
static bool release_if_done(fstream *s)
{
    if (!s->closed || s->ops_out > 0)
        return false;
    pthread_mutex_lock(&list_mu);
    for (fstream **p = &streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            nstreams--;
            break;
        }
    pthread_mutex_unlock(&list_mu);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_destroy(&s->mu);
    grpc_call_unref(s->call);
    free(s);
    return true;
}

static void request_call(struct accept *a)
{
    a->call = NULL;
    grpc_call_details_init(&a->details);
    grpc_metadata_array_init(&a->md);
    grpc_server_request_call(server, &a->call, &a->details, &a->md, cq, cq, &a->t);
}

static void on_accept(struct accept *a, bool ok)
{
    if (!ok) {
        grpc_call_details_destroy(&a->details);
        grpc_metadata_array_destroy(&a->md);
        free(a);
        return;
    }
    fstream *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->call = a->call;
    s->t_recv = (tag){TAG_RECV, s, NULL};
    s->t_send = (tag){TAG_SEND, s, NULL};
    s->t_close = (tag){TAG_CLOSE, s, NULL};
    grpc_call_details_destroy(&a->details);
    grpc_metadata_array_destroy(&a->md);
    request_call(a);

    pthread_mutex_lock(&list_mu);
    s->next = streams;
    streams = s;
    nstreams++;
    pthread_mutex_unlock(&list_mu);

    pthread_mutex_lock(&s->mu);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &s->cancelled;
    start_batch(s, &op, 1, &s->t_close);
    arm_recv(s);
    pthread_mutex_unlock(&s->mu);
}

static void on_done(tag *t, bool ok)
{
    fstream *s = t->s;
    pthread_mutex_lock(&s->mu);
    s->ops_out--;
    switch (t->kind) {
    case TAG_RECV:
        s->receiving = false;
        if (ok && s->recv_buf) {
            on_request(s);
            grpc_byte_buffer_destroy(s->recv_buf);
            s->recv_buf = NULL;
            if (!s->closed)
                arm_recv(s);
        }
        break;
    case TAG_SEND:
        grpc_byte_buffer_destroy(s->send_buf);
        s->send_buf = NULL;
        s->sending = false;
        if (ok)
            pump(s);
        break;
    case TAG_CLOSE:
        s->closed = true;
        break;
    default:
        break;
    }
    if (!release_if_done(s))
        pthread_mutex_unlock(&s->mu);
}

static void on_event(void *arg_tag, bool ok, void *arg)
{
    (void)arg;
    tag *t = arg_tag;
    if (t->kind == TAG_ACCEPT)
        on_accept(t->a, ok);
    else if (t->kind != TAG_SHUTDOWN)
        on_done(t, ok);
}

static void *cq_thread(void *arg)
{
    (void)arg;
    bench_cq_run(cq, on_event, NULL);
    return NULL;
}

/* Hands the changed version of every type each stream asked for to gRPC. */
static size_t push(void)
{
    current = 1;
    size_t n = 0;
    pthread_mutex_lock(&list_mu);
    for (fstream *s = streams; s; s = s->next) {
        pthread_mutex_lock(&s->mu);
        for (int t = 0; t < T_COUNT; t++)
            if (s->asked[t] && !s->closed)
                enqueue(s, responses[1][t]);
        pthread_mutex_unlock(&s->mu);
        n++;
    }
    pthread_mutex_unlock(&list_mu);
    return n;
}

int main(int argc, char **argv)
{
    const char *listen = "127.0.0.1:0", *files[2] = {NULL, NULL};
    size_t nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen = argv[++i];
        else if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
            i++; /* the responses do not name their group */
        else if (nfiles < 2)
            files[nfiles++] = argv[i];
    }
    if (nfiles != 2) {
        fprintf(stderr, "usage: bench_xds_floor --listen HOST:PORT SNAPSHOT.json NEXT.json\n");
        return 2;
    }
    if (load(files[0], 1, 0) != 0 || load(files[1], 2, 1) != 0)
        return 1;

    grpc_init();
    grpc_arg args[] = {
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_CONCURRENT_STREAMS, .value.integer = 1000},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, .value.integer = -1},
    };
    grpc_channel_args ca = {sizeof args / sizeof args[0], args};
    server = grpc_server_create(&ca, NULL);
    cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(server, cq, NULL);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(server, listen, creds);
    grpc_server_credentials_release(creds);
    if (port == 0) {
        fprintf(stderr, "xds_floor: cannot listen on %s\n", listen);
        return 1;
    }
    grpc_server_start(server);
    pthread_t th[CQ_THREADS];
    for (int i = 0; i < CQ_THREADS; i++)
        pthread_create(&th[i], NULL, cq_thread, NULL);
    for (int i = 0; i < ACCEPT_AHEAD; i++) {
        struct accept *a = calloc(1, sizeof *a);
        a->t = (tag){TAG_ACCEPT, NULL, a};
        request_call(a);
    }
    printf("listening %d\n", port);
    fflush(stdout);

    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "push", 4) == 0)
            printf("pushed %zu\n", push());
        else if (strncmp(line, "count", 5) == 0) {
            pthread_mutex_lock(&list_mu);
            printf("streams %zu\n", nstreams);
            pthread_mutex_unlock(&list_mu);
        } else if (strncmp(line, "quit", 4) == 0)
            break;
        fflush(stdout);
    }
    static tag shutdown_tag = {TAG_SHUTDOWN, NULL, NULL};
    grpc_server_shutdown_and_notify(server, cq, &shutdown_tag);
    grpc_server_cancel_all_calls(server);
    grpc_completion_queue_shutdown(cq);
    for (int i = 0; i < CQ_THREADS; i++)
        pthread_join(th[i], NULL);
    grpc_server_destroy(server);
    grpc_completion_queue_destroy(cq);
    for (int v = 0; v < 2; v++)
        for (int t = 0; t < T_COUNT; t++)
            grpc_byte_buffer_destroy(responses[v][t]);
    grpc_shutdown();
    return 0;
}
