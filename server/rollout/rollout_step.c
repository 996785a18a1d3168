/*
 * rollout_step.c — the driver's steps of a deployment (see rollout.h for the state
 * machine): start a pending deployment, tally the current wave's ACKs and NACKs and
 * complete, fail or advance it, and finish a cancel or a rollback.
 *
 * Each step is one transaction holding the deployment's row lock (deploy_repo_lock),
 * re-reading its state first, so a step is never taken twice, whichever replica's
 * driver takes it.
 */
#include "server/rollout/rollout_internal.h"

#include <string.h>

#include "server/apply.h"
#include "server/base/log.h"
#include "server/config.h"
#include "server/server.h"
#include "storage/repo_configs.h"
#include "storage/repo_pins.h"
#include "storage/repo_snapshots.h"

typedef struct step_ctx {
    struct sx_server *srv;
    const char *id;
    const char *replica;
    sx_arena *a;
    snap_record **written;
    size_t nwritten;
    double wave_seconds;    /* > 0: a wave completed, its duration */
    const json_t *promoted; /* {"group": version} made current, for the cache */
    const char *bg_outcome; /* a blue-green hold ended on its timeout: how (metrics) */
} step_ctx;

/* Pending: pin every node of the plan to what it has, then start the first wave. */
static int step_pending(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        n += d->waves[i].node_count;
    const char **all = sx_arena_alloc(x->a, (n ? n : 1) * sizeof(*all));
    size_t k = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        for (size_t j = 0; j < d->waves[i].node_count; j++)
            all[k++] = d->waves[i].node_ids[j];
    int rc = pin_repo_set(c, all, n, d->baseline_snapshots, d->id, NULL, err);
    if (rc || (rc = deploy_repo_set_state(c, d->id, DEPLOY_PENDING, DEPLOY_IN_PROGRESS, "started",
                                          err)) != 0)
        return rc;
    d->state = DEPLOY_IN_PROGRESS;
    if (d->wave_count == 0)
        return 0;
    return rollout_start_wave(c, x->srv, d, 0, err);
}

/* Completion: promote (unless promote is off), release the pins, record it. */
static int complete(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    int rc;
    if (d->promote) {
        int released = 0;
        if ((rc = apply_promote(c, d, x->a, err)) != 0 ||
            (rc = deploy_repo_mark(c, d->id, DEPLOY_MARK_PROMOTED, err)) != 0 ||
            (rc = pin_repo_release_deployment(c, d->id, &released, err)) != 0 ||
            (rc = rollout_notify_pins(c, d, err)) != 0)
            return rc;
        x->promoted = d->target_snapshots;
    }
    if ((rc = deploy_repo_set_state(c, d->id, DEPLOY_IN_PROGRESS, DEPLOY_COMPLETED,
                                    "every wave ACKed", err)) != 0)
        return rc;
    json_t *details = json_pack("{s:i,s:b,s:O}", "waves", (int)d->wave_count, "promoted",
                                d->promote, "targets", d->target_snapshots);
    if ((rc = rollout_audit(c, x->srv, NULL, "deployment.complete", "deployment", d->id, details,
                            err)) != 0 ||
        (rc = rollout_emit(
             c, x->srv, "rollout_completed", d,
             json_pack("{s:i,s:b}", "waves", (int)d->wave_count, "promoted", d->promote), err)) !=
            0)
        return rc;
    sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG, json_pack("{s:s}", "deployment", d->id),
                  "deployment %s completed", d->id);
    return 0;
}

/* The wave failed for reason: record it, then start the automatic rollback. */
static int fail(pg_conn *c, step_ctx *x, deploy_record *d, int k, const char *reason, sx_err *err)
{
    int rc = rollout_set_wave_state(c, d, k, DEPLOY_WAVE_IN_PROGRESS, DEPLOY_WAVE_FAILED, err);
    if (rc ||
        (rc = deploy_repo_set_state(c, d->id, DEPLOY_IN_PROGRESS, DEPLOY_FAILED, reason, err)) != 0)
        return rc;
    d->waves[k].state = DEPLOY_WAVE_FAILED;
    json_t *details = json_pack("{s:s,s:i}", "reason", reason, "wave", k);
    if ((rc = rollout_audit(c, x->srv, NULL, "deployment.fail", "deployment", d->id, details,
                            err)) != 0 ||
        (rc = rollout_emit(c, x->srv, "rollout_failed", d,
                           json_pack("{s:s,s:i}", "reason", reason, "wave", k), err)) != 0)
        return rc;
    return rollout_begin_rollback(c, x->srv, d, DEPLOY_FAILED, reason, NULL, x->a, &x->written,
                                  &x->nwritten, err);
}

/* Blue-green, green ACKed: wait for the operator's promote until promote_timeout (from
 * green's completion, or the last resume when later), then do what on_timeout says. */
static int hold_green(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    double since = d->waves[0].completed_age_s;
    if (d->resumed_at && d->resumed_age_s < since)
        since = d->resumed_age_s;
    long long timeout = rollout_strategy_promote_timeout_ms(d->strategy);
    if (since * 1000.0 <= (double)timeout)
        return 0;
    char t[32];
    config_format_duration(timeout, t, sizeof(t));
    if (rollout_strategy_on_timeout(d->strategy) == ROLLOUT_TIMEOUT_PROMOTE) {
        const char *why =
            sx_arena_printf(x->a, "not promoted within %s: promoted (on_timeout: promote)", t);
        x->bg_outcome = "promoted_on_timeout";
        return rollout_promote_blue(c, x->srv, d, "timeout", why, NULL, err);
    }
    const char *why = sx_arena_printf(
        x->a, "blue-green: not promoted within %s: rolled back (on_timeout: rollback)", t);
    x->bg_outcome = "rolled_back_on_timeout";
    return rollout_begin_rollback(c, x->srv, d, DEPLOY_IN_PROGRESS, why, NULL, x->a, &x->written,
                                  &x->nwritten, err);
}

static bool has_error_for(const json_t *errors, const char *node_id)
{
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "node_id"));
        if (n && strcmp(n, node_id) == 0)
            return true;
    }
    return false;
}

/* In progress: tally the current wave; complete, fail, or start the next one. */
static int step_in_progress(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    int k = d->current_wave;
    if (k < 0 || (size_t)k >= d->wave_count)
        return d->wave_count == 0 ? complete(c, x, d, err) : 0;
    deploy_wave *w = &d->waves[k];
    int rc;
    if (w->state == DEPLOY_WAVE_COMPLETED) {
        if ((size_t)k + 1 >= d->wave_count)
            return complete(c, x, d, err);
        if (rollout_awaiting_promotion(d))
            return hold_green(c, x, d, err);
        long long pause = rollout_strategy_pause_ms(d->strategy);
        if (w->completed_age_s * 1000.0 < (double)pause)
            return 0;
        return rollout_start_wave(c, x->srv, d, k + 1, err);
    }
    if (w->state != DEPLOY_WAVE_IN_PROGRESS)
        return 0;

    pin_answer *ans = NULL;
    size_t nans = 0;
    if ((rc = pin_repo_answers(c, (const char *const *)w->node_ids, w->node_count, x->a, &ans,
                               &nans, err)) != 0)
        return rc;
    int acks = 0, nacks = 0, unhealthy = 0;
    for (size_t i = 0; i < nans; i++) {
        long long t = rollout_target_of(d, ans[i].group);
        if (t <= 0)
            continue;
        if (ans[i].acked == t) {
            acks++;
        } else if (ans[i].nacked == t) {
            nacks++;
            if (!has_error_for(w->errors, ans[i].node_id)) {
                deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
                json_t *e =
                    json_pack("{s:s,s:I,s:s,s:s}", "node_id", ans[i].node_id, "version",
                              (json_int_t)t, "error", ans[i].nack_error ? ans[i].nack_error : "",
                              "at", ans[i].nack_at ? ans[i].nack_at : "");
                u.append_error = e;
                rc = deploy_repo_update_wave(c, d->id, k, &u, err);
                json_decref(e);
                if (rc)
                    return rc;
            }
        }
        if (ans[i].report_ready == 0 && ans[i].report_age_s < w->started_age_s)
            unhealthy++;
    }
    if (acks != w->acks || nacks != w->nacks) {
        deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
        u.acks = acks;
        u.nacks = nacks;
        if ((rc = deploy_repo_update_wave(c, d->id, k, &u, err)) != 0)
            return rc;
    }
    int responses = acks + nacks, total_nacks = nacks;
    for (int i = 0; i < k; i++) {
        responses += d->waves[i].acks + d->waves[i].nacks;
        total_nacks += d->waves[i].nacks;
    }
    double rate = responses ? (double)total_nacks / responses : 0;
    int size = (int)w->node_count;
    char *why = NULL;
    if (responses >= d->nack_min_sample && responses > 0 && rate > d->nack_threshold)
        why = sx_arena_printf(x->a,
                              "NACK rate %.1f%% (%d of %d responses) is over the threshold %.1f%%",
                              rate * 100, total_nacks, responses, d->nack_threshold * 100);
    else if (unhealthy >= d->health_failure_limit)
        why = sx_arena_printf(
            x->a, "health: %d node%s of wave %d of %zu reported not ready (limit %d)", unhealthy,
            unhealthy == 1 ? "" : "s", k + 1, d->wave_count, d->health_failure_limit);
    else if (acks + nacks >= size && nacks > 0 && responses < d->nack_min_sample)
        why = sx_arena_printf(x->a,
                              "wave %d of %zu: %d of %d nodes NACKed, and %d responses are too "
                              "few (minimum sample %d) to tolerate NACKs",
                              k + 1, d->wave_count, nacks, size, responses, d->nack_min_sample);
    else if (acks + nacks < size) {
        double since = w->started_age_s;
        if (d->resumed_at && d->resumed_age_s < since)
            since = d->resumed_age_s;
        if (since * 1000.0 > (double)d->wave_timeout_ms) {
            char t[32];
            config_format_duration(d->wave_timeout_ms, t, sizeof(t));
            why = sx_arena_printf(x->a, "wave %d of %zu timed out after %s: %d of %d nodes ACKed",
                                  k + 1, d->wave_count, t, acks, size);
        }
    }
    if (why)
        return fail(c, x, d, k, why, err);
    if (acks + nacks < size)
        return 0;
    /* Every node answered; NACKs (if any) are within the tolerated rate. */
    if ((rc = rollout_set_wave_state(c, d, k, DEPLOY_WAVE_IN_PROGRESS, DEPLOY_WAVE_COMPLETED,
                                     err)) != 0 ||
        (rc = rollout_emit(c, x->srv, "wave_completed", d,
                           json_pack("{s:i,s:i,s:i,s:i,s:f}", "wave", k, "waves",
                                     (int)d->wave_count, "acks", acks, "nacks", nacks,
                                     "duration_seconds", w->started_age_s),
                           err)) != 0)
        return rc;
    x->wave_seconds = w->started_age_s > 0 ? w->started_age_s : 1e-3;
    sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG,
                  json_pack("{s:s,s:i,s:i,s:i}", "deployment", d->id, "wave", k, "acks", acks,
                            "nacks", nacks),
                  "deployment %s: wave %d completed", d->id, k);
    return 0;
}

/* Rolling back: done once every connected node that had started is on its group's
 * current snapshot again; failed after the wave timeout. */
static int step_rolling_back(pg_conn *c, step_ctx *x, deploy_record *d, sx_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        if (d->waves[i].state == DEPLOY_WAVE_ROLLED_BACK)
            n += d->waves[i].node_count;
    const char **nodes = sx_arena_alloc(x->a, (n ? n : 1) * sizeof(*nodes));
    size_t k = 0;
    for (size_t i = 0; i < d->wave_count; i++)
        if (d->waves[i].state == DEPLOY_WAVE_ROLLED_BACK)
            for (size_t j = 0; j < d->waves[i].node_count; j++)
                nodes[k++] = d->waves[i].node_ids[j];
    pin_answer *ans = NULL;
    size_t nans = 0;
    int rc = pin_repo_answers(c, nodes, n, x->a, &ans, &nans, err);
    if (rc)
        return rc;
    json_t *current = rollout_own(x->a, json_object());
    json_t *missing = rollout_own(x->a, json_array());
    for (size_t i = 0; i < nans; i++) {
        json_t *cv = json_object_get(current, ans[i].group);
        long long want;
        if (cv == NULL) {
            if ((rc = snap_repo_current_version(c, ans[i].group, &want, err)) != 0)
                return rc;
            json_object_set_new(current, ans[i].group, json_integer(want));
        } else {
            want = (long long)json_integer_value(cv);
        }
        if (ans[i].connected && ans[i].acked != want)
            json_array_append_new(missing, json_string(ans[i].node_id));
    }
    size_t left = json_array_size(missing);
    if (left == 0) {
        if ((rc = deploy_repo_set_state(c, d->id, DEPLOY_ROLLING_BACK, DEPLOY_ROLLED_BACK, NULL,
                                        err)) != 0)
            return rc;
        json_t *details = json_pack("{s:i,s:s}", "nodes", (int)nans, "reason",
                                    d->state_reason ? d->state_reason : "");
        if ((rc = rollout_audit(c, x->srv, NULL, "deployment.rolled_back", "deployment", d->id,
                                details, err)) != 0)
            return rc;
        sx_log_fields(SX_LOG_INFO, ROLLOUT_LOG, json_pack("{s:s}", "deployment", d->id),
                      "deployment %s rolled back", d->id);
        return rollout_emit(c, x->srv, "rollback_completed", d,
                            json_pack("{s:s,s:i,s:o}", "result", "rolled_back", "nodes", (int)nans,
                                      "current_snapshots", json_deep_copy(current)),
                            err);
    }
    if (d->state_age_s * 1000.0 <= (double)d->wave_timeout_ms)
        return 0;
    char *why = sx_arena_printf(x->a,
                                "rollback timed out: %zu node%s did not return to their "
                                "previous snapshot",
                                left, left == 1 ? "" : "s");
    if ((rc = deploy_repo_set_state(c, d->id, DEPLOY_ROLLING_BACK, DEPLOY_ROLLBACK_FAILED, why,
                                    err)) != 0)
        return rc;
    json_t *details = json_pack("{s:s,s:O}", "reason", why, "nodes", missing);
    if ((rc = rollout_audit(c, x->srv, NULL, "deployment.rollback_failed", "deployment", d->id,
                            details, err)) != 0)
        return rc;
    return rollout_emit(
        c, x->srv, "rollback_completed", d,
        json_pack("{s:s,s:s,s:O}", "result", "rollback_failed", "reason", why, "nodes", missing),
        err);
}

static int step_tx(pg_conn *c, void *arg, sx_err *err)
{
    step_ctx *x = arg;
    x->written = NULL;
    x->nwritten = 0;
    x->wave_seconds = 0;
    x->promoted = NULL;
    x->bg_outcome = NULL;
    deploy_record *d = NULL;
    int rc = deploy_repo_lock(c, x->id, x->a, &d, err);
    if (rc)
        return rc;
    /* Another replica took it over since this one claimed it: leave it alone. */
    if (d->owner_replica == NULL || strcmp(d->owner_replica, x->replica) != 0)
        return 0;
    switch (d->state) {
    case DEPLOY_PENDING:
        return step_pending(c, x, d, err);
    case DEPLOY_IN_PROGRESS:
        return step_in_progress(c, x, d, err);
    case DEPLOY_CANCELING:
        return rollout_begin_rollback(c, x->srv, d, DEPLOY_CANCELING,
                                      d->state_reason && d->state_reason[0] ? d->state_reason
                                                                            : "canceled",
                                      NULL, x->a, &x->written, &x->nwritten, err);
    case DEPLOY_ROLLING_BACK:
        return step_rolling_back(c, x, d, err);
    default:
        return 0;
    }
}

int rollout_step(struct sx_server *srv, const char *id, const char *replica, double *wave_seconds,
                 sx_err *err)
{
    *wave_seconds = 0;
    sx_arena *a = sx_arena_create();
    step_ctx x = {.srv = srv, .id = id, .replica = replica, .a = a};
    int rc = pg_tx(srv->db, step_tx, &x, err);
    if (rc == 0) {
        for (size_t i = 0; i < x.nwritten; i++)
            snap_repo_cache_put(srv->snap_repo, x.written[i]);
        const char *group;
        json_t *v;
        json_object_foreach((json_t *)x.promoted, group, v)
            snap_repo_cache_current(srv->snap_repo, group, (long long)json_integer_value(v));
        *wave_seconds = x.wave_seconds;
        if (x.bg_outcome)
            rollout_count_bluegreen(srv, x.bg_outcome);
    }
    sx_arena_destroy(a);
    return rc;
}
