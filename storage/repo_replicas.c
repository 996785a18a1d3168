/*
 * repo_replicas.c — the replicas' heartbeats (see repo_replicas.h).
 *
 * Design: a heartbeat is one upsert keyed by the replica id, so a restarted replica
 * with the same id takes its row back. Whether a replica is alive is computed in SQL
 * from last_seen and the database's now(), never from the reader's clock.
 */
#include "storage/repo_replicas.h"

#include <stdio.h>
#include <string.h>

#include "storage/repo_common.h"

#define REPLICA_ID_MAX_LEN 253
#define TEXT_MAX_LEN       1024

static int check_text(const char *field, const char *v, bool required, sx_err *err)
{
    if (required && (v == NULL || v[0] == '\0'))
        return sx_err_set(err, SX_EINVAL, "%s is required", field);
    size_t max = required ? REPLICA_ID_MAX_LEN : TEXT_MAX_LEN;
    if (v && strlen(v) > max)
        return sx_err_set(err, SX_EINVAL, "%s is longer than %zu bytes", field, max);
    return 0;
}

int replica_repo_beat(pg_conn *c, const replica_beat *b, sx_err *err)
{
    int rc;
    if ((rc = check_text("replica_id", b->replica_id, true, err)) ||
        (rc = check_text("version", b->version, false, err)) ||
        (rc = check_text("http_address", b->http_address, false, err)) ||
        (rc = check_text("grpc_address", b->grpc_address, false, err)))
        return rc;
    if (b->term < 0)
        return sx_err_set(err, SX_EINVAL, "term must not be negative");
    char started[32], term[24];
    snprintf(started, sizeof(started), "%.3f", b->started_at);
    snprintf(term, sizeof(term), "%lld", b->leader ? b->term : 0);
    const char *p[] = {b->replica_id,
                       b->version ? b->version : "",
                       b->http_address ? b->http_address : "",
                       b->grpc_address ? b->grpc_address : "",
                       started,
                       b->leader ? "true" : "false",
                       term,
                       b->stopping ? "true" : "false",
                       b->pushes ? b->pushes : "{}"};
    return repo_exec_count(
        c,
        "INSERT INTO replicas AS r (replica_id, version, http_address, grpc_address, started_at,"
        "   last_seen, leader, term, stopped_at, pushes_per_minute)"
        " VALUES ($1, $2, $3, $4, to_timestamp($5::double precision), now(), $6::boolean,"
        "   $7::bigint, CASE WHEN $8::boolean THEN now() END, $9::jsonb)"
        " ON CONFLICT (replica_id) DO UPDATE SET version = EXCLUDED.version,"
        "   http_address = EXCLUDED.http_address, grpc_address = EXCLUDED.grpc_address,"
        "   started_at = EXCLUDED.started_at, last_seen = now(), leader = EXCLUDED.leader,"
        "   term = EXCLUDED.term, stopped_at = EXCLUDED.stopped_at,"
        "   pushes_per_minute = EXCLUDED.pushes_per_minute",
        9, p, NULL, err);
}

int replica_repo_forget(pg_conn *c, long long older_than_ms, int *deleted, sx_err *err)
{
    if (deleted)
        *deleted = 0;
    if (older_than_ms < 1)
        return sx_err_set(err, SX_EINVAL, "older_than_ms must be at least 1");
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", older_than_ms);
    const char *p[] = {ms};
    return repo_exec_count(c,
                           "DELETE FROM replicas"
                           " WHERE last_seen < now() - $1::bigint * interval '1 millisecond'",
                           1, p, deleted, err);
}

/* Columns: id, version, http, grpc, started_at, last_seen, alive, leader, term. */
static int read_replica(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    replica_record *o = item;
    memset(o, 0, sizeof(*o));
    REPO_STRS(a, r, row, 0, &o->replica_id, &o->version, &o->http_address, &o->grpc_address,
              &o->started_at, &o->last_seen);
    o->alive = repo_bool(r, row, 6);
    o->leader = repo_bool(r, row, 7);
    return repo_i64(r, row, 8, 0, &o->term, err);
}

/* The columns of read_replica, alive meaning heard from within $1 ms; ordered by id, $2
 * the id to start after, $3 the limit. */
// clang-format off
#define LIST_SQL                                                                         \
    "SELECT replica_id, version, http_address, grpc_address, " REPO_TS("started_at") "," \
    " " REPO_TS("last_seen") ", alive, leader AND alive, term"                           \
    " FROM (SELECT *, last_seen >= now() - $1::bigint * interval '1 millisecond' AS alive" \
    "       FROM replicas) r"                                                            \
    " WHERE ($2::text IS NULL OR replica_id > $2)"                                       \
    " ORDER BY replica_id LIMIT $3::int"
// clang-format on

/* Ordered by id: $2 the id to start after, $3 the limit. */
static const repo_page_spec replica_page = {"s", {0}, 2, 3, sizeof(replica_record), read_replica};

int replica_repo_list(pg_conn *c, long long alive_ms, int limit, const char *cursor, sx_arena *a,
                      replica_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (alive_ms < 1)
        return sx_err_set(err, SX_EINVAL, "alive_ms must be at least 1");
    const char *p[] = {repo_i64_param(a, alive_ms), NULL, NULL};
    return repo_list_query(c, a, &replica_page, limit, cursor, LIST_SQL, 3, p, REPO_LIST_REF(out),
                           err);
}
