/*
 * repo_events.h — the live events table (events): what GET /api/v1/events streams.
 *
 * Events are appended on the caller's connection, normally inside the transaction of
 * what they report, so an event and its cause commit or vanish together. They are
 * read back in stream order: by the inserting transaction's id (txid), then by id
 * (migrations/0004_events_order.sql says why id order alone would lose events), and
 * only once they are settled — every transaction older than the reader's snapshot has
 * ended — so a row that becomes visible later always sorts after what was read. An
 * event_pos names a place in that order; the position {0, 0} is before every event.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Every
 * function is one statement. Failures: SX_EINVAL for bad input (message names the
 * field), database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_EVENTS_H
#define SX_STORAGE_REPO_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

/* A place in the stream: (txid, id) of an event, compared in that order. */
typedef struct event_pos {
    unsigned long long txid; /* events.txid (xid8) */
    long long id;            /* events.id */
} event_pos;

typedef struct event_record {
    long long id;
    event_pos pos;
    char *at;            /* RFC 3339 UTC with microseconds (the writing transaction's start) */
    char *type;          /* "config_applied", "wave_started", ... */
    char *replica_id;    /* replica that wrote it; "" when unknown */
    char *deployment_id; /* NULL when none */
    char *node_id;       /* NULL when none */
    char *group;         /* NULL when none */
    json_t *data;        /* object */
} event_record;

/* Input of event_repo_insert; pointers borrowed. */
typedef struct event_new {
    const char *type;           /* required; the table's CHECK names the accepted types */
    const char *replica_id;     /* NULL = "" */
    const char *deployment_id;  /* UUID text; NULL = none */
    const char *node_id;        /* NULL = none */
    const char *group;          /* NULL = none */
    const json_t *data;         /* object; NULL = {} */
    const char *notify_channel; /* NULL: no notification; else pg_notify(channel, id) in the
                                   same statement (delivered at commit, never on rollback) */
} event_new;

typedef struct event_list {
    event_record *items; /* in stream order */
    size_t count;
    bool more;    /* the page was full: more settled events may follow the last one */
    bool pending; /* events follow that are not settled yet: read again shortly */
} event_list;

/* Appends one event; *id (NULL allowed) receives its id. */
int event_repo_insert(pg_conn *c, const event_new *in, long long *id, sx_err *err) SX_MUSTCHECK;
/* Appends n events in one statement, in their order, with one notification on
 * in[0].notify_channel (NULL: none); the notify_channel of the others is not read.
 * Checked as event_repo_insert checks one: nothing is written when one fails. */
int event_repo_insert_many(pg_conn *c, const event_new *in, size_t n, sx_err *err) SX_MUSTCHECK;

/*
 * Up to limit (1..1000) settled events after position after, in stream order.
 * min_id > 0 skips events whose id is not above it (resuming from a pruned id, see
 * event_repo_position). upto (NULL = no bound) is an upper bound, inclusive, that
 * must itself be settled (a position event_repo_head or an earlier list returned);
 * with it, pending is never set.
 */
int event_repo_list_after(pg_conn *c, const event_pos *after, long long min_id,
                          const event_pos *upto, int limit, sx_arena *a, event_list *out,
                          sx_err *err) SX_MUSTCHECK;

/* The position of the last settled event ({0, 0} when there is none): a reader that
 * starts there streams only what settles afterwards. */
int event_repo_head(pg_conn *c, event_pos *out, sx_err *err) SX_MUSTCHECK;

/*
 * Where to resume after the event with this id. When the event exists, *found is
 * true and *out is its position. Otherwise (pruned, or never written) *found is false
 * and *out is a position before every settled event with a greater id (the head when
 * there is none); the caller then passes id as min_id to event_repo_list_after.
 */
int event_repo_position(pg_conn *c, long long id, event_pos *out, bool *found,
                        sx_err *err) SX_MUSTCHECK;

/* Deletes the events older than older_than_ms milliseconds (by their at); *deleted
 * (NULL allowed) gets how many. */
int event_repo_prune(pg_conn *c, long long older_than_ms, long long *deleted,
                     sx_err *err) SX_MUSTCHECK;

/* One page of a node's events of one type, newest first (by id; committed rows only
 * as any read), kept for events.retention: e.g. its NACK history (config_rejected). */
REPO_LIST(event_page, event_record);
int event_repo_list_node(pg_conn *c, const char *node_id, const char *type, int limit,
                         const char *cursor, sx_arena *a, event_page *out,
                         sx_err *err) SX_MUSTCHECK;

#endif
