/*
 * pg_link.c — the shared picture of the PostgreSQL server: which one, up or lost, and the
 * reconnect back-off bounds (see pg_link.h).
 *
 * Design: a mutex guards a short table of connection kinds (each with the server it last
 * reached and whether it is lost) and the generation. pg_link_up decides under the mutex
 * what to log and whether the generation moves on, then logs and calls the watchers
 * without it. The watchers are called under a second mutex, which pg_link_unwatch also
 * takes, so that once unwatch returns no call of the removed watcher is running and its
 * owner may be freed.
 */
#include "storage/pg_link.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/base/log.h"
#include "server/base/mem.h"

#define COMPONENT       "storage"
#define MAX_KINDS       4
#define MAX_WATCHERS    8
#define DEFAULT_MIN_MS  50
#define DEFAULT_MAX_MS  1000
#define SERVER_TEXT_MAX 300

/* What the link knows of one kind of connection. */
typedef struct kind {
    const char *name; /* static; NULL: free slot */
    bool ever;        /* connected at least once */
    bool lost;        /* the last news was a failure */
} kind;

typedef struct watcher {
    void (*fn)(void *ctx);
    void *ctx;
} watcher;

struct pg_link {
    pthread_mutex_t mu;      /* guards everything below but the watchers' calls */
    pthread_mutex_t call_mu; /* held while watchers are called, and by unwatch */
    int min_ms, max_ms;
    unsigned long gen;
    kind kinds[MAX_KINDS];
    char host[SERVER_TEXT_MAX]; /* server of the last successful connection; "" before */
    char port[32];
    watcher watchers[MAX_WATCHERS];
    size_t nwatchers;
    sx_metric *m_server;     /* sextant_db_server_info{host,port} */
    sx_metric *m_reconnects; /* sextant_db_reconnects_total{connection} */
};

pg_link *pg_link_given_or_own(pg_link *given, sx_metrics *m, bool *own)
{
    *own = given == NULL;
    if (given)
        return given;
    pg_link_options o = {.metrics = m};
    return pg_link_create(&o);
}

pg_link *pg_link_create(const pg_link_options *opt)
{
    pg_link *k = sx_calloc(1, sizeof(*k));
    pthread_mutex_init(&k->mu, NULL);
    pthread_mutex_init(&k->call_mu, NULL);
    k->min_ms = opt && opt->backoff_min_ms > 0 ? opt->backoff_min_ms : DEFAULT_MIN_MS;
    k->max_ms = opt && opt->backoff_max_ms > 0 ? opt->backoff_max_ms : DEFAULT_MAX_MS;
    if (k->max_ms < k->min_ms)
        k->max_ms = k->min_ms;
    if (opt && opt->metrics) {
        k->m_server = sx_metrics_gauge(opt->metrics, "sextant_db_server_info",
                                       "PostgreSQL server this replica is connected to (1), or "
                                       "was before (0)",
                                       "host,port");
        k->m_reconnects = sx_metrics_counter(opt->metrics, "sextant_db_reconnects_total",
                                             "Connections to PostgreSQL re-established after a "
                                             "failure, by connection (pool, listener)",
                                             "connection");
    }
    return k;
}

void pg_link_destroy(pg_link *k)
{
    if (k == NULL)
        return;
    pthread_mutex_destroy(&k->mu);
    pthread_mutex_destroy(&k->call_mu);
    sx_free(k);
}

int pg_link_backoff_next(const pg_link *k, int current_ms)
{
    if (current_ms <= 0)
        return k->min_ms;
    return current_ms * 2 > k->max_ms ? k->max_ms : current_ms * 2;
}

int pg_link_backoff_min(const pg_link *k)
{
    return k->min_ms;
}

int pg_link_backoff_max(const pg_link *k)
{
    return k->max_ms;
}

unsigned long pg_link_generation(pg_link *k)
{
    pthread_mutex_lock(&k->mu);
    unsigned long g = k->gen;
    pthread_mutex_unlock(&k->mu);
    return g;
}

/* The slot of connection, taken when new. Call with mu held. */
static kind *kind_of(pg_link *k, const char *connection)
{
    for (size_t i = 0; i < MAX_KINDS; i++)
        if (k->kinds[i].name && strcmp(k->kinds[i].name, connection) == 0)
            return &k->kinds[i];
    for (size_t i = 0; i < MAX_KINDS; i++)
        if (k->kinds[i].name == NULL) {
            k->kinds[i].name = connection;
            return &k->kinds[i];
        }
    return &k->kinds[MAX_KINDS - 1]; /* more kinds than slots: share the last one */
}

void pg_link_up(pg_link *k, const char *connection, PGconn *conn)
{
    const char *h = PQhost(conn), *p = PQport(conn);
    char host[SERVER_TEXT_MAX], port[32], prev_host[SERVER_TEXT_MAX], prev_port[32];
    snprintf(host, sizeof(host), "%s", h && *h ? h : "localhost");
    snprintf(port, sizeof(port), "%s", p && *p ? p : "5432");

    pthread_mutex_lock(&k->mu);
    kind *c = kind_of(k, connection);
    bool any_lost = false;
    for (size_t i = 0; i < MAX_KINDS; i++)
        any_lost = any_lost || (k->kinds[i].name && k->kinds[i].lost);
    bool first = !c->ever, reconnect = c->ever && c->lost;
    bool changed = k->host[0] && (strcmp(k->host, host) != 0 || strcmp(k->port, port) != 0);
    snprintf(prev_host, sizeof(prev_host), "%s", k->host);
    snprintf(prev_port, sizeof(prev_port), "%s", k->port);
    snprintf(k->host, sizeof(k->host), "%s", host);
    snprintf(k->port, sizeof(k->port), "%s", port);
    c->ever = true;
    c->lost = false;
    if (any_lost)
        k->gen++;
    if (k->m_server) {
        if (changed) {
            const char *old[] = {prev_host, prev_port};
            sx_metric_set(k->m_server, old, 0);
        }
        const char *cur[] = {host, port};
        sx_metric_set(k->m_server, cur, 1);
    }
    pthread_mutex_unlock(&k->mu);

    if (reconnect && k->m_reconnects) {
        const char *labels[] = {connection};
        sx_metric_inc(k->m_reconnects, labels);
    }
    if (first || reconnect || changed) {
        json_t *f = json_pack("{s:s,s:s,s:s,s:b}", "connection", connection, "host", host, "port",
                              port, "server_changed", changed);
        if (prev_host[0])
            json_object_set_new(f, "previous_server", json_sprintf("%s:%s", prev_host, prev_port));
        if (changed)
            sx_log_fields(SX_LOG_WARN, COMPONENT, f,
                          "database %s %s to postgresql at %s:%s, a different server than "
                          "before (%s:%s)",
                          connection, first ? "connected" : "reconnected", host, port, prev_host,
                          prev_port);
        else
            sx_log_fields(SX_LOG_INFO, COMPONENT, f, "database %s %s to postgresql at %s:%s%s",
                          connection, first ? "connected" : "reconnected", host, port,
                          prev_host[0] && !first ? ", the same server as before" : "");
    }
    if (!any_lost)
        return;
    pthread_mutex_lock(&k->call_mu);
    pthread_mutex_lock(&k->mu);
    watcher w[MAX_WATCHERS];
    size_t n = k->nwatchers;
    memcpy(w, k->watchers, n * sizeof(*w));
    pthread_mutex_unlock(&k->mu);
    for (size_t i = 0; i < n; i++)
        w[i].fn(w[i].ctx);
    pthread_mutex_unlock(&k->call_mu);
}

void pg_link_down(pg_link *k, const char *connection)
{
    pthread_mutex_lock(&k->mu);
    kind_of(k, connection)->lost = true;
    pthread_mutex_unlock(&k->mu);
}

int pg_link_watch(pg_link *k, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&k->mu);
    int rc = -1;
    if (k->nwatchers < MAX_WATCHERS) {
        k->watchers[k->nwatchers++] = (watcher){fn, ctx};
        rc = 0;
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}

void pg_link_unwatch(pg_link *k, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&k->call_mu);
    pthread_mutex_lock(&k->mu);
    for (size_t i = 0; i < k->nwatchers; i++) {
        if (k->watchers[i].fn == fn && k->watchers[i].ctx == ctx) {
            memmove(&k->watchers[i], &k->watchers[i + 1],
                    (k->nwatchers - i - 1) * sizeof(*k->watchers));
            k->nwatchers--;
            break;
        }
    }
    pthread_mutex_unlock(&k->mu);
    pthread_mutex_unlock(&k->call_mu);
}

char *pg_link_error_text(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return dst;
    size_t o = 0;
    const char *s = src ? src : "";
    while (*s) {
        size_t len = strcspn(s, "\n");
        size_t start = 0, end = len;
        while (start < end && (s[start] == ' ' || s[start] == '\t'))
            start++;
        while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\r' || s[end - 1] == '\t'))
            end--;
        if (end > start) {
            if (o > 0 && o + 2 < n) {
                dst[o++] = ';';
                dst[o++] = ' ';
            }
            for (size_t i = start; i < end && o + 1 < n; i++)
                dst[o++] = s[i];
        }
        s += len;
        if (*s == '\n')
            s++;
    }
    dst[o] = '\0';
    return dst;
}
