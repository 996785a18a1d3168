/*
 * denials.c — aggregate record of xDS clients refused for their credentials (see
 * denials.h).
 *
 * A small table keyed by client address: each entry is one open interval (its start,
 * how many refusals, per reason, the first node ids claimed). The first refusal of an
 * address opens its entry and is the one logged; the flush (the xDS sweeper, once a
 * second) closes the entries whose interval is over, takes them out under the lock
 * and writes their rows after releasing it.
 */
#include "server/xds/denials.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"

#define MAX_SOURCES 4096 /* addresses with an open interval at once */
#define MAX_NODES   8    /* node ids kept per row */
#define SOURCE_LEN  64
#define TEXT_MAX    256 /* bytes kept of a node id or identity the client sent */

typedef struct entry {
    char source[SOURCE_LEN]; /* "" for the overflow entry */
    int64_t start_ms;
    int64_t count;
    json_t *reasons; /* {"reason": count} */
    json_t *nodes;   /* the first MAX_NODES distinct node ids claimed */
    json_t *clients; /* the first MAX_NODES distinct identities presented */
    struct entry *next;
} entry;

struct xds_denials {
    pthread_mutex_t mu;
    int64_t interval_ms;
    xds_denials_audit_fn audit;
    void *ctx;
    entry *head; /* open intervals */
    size_t n;
};

xds_denials *xds_denials_create(int64_t interval_ms, xds_denials_audit_fn audit, void *ctx)
{
    xds_denials *d = sx_calloc(1, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    d->interval_ms = interval_ms > 0 ? interval_ms : 60000;
    d->audit = audit;
    d->ctx = ctx;
    return d;
}

static void entry_free(entry *e)
{
    json_decref(e->reasons);
    json_decref(e->nodes);
    json_decref(e->clients);
    sx_free(e);
}

void xds_denials_destroy(xds_denials *d)
{
    if (d == NULL)
        return;
    for (entry *e = d->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&d->mu);
    sx_free(d);
}

static entry *find_locked(xds_denials *d, const char *source)
{
    for (entry *e = d->head; e; e = e->next)
        if (strcmp(e->source, source) == 0)
            return e;
    return NULL;
}

/* Appends s to the array a unless it holds it or MAX_NODES strings already. */
static void add_distinct(json_t *a, const char *s)
{
    if (s == NULL || s[0] == '\0' || json_array_size(a) >= MAX_NODES)
        return;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (strcmp(json_string_value(v), s) == 0)
            return;
    }
    json_array_append_new(a, json_string(s));
}

/* What a client sent, for the log and the audit row: at most max bytes, valid
 * UTF-8 (a status report's node id is not checked before its credentials are). Caller
 * frees; NULL for NULL. */
static char *client_text(const char *s, size_t max)
{
    if (s == NULL)
        return NULL;
    char *cut = sx_strndup(s, max);
    char *out = sx_utf8_sanitize(cut);
    sx_free(cut);
    return out;
}

void xds_denials_note(xds_denials *d, const char *source, const char *who_in, const char *reason,
                      const char *node_in, const char *protocol, const char *msg_in, int64_t now_ms)
{
    char *node_id = client_text(node_in, TEXT_MAX), *who = client_text(who_in, TEXT_MAX);
    char *msg = client_text(msg_in, 4 * TEXT_MAX);
    char src[SOURCE_LEN];
    snprintf(src, sizeof(src), "%s", source ? source : "");
    pthread_mutex_lock(&d->mu);
    entry *e = find_locked(d, src);
    if (e == NULL && d->n >= MAX_SOURCES) {
        src[0] = '\0'; /* counted in the row without an address */
        e = find_locked(d, src);
    }
    bool first = e == NULL;
    if (first) {
        e = sx_calloc(1, sizeof(*e));
        memcpy(e->source, src, sizeof(src));
        e->start_ms = now_ms;
        e->reasons = json_object();
        e->nodes = json_array();
        e->clients = json_array();
        e->next = d->head;
        d->head = e;
        d->n++;
    }
    e->count++;
    json_object_set_new(e->reasons, reason,
                        json_integer(json_integer_value(json_object_get(e->reasons, reason)) + 1));
    const char *node = node_id ? node_id : "";
    add_distinct(e->nodes, node);
    add_distinct(e->clients, who);
    int64_t interval_s = d->interval_ms / 1000;
    pthread_mutex_unlock(&d->mu);
    if (first)
        sx_log_fields(SX_LOG_WARN, "xds",
                      json_pack("{s:s,s:s,s:s,s:s,s:s}", "source", src, "reason", reason, "node",
                                node, "client", who ? who : "", "protocol",
                                protocol ? protocol : ""),
                      "refused an xds client from %s: %s (its further refusals in the next %llds "
                      "are counted, not logged)",
                      src[0] ? src : "an unknown address", msg, (long long)interval_s);
    sx_free(node_id);
    sx_free(who);
    sx_free(msg);
}

void xds_denials_flush(xds_denials *d, int64_t now_ms, bool all)
{
    entry *done = NULL;
    pthread_mutex_lock(&d->mu);
    for (entry **p = &d->head; *p;) {
        entry *e = *p;
        if (all || now_ms - e->start_ms >= d->interval_ms) {
            *p = e->next;
            e->next = done;
            done = e;
            d->n--;
        } else {
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&d->mu);
    for (entry *e = done, *next; e; e = next) {
        next = e->next;
        if (d->audit) {
            json_t *details =
                json_pack("{s:I,s:O,s:O,s:O,s:I}", "count", (json_int_t)e->count, "reasons",
                          e->reasons, "nodes", e->nodes, "clients", e->clients, "interval_s",
                          (json_int_t)(d->interval_ms / 1000));
            const char *actor = json_string_value(json_array_get(e->clients, 0));
            audit_new row = {
                .actor = actor ? actor : "anonymous",
                .action = "proxy.connect",
                .resource_type = "proxy",
                .resource_id = json_string_value(json_array_get(e->nodes, 0)),
                .result = AUDIT_DENIED,
                .status_code = 403,
                .source_ip = e->source[0] ? e->source : NULL,
                .details = details,
            };
            sx_err err;
            sx_err_clear(&err);
            if (d->audit(d->ctx, &row, &err) != 0) {
                sx_err_prefix(&err, "could not audit %lld refused xds clients from %s",
                              (long long)e->count, e->source[0] ? e->source : "unknown addresses");
                sx_log_err(SX_LOG_ERROR, "xds", &err);
            }
            json_decref(details);
        }
        entry_free(e);
    }
}
