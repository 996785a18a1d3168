/*
 * status.c — debounced, bounded persistence of node events (see status.h).
 *
 * Events are merged into one pending record per node in a hash table: the newest ACK,
 * NACK and sent version win, a connect carries the identity, a disconnect its reason.
 * Connects and disconnects are ordered by stream generation (merge_connect,
 * merge_disconnect): one of an older stream than the record already holds is dropped,
 * whichever order they arrive in, also when a failed batch is put back.
 * The flusher thread wakes every flush interval, or at once after a critical event (an
 * ACK a deployment waits for is one), swaps the table out and writes it in one
 * transaction: identities first (the upserts of the whole batch one statement, their
 * events one more), then versions — the versions sent and the ACKs of the whole batch
 * one statement each, with the ACKs' events one more — then NACKs and reports, one
 * batched last_seen update, then the stream ends (one statement, their events one more). A failed
 * flush puts the batch back (newer events win when the node was updated meanwhile) so a database
 * blip loses nothing but what the bound forces out.
 *
 * The same transaction writes the live events of what it records (server/events.h):
 * proxy_connected per connect, config_applied when an ACK changes the node's acked
 * version, config_rejected per NACK, proxy_disconnected when this replica still held
 * the node; so an event is streamed exactly when its row change commits.
 */
#include "server/nodes/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/events.h"
#include "storage/repo_nodes.h"

/* Longest NACK error an event carries (node_status keeps more). */
#define EVENT_ERROR_MAX 2048
/* Longest text taken from a client (NACK error, report message) for node_status. */
#define CLIENT_TEXT_MAX 8192

enum {
    EV_CONNECT = 1u << 0,    /* identity present: upsert */
    EV_SEEN = 1u << 1,       /* touch last_seen */
    EV_ACK = 1u << 2,        /* ack_version */
    EV_NACK = 1u << 3,       /* nack_version + nack_error */
    EV_SENT = 1u << 4,       /* sent_version */
    EV_DISCONNECT = 1u << 5, /* disconnect_reason */
    EV_REPORT = 1u << 6,     /* report_* */
};

typedef struct pending {
    struct pending *next; /* hash chain */
    char *node_id;
    unsigned events;
    /* identity (EV_CONNECT) */
    char *group, *protocol, *user_agent;
    json_t *labels, *metadata, *locality;
    long long ack_version;
    long long nack_version;
    char *nack_error;
    long long sent_version;
    char *disconnect_reason;
    long long gen;      /* stream generation of the connect (EV_CONNECT) */
    long long disc_gen; /* stream generation of the disconnect (EV_DISCONNECT) */
    bool report_ready;
    char *report_version, *report_message, *report_observed_at;
} pending;

#define BUCKETS 4096

struct node_status_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* wakes the flusher: critical event, flush request, stop */
    pthread_cond_t flushed; /* signalled after every flush */
    pthread_t thread;
    pg_pool *pool; /* borrowed */
    char *replica_id;
    int interval_ms;
    size_t max_pending;
    pending *table[BUCKETS];
    size_t count; /* nodes in table */
    bool urgent;  /* a critical event arrived */
    bool stopping;
    uint64_t flush_requests; /* node_status_flush asks; */
    uint64_t flushes_done;   /* ... and waits for this to pass its ask */
    int last_flush_rc;
    void (*on_flush)(void *ctx); /* node_status_on_flush */
    void *on_flush_ctx;
    sx_metric *m_depth, *m_enqueued, *m_dropped, *m_flush_seconds, *m_flush_errors;
};

static size_t bucket_of(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)(h % BUCKETS);
}

static void pending_free(pending *p)
{
    sx_free(p->node_id);
    sx_free(p->group);
    sx_free(p->protocol);
    sx_free(p->user_agent);
    json_decref(p->labels);
    json_decref(p->metadata);
    json_decref(p->locality);
    sx_free(p->nack_error);
    sx_free(p->disconnect_reason);
    sx_free(p->report_version);
    sx_free(p->report_message);
    sx_free(p->report_observed_at);
    sx_free(p);
}

static void replace_str(char **dst, const char *src)
{
    sx_free(*dst);
    *dst = src ? sx_strdup(src) : NULL;
}

/* The pending record of node_id, created when absent and the bound allows; NULL when
 * the event must be dropped. Call with the lock held. */
static pending *lookup_locked(node_status_queue *q, const char *node_id, bool critical)
{
    size_t b = bucket_of(node_id);
    for (pending *p = q->table[b]; p; p = p->next)
        if (strcmp(p->node_id, node_id) == 0)
            return p;
    /* Critical events may use a second bound's worth of room, so a flood of routine
     * updates cannot crowd out NACKs and disconnects. */
    size_t limit = critical ? q->max_pending * 2 : q->max_pending;
    if (q->count >= limit)
        return NULL;
    pending *p = sx_calloc(1, sizeof(*p));
    p->node_id = sx_strdup(node_id);
    p->next = q->table[b];
    q->table[b] = p;
    q->count++;
    return p;
}

/* Common prologue of every event: find the record or count a drop. */
static pending *begin_event(node_status_queue *q, const char *node_id, bool critical)
{
    if (node_id == NULL || node_id[0] == '\0')
        return NULL;
    pthread_mutex_lock(&q->mu);
    pending *p = lookup_locked(q, node_id, critical);
    if (p == NULL) {
        pthread_mutex_unlock(&q->mu);
        if (q->m_dropped)
            sx_metric_inc(q->m_dropped, NULL);
        return NULL;
    }
    return p;
}

static void end_event(node_status_queue *q, bool critical)
{
    if (critical) {
        q->urgent = true;
        pthread_cond_signal(&q->cv);
    }
    size_t depth = q->count;
    pthread_mutex_unlock(&q->mu);
    if (q->m_enqueued)
        sx_metric_inc(q->m_enqueued, NULL);
    if (q->m_depth)
        sx_metric_set(q->m_depth, NULL, (double)depth);
}

/* Whether an event of stream generation gen is older than a connect or disconnect p
 * already holds: then it is of a stream that was superseded, and changes nothing. */
static bool gen_is_stale(const pending *p, long long gen)
{
    return ((p->events & EV_CONNECT) && p->gen > gen) ||
           ((p->events & EV_DISCONNECT) && p->disc_gen > gen);
}

/* Takes the identity of src (whose strings and JSON it steals) as the connect of p. */
static void take_identity(pending *p, pending *src)
{
    sx_free(p->group), p->group = src->group, src->group = NULL;
    sx_free(p->protocol), p->protocol = src->protocol, src->protocol = NULL;
    sx_free(p->user_agent), p->user_agent = src->user_agent, src->user_agent = NULL;
    json_decref(p->labels), p->labels = src->labels, src->labels = NULL;
    json_decref(p->metadata), p->metadata = src->metadata, src->metadata = NULL;
    json_decref(p->locality), p->locality = src->locality, src->locality = NULL;
}

/* Merges a connect of generation gen (identity in src) into p. On a tie with p's own
 * connect (the same stream), keep_tie keeps p's: a requeued batch is older than what
 * arrived meanwhile. A connect clears a disconnect of an older stream only. */
static void merge_connect(pending *p, pending *src, long long gen, bool keep_tie)
{
    if (gen_is_stale(p, gen) || (keep_tie && (p->events & EV_CONNECT) && p->gen == gen))
        return;
    take_identity(p, src);
    p->events |= EV_CONNECT | EV_SEEN;
    p->gen = gen;
    if ((p->events & EV_DISCONNECT) && p->disc_gen < gen)
        p->events &= ~(unsigned)EV_DISCONNECT;
}

/* Merges the end of the stream of generation gen into p; *reason is stolen. */
static void merge_disconnect(pending *p, char **reason, long long gen)
{
    if (gen_is_stale(p, gen))
        return;
    p->events |= EV_DISCONNECT;
    p->disc_gen = gen;
    sx_free(p->disconnect_reason);
    p->disconnect_reason = *reason;
    *reason = NULL;
}

void node_status_connected(node_status_queue *q, const node_identity *id)
{
    pending *p = begin_event(q, id->node_id, true);
    if (p == NULL)
        return;
    pending src = {
        .group = sx_strdup(id->group ? id->group : ""),
        .protocol = id->protocol ? sx_strdup(id->protocol) : NULL,
        .user_agent = id->user_agent ? sx_strdup(id->user_agent) : NULL,
        .labels = id->labels ? json_deep_copy(id->labels) : NULL,
        .metadata = id->metadata ? json_deep_copy(id->metadata) : NULL,
        .locality = id->locality ? json_deep_copy(id->locality) : NULL,
    };
    merge_connect(p, &src, id->stream_gen, false);
    sx_free(src.group);
    sx_free(src.protocol);
    sx_free(src.user_agent);
    json_decref(src.labels);
    json_decref(src.metadata);
    json_decref(src.locality);
    end_event(q, true);
}

void node_status_disconnected(node_status_queue *q, const char *node_id, long long stream_gen,
                              const char *reason)
{
    pending *p = begin_event(q, node_id, true);
    if (p == NULL)
        return;
    char *r = sx_strdup(reason ? reason : "other");
    merge_disconnect(p, &r, stream_gen);
    sx_free(r);
    end_event(q, true);
}

void node_status_seen(node_status_queue *q, const char *node_id)
{
    pending *p = begin_event(q, node_id, false);
    if (p == NULL)
        return;
    p->events |= EV_SEEN;
    end_event(q, false);
}

static void ack(node_status_queue *q, const char *node_id, long long version, bool critical)
{
    pending *p = begin_event(q, node_id, critical);
    if (p == NULL)
        return;
    /* The newest ACK wins, not the highest version: a rollback moves a node back. */
    p->events |= EV_ACK | EV_SEEN;
    p->ack_version = version;
    end_event(q, critical);
}

void node_status_ack(node_status_queue *q, const char *node_id, long long version)
{
    ack(q, node_id, version, false);
}

void node_status_ack_awaited(node_status_queue *q, const char *node_id, long long version)
{
    ack(q, node_id, version, true);
}

void node_status_nack(node_status_queue *q, const char *node_id, long long version,
                      const char *error)
{
    pending *p = begin_event(q, node_id, true);
    if (p == NULL)
        return;
    p->events |= EV_NACK | EV_SEEN;
    p->nack_version = version;
    replace_str(&p->nack_error, error ? error : "");
    end_event(q, true);
}

void node_status_desired(node_status_queue *q, const char *node_id, long long version)
{
    pending *p = begin_event(q, node_id, false);
    if (p == NULL)
        return;
    p->events |= EV_SENT;
    p->sent_version = version;
    end_event(q, false);
}

void node_status_report(node_status_queue *q, const char *node_id, bool ready, const char *version,
                        const char *message, const char *observed_at)
{
    pending *p = begin_event(q, node_id, false);
    if (p == NULL)
        return;
    p->events |= EV_REPORT | EV_SEEN;
    p->report_ready = ready;
    replace_str(&p->report_version, version ? version : "");
    replace_str(&p->report_message, message ? message : "");
    replace_str(&p->report_observed_at, observed_at);
    end_event(q, false);
}

/* ------------------------------------------------------------------ flushing */

typedef struct batch {
    pending **items;
    size_t count;
    const char *replica_id;
} batch;

/* A copy of s in a of at most max bytes that is valid UTF-8 (bad bytes become '?'). What
 * clients send (NACK errors, user agents, reports) is not checked before it gets here,
 * and PostgreSQL refuses text and JSON that is not UTF-8: one bad string would fail the
 * whole batch, again at every retry. */
static char *utf8_prefix(sx_arena *a, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max)
        n = max;
    char *out = sx_arena_alloc(a, n + 1);
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = ch < 0x80             ? 1
                     : (ch & 0xE0) == 0xC0 ? 2
                     : (ch & 0xF0) == 0xE0 ? 3
                     : (ch & 0xF8) == 0xF0 ? 4
                                           : 0;
        bool ok = len > 0 && i + len <= n && !(len == 2 && ch < 0xC2) && !(ch > 0xF4);
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) {
            unsigned char c1 = (unsigned char)s[i + 1];
            ok =
                !(ch == 0xE0 && c1 < 0xA0) && !(ch == 0xED && c1 >= 0xA0); /* overlong, surrogate */
        } else if (ok && len == 4) {
            unsigned char c1 = (unsigned char)s[i + 1];
            ok = !(ch == 0xF0 && c1 < 0x90) && !(ch == 0xF4 && c1 >= 0x90);
        }
        if (!ok) {
            out[o++] = '?';
            i++;
            continue;
        }
        memcpy(out + o, s + i, len);
        o += len;
        i += len;
    }
    out[o] = '\0';
    return out;
}

/* Writes one event; data is taken (NULL = {}). */
static int emit(pg_conn *c, const char *replica_id, const char *type, const char *node_id,
                const char *group, json_t *data, sx_err *err)
{
    sx_event e = {.type = type, .node_id = node_id, .group = group, .data = data};
    int rc = events_emit(c, replica_id, &e, err);
    json_decref(data);
    return rc;
}

/* Writes the n events of ev in one statement and releases their data. */
static int emit_all(pg_conn *c, const char *replica_id, sx_event *ev, size_t n, sx_err *err)
{
    int rc = events_emit_many(c, replica_id, ev, n, err);
    for (size_t i = 0; i < n; i++)
        json_decref((json_t *)ev[i].data);
    return rc;
}

/* The versions sent to the batch's nodes. */
static int write_sents(pg_conn *c, const batch *b, sx_arena *a, sx_err *err)
{
    size_t n = 0;
    const char **ids = sx_arena_alloc(a, (b->count ? b->count : 1) * sizeof(*ids));
    long long *versions = sx_arena_alloc(a, (b->count ? b->count : 1) * sizeof(*versions));
    for (size_t i = 0; i < b->count; i++) {
        if (!(b->items[i]->events & EV_SENT))
            continue;
        ids[n] = b->items[i]->node_id;
        versions[n++] = b->items[i]->sent_version;
    }
    return node_repo_record_sents(c, ids, versions, n, err);
}

/* The batch's ACKs, and config_applied for each that changed the node's acked version. */
static int write_acks(pg_conn *c, const batch *b, sx_arena *a, sx_err *err)
{
    size_t n = 0;
    node_ack *acks = sx_arena_alloc(a, (b->count ? b->count : 1) * sizeof(*acks));
    for (size_t i = 0; i < b->count; i++)
        if (b->items[i]->events & EV_ACK)
            acks[n++] =
                (node_ack){.node_id = b->items[i]->node_id, .version = b->items[i]->ack_version};
    int rc = node_repo_record_acks(c, acks, n, a, err);
    if (rc || n == 0)
        return rc;
    sx_event *ev = sx_calloc(n, sizeof(*ev));
    size_t nev = 0;
    for (size_t i = 0; i < n; i++) {
        if (!acks[i].found || acks[i].previous == acks[i].version)
            continue;
        ev[nev++] = (sx_event){
            .type = EVENT_CONFIG_APPLIED,
            .node_id = acks[i].node_id,
            .group = acks[i].group,
            .data = json_pack("{s:I,s:s?}", "version", (json_int_t)acks[i].version, "group",
                              acks[i].group),
        };
    }
    rc = emit_all(c, b->replica_id, ev, nev, err);
    sx_free(ev);
    return rc;
}

/* NACK and disconnect of one node, each with its event. */
static int write_nack(pg_conn *c, const batch *b, const pending *p, sx_arena *a, sx_err *err)
{
    char *group = NULL;
    const char *error = utf8_prefix(a, p->nack_error ? p->nack_error : "", CLIENT_TEXT_MAX);
    int rc = node_repo_record_nack_ex(c, p->node_id, p->nack_version, error, a, &group, err);
    if (rc == SX_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    return emit(c, b->replica_id, EVENT_CONFIG_REJECTED, p->node_id, group,
                json_pack("{s:I,s:s}", "version", (json_int_t)p->nack_version, "error",
                          utf8_prefix(a, error, EVENT_ERROR_MAX)),
                err);
}

/* The batch's stream ends, one statement for all of them, and proxy_disconnected for
 * each node this replica still held on that stream. */
static int write_disconnects(pg_conn *c, const batch *b, sx_arena *a, sx_err *err)
{
    size_t n = 0;
    node_stream_end *ends = sx_arena_alloc(a, (b->count ? b->count : 1) * sizeof(*ends));
    for (size_t i = 0; i < b->count; i++)
        if (b->items[i]->events & EV_DISCONNECT)
            ends[n++] = (node_stream_end){.node_id = b->items[i]->node_id,
                                          .stream_gen = b->items[i]->disc_gen,
                                          .reason = b->items[i]->disconnect_reason};
    int rc = node_repo_end_streams(c, b->replica_id, ends, n, a, err);
    if (rc || n == 0)
        return rc;
    sx_event *ev = sx_calloc(n, sizeof(*ev));
    size_t nev = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ends[i].changed)
            continue;
        const char *reason = ends[i].reason ? ends[i].reason : "other";
        ev[nev++] = (sx_event){
            .type = EVENT_PROXY_DISCONNECTED,
            .node_id = ends[i].node_id,
            .group = ends[i].group,
            .data = json_pack("{s:s}", "reason", utf8_prefix(a, reason, 256)),
        };
    }
    rc = emit_all(c, b->replica_id, ev, nev, err);
    sx_free(ev);
    return rc;
}

/* The batch's connects (identities), one statement for all of them, and
 * proxy_connected for each that was written (not one of a stream older than the node's). */
static int write_connects(pg_conn *c, const batch *b, sx_arena *a, sx_err *err)
{
    size_t n = 0;
    node_hello *h = sx_arena_alloc(a, (b->count ? b->count : 1) * sizeof(*h));
    for (size_t i = 0; i < b->count; i++) {
        pending *p = b->items[i];
        if (!(p->events & EV_CONNECT))
            continue;
        h[n++] = (node_hello){
            .node_id = p->node_id,
            .group = p->group && p->group[0] ? p->group : "default",
            .labels = json_is_object(p->labels) ? p->labels : NULL,
            .metadata = json_is_object(p->metadata) ? p->metadata : NULL,
            .client = utf8_prefix(a, p->user_agent ? p->user_agent : "", 255),
            .replica_id = b->replica_id,
            .locality = json_is_object(p->locality) ? p->locality : NULL,
            .protocol = p->protocol,
            .stream_gen = p->gen,
        };
    }
    if (n == 0)
        return 0;
    bool *applied = sx_arena_alloc(a, n * sizeof(*applied));
    int rc = node_repo_upsert_many(c, h, n, applied, err);
    if (rc)
        return rc;
    sx_event *ev = sx_calloc(n, sizeof(*ev));
    size_t nev = 0;
    for (size_t i = 0; i < n; i++) {
        if (!applied[i])
            continue;
        ev[nev++] = (sx_event){
            .type = EVENT_PROXY_CONNECTED,
            .node_id = h[i].node_id,
            .group = h[i].group,
            .data = json_pack("{s:s,s:s,s:s}", "protocol",
                              utf8_prefix(a, h[i].protocol ? h[i].protocol : "", 64), "client",
                              h[i].client, "replica", b->replica_id),
        };
    }
    rc = emit_all(c, b->replica_id, ev, nev, err);
    sx_free(ev);
    return rc;
}

static int write_batch_in(pg_conn *c, batch *b, sx_arena *a, sx_err *err)
{
    /* Connects, each one statement for the whole batch with one more for their events:
     * a storm of ten thousand reconnects is a handful of statements. */
    int rc = write_connects(c, b, a, err);
    if (rc)
        return rc;
    /* Versions sent and ACKs, each one statement for the whole batch (with one more for
     * the ACKs' events): a wave of ten thousand ACKs is a handful of statements. A node
     * this replica never saw connect (its connect was dropped) is unknown to the
     * database: its versions are skipped rather than fail the whole batch. */
    if ((rc = write_sents(c, b, a, err)) != 0 || (rc = write_acks(c, b, a, err)) != 0)
        return rc;
    const char **seen = sx_calloc(b->count ? b->count : 1, sizeof(*seen));
    size_t nseen = 0;
    for (size_t i = 0; i < b->count && rc == 0; i++) {
        pending *p = b->items[i];
        if (rc == 0 && (p->events & EV_NACK))
            rc = write_nack(c, b, p, a, err);
        if (rc == 0 && (p->events & EV_REPORT)) {
            node_report r = {
                p->report_ready,
                p->report_version ? utf8_prefix(a, p->report_version, CLIENT_TEXT_MAX) : NULL,
                p->report_message ? utf8_prefix(a, p->report_message, CLIENT_TEXT_MAX) : NULL,
                p->report_observed_at};
            if ((rc = node_repo_record_report(c, p->node_id, &r, err)) == SX_ENOTFOUND)
                rc = 0;
        }
        if (rc == 0 && (p->events & EV_SEEN) && !(p->events & (EV_CONNECT | EV_DISCONNECT)))
            seen[nseen++] = p->node_id;
    }
    if (rc == 0 && nseen)
        rc = node_repo_touch(c, seen, nseen, NULL, err);
    sx_free(seen);
    /* Stream ends last, after the batch's connects: a node's connect and the end of the
     * same stream can share a batch. */
    return rc ? rc : write_disconnects(c, b, a, err);
}

static int write_batch(pg_conn *c, void *arg, sx_err *err)
{
    sx_arena *a = sx_arena_create();
    int rc = write_batch_in(c, arg, a, err);
    sx_arena_destroy(a);
    return rc;
}

/* Puts a failed batch back under what arrived meanwhile (newer events win). */
static void requeue_locked(node_status_queue *q, pending *p)
{
    size_t b = bucket_of(p->node_id);
    for (pending *cur = q->table[b]; cur; cur = cur->next) {
        if (strcmp(cur->node_id, p->node_id) != 0)
            continue;
        /* Connects and disconnects by stream generation, the rest by arrival: what is
         * in cur arrived later. */
        if (p->events & EV_CONNECT)
            merge_connect(cur, p, p->gen, true);
        if (p->events & EV_DISCONNECT)
            merge_disconnect(cur, &p->disconnect_reason, p->disc_gen);
        unsigned older = p->events & ~cur->events & ~(unsigned)(EV_CONNECT | EV_DISCONNECT);
        cur->events |= older;
        if (older & EV_ACK)
            cur->ack_version = p->ack_version;
        if (older & EV_SENT)
            cur->sent_version = p->sent_version;
        if (older & EV_NACK) {
            cur->nack_version = p->nack_version;
            cur->nack_error = p->nack_error, p->nack_error = NULL;
        }
        if (older & EV_REPORT) {
            cur->report_ready = p->report_ready;
            cur->report_version = p->report_version, p->report_version = NULL;
            cur->report_message = p->report_message, p->report_message = NULL;
            cur->report_observed_at = p->report_observed_at, p->report_observed_at = NULL;
        }
        pending_free(p);
        return;
    }
    if (q->count >= q->max_pending * 2) {
        pending_free(p);
        if (q->m_dropped)
            sx_metric_inc(q->m_dropped, NULL);
        return;
    }
    p->next = q->table[b];
    q->table[b] = p;
    q->count++;
}

/* Takes everything pending, writes it, and requeues it on failure. */
static int flush_once(node_status_queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->count;
    pending **items = sx_calloc(n ? n : 1, sizeof(*items));
    size_t k = 0;
    for (size_t b = 0; b < BUCKETS; b++) {
        for (pending *p = q->table[b]; p;) {
            pending *next = p->next;
            p->next = NULL;
            items[k++] = p;
            p = next;
        }
        q->table[b] = NULL;
    }
    q->count = 0;
    q->urgent = false;
    pthread_mutex_unlock(&q->mu);

    int rc = 0;
    unsigned seen = 0; /* the events of the batch */
    for (size_t i = 0; i < k; i++)
        seen |= items[i]->events;
    if (k) {
        int64_t start = sx_monotonic_ms();
        batch b = {items, k, q->replica_id};
        sx_err err;
        sx_err_clear(&err);
        rc = pg_tx(q->pool, write_batch, &b, &err);
        if (q->m_flush_seconds)
            sx_metric_observe(q->m_flush_seconds, NULL,
                              (double)(sx_monotonic_ms() - start) / 1000.0);
        if (rc) {
            if (q->m_flush_errors)
                sx_metric_inc(q->m_flush_errors, NULL);
            sx_log_err(SX_LOG_WARN, "nodes", &err);
            pthread_mutex_lock(&q->mu);
            for (size_t i = 0; i < k; i++)
                requeue_locked(q, items[i]);
            pthread_mutex_unlock(&q->mu);
        } else {
            for (size_t i = 0; i < k; i++)
                pending_free(items[i]);
        }
    }
    sx_free(items);
    pthread_mutex_lock(&q->mu);
    if (q->m_depth)
        sx_metric_set(q->m_depth, NULL, (double)q->count);
    void (*hook)(void *) = q->on_flush;
    void *hook_ctx = q->on_flush_ctx;
    pthread_mutex_unlock(&q->mu);
    if (rc == 0 && hook && (seen & (EV_CONNECT | EV_ACK | EV_NACK | EV_DISCONNECT)))
        hook(hook_ctx);
    return rc;
}

static void *flusher(void *arg)
{
    node_status_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->stopping) {
        uint64_t asked = q->flush_requests;
        if (!q->urgent && asked == q->flushes_done) {
            struct timespec ts = sx_deadline_in(q->interval_ms);
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
            if (q->stopping)
                break;
            asked = q->flush_requests;
        }
        pthread_mutex_unlock(&q->mu);
        int rc = flush_once(q);
        pthread_mutex_lock(&q->mu);
        q->last_flush_rc = rc;
        if (asked > q->flushes_done)
            q->flushes_done = asked;
        pthread_cond_broadcast(&q->flushed);
        if (rc && !q->stopping) {
            /* The database is failing: wait a full interval before trying again. */
            q->urgent = false;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int node_status_create(const node_status_options *opt, node_status_queue **out, sx_err *err)
{
    *out = NULL;
    if (opt->pool == NULL || opt->replica_id == NULL || opt->replica_id[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "node status needs a database pool and a replica id");
    node_status_queue *q = sx_calloc(1, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    sx_cond_init_monotonic(&q->cv);
    pthread_cond_init(&q->flushed, NULL);
    q->pool = opt->pool;
    q->replica_id = sx_strdup(opt->replica_id);
    q->interval_ms = opt->flush_interval_ms > 0 ? opt->flush_interval_ms : 1000;
    q->max_pending = opt->max_pending > 0 ? (size_t)opt->max_pending : 10000;
    if (opt->metrics) {
        q->m_depth = sx_metrics_gauge(opt->metrics, "sextant_node_status_queue_depth",
                                      "Nodes with node status updates not yet written", NULL);
        q->m_enqueued = sx_metrics_counter(opt->metrics, "sextant_node_status_enqueued_total",
                                           "Node status events accepted", NULL);
        q->m_dropped =
            sx_metrics_counter(opt->metrics, "sextant_node_status_dropped_total",
                               "Node status events dropped because the queue was full", NULL);
        static const double bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
        q->m_flush_seconds =
            sx_metrics_histogram(opt->metrics, "sextant_node_status_flush_seconds",
                                 "Time to write one batch of node status", NULL, bounds, 8);
        q->m_flush_errors =
            sx_metrics_counter(opt->metrics, "sextant_node_status_flush_errors_total",
                               "Node status batches that failed to write", NULL);
    }
    if (pthread_create(&q->thread, NULL, flusher, q) != 0) {
        sx_free(q->replica_id);
        sx_free(q);
        return sx_err_set(err, SX_EINTERNAL, "could not start the node status thread");
    }
    *out = q;
    return 0;
}

void node_status_on_flush(node_status_queue *q, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&q->mu);
    q->on_flush = fn;
    q->on_flush_ctx = ctx;
    pthread_mutex_unlock(&q->mu);
}

int node_status_flush(node_status_queue *q, sx_err *err)
{
    pthread_mutex_lock(&q->mu);
    uint64_t ticket = ++q->flush_requests;
    pthread_cond_signal(&q->cv);
    while (q->flushes_done < ticket && !q->stopping)
        pthread_cond_wait(&q->flushed, &q->mu);
    int rc = q->last_flush_rc;
    pthread_mutex_unlock(&q->mu);
    if (rc)
        return sx_err_set(err, rc, "node status could not be written");
    return 0;
}

void node_status_destroy(node_status_queue *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_broadcast(&q->cv);
    pthread_cond_broadcast(&q->flushed);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    /* One last best-effort flush of what arrived before the streams stopped. */
    if (flush_once(q) != 0)
        sx_log(SX_LOG_WARN, "nodes", "node status pending at shutdown could not be written");
    for (size_t b = 0; b < BUCKETS; b++) {
        for (pending *p = q->table[b]; p;) {
            pending *next = p->next;
            pending_free(p);
            p = next;
        }
    }
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    pthread_cond_destroy(&q->flushed);
    sx_free(q->replica_id);
    sx_free(q);
}
