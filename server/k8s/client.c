/*
 * client.c — list and watch of each Kubernetes kind into its watchable map, and status
 * write-back (see client.h).
 *
 * Design: one thread and one libcurl easy handle per kind, each running a plain blocking
 * loop (list, then watch, again and again). A kind's state — its resourceVersion, its
 * back-off, what it last logged — belongs to its thread alone, so the loop reads like
 * the protocol it follows, and a slow or failing kind (a huge list, a CRD not installed,
 * a forbidden resource) never holds up another. The cost, a dozen mostly idle threads
 * and connections, is what Kubernetes asks anyway: one watch connection per kind. (One
 * curl multi handle for all kinds would save the threads but turn each loop into a
 * state machine driven by callbacks.)
 *
 * Stopping: a flag read by libcurl's progress callback (called at least once a second,
 * also while a watch waits for data) aborts the transfer in progress, and a condition
 * variable ends the back-off sleeps, so k8s_client_stop returns within about a second.
 *
 * Memory: the watch stream is parsed as it arrives (stream.c), so a connection holds at
 * most one event; a list holds one page's body and the objects listed so far, which go
 * into the map in one wm_replace.
 */
#include "server/k8s/client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/k8s/http.h"
#include "server/k8s/stream.h"

#define LOG "k8s"
/* A list page larger than this is refused (pages are bounded by page_size anyway). */
#define MAX_PAGE_BYTES (256u * 1024 * 1024)
/* A list that receives nothing for this long is given up. */
#define LIST_STALL_S 60L
/* The client gives a watch this much longer than the timeout it asked the server for. */
#define WATCH_GRACE_S 60L
/* A watch that the server ends sooner than this without sending anything counts as a
 * failure, so a server that ends every watch at once is not asked again in a tight loop. */
#define WATCH_MIN_MS 500

/* How a list or a watch ended. */
typedef enum outcome {
    OUT_OK,      /* list: the map holds it; watch: the server ended the watch cleanly */
    OUT_GONE,    /* 410: the resourceVersion is too old, list again */
    OUT_MISSING, /* 404: the kind is not served */
    OUT_FAILED,  /* anything else: back off, then resume */
    OUT_STOPPED, /* the client is stopping */
} outcome;

typedef struct worker {
    k8s_client *c;
    const k8s_kind *k;
    wm_map *map;
    char api_version[128];
    char *base; /* the collection's path: /apis/g/v/plural */
    CURL *h;    /* this kind's connection */
    pthread_t thread;
    bool started;
    /* Owned by the thread; rv and state are written under c->mu for other readers. */
    char *rv; /* resume point; NULL: list first */
    k8s_kind_state state;
    bool synced;     /* counted in c->synced */
    bool missing;    /* the last list answered 404 (logged once) */
    int backoff_ms;  /* the last back-off; 0 after a success */
    int gone_streak; /* 410s in a row without an event between them */
    long problem;    /* what was logged last (see problem_id); 0 after a success */
    unsigned rng;    /* jitter */
    /* One transfer's state, reset by transfer(). */
    bool watching; /* a watch: a 200 answer goes to stream */
    k8s_stream stream;
    sx_err stream_err; /* why the stream failed */
    bool gone;         /* an ERROR event with code 410 came */
    size_t events;     /* events of this watch */
    sx_buf body;       /* a list page, or the Status of a failed request */
    bool too_large;
} worker;

struct k8s_client {
    k8s_client_options opt; /* with the defaults filled in */
    sx_metric *m_events;    /* sextant_k8s_watch_events_total{kind,type} */
    sx_metric *m_relists;   /* sextant_k8s_relists_total{kind} */
    sx_metric *m_objects;   /* sextant_k8s_objects{kind} */
    pthread_mutex_t mu;     /* guards stopping (writes), synced, the workers' rv and state */
    pthread_cond_t cv;      /* stop and sync are broadcast on it */
    atomic_bool stopping;
    size_t synced; /* workers that listed once or found their kind missing */
    worker *w;
    size_t nw;
    pthread_mutex_t patch_mu; /* serialises k8s_patch_status on patch_h */
    CURL *patch_h;
};

/* ---------------------------------------------------------------- small helpers */

static bool stopping(k8s_client *c)
{
    return atomic_load(&c->stopping);
}

/* Sleeps ms, or less when the client stops; returns false when it is stopping. */
static bool nap(k8s_client *c, int ms)
{
    struct timespec deadline = sx_deadline_in(ms);
    pthread_mutex_lock(&c->mu);
    while (!stopping(c) && pthread_cond_timedwait(&c->cv, &c->mu, &deadline) == 0) {
    }
    bool go_on = !stopping(c);
    pthread_mutex_unlock(&c->mu);
    return go_on;
}

static void set_state(worker *w, k8s_kind_state s)
{
    pthread_mutex_lock(&w->c->mu);
    w->state = s;
    pthread_mutex_unlock(&w->c->mu);
}

static void set_rv(worker *w, const char *rv)
{
    char *copy = rv ? sx_strdup(rv) : NULL;
    pthread_mutex_lock(&w->c->mu);
    char *old = w->rv;
    w->rv = copy;
    pthread_mutex_unlock(&w->c->mu);
    sx_free(old);
}

static void mark_synced(worker *w)
{
    if (w->synced)
        return;
    w->synced = true;
    pthread_mutex_lock(&w->c->mu);
    w->c->synced++;
    pthread_cond_broadcast(&w->c->cv);
    pthread_mutex_unlock(&w->c->mu);
}

static void count_objects(worker *w)
{
    const char *labels[] = {w->k->kind};
    if (w->c->m_objects)
        sx_metric_set(w->c->m_objects, labels, (double)wm_size(w->map));
}

/* Waits the next back-off step, with jitter (half the step plus up to half again). */
static bool back_off(worker *w)
{
    k8s_client *c = w->c;
    w->backoff_ms = sx_backoff_next(w->backoff_ms, c->opt.backoff_min_ms, c->opt.backoff_max_ms);
    int half = w->backoff_ms / 2;
    int ms = half + (int)(rand_r(&w->rng) % (unsigned)(half + 1));
    return nap(c, ms);
}

/* Logs a failure unless the same problem was the last one logged: one line per change,
 * not one per retry. problem identifies it (an HTTP status, or a negative number). */
static void report(worker *w, long problem, const sx_err *e)
{
    if (problem == w->problem)
        return;
    w->problem = problem;
    sx_log_level level = problem == 401 || problem == 403 ? SX_LOG_ERROR : SX_LOG_WARN;
    sx_log_fields(level, LOG, json_pack("{s:s}", "kind", w->k->kind), "%s: %s", w->k->kind,
                  e->message);
}

/* A success after failures: says so once, and the back-off starts over. */
static void recovered(worker *w, const char *what)
{
    if (w->problem != 0)
        sx_log_fields(SX_LOG_INFO, LOG, json_pack("{s:s}", "kind", w->k->kind), "%s: %s again",
                      w->k->kind, what);
    w->problem = 0;
    w->backoff_ms = 0;
}

/* Gives obj the apiVersion and kind of the worker's kind when it lacks them (list items
 * usually do). */
static void complete_object(worker *w, json_t *obj)
{
    if (!json_is_string(json_object_get(obj, "apiVersion")))
        json_object_set_new(obj, "apiVersion", json_string(w->api_version));
    if (!json_is_string(json_object_get(obj, "kind")))
        json_object_set_new(obj, "kind", json_string(w->k->kind));
}

static const char *object_rv(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

/* ---------------------------------------------------------------- watch events */

static const char *event_label(const char *type)
{
    static const char *const known[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
    for (size_t i = 0; i < sizeof(known) / sizeof(*known); i++)
        if (strcmp(type, known[i]) == 0)
            return known[i];
    return "UNKNOWN";
}

/* One watch event (k8s_stream_fn). */
static int on_event(void *ctx, json_t *ev, sx_err *err)
{
    worker *w = ctx;
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (type == NULL || !json_is_object(obj))
        return sx_err_set(err, SX_EINVAL, "watch event %zu has no type or no object",
                          w->stream.lines);
    const char *labels[] = {w->k->kind, event_label(type)};
    if (w->c->m_events)
        sx_metric_inc(w->c->m_events, labels);
    w->events++;
    if (strcmp(type, "ERROR") == 0) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        if (code == 410) {
            w->gone = true;
            return sx_err_set(err, SX_EPRECONDITION, "watch: %s", msg ? msg : "410 Gone");
        }
        return sx_err_set(err, SX_EUNAVAILABLE, "watch: ERROR event %lld: %s", (long long)code,
                          msg ? msg : "no message");
    }
    const char *rv = object_rv(obj);
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
        strcmp(type, "DELETED") == 0) {
        char *key = wm_key_of(obj);
        if (key == NULL)
            return sx_err_set(err, SX_EINVAL, "watch: %s event for an object without a name", type);
        if (type[0] == 'D') {
            wm_delete(w->map, key);
        } else {
            complete_object(w, obj);
            /* The map takes the object and strips it; the event is ours alone. */
            (void)wm_store(w->map, key, json_incref(obj));
        }
        sx_free(key);
        count_objects(w);
    }
    if (rv && *rv)
        set_rv(w, rv);
    w->gone_streak = 0;
    recovered(w, "watching");
    return 0;
}

/* ---------------------------------------------------------------- transfers */

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    worker *w = ud;
    size_t len = size * n;
    long http = 0;
    curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &http);
    if (w->watching && http == 200)
        return k8s_stream_feed(&w->stream, p, len, &w->stream_err) == 0 ? len : 0;
    if (w->body.len + len > MAX_PAGE_BYTES) {
        w->too_large = true;
        return 0;
    }
    sx_buf_append(&w->body, p, len);
    return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return stopping(ud) ? 1 : 0;
}

/*
 * GETs base + query on the worker's connection. Returns OUT_OK with *http when an answer
 * came (its body in w->body, or through the stream for a watch answered 200), OUT_STOPPED
 * when the client stops, OUT_FAILED (logged) when no answer came or the stream failed.
 */
static outcome transfer(worker *w, const char *query, bool watch, long *http)
{
    k8s_client *c = w->c;
    *http = 0;
    sx_buf_free(&w->body);
    w->too_large = false;
    w->watching = watch;
    w->gone = false;
    w->events = 0;
    sx_err_clear(&w->stream_err);
    k8s_stream_reset(&w->stream);
    sx_err e;
    sx_err_clear(&e);
    struct curl_slist *headers;
    if (k8s_http_setup(w->h, c->opt.cfg, NULL, c->opt.connect_timeout_ms, &headers, &e) != 0) {
        report(w, -1, &e);
        return OUT_FAILED;
    }
    char *url = sx_asprintf("%s%s?%s", c->opt.cfg->server, w->base, query);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(w->h, CURLOPT_URL, url);
    curl_easy_setopt(w->h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(w->h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(w->h, CURLOPT_XFERINFODATA, c);
    if (watch) {
        curl_easy_setopt(w->h, CURLOPT_TIMEOUT, (long)c->opt.watch_timeout_s + WATCH_GRACE_S);
    } else {
        curl_easy_setopt(w->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(w->h, CURLOPT_LOW_SPEED_TIME, LIST_STALL_S);
    }
    CURLcode cc = curl_easy_perform(w->h);
    curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, http);
    curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(w->h, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    sx_free(url);
    if (stopping(c))
        return OUT_STOPPED;
    if (w->gone || cc == CURLE_OK)
        return OUT_OK;
    if (w->stream.failed) {
        e = w->stream_err;
        report(w, -2, &e);
    } else if (w->too_large) {
        sx_err_set(&e, SX_ETOOLARGE, "a list page is larger than %u bytes", MAX_PAGE_BYTES);
        report(w, -3, &e);
    } else {
        sx_err_set(&e, SX_EUNAVAILABLE, "%s %s: %s", watch ? "watch" : "list", c->opt.cfg->server,
                   *errbuf ? errbuf : curl_easy_strerror(cc));
        report(w, -1000 - (long)cc, &e);
    }
    return OUT_FAILED;
}

/* Logs an answer outside 2xx (as report does) and says what it means for the loop. */
static outcome answer_failed(worker *w, long http, const char *what)
{
    if (http == 404)
        return OUT_MISSING;
    if (http == 410)
        return OUT_GONE;
    sx_err e;
    sx_err_clear(&e);
    k8s_http_error(http, w->body.data, w->body.len, what, &e);
    report(w, http, &e);
    return OUT_FAILED;
}

/* ---------------------------------------------------------------- list */

/* Adds the items of one list page to items; returns the page's metadata.continue
 * (borrowed from page) and sets *rv to its resourceVersion. */
static int take_page(worker *w, json_t *page, json_t *items, const char **cont, const char **rv)
{
    json_t *arr = json_object_get(page, "items");
    json_t *md = json_object_get(page, "metadata");
    if (!json_is_array(arr) && !json_is_null(arr))
        return -1;
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it)
    {
        char *key = json_is_object(it) ? wm_key_of(it) : NULL;
        if (key == NULL)
            continue;
        complete_object(w, it);
        json_object_set(items, key, it);
        sx_free(key);
    }
    *cont = json_string_value(json_object_get(md, "continue"));
    *rv = json_string_value(json_object_get(md, "resourceVersion"));
    return 0;
}

static outcome do_list(worker *w)
{
    k8s_client *c = w->c;
    json_t *items = json_object();
    char *cont = NULL, *rv = NULL;
    outcome out = OUT_FAILED;
    for (;;) {
        sx_buf q = {0};
        sx_buf_printf(&q, "limit=%d", c->opt.page_size);
        if (cont) {
            char *esc = curl_easy_escape(w->h, cont, 0);
            sx_buf_printf(&q, "&continue=%s", esc);
            curl_free(esc);
        }
        if (w->k->selector) {
            char *esc = curl_easy_escape(w->h, w->k->selector, 0);
            sx_buf_printf(&q, "&fieldSelector=%s", esc);
            curl_free(esc);
        }
        long http;
        out = transfer(w, sx_buf_cstr(&q), false, &http);
        sx_buf_free(&q);
        if (out != OUT_OK)
            break;
        if (http != 200) {
            out = answer_failed(w, http, "list");
            /* A continue token that expired (410) or a kind gone between two pages is
             * retried from the start like any failure. */
            if (cont && out != OUT_FAILED) {
                sx_err e;
                sx_err_set(&e, SX_EPRECONDITION, "list: HTTP %ld on a later page", http);
                report(w, http, &e);
                out = OUT_FAILED;
            }
            break;
        }
        json_t *page = json_loadb(w->body.data, w->body.len, 0, NULL);
        const char *next = NULL, *prv = NULL;
        if (!json_is_object(page) || take_page(w, page, items, &next, &prv) != 0) {
            sx_err e;
            sx_err_set(&e, SX_EINVAL, "list: the answer is not a Kubernetes list");
            report(w, -4, &e);
            json_decref(page);
            out = OUT_FAILED;
            break;
        }
        sx_free(cont);
        cont = next && *next ? sx_strdup(next) : NULL;
        if (prv && *prv) {
            sx_free(rv);
            rv = sx_strdup(prv);
        }
        json_decref(page);
        if (cont == NULL)
            break;
    }
    sx_buf_free(&w->body);
    sx_free(cont);
    if (out == OUT_OK && rv == NULL) {
        sx_err e;
        sx_err_set(&e, SX_EINVAL, "list: the answer has no metadata.resourceVersion");
        report(w, -5, &e);
        out = OUT_FAILED;
    }
    if (out == OUT_OK) {
        size_t n = json_object_size(items);
        int changed = wm_replace(w->map, json_incref(items));
        set_rv(w, rv);
        count_objects(w);
        /* The first list of a kind is worth a line; relists are counted and logged apart. */
        sx_log_fields(w->synced ? SX_LOG_DEBUG : SX_LOG_INFO, LOG,
                      json_pack("{s:s,s:I,s:i,s:s}", "kind", w->k->kind, "objects", (json_int_t)n,
                                "changed", changed, "resource_version", rv),
                      "%s: listed", w->k->kind);
    }
    json_decref(items);
    sx_free(rv);
    return out;
}

/* ---------------------------------------------------------------- watch */

static outcome do_watch(worker *w)
{
    k8s_client *c = w->c;
    sx_buf q = {0};
    char *rv = curl_easy_escape(w->h, w->rv, 0);
    sx_buf_printf(&q, "watch=true&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
                  rv, c->opt.watch_timeout_s);
    curl_free(rv);
    if (w->k->selector) {
        char *esc = curl_easy_escape(w->h, w->k->selector, 0);
        sx_buf_printf(&q, "&fieldSelector=%s", esc);
        curl_free(esc);
    }
    int64_t t0 = sx_monotonic_ms();
    long http;
    outcome out = transfer(w, sx_buf_cstr(&q), true, &http);
    sx_buf_free(&q);
    if (out != OUT_OK)
        return out;
    if (w->gone)
        return OUT_GONE;
    if (http != 200) {
        out = answer_failed(w, http, "watch");
        sx_buf_free(&w->body);
        return out;
    }
    sx_err e;
    sx_err_clear(&e);
    if (k8s_stream_end(&w->stream, &e) != 0) {
        report(w, -2, &e);
        return w->gone ? OUT_GONE : OUT_FAILED;
    }
    if (w->events == 0 && sx_monotonic_ms() - t0 < WATCH_MIN_MS) {
        sx_err_set(&e, SX_EUNAVAILABLE, "watch: the server ended the watch at once");
        report(w, -6, &e);
        return OUT_FAILED;
    }
    return OUT_OK;
}

/* ---------------------------------------------------------------- the loop */

static void relist_needed(worker *w, const char *why)
{
    const char *labels[] = {w->k->kind};
    if (w->c->m_relists)
        sx_metric_inc(w->c->m_relists, labels);
    sx_log_fields(
        SX_LOG_INFO, LOG,
        json_pack("{s:s,s:s}", "kind", w->k->kind, "resource_version", w->rv ? w->rv : ""),
        "%s: %s; listing again", w->k->kind, why);
    set_rv(w, NULL);
}

/* One turn of the loop while the kind has no resourceVersion: list. Returns false when
 * the client stops. */
static bool list_turn(worker *w)
{
    k8s_client *c = w->c;
    set_state(w, K8S_KIND_LISTING);
    switch (do_list(w)) {
    case OUT_OK:
        if (w->missing)
            sx_log_fields(SX_LOG_INFO, LOG, json_pack("{s:s}", "kind", w->k->kind),
                          "%s: the API server serves this kind now", w->k->kind);
        w->missing = false;
        recovered(w, "listing");
        mark_synced(w);
        set_state(w, K8S_KIND_WATCHING);
        return true;
    case OUT_MISSING:
        if (!w->missing) {
            sx_log_fields(SX_LOG_INFO, LOG,
                          json_pack("{s:s,s:s}", "kind", w->k->kind, "path", w->base),
                          "%s: the API server does not serve this kind (is its CRD installed?); "
                          "trying again every %g s",
                          w->k->kind, c->opt.missing_retry_ms / 1000.0);
            w->missing = true;
        }
        w->problem = 0;
        w->backoff_ms = 0;
        if (wm_replace(w->map, json_object()) > 0)
            count_objects(w);
        set_state(w, K8S_KIND_MISSING);
        mark_synced(w);
        return nap(c, c->opt.missing_retry_ms);
    case OUT_GONE:
    case OUT_FAILED:
        set_state(w, K8S_KIND_FAILING);
        return back_off(w);
    case OUT_STOPPED:
        return false;
    }
    return false;
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    k8s_client *c = w->c;
    while (!stopping(c)) {
        if (w->rv == NULL) {
            if (!list_turn(w))
                break;
            continue;
        }
        set_state(w, K8S_KIND_WATCHING);
        outcome out = do_watch(w);
        if (out == OUT_STOPPED)
            break;
        if (out == OUT_OK) {
            recovered(w, "watching");
        } else if (out == OUT_GONE) {
            relist_needed(w, "the resourceVersion is too old (410 Gone)");
            /* A server that answers 410 to the resourceVersion its own list just gave is
             * not asked again at once. */
            if (++w->gone_streak > 1 && !back_off(w))
                break;
        } else if (out == OUT_MISSING) {
            /* The kind went away (its CRD was deleted): the list says so and empties it. */
            set_rv(w, NULL);
        } else {
            set_state(w, K8S_KIND_FAILING);
            if (!back_off(w))
                break;
        }
    }
    set_state(w, K8S_KIND_IDLE);
    return NULL;
}

/* ---------------------------------------------------------------- lifecycle */

int k8s_client_create(const k8s_client_options *opt, k8s_client **out, sx_err *err)
{
    *out = NULL;
    if (opt == NULL || opt->cfg == NULL || opt->cfg->server == NULL || opt->maps == NULL ||
        opt->kinds == NULL || opt->nkinds == 0)
        return sx_err_set(err, SX_EINVAL, "the Kubernetes client needs a server, maps and kinds");
    k8s_http_global_init();
    k8s_client *c = sx_calloc(1, sizeof(*c));
    c->opt = *opt;
    if (c->opt.page_size <= 0)
        c->opt.page_size = 500;
    if (c->opt.watch_timeout_s <= 0)
        c->opt.watch_timeout_s = 300;
    if (c->opt.backoff_min_ms <= 0)
        c->opt.backoff_min_ms = 250;
    if (c->opt.backoff_max_ms < c->opt.backoff_min_ms)
        c->opt.backoff_max_ms = c->opt.backoff_min_ms > 30000 ? c->opt.backoff_min_ms : 30000;
    if (c->opt.missing_retry_ms <= 0)
        c->opt.missing_retry_ms = 30000;
    if (c->opt.max_event_bytes == 0)
        c->opt.max_event_bytes = 16u * 1024 * 1024;
    if (c->opt.connect_timeout_ms <= 0)
        c->opt.connect_timeout_ms = 10000;
    pthread_mutex_init(&c->mu, NULL);
    sx_cond_init_monotonic(&c->cv);
    pthread_mutex_init(&c->patch_mu, NULL);
    atomic_init(&c->stopping, false);
    if (opt->metrics) {
        c->m_events =
            sx_metrics_counter(opt->metrics, "sextant_k8s_watch_events_total",
                               "Kubernetes watch events received, by kind and type.", "kind,type");
        c->m_relists = sx_metrics_counter(opt->metrics, "sextant_k8s_relists_total",
                                          "Lists of a Kubernetes kind made again because its "
                                          "resourceVersion was too old (410 Gone).",
                                          "kind");
        c->m_objects = sx_metrics_gauge(opt->metrics, "sextant_k8s_objects",
                                        "Kubernetes objects held, by kind.", "kind");
    }
    c->nw = opt->nkinds;
    c->w = sx_calloc(c->nw, sizeof(worker));
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)c;
    for (size_t i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        w->c = c;
        w->k = &opt->kinds[i];
        w->map = wm_table_add(opt->maps, w->k->kind);
        k8s_kind_api_version(w->k, w->api_version, sizeof(w->api_version));
        w->base = k8s_kind_path(w->k, NULL, NULL, NULL);
        w->rng = seed + (unsigned)i * 2654435761u;
        k8s_stream_init(&w->stream, c->opt.max_event_bytes, on_event, w);
        w->h = curl_easy_init();
        if (w->h == NULL) {
            k8s_client_destroy(c);
            return sx_err_set(err, SX_EINTERNAL, "could not create a libcurl handle");
        }
        count_objects(w);
        /* The series exist from the start, so a rate over them needs no first event. */
        const char *labels[] = {w->k->kind};
        if (c->m_relists)
            sx_metric_add(c->m_relists, labels, 0);
    }
    *out = c;
    return 0;
}

int k8s_client_start(k8s_client *c, sx_err *err)
{
    atomic_store(&c->stopping, false);
    for (size_t i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        if (pthread_create(&w->thread, NULL, worker_run, w) != 0) {
            k8s_client_stop(c);
            return sx_err_set(err, SX_EINTERNAL, "could not start the watch thread of %s",
                              w->k->kind);
        }
        w->started = true;
    }
    sx_log_fields(SX_LOG_INFO, LOG,
                  json_pack("{s:s,s:i}", "source", c->opt.cfg->source, "kinds", (int)c->nw),
                  "watching the Kubernetes API at %s", c->opt.cfg->server);
    return 0;
}

void k8s_client_stop(k8s_client *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stopping, true);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < c->nw; i++) {
        if (c->w[i].started) {
            pthread_join(c->w[i].thread, NULL);
            c->w[i].started = false;
        }
    }
}

void k8s_client_destroy(k8s_client *c)
{
    if (c == NULL)
        return;
    k8s_client_stop(c);
    for (size_t i = 0; i < c->nw; i++) {
        worker *w = &c->w[i];
        if (w->h)
            curl_easy_cleanup(w->h);
        k8s_stream_free(&w->stream);
        sx_buf_free(&w->body);
        sx_free(w->rv);
        sx_free(w->base);
    }
    sx_free(c->w);
    if (c->patch_h)
        curl_easy_cleanup(c->patch_h);
    pthread_mutex_destroy(&c->patch_mu);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    sx_free(c);
}

/* ---------------------------------------------------------------- queries */

bool k8s_client_synced(k8s_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool ok = c->synced == c->nw;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

bool k8s_client_wait_synced(k8s_client *c, int64_t timeout_ms)
{
    struct timespec deadline = sx_deadline_in(timeout_ms);
    pthread_mutex_lock(&c->mu);
    while (c->synced < c->nw) {
        int rc = timeout_ms < 0 ? pthread_cond_wait(&c->cv, &c->mu)
                                : pthread_cond_timedwait(&c->cv, &c->mu, &deadline);
        if (rc != 0)
            break;
    }
    bool ok = c->synced == c->nw;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

static worker *find_worker(k8s_client *c, const char *kind)
{
    for (size_t i = 0; i < c->nw; i++)
        if (strcmp(c->w[i].k->kind, kind) == 0)
            return &c->w[i];
    return NULL;
}

k8s_kind_state k8s_client_kind_state(k8s_client *c, const char *kind)
{
    worker *w = find_worker(c, kind);
    if (w == NULL)
        return K8S_KIND_IDLE;
    pthread_mutex_lock(&c->mu);
    k8s_kind_state s = w->state;
    pthread_mutex_unlock(&c->mu);
    return s;
}

const char *k8s_kind_state_name(k8s_kind_state s)
{
    static const char *const names[] = {"idle", "listing", "watching", "missing", "failing"};
    _Static_assert(sizeof names / sizeof *names == K8S_KIND_FAILING + 1, "a name per state");
    return (size_t)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

char *k8s_client_resource_version(k8s_client *c, const char *kind)
{
    worker *w = find_worker(c, kind);
    if (w == NULL)
        return NULL;
    pthread_mutex_lock(&c->mu);
    char *rv = w->rv ? sx_strdup(w->rv) : NULL;
    pthread_mutex_unlock(&c->mu);
    return rv;
}

/* ---------------------------------------------------------------- status write-back */

/* A merge patch body on the object's path (sub: a subresource or NULL); see
 * k8s_patch_status for the answer. */
static int merge_patch(k8s_client *c, const char *what, const char *kind, const char *ns,
                       const char *name, const char *sub, const json_t *body, char **rv_out,
                       sx_err *err)
{
    if (rv_out)
        *rv_out = NULL;
    worker *w = find_worker(c, kind);
    if (w == NULL)
        return sx_err_set(err, SX_EINVAL, "%s: %s is not a watched kind", what, kind);
    if (name == NULL || *name == '\0' || !json_is_object(body))
        return sx_err_set(err, SX_EINVAL, "%s: a name and an object are required", what);
    if (w->k->namespaced && (ns == NULL || *ns == '\0'))
        return sx_err_set(err, SX_EINVAL, "%s: %s %s needs a namespace", what, kind, name);
    char *path = k8s_kind_path(w->k, ns, name, sub);
    json_t *answer = NULL;
    pthread_mutex_lock(&c->patch_mu);
    if (c->patch_h == NULL)
        c->patch_h = curl_easy_init();
    int rc = c->patch_h ? k8s_http_request(c->patch_h, c->opt.cfg, "PATCH", path, body,
                                           "application/merge-patch+json", &answer, err)
                        : sx_err_set(err, SX_EINTERNAL, "could not create a libcurl handle");
    pthread_mutex_unlock(&c->patch_mu);
    const char *rv =
        json_string_value(json_object_get(json_object_get(answer, "metadata"), "resourceVersion"));
    if (rv_out && rc >= 200 && rc < 300 && rv)
        *rv_out = sx_strdup(rv);
    json_decref(answer);
    sx_free(path);
    return rc;
}

int k8s_patch_status(k8s_client *c, const char *kind, const char *ns, const char *name,
                     const json_t *status, const char *resource_version, sx_err *err)
{
    if (!json_is_object(status))
        return sx_err_set(err, SX_EINVAL, "status write-back: a status object is required");
    json_t *body = json_pack("{s:O}", "status", (json_t *)status);
    if (resource_version && resource_version[0])
        json_object_set_new(body, "metadata",
                            json_pack("{s:s}", "resourceVersion", resource_version));
    int rc = merge_patch(c, "status write-back", kind, ns, name, "status", body, NULL, err);
    json_decref(body);
    return rc;
}

int k8s_patch_object(k8s_client *c, const char *kind, const char *ns, const char *name,
                     const json_t *patch, char **resource_version, sx_err *err)
{
    return merge_patch(c, "patch", kind, ns, name, NULL, patch, resource_version, err);
}
