/*
 * test_client.c — the list/watch loop of the Kubernetes client against a small scripted
 * HTTP server in this process that speaks the part of the API conventions the loop uses
 * for one kind: paginated lists, watches replaying history from a resourceVersion,
 * bookmarks, compaction (an ERROR event with code 410, or a 410 answer), dropped
 * connections, 404 for a kind not served, 401 for a bad token, and merge patches on
 * /status.
 *
 * The test API server under tests/k8s is what the integration test runs against; this
 * one exists so the loop's reactions can be forced one at a time and checked from the
 * requests it received.
 */
#include "tests/lib/testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/k8s/client.h"

#define TOKEN "unit-test-token"
/* The longest a test waits for the client to reach a state before failing. */
#define WAIT_MS 20000

static const k8s_kind WIDGET = {"Widget", "example.test", "v1", "widgets", true, NULL};

/* ---------------------------------------------------------------- the scripted server */

typedef struct fake {
    int lfd;
    int port;
    pthread_t accept_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    long long rv;        /* the newest resourceVersion */
    long long compacted; /* watches from below this are answered 410 */
    bool http_410;       /* answer 410 as HTTP status instead of an ERROR event */
    bool missing;        /* the kind is not served: 404 */
    int drops;           /* drop_watches calls: open watches compare and close */
    int compactions;     /* compact calls: open watches get an ERROR 410 */
    int open_watches;
    int conns;        /* connection threads alive */
    json_t *objects;  /* key → object */
    json_t *history;  /* [{type, object}] with object.metadata.resourceVersion */
    json_t *requests; /* ["METHOD target", ...] */
    json_t *patches;  /* [{path, content_type, body}] */
    int unauthorised; /* requests without the bearer token */
} fake;

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *reason, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, reason, strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

static void respond_status(int fd, int code, const char *reason, const char *message)
{
    json_t *st = json_pack("{s:s,s:s,s:s,s:s,s:i}", "kind", "Status", "status", "Failure",
                           "message", message, "reason", reason, "code", code);
    char *body = json_dumps(st, JSON_COMPACT);
    respond(fd, code, reason, body);
    free(body);
    json_decref(st);
}

static void send_chunk(int fd, const json_t *event)
{
    char *line = json_dumps(event, JSON_COMPACT);
    char head[32];
    int n = snprintf(head, sizeof(head), "%zx\r\n", strlen(line) + 1);
    send_all(fd, head, (size_t)n);
    send_all(fd, line, strlen(line));
    send_all(fd, "\n\r\n", 3);
    free(line);
}

/* The value of name= in a query string, copied into out ("" when absent). */
static void query_param(const char *target, const char *name, char *out, size_t outlen)
{
    out[0] = '\0';
    const char *q = strchr(target, '?');
    size_t nl = strlen(name);
    for (const char *p = q; p; p = strchr(p + 1, '&')) {
        if (strncmp(p + 1, name, nl) == 0 && p[1 + nl] == '=') {
            const char *v = p + 2 + nl;
            size_t n = strcspn(v, "&");
            snprintf(out, outlen, "%.*s", (int)(n < outlen ? n : outlen - 1), v);
            return;
        }
    }
}

static void serve_list(fake *f, int fd, const char *target)
{
    char limit_s[16], cont_s[16];
    query_param(target, "limit", limit_s, sizeof(limit_s));
    query_param(target, "continue", cont_s, sizeof(cont_s));
    long limit = strtol(limit_s, NULL, 10), start = strtol(cont_s, NULL, 10);
    /* Items sorted by key; the continue token is the index of the next one. */
    json_t *keys = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(f->objects, k, v)
    {
        size_t i = 0;
        while (i < json_array_size(keys) &&
               strcmp(json_string_value(json_array_get(keys, i)), k) < 0)
            i++;
        json_array_insert_new(keys, i, json_string(k));
    }
    json_t *items = json_array();
    long i = start;
    for (; i < (long)json_array_size(keys) && (limit <= 0 || i < start + limit); i++) {
        json_t *o =
            json_deep_copy(json_object_get(f->objects, json_string_value(json_array_get(keys, i))));
        /* Like the real API server, list items carry no apiVersion or kind. */
        json_object_del(o, "apiVersion");
        json_object_del(o, "kind");
        json_array_append_new(items, o);
    }
    char rv[32], next[32] = "";
    snprintf(rv, sizeof(rv), "%lld", f->rv);
    if (i < (long)json_array_size(keys))
        snprintf(next, sizeof(next), "%ld", i);
    json_t *list = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "kind", "WidgetList", "apiVersion",
                             "example.test/v1", "metadata", "resourceVersion", rv, "continue", next,
                             "items", items);
    char *body = json_dumps(list, JSON_COMPACT);
    respond(fd, 200, "OK", body);
    free(body);
    json_decref(list);
    json_decref(keys);
}

static json_t *gone_event(void)
{
    return json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:i}}", "type", "ERROR", "object", "kind", "Status",
                     "status", "Failure", "message", "too old resource version", "reason",
                     "Expired", "code", 410);
}

/* Sends the history after from, then each new event, until a drop or compaction. */
static void serve_watch(fake *f, int fd, const char *target)
{
    char from_s[32];
    query_param(target, "resourceVersion", from_s, sizeof(from_s));
    long long from = strtoll(from_s, NULL, 10);
    if (from < f->compacted && f->http_410) {
        respond_status(fd, 410, "Expired", "too old resource version");
        return;
    }
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n";
    send_all(fd, head, strlen(head));
    if (from < f->compacted) {
        json_t *ev = gone_event();
        send_chunk(fd, ev);
        json_decref(ev);
        send_all(fd, "0\r\n\r\n", 5);
        return;
    }
    int drops = f->drops, compactions = f->compactions;
    size_t pos = 0;
    f->open_watches++;
    pthread_cond_broadcast(&f->cv);
    for (;;) {
        /* A drop closes the connection in the middle of the chunked body; what happened
         * since is for the next watch to replay. */
        if (f->stop || f->drops != drops)
            break;
        if (f->compactions != compactions) {
            json_t *ev = gone_event();
            send_chunk(fd, ev);
            json_decref(ev);
            send_all(fd, "0\r\n\r\n", 5);
            break;
        }
        for (; pos < json_array_size(f->history); pos++) {
            json_t *ev = json_array_get(f->history, pos);
            const char *rv = json_string_value(json_object_get(
                json_object_get(json_object_get(ev, "object"), "metadata"), "resourceVersion"));
            if (strtoll(rv, NULL, 10) > from)
                send_chunk(fd, ev);
        }
        pthread_cond_wait(&f->cv, &f->mu);
    }
    f->open_watches--;
    pthread_cond_broadcast(&f->cv);
}

static void serve_patch(fake *f, int fd, const char *target, const char *ctype, const char *body)
{
    json_t *b = json_loads(body, 0, NULL);
    json_array_append_new(
        f->patches, json_pack("{s:s,s:s,s:o?}", "path", target, "content_type", ctype, "body", b));
    /* /apis/example.test/v1/namespaces/NS/widgets/NAME/status */
    char ns[64] = "", name[64] = "";
    sscanf(target, "/apis/example.test/v1/namespaces/%63[^/]/widgets/%63[^/]/status", ns, name);
    char key[160];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    json_t *o = json_object_get(f->objects, key);
    if (o == NULL) {
        char msg[256];
        snprintf(msg, sizeof(msg), "widgets.example.test \"%s\" not found", name);
        respond_status(fd, 404, "NotFound", msg);
        return;
    }
    json_object_set(o, "status", json_object_get(b, "status"));
    char *text = json_dumps(o, JSON_COMPACT);
    respond(fd, 200, "OK", text);
    free(text);
}

typedef struct conn {
    fake *f;
    int fd;
} conn;

static void *serve_conn(void *arg)
{
    conn *c = arg;
    fake *f = c->f;
    sx_buf in = {0};
    char buf[4096];
    char *end = NULL;
    while ((end = in.data ? strstr(in.data, "\r\n\r\n") : NULL) == NULL) {
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n <= 0)
            break;
        sx_buf_append(&in, buf, (size_t)n);
    }
    if (end) {
        char method[16] = "", target[1024] = "";
        sscanf(in.data, "%15s %1023s", method, target);
        const char *cl = strcasestr(in.data, "\r\nContent-Length:");
        size_t want = cl ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
        size_t have = in.len - (size_t)(end + 4 - in.data);
        size_t head_len = (size_t)(end + 4 - in.data);
        while (have < want) {
            ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
            if (n <= 0)
                break;
            sx_buf_append(&in, buf, (size_t)n);
            have += (size_t)n;
        }
        char ctype[128] = "";
        const char *ct = strcasestr(in.data, "\r\nContent-Type:");
        if (ct && ct < in.data + head_len)
            sscanf(ct + 15, " %127[^\r]", ctype);
        bool authorised = strstr(in.data, "\r\nAuthorization: Bearer " TOKEN "\r\n") != NULL;
        pthread_mutex_lock(&f->mu);
        char line[1100];
        snprintf(line, sizeof(line), "%s %s", method, target);
        json_array_append_new(f->requests, json_string(line));
        if (!authorised) {
            f->unauthorised++;
            respond_status(c->fd, 401, "Unauthorized", "Unauthorized");
        } else if (f->missing) {
            respond_status(c->fd, 404, "NotFound",
                           "the server could not find the requested "
                           "resource");
        } else if (strcmp(method, "PATCH") == 0) {
            serve_patch(f, c->fd, target, ctype, in.data + head_len);
        } else if (strstr(target, "watch=true")) {
            serve_watch(f, c->fd, target);
        } else {
            serve_list(f, c->fd, target);
        }
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
    }
    sx_buf_free(&in);
    close(c->fd);
    sx_free(c);
    pthread_mutex_lock(&f->mu);
    f->conns--;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

static void *accept_loop(void *arg)
{
    fake *f = arg;
    for (;;) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_mutex_lock(&f->mu);
        bool stop = f->stop;
        if (!stop)
            f->conns++;
        pthread_mutex_unlock(&f->mu);
        if (stop) {
            close(fd);
            return NULL;
        }
        conn *c = sx_calloc(1, sizeof(*c));
        c->f = f;
        c->fd = fd;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, serve_conn, c), 0);
        pthread_detach(th);
    }
}

static fake *fake_start(void)
{
    fake *f = sx_calloc(1, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    sx_cond_init_monotonic(&f->cv);
    f->rv = 100;
    f->objects = json_object();
    f->history = json_array();
    f->requests = json_array();
    f->patches = json_array();
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->lfd, 64), 0);
    socklen_t len = sizeof(a);
    getsockname(f->lfd, (struct sockaddr *)&a, &len);
    f->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&f->accept_thread, NULL, accept_loop, f), 0);
    return f;
}

/* Stops the server once the client has stopped: ends the watches, then waits for every
 * connection thread. */
static void fake_stop(fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    shutdown(f->lfd, SHUT_RDWR);
    close(f->lfd);
    pthread_join(f->accept_thread, NULL);
    pthread_mutex_lock(&f->mu);
    while (f->conns > 0)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    json_decref(f->objects);
    json_decref(f->history);
    json_decref(f->requests);
    json_decref(f->patches);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    sx_free(f);
}

/* Applies a change as the API server would: a new resourceVersion, the object stored or
 * deleted, the event appended to the history that watches replay. */
static void fake_apply(fake *f, const char *type, const char *ns, const char *name, int n)
{
    pthread_mutex_lock(&f->mu);
    char rv[32], key[128];
    snprintf(rv, sizeof(rv), "%lld", ++f->rv);
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    json_t *o =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:[{s:s}]},s:{s:i}}", "apiVersion", "example.test/v1",
                  "kind", "Widget", "metadata", "namespace", ns, "name", name, "resourceVersion",
                  rv, "managedFields", "manager", "kubectl", "spec", "n", n);
    if (strcmp(type, "DELETED") == 0)
        json_object_del(f->objects, key);
    else
        json_object_set(f->objects, key, o);
    json_array_append_new(f->history, json_pack("{s:s,s:o}", "type", type, "object", o));
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Changes in namespace a that no watch delivers: object gone (NULL: none) deleted and
 * object name added with spec.n = n, then history compacted past them. The open watch
 * learns of it by an ERROR 410 event, or with http_410 by a drop and an HTTP 410 answer
 * to the watch request that follows. */
static void fake_compact_past(fake *f, const char *gone, const char *name, int n, bool http_410)
{
    char key[128];
    pthread_mutex_lock(&f->mu);
    if (gone) {
        snprintf(key, sizeof(key), "a/%s", gone);
        json_object_del(f->objects, key);
    }
    snprintf(key, sizeof(key), "a/%s", name);
    json_object_set_new(f->objects, key,
                        json_pack("{s:{s:s,s:s},s:{s:i}}", "metadata", "namespace", "a", "name",
                                  name, "spec", "n", n));
    f->rv += 10;
    f->compacted = f->rv;
    if (http_410) {
        f->http_410 = true;
        f->drops++;
    } else {
        f->compactions++;
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void fake_bookmark(fake *f)
{
    pthread_mutex_lock(&f->mu);
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", ++f->rv);
    json_array_append_new(f->history, json_pack("{s:s,s:{s:s,s:s,s:{s:s}}}", "type", "BOOKMARK",
                                                "object", "apiVersion", "example.test/v1", "kind",
                                                "Widget", "metadata", "resourceVersion", rv));
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Waits until n watches are open (the client has re-watched). */
static void fake_wait_watches(fake *f, int n)
{
    struct timespec deadline = sx_deadline_in(WAIT_MS);
    pthread_mutex_lock(&f->mu);
    while (f->open_watches != n)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &deadline) != 0)
            fail_msg("no %d open watches after %d ms (%d open)", n, WAIT_MS, f->open_watches);
    pthread_mutex_unlock(&f->mu);
}

/* How many requests so far contain text. */
static int fake_count(fake *f, const char *text)
{
    pthread_mutex_lock(&f->mu);
    int n = 0;
    size_t i;
    json_t *r;
    json_array_foreach(f->requests, i, r)
    {
        n += strstr(json_string_value(r), text) != NULL;
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Waits until at least n requests contain text. */
static void fake_wait_count(fake *f, const char *text, int n)
{
    int64_t deadline = sx_monotonic_ms() + WAIT_MS;
    struct timespec ts = sx_deadline_in(WAIT_MS);
    for (;;) {
        if (fake_count(f, text) >= n)
            return;
        if (sx_monotonic_ms() >= deadline)
            fail_msg("fewer than %d requests with \"%s\" after %d ms", n, text, WAIT_MS);
        pthread_mutex_lock(&f->mu);
        pthread_cond_timedwait(&f->cv, &f->mu, &ts);
        pthread_mutex_unlock(&f->mu);
    }
}

/* Closes every open watch in the middle of its body. */
static void fake_drop(fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->drops++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* ---------------------------------------------------------------- the client side */

typedef struct rig {
    fake *f;
    k8s_cfg cfg;
    wm_table *maps;
    wm_map *map;
    sx_metrics *metrics;
    k8s_client *client;
} rig;

static void rig_start(rig *r, bool missing)
{
    memset(r, 0, sizeof(*r));
    r->f = fake_start();
    r->f->missing = missing;
    r->cfg.server = sx_asprintf("http://127.0.0.1:%d", r->f->port);
    r->cfg.token = sx_strdup(TOKEN);
    r->cfg.ns = sx_strdup("default");
    r->cfg.source = sx_strdup("test");
    r->maps = wm_table_create();
    r->metrics = sx_metrics_create();
    k8s_client_options opt = {.cfg = &r->cfg,
                              .maps = r->maps,
                              .kinds = &WIDGET,
                              .nkinds = 1,
                              .metrics = r->metrics,
                              .page_size = 2,
                              .watch_timeout_s = 300,
                              .backoff_min_ms = 20,
                              .backoff_max_ms = 200,
                              .missing_retry_ms = 50};
    TL_OK(k8s_client_create(&opt, &r->client, &e_));
    r->map = wm_table_find(r->maps, "Widget");
    assert_non_null(r->map);
}

static void rig_stop(rig *r)
{
    k8s_client_destroy(r->client);
    assert_int_equal(r->f->unauthorised, 0);
    fake_stop(r->f);
    wm_table_destroy(r->maps);
    sx_metrics_destroy(r->metrics);
    sx_free(r->cfg.server);
    sx_free(r->cfg.token);
    sx_free(r->cfg.ns);
    sx_free(r->cfg.source);
}

/* spec.n of key in the map, -1 when absent. */
static int map_n(rig *r, const char *key)
{
    json_t *v = wm_get(r->map, key);
    int n = v ? (int)json_integer_value(json_object_get(json_object_get(v, "spec"), "n")) : -1;
    json_decref(v);
    return n;
}

/* Waits until the map holds key with spec.n == n (n == -1: until key is absent). */
static void wait_map(rig *r, const char *key, int n)
{
    int64_t deadline = sx_monotonic_ms() + WAIT_MS;
    uint64_t gen = wm_table_generation(r->maps);
    while (map_n(r, key) != n) {
        int64_t left = deadline - sx_monotonic_ms();
        if (left <= 0)
            fail_msg("%s: spec.n is %d, not %d, after %d ms", key, map_n(r, key), n, WAIT_MS);
        gen = wm_table_wait(r->maps, gen, left);
    }
}

static double metric(rig *r, const char *name, const char *type)
{
    sx_buf b = {0};
    sx_metrics_render(r->metrics, &b);
    char want[256];
    if (type)
        snprintf(want, sizeof(want), "%s{kind=\"Widget\",type=\"%s\"} ", name, type);
    else
        snprintf(want, sizeof(want), "%s{kind=\"Widget\"} ", name);
    const char *p = strstr(sx_buf_cstr(&b), want);
    double v = p ? strtod(p + strlen(want), NULL) : -1;
    if (p == NULL)
        print_message("no %s in:\n%s\n", want, sx_buf_cstr(&b));
    sx_buf_free(&b);
    return v;
}

TL_TEST(test_list_pages_then_watch)
{
    rig r;
    rig_start(&r, false);
    fake_apply(r.f, "ADDED", "a", "one", 1);
    fake_apply(r.f, "ADDED", "a", "two", 2);
    fake_apply(r.f, "ADDED", "b", "three", 3);
    TL_OK(k8s_client_start(r.client, &e_));
    assert_true(k8s_client_wait_synced(r.client, WAIT_MS));
    /* Three objects in two pages of two, with the kind and apiVersion the items lacked. */
    assert_int_equal(wm_size(r.map), 3);
    assert_int_equal(fake_count(r.f, "limit=2"), 2);
    assert_int_equal(fake_count(r.f, "continue=2"), 1);
    json_t *one = wm_get(r.map, "a/one");
    assert_string_equal(json_string_value(json_object_get(one, "kind")), "Widget");
    assert_string_equal(json_string_value(json_object_get(one, "apiVersion")), "example.test/v1");
    assert_null(json_object_get(json_object_get(one, "metadata"), "managedFields"));
    json_decref(one);
    assert_true(metric(&r, "sextant_k8s_objects", NULL) == 3);

    /* The watch starts from the list's resourceVersion and follows changes. */
    fake_wait_watches(r.f, 1);
    assert_int_equal(fake_count(r.f, "watch=true&resourceVersion=103&allowWatchBookmarks=true&"
                                     "timeoutSeconds=300"),
                     1);
    assert_int_equal(k8s_client_kind_state(r.client, "Widget"), K8S_KIND_WATCHING);
    fake_apply(r.f, "ADDED", "b", "four", 4);
    fake_apply(r.f, "MODIFIED", "a", "one", 11);
    fake_apply(r.f, "DELETED", "a", "two", 2);
    wait_map(&r, "a/two", -1);
    assert_int_equal(map_n(&r, "b/four"), 4);
    assert_int_equal(map_n(&r, "a/one"), 11);
    assert_true(metric(&r, "sextant_k8s_watch_events_total", "ADDED") == 1);
    assert_true(metric(&r, "sextant_k8s_watch_events_total", "MODIFIED") == 1);
    assert_true(metric(&r, "sextant_k8s_watch_events_total", "DELETED") == 1);

    /* A bookmark moves the resourceVersion on and changes nothing else: the next watch
     * resumes from it. */
    uint64_t gen = wm_map_generation(r.map);
    fake_bookmark(r.f);
    fake_apply(r.f, "MODIFIED", "a", "one", 12);
    wait_map(&r, "a/one", 12);
    assert_int_equal(wm_map_generation(r.map), gen + 1);
    /* The gauge follows each change after the map; the DELETED before is counted by now. */
    assert_true(metric(&r, "sextant_k8s_objects", NULL) == 3);
    assert_true(metric(&r, "sextant_k8s_watch_events_total", "BOOKMARK") == 1);
    fake_drop(r.f);
    fake_wait_count(r.f, "watch=true&resourceVersion=108&", 1);
    char *rv = k8s_client_resource_version(r.client, "Widget");
    assert_string_equal(rv, "108");
    sx_free(rv);
    fake_wait_watches(r.f, 1);

    /* Stopping ends the open watch promptly (printed: timing is not asserted). */
    int64_t t0 = sx_monotonic_ms();
    k8s_client_stop(r.client);
    print_message("k8s_client_stop with a watch open took %lld ms\n",
                  (long long)(sx_monotonic_ms() - t0));
    assert_int_equal(k8s_client_kind_state(r.client, "Widget"), K8S_KIND_IDLE);
    rig_stop(&r);
}

TL_TEST(test_drop_resumes_without_loss)
{
    rig r;
    rig_start(&r, false);
    fake_apply(r.f, "ADDED", "a", "one", 1);
    TL_OK(k8s_client_start(r.client, &e_));
    fake_wait_watches(r.f, 1);
    fake_apply(r.f, "MODIFIED", "a", "one", 2);
    wait_map(&r, "a/one", 2);
    /* The connection drops; changes made meanwhile arrive through the next watch. */
    fake_drop(r.f);
    fake_apply(r.f, "ADDED", "a", "two", 20);
    fake_apply(r.f, "DELETED", "a", "one", 2);
    wait_map(&r, "a/one", -1);
    assert_int_equal(map_n(&r, "a/two"), 20);
    /* It resumed from the last resourceVersion seen, without listing again. */
    assert_int_equal(fake_count(r.f, "watch=true&resourceVersion=102&"), 1);
    assert_int_equal(fake_count(r.f, "limit=2"), 1);
    assert_true(metric(&r, "sextant_k8s_relists_total", NULL) == 0);
    rig_stop(&r);
}

TL_TEST(test_gone_relists)
{
    rig r;
    rig_start(&r, false);
    fake_apply(r.f, "ADDED", "a", "one", 1);
    fake_apply(r.f, "ADDED", "a", "two", 2);
    TL_OK(k8s_client_start(r.client, &e_));
    fake_wait_watches(r.f, 1);
    /* Compaction ends the watch with an ERROR 410 after changes it never delivers. */
    fake_compact_past(r.f, "one", "three", 3, false);
    wait_map(&r, "a/three", 3);
    wait_map(&r, "a/one", -1);
    assert_int_equal(map_n(&r, "a/two"), 2);
    assert_true(metric(&r, "sextant_k8s_relists_total", NULL) == 1);
    assert_true(metric(&r, "sextant_k8s_watch_events_total", "ERROR") == 1);
    assert_int_equal(fake_count(r.f, "limit=2"), 2); /* the list, then the relist */

    /* A 410 answer to the watch request relists as well. */
    fake_wait_watches(r.f, 1);
    fake_compact_past(r.f, NULL, "four", 4, true);
    wait_map(&r, "a/four", 4);
    assert_true(metric(&r, "sextant_k8s_relists_total", NULL) == 2);
    rig_stop(&r);
}

TL_TEST(test_missing_kind_then_served)
{
    rig r;
    rig_start(&r, true);
    TL_OK(k8s_client_start(r.client, &e_));
    /* Not served: synced (with an empty map) so readiness does not wait for it, and
     * tried again later. */
    assert_true(k8s_client_wait_synced(r.client, WAIT_MS));
    assert_int_equal(wm_size(r.map), 0);
    fake_wait_count(r.f, "GET /apis/example.test/v1/widgets?limit=2", 2);
    assert_int_equal(fake_count(r.f, "watch=true"), 0);
    /* Its CRD is applied: the kind is listed on the next try. */
    fake_apply(r.f, "ADDED", "a", "one", 1);
    pthread_mutex_lock(&r.f->mu);
    r.f->missing = false;
    pthread_mutex_unlock(&r.f->mu);
    wait_map(&r, "a/one", 1);
    fake_wait_watches(r.f, 1);
    rig_stop(&r);
}

/* How many lines of the file at path contain text. */
static int count_lines(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, text) != NULL;
    fclose(f);
    return n;
}

TL_TEST(test_unauthorised_logged_once)
{
    rig r;
    rig_start(&r, false);
    fake_apply(r.f, "ADDED", "a", "one", 1);
    /* A token file with a token the server refuses; the client reads it per request. */
    char tok[] = "/tmp/sx-k8s-tokXXXXXX", logp[] = "/tmp/sx-k8s-logXXXXXX";
    int tfd = mkstemp(tok), lfd = mkstemp(logp);
    assert_true(tfd >= 0 && lfd >= 0);
    close(tfd);
    tl_write_file(tok, "expired-token\n");
    sx_free(r.cfg.token);
    r.cfg.token = NULL;
    r.cfg.token_file = sx_strdup(tok);
    sx_log_set_fd(lfd);
    TL_OK(k8s_client_start(r.client, &e_));
    /* Refused again and again (with back-off), logged once. */
    fake_wait_count(r.f, "GET /apis/example.test/v1/widgets?limit=2", 4);
    assert_false(k8s_client_synced(r.client));
    assert_int_equal(count_lines(logp, "HTTP 401 Unauthorized"), 1);
    assert_int_equal(count_lines(logp, "expired-token"), 0);
    /* The token is renewed: the next try lists, and says so once. */
    tl_write_file(tok, "unit-test-token\n");
    assert_true(k8s_client_wait_synced(r.client, WAIT_MS));
    assert_int_equal(map_n(&r, "a/one"), 1);
    k8s_client_stop(r.client);
    sx_log_set_fd(2);
    assert_int_equal(count_lines(logp, "Widget: listing again"), 1);
    pthread_mutex_lock(&r.f->mu);
    int refused = r.f->unauthorised;
    r.f->unauthorised = 0; /* expected here; rig_stop checks that no other test had any */
    pthread_mutex_unlock(&r.f->mu);
    assert_true(refused >= 4);
    sx_free(r.cfg.token_file);
    r.cfg.token_file = NULL;
    unlink(tok);
    close(lfd);
    unlink(logp);
    rig_stop(&r);
}

TL_TEST(test_patch_status)
{
    rig r;
    rig_start(&r, false);
    fake_apply(r.f, "ADDED", "a", "one", 1);
    json_t *status = tl_json("{'observedGeneration':1,'conditions':[{'type':'Accepted',"
                             "'status':'True'}]}");
    sx_err e;
    sx_err_clear(&e);
    assert_int_equal(k8s_patch_status(r.client, "Widget", "a", "one", status, NULL, &e), 200);
    pthread_mutex_lock(&r.f->mu);
    json_t *want = json_pack(
        "[{s:s,s:s,s:{s:O}}]", "path", "/apis/example.test/v1/namespaces/a/widgets/one/status",
        "content_type", "application/merge-patch+json", "body", "status", status);
    tl_assert_json_equal(r.f->patches, want);
    json_decref(want);
    pthread_mutex_unlock(&r.f->mu);

    /* An object that is not there: the status code and the Status message. */
    assert_int_equal(k8s_patch_status(r.client, "Widget", "a", "nope", status, NULL, &e), 404);
    assert_int_equal(e.code, SX_ENOTFOUND);
    assert_non_null(strstr(e.message, "HTTP 404 NotFound: widgets.example.test \"nope\" not "
                                      "found"));
    /* Bad arguments are refused before any request. */
    assert_int_equal(k8s_patch_status(r.client, "Gadget", "a", "one", status, NULL, &e), SX_EINVAL);
    assert_int_equal(k8s_patch_status(r.client, "Widget", NULL, "one", status, NULL, &e),
                     SX_EINVAL);
    assert_int_equal(fake_count(r.f, "PATCH"), 2);
    json_decref(status);
    rig_stop(&r);
}

TL_TEST(test_kind_paths)
{
    size_t n;
    const k8s_kind *t = k8s_kind_table(&n);
    /* the 13 kinds the translator reads, ConfigMap (CA bundles) and Sextant's 4 policies */
    assert_int_equal(n, 18);
    assert_string_equal(k8s_kind_api_version(k8s_kind_find("WasmPlugin"), (char[128]){0}, 128),
                        "sextant.dev/v1alpha1");
    char *wp = k8s_kind_path(k8s_kind_find("WasmPlugin"), "shop", "redact", "status");
    assert_string_equal(wp, "/apis/sextant.dev/v1alpha1/namespaces/shop/wasmplugins/redact/status");
    sx_free(wp);
    assert_ptr_equal(k8s_kind_find("HTTPRoute"), &t[2]);
    assert_string_equal(
        k8s_kind_api_version(k8s_kind_find("BackendTLSPolicy"), (char[128]){0}, 128),
        "gateway.networking.k8s.io/v1alpha3");
    assert_null(k8s_kind_find("Pod"));
    char av[128];
    assert_string_equal(k8s_kind_api_version(k8s_kind_find("Service"), av, sizeof(av)), "v1");
    assert_string_equal(k8s_kind_api_version(k8s_kind_find("TLSRoute"), av, sizeof(av)),
                        "gateway.networking.k8s.io/v1alpha2");
    static const struct {
        const char *kind, *ns, *name, *sub, *want;
    } cases[] = {
        {"HTTPRoute", NULL, NULL, NULL, "/apis/gateway.networking.k8s.io/v1/httproutes"},
        {"Gateway", "prod", "web", "status",
         "/apis/gateway.networking.k8s.io/v1/namespaces/prod/gateways/web/status"},
        {"GatewayClass", "ignored", "sextant", "status",
         "/apis/gateway.networking.k8s.io/v1/gatewayclasses/sextant/status"},
        {"Service", "a b", "x/y", NULL, "/api/v1/namespaces/a%20b/services/x%2Fy"},
        {"Namespace", NULL, NULL, NULL, "/api/v1/namespaces"},
        {"EndpointSlice", NULL, NULL, NULL, "/apis/discovery.k8s.io/v1/endpointslices"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *p =
            k8s_kind_path(k8s_kind_find(cases[i].kind), cases[i].ns, cases[i].name, cases[i].sub);
        assert_string_equal(p, cases[i].want);
        sx_free(p);
    }
}

TL_MAIN()
