/*
 * events_feed.c — one reader of the live events per replica, fanned out to the open
 * event streams (see events_feed.h).
 *
 * Design: the feed keeps one position, head, in the database's stream order
 * (storage/repo_events.h): everything up to it has been handed to the live
 * subscriptions. A round of the feed thread reads the events settled after head (a
 * page at a time), formats each one once as a refcounted frame ("id: 7\nevent:
 * config_applied\ndata: {...}\n\n") and queues a reference on every live subscription
 * whose filter and permissions take it. Each subscription also keeps its own cursor,
 * the last position it was given or passed over, so a subscription that resumed after
 * an event the feed has not reached yet (a client coming from a replica that is ahead)
 * skips what it already has. A subscription with a Last-Event-ID first locates that
 * event (event_repo_position), then reads pages up to head, inclusive, and turns live
 * when a page comes back short; head moves only on the feed thread, between those
 * steps, so nothing falls between the catch-up and the live stream.
 *
 * The thread sleeps on a condition variable until a NOTIFY, a new subscription, room
 * in a starved one, the next keep-alive deadline, or a retry
 * (database error, or events committed but not settled yet) is due. Queues are bounded
 * (QUEUE_MAX_BYTES): a subscription that would exceed it is ended after what it holds,
 * and catch-up pages are read only while a subscription's queue is below CATCHUP_ROOM,
 * the reader poking the feed when it drains.
 *
 * Locks: feed->mu guards the subscription list, positions, reference counts and the
 * thread's flags; each subscription's mu guards its queue. Order: feed->mu, then a
 * subscription's mu; the wake function is called with feed->mu held and no queue lock.
 * The database is never queried with a lock held.
 */
#include "server/events_feed.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/arena.h"
#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/list.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/locked.h"
#include "server/events.h"
#include "storage/repo_events.h"

#define DEFAULT_KEEPALIVE_MS 15000
#define DEFAULT_MAX_STREAMS  1000
#define PAGE                 200
#define QUEUE_MAX_BYTES      (1u << 20)   /* a subscription further behind is ended */
#define CATCHUP_ROOM         (256u << 10) /* catch-up pages are read below this */
#define PENDING_MIN_MS       20           /* first re-read while events are not settled yet */
#define PENDING_MAX_MS       1000
#define RETRY_MIN_MS         100 /* first retry after a database error */
#define RETRY_MAX_MS         5000

/* A formatted piece of the stream, shared by every subscription that queues it. */
typedef struct frame {
    atomic_int refs;
    bool event; /* counts in sextant_events_sent_total once written */
    size_t len;
    char text[];
} frame;

struct events_sub {
    events_feed *feed;
    /* Guarded by feed->mu. */
    sx_link link; /* in feed->subs while linked */
    bool linked;
    int refs;         /* the owner's, plus the feed thread's while it reads for it */
    bool catching_up; /* reading from the database before joining the live stream */
    bool located;     /* cursor is known (a resuming subscription locates its id first) */
    long long resume_id;
    long long min_id; /* while catching up after a pruned id: only greater ids */
    event_pos cursor; /* the last position given or passed over */
    int64_t last_frame_ms;
    /* Fixed at open. */
    char *user; /* who holds it (events_sub_options.user), NULL when not said */
    unsigned types;
    bool proxies, deployments;
    /* Guarded by mu. */
    pthread_mutex_t mu;
    frame **q; /* ring of queued frames */
    size_t qcap, qhead, qlen;
    size_t qoff;   /* bytes of q[qhead] already read */
    size_t qbytes; /* bytes of the queued frames */
    bool ended;    /* no frame is queued any more; read returns -1 once drained */
    bool starved;  /* catch-up waits for the queue to drain below CATCHUP_ROOM */
    void (*wake)(void *);
    void *wake_ctx;
};

struct events_feed {
    pg_pool *pool; /* borrowed */
    pg_link *link; /* borrowed, NULL allowed: retry bounds; a reconnection retries now */
    int retry_min_ms, retry_max_ms;
    int64_t keepalive_ms;
    int64_t check_ms;      /* a round at least this often while streams are open; 0: never */
    int64_t last_round_ms; /* (mu) when the last round ended */
    size_t max_streams;
    size_t max_per_user; /* open subscriptions of one user at most; 0: no bound */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    sup_thread thread; /* runs feed_main */
    bool stopping;     /* the thread must exit */
    bool closed;       /* no new subscriptions; the open ones were ended */
    bool poke;         /* run a round now */
    bool head_known;
    event_pos head;
    uint64_t opens;   /* subscriptions ever opened (see poll) */
    int64_t retry_at; /* monotonic ms of a retry round; 0 = none */
    int retry_ms;     /* back-off after database errors */
    int pending_ms;   /* back-off while events are not settled */
    bool failing;     /* an error was logged; the next success is logged too */
    sx_list subs;     /* the open subscriptions (events_sub.link) */
    size_t nsubs;
    frame *hello, *keepalive; /* shared comment frames */
    sx_metric *m_streams, *m_sent;
};

/* The subscription of a link of feed->subs; NULL for NULL (the end of the list). */
static events_sub *sub_of(sx_link *l)
{
    return l ? SX_CONTAINER(l, events_sub, link) : NULL;
}

/* ------------------------------------------------------------------ frames */

static frame *frame_new(const char *text, size_t len, bool event)
{
    frame *fr = sx_malloc(sizeof(*fr) + len);
    atomic_init(&fr->refs, 1);
    fr->event = event;
    fr->len = len;
    memcpy(fr->text, text, len);
    return fr;
}

static frame *frame_ref(frame *fr)
{
    atomic_fetch_add(&fr->refs, 1);
    return fr;
}

static void frame_unref(frame *fr)
{
    if (fr && atomic_fetch_sub(&fr->refs, 1) == 1)
        sx_free(fr);
}

/* The server-sent event of e: its id, its type as the event name, and one line of JSON
 * with id, type, at, deployment_id, node_id, group and the data fields (which cannot
 * replace those). */
static frame *format_event(const event_record *e)
{
    json_t *o = json_pack("{s:I,s:s,s:s?,s:s?,s:s?,s:s?}", "id", (json_int_t)e->id, "type", e->type,
                          "at", e->at, "deployment_id", e->deployment_id, "node_id", e->node_id,
                          "group", e->group);
    if (o == NULL)
        return NULL;
    const char *k;
    json_t *v;
    json_object_foreach(e->data, k, v)
    {
        if (json_object_get(o, k) == NULL)
            json_object_set(o, k, v);
    }
    char *json = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (json == NULL)
        return NULL;
    sx_buf b = {0};
    sx_buf_printf(&b, "id: %lld\nevent: %s\ndata: %s\n\n", e->id, e->type, json);
    free(json);
    frame *fr = frame_new(b.data, b.len, true);
    sx_buf_free(&b);
    return fr;
}

/* ------------------------------------------------------------------ positions */

static int pos_cmp(event_pos a, event_pos b)
{
    if (a.txid != b.txid)
        return a.txid < b.txid ? -1 : 1;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

static event_pos pos_max(event_pos a, event_pos b)
{
    return pos_cmp(a, b) >= 0 ? a : b;
}

/* Whether s's filter and permissions take an event of this type. */
static bool sub_wants(const events_sub *s, const char *type)
{
    int i = events_type_index(type);
    if (i < 0 || (s->types && !(s->types & (1u << i))))
        return false;
    const char *res = events_type_resource(type);
    return strcmp(res, "deployments") == 0 ? s->deployments : s->proxies;
}

/* ------------------------------------------------------------------ subscriptions */

static void sub_free(events_sub *s)
{
    for (size_t i = 0; i < s->qlen; i++)
        frame_unref(s->q[(s->qhead + i) % s->qcap]);
    sx_free(s->q);
    sx_free(s->user);
    pthread_mutex_destroy(&s->mu);
    sx_free(s);
}

/* Drops a reference taken under feed->mu; returns true when s must be freed (after the
 * lock is released). */
static bool sub_unref_locked(events_sub *s)
{
    return --s->refs == 0;
}

/* Queues fr (a new reference is taken) on s and wakes its reader; ends s instead when
 * its queue is full. Call with the feed's mu held. */
static void deliver_locked(events_sub *s, frame *fr, int64_t now)
{
    s->last_frame_ms = now; /* also when ended: no keep-alive is due for it */
    pthread_mutex_lock(&s->mu);
    if (s->ended) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (s->qlen > 0 && s->qbytes + fr->len > QUEUE_MAX_BYTES) {
        s->ended = true;
        sx_log_fields(SX_LOG_INFO, "events",
                      json_pack("{s:I}", "queued_bytes", (json_int_t)s->qbytes),
                      "event stream closed: the client is not reading fast enough (it resumes "
                      "with Last-Event-ID)");
    } else {
        if (s->qlen == s->qcap) {
            size_t cap = s->qcap ? s->qcap * 2 : 16;
            frame **q = sx_calloc(cap, sizeof(*q));
            for (size_t i = 0; i < s->qlen; i++)
                q[i] = s->q[(s->qhead + i) % s->qcap];
            sx_free(s->q);
            s->q = q;
            s->qcap = cap;
            s->qhead = 0;
        }
        s->q[(s->qhead + s->qlen) % s->qcap] = frame_ref(fr);
        s->qlen++;
        s->qbytes += fr->len;
    }
    void (*wake)(void *) = s->wake;
    void *ctx = s->wake_ctx;
    pthread_mutex_unlock(&s->mu);
    if (wake)
        wake(ctx);
}

int events_sub_open(events_feed *f, const events_sub_options *o, events_sub **out, sx_err *err)
{
    *out = NULL;
    pthread_mutex_lock(&f->mu);
    if (f->closed) {
        pthread_mutex_unlock(&f->mu);
        return sx_err_set(err, SX_EUNAVAILABLE, "the server is stopping");
    }
    if (!f->head_known) {
        /* Without the feed's position a new subscription would have no place to start
         * from that the feed's first position cannot skip past. */
        pthread_mutex_unlock(&f->mu);
        return sx_err_set(err, SX_EUNAVAILABLE, "live events are not available yet");
    }
    if (f->nsubs >= f->max_streams) {
        size_t max = f->max_streams;
        pthread_mutex_unlock(&f->mu);
        sx_err_set(err, SX_EUNAVAILABLE, "too many open event streams");
        sx_err_detail(err, "This replica serves at most %zu event streams (events.max_streams).",
                      max);
        return SX_EUNAVAILABLE;
    }
    if (o->user && f->max_per_user) {
        size_t mine = 0;
        for (events_sub *o2 = sub_of(f->subs.head); o2; o2 = sub_of(o2->link.next))
            mine += o2->user && strcmp(o2->user, o->user) == 0;
        if (mine >= f->max_per_user) {
            size_t max = f->max_per_user;
            pthread_mutex_unlock(&f->mu);
            sx_err_set(err, SX_ERATELIMIT, "too many open event streams for this user");
            sx_err_detail(err,
                          "A user holds at most %zu event streams on a replica "
                          "(events.max_streams_per_user).",
                          max);
            sx_err_hint(err, "Close a stream, or retry once one has ended.");
            return SX_ERATELIMIT;
        }
    }
    events_sub *s = sx_calloc(1, sizeof(*s));
    s->user = o->user ? sx_strdup(o->user) : NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->feed = f;
    s->refs = 1;
    s->types = o->types;
    s->proxies = o->proxies;
    s->deployments = o->deployments;
    s->catching_up = o->resume;
    s->located = !o->resume;
    s->resume_id = o->last_id;
    s->cursor = f->head;
    s->linked = true;
    sx_list_push_front(&f->subs, &s->link);
    f->nsubs++;
    f->opens++;
    deliver_locked(s, f->hello, sx_monotonic_ms());
    /* A round now: a resuming subscription catches up, and a new one gets what settled
     * while nobody was subscribed but was not announced (the NOTIFY of an event that
     * waited for an older transaction came before it settled). */
    f->poke = true;
    pthread_cond_signal(&f->cv);
    if (f->m_streams)
        sx_metric_set(f->m_streams, NULL, (double)f->nsubs);
    pthread_mutex_unlock(&f->mu);
    *out = s;
    return 0;
}

void events_sub_set_wake(events_sub *s, void (*wake)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->wake = wake;
    s->wake_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

long events_sub_read(events_sub *s, char *buf, size_t max)
{
    events_feed *f = s->feed;
    size_t n = 0;
    int sent = 0;
    pthread_mutex_lock(&s->mu);
    while (n < max && s->qlen > 0) {
        frame *fr = s->q[s->qhead];
        size_t take = fr->len - s->qoff;
        if (take > max - n)
            take = max - n;
        memcpy(buf + n, fr->text + s->qoff, take);
        n += take;
        s->qoff += take;
        if (s->qoff == fr->len) {
            s->q[s->qhead] = NULL;
            s->qhead = (s->qhead + 1) % s->qcap;
            s->qlen--;
            s->qoff = 0;
            s->qbytes -= fr->len;
            sent += fr->event;
            frame_unref(fr);
        }
    }
    bool ended = n == 0 && s->ended;
    bool poke = s->starved && s->qbytes < CATCHUP_ROOM;
    if (poke)
        s->starved = false;
    pthread_mutex_unlock(&s->mu);
    if (sent && f->m_sent)
        sx_metric_add(f->m_sent, NULL, sent);
    if (poke) {
        pthread_mutex_lock(&f->mu);
        f->poke = true;
        pthread_cond_signal(&f->cv);
        pthread_mutex_unlock(&f->mu);
    }
    return ended ? -1 : (long)n;
}

void events_sub_finish(events_sub *s)
{
    pthread_mutex_lock(&s->mu);
    s->ended = true;
    size_t keep = s->qoff > 0 ? 1 : 0; /* the frame being written is finished */
    while (s->qlen > keep) {
        size_t last = (s->qhead + s->qlen - 1) % s->qcap;
        s->qbytes -= s->q[last]->len;
        frame_unref(s->q[last]);
        s->q[last] = NULL;
        s->qlen--;
    }
    pthread_mutex_unlock(&s->mu);
}

void events_sub_close(events_sub *s)
{
    if (s == NULL)
        return;
    events_feed *f = s->feed;
    pthread_mutex_lock(&f->mu);
    if (s->linked) {
        sx_list_remove(&f->subs, &s->link);
        s->linked = false;
        f->nsubs--;
        if (f->m_streams)
            sx_metric_set(f->m_streams, NULL, (double)f->nsubs);
    }
    bool last = sub_unref_locked(s);
    pthread_mutex_unlock(&f->mu);
    if (last)
        sub_free(s);
}

size_t events_feed_streams(events_feed *f)
{
    return sx_locked_size(&f->mu, &f->nsubs);
}

/* ------------------------------------------------------------------ the feed thread */

/* Reads what settled after head and hands it to the live subscriptions. *pending is set
 * when events are committed but not settled yet. */
static int poll_new(events_feed *f, pg_conn *c, bool *pending, sx_err *err)
{
    *pending = false;
    pthread_mutex_lock(&f->mu);
    bool known = f->head_known, nobody = f->nsubs == 0;
    uint64_t opens = f->opens;
    event_pos from = f->head;
    pthread_mutex_unlock(&f->mu);

    if (!known || nobody) {
        /* Nobody to hand events to (or no position yet): jump to the database's head,
         * unless a subscription opened meanwhile (it starts at the old head and must
         * get what lies between). */
        event_pos h;
        int rc = event_repo_head(c, &h, err);
        if (rc)
            return rc;
        pthread_mutex_lock(&f->mu);
        /* No subscription exists while the head is unknown (events_sub_open). */
        bool jump = !f->head_known || (f->nsubs == 0 && f->opens == opens);
        if (jump) {
            f->head = pos_max(f->head, h);
            f->head_known = true;
            for (events_sub *s = sub_of(f->subs.head); s; s = sub_of(s->link.next))
                if (!s->catching_up)
                    s->cursor = pos_max(s->cursor, f->head);
        }
        from = f->head;
        nobody = f->nsubs == 0;
        pthread_mutex_unlock(&f->mu);
        if (jump || nobody)
            return 0;
    }

    for (;;) {
        event_list list;
        sx_arena *a = sx_arena_create(); /* one page at a time, however long the burst */
        int rc = event_repo_list_after(c, &from, 0, NULL, PAGE, a, &list, err);
        if (rc) {
            sx_arena_destroy(a);
            return rc;
        }
        frame **frames = list.count ? sx_calloc(list.count, sizeof(*frames)) : NULL;
        for (size_t i = 0; i < list.count; i++)
            frames[i] = format_event(&list.items[i]);
        int64_t now = sx_monotonic_ms();
        pthread_mutex_lock(&f->mu);
        for (size_t i = 0; i < list.count; i++) {
            const event_record *e = &list.items[i];
            for (events_sub *s = sub_of(f->subs.head); s; s = sub_of(s->link.next)) {
                if (s->catching_up || pos_cmp(e->pos, s->cursor) <= 0)
                    continue;
                s->cursor = e->pos;
                if (frames[i] && sub_wants(s, e->type))
                    deliver_locked(s, frames[i], now);
            }
            f->head = e->pos;
        }
        from = f->head;
        pthread_mutex_unlock(&f->mu);
        for (size_t i = 0; i < list.count; i++)
            frame_unref(frames[i]);
        sx_free(frames);
        sx_arena_destroy(a);
        if (!list.more) {
            *pending = list.pending;
            return 0;
        }
    }
}

/* One page of catch-up for s (a reference is held): locate its id first, then read up
 * to head (which only this thread moves). */
static int catch_up_one(events_feed *f, events_sub *s, pg_conn *c, sx_arena *a, sx_err *err)
{
    pthread_mutex_lock(&f->mu);
    bool located = s->located;
    long long resume_id = s->resume_id, min_id = s->min_id;
    event_pos cursor = s->cursor, head = f->head;
    pthread_mutex_unlock(&f->mu);

    if (!located) {
        bool found;
        int rc = event_repo_position(c, resume_id, &cursor, &found, err);
        if (rc)
            return rc;
        min_id = found ? 0 : resume_id;
        pthread_mutex_lock(&f->mu);
        s->located = true;
        s->cursor = cursor;
        s->min_id = min_id;
        pthread_mutex_unlock(&f->mu);
    }
    event_list list = {0};
    if (pos_cmp(cursor, head) < 0) {
        int rc = event_repo_list_after(c, &cursor, min_id, &head, PAGE, a, &list, err);
        if (rc)
            return rc;
    }
    frame **frames = list.count ? sx_calloc(list.count, sizeof(*frames)) : NULL;
    for (size_t i = 0; i < list.count; i++)
        if (sub_wants(s, list.items[i].type))
            frames[i] = format_event(&list.items[i]);
    int64_t now = sx_monotonic_ms();
    pthread_mutex_lock(&f->mu);
    if (s->linked) {
        for (size_t i = 0; i < list.count; i++) {
            s->cursor = list.items[i].pos;
            if (frames[i])
                deliver_locked(s, frames[i], now);
        }
        if (list.more) {
            f->poke = true; /* the next page in the next round */
        } else {
            s->catching_up = false;
            s->min_id = 0;
            s->cursor = pos_max(s->cursor, f->head);
        }
    }
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; i < list.count; i++)
        frame_unref(frames[i]);
    sx_free(frames);
    return 0;
}

/* A page for every catching-up subscription with room in its queue. */
static int catch_up(events_feed *f, pg_conn *c, sx_err *err)
{
    pthread_mutex_lock(&f->mu);
    if (!f->head_known) {
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    size_t n = 0;
    events_sub **work = f->nsubs ? sx_calloc(f->nsubs, sizeof(*work)) : NULL;
    for (events_sub *s = sub_of(f->subs.head); s; s = sub_of(s->link.next)) {
        if (!s->catching_up)
            continue;
        pthread_mutex_lock(&s->mu);
        bool room = s->qbytes < CATCHUP_ROOM && !s->ended;
        s->starved = !room && !s->ended;
        pthread_mutex_unlock(&s->mu);
        if (room) {
            s->refs++;
            work[n++] = s;
        }
    }
    pthread_mutex_unlock(&f->mu);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) {
            sx_arena *a = sx_arena_create();
            rc = catch_up_one(f, work[i], c, a, err);
            sx_arena_destroy(a);
        }
        pthread_mutex_lock(&f->mu);
        bool last = sub_unref_locked(work[i]);
        pthread_mutex_unlock(&f->mu);
        if (last)
            sub_free(work[i]);
    }
    sx_free(work);
    return rc;
}

/* One round: new events for the live subscriptions, a page for the catching-up ones,
 * and the time of the next retry. */
static void run_round(events_feed *f)
{
    sx_err err;
    sx_err_clear(&err);
    pg_conn *c = NULL;
    bool pending = false;
    int rc = pg_acquire(f->pool, &c, &err);
    if (rc == 0 && (rc = poll_new(f, c, &pending, &err)) == 0)
        rc = catch_up(f, c, &err);
    pg_release(f->pool, c);

    int64_t now = sx_monotonic_ms();
    pthread_mutex_lock(&f->mu);
    f->last_round_ms = now;
    if (rc) {
        f->retry_ms = sx_backoff_next(f->retry_ms, f->retry_min_ms, f->retry_max_ms);
        f->retry_at = now + f->retry_ms;
    } else {
        f->retry_ms = 0;
        if (pending) {
            f->pending_ms = sx_backoff_next(f->pending_ms, PENDING_MIN_MS, PENDING_MAX_MS);
            f->retry_at = now + f->pending_ms;
        } else {
            f->pending_ms = 0;
        }
    }
    bool was_failing = f->failing;
    f->failing = rc != 0;
    pthread_mutex_unlock(&f->mu);
    if (rc && !was_failing)
        sx_log_err(SX_LOG_WARN, "events", &err);
    else if (!rc && was_failing)
        SX_INFO("events", "reading live events again");
}

/* Queues a keep-alive on every subscription idle for the interval; returns when the
 * next one is due (INT64_MAX when there is no subscription). Call with f->mu held. */
static int64_t keepalives_locked(events_feed *f, int64_t now)
{
    int64_t next = INT64_MAX;
    for (events_sub *s = sub_of(f->subs.head); s; s = sub_of(s->link.next)) {
        if (now - s->last_frame_ms >= f->keepalive_ms)
            deliver_locked(s, f->keepalive, now);
        if (s->last_frame_ms + f->keepalive_ms < next)
            next = s->last_frame_ms + f->keepalive_ms;
    }
    return next;
}

static void *feed_main(void *arg)
{
    events_feed *f = arg;
    pthread_mutex_lock(&f->mu);
    while (!f->stopping) {
        int64_t now = sx_monotonic_ms();
        int64_t until = keepalives_locked(f, now);
        bool retry = f->retry_at && now >= f->retry_at;
        /* A NOTIFY lost in transit must not hold events back for good: while streams
         * are open, a round runs at least every check interval. */
        int64_t check_at =
            f->check_ms > 0 && f->nsubs > 0 ? f->last_round_ms + f->check_ms : INT64_MAX;
        if (now >= check_at)
            retry = true;
        else if (check_at < until)
            until = check_at;
        if (!f->poke && !retry) {
            if (f->retry_at && f->retry_at < until)
                until = f->retry_at;
            if (until == INT64_MAX) {
                pthread_cond_wait(&f->cv, &f->mu);
            } else {
                struct timespec ts = sx_deadline_in(until - now);
                pthread_cond_timedwait(&f->cv, &f->mu, &ts);
            }
            continue;
        }
        f->poke = false;
        f->retry_at = 0;
        pthread_mutex_unlock(&f->mu);
        run_round(f);
        pthread_mutex_lock(&f->mu);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ------------------------------------------------------------------ lifecycle */

static void feed_wake(void *ctx);
static bool feed_ready(void *ctx);

/* The database link's watcher: a connection succeeded again; a read that failed is
 * retried now rather than when its back-off runs out. */
static void on_link_up(void *ctx)
{
    events_feed *f = ctx;
    pthread_mutex_lock(&f->mu);
    if (f->failing)
        f->poke = true;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int events_feed_create(const events_feed_options *opt, events_feed **out, sx_err *err)
{
    *out = NULL;
    if (opt->pool == NULL)
        return sx_err_set(err, SX_EINVAL, "the events feed needs a database pool");
    events_feed *f = sx_calloc(1, sizeof(*f));
    f->pool = opt->pool;
    f->link = opt->link;
    f->retry_min_ms = f->link ? pg_link_backoff_min(f->link) : RETRY_MIN_MS;
    f->retry_max_ms = f->link ? pg_link_backoff_max(f->link) : RETRY_MAX_MS;
    if (f->link && pg_link_watch(f->link, on_link_up, f) != 0)
        SX_WARN("events", "too many watchers of the database link: a failed read waits out "
                          "its back-off");
    f->keepalive_ms = opt->keepalive_ms > 0 ? opt->keepalive_ms : DEFAULT_KEEPALIVE_MS;
    f->check_ms = opt->check_interval_ms > 0 ? opt->check_interval_ms : 0;
    f->last_round_ms = sx_monotonic_ms();
    f->max_streams = opt->max_streams > 0 ? (size_t)opt->max_streams : DEFAULT_MAX_STREAMS;
    f->max_per_user = opt->max_streams_per_user > 0 ? (size_t)opt->max_streams_per_user : 0;
    pthread_mutex_init(&f->mu, NULL);
    sx_cond_init_monotonic(&f->cv);
    static const char hello[] = ": connected\n\n", keepalive[] = ": keep-alive\n\n";
    f->hello = frame_new(hello, sizeof(hello) - 1, false);
    f->keepalive = frame_new(keepalive, sizeof(keepalive) - 1, false);
    f->poke = true; /* the first round finds the head */
    f->thread = (sup_thread){
        .run = feed_main, .wake = feed_wake, .ready = feed_ready, .ctx = f, .what = "the events"};
    if (opt->metrics) {
        f->m_streams = sx_metrics_gauge(opt->metrics, "sextant_events_streams",
                                        "Open GET /api/v1/events streams on this replica", NULL);
        f->m_sent = sx_metrics_counter(opt->metrics, "sextant_events_sent_total",
                                       "Live events written to event streams", NULL);
    }
    *out = f;
    return 0;
}

void events_feed_destroy(events_feed *f)
{
    if (f == NULL)
        return;
    if (f->link)
        pg_link_unwatch(f->link, on_link_up, f);
    if (f->nsubs)
        SX_ERROR("events", "bug: %zu event streams still open when the feed is freed", f->nsubs);
    frame_unref(f->hello);
    frame_unref(f->keepalive);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    sx_free(f);
}

void events_feed_on_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    (void)payload;
    events_feed *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->poke = true;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void events_feed_on_resync(void *ctx)
{
    events_feed_on_notify(ctx, EVENTS_NOTIFY_CHANNEL, "");
}

/* Makes feed_main return: ends every subscription and refuses new ones. */
static void feed_wake(void *ctx)
{
    events_feed *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    f->closed = true;
    for (events_sub *s = sub_of(f->subs.head); s; s = sub_of(s->link.next)) {
        pthread_mutex_lock(&s->mu);
        s->ended = true;
        void (*wake)(void *) = s->wake;
        void *wctx = s->wake_ctx;
        pthread_mutex_unlock(&s->mu);
        if (wake)
            wake(wctx);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Ready once the feed knows its position (it stays known), so that subscriptions can
 * open. */
static bool feed_ready(void *ctx)
{
    events_feed *f = ctx;
    return sx_locked_bool(&f->mu, &f->head_known);
}

sup_thread *events_feed_component(events_feed *f)
{
    return &f->thread;
}
