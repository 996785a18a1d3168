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
#include "server/k8s/client.h"
#include "server/k8s/gw.h"
#include "server/k8s/kinds.h"
#include "server/k8s/kubeconfig.h"
#include "server/k8s/watchmap.h"
#include "server/server.h"

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
    atomic_bool lead_changed; /* set by the leader's thread, taken by ours */
    /* "ns/name" of a Gateway -> the spec this replica last wrote or found unchanged for
     * it, in this term: a pass writes only the Gateways whose translation differs, not
     * all of them (a transaction each). Emptied when the lead changes, at every
     * resync and when a write fails, so the database is asked again then. Our thread's. */
    json_t *written;
    sx_metric *m_seconds, *m_status, *m_writes, *m_failures;
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

/* Writes gateway i's config; returns 0, or an error worth retrying later. */
static int write_gateway(k8s_controller *c, gw_output *out, size_t i)
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

/* Writes every changed status; returns 0 or an error worth retrying. */
static int write_statuses(k8s_controller *c, const gw_output *out, const wm_table_state *ts)
{
    int rc = 0;
    for (size_t i = 0; i < out->n_statuses && leading(c); i++) {
        const gw_status_out *s = &out->statuses[i];
        if (!s->changed)
            continue;
        const json_t *before = current_status(ts, s);
        json_t *patch = status_patch(s->status, before);
        sx_err err = {0};
        int code = k8s_patch_status(c->client, gw_kind_name(s->kind), s->ns, s->name, patch,
                                    s->resource_version, &err);
        json_decref(patch);
        if (code >= 200 && code < 300) {
            count(c->m_status, "written");
        } else if (code == 404) {
            count(c->m_status, "gone"); /* deleted since: its deletion is on its way */
        } else if (code == 409) {
            /* Changed since it was read: the watch brings the newer object, whose
             * change translates again. */
            count(c->m_status, "conflict");
        } else {
            count(c->m_status, "error");
            SX_WARN(COMPONENT, "status of %s %s%s%s not written: %s", gw_kind_name(s->kind),
                    s->ns ? s->ns : "", s->ns ? "/" : "", s->name, err.message);
            rc = code < 0 ? code : SX_EUNAVAILABLE;
        }
    }
    return rc;
}

/* One whole pass over what the maps hold now. Returns 0, or an error when something
 * should be tried again (the pass is idempotent: what was written is unchanged next
 * time). */
static int sync_once(k8s_controller *c)
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
    sx_metric_observe(c->m_seconds, NULL, (double)(sx_monotonic_ms() - t0) / 1000.0);
    if (rc != 0) {
        SX_ERROR(COMPONENT, "cannot translate the Gateway API objects: %s", err.message);
        gw_output_free(&out);
        wm_table_state_free(ts);
        return 0; /* a configuration problem: retrying cannot help */
    }
    rc = 0;
    for (size_t i = 0; i < out.n_gateways && leading(c); i++) {
        int w = write_gateway(c, &out, i);
        if (w != 0 && rc == 0)
            rc = w;
        if (w == SX_EUNAVAILABLE)
            break; /* the database is away: the others would fail alike (and each say so) */
    }
    if (rc == 0 && leading(c))
        rc = delete_gone(c, &out);
    int s = write_statuses(c, &out, ts);
    if (rc == 0)
        rc = s;
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
    bool dirty = true;
    int backoff = 0;
    int64_t retry_at = 0, resync = c->cfg->k8s.resync_ms;
    int64_t next_resync = resync > 0 ? sx_monotonic_ms() + resync : INT64_MAX;
    while (!sup_stopping(sup)) {
        int64_t now = sx_monotonic_ms();
        int64_t wait = 1000;
        if (dirty && retry_at > now && retry_at - now < wait)
            wait = retry_at - now;
        uint64_t g = wm_table_wait(c->maps, seen, dirty && retry_at <= now ? 0 : wait);
        if (sup_stopping(sup))
            break;
        if (g != seen) {
            seen = settle(c, g);
            dirty = true;
        }
        if (atomic_exchange(&c->lead_changed, false)) {
            dirty = true;
            json_object_clear(c->written);
        }
        now = sx_monotonic_ms();
        if (now >= next_resync) {
            dirty = true;
            json_object_clear(c->written);
            next_resync = now + resync;
        }
        if (!dirty || !leading(c) || now < retry_at)
            continue;
        if (sync_once(c) == 0) {
            dirty = false;
            backoff = 0;
            retry_at = 0;
        } else {
            backoff = sx_backoff_next(backoff, RETRY_MIN_MS, RETRY_MAX_MS);
            retry_at = sx_monotonic_ms() + backoff;
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
    atomic_init(&c->lead_changed, false);
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
    k8s_cfg_free(c->kcfg);
    sx_free(c->addresses);
    sx_free(c);
}
