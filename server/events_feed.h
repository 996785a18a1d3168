/*
 * events_feed.h — this replica's reader of the live events (server/events.h) and the
 * subscriptions GET /api/v1/events streams them to.
 *
 * One feed per replica: a thread that, when the events channel is NOTIFYed, reads the
 * newly settled events once (storage/repo_events.h: one query per wake-up, whatever
 * the number of open streams), formats each as a server-sent event once, and queues
 * that one shared frame on every subscription allowed to see it. A subscription
 * resuming after an event id (Last-Event-ID) first catches up from the database, page
 * by page, then joins the shared stream at the exact position where its catch-up ended,
 * so it sees every event after the id once, in stream order. A subscription without
 * one starts at the feed's position: it sees what settles after it opened (and what
 * the feed had not handed out yet when it opened), nothing older. The same thread
 * queues a keep-alive comment on every subscription idle for the keep-alive interval.
 * It reads the database when woken by a NOTIFY or a new subscription, to retry
 * (shortly, while events are committed but not settled yet, or after an error), and,
 * while streams are open, at least every check interval (a NOTIFY lost in transit);
 * it never polls the database while no stream is open.
 *
 * Subscriptions are read with events_sub_read, which never blocks: it returns 0 when
 * nothing is queued, and the subscription's wake function is called once there is.
 * A subscription that falls more than a bounded amount behind (a client that does not
 * read) is ended after what is queued; the client resumes with Last-Event-ID and
 * catches up from the database, so nothing is lost.
 *
 * Thread safety: everything may be called from any thread; the wake function is called
 * on the feed thread (or the stopping thread) with the feed's lock held, so it must only
 * signal (http_stream_wake), never call back into the feed.
 */
#ifndef SX_SERVER_EVENTS_FEED_H
#define SX_SERVER_EVENTS_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/supervisor.h"
#include "storage/pg_pool.h"

typedef struct events_feed events_feed;
typedef struct events_sub events_sub;

typedef struct events_feed_options {
    pg_pool *pool;         /* borrowed; required */
    pg_link *link;         /* borrowed, NULL allowed: the retry back-off's bounds, and a
                            * connection made again retries a failed read at once */
    int keepalive_ms;      /* comment on a subscription idle this long; 0 = 15000 */
    int check_interval_ms; /* while streams are open, read at least this often, so a
                            * NOTIFY lost in transit delays events by this at most;
                            * 0 = only when NOTIFYed (snapshots.check_interval) */
    int max_streams;       /* open subscriptions at most; 0 = 1000 */
    sx_metrics *metrics;   /* NULL allowed: sextant_events_streams, sextant_events_sent_total */

    int max_streams_per_user; /* open subscriptions of one user at most; 0 = no bound */
} events_feed_options;

/* Creates a stopped feed. SX_EINVAL without a pool. *out freed by events_feed_destroy. */
int events_feed_create(const events_feed_options *opt, events_feed **out, sx_err *err) SX_MUSTCHECK;

/* Frees the feed; it must be stopped and every subscription closed (they are, once the
 * HTTP server has stopped). NULL allowed. */
void events_feed_destroy(events_feed *f);

/* The component "events", for sup_register with sup_thread_ops: start runs the feed
 * thread; ready is true once the thread has read the feed's position from the database
 * (subscriptions can open from then on, and it stays true); stop ends every
 * subscription (each stream ends once its queue is written), refuses new ones and
 * joins the thread. */
sup_thread *events_feed_component(events_feed *f);

/* pg_listener callbacks for EVENTS_NOTIFY_CHANNEL (ctx: the feed): events committed;
 * the listener reconnected and may have missed some. Both only wake the thread. */
void events_feed_on_notify(void *ctx, const char *channel, const char *payload);
void events_feed_on_resync(void *ctx);

/* What a subscription streams. */
typedef struct events_sub_options {
    unsigned types;   /* bit i set: events_type_name(i) wanted; 0 = every type */
    bool proxies;     /* may see the "proxies" events (events_type_resource) */
    bool deployments; /* may see the "deployments" events */
    bool resume;      /* start after the event last_id instead of at the feed's position */
    long long last_id;
    const char *user; /* who opens it (copied), for max_streams_per_user; NULL: not counted */
} events_sub_options;

/* Opens a subscription (it starts with a ": connected" comment). SX_EUNAVAILABLE when
 * max_streams are open, the feed is stopped, or it has not read its position yet (not
 * ready); SX_ERATELIMIT when o->user holds max_streams_per_user already. *out is closed
 * with events_sub_close. */
int events_sub_open(events_feed *f, const events_sub_options *o, events_sub **out,
                    sx_err *err) SX_MUSTCHECK;

/* Sets the function called, with ctx, when the subscription has something to read or
 * has ended after being empty. Until it is set nothing is called. */
void events_sub_set_wake(events_sub *s, void (*wake)(void *ctx), void *ctx);

/* Copies up to max bytes of the stream into buf and returns how many; 0 when nothing
 * is queued (the wake function is called when there is); -1 when the stream has ended
 * (feed stopped, or the subscription fell too far behind). Never blocks. */
long events_sub_read(events_sub *s, char *buf, size_t max);

/* Ends the stream at the next frame boundary: the frame being read is finished, the
 * frames queued behind it are dropped (a client resuming with Last-Event-ID gets them
 * again), and read returns -1 after that. Any thread. */
void events_sub_finish(events_sub *s);

/* Closes the subscription and frees it; its wake function is not called once this has
 * returned. NULL allowed. */
void events_sub_close(events_sub *s);

/* Open subscriptions (for tests and metrics). */
size_t events_feed_streams(events_feed *f);

#endif
