/*
 * repo_alerts.c — the alerts table and the readings of the alert rules (see
 * repo_alerts.h).
 *
 * Design: each reading is one SELECT that returns only the subjects whose condition
 * holds, so the evaluation (server/alerts.c) compares two short lists: what holds and
 * what fires. Firing is an INSERT ... ON CONFLICT DO NOTHING on the partial unique index
 * of firing rows, resolving an UPDATE guarded by state = 'firing': both are idempotent,
 * so an evaluation repeated by a second leader changes nothing.
 */
#include "storage/repo_alerts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/repo_common.h"

#define MESSAGE_MAX 2048

static double col_double(const PGresult *r, int row, int col)
{
    const char *v = pg_is_null(r, row, col) ? NULL : pg_get(r, row, col);
    return v ? strtod(v, NULL) : 0;
}

static char *ms_param(sx_arena *a, long long ms)
{
    return repo_i64_param(a, ms);
}

/* ------------------------------------------------------------------ readings */

/* Columns: subject, group, value, a, b, text. */
static int read_reading(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    alert_reading *o = item;
    memset(o, 0, sizeof(*o));
    REPO_STRS(a, r, row, 0, &o->subject, &o->group);
    o->value = col_double(r, row, 2);
    o->text = repo_str(a, r, row, 5);
    if (o->text == NULL)
        o->text = "";
    int rc = repo_i64(r, row, 3, 0, &o->a, err);
    return rc ? rc : repo_i64(r, row, 4, 0, &o->b, err);
}

static int readings(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                    alert_readings *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    return repo_query_rows(c, a, sql, n, p, sizeof(alert_reading), read_reading, &out->items,
                           &out->count, err);
}

#define LIMIT_SQL " LIMIT 1000"

int alert_repo_nack_rates(pg_conn *c, long long window_ms, long long min_responses,
                          double threshold, sx_arena *a, alert_readings *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (window_ms < 1)
        return sx_err_set(err, SX_EINVAL, "window_ms must be at least 1");
    if (min_responses < 1)
        min_responses = 1;
    if (!(threshold >= 0 && threshold <= 1))
        return sx_err_set(err, SX_EINVAL, "threshold must be between 0 and 1");
    char th[32];
    snprintf(th, sizeof th, "%.17g", threshold);
    const char *p[] = {ms_param(a, window_ms), repo_i64_param(a, min_responses), th};
    return readings(c, a,
                    "SELECT group_name, group_name, nacks::float8 / total, nacks, total, ''"
                    " FROM (SELECT group_name,"
                    "   count(*) FILTER (WHERE type = 'config_rejected') AS nacks,"
                    "   count(*) AS total"
                    "   FROM events"
                    "   WHERE type IN ('config_applied', 'config_rejected')"
                    "     AND group_name IS NOT NULL AND group_name <> ''"
                    "     AND at > now() - $1::bigint * interval '1 millisecond'"
                    "   GROUP BY group_name) g"
                    " WHERE total >= $2::bigint AND nacks::float8 / total > $3::float8"
                    " ORDER BY group_name" LIMIT_SQL,
                    3, p, out, err);
}

int alert_repo_disconnected(pg_conn *c, long long after_ms, long long forget_ms, sx_arena *a,
                            alert_readings *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (after_ms < 0 || forget_ms <= after_ms)
        return sx_err_set(err, SX_EINVAL, "forget_ms must be greater than after_ms (>= 0)");
    const char *p[] = {ms_param(a, after_ms), ms_param(a, forget_ms)};
    return readings(c, a,
                    "SELECT node_id, group_name,"
                    "   extract(epoch FROM now() - disconnected_at)::float8, 0, 0,"
                    "   coalesce(disconnect_reason, '')"
                    " FROM proxy_nodes"
                    " WHERE NOT connected AND disconnected_at IS NOT NULL"
                    "   AND disconnected_at < now() - $1::bigint * interval '1 millisecond'"
                    "   AND disconnected_at >= now() - $2::bigint * interval '1 millisecond'"
                    " ORDER BY node_id" LIMIT_SQL,
                    2, p, out, err);
}

/* A reading whose one parameter, $1, is a duration ms named what: at least 1, else
 * SX_EINVAL. */
static int ms_readings(pg_conn *c, sx_arena *a, const char *what, long long ms, const char *sql,
                       alert_readings *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (ms < 1)
        return sx_err_set(err, SX_EINVAL, "%s must be at least 1", what);
    const char *p[] = {ms_param(a, ms)};
    return readings(c, a, sql, 1, p, out, err);
}

int alert_repo_deployments_failed(pg_conn *c, long long window_ms, sx_arena *a, alert_readings *out,
                                  sx_err *err)
{
    return ms_readings(c, a, "window_ms", window_ms,
                       "SELECT id::text, array_to_string(groups, ','), 1::float8, 0, 0,"
                       "   state || CASE WHEN state_reason <> '' THEN ': ' || state_reason"
                       "   ELSE '' END"
                       " FROM deployments"
                       " WHERE state IN ('failed', 'rolled_back', 'rollback_failed')"
                       "   AND state_changed_at >= now() - $1::bigint * interval '1 millisecond'"
                       " ORDER BY state_changed_at, id" LIMIT_SQL,
                       out, err);
}

int alert_repo_replicas_lost(pg_conn *c, long long lost_ms, sx_arena *a, alert_readings *out,
                             sx_err *err)
{
    return ms_readings(
        c, a, "lost_ms", lost_ms,
        // clang-format off
        "SELECT replica_id, NULL, extract(epoch FROM now() - last_seen)::float8, 0, 0, "
        REPO_TS("last_seen")
        " FROM replicas"
        " WHERE last_seen < now() - $1::bigint * interval '1 millisecond'"
        "   AND stopped_at IS NULL"
        " ORDER BY replica_id" LIMIT_SQL,
        // clang-format on
        out, err);
}

/* ------------------------------------------------------------------ alerts */

// clang-format off
#define ALERT_COLS                                                                      \
    "id, rule, subject, state, " REPO_TS("started_at") ", " REPO_TS("resolved_at") ","  \
    " value, message"
// clang-format on

/* Columns: ALERT_COLS. */
static int read_alert(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    alert_record *o = item;
    memset(o, 0, sizeof(*o));
    REPO_STRS(a, r, row, 1, &o->rule, &o->subject, &o->state, &o->started_at, &o->resolved_at);
    o->value = col_double(r, row, 6);
    o->message = repo_str(a, r, row, 7);
    return repo_i64(r, row, 0, 0, &o->id, err);
}

static bool known_rule(const char *rule)
{
    static const char *const rules[] = {"nack_rate", "proxy_disconnected", "deployment_failed",
                                        "replica_lost"};
    for (size_t i = 0; rule && i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rule, rules[i]) == 0)
            return true;
    return false;
}

int alert_repo_firing(pg_conn *c, sx_arena *a, alert_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    return repo_query_rows(c, a,
                           "SELECT " ALERT_COLS " FROM alerts WHERE state = 'firing'"
                           " ORDER BY id LIMIT 4000",
                           0, NULL, sizeof(alert_record), read_alert, &out->items, &out->count,
                           err);
}

/* A message cut to MESSAGE_MAX bytes (on a UTF-8 boundary) in a. */
static const char *cut(sx_arena *a, const char *m)
{
    if (m == NULL)
        return "";
    size_t n = repo_utf8_len(m, MESSAGE_MAX);
    return m[n] == '\0' ? m : sx_arena_strndup(a, m, n);
}

static char *value_param(sx_arena *a, double v)
{
    char *s = sx_arena_alloc(a, 32);
    snprintf(s, 32, "%.17g", v);
    return s;
}

/* Runs a statement that returns the ALERT_COLS of the alert it changed, if any: that
 * alert into *out and *changed true. */
static int changed_alert(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                         alert_record *out, bool *changed, sx_err *err)
{
    alert_record *rows = NULL;
    size_t count = 0;
    int rc = repo_query_rows(c, a, sql, n, p, sizeof(alert_record), read_alert, &rows, &count, err);
    if (rc == 0 && count == 1) {
        *out = rows[0];
        *changed = true;
    }
    return rc;
}

int alert_repo_fire(pg_conn *c, const char *rule, const char *subject, double value,
                    const char *message, sx_arena *a, alert_record *out, bool *fired, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    *fired = false;
    if (!known_rule(rule))
        return sx_err_set(err, SX_EINVAL, "unknown alert rule");
    if (subject == NULL || subject[0] == '\0' || strlen(subject) > 512)
        return sx_err_set(err, SX_EINVAL, "subject must be 1 to 512 bytes");
    const char *p[] = {rule, subject, value_param(a, value), cut(a, message)};
    return changed_alert(c, a,
                         "INSERT INTO alerts (rule, subject, value, message)"
                         " VALUES ($1, $2, $3::float8, $4)"
                         " ON CONFLICT (rule, subject) WHERE state = 'firing' DO NOTHING"
                         " RETURNING " ALERT_COLS,
                         4, p, out, fired, err);
}

int alert_repo_touch(pg_conn *c, long long id, double value, const char *message, sx_err *err)
{
    sx_arena *a = sx_arena_create();
    const char *p[] = {repo_i64_param(a, id), value_param(a, value), cut(a, message)};
    int rc = repo_exec_count(c,
                             "UPDATE alerts SET value = $2::float8, message = $3"
                             " WHERE id = $1::bigint AND state = 'firing'"
                             "   AND (value, message) IS DISTINCT FROM ($2::float8, $3)",
                             3, p, NULL, err);
    sx_arena_destroy(a);
    return rc;
}

int alert_repo_resolve(pg_conn *c, long long id, sx_arena *a, alert_record *out, bool *resolved,
                       sx_err *err)
{
    memset(out, 0, sizeof(*out));
    *resolved = false;
    const char *p[] = {repo_i64_param(a, id)};
    return changed_alert(c, a,
                         "UPDATE alerts SET state = 'resolved', resolved_at = now()"
                         " WHERE id = $1::bigint AND state = 'firing'"
                         " RETURNING " ALERT_COLS,
                         1, p, out, resolved, err);
}

/* Newest first: $2 the id to start before, $3 the limit. */
static const repo_page_spec alert_page = {"i", {0}, 2, 3, sizeof(alert_record), read_alert};

int alert_repo_list(pg_conn *c, const char *state, int limit, const char *cursor, sx_arena *a,
                    alert_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (state && strcmp(state, "firing") != 0 && strcmp(state, "resolved") != 0)
        return sx_err_set(err, SX_EINVAL, "invalid state: must be firing, resolved or all");
    const char *p[] = {state, NULL, NULL};
    return repo_list_query(c, a, &alert_page, limit, cursor,
                           "SELECT " ALERT_COLS " FROM alerts"
                           " WHERE ($1::text IS NULL OR state = $1)"
                           "   AND ($2::bigint IS NULL OR id < $2::bigint)"
                           " ORDER BY id DESC LIMIT $3::int",
                           3, p, REPO_LIST_REF(out), err);
}

int alert_repo_count_firing(pg_conn *c, const char *const *rules, size_t n, long long *counts,
                            sx_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        counts[i] = 0;
        const char *p[] = {rules[i]};
        rc = repo_query_i64(c, "SELECT count(*) FROM alerts WHERE state = 'firing' AND rule = $1",
                            1, p, &counts[i], err);
    }
    return rc;
}
