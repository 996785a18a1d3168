/*
 * controller.c — the Kubernetes source's loop: watch (client + maps), settle, translate,
 * write the configs of Gateways through the REST write path, write status back.
 */
#include "server/k8s/controller.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/base/arena.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/metrics.h"
#include "server/catalog.h"
#include "server/changes.h"
#include "server/config.h"
#include "server/groups.h"
#include "server/k8s/client.h"
#include "server/k8s/finalizer.h"
#include "server/k8s/gw.h"
#include "server/k8s/kinds.h"
#include "server/k8s/kubeconfig.h"
#include "server/k8s/reconcile.h"
#include "server/k8s/status_store.h"
#include "server/k8s/watchmap.h"
#include "server/server.h"
#include "storage/pg_listener.h"

#define COMPONENT    "kubernetes"
#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 30000

struct k8s_controller {
    struct sx_server *srv;
    const sextant_config *cfg;
    leader *lead;
    k8s_cfg *kcfg;
    wm_table *maps;
    k8s_client *client;
    const char **addresses; /* k8s.gateway_addresses as strings */
    size_t naddresses;
    atomic_bool lead_changed;   /* set by the leader's thread, taken by ours */
    atomic_bool groups_changed; /* a group's data planes changed (the listener's thread) */
    /* "ns/name" of a Gateway -> the spec this replica last wrote or found unchanged for
     * it, in this term: a pass writes only the Gateways whose translation differs, not
     * all of them (a transaction each). Emptied when the lead changes, at every
     * resync and when a write fails, so the database is asked again then. Our thread's. */
    json_t *written;
    k8s_rec *rec;            /* per-object reconcile: fingerprints, requeues (our thread's) */
    k8s_fin_guard guards[5]; /* the kinds whose deletion a finalizer holds */
    size_t n_guards;
    sx_metric *m_seconds, *m_status, *m_writes, *m_failures, *m_resyncs;
    sup_thread thread;
};

/* ------------------------------------------------------------------ one pass */

/* Whether this replica may write now (no leader: it always may). */
static bool leading(const k8s_controller *c)
{
    return c->lead == NULL || leader_is_leader(c->lead);
}

static void count(sx_metric *m, const char *result)
{
    const char *lv[] = {result};
    sx_metric_inc(m, lv);
}

/* The refusal of a spec by the write path, in one line for the Gateway's status. */
static void refusal_message(const val_result *problems, const sx_fielderrs *verrs,
                            const sx_err *err, char *out, size_t n)
{
    json_t *p = changes_problems_json(problems, verrs, "validate");
    json_t *first = json_array_get(p, 0);
    const char *msg = json_string_value(json_object_get(first, "message"));
    const char *path = json_string_value(json_object_get(first, "path"));
    if (msg)
        snprintf(out, n, "the configuration was refused: %s%s%s", path ? path : "",
                 path ? ": " : "", msg);
    else
        snprintf(out, n, "the configuration was refused: %s", err->message);
    json_decref(p);
}

/* Writes gateway i's config; returns 0, or an error worth retrying later with what
 * failed in why (n bytes). A build that failed or a spec refused for what it says is 0:
 * the Gateway's status says so. */
static int write_gateway(k8s_controller *c, gw_output *out, size_t i, char *why, size_t n)
{
    gw_gateway_out *g = &out->gateways[i];
    if (g->error) {
        sx_metric_inc(c->m_failures, NULL);
        SX_WARN(COMPONENT, "Gateway %s/%s keeps its last configuration: %s", g->ns, g->name,
                g->error);
        return 0;
    }
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", g->ns, g->name);
    json_t *before = json_object_get(c->written, key);
    if (before && json_equal(before, g->spec)) {
        count(c->m_writes, "unchanged");
        return 0;
    }
    sx_arena *a = sx_arena_create();
    const char *groups[] = {g->group};
    changes_managed m = {.ns = g->ns,
                         .name = g->name,
                         .groups = groups,
                         .group_count = 1,
                         .spec = g->spec,
                         .source_ref = g->source_ref,
                         .message = "translated from the Gateway API"};
    apply_result res = {0};
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    sx_err err = {0};
    int rc = changes_put_managed(c->srv, &m, a, &res, &problems, &verrs, &err);
    if (rc == 0) {
        json_object_set(c->written, key, g->spec);
        count(c->m_writes, res.changed ? "written" : "unchanged");
        if (res.changed)
            SX_INFO(COMPONENT, "Gateway %s/%s: config %s/%s v%d written (group %s)", g->ns, g->name,
                    g->ns, g->name, res.version, g->group);
    } else if ((rc == SX_EVALIDATION || rc == SX_ECONFLICT) && (problems.count || verrs.count)) {
        /* Refused for what it says: the status tells; retrying cannot help. */
        char msg[512];
        refusal_message(&problems, &verrs, &err, msg, sizeof(msg));
        count(c->m_writes, "refused");
        sx_metric_inc(c->m_failures, NULL);
        SX_WARN(COMPONENT, "Gateway %s/%s keeps its last configuration: %s", g->ns, g->name, msg);
        if (gw_output_fail(out, i, "Invalid", msg) != 0)
            SX_ERROR(COMPONENT, "bug: no Gateway %zu to fail", i);
        rc = 0;
    } else {
        /* The database is away, a rollout holds the group, a REST config has the name:
         * said, and tried again later. */
        count(c->m_writes, "error");
        snprintf(why, n, "config not written: %s", err.message);
        SX_WARN(COMPONENT, "Gateway %s/%s: config not written yet: %s", g->ns, g->name,
                err.message);
        if (rc == SX_ECONFLICT && gw_output_fail(out, i, "Invalid", err.message) != 0)
            SX_ERROR(COMPONENT, "bug: no Gateway %zu to fail", i);
    }
    if (rc != 0 || problems.count || verrs.count)
        json_object_del(c->written, key);
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
    sx_arena_destroy(a);
    return rc;
}

static bool has_gateway(const gw_output *out, const char *ns, const char *name)
{
    for (size_t i = 0; i < out->n_gateways; i++)
        if (strcmp(out->gateways[i].ns, ns) == 0 && strcmp(out->gateways[i].name, name) == 0)
            return true;
    return false;
}

/* Deletes the configs of the source whose Gateway is no longer one of ours. */
static int delete_gone(k8s_controller *c, const gw_output *out)
{
    int rc = 0;
    sx_arena *a = sx_arena_create();
    cfg_filter f = {.source = "kubernetes", .limit = 500};
    for (;;) {
        cfg_list list = {0};
        sx_err err = {0};
        if ((rc = catalog_configs(c->srv, &f, a, &list, &err)) != 0) {
            SX_WARN(COMPONENT, "cannot list the configs of Gateways: %s", err.message);
            break;
        }
        for (size_t i = 0; i < list.count && leading(c); i++) {
            const cfg_record *r = &list.items[i];
            if (has_gateway(out, r->ns, r->name))
                continue;
            apply_result res = {0};
            sx_fielderrs verrs = {0};
            int d = changes_delete_managed(c->srv, r->ns, r->name, "its Gateway is gone", a, &res,
                                           &verrs, &err);
            sx_fielderrs_free(&verrs);
            char key[600];
            snprintf(key, sizeof(key), "%s/%s", r->ns, r->name);
            json_object_del(c->written, key);
            if (d == 0 && res.changed) {
                count(c->m_writes, "deleted");
                SX_INFO(COMPONENT, "config %s/%s deleted: %s is gone", r->ns, r->name,
                        r->source_ref ? r->source_ref : "its Gateway");
            } else if (d != 0) {
                count(c->m_writes, "error");
                SX_WARN(COMPONENT, "config %s/%s not deleted yet: %s", r->ns, r->name, err.message);
                rc = d;
            }
        }
        if (list.next_cursor == NULL)
            break;
        f.cursor = list.next_cursor;
    }
    sx_arena_destroy(a);
    return rc;
}

/* The merge patch of a status: the new status, and null for every key the old one had
 * that the new one lacks (a merge patch would keep them otherwise). */
static json_t *status_patch(const json_t *now, const json_t *before)
{
    json_t *p = json_deep_copy(now);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)before, k, v)
    {
        if (json_object_get(now, k) == NULL)
            json_object_set_new(p, k, json_null());
    }
    return p;
}

static const json_t *current_status(const wm_table_state *ts, const gw_status_out *s)
{
    const wm_state *st = wm_table_state_find(ts, gw_kind_name(s->kind));
    if (st == NULL)
        return NULL;
    char key[600];
    if (s->ns && s->ns[0])
        snprintf(key, sizeof(key), "%s/%s", s->ns, s->name);
    else
        snprintf(key, sizeof(key), "%s", s->name);
    long i = wm_state_find(st, key);
    return i < 0 ? NULL : json_object_get(st->values[i], "status");
}

/* Keeps s's status in the database as the cluster now holds it; 0, or an error with
 * what failed in why. */
static int store_status(k8s_controller *c, const gw_status_out *s, char *why, size_t n)
{
    sx_err err = {0};
    if (k8s_sstore_put(c->srv, c->cfg->k8s.controller_name, s, &err) == 0)
        return 0;
    snprintf(why, n, "status not stored: %s", err.message);
    SX_WARN(COMPONENT, "status of %s %s%s%s not stored: %s", gw_kind_name(s->kind),
            s->ns ? s->ns : "", s->ns ? "/" : "", s->name, err.message);
    return err.code ? err.code : SX_EUNAVAILABLE;
}

/* Drops the stored status of s's object, which is gone or going. */
static void forget_status(k8s_controller *c, const gw_status_out *s)
{
    sx_err err = {0};
    if (k8s_sstore_forget(c->srv, s, &err) != 0)
        SX_WARN(COMPONENT, "stored status of %s %s%s%s not dropped: %s", gw_kind_name(s->kind),
                s->ns ? s->ns : "", s->ns ? "/" : "", s->name, err.message);
}

/* Writes s when it changed (with resource_version as precondition, NULL: s's own) and
 * stores what the cluster holds then; returns 0, or an error with what failed in why. */
static int write_status(k8s_controller *c, const gw_status_out *s, const wm_table_state *ts,
                        const char *resource_version, char *why, size_t n)
{
    if (!s->changed)
        return store_status(c, s, why, n); /* the cluster holds it already */
    const json_t *before = current_status(ts, s);
    json_t *patch = status_patch(s->status, before);
    sx_err err = {0};
    int code = k8s_patch_status(c->client, gw_kind_name(s->kind), s->ns, s->name, patch,
                                resource_version ? resource_version : s->resource_version, &err);
    json_decref(patch);
    if (code >= 200 && code < 300) {
        count(c->m_status, "written");
        return store_status(c, s, why, n);
    }
    if (code == 404) {
        count(c->m_status, "gone"); /* deleted since: its deletion is on its way */
        forget_status(c, s);
        return 0;
    }
    /* 409: changed since it was read; the watch brings the newer object, and the
     * requeue tries again should it not. */
    count(c->m_status, code == 409 ? "conflict" : "error");
    snprintf(why, n, "status not written: %s", err.message);
    if (code != 409)
        SX_WARN(COMPONENT, "status of %s %s%s%s not written: %s", gw_kind_name(s->kind),
                s->ns ? s->ns : "", s->ns ? "/" : "", s->name, err.message);
    return code < 0 ? code : SX_EUNAVAILABLE;
}

static void key_of(const char *ns, const char *name, char *out, size_t n)
{
    if (ns && ns[0])
        snprintf(out, n, "%s/%s", ns, name);
    else
        snprintf(out, n, "%s", name);
}

static const k8s_fin_guard *guard_of(const k8s_controller *c, const char *kind)
{
    for (size_t i = 0; i < c->n_guards; i++)
        if (strcmp(c->guards[i].kind, kind) == 0)
            return &c->guards[i];
    return NULL;
}

/* Adds or removes obj's finalizer; 0, or an error with why. *rv is set to the new
 * resourceVersion after a change (free it). */
static int patch_finalizer(k8s_controller *c, const char *kind, const json_t *obj, k8s_fin_action a,
                           char **rv, char *why, size_t n)
{
    *rv = NULL;
    json_t *patch = k8s_fin_patch(obj, a);
    if (patch == NULL)
        return 0;
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    sx_err err = {0};
    int code = k8s_patch_object(c->client, kind, ns, name, patch, rv, &err);
    json_decref(patch);
    if ((code >= 200 && code < 300) || (code == 404 && a == K8S_FIN_REMOVE)) {
        bool deleting = json_object_get(meta, "deletionTimestamp") != NULL;
        SX_INFO(COMPONENT, "%s %s%s%s: finalizer %s %s", kind, ns ? ns : "", ns ? "/" : "", name,
                K8S_FINALIZER,
                a == K8S_FIN_ADD ? "added"
                : deleting       ? "removed: nothing holds its deletion any more"
                                 : "removed: it is not ours any more");
        return 0;
    }
    snprintf(why, n, "finalizer not %s: %s", a == K8S_FIN_ADD ? "added" : "removed", err.message);
    return code < 0 ? code : SX_EUNAVAILABLE;
}

/* The object of kind at key in ts (borrowed), or NULL. */
static const json_t *object_at(const wm_table_state *ts, const char *kind, const char *key)
{
    const wm_state *st = wm_table_state_find(ts, kind);
    long i = st ? wm_state_find(st, key) : -1;
    return i < 0 ? NULL : st->values[i];
}

/* Guarded objects that are not ours but carry our finalizer (their kind is judged, but
 * they have no status of ours): the finalizer goes. */
static void release_foreign(k8s_controller *c, const wm_table_state *ts, const json_t *judged,
                            int64_t now, bool all)
{
    for (size_t g = 0; g < c->n_guards && leading(c); g++) {
        const wm_state *st = wm_table_state_find(ts, c->guards[g].kind);
        for (size_t i = 0; st && i < st->n && leading(c); i++) {
            char jk[700];
            snprintf(jk, sizeof(jk), "%s|%s", c->guards[g].kind, st->keys[i]);
            if (json_object_get(judged, jk))
                continue;
            json_t *holders = NULL;
            k8s_fin_action a = k8s_fin_judge(&c->guards[g], st->values[i], ts, &holders);
            json_decref(holders);
            if (a != K8S_FIN_REMOVE)
                continue;
            const char *kind = c->guards[g].kind;
            if (!k8s_rec_wanted(c->rec, kind, st->keys[i], NULL, true, now, all))
                continue;
            char why[1024] = "", *rv = NULL;
            int rc = patch_finalizer(c, kind, st->values[i], a, &rv, why, sizeof(why));
            sx_free(rv);
            k8s_rec_done(c->rec, kind, st->keys[i], rc == 0 ? K8S_REC_SUCCESS : K8S_REC_ERROR, why,
                         now);
        }
    }
}

/* Reconciles judged object s (gateway g or NULL): its finalizer, its config, its
 * status. Returns the result, with why. *db_down is set when the database is away (the
 * configs of the Gateways after it are then not tried in this pass). */
static k8s_rec_result reconcile_one(k8s_controller *c, gw_output *out, gw_status_out *s, long gi,
                                    k8s_fin_action fin, const json_t *obj, const wm_table_state *ts,
                                    bool *db_down, char *why, size_t n)
{
    bool failed = false;
    char *rv = NULL;
    if (fin == K8S_FIN_ADD || fin == K8S_FIN_REMOVE) {
        if (patch_finalizer(c, gw_kind_name(s->kind), obj, fin, &rv, why, n) != 0)
            return K8S_REC_ERROR;
        if (fin == K8S_FIN_REMOVE) {
            sx_free(rv);
            forget_status(c, s);
            return K8S_REC_SUCCESS; /* the object goes now: no status to write */
        }
    }
    if (gi >= 0 && *db_down) {
        snprintf(why, n, "config not written: the database is unavailable");
        failed = true;
    } else if (gi >= 0) {
        int w = write_gateway(c, out, (size_t)gi, why, n);
        failed = w != 0;
        if (w == SX_EUNAVAILABLE)
            *db_down = true;
    }
    char swhy[1024] = "";
    if (write_status(c, s, ts, rv, swhy, sizeof(swhy)) != 0) {
        if (!failed)
            snprintf(why, n, "%s", swhy);
        failed = true;
    }
    sx_free(rv);
    if (failed)
        return K8S_REC_ERROR;
    if (k8s_rec_status_problem(s->status, c->cfg->k8s.controller_name, why, n))
        return K8S_REC_INVALID;
    return K8S_REC_SUCCESS;
}

/*
 * Policies that only some data planes take (AIService, TokenPolicy, WasmPlugin) need the
 * data planes of the Gateways' groups, which live in the database: when any exists, the
 * groups of the first translation's Gateways are read, out is freed, and the options of in
 * get them (in a); the caller translates again. Returns whether it did. Without the
 * database the groups are taken to serve the default, and the writes that follow fail
 * and are retried anyway.
 */
static bool with_planes(k8s_controller *c, gw_input *in, gw_output *out, sx_arena *a)
{
    if (out->n_gateways == 0 || in->objects[GW_AI_SERVICE].count +
                                        in->objects[GW_TOKEN_POLICY].count +
                                        in->objects[GW_WASM_PLUGIN].count ==
                                    0)
        return false;
    size_t n = out->n_gateways;
    const char **groups = sx_arena_alloc(a, n * sizeof *groups);
    for (size_t i = 0; i < n; i++)
        groups[i] = sx_arena_strdup(a, out->gateways[i].group);
    unsigned *planes = NULL;
    sx_err err = {0};
    if (catalog_group_planes(c->srv, groups, n, a, &planes, &err) != 0) {
        SX_WARN(COMPONENT, "cannot read the data planes of the Gateways' groups: %s", err.message);
        return false;
    }
    gw_group_planes *gp = sx_arena_alloc(a, n * sizeof *gp);
    for (size_t i = 0; i < n; i++)
        gp[i] = (gw_group_planes){groups[i], planes[i]};
    in->options.group_planes = gp;
    in->options.n_group_planes = n;
    in->options.default_planes = c->cfg->groups.default_planes;
    gw_output_free(out);
    return true;
}

/* One pass over what the maps hold now: translate everything, then reconcile each judged
 * object the bookkeeping wants (all of them when all is set). Returns 0, or an error when
 * the configs of vanished Gateways could not all be deleted (tried again later); the
 * failures of single objects are requeued by the bookkeeping instead. */
static int sync_once(k8s_controller *c, bool all)
{
    const sextant_config *cfg = c->cfg;
    wm_table_state *ts = wm_table_load_all(c->maps);
    gw_input in = {0};
    for (int k = 0; k < GW_KIND_COUNT; k++) {
        const wm_state *st = wm_table_state_find(ts, gw_kind_name((gw_kind)k));
        if (st)
            in.objects[k] = (gw_objects){(const json_t *const *)st->values, st->n};
    }
    in.options = (gw_options){
        .controller_name = cfg->k8s.controller_name,
        .group_template = cfg->k8s.group_template,
        .limits = {.max_input_objects = (size_t)cfg->k8s.max_input_objects,
                   .max_snapshot_objects = (size_t)cfg->k8s.max_objects_per_snapshot,
                   .max_snapshot_endpoints = (size_t)cfg->k8s.max_endpoints_per_snapshot},
        .regex_max_program_size = cfg->validation.regex_max_program_size,
        .gateway_addresses = c->addresses,
        .n_gateway_addresses = c->naddresses,
    };
    in.now = (int64_t)time(NULL);
    int64_t t0 = sx_monotonic_ms();
    gw_output out = {0};
    sx_err err = {0};
    int rc = gw_translate(&in, &out, &err);
    sx_arena *pa = sx_arena_create();
    if (rc == 0 && with_planes(c, &in, &out, pa))
        rc = gw_translate(&in, &out, &err);
    in.options.group_planes = NULL; /* in pa: the output holds copies of what it needs */
    sx_arena_destroy(pa);
    sx_metric_observe(c->m_seconds, NULL, (double)(sx_monotonic_ms() - t0) / 1000.0);
    if (rc != 0) {
        SX_ERROR(COMPONENT, "cannot translate the Gateway API objects: %s", err.message);
        gw_output_free(&out);
        wm_table_state_free(ts);
        return 0; /* a configuration problem: retrying cannot help */
    }
    char now_text[32];
    struct tm tm;
    time_t now_s = (time_t)in.now;
    gmtime_r(&now_s, &tm);
    strftime(now_text, sizeof now_text, "%Y-%m-%dT%H:%M:%SZ", &tm);

    json_t *gw_index = json_object(); /* "ns/name" -> index in out.gateways */
    for (size_t i = 0; i < out.n_gateways; i++) {
        char key[600];
        key_of(out.gateways[i].ns, out.gateways[i].name, key, sizeof(key));
        json_object_set_new(gw_index, key, json_integer((json_int_t)i));
    }
    json_t *judged = json_object(); /* "<kind>|<key>" of guarded objects with a status of ours */
    int64_t now = sx_monotonic_ms();
    bool db_down = false, complete = true;
    k8s_rec_begin(c->rec);
    for (size_t i = 0; i < out.n_statuses; i++) {
        if (!leading(c)) {
            complete = false;
            break;
        }
        gw_status_out *s = &out.statuses[i];
        const char *kind = gw_kind_name(s->kind);
        char key[600];
        key_of(s->ns, s->name, key, sizeof(key));
        const json_t *obj = object_at(ts, kind, key);
        const k8s_fin_guard *guard = guard_of(c, kind);
        k8s_fin_action fin = K8S_FIN_NONE;
        size_t n_holders = 0;
        if (guard && obj) {
            char jk[700];
            snprintf(jk, sizeof(jk), "%s|%s", kind, key);
            json_object_set_new(judged, jk, json_true());
            json_t *holders = NULL;
            fin = k8s_fin_judge(guard, obj, ts, &holders);
            k8s_fin_condition(s->status, s->prev_, fin, holders, s->generation, now_text);
            json_t *empty = json_object();
            s->changed = !json_equal(s->status, s->prev_ ? s->prev_ : empty);
            json_decref(empty);
            n_holders = json_array_size(holders);
            json_decref(holders);
        }
        const json_t *gi_json = s->kind == GW_GATEWAY ? json_object_get(gw_index, key) : NULL;
        long gi = gi_json ? (long)json_integer_value(gi_json) : -1;
        json_t *fp = json_pack("{s:O}", "status", s->status);
        if (gi >= 0) {
            json_object_set(fp, "spec",
                            out.gateways[gi].spec ? out.gateways[gi].spec : json_null());
            if (out.gateways[gi].error)
                json_object_set_new(fp, "error", json_string(out.gateways[gi].error));
        }
        bool dirty = s->changed || fin == K8S_FIN_ADD || fin == K8S_FIN_REMOVE;
        if (!k8s_rec_wanted(c->rec, kind, key, fp, dirty, now, all))
            continue;
        if (fin == K8S_FIN_HOLD) /* said when what holds it changes (its status does) */
            SX_INFO(COMPONENT, "%s %s: deletion held by %zu object%s still using it", kind, key,
                    n_holders, n_holders == 1 ? "" : "s");
        char why[1024] = "";
        k8s_rec_result r = reconcile_one(c, &out, s, gi, fin, obj, ts, &db_down, why, sizeof(why));
        k8s_rec_done(c->rec, kind, key, r, why, now);
    }
    if (complete && leading(c))
        release_foreign(c, ts, judged, now, all);
    if (complete && leading(c))
        k8s_rec_end(c->rec);
    json_decref(judged);
    json_decref(gw_index);
    rc = 0;
    if (complete && !db_down && leading(c)) {
        sx_err serr = {0};
        if (k8s_sstore_sweep(c->srv, &out, &serr) != 0) {
            SX_WARN(COMPONENT, "stored statuses of objects gone not dropped yet: %s", serr.message);
            rc = serr.code ? serr.code : SX_EUNAVAILABLE;
        }
        int d = delete_gone(c, &out);
        if (d != 0)
            rc = d;
    } else if (db_down)
        rc = SX_EUNAVAILABLE; /* vanished Gateways' configs are deleted once it is back */
    if (!leading(c) && rc == 0)
        rc = SX_EUNAVAILABLE; /* lost the lead half-way: the next leader does it again */
    gw_output_free(&out);
    wm_table_state_free(ts);
    return rc;
}

/* ------------------------------------------------------------------ the loop */

/* Waits while changes keep coming: returns once the maps were quiet for settle_delay,
 * or settle_max after the first change, with the generation then. */
static uint64_t settle(k8s_controller *c, uint64_t gen)
{
    int64_t first = sx_monotonic_ms();
    int64_t delay = c->cfg->k8s.settle_delay_ms, max = c->cfg->k8s.settle_max_ms;
    for (;;) {
        int64_t left = first + max - sx_monotonic_ms();
        if (left <= 0 || delay <= 0 || sup_stopping(c->srv->sup))
            return gen;
        uint64_t g = wm_table_wait(c->maps, gen, delay < left ? delay : left);
        if (g == gen)
            return gen;
        gen = g;
    }
}

static void *run(void *ctx)
{
    k8s_controller *c = ctx;
    sup_supervisor *sup = c->srv->sup;
    sx_err err = {0};
    if (k8s_client_start(c->client, &err) != 0) {
        SX_ERROR(COMPONENT, "cannot start watching Kubernetes: %s", err.message);
        return NULL;
    }
    uint64_t seen = 0;
    while (!sup_stopping(sup) && !k8s_client_synced(c->client))
        seen = wm_table_wait(c->maps, seen, 200);
    if (!sup_stopping(sup))
        SX_INFO(COMPONENT, "every watched kind is listed; translating");
    /* pending: a pass is due; all: it reconciles every object (the first pass, a
     * resync, a new term). retry_at: when a pass that could not delete the configs of
     * vanished Gateways is tried again (0: none). */
    bool pending = true, all = true;
    int backoff = 0;
    int64_t retry_at = 0, resync = c->cfg->k8s.resync_ms;
    int64_t next_resync = resync > 0 ? sx_monotonic_ms() + resync : INT64_MAX;
    bool resyncing = false; /* a resync pass is due or running (counted when over) */
    while (!sup_stopping(sup)) {
        int64_t now = sx_monotonic_ms();
        int64_t wake_at = k8s_rec_next_due(c->rec);
        if (retry_at > 0 && retry_at < wake_at)
            wake_at = retry_at;
        if (next_resync < wake_at)
            wake_at = next_resync;
        int64_t wait = wake_at - now;
        if (wait > 1000)
            wait = 1000;
        if (wait < 0 || (pending && leading(c)))
            wait = 0;
        if (!leading(c))
            wait = 1000; /* a standby only follows the maps; gaining the lead wakes it */
        uint64_t g = wm_table_wait(c->maps, seen, wait);
        if (sup_stopping(sup))
            break;
        if (g != seen) {
            seen = settle(c, g);
            pending = true;
        }
        if (atomic_exchange(&c->lead_changed, false)) {
            pending = all = true;
            json_object_clear(c->written);
        }
        if (atomic_exchange(&c->groups_changed, false))
            pending = true; /* what the Gateways' groups can take may have changed */
        now = sx_monotonic_ms();
        if (now >= next_resync) {
            /* Every object again, its config checked against the database again: what
             * no watch event tells (a certificate expiring, a write lost) is found. */
            pending = all = true;
            json_object_clear(c->written);
            next_resync = now + resync;
            if (leading(c)) {
                resyncing = true;
                SX_INFO(COMPONENT, "resync: reconciling every watched object");
            }
        }
        if (k8s_rec_next_due(c->rec) <= now || (retry_at > 0 && retry_at <= now))
            pending = true;
        if (!pending || !leading(c))
            continue;
        bool was_all = all;
        pending = all = false;
        int synced = sync_once(c, was_all);
        if (resyncing && was_all) {
            /* Counted once the pass that reconciled every object is over. */
            sx_metric_inc(c->m_resyncs, NULL);
            resyncing = false;
        }
        if (synced == 0) {
            backoff = 0;
            retry_at = 0;
        } else {
            backoff = sx_backoff_next(backoff, RETRY_MIN_MS, RETRY_MAX_MS);
            retry_at = sx_monotonic_ms() + backoff;
            if (!leading(c))
                all = true; /* cut short: whoever leads next does everything */
        }
    }
    k8s_client_stop(c->client);
    return NULL;
}

static void wake(void *ctx)
{
    k8s_controller *c = ctx;
    wm_table_wake(c->maps);
}

static bool ready(void *ctx)
{
    k8s_controller *c = ctx;
    return k8s_client_synced(c->client);
}

static void on_lead(void *ctx, bool leads, uint64_t term)
{
    (void)term;
    k8s_controller *c = ctx;
    if (leads)
        SX_INFO(COMPONENT, "leading: this replica writes the Gateway API's configs and status");
    atomic_store(&c->lead_changed, true);
    wm_table_wake(c->maps);
}

/* A group's data planes changed (GROUPS_NOTIFY_CHANNEL), on any replica, or the
 * listener reconnected and may have missed that: translate again, so a policy a
 * Gateway's group can now take (or no longer can) follows without waiting for an event
 * of Kubernetes. An unchanged translation writes nothing. */
static void on_groups(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    k8s_controller *c = ctx;
    if (payload && payload[0] && leading(c))
        SX_INFO(COMPONENT, "the data planes of group %s changed: translating again", payload);
    atomic_store(&c->groups_changed, true);
    wm_table_wake(c->maps);
}

static void on_groups_resync(void *ctx)
{
    on_groups(ctx, GROUPS_NOTIFY_CHANNEL, "");
}

/* ------------------------------------------------------------------ lifecycle */

int k8s_ctl_create(struct sx_server *srv, leader *lead, k8s_controller **out, sx_err *err)
{
    *out = NULL;
    const sextant_config *cfg = srv->config;
    k8s_cfg *kcfg = NULL;
    int rc = k8s_cfg_load(cfg->k8s.kubeconfig, NULL, &kcfg, err);
    if (rc != 0)
        return rc;
    k8s_controller *c = sx_calloc(1, sizeof(*c));
    c->srv = srv;
    c->cfg = cfg;
    c->lead = lead;
    c->kcfg = kcfg;
    c->maps = wm_table_create();
    c->written = json_object();
    c->rec = k8s_rec_create(srv->metrics, 1000, cfg->k8s.max_backoff_ms);
    c->guards[c->n_guards++] =
        k8s_fin_gateway_class((const char *const *)&cfg->k8s.controller_name);
    c->guards[c->n_guards++] = k8s_fin_sextant("WasmPlugin");
    c->guards[c->n_guards++] = k8s_fin_sextant("AIService");
    c->guards[c->n_guards++] = k8s_fin_sextant("TokenPolicy");
    c->guards[c->n_guards++] = k8s_fin_sextant("BackendLBPolicy");
    size_t nkinds;
    const k8s_kind *kinds = k8s_kind_table(&nkinds);
    k8s_client_options o = {.cfg = kcfg,
                            .maps = c->maps,
                            .kinds = kinds,
                            .nkinds = nkinds,
                            .metrics = srv->metrics,
                            .watch_timeout_s = (int)(cfg->k8s.watch_timeout_ms / 1000)};
    if ((rc = k8s_client_create(&o, &c->client, err)) != 0) {
        k8s_ctl_destroy(c);
        return rc;
    }
    c->naddresses = cfg->k8s.gateway_addresses.count;
    c->addresses = sx_calloc(c->naddresses ? c->naddresses : 1, sizeof(*c->addresses));
    for (size_t i = 0; i < c->naddresses; i++)
        c->addresses[i] = cfg->k8s.gateway_addresses.items[i].value;
    static const double bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    c->m_seconds = sx_metrics_histogram(srv->metrics, "sextant_k8s_translation_seconds",
                                        "Time to translate every watched object once", NULL, bounds,
                                        sizeof(bounds) / sizeof(bounds[0]));
    c->m_status =
        sx_metrics_counter(srv->metrics, "sextant_k8s_status_writes_total",
                           "Status write-backs to the Kubernetes API, by result", "result");
    c->m_writes = sx_metrics_counter(srv->metrics, "sextant_k8s_config_writes_total",
                                     "Configs of Gateways written, by result", "result");
    c->m_failures = sx_metrics_counter(srv->metrics, "sextant_k8s_build_failures_total",
                                       "Gateways whose translation failed or was refused; "
                                       "they keep their last configuration",
                                       NULL);
    c->m_resyncs =
        sx_metrics_counter(srv->metrics, "sextant_k8s_resyncs_total",
                           "Passes reconciling every watched object after k8s.resync", NULL);
    atomic_init(&c->lead_changed, false);
    atomic_init(&c->groups_changed, false);
    if (srv->listener && (rc = pg_listener_subscribe(srv->listener, GROUPS_NOTIFY_CHANNEL,
                                                     on_groups, on_groups_resync, c, err)) != 0) {
        k8s_ctl_destroy(c);
        return rc;
    }
    if (lead)
        leader_subscribe(lead, on_lead, c);
    c->thread = (sup_thread){
        .run = run, .wake = wake, .ready = ready, .ctx = c, .what = "the Kubernetes watch path"};
    *out = c;
    return 0;
}

sup_thread *k8s_ctl_component(k8s_controller *c)
{
    return &c->thread;
}

void k8s_ctl_destroy(k8s_controller *c)
{
    if (c == NULL)
        return;
    k8s_client_destroy(c->client);
    wm_table_destroy(c->maps);
    json_decref(c->written);
    k8s_rec_destroy(c->rec);
    k8s_cfg_free(c->kcfg);
    sx_free(c->addresses);
    sx_free(c);
}
