/*
 * bench_ads.h — one Envoy-like ADS call of a benchmark client: the gRPC batches of a
 * state-of-the-world stream (requests with the node in the first one only, receives,
 * the final status) and what happens when each completes.
 *
 * A benchmark keeps one bench_ads_call per stream, guards it with a lock of its own and
 * holds that lock around every call below and while the hooks run. The call's tags go
 * to the benchmark's completion queue; the thread that takes them passes each one to
 * bench_ads_complete.
 */
#ifndef SX_TESTS_BENCH_ADS_H
#define SX_TESTS_BENCH_ADS_H

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { BENCH_ADS_SEND, BENCH_ADS_META, BENCH_ADS_RECV, BENCH_ADS_STATUS } bench_ads_op;

typedef struct bench_ads_call bench_ads_call;

/* The completion-queue tag of one kind of batch of one call. */
typedef struct {
    bench_ads_call *c;
    bench_ads_op kind;
} bench_ads_tag;

/* What the benchmark does when a batch completes (its lock held). */
typedef struct {
    void (*pump)(bench_ads_call *c);                    /* no send is in flight now */
    void (*on_response)(bench_ads_call *c, int64_t at); /* c->recv_buf holds a response
                                                           that came at `at` (ns) */
    bool (*log_end)(bench_ads_call *c);                 /* whether to print why the call ended */
    void (*over)(bench_ads_call *c); /* the call ended and no batch of it is out */
    void (*on_metadata)(bench_ads_call *c, int64_t at); /* optional: the server's initial
                                                           metadata came at `at` (ns): it
                                                           accepted the call */
} bench_ads_hooks;

struct bench_ads_call {
    const char *prog; /* the program's name, for messages */
    unsigned idx;     /* the stream's number, for messages */
    void *owner;      /* the benchmark's stream */
    const bench_ads_hooks *hooks;
    pthread_mutex_t *mu; /* the lock that guards this call */
    grpc_channel *ch;
    bench_ads_tag t_send, t_meta, t_recv, t_status;
    grpc_call *call; /* NULL between calls and after the end */
    int ops_out;     /* batches of this call not yet completed */
    bool call_over;  /* RECV_STATUS_ON_CLIENT completed */
    bool sending;    /* a SEND_MESSAGE batch is in flight */
    bool sent_first; /* initial metadata and node went out on this call */
    grpc_byte_buffer *send_buf, *recv_buf;
    grpc_metadata_array md_init, md_trail;
    grpc_status_code status;
    grpc_slice details;
};

/* Sets c up for stream idx of prog, owned by owner and guarded by mu, with its own
 * channel (and so its own HTTP/2 connection, as every Envoy has) to target; no call yet. */
void bench_ads_init(bench_ads_call *c, const char *prog, unsigned idx, void *owner,
                    pthread_mutex_t *mu, const bench_ads_hooks *hooks, const char *target);

/* Starts a call on cq: the hook pump sends the first request (through bench_ads_send),
 * then the receive of the initial metadata, the first receive of a message and the
 * status batch go out. */
void bench_ads_start(bench_ads_call *c, grpc_completion_queue *cq);

/* Sends a DiscoveryRequest for type_url (ACKing version and nonce; names: the resource
 * names, none for a wildcard) with a node of node_id and cluster on the call's first
 * request only, as Envoy does. One send at a time: the caller checks c->sending. */
void bench_ads_send(bench_ads_call *c, const char *node_id, const char *cluster,
                    const char *type_url, char *version, char *nonce, char **names, size_t n_names);

/* The body of a thread that runs completion queue cq (a grpc_completion_queue *) until
 * it is shut down. Each completed batch is handled under its call's lock: a sent request
 * is freed and the next one pumped; the initial metadata goes to on_metadata; a response
 * (time-stamped as it is taken off the queue) goes to on_response and the next receive is armed;
 * the end of the call is noted; and once nothing of an ended call is out, it is released and over
 * is called (which may start another call on the channel). */
void *bench_ads_cq_thread(void *cq);

/* Takes the completed batches off cq until it is shut down, passing each one's tag and
 * success to on_done (with arg); the loop of every benchmark thread that runs a
 * completion queue. */
void bench_cq_run(grpc_completion_queue *cq, void (*on_done)(void *tag, bool ok, void *arg),
                  void *arg);

/* Cancels the call, if one runs. */
void bench_ads_cancel(bench_ads_call *c);

/* Destroys the channel (no call may run). */
void bench_ads_destroy(bench_ads_call *c);

#endif
