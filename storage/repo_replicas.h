/*
 * repo_replicas.h — the replicas table: every Sextant replica sharing the database, as
 * its own heartbeats last described it (migrations/0007_replicas.sql).
 *
 * Each replica upserts its one row (replica_repo_beat); the leader deletes rows silent
 * for too long (replica_repo_forget); the REST API pages through them
 * (replica_repo_list). Times are the database's clock, so replicas with skewed clocks
 * are judged alike.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Every
 * function is one statement. Failures: SX_EINVAL for bad input (message names the
 * field), database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_REPLICAS_H
#define SX_STORAGE_REPO_REPLICAS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

/* What a replica says about itself in a heartbeat; pointers borrowed. */
typedef struct replica_beat {
    const char *replica_id;   /* required, 1..253 bytes */
    const char *version;      /* NULL = "" */
    const char *http_address; /* NULL = "" */
    const char *grpc_address; /* NULL = "" */
    double started_at;        /* seconds since the epoch */
    bool leader;              /* it holds the leader lock now */
    long long term;           /* its term while leading, else 0 */
    bool stopping;            /* its last heartbeat, as it stops cleanly (stopped_at) */
    const char *pushes;       /* JSON {"<minute, epoch s>": pushes} of the last hour; NULL = {} */
} replica_beat;

typedef struct replica_record {
    char *replica_id;
    char *version;
    char *http_address;
    char *grpc_address;
    char *started_at; /* RFC 3339 UTC */
    char *last_seen;
    bool alive;     /* last_seen is within the alive window of the list */
    bool leader;    /* it led at its last heartbeat and is alive */
    long long term; /* its term at its last heartbeat while leading, else 0 */
} replica_record;

/* A page of replica_record: ordered by replica_id. */
REPO_LIST(replica_list, replica_record);

/* Creates or refreshes the replica's row: every field from b, last_seen = now(). */
int replica_repo_beat(pg_conn *c, const replica_beat *b, sx_err *err) SX_MUSTCHECK;

/* Deletes the rows not refreshed for older_than_ms (at least 1); *deleted (NULL
 * allowed) gets how many. */
int replica_repo_forget(pg_conn *c, long long older_than_ms, int *deleted,
                        sx_err *err) SX_MUSTCHECK;

/* One page of replicas, ordered by id: limit (repo_limit) after cursor (NULL: the
 * first page). A replica is alive when its last heartbeat is at most alive_ms old (at
 * least 1), and counts as leader only while alive. */
int replica_repo_list(pg_conn *c, long long alive_ms, int limit, const char *cursor, sx_arena *a,
                      replica_list *out, sx_err *err) SX_MUSTCHECK;

#endif
