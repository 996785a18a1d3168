/*
 * k8s_translate.c — the ADS client of the Kubernetes translation benchmark: one
 * Envoy-like state-of-the-world stream per sampled proxy group, timing when a changed
 * EndpointSlice reaches the group's clients as a ClusterLoadAssignment.
 *
 * Each stream has its own channel and HTTP/2 connection, names its group as the node's
 * cluster, asks for every Cluster (wildcard CDS) and for the ClusterLoadAssignments of
 * the group's backends (EDS, the names given), and ACKs every response with its
 * version_info and nonce, as Envoy does. Responses are not decoded beyond version_info,
 * type_url and nonce; an EDS response is searched for the encoded SocketAddress.address
 * the driver expects.
 * One thread runs the completion queue; time stamps are CLOCK_MONOTONIC.
 *
 * The driver (k8s_translate.py changes) talks to it over stdin/stdout:
 *   stdout "ready N SECONDS"   every stream holds its first CDS and EDS responses
 *   stdin  "arm I ADDR"        stream I (0-based, the line of --streams-file) is to
 *                              report the first EDS response holding ADDR; answer "armed"
 *   stdin  "wait I T0"         T0: CLOCK_MONOTONIC in ns, taken just before the change;
 *                              answer "got I SECONDS" (arrival - T0) once it came, or
 *                              "error ..." after --timeout
 *   stdin  "quit" / EOF        answer "stats responses=N rx_kb=K restarts=R", then exit
 *
 *   bench_k8s_translate --target HOST:PORT --streams-file FILE [--timeout S]
 *   bench_k8s_translate --now            prints CLOCK_MONOTONIC in ns
 * FILE: one line per stream, "<group> <cluster>,<cluster>,...".
 */
#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "envoy/config/core/v3/base.pb-c.h"
#include "envoy/service/discovery/v3/discovery.pb-c.h"

#define ADS_METHOD                                                                                 \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
#define CDS_URL      "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define EDS_URL      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define STR_MAX      128
#define MAX_RESTARTS 3

enum { T_CDS, T_EDS, T_COUNT };
static const char *const type_url[T_COUNT] = {CDS_URL, EDS_URL};

typedef enum { OP_SEND, OP_RECV, OP_STATUS } op_kind;

typedef struct stream stream;

typedef struct {
    stream *s;
    op_kind kind;
} op_tag;

typedef struct {
    bool want_send;
    bool got_first;
    char ack_version[STR_MAX];
    char ack_nonce[STR_MAX];
} type_state;

/* One stream; every field is guarded by the global mutex mu. */
struct stream {
    unsigned idx;
    char *group;
    char **names; /* EDS resource names */
    size_t n_names;
    grpc_channel *ch;
    grpc_call *call;
    op_tag t_send, t_recv, t_status;
    int ops_out;
    bool call_over, sending, sent_first, first_recv, counted;
    int restarts;
    grpc_byte_buffer *send_buf, *recv_buf;
    grpc_metadata_array md_init, md_trail;
    grpc_status_code status;
    grpc_slice details;
    type_state ty[T_COUNT];
    char want_addr[64]; /* armed: the address the next EDS response is to hold */
    int64_t got_at;     /* arrival of that response; 0 before */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static stream *streams;
static unsigned n_streams, n_ready, n_restarts, n_live, n_errors;
static uint64_t n_responses, rx_bytes;
static bool stopping;
static const char *target;
static grpc_completion_queue *cq;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "bench_k8s_translate: out of memory\n");
        abort();
    }
    return p;
}

/* ---------------------------------------------------------------- responses */

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if ((c & 0x80) == 0) {
            *out = v;
            return true;
        }
    }
    return false;
}

static void copy_field(char *dst, const uint8_t *p, uint64_t n)
{
    size_t k = n < STR_MAX - 1 ? (size_t)n : STR_MAX - 1;
    memcpy(dst, p, k);
    dst[k] = '\0';
}

/* Picks version_info (1), type_url (4) and nonce (5) out of a DiscoveryResponse. */
static bool parse_response(const uint8_t *p, size_t len, char *version, char *url, char *nonce)
{
    const uint8_t *end = p + len;
    version[0] = url[0] = nonce[0] = '\0';
    while (p < end) {
        uint64_t key, n;
        if (!varint(&p, end, &key))
            return false;
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &n))
                return false;
            break;
        case 1:
            p += 8;
            break;
        case 5:
            p += 4;
            break;
        case 2:
            if (!varint(&p, end, &n) || n > (uint64_t)(end - p))
                return false;
            if (key >> 3 == 1)
                copy_field(version, p, n);
            else if (key >> 3 == 4)
                copy_field(url, p, n);
            else if (key >> 3 == 5)
                copy_field(nonce, p, n);
            p += n;
            break;
        default:
            return false;
        }
    }
    return p == end;
}

/* Whether msg holds a SocketAddress whose address (field 2) is addr: the field's tag
 * and length are part of the pattern, so "10.0.0.1" does not match "10.0.0.12". */
static bool holds_address(const uint8_t *msg, size_t len, const char *addr)
{
    uint8_t pat[64];
    size_t n = strlen(addr);
    if (n + 2 > sizeof pat || n > 127)
        return false;
    pat[0] = (2 << 3) | 2;
    pat[1] = (uint8_t)n;
    memcpy(pat + 2, addr, n);
    return memmem(msg, len, pat, n + 2) != NULL;
}

/* The bytes of a received message, flattened (responses here are small). */
static uint8_t *flatten(grpc_byte_buffer *buf, size_t *len)
{
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, buf))
        return NULL;
    grpc_slice s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    *len = GRPC_SLICE_LENGTH(s);
    uint8_t *out = xmalloc(*len);
    memcpy(out, GRPC_SLICE_START_PTR(s), *len);
    grpc_slice_unref(s);
    return out;
}

/* ---------------------------------------------------------------- one stream */

static void batch_locked(stream *s, const grpc_op *ops, size_t n, op_tag *tag)
{
    grpc_call_error e = grpc_call_start_batch(s->call, ops, n, tag, NULL);
    if (e != GRPC_CALL_OK) {
        fprintf(stderr, "bench_k8s_translate: stream %u: grpc_call_start_batch: error %d\n", s->idx,
                (int)e);
        abort();
    }
    s->ops_out++;
}

/* Sends the next waiting request (CDS before EDS) when no send is in flight. */
static void pump_locked(stream *s)
{
    if (s->sending || s->call == NULL || s->call_over)
        return;
    for (int t = 0; t < T_COUNT; t++) {
        type_state *ts = &s->ty[t];
        if (!ts->want_send)
            continue;
        ts->want_send = false;
        char node_id[64];
        snprintf(node_id, sizeof node_id, "k8s-bench-%u", s->idx);
        Envoy__Config__Core__V3__Node node = ENVOY__CONFIG__CORE__V3__NODE__INIT;
        node.id = node_id;
        node.cluster = s->group;
        node.user_agent_name = "sextant-bench";
        Envoy__Service__Discovery__V3__DiscoveryRequest req =
            ENVOY__SERVICE__DISCOVERY__V3__DISCOVERY_REQUEST__INIT;
        req.version_info = ts->ack_version;
        req.response_nonce = ts->ack_nonce;
        req.type_url = (char *)type_url[t];
        if (!s->sent_first)
            req.node = &node;
        if (t == T_EDS) {
            req.n_resource_names = s->n_names;
            req.resource_names = s->names;
        }
        size_t len = envoy__service__discovery__v3__discovery_request__get_packed_size(&req);
        grpc_slice slice = grpc_slice_malloc(len);
        envoy__service__discovery__v3__discovery_request__pack(&req, GRPC_SLICE_START_PTR(slice));
        s->send_buf = grpc_raw_byte_buffer_create(&slice, 1);
        grpc_slice_unref(slice);
        grpc_op ops[2];
        size_t n = 0;
        memset(ops, 0, sizeof ops);
        if (!s->sent_first) {
            ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
            ops[n].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY |
                           GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
            n++;
            s->sent_first = true;
        }
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = s->send_buf;
        n++;
        s->sending = true;
        batch_locked(s, ops, n, &s->t_send);
        return;
    }
}

static void arm_recv_locked(stream *s)
{
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (s->first_recv) {
        ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[n].data.recv_initial_metadata.recv_initial_metadata = &s->md_init;
        n++;
        s->first_recv = false;
    }
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n].data.recv_message.recv_message = &s->recv_buf;
    n++;
    batch_locked(s, ops, n, &s->t_recv);
}

static void start_call_locked(stream *s)
{
    s->call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                       grpc_slice_from_static_string(ADS_METHOD), NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    s->ops_out = 0;
    s->call_over = s->sending = s->sent_first = false;
    s->first_recv = true;
    grpc_metadata_array_init(&s->md_init);
    grpc_metadata_array_init(&s->md_trail);
    for (int t = 0; t < T_COUNT; t++) {
        s->ty[t].want_send = true;
        s->ty[t].ack_nonce[0] = '\0';
    }
    n_live++;
    pump_locked(s);
    arm_recv_locked(s);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    op.data.recv_status_on_client.trailing_metadata = &s->md_trail;
    op.data.recv_status_on_client.status = &s->status;
    op.data.recv_status_on_client.status_details = &s->details;
    batch_locked(s, &op, 1, &s->t_status);
}

static void finish_call_locked(stream *s)
{
    grpc_call_unref(s->call);
    s->call = NULL;
    grpc_metadata_array_destroy(&s->md_init);
    grpc_metadata_array_destroy(&s->md_trail);
    grpc_slice_unref(s->details);
    n_live--;
    if (!stopping && s->restarts < MAX_RESTARTS) {
        s->restarts++;
        n_restarts++;
        start_call_locked(s);
    }
    pthread_cond_broadcast(&cond);
}

static void on_recv_locked(stream *s, int64_t at)
{
    size_t len = 0;
    uint8_t *msg = flatten(s->recv_buf, &len);
    grpc_byte_buffer_destroy(s->recv_buf);
    s->recv_buf = NULL;
    char version[STR_MAX], url[STR_MAX], nonce[STR_MAX];
    bool ok = msg != NULL && parse_response(msg, len, version, url, nonce);
    int t = -1;
    for (int i = 0; ok && i < T_COUNT; i++)
        if (strcmp(url, type_url[i]) == 0)
            t = i;
    n_responses++;
    rx_bytes += len;
    if (t < 0) {
        if (n_errors++ < 5)
            fprintf(stderr,
                    "bench_k8s_translate: stream %u: unexpected response (type_url \"%s\")\n",
                    s->idx, ok ? url : "?");
        free(msg);
        return;
    }
    type_state *ts = &s->ty[t];
    ts->got_first = true;
    snprintf(ts->ack_version, STR_MAX, "%s", version);
    snprintf(ts->ack_nonce, STR_MAX, "%s", nonce);
    ts->want_send = true;
    if (t == T_EDS && s->want_addr[0] && s->got_at == 0 && holds_address(msg, len, s->want_addr)) {
        s->got_at = at;
        pthread_cond_broadcast(&cond);
    }
    free(msg);
    if (!s->counted && s->ty[T_CDS].got_first && s->ty[T_EDS].got_first) {
        s->counted = true;
        n_ready++;
        pthread_cond_broadcast(&cond);
    }
    pump_locked(s);
}

static void handle(op_tag *tag, bool success)
{
    int64_t at = now_ns();
    stream *s = tag->s;
    pthread_mutex_lock(&mu);
    s->ops_out--;
    switch (tag->kind) {
    case OP_SEND:
        grpc_byte_buffer_destroy(s->send_buf);
        s->send_buf = NULL;
        s->sending = false;
        if (success)
            pump_locked(s);
        break;
    case OP_RECV:
        if (success && s->recv_buf != NULL) {
            on_recv_locked(s, at);
            if (!s->call_over)
                arm_recv_locked(s);
        }
        break;
    case OP_STATUS:
        s->call_over = true;
        if (!stopping && n_errors++ < 5) {
            char *d = grpc_slice_to_c_string(s->details);
            fprintf(stderr, "bench_k8s_translate: stream %u ended: status %d: %s\n", s->idx,
                    (int)s->status, d);
            gpr_free(d);
        }
        break;
    }
    if (s->call_over && s->ops_out == 0)
        finish_call_locked(s);
    pthread_mutex_unlock(&mu);
}

static void *cq_thread(void *arg)
{
    (void)arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            return NULL;
        if (ev.type == GRPC_OP_COMPLETE)
            handle(ev.tag, ev.success != 0);
    }
}

/* ---------------------------------------------------------------- main thread */

static void read_streams(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "bench_k8s_translate: cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t cap = 16;
    streams = xmalloc(cap * sizeof *streams);
    char line[8192];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        char *sp = strchr(line, ' ');
        if (line[0] == '\0')
            continue;
        if (sp == NULL || sp[1] == '\0') {
            fprintf(stderr, "bench_k8s_translate: %s: want \"<group> <cluster>,...\": %s\n", path,
                    line);
            exit(2);
        }
        *sp = '\0';
        if (n_streams == cap) {
            cap *= 2;
            stream *ns = realloc(streams, cap * sizeof *streams);
            if (ns == NULL)
                abort();
            streams = ns;
        }
        stream *s = &streams[n_streams];
        memset(s, 0, sizeof *s);
        s->idx = n_streams++;
        s->group = strdup(line);
        size_t nn = 1;
        for (const char *p = sp + 1; *p; p++)
            nn += *p == ',';
        s->names = xmalloc(nn * sizeof *s->names);
        for (char *save = NULL, *tok = strtok_r(sp + 1, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save))
            s->names[s->n_names++] = strdup(tok);
    }
    fclose(f);
    if (n_streams == 0) {
        fprintf(stderr, "bench_k8s_translate: %s names no stream\n", path);
        exit(2);
    }
}

static void open_stream(stream *s)
{
    s->t_send = (op_tag){s, OP_SEND};
    s->t_recv = (op_tag){s, OP_RECV};
    s->t_status = (op_tag){s, OP_STATUS};
    grpc_arg args[2] = {
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value.integer = 1},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, .value.integer = -1},
    };
    grpc_channel_args ca = {.num_args = 2, .args = args};
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    s->ch = grpc_channel_create(target, creds, &ca);
    grpc_channel_credentials_release(creds);
    pthread_mutex_lock(&mu);
    start_call_locked(s);
    pthread_mutex_unlock(&mu);
}

/* Waits on cond until *done says so or deadline_ns passes; mu held. */
static bool wait_until(bool (*done)(void *), void *arg, int64_t deadline_ns)
{
    while (!done(arg)) {
        int64_t left = deadline_ns - now_ns();
        if (left <= 0)
            return false;
        if (left > 100000000)
            left = 100000000;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)left;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&cond, &mu, &ts);
    }
    return true;
}

static bool all_ready(void *arg)
{
    (void)arg;
    return n_ready == n_streams;
}

static bool got(void *arg)
{
    return ((stream *)arg)->got_at != 0;
}

static long parse_num(const char *opt, const char *v, long min, long max)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max) {
        fprintf(stderr, "bench_k8s_translate: %s wants a number from %ld to %ld, not \"%s\"\n", opt,
                min, max, v);
        exit(2);
    }
    return n;
}

static void usage(void)
{
    fputs("usage: bench_k8s_translate --target HOST:PORT --streams-file FILE [--timeout S]\n"
          "       bench_k8s_translate --now   (prints CLOCK_MONOTONIC in ns)\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *file = NULL;
    int timeout_s = 300;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--now") == 0) {
            printf("%" PRId64 "\n", now_ns());
            return 0;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--target") == 0)
            target = v;
        else if (strcmp(argv[i - 1], "--streams-file") == 0)
            file = v;
        else if (strcmp(argv[i - 1], "--timeout") == 0)
            timeout_s = (int)parse_num("--timeout", v, 1, 86400);
        else
            usage();
    }
    if (target == NULL || file == NULL)
        usage();
    read_streams(file);
    setvbuf(stdout, NULL, _IOLBF, 0);

    grpc_init();
    cq = grpc_completion_queue_create_for_next(NULL);
    pthread_t th;
    pthread_create(&th, NULL, cq_thread, NULL);
    int64_t t_start = now_ns();
    for (unsigned i = 0; i < n_streams; i++)
        open_stream(&streams[i]);
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (!wait_until(all_ready, NULL, t_start + (int64_t)timeout_s * 1000000000)) {
        printf("error only %u of %u streams received their first CDS and EDS within %d s\n",
               n_ready, n_streams, timeout_s);
        rc = 1;
    } else {
        printf("ready %u %.3f\n", n_streams, (double)(now_ns() - t_start) / 1e9);
    }
    pthread_mutex_unlock(&mu);

    char line[256];
    while (rc == 0 && fgets(line, sizeof line, stdin) != NULL) {
        unsigned idx;
        char addr[64];
        long long t0;
        if (sscanf(line, "arm %u %63s", &idx, addr) == 2 && idx < n_streams) {
            pthread_mutex_lock(&mu);
            snprintf(streams[idx].want_addr, sizeof streams[idx].want_addr, "%s", addr);
            streams[idx].got_at = 0;
            pthread_mutex_unlock(&mu);
            printf("armed %u\n", idx);
        } else if (sscanf(line, "wait %u %lld", &idx, &t0) == 2 && idx < n_streams) {
            stream *s = &streams[idx];
            pthread_mutex_lock(&mu);
            if (wait_until(got, s, now_ns() + (int64_t)timeout_s * 1000000000)) {
                printf("got %u %.6f\n", idx, (double)(s->got_at - t0) / 1e9);
                s->want_addr[0] = '\0';
            } else {
                printf("error stream %u (group %s) did not receive %s within %d s\n", idx, s->group,
                       s->want_addr, timeout_s);
                rc = 1;
            }
            pthread_mutex_unlock(&mu);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        } else {
            printf("error unknown command: %s", line);
            rc = 1;
        }
    }
    pthread_mutex_lock(&mu);
    printf("stats responses=%" PRIu64 " rx_kb=%.1f restarts=%u\n", n_responses,
           (double)rx_bytes / 1e3, n_restarts);
    stopping = true;
    for (unsigned i = 0; i < n_streams; i++)
        if (streams[i].call != NULL)
            grpc_call_cancel(streams[i].call, NULL);
    int64_t deadline = now_ns() + 20 * (int64_t)1000000000;
    while (n_live > 0 && now_ns() < deadline) {
        pthread_mutex_unlock(&mu);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&mu);
    }
    unsigned live = n_live;
    pthread_mutex_unlock(&mu);
    if (live > 0) {
        fprintf(stderr, "bench_k8s_translate: %u calls did not finish; exiting without teardown\n",
                live);
        fflush(stdout);
        _exit(rc);
    }
    for (unsigned i = 0; i < n_streams; i++) {
        grpc_channel_destroy(streams[i].ch);
        for (size_t k = 0; k < streams[i].n_names; k++)
            free(streams[i].names[k]);
        free(streams[i].names);
        free(streams[i].group);
    }
    grpc_completion_queue_shutdown(cq);
    pthread_join(th, NULL);
    grpc_completion_queue_destroy(cq);
    grpc_shutdown();
    free(streams);
    return rc;
}
