/*
 * repo_nodes.h — the fleet: every proxy seen (proxy_nodes) and what it should have
 * and reported (node_status).
 *
 * A node row is upserted when a stream opens (connected, on this replica), touched in
 * batches while it lives (last_seen), and marked disconnected when it ends — only by
 * the replica that holds it, on the stream that ended, so a node that already
 * reconnected (elsewhere, or here on a newer stream) is not marked down by the stream
 * it left. proxy_nodes.stream_gen orders the streams of a node: a connect of an older
 * stream than the row's live one is not written. ACKs and NACKs land in node_status, which every
 * replica reads; the rollout driver decides waves from it.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Every
 * function takes a pg_conn and is one statement, atomic with or without the caller's
 * transaction. Failures: SX_EINVAL for bad input (message names the field),
 * SX_ENOTFOUND for an unknown node where noted, database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_NODES_H
#define SX_STORAGE_REPO_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

typedef struct node_record {
    char *node_id;
    char *group; /* proxy group (the xDS node cluster) */
    char *ns;    /* namespace; "" when unknown */
    json_t *labels;
    json_t *metadata;
    char *client;            /* "envoy/1.30.1", "grpc-js/1.10.0", ... */
    json_t *locality;        /* {"region","zone","sub_zone"} as reported */
    char *protocol;          /* "ads-sotw", "ads-delta", "control-v1"; "" when unknown */
    char *disconnect_reason; /* why its last stream ended; NULL while connected or never */
    char *replica_id;        /* replica holding (or last holding) its stream; NULL if never */
    bool connected;
    char *first_seen; /* RFC 3339 UTC */
    char *last_seen;
    /* From node_status; versions are 0 and times NULL when there is none yet. */
    long long desired_version; /* assigned snapshot version; 0 = follows the group */
    char *deployment_id;       /* deployment that assigned it; NULL when none */
    long long sent_version;    /* last sent snapshot version; 0 when none */
    char *sent_at;
    bool reported; /* a status report was received (the fields below are set) */
    bool report_ready;
    char *report_version;
    char *report_message;
    char *reported_at;
    long long acked_version;
    char *acked_at;
    long long last_nack_version;
    char *last_nack_error;
    char *last_nack_at;
    int nack_count;
    /* Fleet health, computed in SQL from connected, last_seen and the thresholds. */
    const char *state; /* "connected", "stale" or "disconnected" (static string) */
    bool nacking;      /* its last NACK is newer than its last ACK */
} node_record;

/* How long without activity a node turns stale and disconnected (fleet.stale_after,
 * fleet.disconnected_after). Zero fields mean the defaults, 120 s and 300 s.
 *
 * state is "disconnected" when the stream ended (connected = false) or last_seen is
 * older than disconnected_after; else "stale" when last_seen is older than stale_after;
 * else "connected". Every query below computes it with the same SQL expression. */
typedef struct node_thresholds {
    long long stale_after_ms;
    long long disconnected_after_ms;
} node_thresholds;

/* A node's state from connected, last_seen and the thresholds in milliseconds (S and
 * D name their parameters, such as "$2"), over proxy_nodes aliased n: the one
 * definition every query uses. */
// clang-format off
#define NODE_REPO_STATE_SQL(S, D)                                                    \
    "(CASE WHEN NOT n.connected"                                                     \
    "   OR n.last_seen < now() - " D "::bigint * interval '1 millisecond'"           \
    "   THEN 'disconnected'"                                                         \
    " WHEN n.last_seen < now() - " S "::bigint * interval '1 millisecond'"           \
    "   THEN 'stale' ELSE 'connected' END)"
/* The node's last response was a NACK (node_status aliased s). */
#define NODE_REPO_NACKING_SQL                                                        \
    "(s.last_nack_at IS NOT NULL AND (s.acked_at IS NULL OR s.last_nack_at > s.acked_at))"
// clang-format on

/* What a node says about itself when its stream opens; pointers borrowed. */
typedef struct node_hello {
    const char *node_id;    /* required, 1..512 bytes */
    const char *group;      /* required, 1..253 bytes */
    const char *ns;         /* NULL = "" */
    const json_t *labels;   /* object of strings; NULL = {} */
    const json_t *metadata; /* object; NULL = {} */
    const char *client;     /* NULL = "" */
    const char *replica_id; /* required: this replica */
    const json_t *locality; /* {"region","zone","sub_zone"}; NULL = {} */
    const char *protocol;   /* "ads-sotw", "ads-delta", "control-v1"; NULL = "" */
    long long stream_gen;   /* generation of the stream (0 = unordered: older than any) */
} node_hello;

typedef struct node_filter {
    const char *group; /* NULL = every group */
    int connected;     /* -1 = any, 0 = disconnected only, 1 = connected only */
    const char *state; /* NULL = any; "connected", "stale" or "disconnected" */
    node_thresholds thresholds;
    int limit; /* page size, see repo_limit */
    const char *cursor;
} node_filter;

/* A page of node_record: ordered by node_id. */
REPO_LIST(node_list, node_record);

/* Records a node's stream opening: creates or updates identity, group, labels,
 * metadata, client and replica, sets connected and last_seen, and makes sure it has
 * a node_status row (an existing status is kept). Clears stale_since. */
int node_repo_upsert(pg_conn *c, const node_hello *h, sx_err *err) SX_MUSTCHECK;
/* The same, ordered by stream generation: the row is left alone when it holds a newer
 * stream that is still connected (h->stream_gen below the row's), and *applied (NULL allowed) tells
 * whether it was written. */
int node_repo_upsert_ex(pg_conn *c, const node_hello *h, bool *applied, sx_err *err) SX_MUSTCHECK;
/* node_repo_upsert_ex of n hellos of distinct nodes in one statement: a reconnect of ten
 * thousand nodes is one round trip. applied[i] (applied NULL allowed) tells whether hello
 * i was written. Nothing is written when one of them is refused (SX_EINVAL). */
int node_repo_upsert_many(pg_conn *c, const node_hello *h, size_t n, bool *applied,
                          sx_err *err) SX_MUSTCHECK;

/* Marks the node disconnected if replica_id still holds it; *changed (NULL allowed)
 * tells whether it did. Not an error when the node is unknown or elsewhere. */
int node_repo_mark_disconnected(pg_conn *c, const char *node_id, const char *replica_id,
                                const char *reason, bool *changed, sx_err *err) SX_MUSTCHECK;
/* The same, and when it did, *group (NULL allowed; in a) gets the node's group. */
int node_repo_mark_disconnected_ex(pg_conn *c, const char *node_id, const char *replica_id,
                                   const char *reason, sx_arena *a, bool *changed, char **group,
                                   sx_err *err) SX_MUSTCHECK;

/* Marks the node disconnected if replica_id still holds it on the stream of generation
 * stream_gen (0 = whichever stream): the end of a stream that was superseded, here or on
 * another replica, changes nothing. *changed and *group as above. */
int node_repo_end_stream(pg_conn *c, const char *node_id, const char *replica_id,
                         long long stream_gen, const char *reason, sx_arena *a, bool *changed,
                         char **group, sx_err *err) SX_MUSTCHECK;

/* One stream end of a batch (node_repo_end_streams): node_id, stream_gen and reason in
 * (as node_repo_end_stream takes them); changed and group out. */
typedef struct node_stream_end {
    const char *node_id;
    long long stream_gen;
    const char *reason; /* NULL allowed */
    bool changed;       /* the node was marked disconnected */
    char *group;        /* then its group (in a; NULL when a is) */
} node_stream_end;

/* node_repo_end_stream of n stream ends of distinct nodes of replica_id in one
 * statement. Rows are locked in node id order. */
int node_repo_end_streams(pg_conn *c, const char *replica_id, node_stream_end *ends, size_t n,
                          sx_arena *a, sx_err *err) SX_MUSTCHECK;

/* A data plane's health report (gateway.control.v1). observed_at is RFC 3339 (NULL =
 * now). SX_ENOTFOUND for an unknown node. */
typedef struct node_report {
    bool ready;
    const char *version;     /* configuration version it runs; NULL = "" */
    const char *message;     /* NULL = "" */
    const char *observed_at; /* RFC 3339; NULL = now */
} node_report;
int node_repo_record_report(pg_conn *c, const char *node_id, const node_report *r,
                            sx_err *err) SX_MUSTCHECK;

/* Records that snapshot version was sent to the node. SX_ENOTFOUND for an unknown node. */
int node_repo_record_sent(pg_conn *c, const char *node_id, long long version,
                          sx_err *err) SX_MUSTCHECK;

/* Marks every node held by replica_id disconnected (a replica starting again, or
 * another taking over after it died); *count (NULL allowed) gets how many. */
int node_repo_disconnect_replica(pg_conn *c, const char *replica_id, int *count,
                                 sx_err *err) SX_MUSTCHECK;

/* Sets last_seen = now() (and clears stale_since) for the n nodes in one statement;
 * *updated (NULL allowed) gets how many exist. n == 0 does nothing. */
int node_repo_touch(pg_conn *c, const char *const *node_ids, size_t n, int *updated,
                    sx_err *err) SX_MUSTCHECK;

/* Records an ACK of snapshot version by the node. SX_ENOTFOUND for an unknown node. */
int node_repo_record_ack(pg_conn *c, const char *node_id, long long version,
                         sx_err *err) SX_MUSTCHECK;
/* The same, and says what it replaced: *previous (NULL allowed) the version acked before
 * (0 when none), *group (NULL allowed; in a) the node's group. */
int node_repo_record_ack_ex(pg_conn *c, const char *node_id, long long version, sx_arena *a,
                            long long *previous, char **group, sx_err *err) SX_MUSTCHECK;

/* One ACK of a batch (node_repo_record_acks): node_id and version in; the rest out. */
typedef struct node_ack {
    const char *node_id;
    long long version;
    bool found;         /* the node exists (an unknown one is skipped, not an error) */
    long long previous; /* the version acked before (0 when none) */
    char *group;        /* the node's group (in a), NULL when none */
} node_ack;

/* node_repo_record_ack_ex for n ACKs of distinct nodes in one statement: a flush of ten
 * thousand ACKs is one round trip. Rows are locked in node id order. */
int node_repo_record_acks(pg_conn *c, node_ack *acks, size_t n, sx_arena *a,
                          sx_err *err) SX_MUSTCHECK;

/* node_repo_record_sent for n distinct nodes (node_ids[i] was sent versions[i]) in one
 * statement; unknown nodes are skipped. */
int node_repo_record_sents(pg_conn *c, const char *const *node_ids, const long long *versions,
                           size_t n, sx_err *err) SX_MUSTCHECK;

/* Records a NACK of version with the client's error (kept up to 8192 characters) and
 * increments nack_count. SX_ENOTFOUND for an unknown node. */
int node_repo_record_nack(pg_conn *c, const char *node_id, long long version, const char *error,
                          sx_err *err) SX_MUSTCHECK;
/* The same, and *group (NULL allowed; in a) gets the node's group. */
int node_repo_record_nack_ex(pg_conn *c, const char *node_id, long long version, const char *error,
                             sx_arena *a, char **group, sx_err *err) SX_MUSTCHECK;

/* A node node_repo_mark_stale found stale; strings in the caller's arena. */
typedef struct node_stale {
    char *node_id;
    char *group;
    char *last_seen; /* RFC 3339 UTC */
} node_stale;

typedef struct node_stale_list {
    node_stale *items;
    size_t count;
} node_stale_list;

/* Sets stale_since on up to limit (see repo_limit) connected nodes without activity for
 * stale_after_ms (0 = the default) whose stale_since is not set yet, and returns them.
 * A node is returned once until it is seen again (upsert and touch clear stale_since),
 * also when several replicas sweep at once. */
int node_repo_mark_stale(pg_conn *c, long long stale_after_ms, int limit, sx_arena *a,
                         node_stale_list *out, sx_err *err) SX_MUSTCHECK;

/* Marks disconnected (reason "no_activity") up to limit connected nodes without activity
 * for disconnected_after_ms (0 = the default) — nodes whose replica died or hangs — and
 * returns them, each once, also when several replicas sweep at once. Only nodes already
 * marked stale are taken, so a node is always reported stale before it is reported lost,
 * whichever replica's sweep sees it first. Activity on the
 * node's stream (node_repo_touch) makes it connected again. */
int node_repo_mark_lost(pg_conn *c, long long disconnected_after_ms, int limit, sx_arena *a,
                        node_stale_list *out, sx_err *err) SX_MUSTCHECK;

/* Assigns snapshot version (0 = follow the group again) to the n nodes, on behalf of
 * deployment_id (NULL when none); *updated (NULL allowed) gets how many exist. */
int node_repo_assign(pg_conn *c, const char *const *node_ids, size_t n, long long version,
                     const char *deployment_id, int *updated, sx_err *err) SX_MUSTCHECK;

/* One node with its status, its state judged with the default thresholds.
 * SX_ENOTFOUND when unknown. */
int node_repo_get(pg_conn *c, const char *node_id, sx_arena *a, node_record **out,
                  sx_err *err) SX_MUSTCHECK;

/* node_repo_get with the given thresholds (NULL = defaults). */
int node_repo_get_with(pg_conn *c, const char *node_id, const node_thresholds *t, sx_arena *a,
                       node_record **out, sx_err *err) SX_MUSTCHECK;

/* True for "connected", "stale" and "disconnected". */
bool node_repo_state_valid(const char *state);

/* How many nodes are in each state; the same expression as the lists. */
typedef struct node_state_counts {
    long long connected, stale, disconnected;
    long long nacking;   /* nodes whose last NACK is newer than their last ACK */
    long long responded; /* nodes that ever ACKed or NACKed */
} node_state_counts;

/* Counts over the whole fleet (t NULL = defaults), one statement. */
int node_repo_count_states(pg_conn *c, const node_thresholds *t, node_state_counts *out,
                           sx_err *err) SX_MUSTCHECK;

/* Per-group counts for the n groups named (one statement); out[i] is for groups[i],
 * zeros for a group without nodes. nack_rate of a group is nacking / responded. */
int node_repo_count_groups(pg_conn *c, const node_thresholds *t, const char *const *groups,
                           size_t n, node_state_counts *out, sx_err *err) SX_MUSTCHECK;

/* How many nodes that are not disconnected hold each snapshot version, per group: the
 * version a node last ACKed ("none" before its first ACK). */
typedef struct node_version_count {
    char *group;   /* in the caller's arena */
    char *version; /* decimal, or "none" */
    long long count;
} node_version_count;

/* Every (group, version) pair with its count, sorted by group then version text, into
 * *out (arena); one statement. */
int node_repo_count_versions(pg_conn *c, const node_thresholds *t, sx_arena *a,
                             node_version_count **out, size_t *n, sx_err *err) SX_MUSTCHECK;

/* One page of nodes matching f (NULL = all). */
int node_repo_list(pg_conn *c, const node_filter *f, sx_arena *a, node_list *out,
                   sx_err *err) SX_MUSTCHECK;

#endif
