/*
 * api_load.c — load client for the REST API benchmark (tests/bench/api.sh): N client
 * threads, each on its own keep-alive HTTP/1.1 connection, send one request after the
 * other for a fixed time and time each one; the report is requests per second and the
 * latency percentiles over all of them.
 *
 *   bench_api_load --port P --token T --mode get --config ID --clients N --seconds S
 *   bench_api_load --port P --token T --mode put --group G --clients N --seconds S [--base K]
 *                  [--groups M]
 *
 * get: GET /api/v1/configs/ID. put: each client first creates a config of its own in
 * group G (POST /api/v1/configs, distinct listener port and host), then PUTs a new
 * version of it again and again (the route timeout changes each time, so every PUT is a
 * real change: a new version, the group's snapshot recomposed, audit, NOTIFY, in one
 * transaction). With --groups M, client i writes to group G-(i mod M) instead, so M groups
 * take writes side by side. Any answer but 200 counts as an error. Prints one line:
 *   mode=get clients=8 seconds=10 requests=123456 errors=0 rps=12345.6 p50_ms=0.61 p90_ms=0.9
 * p99_ms=1.52 max_ms=7.1
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

typedef struct opts {
    int port;
    const char *token;
    const char *mode; /* "get" or "put" */
    const char *config_id;
    const char *group;
    int clients;
    double seconds;
    const char *tag; /* makes config names unique across runs */
    int base;        /* put: client i uses listener port, host and names of index base + i */
    int groups;      /* put: > 0: client i writes to group "<group>-<i mod groups>" */
} opts;

typedef struct client {
    const opts *o;
    int index;
    int fd;
    char id[64]; /* put: the config this client owns */
    double *lat_ms;
    size_t n, cap;
    size_t errors;
    char err[256];
    char *buf; /* response buffer */
    size_t bufcap;
} client;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads one response; returns its status (0 on a broken connection) and leaves the
 * body NUL-terminated at *body. */
static int read_response(client *c, const char **body)
{
    size_t have = 0, head_end = 0, content_length = 0;
    bool got_head = false;
    for (;;) {
        if (have + 4096 + 1 > c->bufcap) {
            c->bufcap = (have + 4096 + 1) * 2;
            c->buf = realloc(c->buf, c->bufcap);
            if (c->buf == NULL)
                abort();
        }
        if (got_head && have >= head_end + content_length)
            break;
        ssize_t r = read(c->fd, c->buf + have, c->bufcap - have - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        have += (size_t)r;
        c->buf[have] = '\0';
        if (!got_head) {
            char *e = strstr(c->buf, "\r\n\r\n");
            if (e == NULL)
                continue;
            head_end = (size_t)(e - c->buf) + 4;
            got_head = true;
            for (char *l = strstr(c->buf, "\r\n"); l && l < e; l = strstr(l + 2, "\r\n")) {
                if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
                    content_length = (size_t)strtoull(l + 17, NULL, 10);
            }
        }
    }
    c->buf[head_end + content_length] = '\0';
    *body = c->buf + head_end;
    long status = strtol(c->buf + 9, NULL, 10); /* "HTTP/1.1 200" */
    return (int)status;
}

static int request(client *c, const char *method, const char *path, const char *json,
                   const char **body)
{
    char head[1024];
    size_t blen = json ? strlen(json) : 0;
    int n =
        snprintf(head, sizeof(head),
                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                 "%sContent-Length: %zu\r\n\r\n",
                 method, path, c->o->token, json ? "Content-Type: application/json\r\n" : "", blen);
    if (n < 0 || (size_t)n >= sizeof(head))
        return 0;
    if (c->fd < 0 && (c->fd = connect_to(c->o->port)) < 0)
        return 0;
    if (!write_all(c->fd, head, (size_t)n) || (json && !write_all(c->fd, json, blen))) {
        close(c->fd);
        c->fd = -1;
        return 0;
    }
    int st = read_response(c, body);
    if (st == 0) {
        close(c->fd);
        c->fd = -1;
    }
    return st;
}

/* The spec of client i's config, version n. */
static char *spec_json(int i, long n)
{
    json_t *s = json_pack(
        "{s:[{s:s,s:s,s:i,s:s,s:[s],s:[s]}],"
        "s:[{s:s,s:s,s:[s],s:[{s:s,s:[{s:s,s:s}],s:[{s:s,s:s,s:i}],s:{s:s}}]}],"
        "s:[{s:s,s:s,s:s,s:s,s:[{s:s,s:i}]}]}",
        "listeners", "name", "l", "address", "0.0.0.0", "port", 31000 + i, "protocol",
        "LISTENER_PROTOCOL_HTTP", "hostnames", "", "attached_routes", "r", "http_routes", "name",
        "r", "namespace", "bench", "hostnames", "", "rules", "name", "all", "matches", "path", "/",
        "path_type", "PathPrefix", "backend_refs", "name", "b", "namespace", "bench", "port", 8080,
        "timeouts", "request", "", "backends", "name", "b", "namespace", "bench", "protocol",
        "http", "connect_timeout", "1s", "endpoints", "address", "10.0.0.1", "port", 8080);
    char host[64], timeout[32], name[16];
    snprintf(host, sizeof(host), "c%d.bench.example", i);
    snprintf(timeout, sizeof(timeout), "%lds", n % 100000 + 1);
    /* Names must be unique in the group: suffix them with the client. */
    snprintf(name, sizeof(name), "l%d", i);
    json_t *l = json_array_get(json_object_get(s, "listeners"), 0);
    json_object_set_new(l, "name", json_string(name));
    snprintf(name, sizeof(name), "r%d", i);
    json_array_set_new(json_object_get(l, "hostnames"), 0, json_string(host));
    json_array_set_new(json_object_get(l, "attached_routes"), 0, json_string(name));
    json_t *r = json_array_get(json_object_get(s, "http_routes"), 0);
    json_object_set_new(r, "name", json_string(name));
    json_array_set_new(json_object_get(r, "hostnames"), 0, json_string(host));
    json_t *rule = json_array_get(json_object_get(r, "rules"), 0);
    json_object_set_new(json_object_get(rule, "timeouts"), "request", json_string(timeout));
    snprintf(name, sizeof(name), "b%d", i);
    json_object_set_new(json_array_get(json_object_get(rule, "backend_refs"), 0), "name",
                        json_string(name));
    json_object_set_new(json_array_get(json_object_get(s, "backends"), 0), "name",
                        json_string(name));
    char *text = json_dumps(s, JSON_COMPACT);
    json_decref(s);
    return text;
}

static bool setup_put(client *c)
{
    char *spec = spec_json(c->index, 0);
    char name[128];
    snprintf(name, sizeof(name), "bench-%s-%d", c->o->tag, c->index);
    char group[128];
    if (c->o->groups > 0)
        snprintf(group, sizeof(group), "%s-%d", c->o->group, c->index % c->o->groups);
    else
        snprintf(group, sizeof(group), "%s", c->o->group);
    json_t *b = json_pack("{s:s,s:s,s:[s],s:o}", "namespace", "bench", "name", name, "groups",
                          group, "spec", json_loads(spec, 0, NULL));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    free(spec);
    const char *resp;
    int st = request(c, "POST", "/api/v1/configs", body, &resp);
    free(body);
    if (st != 201) {
        snprintf(c->err, sizeof(c->err), "creating the config answered %d: %.200s", st,
                 st ? resp : "");
        return false;
    }
    json_t *j = json_loads(resp, 0, NULL);
    snprintf(c->id, sizeof(c->id), "%s", json_string_value(json_object_get(j, "id")));
    json_decref(j);
    return c->id[0] != '\0';
}

static void record(client *c, double ms)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4096;
        c->lat_ms = realloc(c->lat_ms, c->cap * sizeof(double));
        if (c->lat_ms == NULL)
            abort();
    }
    c->lat_ms[c->n++] = ms;
}

/* Clients set up (connect, create their config), wait at ready; main then fixes t_end
 * and everyone passes go together. */
static pthread_barrier_t ready, go;
static double t_end;

static void *run(void *arg)
{
    client *c = arg;
    const opts *o = c->o;
    bool put = strcmp(o->mode, "put") == 0;
    bool ok = !put || setup_put(c);
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);
    if (!ok)
        return NULL;
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/configs/%s", put ? c->id : o->config_id);
    for (long n = 1; now_s() < t_end; n++) {
        char *json = put ? spec_json(c->index, n) : NULL;
        char *body = NULL;
        if (put) {
            if (asprintf(&body, "{\"spec\":%s}", json) < 0)
                abort();
        }
        const char *resp;
        double t0 = now_s();
        int st = request(c, put ? "PUT" : "GET", path, body, &resp);
        double ms = (now_s() - t0) * 1e3;
        free(json);
        free(body);
        if (st == 200) {
            record(c, ms);
        } else {
            c->errors++;
            if (c->err[0] == '\0')
                snprintf(c->err, sizeof(c->err), "%s answered %d: %.200s", path, st,
                         st ? resp : "");
        }
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_api_load --port P --token T --mode get|put [--config ID] "
            "[--group G] [--clients N] [--seconds S] [--tag TAG] [--base N] [--groups M]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    opts o = {.mode = "get", .group = "bench", .clients = 1, .seconds = 10, .tag = "run"};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        char *end;
        if (strcmp(k, "--port") == 0)
            o.port = (int)strtol(v, &end, 10);
        else if (strcmp(k, "--token") == 0)
            o.token = v;
        else if (strcmp(k, "--mode") == 0)
            o.mode = v;
        else if (strcmp(k, "--config") == 0)
            o.config_id = v;
        else if (strcmp(k, "--group") == 0)
            o.group = v;
        else if (strcmp(k, "--clients") == 0)
            o.clients = (int)strtol(v, &end, 10);
        else if (strcmp(k, "--seconds") == 0)
            o.seconds = strtod(v, &end);
        else if (strcmp(k, "--tag") == 0)
            o.tag = v;
        else if (strcmp(k, "--base") == 0)
            o.base = (int)strtol(v, &end, 10);
        else if (strcmp(k, "--groups") == 0)
            o.groups = (int)strtol(v, &end, 10);
        else
            usage();
    }
    bool put = strcmp(o.mode, "put") == 0;
    if (o.port <= 0 || o.token == NULL || o.clients < 1 || o.clients > 1024 || o.seconds <= 0 ||
        o.base < 0 || o.base > 900 || o.groups < 0 || o.groups > 64 ||
        (!put && (strcmp(o.mode, "get") != 0 || o.config_id == NULL)))
        usage();

    client *cs = calloc((size_t)o.clients, sizeof(*cs));
    pthread_t *th = calloc((size_t)o.clients, sizeof(*th));
    if (cs == NULL || th == NULL)
        abort();
    pthread_barrier_init(&ready, NULL, (unsigned)o.clients + 1);
    pthread_barrier_init(&go, NULL, (unsigned)o.clients + 1);
    for (int i = 0; i < o.clients; i++) {
        cs[i] = (client){.o = &o, .index = o.base + i, .fd = -1};
        pthread_create(&th[i], NULL, run, &cs[i]);
    }
    pthread_barrier_wait(&ready);
    double t0 = now_s();
    t_end = t0 + o.seconds;
    pthread_barrier_wait(&go);
    for (int i = 0; i < o.clients; i++)
        pthread_join(th[i], NULL);
    double elapsed = now_s() - t0;

    size_t total = 0, errors = 0;
    for (int i = 0; i < o.clients; i++) {
        total += cs[i].n;
        errors += cs[i].errors;
        if (cs[i].err[0])
            fprintf(stderr, "client %d: %s\n", i, cs[i].err);
    }
    double *all = malloc((total ? total : 1) * sizeof(double));
    if (all == NULL)
        abort();
    size_t k = 0;
    for (int i = 0; i < o.clients; i++) {
        memcpy(all + k, cs[i].lat_ms, cs[i].n * sizeof(double));
        k += cs[i].n;
    }
    qsort(all, total, sizeof(double), cmp_double);
    printf("mode=%s clients=%d seconds=%.1f requests=%zu errors=%zu rps=%.1f p50_ms=%.2f "
           "p90_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
           o.mode, o.clients, elapsed, total, errors, (double)total / elapsed,
           pct(all, total, 0.50), pct(all, total, 0.90), pct(all, total, 0.99),
           total ? all[total - 1] : 0.0);
    for (int i = 0; i < o.clients; i++) {
        free(cs[i].lat_ms);
        free(cs[i].buf);
        if (cs[i].fd >= 0)
            close(cs[i].fd);
    }
    free(all);
    free(cs);
    free(th);
    pthread_barrier_destroy(&ready);
    pthread_barrier_destroy(&go);
    return errors > 0 && total == 0 ? 1 : 0;
}
