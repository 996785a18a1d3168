/*
 * repo_nodes.c — proxy nodes and their ACK/NACK status.
 *
 * Design: the upsert and its status row are one statement (a CTE), so a node never
 * exists without a status row and ACK/NACK can be plain UPDATEs whose row count tells
 * "unknown node". Batches (touch, assign) pass their node ids as one JSON array
 * parameter, so a heartbeat flush of ten thousand nodes is one round trip.
 */
#include "storage/repo_nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_common.h"

#define NODE_ID_MAX_LEN 512
#define GROUP_MAX_LEN   253
#define NACK_ERROR_MAX  8192

/* Columns read_node expects, in its order. */
// clang-format off
#define NODE_COLS                                                                    \
    "n.node_id, n.group_name, n.namespace, n.labels, n.metadata, n.client,"         \
    " n.replica_id, n.connected, " REPO_TS("n.first_seen") ","                       \
    " " REPO_TS("n.last_seen") ","                                                    \
    " s.desired_snapshot_version, s.deployment_id, s.acked_snapshot_version,"        \
    " " REPO_TS("s.acked_at") ", s.last_nack_version, s.last_nack_error,"            \
    " " REPO_TS("s.last_nack_at") ", s.nack_count,"                                   \
    " n.locality, n.protocol, n.disconnect_reason, s.sent_snapshot_version,"         \
    " " REPO_TS("s.sent_at") ", s.report_ready, s.report_version, s.report_message," \
    " " REPO_TS("s.reported_at")

/* The one definition of a node's state and NACKing (storage/repo_nodes.h). */
#define STATE_EXPR(S, D) NODE_REPO_STATE_SQL(S, D)
#define NACKING_EXPR     NODE_REPO_NACKING_SQL
/* The node ever answered a response. */
#define RESPONDED_EXPR "(s.last_nack_at IS NOT NULL OR s.acked_at IS NOT NULL)"
/* Columns 27 and 28 of read_node. */
#define HEALTH_COLS(S, D) ", " STATE_EXPR(S, D) ", " NACKING_EXPR
// clang-format on

#define DEFAULT_STALE_MS        120000LL
#define DEFAULT_DISCONNECTED_MS 300000LL

static const char *const states[] = {"connected", "stale", "disconnected"};

bool node_repo_state_valid(const char *state)
{
    for (size_t i = 0; state && i < sizeof(states) / sizeof(states[0]); i++)
        if (strcmp(state, states[i]) == 0)
            return true;
    return false;
}

/* The thresholds as two text parameters in the arena (zero fields: defaults). */
static void threshold_params(sx_arena *a, const node_thresholds *t, const char **stale,
                             const char **disc)
{
    long long s = t && t->stale_after_ms > 0 ? t->stale_after_ms : DEFAULT_STALE_MS;
    long long d =
        t && t->disconnected_after_ms > 0 ? t->disconnected_after_ms : DEFAULT_DISCONNECTED_MS;
    *stale = repo_i64_param(a, s);
    *disc = repo_i64_param(a, d);
}

static int check_str(const char *field, const char *v, size_t max, sx_err *err)
{
    if (v == NULL || v[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "%s is required", field);
    if (strlen(v) > max)
        return sx_err_set(err, SX_EINVAL, "%s is longer than %zu bytes", field, max);
    return 0;
}

/* The start of a statement on a list of node ids: *updated (NULL allowed) reset to 0,
 * then each id checked. */
static int check_ids(const char *const *ids, size_t n, int *updated, sx_err *err)
{
    if (updated)
        *updated = 0;
    for (size_t i = 0; i < n; i++) {
        char field[32];
        snprintf(field, sizeof(field), "node_ids[%zu]", i);
        int rc = check_str(field, ids[i], NODE_ID_MAX_LEN, err);
        if (rc)
            return rc;
    }
    return 0;
}

int node_repo_upsert(pg_conn *c, const node_hello *h, sx_err *err)
{
    return node_repo_upsert_ex(c, h, NULL, err);
}

/* Checks one hello: the fields the database requires, the JSON that must be objects. */
static int check_hello(const node_hello *h, sx_err *err)
{
    int rc;
    if ((rc = check_str("node_id", h->node_id, NODE_ID_MAX_LEN, err)) ||
        (rc = check_str("group", h->group, GROUP_MAX_LEN, err)) ||
        (rc = check_str("replica_id", h->replica_id, GROUP_MAX_LEN, err)) ||
        (rc = repo_check_object("labels", h->labels, err)) ||
        (rc = repo_check_object("metadata", h->metadata, err)) ||
        (rc = repo_check_object("locality", h->locality, err)))
        return rc;
    return 0;
}

int node_repo_upsert_ex(pg_conn *c, const node_hello *h, bool *applied, sx_err *err)
{
    bool ok = false;
    int rc = node_repo_upsert_many(c, h, 1, &ok, err);
    if (applied)
        *applied = rc == 0 && ok;
    return rc;
}

/* The hellos as the statement's one parameter: a JSON array of rows, each with its
 * index i. */
static char *hellos_param(sx_arena *a, const node_hello *h, size_t n)
{
    json_t *arr = json_array(), *empty = json_object();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            arr,
            json_pack("{s:s,s:s,s:s,s:O,s:O,s:s,s:s,s:O,s:s,s:I,s:I}", "node_id", h[i].node_id,
                      "group_name", h[i].group, "namespace", h[i].ns ? h[i].ns : "", "labels",
                      (json_t *)(h[i].labels ? h[i].labels : empty), "metadata",
                      (json_t *)(h[i].metadata ? h[i].metadata : empty), "client",
                      h[i].client ? h[i].client : "", "replica_id", h[i].replica_id, "locality",
                      (json_t *)(h[i].locality ? h[i].locality : empty), "protocol",
                      h[i].protocol ? h[i].protocol : "", "stream_gen",
                      (json_int_t)(h[i].stream_gen > 0 ? h[i].stream_gen : 0), "i", (json_int_t)i));
    char *out = repo_json_param(a, arr);
    json_decref(arr);
    json_decref(empty);
    return out;
}

/* The index i of a batch statement's row (its column 0): SX_EINTERNAL when it is not
 * one of the batch's n. */
static int batch_index(const PGresult *r, int row, size_t n, size_t *out, sx_err *err)
{
    long long idx = 0;
    int rc = repo_i64(r, row, 0, 0, &idx, err);
    if (rc)
        return rc;
    if (idx < 0 || (size_t)idx >= n)
        return sx_err_set(err, SX_EINTERNAL, "node batch row %lld out of range", idx);
    *out = (size_t)idx;
    return 0;
}

int node_repo_upsert_many(pg_conn *c, const node_hello *h, size_t n, bool *applied, sx_err *err)
{
    for (size_t i = 0; applied && i < n; i++)
        applied[i] = false;
    int rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_hello(&h[i], err)) != 0)
            return rc;
    if (n == 0)
        return 0;
    sx_arena *a = sx_arena_create();
    const char *p[] = {hellos_param(a, h, n)};
    PGresult *r = NULL;
    /* The conflict's WHERE leaves a row that holds a newer live stream alone: it is not
     * in n then, and the node (which has its status row already) is not touched. A row
     * whose stream ended takes any connect: a replica writes a stream's start before (or
     * with) its end, so this is a live stream, and replicas' clocks need not agree for a
     * node to reconnect once its old stream's end is written. Rows are inserted (and
     * locked) in node id order so that concurrent batches cannot deadlock. */
    rc = repo_query(
        c, a,
        "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(node_id text,"
        "   group_name text, namespace text, labels jsonb, metadata jsonb, client text,"
        "   replica_id text, locality jsonb, protocol text, stream_gen bigint, i int)),"
        " n AS ("
        " INSERT INTO proxy_nodes AS n (node_id, group_name, namespace, labels, metadata,"
        "   client, replica_id, locality, protocol, connected, connected_at, last_seen,"
        "   stream_gen)"
        " SELECT node_id, group_name, namespace, labels, metadata, client, replica_id,"
        "   locality, protocol, true, now(), now(), stream_gen FROM x ORDER BY node_id"
        " ON CONFLICT (node_id) DO UPDATE SET group_name = EXCLUDED.group_name,"
        "   namespace = EXCLUDED.namespace, labels = EXCLUDED.labels,"
        "   metadata = EXCLUDED.metadata, client = EXCLUDED.client,"
        "   replica_id = EXCLUDED.replica_id, locality = EXCLUDED.locality,"
        "   protocol = EXCLUDED.protocol, connected = true, connected_at = now(),"
        "   last_seen = now(), disconnect_reason = NULL, stale_since = NULL,"
        "   stream_gen = EXCLUDED.stream_gen"
        "   WHERE n.stream_gen <= EXCLUDED.stream_gen OR NOT n.connected"
        " RETURNING node_id),"
        " s AS (INSERT INTO node_status (node_id) SELECT node_id FROM n"
        "   ORDER BY node_id ON CONFLICT (node_id) DO NOTHING)"
        " SELECT x.i FROM n JOIN x ON x.node_id = n.node_id",
        1, p, &r, err);
    for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
        size_t idx = 0;
        if ((rc = batch_index(r, row, n, &idx, err)) == 0 && applied)
            applied[idx] = true;
    }
    sx_arena_destroy(a);
    return rc;
}

int node_repo_mark_disconnected(pg_conn *c, const char *node_id, const char *replica_id,
                                const char *reason, bool *changed, sx_err *err)
{
    return node_repo_mark_disconnected_ex(c, node_id, replica_id, reason, NULL, changed, NULL, err);
}

/* Copies the group in column col of row 0 of r when the caller asked for it (a and
 * group given). The *_ex writers clear their results by hand rather than hand them to
 * a: the status writer calls them for every node of a batch with the batch's arena,
 * which would otherwise keep one result per node. */
static void set_group(sx_arena *a, const PGresult *r, int col, char **group)
{
    if (group && a)
        *group = repo_str(a, r, 0, col);
}

int node_repo_mark_disconnected_ex(pg_conn *c, const char *node_id, const char *replica_id,
                                   const char *reason, sx_arena *a, bool *changed, char **group,
                                   sx_err *err)
{
    return node_repo_end_stream(c, node_id, replica_id, 0, reason, a, changed, group, err);
}

int node_repo_end_stream(pg_conn *c, const char *node_id, const char *replica_id,
                         long long stream_gen, const char *reason, sx_arena *a, bool *changed,
                         char **group, sx_err *err)
{
    node_stream_end e = {.node_id = node_id, .stream_gen = stream_gen, .reason = reason};
    int rc = node_repo_end_streams(c, replica_id, &e, 1, a, err);
    if (changed)
        *changed = rc == 0 && e.changed;
    if (group)
        *group = rc == 0 && a ? e.group : NULL;
    return rc;
}

int node_repo_end_streams(pg_conn *c, const char *replica_id, node_stream_end *ends, size_t n,
                          sx_arena *a, sx_err *err)
{
    for (size_t i = 0; i < n; i++) {
        ends[i].changed = false;
        ends[i].group = NULL;
    }
    int rc;
    if ((rc = check_str("replica_id", replica_id, GROUP_MAX_LEN, err)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_str("node_id", ends[i].node_id, NODE_ID_MAX_LEN, err)) != 0)
            return rc;
    if (n == 0)
        return 0;
    sx_arena *tmp = sx_arena_create();
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            arr, json_pack("{s:s,s:I,s:s?,s:I}", "node_id", ends[i].node_id, "gen",
                           (json_int_t)(ends[i].stream_gen > 0 ? ends[i].stream_gen : 0), "reason",
                           ends[i].reason, "i", (json_int_t)i));
    const char *p[] = {repo_json_param(tmp, arr), replica_id};
    json_decref(arr);
    PGresult *r = NULL;
    /* The rows are locked first, in node id order (concurrent batches cannot deadlock),
     * and the conditions checked again on what was locked. */
    rc = repo_query(c, tmp,
                    "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb)"
                    "   AS x(node_id text, gen bigint, reason text, i int)),"
                    " o AS (SELECT n.node_id FROM proxy_nodes n JOIN x ON x.node_id = n.node_id"
                    "   WHERE n.replica_id = $2 AND n.connected"
                    "     AND (x.gen = 0 OR n.stream_gen = x.gen)"
                    "   ORDER BY n.node_id FOR UPDATE OF n)"
                    " UPDATE proxy_nodes n SET connected = false, disconnected_at = now(),"
                    "   last_seen = now(), disconnect_reason = x.reason, stale_since = NULL"
                    " FROM o JOIN x ON x.node_id = o.node_id"
                    " WHERE n.node_id = o.node_id AND n.replica_id = $2 AND n.connected"
                    "   AND (x.gen = 0 OR n.stream_gen = x.gen)"
                    " RETURNING x.i, n.group_name",
                    2, p, &r, err);
    for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
        size_t idx = 0;
        if ((rc = batch_index(r, row, n, &idx, err)) != 0)
            break;
        ends[idx].changed = true;
        if (a)
            ends[idx].group = repo_str(a, r, row, 1);
    }
    sx_arena_destroy(tmp);
    return rc;
}

int node_repo_disconnect_replica(pg_conn *c, const char *replica_id, int *count, sx_err *err)
{
    if (count)
        *count = 0;
    int rc = check_str("replica_id", replica_id, GROUP_MAX_LEN, err);
    if (rc)
        return rc;
    const char *p[] = {replica_id};
    return repo_exec_count(c,
                           "UPDATE proxy_nodes SET connected = false, disconnected_at = now()"
                           " WHERE replica_id = $1 AND connected",
                           1, p, count, err);
}

int node_repo_touch(pg_conn *c, const char *const *node_ids, size_t n, int *updated, sx_err *err)
{
    int rc = check_ids(node_ids, n, updated, err);
    if (rc || n == 0)
        return rc;
    sx_arena *a = sx_arena_create();
    const char *p[] = {repo_strv_param(a, node_ids, n)};
    rc = repo_exec_count(c,
                         /* Activity proves the stream alive: a node the sweep took for
                          * lost (its replica silent) is connected again. */
                         "UPDATE proxy_nodes SET last_seen = now(), stale_since = NULL,"
                         "   connected = connected OR disconnect_reason = 'no_activity',"
                         "   disconnect_reason = CASE WHEN disconnect_reason = 'no_activity'"
                         "     THEN NULL ELSE disconnect_reason END"
                         " WHERE node_id IN (SELECT jsonb_array_elements_text($1::jsonb))",
                         1, p, updated, err);
    sx_arena_destroy(a);
    return rc;
}

/* Checks node_id and writes version into v as the text of a statement parameter. */
static int check_node_version(const char *node_id, long long version, char v[24], sx_err *err)
{
    snprintf(v, 24, "%lld", version);
    return check_str("node_id", node_id, NODE_ID_MAX_LEN, err);
}

static int update_status(pg_conn *c, const char *sql, int n, const char *const *p,
                         const char *node_id, sx_err *err)
{
    int rows = 0;
    int rc = repo_exec_count(c, sql, n, p, &rows, err);
    if (rc == 0 && rows == 0)
        return sx_err_set(err, SX_ENOTFOUND, "node %s does not exist", node_id);
    return rc;
}

int node_repo_record_report(pg_conn *c, const char *node_id, const node_report *r, sx_err *err)
{
    int rc = check_str("node_id", node_id, NODE_ID_MAX_LEN, err);
    if (rc)
        return rc;
    const char *p[] = {node_id, r->ready ? "true" : "false", r->version ? r->version : "",
                       r->message ? r->message : "", r->observed_at};
    return update_status(c,
                         "UPDATE node_status SET report_ready = $2::boolean, report_version = $3,"
                         "   report_message = $4,"
                         "   reported_at = COALESCE($5::timestamptz, now()), updated_at = now()"
                         " WHERE node_id = $1",
                         5, p, node_id, err);
}

int node_repo_record_sent(pg_conn *c, const char *node_id, long long version, sx_err *err)
{
    char v[24];
    int rc = check_node_version(node_id, version, v, err);
    if (rc)
        return rc;
    const char *p[] = {node_id, v};
    return update_status(c,
                         "UPDATE node_status SET sent_snapshot_version = $2::bigint,"
                         "   sent_at = now(), updated_at = now()"
                         " WHERE node_id = $1",
                         2, p, node_id, err);
}

int node_repo_record_ack(pg_conn *c, const char *node_id, long long version, sx_err *err)
{
    return node_repo_record_ack_ex(c, node_id, version, NULL, NULL, NULL, err);
}

int node_repo_record_ack_ex(pg_conn *c, const char *node_id, long long version, sx_arena *a,
                            long long *previous, char **group, sx_err *err)
{
    if (previous)
        *previous = 0;
    if (group)
        *group = NULL;
    char v[24];
    int rc = check_node_version(node_id, version, v, err);
    if (rc)
        return rc;
    const char *p[] = {node_id, v};
    PGresult *r;
    /* The old value comes from a locked read of the same row, since RETURNING sees only
     * the new one. */
    rc = pg_exec(c,
                 "WITH o AS (SELECT node_id, acked_snapshot_version AS old FROM node_status"
                 "   WHERE node_id = $1 FOR UPDATE)"
                 " UPDATE node_status s SET acked_snapshot_version = $2::bigint,"
                 "   acked_at = now(), updated_at = now()"
                 " FROM o WHERE s.node_id = o.node_id"
                 " RETURNING o.old, (SELECT group_name FROM proxy_nodes WHERE node_id = $1)",
                 2, p, &r, err);
    if (rc)
        return rc;
    long long old = 0;
    if (PQntuples(r) == 0)
        rc = sx_err_set(err, SX_ENOTFOUND, "node %s does not exist", node_id);
    else if ((rc = repo_i64(r, 0, 0, 0, &old, err)) == 0)
        set_group(a, r, 1, group);
    if (rc == 0 && previous)
        *previous = old;
    PQclear(r);
    return rc;
}

/* The JSON array [{"node_id": ..., "version": ..., "i": index}, ...] of a batch, in a;
 * NULL after a node id that fails its checks (err set). */
static char *versions_param(sx_arena *a, const char *const *ids, size_t id_stride,
                            const long long *versions, size_t v_stride, size_t n, sx_err *err)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const char *id = *(const char *const *)((const char *)ids + i * id_stride);
        long long v = *(const long long *)((const char *)versions + i * v_stride);
        char field[32];
        snprintf(field, sizeof(field), "node_ids[%zu]", i);
        if (check_str(field, id, NODE_ID_MAX_LEN, err) != 0) {
            json_decref(arr);
            return NULL;
        }
        json_array_append_new(arr, json_pack("{s:s,s:I,s:I}", "node_id", id, "version",
                                             (json_int_t)v, "i", (json_int_t)i));
    }
    char *out = repo_json_param(a, arr);
    json_decref(arr);
    return out;
}

int node_repo_record_acks(pg_conn *c, node_ack *acks, size_t n, sx_arena *a, sx_err *err)
{
    for (size_t i = 0; i < n; i++) {
        acks[i].found = false;
        acks[i].previous = 0;
        acks[i].group = NULL;
    }
    if (n == 0)
        return 0;
    sx_arena *tmp = sx_arena_create();
    const char *p[] = {versions_param(tmp, &acks[0].node_id, sizeof(node_ack), &acks[0].version,
                                      sizeof(node_ack), n, err)};
    PGresult *r = NULL;
    int rc = p[0] == NULL ? SX_EINVAL
                          : repo_query(c, tmp,
                                       /* The old values come from a locked read of the same
                                        * rows (RETURNING sees only the new ones), taken in
                                        * node id order so that concurrent batches cannot
                                        * deadlock. */
                                       "WITH i AS (SELECT * FROM jsonb_to_recordset($1::jsonb)"
                                       "   AS x(node_id text, version bigint, i int)),"
                                       " o AS (SELECT s.node_id, s.acked_snapshot_version AS old"
                                       "   FROM node_status s"
                                       "   WHERE s.node_id IN (SELECT node_id FROM i)"
                                       "   ORDER BY s.node_id FOR UPDATE),"
                                       " u AS (UPDATE node_status s"
                                       "   SET acked_snapshot_version = i.version,"
                                       "   acked_at = now(), updated_at = now()"
                                       "   FROM o JOIN i ON i.node_id = o.node_id"
                                       "   WHERE s.node_id = o.node_id"
                                       "   RETURNING i.i, o.old, s.node_id)"
                                       " SELECT u.i, u.old, n.group_name FROM u"
                                       " LEFT JOIN proxy_nodes n ON n.node_id = u.node_id",
                                       1, p, &r, err);
    for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
        long long idx = 0, old = 0;
        if ((rc = repo_i64(r, row, 0, 0, &idx, err)) != 0 ||
            (rc = repo_i64(r, row, 1, 0, &old, err)) != 0)
            break;
        if (idx < 0 || (size_t)idx >= n) {
            rc = sx_err_set(err, SX_EINTERNAL, "ACK batch row %lld out of range", idx);
            break;
        }
        acks[idx].found = true;
        acks[idx].previous = old;
        acks[idx].group = repo_str(a, r, row, 2);
    }
    sx_arena_destroy(tmp);
    return rc;
}

int node_repo_record_sents(pg_conn *c, const char *const *node_ids, const long long *versions,
                           size_t n, sx_err *err)
{
    if (n == 0)
        return 0;
    sx_arena *tmp = sx_arena_create();
    const char *p[] = {
        versions_param(tmp, node_ids, sizeof(*node_ids), versions, sizeof(*versions), n, err),
    };
    int rc = p[0] == NULL
                 ? SX_EINVAL
                 : repo_exec_count(c,
                                   "UPDATE node_status s SET sent_snapshot_version = x.version,"
                                   "   sent_at = now(), updated_at = now()"
                                   " FROM jsonb_to_recordset($1::jsonb)"
                                   "   AS x(node_id text, version bigint, i int)"
                                   " WHERE s.node_id = x.node_id",
                                   1, p, NULL, err);
    sx_arena_destroy(tmp);
    return rc;
}

int node_repo_record_nack(pg_conn *c, const char *node_id, long long version, const char *error,
                          sx_err *err)
{
    return node_repo_record_nack_ex(c, node_id, version, error, NULL, NULL, err);
}

int node_repo_record_nack_ex(pg_conn *c, const char *node_id, long long version, const char *error,
                             sx_arena *a, char **group, sx_err *err)
{
    if (group)
        *group = NULL;
    char v[24], max[16];
    int rc = check_node_version(node_id, version, v, err);
    if (rc)
        return rc;
    snprintf(max, sizeof(max), "%d", NACK_ERROR_MAX);
    const char *p[] = {node_id, v, error ? error : "", max};
    PGresult *r;
    rc = pg_exec(c,
                 "UPDATE node_status SET last_nack_version = $2::bigint,"
                 "   last_nack_error = left($3, $4::int), last_nack_at = now(),"
                 "   nack_count = nack_count + 1, updated_at = now()"
                 " WHERE node_id = $1"
                 " RETURNING (SELECT group_name FROM proxy_nodes WHERE node_id = $1)",
                 4, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0)
        rc = sx_err_set(err, SX_ENOTFOUND, "node %s does not exist", node_id);
    else
        set_group(a, r, 0, group);
    PQclear(r);
    return rc;
}

static int read_stale(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    (void)err;
    node_stale *v = item;
    REPO_STRS(a, r, row, 0, &v->node_id, &v->group, &v->last_seen);
    return 0;
}

/* Runs one of the sweep's marking statements ($1 = the idle threshold in ms, $2 = the
 * batch size) and reads the nodes it marked. */
static int mark_idle(pg_conn *c, const char *sql, long long idle_ms, int limit, sx_arena *a,
                     node_stale_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *p[] = {repo_i64_param(a, idle_ms), repo_i64_param(a, repo_limit(limit))};
    return repo_query_rows(c, a, sql, 2, p, sizeof(node_stale), read_stale, &out->items,
                           &out->count, err);
}

/* SKIP LOCKED: a node another replica is marking (or a flush is touching) right now is
 * left to that transaction; the outer conditions are checked again on the locked row,
 * so a node is marked, and reported, once. */
#define IDLE_NODES(cond)                                                                           \
    " WHERE n.node_id IN (SELECT node_id FROM proxy_nodes"                                         \
    "     WHERE connected " cond " AND last_seen < now() - $1::bigint * interval '1 millisecond'"  \
    "     ORDER BY node_id LIMIT $2::int FOR UPDATE SKIP LOCKED)"                                  \
    "   AND n.connected " cond " AND n.last_seen < now() - $1::bigint * interval '1 millisecond'"  \
    " RETURNING n.node_id, n.group_name, " REPO_TS("n.last_seen")

int node_repo_mark_stale(pg_conn *c, long long stale_after_ms, int limit, sx_arena *a,
                         node_stale_list *out, sx_err *err)
{
    return mark_idle(
        c, "UPDATE proxy_nodes n SET stale_since = now()" IDLE_NODES("AND stale_since IS NULL"),
        stale_after_ms > 0 ? stale_after_ms : DEFAULT_STALE_MS, limit, a, out, err);
}

int node_repo_mark_lost(pg_conn *c, long long disconnected_after_ms, int limit, sx_arena *a,
                        node_stale_list *out, sx_err *err)
{
    return mark_idle(
        c,
        "UPDATE proxy_nodes n SET connected = false, disconnected_at = now(),"
        "   disconnect_reason = 'no_activity'" IDLE_NODES("AND stale_since IS NOT NULL"),
        disconnected_after_ms > 0 ? disconnected_after_ms : DEFAULT_DISCONNECTED_MS, limit, a, out,
        err);
}

int node_repo_assign(pg_conn *c, const char *const *node_ids, size_t n, long long version,
                     const char *deployment_id, int *updated, sx_err *err)
{
    int rc = check_ids(node_ids, n, updated, err);
    if (rc || n == 0)
        return rc;
    if (deployment_id && !repo_is_uuid(deployment_id))
        return sx_err_set(err, SX_EINVAL, "invalid deployment id \"%s\"", deployment_id);
    if (version < 0)
        return sx_err_set(err, SX_EINVAL, "snapshot version must not be negative");
    sx_arena *a = sx_arena_create();
    const char *p[] = {
        repo_strv_param(a, node_ids, n),
        version > 0 ? repo_i64_param(a, version) : NULL,
        deployment_id,
    };
    rc = repo_exec_count(c,
                         "UPDATE node_status SET desired_snapshot_version = $2::bigint,"
                         "   deployment_id = $3::uuid, updated_at = now()"
                         " WHERE node_id IN (SELECT jsonb_array_elements_text($1::jsonb))",
                         3, p, updated, err);
    sx_arena_destroy(a);
    return rc;
}

static int read_node(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    node_record *o = item;
    memset(o, 0, sizeof(*o));
    long long nacks = 0;
    int rc;
    REPO_STRS(a, r, row, 0, &o->node_id, &o->group, &o->ns);
    if ((rc = repo_json(a, r, row, 3, &o->labels, err)) ||
        (rc = repo_json(a, r, row, 4, &o->metadata, err)))
        return rc;
    o->client = repo_str(a, r, row, 5);
    o->replica_id = repo_str(a, r, row, 6);
    o->connected = repo_bool(r, row, 7);
    o->first_seen = repo_str(a, r, row, 8);
    o->last_seen = repo_str(a, r, row, 9);
    if ((rc = repo_i64(r, row, 10, 0, &o->desired_version, err)) ||
        (rc = repo_i64(r, row, 12, 0, &o->acked_version, err)) ||
        (rc = repo_i64(r, row, 14, 0, &o->last_nack_version, err)) ||
        (rc = repo_i64(r, row, 17, 0, &nacks, err)))
        return rc;
    o->deployment_id = repo_str(a, r, row, 11);
    o->acked_at = repo_str(a, r, row, 13);
    o->last_nack_error = repo_str(a, r, row, 15);
    o->last_nack_at = repo_str(a, r, row, 16);
    o->nack_count = (int)nacks;
    if ((rc = repo_json(a, r, row, 18, &o->locality, err)) ||
        (rc = repo_i64(r, row, 21, 0, &o->sent_version, err)))
        return rc;
    o->protocol = repo_str(a, r, row, 19);
    o->disconnect_reason = repo_str(a, r, row, 20);
    o->sent_at = repo_str(a, r, row, 22);
    o->reported = !PQgetisnull(r, row, 23);
    o->report_ready = repo_bool(r, row, 23);
    REPO_STRS(a, r, row, 24, &o->report_version, &o->report_message, &o->reported_at);
    const char *st = PQgetvalue(r, row, 27);
    o->state = states[2];
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        if (strcmp(st, states[i]) == 0)
            o->state = states[i];
    o->nacking = repo_bool(r, row, 28);
    return 0;
}

int node_repo_get(pg_conn *c, const char *node_id, sx_arena *a, node_record **out, sx_err *err)
{
    return node_repo_get_with(c, node_id, NULL, a, out, err);
}

int node_repo_get_with(pg_conn *c, const char *node_id, const node_thresholds *t, sx_arena *a,
                       node_record **out, sx_err *err)
{
    *out = NULL;
    int rc = check_str("node_id", node_id, NODE_ID_MAX_LEN, err);
    if (rc)
        return rc;
    const char *p[] = {node_id, NULL, NULL};
    threshold_params(a, t, &p[1], &p[2]);
    rc =
        repo_query_one(c, a,
                       "SELECT " NODE_COLS HEALTH_COLS(
                           "$2", "$3") " FROM proxy_nodes n LEFT JOIN node_status s USING (node_id)"
                                       " WHERE n.node_id = $1",
                       3, p, sizeof(node_record), read_node, out, err);
    if (rc == 0 && *out == NULL)
        rc = sx_err_set(err, SX_ENOTFOUND, "node %s does not exist", node_id);
    return rc;
}

/* By node id: $3 the id to start after, $4 the limit. */
static const repo_page_spec node_page = {"s", {0}, 3, 4, sizeof(node_record), read_node};

int node_repo_list(pg_conn *c, const node_filter *f, sx_arena *a, node_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    node_filter all = {.connected = -1};
    if (f == NULL)
        f = &all;
    if (f->state && !node_repo_state_valid(f->state))
        return sx_err_set(err, SX_EINVAL,
                          "state must be connected, stale or disconnected, got \"%s\"", f->state);
    const char *p[] = {
        f->group, f->connected < 0 ? NULL : (f->connected ? "true" : "false"),
        NULL,     NULL,
        NULL,     NULL,
        f->state,
    };
    threshold_params(a, &f->thresholds, &p[4], &p[5]);
    return repo_list_query(
        c, a, &node_page, f->limit, f->cursor,
        "SELECT " NODE_COLS HEALTH_COLS(
            "$5", "$6") " FROM proxy_nodes n"
                        " LEFT JOIN node_status s USING (node_id)"
                        " WHERE ($1::text IS NULL OR n.group_name = $1)"
                        "   AND ($2::boolean IS NULL OR n.connected = $2::boolean)"
                        "   AND ($3::text IS NULL OR n.node_id > $3)"
                        "   AND ($7::text IS NULL OR " STATE_EXPR(
                            "$5", "$6") " = $7)"
                                        " ORDER BY n.node_id LIMIT $4::int",
        7, p, REPO_LIST_REF(out), err);
}

/* Per-group counts of the groups in groups_json (a JSON array; NULL = every group),
 * one row per group that has nodes: group_name then the five counts. */
static int count_by_group(pg_conn *c, const node_thresholds *t, const char *groups_json,
                          sx_arena *a, PGresult **out, sx_err *err)
{
    const char *p[] = {groups_json, NULL, NULL};
    threshold_params(a, t, &p[1], &p[2]);
    return repo_query(
        c, a,
        "SELECT group_name,"
        "   count(*) FILTER (WHERE st = 'connected'),"
        "   count(*) FILTER (WHERE st = 'stale'),"
        "   count(*) FILTER (WHERE st = 'disconnected'),"
        "   count(*) FILTER (WHERE nk), count(*) FILTER (WHERE rs)"
        " FROM (SELECT n.group_name, " STATE_EXPR(
            "$2", "$3") " AS st,"
                        "   " NACKING_EXPR " AS nk, " RESPONDED_EXPR " AS rs"
                        "   FROM proxy_nodes n LEFT JOIN node_status s USING (node_id)"
                        "   WHERE $1::jsonb IS NULL"
                        "     OR n.group_name IN (SELECT jsonb_array_elements_text($1::jsonb))) x"
                        " GROUP BY group_name",
        3, p, out, err);
}

static int read_counts(const PGresult *r, int row, node_state_counts *o, sx_err *err)
{
    long long v[5];
    for (int i = 0; i < 5; i++) {
        int rc = repo_i64(r, row, i + 1, 0, &v[i], err);
        if (rc)
            return rc;
    }
    o->connected += v[0];
    o->stale += v[1];
    o->disconnected += v[2];
    o->nacking += v[3];
    o->responded += v[4];
    return 0;
}

int node_repo_count_states(pg_conn *c, const node_thresholds *t, node_state_counts *out,
                           sx_err *err)
{
    memset(out, 0, sizeof(*out));
    sx_arena *a = sx_arena_create();
    PGresult *r;
    int rc = count_by_group(c, t, NULL, a, &r, err);
    for (int i = 0; rc == 0 && i < PQntuples(r); i++)
        rc = read_counts(r, i, out, err);
    sx_arena_destroy(a);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

int node_repo_count_groups(pg_conn *c, const node_thresholds *t, const char *const *groups,
                           size_t n, node_state_counts *out, sx_err *err)
{
    if (n == 0)
        return 0;
    memset(out, 0, n * sizeof(*out));
    sx_arena *a = sx_arena_create();
    PGresult *r;
    int rc = count_by_group(c, t, repo_strv_param(a, groups, n), a, &r, err);
    for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
        const char *g = PQgetvalue(r, row, 0);
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (strcmp(groups[i], g) == 0)
                rc = read_counts(r, row, &out[i], err);
    }
    sx_arena_destroy(a);
    if (rc)
        memset(out, 0, n * sizeof(*out));
    return rc;
}

int node_repo_count_versions(pg_conn *c, const node_thresholds *t, sx_arena *a,
                             node_version_count **out, size_t *n, sx_err *err)
{
    *out = NULL;
    *n = 0;
    const char *p[2];
    threshold_params(a, t, &p[0], &p[1]);
    PGresult *r;
    int rc = repo_query(c, a,
                        "SELECT n.group_name,"
                        "   coalesce(s.acked_snapshot_version::text, 'none') AS v, count(*)"
                        " FROM proxy_nodes n LEFT JOIN node_status s USING (node_id)"
                        " WHERE " STATE_EXPR("$1", "$2") " <> 'disconnected'"
                                                         " GROUP BY 1, 2 ORDER BY 1, 2",
                        2, p, &r, err);
    if (rc)
        return rc;
    int rows = PQntuples(r);
    node_version_count *v = sx_arena_alloc(a, (size_t)(rows ? rows : 1) * sizeof *v);
    for (int i = 0; i < rows; i++) {
        v[i].group = sx_arena_strdup(a, PQgetvalue(r, i, 0));
        v[i].version = sx_arena_strdup(a, PQgetvalue(r, i, 1));
        if ((rc = repo_i64(r, i, 2, 0, &v[i].count, err)) != 0)
            return rc;
    }
    *out = v;
    *n = (size_t)rows;
    return 0;
}
