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

#include "tests/bench/lib/bench.h"
#include "tests/bench/lib/bench_ads.h"

#define CDS_URL      "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define EDS_URL      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define STR_MAX      128
#define MAX_RESTARTS 3

enum { T_CDS, T_EDS, T_COUNT };
static const char *const type_url[T_COUNT] = {CDS_URL, EDS_URL};

typedef struct stream stream;

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
    bench_ads_call ads;
    bool counted;
    int restarts;
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
    uint8_t *out = bench_xmalloc(*len);
    memcpy(out, GRPC_SLICE_START_PTR(s), *len);
    grpc_slice_unref(s);
    return out;
}

/* ---------------------------------------------------------------- one stream */

/* Sends the next waiting request (CDS before EDS) when no send is in flight. */
static void pump_locked(bench_ads_call *c)
{
    stream *s = c->owner;
    if (c->sending || c->call == NULL || c->call_over)
        return;
    for (int t = 0; t < T_COUNT; t++) {
        type_state *ts = &s->ty[t];
        if (!ts->want_send)
            continue;
        ts->want_send = false;
        char node_id[64];
        snprintf(node_id, sizeof node_id, "k8s-bench-%u", s->idx);
        bench_ads_send(c, node_id, s->group, type_url[t], ts->ack_version, ts->ack_nonce,
                       t == T_EDS ? s->names : NULL, t == T_EDS ? s->n_names : 0);
        return;
    }
}

static void start_call_locked(stream *s)
{
    for (int t = 0; t < T_COUNT; t++) {
        s->ty[t].want_send = true;
        s->ty[t].ack_nonce[0] = '\0';
    }
    n_live++;
    bench_ads_start(&s->ads, cq);
}

static void call_over_locked(bench_ads_call *c)
{
    stream *s = c->owner;
    n_live--;
    if (!stopping && s->restarts < MAX_RESTARTS) {
        s->restarts++;
        n_restarts++;
        start_call_locked(s);
    }
    pthread_cond_broadcast(&cond);
}

static bool log_end_locked(bench_ads_call *c)
{
    (void)c;
    return !stopping && n_errors++ < 5;
}

static void on_recv_locked(bench_ads_call *c, int64_t at)
{
    stream *s = c->owner;
    size_t len = 0;
    uint8_t *msg = flatten(c->recv_buf, &len);
    grpc_byte_buffer_destroy(c->recv_buf);
    c->recv_buf = NULL;
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
    pump_locked(c);
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
    streams = bench_xmalloc(cap * sizeof *streams);
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
        s->names = bench_xmalloc(nn * sizeof *s->names);
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

static const bench_ads_hooks hooks = {
    .pump = pump_locked,
    .on_response = on_recv_locked,
    .log_end = log_end_locked,
    .over = call_over_locked,
};

static void open_stream(stream *s)
{
    bench_ads_init(&s->ads, "bench_k8s_translate", s->idx, s, &mu, &hooks, target);
    pthread_mutex_lock(&mu);
    start_call_locked(s);
    pthread_mutex_unlock(&mu);
}

/* Waits on cond until *done says so or deadline_ns passes; mu held. */
static bool wait_until(bool (*done)(void *), void *arg, int64_t deadline_ns)
{
    while (!done(arg)) {
        int64_t left = deadline_ns - bench_now_ns();
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
            printf("%" PRId64 "\n", bench_now_ns());
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
            timeout_s = (int)bench_parse_num("--timeout", v, 1, 86400);
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
    pthread_create(&th, NULL, bench_ads_cq_thread, cq);
    int64_t t_start = bench_now_ns();
    for (unsigned i = 0; i < n_streams; i++)
        open_stream(&streams[i]);
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (!wait_until(all_ready, NULL, t_start + (int64_t)timeout_s * 1000000000)) {
        printf("error only %u of %u streams received their first CDS and EDS within %d s\n",
               n_ready, n_streams, timeout_s);
        rc = 1;
    } else {
        printf("ready %u %.3f\n", n_streams, (double)(bench_now_ns() - t_start) / 1e9);
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
            if (wait_until(got, s, bench_now_ns() + (int64_t)timeout_s * 1000000000)) {
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
        bench_ads_cancel(&streams[i].ads);
    int64_t deadline = bench_now_ns() + 20 * (int64_t)1000000000;
    while (n_live > 0 && bench_now_ns() < deadline) {
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
        bench_ads_destroy(&streams[i].ads);
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
