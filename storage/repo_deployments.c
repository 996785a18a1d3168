/*
 * repo_deployments.c — deployments and their waves.
 *
 * Design: a deployment and all its waves are inserted by one statement (the waves
 * travel as one JSON array parameter expanded with jsonb_array_elements WITH
 * ORDINALITY), so a plan is stored whole or not at all. Every state change is an
 * UPDATE ... WHERE state = expected; a change that matched nothing is followed by a
 * read that says whether the row is missing or in another state. Leases use the
 * database clock (now()) on both sides of the comparison, so replicas' clocks may
 * disagree without harm.
 */
#include "storage/repo_deployments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_common.h"

#define WAVE_ERRORS_MAX 100

static const char *const state_names[DEPLOY_STATE_COUNT] = {
    "pending",   "in_progress",  "paused",      "completed",       "failed",
    "canceling", "rolling_back", "rolled_back", "rollback_failed",
};
static const char *const wave_state_names[DEPLOY_WAVE_STATE_COUNT] = {
    "pending", "in_progress", "completed", "failed", "canceled", "rolled_back",
};

const char *deploy_state_name(deploy_state s)
{
    return (unsigned)s < DEPLOY_STATE_COUNT ? state_names[s] : "";
}

const char *deploy_wave_state_name(deploy_wave_state s)
{
    return (unsigned)s < DEPLOY_WAVE_STATE_COUNT ? wave_state_names[s] : "";
}

int deploy_state_parse(const char *s, deploy_state *out)
{
    for (int i = 0; s && i < DEPLOY_STATE_COUNT; i++)
        if (strcmp(s, state_names[i]) == 0) {
            *out = (deploy_state)i;
            return 0;
        }
    return SX_EINVAL;
}

int deploy_wave_state_parse(const char *s, deploy_wave_state *out)
{
    for (int i = 0; s && i < DEPLOY_WAVE_STATE_COUNT; i++)
        if (strcmp(s, wave_state_names[i]) == 0) {
            *out = (deploy_wave_state)i;
            return 0;
        }
    return SX_EINVAL;
}

bool deploy_state_final(deploy_state s)
{
    return s == DEPLOY_COMPLETED || s == DEPLOY_FAILED || s == DEPLOY_ROLLED_BACK ||
           s == DEPLOY_ROLLBACK_FAILED;
}

/* Columns of a deployment; the last one sums its waves up ("progress"). */
#define DEP_COLS                                                                                                                                                                                               \
    "id, config_id, config_version, selector, strategy, state, state_reason, nack_threshold,"                                                                                                                  \
    " nack_min_sample, (extract(epoch FROM wave_timeout) * 1000)::bigint, current_wave,"                                                                                                                       \
    " created_by, reason, owner_replica, " REPO_TS("lease_until") ", " REPO_TS(                                                                                                                                \
        "created_at") ", " REPO_TS("started_at") ", " REPO_TS("finished_at") ", " REPO_TS("update"                                                                                                             \
                                                                                          "d_at") ", to_jsonb(groups), target_snapshots, baseline_snapshots, previous_live_version, promote,"                  \
                                                                                                  " promoted, health_failure_limit, skipped_nodes, " REPO_TS(                                                  \
                                                                                                      "resumed_at") ", extract(epoch FROM now() - state_changed_at),"                                          \
                                                                                                                    " COALESCE(extract(epoch FROM now() - resumed_at), 1e12),"                                 \
                                                                                                                    " (SELECT jsonb_build_object('waves', count(*), 'waves_completed',"                        \
                                                                                                                    "   count(*) FILTER (WHERE w.state = 'completed'), 'nodes',"                               \
                                                                                                                    "   COALESCE(sum(cardinality(w.node_ids)), 0), 'acks', COALESCE(sum(w.acks), 0), 'nacks'," \
                                                                                                                    "   COALESCE(sum(w.nacks), 0))"                                                            \
                                                                                                                    "  FROM deployment_waves w WHERE w.deployment_id = deployments.id)"

#define WAVE_COLS                                                                                  \
    "wave_index, state, to_jsonb(node_ids), target_snapshots, baseline_snapshots, acks, nacks,"    \
    " errors, " REPO_TS("started_at") ", " REPO_TS("completed_at") ","                             \
                                                                   " COALESCE(extract(epoch FROM " \
                                                                   "now() - started_at), 0),"      \
                                                                   " COALESCE(extract(epoch FROM " \
                                                                   "now() - completed_at), 0)"

/* SQL list of the final states, for CASE expressions. */
#define FINAL_STATES "('completed', 'failed', 'rolled_back', 'rollback_failed')"

static int check_id(const char *what, const char *id, sx_err *err)
{
    if (!repo_is_uuid(id))
        return sx_err_set(err, SX_EINVAL, "invalid %s id \"%s\"", what, id ? id : "");
    return 0;
}

static int read_dep(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    deploy_record *o = item;
    memset(o, 0, sizeof(*o));
    long long ver, sample, wave;
    int rc;
    REPO_STRS(a, r, row, 0, &o->id, &o->config_id);
    if ((rc = repo_i64(r, row, 2, 0, &ver, err)) ||
        (rc = repo_json(a, r, row, 3, &o->selector, err)) ||
        (rc = repo_json(a, r, row, 4, &o->strategy, err)) ||
        (rc = repo_i64(r, row, 8, 0, &sample, err)) ||
        (rc = repo_i64(r, row, 9, 0, &o->wave_timeout_ms, err)) ||
        (rc = repo_i64(r, row, 10, -1, &wave, err)))
        return rc;
    if (deploy_state_parse(PQgetvalue(r, row, 5), &o->state) != 0)
        return sx_err_set(err, SX_EINTERNAL, "unknown deployment state \"%s\"",
                          PQgetvalue(r, row, 5));
    o->config_version = (int)ver;
    o->nack_min_sample = (int)sample;
    o->current_wave = (int)wave;
    o->state_reason = repo_str(a, r, row, 6);
    o->nack_threshold = strtod(PQgetvalue(r, row, 7), NULL);
    REPO_STRS(a, r, row, 11, &o->created_by, &o->reason, &o->owner_replica, &o->lease_until,
              &o->created_at, &o->started_at, &o->finished_at, &o->updated_at);
    long long prev, limit;
    if ((rc = repo_strv(a, r, row, 19, &o->groups, &o->group_count, err)) ||
        (rc = repo_json(a, r, row, 20, &o->target_snapshots, err)) ||
        (rc = repo_json(a, r, row, 21, &o->baseline_snapshots, err)) ||
        (rc = repo_i64(r, row, 22, 0, &prev, err)) || (rc = repo_i64(r, row, 25, 3, &limit, err)) ||
        (rc = repo_json(a, r, row, 26, &o->skipped_nodes, err)))
        return rc;
    o->previous_live_version = (int)prev;
    o->promote = repo_bool(r, row, 23);
    o->promoted = repo_bool(r, row, 24);
    o->health_failure_limit = (int)limit;
    o->resumed_at = repo_str(a, r, row, 27);
    o->state_age_s = strtod(PQgetvalue(r, row, 28), NULL);
    o->resumed_age_s = strtod(PQgetvalue(r, row, 29), NULL);
    return repo_json(a, r, row, 30, &o->progress, err);
}

static int read_wave(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    deploy_wave *o = item;
    memset(o, 0, sizeof(*o));
    long long index, acks, nacks;
    int rc;
    if ((rc = repo_i64(r, row, 0, 0, &index, err)) ||
        (rc = repo_strv(a, r, row, 2, &o->node_ids, &o->node_count, err)) ||
        (rc = repo_json(a, r, row, 3, &o->target_snapshots, err)) ||
        (rc = repo_json(a, r, row, 4, &o->baseline_snapshots, err)) ||
        (rc = repo_i64(r, row, 5, 0, &acks, err)) || (rc = repo_i64(r, row, 6, 0, &nacks, err)) ||
        (rc = repo_json(a, r, row, 7, &o->errors, err)))
        return rc;
    if (deploy_wave_state_parse(PQgetvalue(r, row, 1), &o->state) != 0)
        return sx_err_set(err, SX_EINTERNAL, "unknown wave state \"%s\"", PQgetvalue(r, row, 1));
    o->index = (int)index;
    o->acks = (int)acks;
    o->nacks = (int)nacks;
    o->started_at = repo_str(a, r, row, 8);
    o->completed_at = repo_str(a, r, row, 9);
    o->started_age_s = strtod(PQgetvalue(r, row, 10), NULL);
    o->completed_age_s = strtod(PQgetvalue(r, row, 11), NULL);
    return 0;
}

int deploy_repo_create(pg_conn *c, const deploy_new *in, sx_arena *a, deploy_record **out,
                       sx_err *err)
{
    if (out)
        *out = NULL;
    int rc = check_id("config", in->config_id, err);
    if (rc)
        return rc;
    if (in->id && (rc = check_id("deployment", in->id, err)))
        return rc;
    if (in->config_version < 1)
        return sx_err_set(err, SX_EINVAL, "config_version must be at least 1");
    if (in->created_by == NULL || in->created_by[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "created_by is required");
    if ((rc = repo_check_object("selector", in->selector, err)) ||
        (rc = repo_check_object("strategy", in->strategy, err)))
        return rc;
    if (in->nack_threshold > 1)
        return sx_err_set(err, SX_EINVAL, "nack_threshold must be between 0 and 1");
    json_t *waves = repo_own_json(a, json_array());
    for (size_t i = 0; i < in->wave_count; i++) {
        const deploy_wave_new *w = &in->waves[i];
        if ((w->target_snapshots && !json_is_object(w->target_snapshots)) ||
            (w->baseline_snapshots && !json_is_object(w->baseline_snapshots)))
            return sx_err_set(err, SX_EINVAL, "waves[%zu] snapshots must be json objects", i);
        json_t *ids = json_array();
        for (size_t j = 0; j < w->node_count; j++) {
            if (w->node_ids[j] == NULL || w->node_ids[j][0] == '\0') {
                json_decref(ids);
                return sx_err_set(err, SX_EINVAL, "waves[%zu].node_ids[%zu] is empty", i, j);
            }
            json_array_append_new(ids, json_string(w->node_ids[j]));
        }
        json_t *o = json_pack("{s:o}", "node_ids", ids);
        if (w->target_snapshots)
            json_object_set(o, "target_snapshots", (json_t *)w->target_snapshots);
        if (w->baseline_snapshots)
            json_object_set(o, "baseline_snapshots", (json_t *)w->baseline_snapshots);
        json_array_append_new(waves, o);
    }
    char thr[32];
    snprintf(thr, sizeof(thr), "%.17g", in->nack_threshold < 0 ? 0.05 : in->nack_threshold);
    const char *p[] = {
        in->config_id,
        repo_i64_param(a, in->config_version),
        in->selector ? repo_json_param(a, in->selector) : "{}",
        in->strategy ? repo_json_param(a, in->strategy) : "{}",
        thr,
        repo_i64_param(a, in->nack_min_sample < 0 ? 10 : in->nack_min_sample),
        repo_i64_param(a, in->wave_timeout_ms <= 0 ? 600000 : in->wave_timeout_ms),
        in->created_by,
        in->reason ? in->reason : "",
        repo_json_param(a, waves),
        repo_strv_param(a, in->groups, in->group_count),
        in->target_snapshots ? repo_json_param(a, in->target_snapshots) : "{}",
        in->baseline_snapshots ? repo_json_param(a, in->baseline_snapshots) : "{}",
        in->previous_live_version > 0 ? repo_i64_param(a, in->previous_live_version) : NULL,
        in->no_promote ? "false" : "true",
        repo_i64_param(a, in->health_failure_limit > 0 ? in->health_failure_limit : 3),
        in->skipped_nodes ? repo_json_param(a, in->skipped_nodes) : "[]",
        in->id,
    };
    static const char sql[] =
        "WITH d AS ("
        " INSERT INTO deployments (id, config_id, config_version, selector, strategy,"
        "   nack_threshold, nack_min_sample, wave_timeout, created_by, reason, groups,"
        "   target_snapshots, baseline_snapshots, previous_live_version, promote,"
        "   health_failure_limit, skipped_nodes)"
        " VALUES (COALESCE($18::uuid, gen_random_uuid()), $1::uuid, $2::int, $3::jsonb,"
        "   $4::jsonb, $5::float8, $6::int,"
        "   make_interval(secs => $7::float8 / 1000), $8, $9,"
        "   ARRAY(SELECT jsonb_array_elements_text($11::jsonb)), $12::jsonb, $13::jsonb,"
        "   $14::int, $15::boolean, $16::int, $17::jsonb)"
        " RETURNING id),"
        " w AS ("
        " INSERT INTO deployment_waves"
        "   (deployment_id, wave_index, node_ids, target_snapshots, baseline_snapshots)"
        " SELECT d.id, (e.ord - 1)::int,"
        "   ARRAY(SELECT jsonb_array_elements_text(e.value -> 'node_ids')),"
        "   COALESCE(e.value -> 'target_snapshots', '{}'),"
        "   COALESCE(e.value -> 'baseline_snapshots', '{}')"
        " FROM d, jsonb_array_elements($10::jsonb) WITH ORDINALITY AS e(value, ord))"
        " SELECT id FROM d";
    PGresult *r;
    rc = repo_query(c, a, sql, 18, p, &r, err);
    if (rc == SX_EINVAL && err && strcmp(err->sqlstate, "23503") == 0) {
        sx_err_set(err, SX_ENOTFOUND, "version %d of config %s does not exist", in->config_version,
                   in->config_id);
        return SX_ENOTFOUND;
    }
    if (rc)
        return rc;
    char *id = repo_str(a, r, 0, 0);
    if (out == NULL)
        return 0;
    return deploy_repo_get(c, id, a, out, err);
}

static int get_dep(pg_conn *c, const char *id, bool lock, sx_arena *a, deploy_record **out,
                   sx_err *err)
{
    *out = NULL;
    int rc = check_id("deployment", id, err);
    if (rc)
        return rc;
    const char *p[] = {id};
    deploy_record *o;
    rc = repo_query_one(c, a,
                        lock ? "SELECT " DEP_COLS " FROM deployments WHERE id = $1::uuid FOR UPDATE"
                             : "SELECT " DEP_COLS " FROM deployments WHERE id = $1::uuid",
                        1, p, sizeof(*o), read_dep, &o, err);
    if (rc)
        return rc;
    if (o == NULL)
        return sx_err_set(err, SX_ENOTFOUND, "deployment %s does not exist", id);
    rc = repo_query_rows(c, a,
                         "SELECT " WAVE_COLS " FROM deployment_waves WHERE deployment_id = $1::uuid"
                         " ORDER BY wave_index",
                         1, p, sizeof(deploy_wave), read_wave, &o->waves, &o->wave_count, err);
    if (rc)
        return rc;
    *out = o;
    return 0;
}

int deploy_repo_get(pg_conn *c, const char *id, sx_arena *a, deploy_record **out, sx_err *err)
{
    return get_dep(c, id, false, a, out, err);
}

int deploy_repo_lock(pg_conn *c, const char *id, sx_arena *a, deploy_record **out, sx_err *err)
{
    return get_dep(c, id, true, a, out, err);
}

int deploy_repo_active_in_groups(pg_conn *c, const char *const *groups, size_t n,
                                 const char *except_id, sx_arena *a, char **id, char **group,
                                 sx_err *err)
{
    *id = NULL;
    if (group)
        *group = NULL;
    if (n == 0)
        return 0;
    const char *p[] = {repo_strv_param(a, groups, n),
                       except_id && repo_is_uuid(except_id) ? except_id : NULL};
    PGresult *r;
    int rc = repo_query(c, a,
                        "SELECT d.id, g FROM deployments d, unnest(d.groups) AS g"
                        " WHERE d.state NOT IN " FINAL_STATES
                        "   AND g IN (SELECT jsonb_array_elements_text($1::jsonb))"
                        "   AND ($2::uuid IS NULL OR d.id <> $2::uuid)"
                        " ORDER BY d.created_at LIMIT 1",
                        2, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) > 0) {
        *id = repo_str(a, r, 0, 0);
        if (group)
            *group = repo_str(a, r, 0, 1);
    }
    return 0;
}

int deploy_repo_new_id(pg_conn *c, sx_arena *a, char **id, sx_err *err)
{
    *id = NULL;
    PGresult *r;
    int rc = repo_query(c, a, "SELECT gen_random_uuid()::text", 0, NULL, &r, err);
    if (rc == 0)
        *id = repo_str(a, r, 0, 0);
    return rc;
}

int deploy_repo_mark(pg_conn *c, const char *id, deploy_mark m, sx_err *err)
{
    int rc = check_id("deployment", id, err);
    if (rc)
        return rc;
    const char *p[] = {id};
    return pg_exec(c,
                   m == DEPLOY_MARK_PROMOTED
                       ? "UPDATE deployments SET promoted = true, updated_at = now()"
                         " WHERE id = $1::uuid"
                       : "UPDATE deployments SET resumed_at = now(), updated_at = now()"
                         " WHERE id = $1::uuid",
                   1, p, NULL, err);
}

/* Newest first, by created_at (column 15) then id (column 0): $3 and $4 the key to start
 * below, $5 the limit. */
static const repo_page_spec deploy_page = {"su", {15, 0}, 3, 5, sizeof(deploy_record), read_dep};

int deploy_repo_list(pg_conn *c, const deploy_filter *f, sx_arena *a, deploy_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    deploy_filter all = {0};
    if (f == NULL)
        f = &all;
    int rc;
    if (f->config_id && (rc = check_id("config", f->config_id, err)))
        return rc;
    char *states = NULL;
    if (f->state_mask) {
        const char *names[DEPLOY_STATE_COUNT];
        size_t n = 0;
        for (int i = 0; i < DEPLOY_STATE_COUNT; i++)
            if (f->state_mask & (1u << i))
                names[n++] = state_names[i];
        states = repo_strv_param(a, names, n);
    }
    const char *p[] = {states, f->config_id, NULL, NULL, NULL};
    return repo_list_query(
        c, a, &deploy_page, f->limit, f->cursor,
        "SELECT " DEP_COLS " FROM deployments"
        " WHERE ($1::jsonb IS NULL OR state IN (SELECT jsonb_array_elements_text($1)))"
        "   AND ($2::uuid IS NULL OR config_id = $2::uuid)"
        "   AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))"
        " ORDER BY created_at DESC, id DESC LIMIT $5::int",
        5, p, REPO_LIST_REF(out), err);
}

/* After a compare-and-set on a deployment matched nothing. */
static int explain_state(pg_conn *c, const char *id, deploy_state expected, sx_err *err)
{
    const char *p[] = {id};
    PGresult *r;
    int rc = pg_exec(c, "SELECT state FROM deployments WHERE id = $1::uuid", 1, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0) {
        rc = sx_err_set(err, SX_ENOTFOUND, "deployment %s does not exist", id);
    } else {
        rc = sx_err_set(err, SX_EPRECONDITION, "deployment %s is %s, not %s", id,
                        PQgetvalue(r, 0, 0), deploy_state_name(expected));
        sx_err_detail(err, "Another request or replica changed its state first.");
    }
    PQclear(r);
    return rc;
}

static int cas_exec(pg_conn *c, const char *sql, int n, const char *const *p, const char *id,
                    deploy_state expected, sx_err *err)
{
    int rows = 0;
    int rc = repo_exec_count(c, sql, n, p, &rows, err);
    if (rc)
        return rc;
    return rows ? 0 : explain_state(c, id, expected, err);
}

int deploy_repo_set_state(pg_conn *c, const char *id, deploy_state expected, deploy_state next,
                          const char *reason, sx_err *err)
{
    int rc = check_id("deployment", id, err);
    if (rc)
        return rc;
    if ((unsigned)expected >= DEPLOY_STATE_COUNT || (unsigned)next >= DEPLOY_STATE_COUNT)
        return sx_err_set(err, SX_EINVAL, "invalid deployment state");
    const char *p[] = {id, state_names[expected], state_names[next], reason};
    return cas_exec(c,
                    "UPDATE deployments SET state = $3, state_reason = COALESCE($4, state_reason),"
                    "   started_at = CASE WHEN $3 = 'in_progress' THEN COALESCE(started_at, now())"
                    "                ELSE started_at END,"
                    "   finished_at = CASE WHEN $3 IN " FINAL_STATES " THEN now() ELSE NULL END,"
                    "   state_changed_at = now(), updated_at = now()"
                    " WHERE id = $1::uuid AND state = $2",
                    4, p, id, expected, err);
}

int deploy_repo_set_current_wave(pg_conn *c, const char *id, deploy_state expected, int wave,
                                 sx_err *err)
{
    int rc = check_id("deployment", id, err);
    if (rc)
        return rc;
    if ((unsigned)expected >= DEPLOY_STATE_COUNT || wave < -1)
        return sx_err_set(err, SX_EINVAL, "invalid deployment state or wave");
    char w[16];
    snprintf(w, sizeof(w), "%d", wave);
    const char *p[] = {id, state_names[expected], w};
    return cas_exec(c,
                    "UPDATE deployments SET current_wave = $3::int, updated_at = now()"
                    " WHERE id = $1::uuid AND state = $2",
                    3, p, id, expected, err);
}

int deploy_repo_update_wave(pg_conn *c, const char *id, int index, const deploy_wave_update *u,
                            sx_err *err)
{
    int rc = check_id("deployment", id, err);
    if (rc)
        return rc;
    if (u->expected_state >= DEPLOY_WAVE_STATE_COUNT || u->state >= DEPLOY_WAVE_STATE_COUNT ||
        u->expected_state < -1 || u->state < -1)
        return sx_err_set(err, SX_EINVAL, "invalid wave state");
    if (u->acks < -1 || u->nacks < -1)
        return sx_err_set(err, SX_EINVAL, "wave counters must not be negative");
    if ((rc = repo_check_object("baseline_snapshots", u->baseline_snapshots, err)) != 0)
        return rc;
    sx_arena *a = sx_arena_create();
    char max[16];
    snprintf(max, sizeof(max), "%d", WAVE_ERRORS_MAX);
    const char *p[] = {
        id,
        repo_i64_param(a, index),
        u->expected_state >= 0 ? wave_state_names[u->expected_state] : NULL,
        u->state >= 0 ? wave_state_names[u->state] : NULL,
        u->acks >= 0 ? repo_i64_param(a, u->acks) : NULL,
        u->nacks >= 0 ? repo_i64_param(a, u->nacks) : NULL,
        repo_json_param(a, u->append_error),
        repo_json_param(a, u->baseline_snapshots),
        max,
    };
    PGresult *r;
    rc = repo_query(c, a,
                    "UPDATE deployment_waves SET state = COALESCE($4, state),"
                    "   started_at = CASE WHEN $4 = 'in_progress' THEN COALESCE(started_at, now())"
                    "                ELSE started_at END,"
                    "   completed_at = CASE WHEN $4 IN ('completed', 'failed', 'canceled',"
                    "                  'rolled_back') THEN now() ELSE completed_at END,"
                    "   acks = COALESCE($5::int, acks), nacks = COALESCE($6::int, nacks),"
                    "   errors = CASE WHEN $7::jsonb IS NULL"
                    "              OR jsonb_array_length(errors) >= $9::int THEN errors"
                    "            ELSE errors || jsonb_build_array($7::jsonb) END,"
                    "   baseline_snapshots = COALESCE($8::jsonb, baseline_snapshots),"
                    "   updated_at = now()"
                    " WHERE deployment_id = $1::uuid AND wave_index = $2::int"
                    "   AND ($3::text IS NULL OR state = $3)"
                    " RETURNING wave_index",
                    9, p, &r, err);
    if (rc == 0 && PQntuples(r) == 0 &&
        (rc = repo_query(c, a,
                         "SELECT state FROM deployment_waves"
                         " WHERE deployment_id = $1::uuid AND wave_index = $2::int",
                         2, p, &r, err)) == 0) {
        if (PQntuples(r) == 0) {
            rc =
                sx_err_set(err, SX_ENOTFOUND, "wave %d of deployment %s does not exist", index, id);
        } else {
            rc = sx_err_set(err, SX_EPRECONDITION, "wave %d of deployment %s is %s, not %s", index,
                            id, PQgetvalue(r, 0, 0), p[2] ? p[2] : "any");
            sx_err_detail(err, "Another request or replica changed it first.");
        }
    }
    sx_arena_destroy(a);
    return rc;
}

int deploy_repo_claim(pg_conn *c, const char *id, const char *replica, long long lease_ms,
                      bool *claimed, sx_err *err)
{
    *claimed = false;
    int rc = check_id("deployment", id, err);
    if (rc)
        return rc;
    if (replica == NULL || replica[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "replica is required");
    if (lease_ms <= 0)
        return sx_err_set(err, SX_EINVAL, "lease must be positive");
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", lease_ms);
    const char *p[] = {id, replica, ms};
    int rows = 0;
    rc =
        repo_exec_count(c,
                        "UPDATE deployments SET owner_replica = $2,"
                        "   lease_until = now() + make_interval(secs => $3::float8 / 1000)"
                        " WHERE id = $1::uuid"
                        "   AND state IN ('pending', 'in_progress', 'canceling', 'rolling_back')"
                        "   AND (owner_replica IS NULL OR owner_replica = $2 OR lease_until IS NULL"
                        "        OR lease_until < now())",
                        3, p, &rows, err);
    *claimed = rc == 0 && rows > 0;
    return rc;
}

int deploy_repo_count_states(pg_conn *c, long long counts[DEPLOY_STATE_COUNT], sx_err *err)
{
    memset(counts, 0, DEPLOY_STATE_COUNT * sizeof(counts[0]));
    PGresult *r;
    int rc = pg_exec(c, "SELECT state, count(*) FROM deployments GROUP BY state", 0, NULL, &r, err);
    if (rc)
        return rc;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        deploy_state s;
        long long n;
        if (deploy_state_parse(PQgetvalue(r, i, 0), &s) == 0 &&
            (rc = repo_i64(r, i, 1, 0, &n, err)) == 0)
            counts[s] = n;
    }
    PQclear(r);
    return rc;
}
