/*
 * apply_events.c — events and metrics of config changes (see apply_events.h).
 */
#include "server/apply_events.h"

#include <jansson.h>
#include <stdatomic.h>

#include "server/events.h"

/* A change takes milliseconds; validating thousands of routes or a slow database, seconds. */
static const double BOUNDS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                0.25,  0.5,    1,     2.5,  5,     10,   30};

static _Atomic(sx_metric *) m_changes;
static _Atomic(sx_metric *) m_seconds;

void apply_events_metrics(sx_metrics *r)
{
    if (r == NULL) {
        atomic_store(&m_changes, NULL);
        atomic_store(&m_seconds, NULL);
        return;
    }
    atomic_store(&m_changes,
                 sx_metrics_counter(r, "sextant_config_changes_total",
                                    "Config changes (create, update, delete, rollback) by result: "
                                    "applied, unchanged, refused or failed.",
                                    "result"));
    atomic_store(&m_seconds,
                 sx_metrics_histogram(r, "sextant_apply_duration_seconds",
                                      "Time to apply one config change: validate, store, "
                                      "recompose and write the snapshots, audit.",
                                      NULL, BOUNDS, sizeof BOUNDS / sizeof BOUNDS[0]));
    static const char *const results[] = {"applied", "unchanged", "refused", "failed"};
    for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
        sx_metric_add(atomic_load(&m_changes), (const char *[]){results[i]}, 0);
}

void apply_events_count(int rc, bool changed, double seconds)
{
    sx_metric *changes = atomic_load(&m_changes), *secs = atomic_load(&m_seconds);
    if (changes == NULL)
        return;
    const char *result = "failed";
    switch (rc) {
    case 0:
        result = changed ? "applied" : "unchanged";
        break;
    case SX_EVALIDATION:
    case SX_ECONFLICT:
    case SX_EINVAL:
    case SX_ENOTFOUND:
    case SX_EPRECONDITION:
    case SX_EMANAGED:
    case SX_EFORBIDDEN:
        result = "refused";
        break;
    default:
        break;
    }
    sx_metric_inc(changes, (const char *[]){result});
    sx_metric_observe(secs, NULL, seconds);
}

int apply_events_emit(pg_conn *c, const apply_event *e, sx_err *err)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < e->ngroups; i++)
        json_array_append_new(groups, json_string(e->groups[i]));
    json_t *data = json_pack("{s:s,s:s,s:s,s:i,s:b,s:o,s:s}", "namespace", e->ns, "name", e->name,
                             "config_id", e->config_id, "version", e->version, "draft", e->draft,
                             "groups", groups, "by", e->author);
    if (e->renamed_from)
        json_object_set_new(data, "renamed_from", json_string(e->renamed_from));
    sx_event ev = {.type = e->type, .group = e->ngroups == 1 ? e->groups[0] : NULL, .data = data};
    int rc = events_emit(c, NULL, &ev, err);
    json_decref(data);
    return rc;
}
