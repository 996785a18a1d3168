/*
 * repo_fleet.c — the fleet at a glance (see repo_fleet.h).
 *
 * Design: each read is one statement that aggregates in PostgreSQL and answers one
 * jsonb document, so the size of the answer grows with the number of groups, replicas
 * and minutes, not with the number of proxies. The per-minute reads take the window's
 * events once through the events_at index, find each proxy's last event before the end
 * of each minute (DISTINCT ON), and count; the present minute uses the live state of
 * proxy_nodes / node_status with the same SQL as the proxy list. A stream's replica is
 * the writer of the proxy's last connect, ACK or NACK: the stale and disconnect events
 * of a silent proxy are written by the leader's sweep, wherever the stream was.
 */
#include "storage/repo_fleet.h"

#include <string.h>

#include "storage/repo_common.h"

#define GROUP_MAX_LEN      253
#define DEFAULT_STALE_MS   120000LL
#define DEFAULT_DISCONN_MS 300000LL

static int check_group(const char *group, sx_err *err)
{
    if (group && (group[0] == '\0' || strlen(group) > GROUP_MAX_LEN))
        return sx_err_set(err, SX_EINVAL, "group must be 1 to %d bytes", GROUP_MAX_LEN);
    return 0;
}

static int check_minutes(int minutes, sx_err *err)
{
    if (minutes < 1 || minutes > FLEET_REPO_MINUTES_MAX)
        return sx_err_set(err, SX_EINVAL, "minutes must be between 1 and %d",
                          FLEET_REPO_MINUTES_MAX);
    return 0;
}

/* Runs sql, whose one row and column is a jsonb document, into *out (owned by a). */
static int query_doc(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                     json_t **out, sx_err *err)
{
    PGresult *r = NULL;
    *out = NULL;
    int rc = repo_query(c, a, sql, n, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) != 1)
        return sx_err_set(err, SX_EINTERNAL, "fleet query returned %d rows", PQntuples(r));
    return repo_json(a, r, 0, 0, out, err);
}

int fleet_repo_group_known(pg_conn *c, const char *group, bool *known, sx_err *err)
{
    *known = false;
    int rc = check_group(group, err);
    if (rc)
        return rc;
    if (group == NULL)
        return sx_err_set(err, SX_EINVAL, "group is required");
    const char *p[] = {group};
    long long v = 0;
    rc = repo_query_i64(c,
                        "SELECT (EXISTS (SELECT 1 FROM proxy_nodes WHERE group_name = $1)"
                        " OR EXISTS (SELECT 1 FROM snapshots WHERE group_name = $1)"
                        " OR EXISTS (SELECT 1 FROM proxy_groups WHERE name = $1))::int",
                        1, p, &v, err);
    *known = rc == 0 && v == 1;
    return rc;
}

static void threshold_params(sx_arena *a, const node_thresholds *t, const char **stale,
                             const char **disc)
{
    *stale = repo_i64_param(a, t && t->stale_after_ms > 0 ? t->stale_after_ms : DEFAULT_STALE_MS);
    *disc = repo_i64_param(a, t && t->disconnected_after_ms > 0 ? t->disconnected_after_ms
                                                                : DEFAULT_DISCONN_MS);
}

/* The counts object of rows of the CTE nodes (st, nack, av, cur). */
// clang-format off
#define COUNTS_SQL                                                                        \
    "jsonb_build_object('total', count(*),"                                               \
    " 'connected', count(*) FILTER (WHERE st = 'connected'),"                             \
    " 'stale', count(*) FILTER (WHERE st = 'stale'),"                                     \
    " 'disconnected', count(*) FILTER (WHERE st = 'disconnected'),"                       \
    " 'nacking', count(*) FILTER (WHERE nack AND st <> 'disconnected'),"                  \
    " 'current', count(*) FILTER (WHERE av = cur AND st <> 'disconnected'),"              \
    " 'ahead', count(*) FILTER (WHERE av > coalesce(cur, 0) AND st <> 'disconnected'),"   \
    " 'behind', count(*) FILTER (WHERE (av IS NULL OR av < cur) AND st <> 'disconnected'))"

/* $1 group or NULL, $2 stale_after ms, $3 disconnected_after ms. */
#define TOPOLOGY_SQL                                                                      \
    "WITH latest AS (SELECT name AS group_name, nullif(current_snapshot_version, 0) AS v,"\
    "   latest_snapshot_version AS lv FROM proxy_groups"                                  \
    "   WHERE latest_snapshot_version > 0 AND ($1::text IS NULL OR name = $1)),"          \
    " nodes AS (SELECT n.group_name AS g, coalesce(n.replica_id, '') AS r,"               \
    "   " NODE_REPO_STATE_SQL("$2", "$3") " AS st, coalesce(" NODE_REPO_NACKING_SQL       \
    "   , false) AS nack, s.acked_snapshot_version AS av, l.v AS cur"                     \
    "   FROM proxy_nodes n LEFT JOIN node_status s ON s.node_id = n.node_id"              \
    "   LEFT JOIN latest l ON l.group_name = n.group_name"                                \
    "   WHERE ($1::text IS NULL OR n.group_name = $1)),"                                  \
    " grp AS (SELECT g FROM nodes UNION SELECT group_name FROM latest)"                   \
    " SELECT coalesce(jsonb_agg(jsonb_build_object("                                      \
    "   'group', grp.g,"                                                                  \
    "   'current_version', (SELECT v FROM latest WHERE latest.group_name = grp.g),"       \
    "   'latest_version', (SELECT lv FROM latest WHERE latest.group_name = grp.g),"       \
    "   'counts', (SELECT " COUNTS_SQL " FROM nodes WHERE nodes.g = grp.g),"              \
    "   'versions', (SELECT coalesce(jsonb_agg(jsonb_build_object('version', av,"         \
    "       'count', k) ORDER BY av NULLS FIRST), '[]')"                                  \
    "     FROM (SELECT av, count(*) AS k FROM nodes"                                      \
    "           WHERE nodes.g = grp.g AND st <> 'disconnected' GROUP BY av) vv),"         \
    "   'replicas', (SELECT coalesce(jsonb_agg(jsonb_build_object('replica_id', r,"       \
    "       'counts', cnt) ORDER BY r), '[]')"                                            \
    "     FROM (SELECT r, " COUNTS_SQL " AS cnt FROM nodes WHERE nodes.g = grp.g"         \
    "           GROUP BY r) rr)"                                                          \
    " ) ORDER BY grp.g), '[]') FROM grp"
// clang-format on

int fleet_repo_topology(pg_conn *c, const char *group, const node_thresholds *t, sx_arena *a,
                        json_t **out, sx_err *err)
{
    *out = NULL;
    int rc = check_group(group, err);
    if (rc)
        return rc;
    const char *p[3] = {group, NULL, NULL};
    threshold_params(a, t, &p[1], &p[2]);
    return query_doc(c, a, TOPOLOGY_SQL, 3, p, out, err);
}

/* The minutes of the window ($1 of them, the last the present one) as b (i, t0, t1),
 * its start as w, and the window's events of proxies as ev (of group $2 when given). */
// clang-format off
#define WINDOW_SQL                                                                        \
    "WITH b AS (SELECT i, t0, t0 + interval '1 minute' AS t1 FROM ("                      \
    "   SELECT i, date_trunc('minute', now()) - ($1::int - 1 - i) * interval '1 minute'"  \
    "   AS t0 FROM generate_series(0, $1::int - 1) AS i) m),"                             \
    " w AS (SELECT min(t0) AS start FROM b),"

#define HEALTH_SQL                                                                        \
    WINDOW_SQL                                                                            \
    " ev AS (SELECT e.id, e.at, e.type, e.node_id, e.replica_id FROM events e, w"         \
    "   WHERE e.at >= w.start AND e.node_id IS NOT NULL"                                  \
    "   AND e.type IN ('proxy_connected', 'proxy_disconnected', 'proxy_stale',"           \
    "                  'config_applied', 'config_rejected')"                              \
    "   AND ($2::text IS NULL OR e.group_name = $2)),"                                    \
    " life AS (SELECT DISTINCT ON (ev.node_id, b.i) ev.node_id, b.i, ev.type"             \
    "   FROM b JOIN ev ON ev.at < b.t1"                                                   \
    "   ORDER BY ev.node_id, b.i, ev.at DESC, ev.id DESC),"                               \
    " holder AS (SELECT DISTINCT ON (ev.node_id, b.i) ev.node_id, b.i, ev.replica_id"     \
    "   FROM b JOIN ev ON ev.at < b.t1"                                                   \
    "   AND ev.type IN ('proxy_connected', 'config_applied', 'config_rejected')"          \
    "   ORDER BY ev.node_id, b.i, ev.at DESC, ev.id DESC),"                               \
    " resp AS (SELECT DISTINCT ON (ev.node_id, b.i) ev.node_id, b.i, ev.type"             \
    "   FROM b JOIN ev ON ev.at < b.t1"                                                   \
    "   AND ev.type IN ('config_applied', 'config_rejected')"                             \
    "   ORDER BY ev.node_id, b.i, ev.at DESC, ev.id DESC),"                               \
    " nodes AS (SELECT n.node_id, n.group_name, coalesce(n.replica_id, '') AS replica_id," \
    "   n.first_seen, n.connected_at, n.disconnected_at,"                                 \
    "   " NODE_REPO_STATE_SQL("$3", "$4") " AS live_state,"                              \
    "   coalesce(" NODE_REPO_NACKING_SQL ", false) AS live_nack"                          \
    "   FROM proxy_nodes n LEFT JOIN node_status s ON s.node_id = n.node_id, w"           \
    "   WHERE ($2::text IS NULL OR n.group_name = $2)"                                    \
    "   AND (n.connected OR n.last_seen >= w.start)),"                                    \
    " cells AS (SELECT b.i, n.group_name AS g,"                                           \
    "   coalesce(nullif(h.replica_id, ''), n.replica_id) AS r,"                           \
    "   CASE WHEN b.i = $1::int - 1 THEN n.live_state"                                    \
    "     WHEN n.first_seen >= b.t1 THEN 'absent'"                                        \
    "     WHEN l.type IS NULL THEN CASE WHEN n.connected_at < b.t1"                       \
    "       AND (n.disconnected_at IS NULL OR n.disconnected_at < n.connected_at"         \
    "            OR n.disconnected_at >= b.t1)"                                           \
    "       THEN 'connected' ELSE 'disconnected' END"                                     \
    "     WHEN l.type = 'proxy_disconnected' THEN 'disconnected'"                         \
    "     WHEN l.type = 'proxy_stale' THEN 'stale' ELSE 'connected' END AS st,"           \
    "   CASE WHEN b.i = $1::int - 1 THEN n.live_nack"                                     \
    "     ELSE coalesce(rp.type = 'config_rejected', false) END AS nack"                  \
    "   FROM b CROSS JOIN nodes n"                                                        \
    "   LEFT JOIN life l ON l.node_id = n.node_id AND l.i = b.i"                          \
    "   LEFT JOIN holder h ON h.node_id = n.node_id AND h.i = b.i"                        \
    "   LEFT JOIN resp rp ON rp.node_id = n.node_id AND rp.i = b.i),"                     \
    " gcells AS (SELECT g, i, jsonb_build_object("                                        \
    "   'connected', count(*) FILTER (WHERE st = 'connected'),"                           \
    "   'stale', count(*) FILTER (WHERE st = 'stale'),"                                   \
    "   'disconnected', count(*) FILTER (WHERE st = 'disconnected'),"                     \
    "   'nacking', count(*) FILTER (WHERE nack AND st IN ('connected', 'stale'))) AS o"   \
    "   FROM cells GROUP BY g, i),"                                                       \
    " reps AS (SELECT DISTINCT r FROM cells WHERE st IN ('connected', 'stale')),"         \
    " rcells AS (SELECT reps.r, b.i, count(c.g) AS k FROM reps CROSS JOIN b"              \
    "   LEFT JOIN cells c ON c.r = reps.r AND c.i = b.i AND c.st IN ('connected', 'stale')" \
    "   GROUP BY reps.r, b.i)"                                                            \
    " SELECT jsonb_build_object("                                                         \
    "   'start', (SELECT " REPO_TS("start") " FROM w), 'minutes', $1::int,"               \
    "   'groups', (SELECT coalesce(jsonb_agg(jsonb_build_object('group', g, 'cells', cs)" \
    "       ORDER BY g), '[]')"                                                           \
    "     FROM (SELECT g, jsonb_agg(o ORDER BY i) AS cs FROM gcells GROUP BY g) x),"      \
    "   'replicas', (SELECT coalesce(jsonb_agg(jsonb_build_object('replica_id', r,"       \
    "       'streams', ks) ORDER BY r), '[]')"                                            \
    "     FROM (SELECT r, jsonb_agg(k ORDER BY i) AS ks FROM rcells GROUP BY r) y))"
// clang-format on

int fleet_repo_health(pg_conn *c, int minutes, const char *group, const node_thresholds *t,
                      sx_arena *a, json_t **out, sx_err *err)
{
    *out = NULL;
    int rc;
    if ((rc = check_minutes(minutes, err)) || (rc = check_group(group, err)))
        return rc;
    const char *p[4] = {repo_i64_param(a, minutes), group, NULL, NULL};
    threshold_params(a, t, &p[2], &p[3]);
    return query_doc(c, a, HEALTH_SQL, 4, p, out, err);
}

// clang-format off
#define METRICS_SQL                                                                       \
    WINDOW_SQL                                                                            \
    " ev AS (SELECT e.at, e.type, e.node_id, e.group_name,"                               \
    "   CASE WHEN jsonb_typeof(e.data->'version') = 'number'"                             \
    "     THEN (e.data->>'version')::numeric::bigint END AS v FROM events e, w"           \
    "   WHERE e.at >= w.start AND e.type IN ('config_applied', 'config_rejected')),"      \
    " x AS (SELECT ev.at, ev.type, CASE WHEN ev.at >= s.created_at"                      \
    "   AND NOT EXISTS (SELECT 1 FROM events k WHERE k.type = 'proxy_connected'"          \
    "     AND k.at >= s.created_at AND k.at <= ev.at AND k.node_id = ev.node_id)"         \
    "   THEN extract(epoch FROM ev.at - s.created_at) * 1000 END AS lat"                  \
    "   FROM ev LEFT JOIN snapshots s ON ev.type = 'config_applied'"                      \
    "   AND s.group_name = ev.group_name AND s.version = ev.v),"                          \
    " m AS (SELECT b.i,"                                                                  \
    "   count(x.type) FILTER (WHERE x.type = 'config_applied') AS acks,"                  \
    "   count(x.type) FILTER (WHERE x.type = 'config_rejected') AS nacks,"                \
    "   round((percentile_cont(0.5) WITHIN GROUP (ORDER BY x.lat))::numeric, 1) AS p50,"  \
    "   round((percentile_cont(0.95) WITHIN GROUP (ORDER BY x.lat))::numeric, 1) AS p95," \
    "   round(max(x.lat)::numeric, 1) AS mx"                                              \
    "   FROM b LEFT JOIN x ON x.at >= b.t0 AND x.at < b.t1 GROUP BY b.i),"                \
    " pu AS (SELECT to_timestamp(j.k::bigint) AS t, j.v::bigint AS n"                     \
    "   FROM replicas r, jsonb_each_text(r.pushes_per_minute) AS j(k, v)),"               \
    " pm AS (SELECT b.i, coalesce(sum(pu.n), 0) AS pushes"                                \
    "   FROM b LEFT JOIN pu ON pu.t >= b.t0 AND pu.t < b.t1 GROUP BY b.i)"                \
    " SELECT jsonb_build_object("                                                         \
    "   'start', (SELECT " REPO_TS("start") " FROM w), 'minutes', $1::int,"               \
    "   'series', (SELECT jsonb_agg(jsonb_build_object('acks', acks, 'nacks', nacks,"     \
    "     'pushes', pushes, 'latency_p50_ms', p50, 'latency_p95_ms', p95,"                \
    "     'latency_max_ms', mx) ORDER BY i) FROM m JOIN pm USING (i)))"
// clang-format on

int fleet_repo_metrics(pg_conn *c, int minutes, sx_arena *a, json_t **out, sx_err *err)
{
    *out = NULL;
    int rc = check_minutes(minutes, err);
    if (rc)
        return rc;
    const char *p[] = {repo_i64_param(a, minutes)};
    return query_doc(c, a, METRICS_SQL, 1, p, out, err);
}

// clang-format off
#define TIMELINE_SQL                                                                      \
    "WITH w AS (SELECT wave_index, node_ids, target_snapshots, started_at"                \
    "   FROM deployment_waves WHERE deployment_id = $1::uuid AND started_at IS NOT NULL)," \
    " acks AS (SELECT DISTINCT ON (w.wave_index, e.node_id) w.wave_index, e.node_id,"     \
    "   e.group_name, e.data->'version' AS v, e.at,"                                      \
    "   extract(epoch FROM e.at - w.started_at) AS off"                                   \
    "   FROM w JOIN events e ON e.type = 'config_applied' AND e.at >= w.started_at"       \
    "   AND e.node_id = ANY (w.node_ids)"                                                 \
    "   AND e.data->'version' = w.target_snapshots->e.group_name"                         \
    "   ORDER BY w.wave_index, e.node_id, e.at, e.id),"                                   \
    " nacks AS (SELECT coalesce(e.data->>'error', '') AS error, count(*) AS k,"           \
    "   count(DISTINCT e.node_id) AS nodes"                                               \
    "   FROM w JOIN events e ON e.type = 'config_rejected' AND e.at >= w.started_at"      \
    "   AND e.node_id = ANY (w.node_ids)"                                                 \
    "   AND e.data->'version' = w.target_snapshots->e.group_name"                         \
    "   GROUP BY 1)"                                                                      \
    " SELECT jsonb_build_object("                                                         \
    "   'waves', (SELECT coalesce(jsonb_agg(jsonb_build_object('index', w.wave_index,"    \
    "       'acks', (SELECT coalesce(jsonb_agg(jsonb_build_object('node_id', node_id,"    \
    "           'group', group_name, 'version', v, 'at', " REPO_TS("at") ","              \
    "           'offset_s', round(off::numeric, 3)) ORDER BY at, node_id), '[]')"         \
    "         FROM acks WHERE acks.wave_index = w.wave_index))"                           \
    "     ORDER BY w.wave_index), '[]') FROM w),"                                         \
    "   'nack_errors', (SELECT coalesce(jsonb_agg(jsonb_build_object('error', error,"     \
    "       'count', k, 'nodes', nodes) ORDER BY k DESC, error), '[]') FROM nacks))"
// clang-format on

int fleet_repo_timeline(pg_conn *c, const char *id, sx_arena *a, json_t **out, sx_err *err)
{
    *out = NULL;
    if (id == NULL || !repo_is_uuid(id))
        return sx_err_set(err, SX_EINVAL, "deployment id must be a UUID");
    const char *p[] = {id};
    return query_doc(c, a, TIMELINE_SQL, 1, p, out, err);
}
