/*
 * xds_fanout.c — ADS fan-out benchmark client: many Envoy-like SotW streams in one
 * process, timing how long a newly published snapshot takes to reach every one.
 *
 * Each stream has its own channel and therefore its own HTTP/2 connection
 * (GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL), as every Envoy has its own. A stream sends a
 * wildcard CDS request and, given --eds-names, an EDS request for those clusters, and
 * ACKs every response with its version_info and nonce, like a real client (Sextant
 * holds back a type until its previous response is ACKed). Responses are not decoded:
 * a small wire walker over the received slices picks out version_info (field 1),
 * type_url (4) and nonce (5) and skips the resources without copying them, so that
 * 10,000 streams receiving megabytes of endpoints measure the server, not this client.
 * Two threads run the completion queue; every time stamp is CLOCK_MONOTONIC.
 *
 * The driver (xds_fanout.sh) talks to it over stdin/stdout:
 *   stdout  "ready N SECONDS RX_MB"  once every stream holds a first version of every type
 *   stdin   "go NS"    NS is the CLOCK_MONOTONIC time just before `sextant publish`
 *                      started (`bench_xds_fanout --now` prints one); the client then
 *                      waits until every stream received a version different from its
 *                      first one, for every type the push changes (--changed: cds,eds by
 *                      default; eds when only endpoints change), and prints one "result"
 *                      line per such type ("all" = the stream held the whole new config),
 *                      a "stats" line (bytes and messages received per stream), then "done"
 *   stdin   "quit" or end of file: cancels the streams and exits
 *   stdin   "stats"    prints the "stats" line again (what arrived since "ready" so far)
 * With --arrivals FILE, every report also writes FILE: one line per stream that holds
 * the new version, "<node id> <seconds after NS>" (the latest of its changed types).
 * With --reconnect, "go NS" means the server the streams were on was stopped at NS: the
 * report then also waits until every stream's call was started again and accepted by a
 * server (its initial metadata arrived; the channel's target may list a second server,
 * e.g. "ipv4:127.0.0.1:A,127.0.0.1:B") and prints a "result type=reconnect" line with
 * its "cdf"; --changed none waits for nothing else (the streams keep their version).
 * Errors and progress go to stderr.
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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/lib/bench.h"
#include "tests/bench/lib/bench_ads.h"

#define CDS_URL      "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define EDS_URL      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define STR_MAX      96 /* versions, nonces and type URLs are short; longer ones are cut */
#define CQ_THREADS   2
#define MAX_RESTARTS 3 /* calls started again per stream after the server ended one */
/* Calls started again in a row that ended before a server accepted them: when a
 * connection breaks, a call started at once can still be given to it and fail at once. */
#define MAX_UNACCEPTED 100

enum { T_CDS, T_EDS, T_COUNT };
static const char *const type_url[T_COUNT] = {CDS_URL, EDS_URL};
static const char *const type_name[T_COUNT] = {"cds", "eds"};

typedef struct stream stream;
typedef struct bench bench;

/* What one stream knows about one resource type. */
typedef struct {
    bool want_send;            /* a request (first one or ACK) waits for the send slot */
    char ack_version[STR_MAX]; /* version_info of the request to send / last sent */
    char ack_nonce[STR_MAX];   /* response_nonce of the request to send */
    bool got_first;            /* a first response arrived */
    char first_version[STR_MAX];
    int64_t new_at_ns; /* arrival of the first response with another version; 0 before */
} type_state;

/* One ADS stream and its channel. Fields below mu are guarded by it: the two
 * completion-queue threads may handle a send and a receive of one call at once. */
struct stream {
    bench *b;
    pthread_mutex_t mu;
    bench_ads_call ads;
    bool counted_initial;     /* counted in bench.initial */
    bool counted_updated;     /* counted in bench.updated */
    int restarts;             /* calls started again after one ended */
    int ended_accepted;       /* calls a server accepted (initial metadata) that then ended */
    int unaccepted_run;       /* calls in a row that ended before a server accepted them */
    bool accepted;            /* the current call was accepted */
    int64_t reaccepted_at_ns; /* initial metadata of the first call started again; 0 before */
    type_state ty[T_COUNT];
};

/* The whole benchmark: options, the completion queue and the counters the main
 * thread waits on. */
struct bench {
    const char *target;      /* host:port of `sextant serve`'s gRPC listener */
    const char *group;       /* node.cluster: the proxy group */
    const char *node_prefix; /* node.id is "<prefix>-<index>" */
    unsigned n_streams;
    unsigned ramp;    /* at most this many streams waiting for their first versions */
    int timeout_s;    /* longest wait for "ready" and for "done" */
    char **eds_names; /* EDS resource names; NULL: no EDS subscription */
    size_t n_eds;
    int n_types;      /* T_CDS only, or T_CDS and T_EDS */
    unsigned changed; /* bit t: type t gets a new version in the push (--changed) */
    grpc_completion_queue *cq;
    stream *streams;
    atomic_uint initial;           /* streams holding a first version of every type */
    atomic_uint updated;           /* streams holding a new version of every type */
    atomic_uint live;              /* calls started and not yet finished */
    atomic_uint restarts;          /* calls that ended and were started again */
    atomic_uint reaccepted;        /* streams whose call started again was accepted */
    atomic_uint gave_up;           /* streams not started again after their call ended */
    bool reconnect;                /* --reconnect: "go" also waits for every reaccepted */
    atomic_uint errors;            /* status lines printed (the first few only) */
    atomic_uint_fast64_t rx_bytes; /* response bytes received */
    atomic_uint_fast64_t rx_msgs;  /* responses received */
    atomic_bool stopping;
    long max_rss_mb;      /* the client exits rather than push the machine into swap/OOM */
    const char *arrivals; /* --arrivals: per-stream arrival times go there; NULL: none */
};

static void copy_str(char *dst, const char *src)
{
    snprintf(dst, STR_MAX, "%s", src);
}

/* ---------------------------------------------------------------- wire walker */

/* A read cursor over a received byte buffer's slices (no copy). */
typedef struct {
    grpc_byte_buffer_reader r;
    const uint8_t *p, *end;
} wire;

static bool wire_fill(wire *w)
{
    while (w->p == w->end) {
        grpc_slice *s;
        if (!grpc_byte_buffer_reader_peek(&w->r, &s))
            return false;
        w->p = GRPC_SLICE_START_PTR(*s);
        w->end = w->p + GRPC_SLICE_LENGTH(*s);
    }
    return true;
}

static bool wire_varint(wire *w, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (!wire_fill(w))
            return false;
        uint8_t c = *w->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if ((c & 0x80) == 0) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Skips n bytes; when dst is not NULL, keeps the first STR_MAX - 1 of them there. */
static bool wire_take(wire *w, uint64_t n, char *dst)
{
    size_t kept = 0;
    while (n > 0) {
        if (!wire_fill(w))
            return false;
        size_t k = (size_t)(w->end - w->p);
        if (k > n)
            k = (size_t)n;
        if (dst != NULL && kept < STR_MAX - 1) {
            size_t c = k < STR_MAX - 1 - kept ? k : STR_MAX - 1 - kept;
            memcpy(dst + kept, w->p, c);
            kept += c;
        }
        w->p += k;
        n -= k;
    }
    if (dst != NULL)
        dst[kept] = '\0';
    return true;
}

/* Picks version_info, type_url and nonce out of a serialized DiscoveryResponse.
 * Returns false on a malformed message. */
static bool parse_response(grpc_byte_buffer *buf, char *version, char *url, char *nonce)
{
    wire w = {.p = NULL, .end = NULL};
    version[0] = url[0] = nonce[0] = '\0';
    if (!grpc_byte_buffer_reader_init(&w.r, buf))
        return false;
    bool ok = true;
    uint64_t key, len;
    while (ok && wire_fill(&w)) {
        if (!wire_varint(&w, &key)) {
            ok = false;
            break;
        }
        switch (key & 7) {
        case 0:
            ok = wire_varint(&w, &len);
            break;
        case 1:
            ok = wire_take(&w, 8, NULL);
            break;
        case 5:
            ok = wire_take(&w, 4, NULL);
            break;
        case 2: {
            char *dst = NULL;
            if (key >> 3 == 1)
                dst = version;
            else if (key >> 3 == 4)
                dst = url;
            else if (key >> 3 == 5)
                dst = nonce;
            ok = wire_varint(&w, &len) && wire_take(&w, len, dst);
            break;
        }
        default:
            ok = false;
        }
    }
    grpc_byte_buffer_reader_destroy(&w.r);
    return ok;
}

/* ---------------------------------------------------------------- one stream */

/* Sends the next waiting request, CDS before EDS, when no send is in flight. */
static void pump_locked(bench_ads_call *c)
{
    stream *s = c->owner;
    bench *b = s->b;
    if (c->sending || c->call == NULL || c->call_over)
        return;
    for (int t = 0; t < b->n_types; t++) {
        type_state *ts = &s->ty[t];
        if (!ts->want_send)
            continue;
        ts->want_send = false;
        char node_id[64];
        snprintf(node_id, sizeof node_id, "%s-%u", b->node_prefix, c->idx);
        bench_ads_send(c, node_id, b->group, type_url[t], ts->ack_version, ts->ack_nonce,
                       t == T_EDS ? b->eds_names : NULL, t == T_EDS ? b->n_eds : 0);
        return;
    }
}

/* Starts a call on the stream's channel: every subscribed type gets a request
 * carrying the version it last ACKed (empty the first time), as on a reconnect. */
static void start_call_locked(stream *s)
{
    bench *b = s->b;
    for (int t = 0; t < b->n_types; t++) {
        s->ty[t].want_send = true;
        s->ty[t].ack_nonce[0] = '\0';
    }
    s->accepted = false;
    atomic_fetch_add(&b->live, 1);
    bench_ads_start(&s->ads, b->cq);
}

/* The call has ended and no batch of it is outstanding: start another one unless the
 * benchmark is stopping. */
static void call_over_locked(bench_ads_call *c)
{
    stream *s = c->owner;
    bench *b = s->b;
    atomic_fetch_sub(&b->live, 1);
    /* Reconnect like a proxy would, but give up on a stream the server keeps ending. */
    if (s->accepted)
        s->ended_accepted++;
    else
        s->unaccepted_run++;
    if (!atomic_load(&b->stopping) && s->ended_accepted <= MAX_RESTARTS &&
        s->unaccepted_run < MAX_UNACCEPTED) {
        s->restarts++;
        atomic_fetch_add(&b->restarts, 1);
        start_call_locked(s);
    } else if (!atomic_load(&b->stopping)) {
        atomic_fetch_add(&b->gave_up, 1);
    }
}

static bool log_end_locked(bench_ads_call *c)
{
    bench *b = ((stream *)c->owner)->b;
    return !atomic_load(&b->stopping) && atomic_fetch_add(&b->errors, 1) < 5;
}

static void on_recv_locked(bench_ads_call *c, int64_t at)
{
    stream *s = c->owner;
    bench *b = s->b;
    char version[STR_MAX], url[STR_MAX], nonce[STR_MAX];
    atomic_fetch_add(&b->rx_bytes, grpc_byte_buffer_length(c->recv_buf));
    atomic_fetch_add(&b->rx_msgs, 1);
    bool ok = parse_response(c->recv_buf, version, url, nonce);
    grpc_byte_buffer_destroy(c->recv_buf);
    c->recv_buf = NULL;
    int t = -1;
    for (int i = 0; i < b->n_types; i++)
        if (strcmp(url, type_url[i]) == 0)
            t = i;
    if (!ok || t < 0) {
        if (atomic_fetch_add(&b->errors, 1) < 5)
            fprintf(stderr, "bench_xds_fanout: stream %u: unexpected response (type_url \"%s\")\n",
                    c->idx, url);
        return;
    }
    type_state *ts = &s->ty[t];
    if (!ts->got_first) {
        ts->got_first = true;
        copy_str(ts->first_version, version);
    } else if (ts->new_at_ns == 0 && strcmp(version, ts->first_version) != 0) {
        ts->new_at_ns = at;
    }
    copy_str(ts->ack_version, version);
    copy_str(ts->ack_nonce, nonce);
    ts->want_send = true;

    bool all_first = true, all_new = true;
    for (int i = 0; i < b->n_types; i++) {
        all_first = all_first && s->ty[i].got_first;
        all_new = all_new && (s->ty[i].new_at_ns != 0 || !(b->changed & (1u << i)));
    }
    if (all_first && !s->counted_initial) {
        s->counted_initial = true;
        atomic_fetch_add(&b->initial, 1);
    }
    if (all_new && !s->counted_updated) {
        s->counted_updated = true;
        atomic_fetch_add(&b->updated, 1);
    }
    pump_locked(c);
}

/* The server sent its initial metadata: it accepted the call. */
static void on_metadata_locked(bench_ads_call *c, int64_t at)
{
    stream *s = c->owner;
    s->accepted = true;
    s->unaccepted_run = 0;
    if (s->restarts > 0 && s->reaccepted_at_ns == 0) {
        s->reaccepted_at_ns = at;
        atomic_fetch_add(&s->b->reaccepted, 1);
    }
}

/* ---------------------------------------------------------------- main thread */

static const bench_ads_hooks hooks = {
    .pump = pump_locked,
    .on_response = on_recv_locked,
    .log_end = log_end_locked,
    .over = call_over_locked,
    .on_metadata = on_metadata_locked,
};

static void open_stream(bench *b, unsigned i)
{
    stream *s = &b->streams[i];
    memset(s, 0, sizeof *s);
    s->b = b;
    pthread_mutex_init(&s->mu, NULL);
    bench_ads_init(&s->ads, "bench_xds_fanout", i, s, &s->mu, &hooks, b->target);
    pthread_mutex_lock(&s->mu);
    start_call_locked(s);
    pthread_mutex_unlock(&s->mu);
}

/* Exits the process when its RSS passes b->max_rss_mb: the machine is shared, and
 * 10,000 streams each assembling a multi-megabyte response can take more memory
 * than it has (gRPC hands over a message only once it is complete). */
static void *rss_guard(void *arg)
{
    bench *b = arg;
    long page_kb = sysconf(_SC_PAGESIZE) / 1024;
    for (;;) {
        FILE *f = fopen("/proc/self/statm", "r");
        long size = 0, rss = 0;
        if (f != NULL) {
            if (fscanf(f, "%ld %ld", &size, &rss) != 2)
                rss = 0;
            fclose(f);
        }
        if (rss * page_kb / 1024 > b->max_rss_mb) {
            printf("error client rss %ld MB above --max-rss-mb %ld (streams %u, updated %u)\n",
                   rss * page_kb / 1024, b->max_rss_mb, atomic_load(&b->initial),
                   atomic_load(&b->updated));
            fflush(stdout);
            _exit(3);
        }
        usleep(20000);
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct_s(const int64_t *v, size_t n, double p)
{
    size_t rank = (size_t)(p * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return (double)v[rank - 1] / 1e9;
}

/* Prints "result type=NAME received=N p50=..s p99=..s max=..s" for the n times (ns) of
 * v, sorting them, and with cdf also "cdf" and the 101 percentiles 0 %..100 % in seconds. */
static void print_result(const char *name, int64_t *v, size_t n, bool cdf)
{
    qsort(v, n, sizeof *v, cmp_i64);
    if (n == 0) {
        printf("result type=%s received=0\n", name);
        return;
    }
    printf("result type=%s received=%zu p50=%.3fs p99=%.3fs max=%.3fs\n", name, n,
           pct_s(v, n, 0.50), pct_s(v, n, 0.99), pct_s(v, n, 1.0));
    if (cdf) {
        printf("cdf");
        for (int q = 0; q <= 100; q++)
            printf(" %.4f", pct_s(v, n, (double)q / 100.0));
        printf("\n");
    }
}

/* The reconnect: per stream whose call started again was accepted, how long after t0. */
static void report_reconnect(bench *b, int64_t t0, int64_t *v)
{
    size_t n = 0;
    for (unsigned i = 0; i < b->n_streams; i++) {
        stream *s = &b->streams[i];
        pthread_mutex_lock(&s->mu);
        int64_t at = s->reaccepted_at_ns;
        pthread_mutex_unlock(&s->mu);
        if (at != 0)
            v[n++] = at > t0 ? at - t0 : 0;
    }
    print_result("reconnect", v, n, true);
}

/* Whether stream s holds the new version of type t (t < 0: of every changed type), and
 * in *at when the last of them arrived. */
static bool new_versions_at(bench *b, stream *s, int t, int64_t *at)
{
    bool have = true;
    *at = 0;
    pthread_mutex_lock(&s->mu);
    for (int k = 0; k < b->n_types; k++) {
        if ((t >= 0 && k != t) || !(b->changed & (1u << k)))
            continue;
        if (s->ty[k].new_at_ns == 0)
            have = false;
        else if (s->ty[k].new_at_ns > *at)
            *at = s->ty[k].new_at_ns;
    }
    pthread_mutex_unlock(&s->mu);
    return have;
}

/* Prints the result of one type, or of all types (t < 0: per stream, the latest of its
 * types); for the summary (all types, or the only one) also its "cdf". */
static void report(bench *b, int t, int64_t t0, int64_t *v)
{
    size_t n = 0;
    for (unsigned i = 0; i < b->n_streams; i++) {
        int64_t at;
        if (new_versions_at(b, &b->streams[i], t, &at))
            v[n++] = at > t0 ? at - t0 : 0;
    }
    print_result(t >= 0 ? type_name[t] : "all", v, n, t < 0 || b->n_types == 1);
}

/* Writes b->arrivals: per stream holding every changed type's new version, its node id
 * and when the last of them arrived, in seconds after t0. */
static void write_arrivals(bench *b, int64_t t0)
{
    FILE *f = fopen(b->arrivals, "w");
    if (f == NULL) {
        fprintf(stderr, "bench_xds_fanout: could not write %s: %s\n", b->arrivals, strerror(errno));
        return;
    }
    for (unsigned i = 0; i < b->n_streams; i++) {
        int64_t at;
        if (new_versions_at(b, &b->streams[i], -1, &at))
            fprintf(f, "%s-%u %.6f\n", b->node_prefix, i, (double)(at - t0) / 1e9);
    }
    fclose(f);
}

/* Waits until *counter reaches target or the timeout passes; false on timeout. */
static bool wait_count(bench *b, atomic_uint *counter, unsigned target)
{
    int64_t deadline = bench_now_ns() + (int64_t)b->timeout_s * 1000000000;
    while (atomic_load(counter) < target) {
        if (bench_now_ns() > deadline)
            return false;
        usleep(2000);
    }
    return true;
}

/* Prints the "stats" line: what the push (or the reconnect) cost each stream, every
 * response since "ready" (including any of a type that did not change), bytes as gRPC
 * hands them over. */
static void print_stats(bench *b, uint64_t rx_ready, uint64_t msgs_ready, bool all)
{
    uint64_t rx = atomic_load(&b->rx_bytes) - rx_ready;
    uint64_t msgs = atomic_load(&b->rx_msgs) - msgs_ready;
    printf("stats updated=%u/%u restarts=%u reaccepted=%u gave_up=%u rx_mb=%.1f "
           "rx_bytes_per_stream=%.0f "
           "rx_msgs_per_stream=%.2f rx_msgs=%" PRIu64 "%s\n",
           atomic_load(&b->updated), b->n_streams, atomic_load(&b->restarts),
           atomic_load(&b->reaccepted), atomic_load(&b->gave_up), (double)rx / 1e6,
           (double)rx / b->n_streams, (double)msgs / b->n_streams, msgs, all ? "" : " timeout=1");
}

static char **read_names(const char *path, size_t *n_out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "bench_xds_fanout: could not open %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t n = 0, cap = 16;
    char **v = bench_xmalloc(cap * sizeof *v);
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0')
            continue;
        if (n == cap) {
            cap *= 2;
            char **nv = realloc(v, cap * sizeof *v);
            if (nv == NULL)
                abort();
            v = nv;
        }
        v[n++] = strdup(line);
    }
    fclose(f);
    *n_out = n;
    return v;
}

static void usage(void)
{
    fputs("usage: bench_xds_fanout --target HOST:PORT [--streams N] [--group G]\n"
          "           [--node-prefix P] [--eds-names FILE] [--ramp N] [--timeout S]\n"
          "           [--max-rss-mb M] [--changed cds,eds|eds|cds|none] [--arrivals FILE]\n"
          "           [--reconnect]\n"
          "       bench_xds_fanout --now   (prints CLOCK_MONOTONIC in ns)\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    static bench b; /* large and zeroed; lives for the whole process */
    b.group = "bench";
    b.node_prefix = "bench-node";
    b.n_streams = 100;
    b.ramp = 1000;
    b.timeout_s = 300;
    b.n_types = 1;
    b.max_rss_mb = 12000;
    b.changed = (1u << T_CDS) | (1u << T_EDS);
    const char *names_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--now") == 0) {
            printf("%" PRId64 "\n", bench_now_ns());
            return 0;
        }
        if (strcmp(a, "--reconnect") == 0) {
            b.reconnect = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (strcmp(a, "--target") == 0)
            b.target = v;
        else if (strcmp(a, "--streams") == 0)
            b.n_streams = (unsigned)bench_parse_num(a, v, 1, 19000);
        else if (strcmp(a, "--group") == 0)
            b.group = v;
        else if (strcmp(a, "--node-prefix") == 0)
            b.node_prefix = v;
        else if (strcmp(a, "--eds-names") == 0)
            names_file = v;
        else if (strcmp(a, "--ramp") == 0)
            b.ramp = (unsigned)bench_parse_num(a, v, 1, 100000);
        else if (strcmp(a, "--max-rss-mb") == 0)
            b.max_rss_mb = bench_parse_num(a, v, 64, 1L << 30);
        else if (strcmp(a, "--arrivals") == 0)
            b.arrivals = v;
        else if (strcmp(a, "--changed") == 0)
            b.changed = (strstr(v, "cds") ? 1u << T_CDS : 0) | (strstr(v, "eds") ? 1u << T_EDS : 0);
        else if (strcmp(a, "--timeout") == 0)
            b.timeout_s = (int)bench_parse_num(a, v, 1, 86400);
        else
            usage();
    }
    if (b.target == NULL)
        usage();
    if (names_file != NULL) {
        b.eds_names = read_names(names_file, &b.n_eds);
        b.n_types = b.n_eds > 0 ? 2 : 1;
    }
    b.changed &= (1u << b.n_types) - 1;
    if (b.changed == 0 && !b.reconnect)
        usage();

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }

    pthread_t guard;
    pthread_create(&guard, NULL, rss_guard, &b);
    pthread_detach(guard);
    grpc_init();
    b.cq = grpc_completion_queue_create_for_next(NULL);
    pthread_t th[CQ_THREADS];
    for (int i = 0; i < CQ_THREADS; i++)
        pthread_create(&th[i], NULL, bench_ads_cq_thread, b.cq);

    b.streams = bench_xmalloc(b.n_streams * sizeof *b.streams);
    int64_t t_start = bench_now_ns();
    for (unsigned i = 0; i < b.n_streams; i++) {
        /* Connect in waves so the listen backlog is not flooded. */
        while (i - atomic_load(&b.initial) >= b.ramp &&
               bench_now_ns() - t_start < (int64_t)b.timeout_s * 1000000000)
            usleep(1000);
        open_stream(&b, i);
    }
    int rc = 0;
    uint64_t rx_ready = 0, msgs_ready = 0; /* responses received before "ready" */
    if (!wait_count(&b, &b.initial, b.n_streams)) {
        printf("error only %u of %u streams received a first version within %ds\n",
               atomic_load(&b.initial), b.n_streams, b.timeout_s);
        rc = 1;
    } else {
        rx_ready = atomic_load(&b.rx_bytes);
        msgs_ready = atomic_load(&b.rx_msgs);
        printf("ready %u %.2f %.1f\n", b.n_streams, (double)(bench_now_ns() - t_start) / 1e9,
               (double)rx_ready / 1e6);
    }
    fflush(stdout);

    char line[256];
    while (rc == 0 && fgets(line, sizeof line, stdin) != NULL) {
        long long t0;
        if (sscanf(line, "go %lld", &t0) == 1) {
            bool all = !b.reconnect || wait_count(&b, &b.reaccepted, b.n_streams);
            all = (b.changed == 0 || wait_count(&b, &b.updated, b.n_streams)) && all;
            int64_t *v = bench_xmalloc(b.n_streams * sizeof *v);
            for (int t = 0; t < b.n_types; t++)
                if (b.changed & (1u << t))
                    report(&b, t, t0, v);
            if (b.n_types > 1 && b.changed != 0)
                report(&b, -1, t0, v);
            if (b.reconnect)
                report_reconnect(&b, t0, v);
            free(v);
            if (b.arrivals != NULL)
                write_arrivals(&b, t0);
            print_stats(&b, rx_ready, msgs_ready, all);
            printf("done\n");
            fflush(stdout);
        } else if (strncmp(line, "stats", 5) == 0) {
            print_stats(&b, rx_ready, msgs_ready, true);
            fflush(stdout);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }

    /* Cancel every call, wait (bounded) for them to finish, then tear down. */
    atomic_store(&b.stopping, true);
    for (unsigned i = 0; i < b.n_streams; i++) {
        stream *s = &b.streams[i];
        pthread_mutex_lock(&s->mu);
        bench_ads_cancel(&s->ads);
        pthread_mutex_unlock(&s->mu);
    }
    int64_t deadline = bench_now_ns() + 20 * (int64_t)1000000000;
    while (atomic_load(&b.live) > 0 && bench_now_ns() < deadline)
        usleep(5000);
    if (atomic_load(&b.live) > 0) {
        fprintf(stderr, "bench_xds_fanout: %u calls did not finish; exiting without teardown\n",
                atomic_load(&b.live));
        fflush(stdout);
        _exit(rc);
    }
    for (unsigned i = 0; i < b.n_streams; i++) {
        bench_ads_destroy(&b.streams[i].ads);
        pthread_mutex_destroy(&b.streams[i].mu);
    }
    grpc_completion_queue_shutdown(b.cq);
    for (int i = 0; i < CQ_THREADS; i++)
        pthread_join(th[i], NULL);
    grpc_completion_queue_destroy(b.cq);
    grpc_shutdown();
    free(b.streams);
    for (size_t i = 0; i < b.n_eds; i++)
        free(b.eds_names[i]);
    free(b.eds_names);
    return rc;
}
