/*
 * apply_events.h — what a config change tells the live event feed and the metrics:
 * the config_created, config_updated and config_deleted events (written in the change's
 * transaction, so they are streamed only when it commits), and the families
 * sextant_config_changes_total{result} and sextant_apply_duration_seconds.
 *
 * server/apply.c calls it; the metrics are process-wide and registered once at start
 * (apply_events_metrics); before that, or without a registry, counting does nothing.
 */
#ifndef SX_SERVER_APPLY_EVENTS_H
#define SX_SERVER_APPLY_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "storage/pg_pool.h"

/* One change that wrote something; pointers borrowed for the call. */
typedef struct apply_event {
    const char *type;          /* EVENT_CONFIG_CREATED, _UPDATED or _DELETED */
    const char *ns, *name;     /* the config's namespace and name after the change */
    const char *config_id;     /* its id */
    int version;               /* its latest version after the change (0 for a delete) */
    bool draft;                /* the version is a draft (not live) */
    const char *renamed_from;  /* the name before a rename, else NULL */
    const char *const *groups; /* the groups it applies to after the change (a delete:
                                  before it) */
    size_t ngroups;
    const char *author;
} apply_event;

/* Writes e's event on c (the change's transaction): group is the config's group when it
 * has one only, data holds namespace, name, config_id, version, draft, groups, by and,
 * for a rename, renamed_from. Database errors only. */
int apply_events_emit(pg_conn *c, const apply_event *e, sx_err *err) SX_MUSTCHECK;

/* Registers the two families in r and counts into them from then on; NULL stops
 * counting (before r is destroyed). Call at start and at the end. */
void apply_events_metrics(sx_metrics *r);

/* Counts one finished change: rc its code, changed whether it wrote a version (or
 * deleted), seconds how long apply_config took. result is "applied", "unchanged",
 * "refused" (the change itself was refused: validation, ownership, a stale If-Match,
 * bad input) or "failed" (the database or anything else). */
void apply_events_count(int rc, bool changed, double seconds);

#endif
