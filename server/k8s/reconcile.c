/*
 * reconcile.c — per-object reconcile bookkeeping: fingerprints, requeue with doubling
 * back-off, and the reconcile metrics.
 *
 * Entries live in one array indexed by a JSON object ("<kind> <key>" -> index), so a
 * pass over n objects costs n look-ups; k8s_rec_end compacts the array and rebuilds the
 * index when objects went. The earliest requeue time is found by a scan: passes are far
 * rarer than the objects they name.
 */
#include "server/k8s/reconcile.h"

#include <stdio.h>
#include <string.h>

#include "server/base/log.h"
#include "server/base/mem.h"

#define COMPONENT "kubernetes"

typedef struct entry {
    char *kind, *key;
    json_t *fp;         /* the last fingerprint, or NULL (forgotten) */
    int failures;       /* consecutive failed reconciles */
    int64_t backoff_ms; /* the last requeue delay */
    int64_t due;        /* requeue time (monotonic ms); 0: none */
    bool seen;          /* named in the current pass */
} entry;

struct k8s_rec {
    entry *v;
    size_t n, cap;
    json_t *index; /* "<kind> <key>" -> index in v */
    int64_t min_ms, max_ms;
    sx_metric *m_total, *m_requeues, *m_backoff;
};

k8s_rec *k8s_rec_create(sx_metrics *metrics, int64_t min_backoff_ms, int64_t max_backoff_ms)
{
    k8s_rec *r = sx_calloc(1, sizeof(*r));
    r->index = json_object();
    r->min_ms = min_backoff_ms > 0 ? min_backoff_ms : 1000;
    r->max_ms = max_backoff_ms >= r->min_ms ? max_backoff_ms : r->min_ms;
    if (metrics) {
        static const double bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 3600};
        r->m_total = sx_metrics_counter(metrics, "sextant_k8s_reconcile_total",
                                        "Reconciles of watched objects, by kind and result "
                                        "(success, invalid, error)",
                                        "kind,result");
        r->m_requeues = sx_metrics_counter(metrics, "sextant_k8s_requeues_total",
                                           "Objects requeued after a failed reconcile", "kind");
        r->m_backoff = sx_metrics_histogram(metrics, "sextant_k8s_reconcile_backoff_seconds",
                                            "Requeue delays chosen after failed reconciles", "kind",
                                            bounds, sizeof(bounds) / sizeof(bounds[0]));
    }
    return r;
}

void k8s_rec_destroy(k8s_rec *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n; i++) {
        sx_free(r->v[i].kind);
        sx_free(r->v[i].key);
        json_decref(r->v[i].fp);
    }
    sx_free(r->v);
    json_decref(r->index);
    sx_free(r);
}

static void id_of(const char *kind, const char *key, char *out, size_t n)
{
    snprintf(out, n, "%s %s", kind, key);
}

static entry *find(const k8s_rec *r, const char *kind, const char *key)
{
    char id[700];
    id_of(kind, key, id, sizeof(id));
    const json_t *i = json_object_get(r->index, id);
    return i ? &r->v[json_integer_value(i)] : NULL;
}

void k8s_rec_begin(k8s_rec *r)
{
    for (size_t i = 0; i < r->n; i++)
        r->v[i].seen = false;
}

bool k8s_rec_wanted(k8s_rec *r, const char *kind, const char *key, json_t *fingerprint, bool dirty,
                    int64_t now, bool all)
{
    entry *e = find(r, kind, key);
    if (e == NULL) {
        if (r->n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 64;
            r->v = sx_realloc(r->v, r->cap * sizeof(*r->v));
        }
        e = &r->v[r->n];
        memset(e, 0, sizeof(*e));
        e->kind = sx_strdup(kind);
        e->key = sx_strdup(key);
        char id[700];
        id_of(kind, key, id, sizeof(id));
        json_object_set_new(r->index, id, json_integer((json_int_t)r->n));
        r->n++;
        all = true;
    }
    e->seen = true;
    bool same = e->fp != NULL &&
                (fingerprint == NULL ? json_is_null(e->fp) : json_equal(e->fp, fingerprint));
    json_decref(e->fp);
    e->fp = fingerprint ? fingerprint : json_null();
    return all || !same || (dirty && e->due == 0) || (e->due != 0 && e->due <= now);
}

int64_t k8s_rec_done(k8s_rec *r, const char *kind, const char *key, k8s_rec_result result,
                     const char *why, int64_t now)
{
    static const char *const names[] = {"success", "invalid", "error"};
    const char *lv[] = {kind, names[result]};
    if (r->m_total)
        sx_metric_inc(r->m_total, lv);
    entry *e = find(r, kind, key);
    if (e == NULL)
        return 0;
    if (result == K8S_REC_SUCCESS) {
        if (e->failures > 0)
            SX_INFO(COMPONENT, "%s %s reconciled after %d failed attempt%s", kind, key, e->failures,
                    e->failures == 1 ? "" : "s");
        e->failures = 0;
        e->backoff_ms = 0;
        e->due = 0;
        return 0;
    }
    e->failures++;
    e->backoff_ms = e->backoff_ms == 0 ? r->min_ms : e->backoff_ms * 2;
    if (e->backoff_ms > r->max_ms)
        e->backoff_ms = r->max_ms;
    e->due = now + e->backoff_ms;
    const char *kl[] = {kind};
    if (r->m_requeues)
        sx_metric_inc(r->m_requeues, kl);
    if (r->m_backoff)
        sx_metric_observe(r->m_backoff, kl, (double)e->backoff_ms / 1000.0);
    SX_WARN(COMPONENT, "%s %s: reconcile failed (%s): %s; requeued in %.3gs (attempt %d)", kind,
            key, names[result], why && why[0] ? why : "no reason given",
            (double)e->backoff_ms / 1000.0, e->failures);
    return e->backoff_ms;
}

void k8s_rec_end(k8s_rec *r)
{
    size_t w = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].seen) {
            r->v[w++] = r->v[i];
            continue;
        }
        sx_free(r->v[i].kind);
        sx_free(r->v[i].key);
        json_decref(r->v[i].fp);
    }
    if (w == r->n)
        return;
    r->n = w;
    json_object_clear(r->index);
    for (size_t i = 0; i < r->n; i++) {
        char id[700];
        id_of(r->v[i].kind, r->v[i].key, id, sizeof(id));
        json_object_set_new(r->index, id, json_integer((json_int_t)i));
    }
}

int64_t k8s_rec_next_due(const k8s_rec *r)
{
    int64_t due = INT64_MAX;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].due != 0 && r->v[i].due < due)
            due = r->v[i].due;
    return due;
}

int k8s_rec_failures(const k8s_rec *r, const char *kind, const char *key)
{
    const entry *e = find(r, kind, key);
    return e ? e->failures : 0;
}

void k8s_rec_forget_fingerprints(k8s_rec *r)
{
    for (size_t i = 0; i < r->n; i++) {
        json_decref(r->v[i].fp);
        r->v[i].fp = NULL;
    }
}

/* ------------------------------------------------------------------ status problems */

/* A condition of conds of a judged type that is "False": the most telling one, a
 * reference before acceptance before programming (which follow from the others). */
static bool false_condition(const json_t *conds, const char *prefix, char *why, size_t n)
{
    static const char *const types[] = {"ResolvedRefs", "Accepted", "Programmed"};
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        size_t i;
        const json_t *c;
        json_array_foreach(conds, i, c)
        {
            const char *type = json_string_value(json_object_get(c, "type"));
            const char *status = json_string_value(json_object_get(c, "status"));
            if (type == NULL || status == NULL || strcmp(status, "False") != 0 ||
                strcmp(type, types[t]) != 0)
                continue;
            const char *reason = json_string_value(json_object_get(c, "reason"));
            const char *msg = json_string_value(json_object_get(c, "message"));
            snprintf(why, n, "%s%s=False (%s): %s", prefix, type, reason ? reason : "",
                     msg ? msg : "");
            return true;
        }
    }
    return false;
}

static const char *ref_name(const json_t *ref, char *out, size_t n)
{
    const char *ns = json_string_value(json_object_get(ref, "namespace"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    snprintf(out, n, "%s %s%s%s: ", kind ? kind : "Gateway", ns ? ns : "", ns ? "/" : "",
             name ? name : "");
    return out;
}

bool k8s_rec_status_problem(const json_t *status, const char *controller_name, char *why, size_t n)
{
    if (!json_is_object(status))
        return false;
    size_t i;
    const json_t *l;
    json_array_foreach(json_object_get(status, "listeners"), i, l)
    {
        char prefix[300];
        const char *name = json_string_value(json_object_get(l, "name"));
        snprintf(prefix, sizeof(prefix), "listener %s: ", name ? name : "");
        if (false_condition(json_object_get(l, "conditions"), prefix, why, n))
            return true;
    }
    /* After the listeners: a Gateway's own conditions only sum theirs up. */
    if (false_condition(json_object_get(status, "conditions"), "", why, n))
        return true;
    static const char *const lists[] = {"parents", "ancestors"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *p;
        json_array_foreach(json_object_get(status, lists[k]), i, p)
        {
            const char *ctl = json_string_value(json_object_get(p, "controllerName"));
            if (ctl == NULL || controller_name == NULL || strcmp(ctl, controller_name) != 0)
                continue;
            char prefix[600];
            const json_t *ref = json_object_get(p, k == 0 ? "parentRef" : "ancestorRef");
            if (false_condition(json_object_get(p, "conditions"),
                                ref_name(ref, prefix, sizeof(prefix)), why, n))
                return true;
        }
    }
    return false;
}
