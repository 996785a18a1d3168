/*
 * repo_events.c — appends to and reads the live events table (see repo_events.h).
 *
 * Design: the stream order is (txid, id), indexed by events_stream_order, and "settled"
 * is txid < SETTLED_HORIZON evaluated in the reading statement itself, so the horizon
 * and the rows come from one snapshot. The horizon is the oldest transaction that was
 * in progress for the statement's snapshot and may belong to this database (else the
 * snapshot's xmax): a transaction known to run in another database of the cluster can
 * never insert into this table, so it holds nothing back; one whose database cannot be
 * told any more (it ended after the snapshot was taken, or it is prepared) is assumed
 * to be ours. Rows that become visible later belong to transactions at or above the
 * horizon, so nothing settled is ever followed by an older row. A list reads the rows
 * after its start whatever their state and stops at the first unsettled one: rows
 * behind it sort later (their txid is at least as high), so they are unsettled too,
 * and the caller is told to come back (pending) rather than given a gap. The insert
 * and its NOTIFY are one statement, one round trip for writers that emit many events
 * in one transaction.
 */
#include "storage/repo_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_common.h"

#define EVENT_TYPE_MAX_LEN 64
#define EVENT_LIST_MAX     1000

// clang-format off
/* The settled horizon (see the design above), a scalar subquery of the reading statement.
 * pg_stat_activity's backend_xid is the 32-bit form of an xid8: its low 32 bits. */
#define SETTLED_HORIZON                                                                    \
    "(SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))"                    \
    "   FROM pg_snapshot_xip(pg_current_snapshot()) AS x"                                  \
    "  WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a"                                 \
    "                     WHERE a.datname <> current_database()"                           \
    "                       AND a.backend_xid::text::bigint"                               \
    "                           = (x::text::numeric % 4294967296)::bigint))"
/* Columns read_event expects, in its order; the last says whether the row is unsettled. */
#define EVENT_COLS                                                                         \
    "e.id, e.txid::text, " REPO_TS("e.at") ", e.type, e.replica_id, e.deployment_id::text," \
    " e.node_id, e.group_name, e.data,"                                                     \
    " e.txid >= " SETTLED_HORIZON
#define INSERT_SQL                                                                         \
    "INSERT INTO events (type, replica_id, deployment_id, node_id, group_name, data)"      \
    " VALUES ($1, $2, $3::uuid, $4, $5, $6::jsonb) RETURNING id"
// clang-format on

static int parse_txid(const PGresult *r, int row, int col, unsigned long long *out, sx_err *err)
{
    const char *s = PQgetvalue(r, row, col);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return sx_err_set(err, SX_EINTERNAL, "column %s is not a transaction id: \"%s\"",
                          PQfname(r, col), s);
    *out = v;
    return 0;
}

static char *txid_param(sx_arena *a, unsigned long long v)
{
    return sx_arena_printf(a, "%llu", v);
}

static int check_event(const event_new *in, sx_err *err)
{
    if (in->type == NULL || in->type[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "type is required");
    if (strlen(in->type) > EVENT_TYPE_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "type is longer than %d bytes", EVENT_TYPE_MAX_LEN);
    if (in->deployment_id && !repo_is_uuid(in->deployment_id))
        return sx_err_set(err, SX_EINVAL, "invalid deployment id \"%s\"", in->deployment_id);
    return repo_check_object("data", in->data, err);
}

int event_repo_insert(pg_conn *c, const event_new *in, long long *id, sx_err *err)
{
    if (id)
        *id = 0;
    int rc = check_event(in, err);
    if (rc)
        return rc;
    sx_arena *a = sx_arena_create();
    const char *p[] = {
        in->type,  in->replica_id ? in->replica_id : "",           in->deployment_id,  in->node_id,
        in->group, in->data ? repo_json_param(a, in->data) : "{}", in->notify_channel,
    };
    if (in->notify_channel)
        rc = repo_query_i64(c,
                            /* One payload for all: PostgreSQL folds a transaction's identical
                             * notifications into one, so a flush writing thousands of events
                             * wakes each replica once. Readers look for new rows anyway. */
                            "WITH e AS (" INSERT_SQL ")"
                            " SELECT e.id, pg_notify($7, '') FROM e",
                            7, p, id, err);
    else
        rc = repo_query_i64(c, INSERT_SQL, 6, p, id, err);
    sx_arena_destroy(a);
    return rc;
}

int event_repo_insert_many(pg_conn *c, const event_new *in, size_t n, sx_err *err)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int rc = check_event(&in[i], err);
        if (rc) {
            sx_err_prefix(err, "event %zu", i);
            return rc;
        }
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *data = in[i].data ? json_incref((json_t *)in[i].data) : json_object();
        json_array_append_new(
            rows, json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:o,s:I}", "type", in[i].type, "replica_id",
                            in[i].replica_id ? in[i].replica_id : "", "deployment_id",
                            in[i].deployment_id, "node_id", in[i].node_id, "group_name",
                            in[i].group, "data", data, "i", (json_int_t)i));
    }
    sx_arena *a = sx_arena_create();
    const char *p[] = {repo_json_param(a, rows), in[0].notify_channel};
    json_decref(rows);
    /* One insert of every row in the given order (ids follow it), and at most one
     * notification, as a transaction's identical notifications fold into one anyway. */
    int rc = repo_query_i64(c,
                            "WITH e AS (INSERT INTO events"
                            "   (type, replica_id, deployment_id, node_id, group_name, data)"
                            " SELECT x.type, x.replica_id, x.deployment_id::uuid, x.node_id,"
                            "   x.group_name, x.data"
                            " FROM jsonb_to_recordset($1::jsonb) AS x(type text, replica_id text,"
                            "   deployment_id text, node_id text, group_name text, data jsonb,"
                            "   i int)"
                            " ORDER BY x.i RETURNING id)"
                            " SELECT (SELECT count(*) FROM e),"
                            "   CASE WHEN $2::text IS NULL THEN NULL ELSE pg_notify($2, '') END",
                            2, p, NULL, err);
    sx_arena_destroy(a);
    return rc;
}

static int read_event(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    event_record *o = item;
    memset(o, 0, sizeof(*o));
    int rc;
    if ((rc = repo_i64(r, row, 0, 0, &o->id, err)) ||
        (rc = parse_txid(r, row, 1, &o->pos.txid, err)) ||
        (rc = repo_json(a, r, row, 8, &o->data, err)))
        return rc;
    o->pos.id = o->id;
    REPO_STRS(a, r, row, 2, &o->at, &o->type, &o->replica_id, &o->deployment_id, &o->node_id,
              &o->group);
    if (!json_is_object(o->data))
        return sx_err_set(err, SX_EINTERNAL, "event %lld has data that is not an object", o->id);
    return 0;
}

int event_repo_list_after(pg_conn *c, const event_pos *after, long long min_id,
                          const event_pos *upto, int limit, sx_arena *a, event_list *out,
                          sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (limit < 1 || limit > EVENT_LIST_MAX)
        return sx_err_set(err, SX_EINVAL, "limit must be between 1 and %d", EVENT_LIST_MAX);
    const char *p[] = {
        txid_param(a, after->txid),
        repo_i64_param(a, after->id),
        min_id > 0 ? repo_i64_param(a, min_id) : NULL,
        upto ? txid_param(a, upto->txid) : NULL,
        upto ? repo_i64_param(a, upto->id) : NULL,
        repo_i64_param(a, limit),
    };
    PGresult *r;
    int rc = repo_query(c, a,
                        "SELECT " EVENT_COLS " FROM events e"
                        " WHERE (e.txid, e.id) > ($1::xid8, $2::bigint)"
                        "   AND ($3::bigint IS NULL OR e.id > $3::bigint)"
                        "   AND ($4::xid8 IS NULL OR (e.txid, e.id) <= ($4::xid8, $5::bigint))"
                        " ORDER BY e.txid, e.id LIMIT $6::int",
                        6, p, &r, err);
    if (rc)
        return rc;
    int rows = PQntuples(r);
    size_t n = 0;
    out->items = rows ? sx_arena_alloc(a, (size_t)rows * sizeof(event_record)) : NULL;
    for (int i = 0; rc == 0 && i < rows; i++) {
        if (upto == NULL && repo_bool(r, i, 9)) {
            out->pending = true;
            break;
        }
        rc = read_event(a, r, i, &out->items[n], err);
        n++;
    }
    if (rc) {
        memset(out, 0, sizeof(*out));
        return rc;
    }
    out->count = n;
    out->more = !out->pending && rows == limit;
    return 0;
}

/* The position in row 0, columns 0 (txid) and 1 (id), of r; {0, 0} when r has no row. */
static int read_pos(const PGresult *r, event_pos *out, sx_err *err)
{
    out->txid = 0;
    out->id = 0;
    if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0))
        return 0;
    int rc = parse_txid(r, 0, 0, &out->txid, err);
    return rc ? rc : repo_i64(r, 0, 1, 0, &out->id, err);
}

int event_repo_head(pg_conn *c, event_pos *out, sx_err *err)
{
    out->txid = 0;
    out->id = 0;
    PGresult *r;
    int rc = pg_exec(c,
                     "SELECT e.txid::text, e.id FROM events e"
                     " WHERE e.txid < " SETTLED_HORIZON " ORDER BY e.txid DESC, e.id DESC LIMIT 1",
                     0, NULL, &r, err);
    if (rc)
        return rc;
    rc = read_pos(r, out, err);
    PQclear(r);
    return rc;
}

int event_repo_position(pg_conn *c, long long id, event_pos *out, bool *found, sx_err *err)
{
    out->txid = 0;
    out->id = 0;
    *found = false;
    if (id < 0)
        return sx_err_set(err, SX_EINVAL, "event id must not be negative");
    char idtext[24];
    snprintf(idtext, sizeof(idtext), "%lld", id);
    const char *p[] = {idtext};
    PGresult *r;
    /* First the event itself; else the earliest transaction holding a settled event with
     * a greater id, entered at id 0 so the whole transaction follows; else the head. */
    int rc = pg_exec(c,
                     "SELECT txid::text, id, true FROM events WHERE id = $1::bigint"
                     " UNION ALL"
                     " SELECT * FROM (SELECT min(txid)::text, 0::bigint, false FROM events"
                     "   WHERE id > $1::bigint"
                     "     AND txid < " SETTLED_HORIZON ") m"
                     "   WHERE m.min IS NOT NULL"
                     " ORDER BY 3 DESC LIMIT 1",
                     1, p, &r, err);
    if (rc)
        return rc;
    bool none = PQntuples(r) == 0;
    if (!none && (rc = read_pos(r, out, err)) == 0)
        *found = repo_bool(r, 0, 2);
    PQclear(r);
    return none ? event_repo_head(c, out, err) : rc;
}

int event_repo_prune(pg_conn *c, long long older_than_ms, long long *deleted, sx_err *err)
{
    return repo_prune(c,
                      "DELETE FROM events WHERE at < now() - $1::bigint * interval '1 millisecond'",
                      older_than_ms, "retention", deleted, err);
}

/* Newest first: $3 the id to start below, $4 the limit. */
static const repo_page_spec node_events_page = {"i", {0}, 3, 4, sizeof(event_record), read_event};

int event_repo_list_node(pg_conn *c, const char *node_id, const char *type, int limit,
                         const char *cursor, sx_arena *a, event_page *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (node_id == NULL || node_id[0] == '\0' || type == NULL)
        return sx_err_set(err, SX_EINVAL, "a node id and an event type are required");
    const char *p[] = {node_id, type, NULL, NULL};
    return repo_list_query(c, a, &node_events_page, limit, cursor,
                           "SELECT " EVENT_COLS " FROM events e"
                           " WHERE e.node_id = $1 AND e.type = $2"
                           "   AND ($3::bigint IS NULL OR e.id < $3::bigint)"
                           " ORDER BY e.id DESC LIMIT $4::int",
                           4, p, REPO_LIST_REF(out), err);
}
