/*
 * events.c — writing live events (see events.h).
 *
 * Design: one call, events_emit, is all a writer needs; it checks the type against the
 * one table below (the same list the table's CHECK holds) so a typo fails before it
 * reaches the database, and leaves the insert and the NOTIFY to storage/repo_events.c,
 * which does both in one statement.
 */
#include "server/events.h"

#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_events.h"

static const struct {
    const char *name;
    const char *resource;
} types[EVENTS_NTYPES] = {
    {EVENT_CONFIG_APPLIED, "proxies"},         {EVENT_CONFIG_REJECTED, "proxies"},
    {EVENT_WAVE_STARTED, "deployments"},       {EVENT_WAVE_COMPLETED, "deployments"},
    {EVENT_ROLLOUT_COMPLETED, "deployments"},  {EVENT_ROLLOUT_FAILED, "deployments"},
    {EVENT_ROLLBACK_STARTED, "deployments"},   {EVENT_ROLLBACK_COMPLETED, "deployments"},
    {EVENT_ROLLOUT_PAUSED, "deployments"},     {EVENT_ROLLOUT_RESUMED, "deployments"},
    {EVENT_ROLLOUT_CANCELED, "deployments"},   {EVENT_PROXY_CONNECTED, "proxies"},
    {EVENT_PROXY_DISCONNECTED, "proxies"},     {EVENT_PROXY_STALE, "proxies"},
    {EVENT_CONFIG_CREATED, "configs"},         {EVENT_CONFIG_UPDATED, "configs"},
    {EVENT_CONFIG_DELETED, "configs"},         {EVENT_SNAPSHOT_GENERATED, "snapshots"},
    {EVENT_DEPLOYMENT_STARTED, "deployments"}, {EVENT_ALERT_FIRING, "alerts"},
    {EVENT_ALERT_RESOLVED, "alerts"},
};

static char default_replica[128];

void events_set_replica(const char *replica_id)
{
    snprintf(default_replica, sizeof default_replica, "%s", replica_id ? replica_id : "");
}

int events_type_index(const char *type)
{
    for (int i = 0; type && i < EVENTS_NTYPES; i++)
        if (strcmp(type, types[i].name) == 0)
            return i;
    return -1;
}

const char *events_type_name(int i)
{
    return i >= 0 && i < EVENTS_NTYPES ? types[i].name : NULL;
}

const char *events_type_resource(const char *type)
{
    int i = events_type_index(type);
    return i < 0 ? NULL : types[i].resource;
}

int events_emit(pg_conn *c, const char *replica_id, const sx_event *e, sx_err *err)
{
    if (events_type_index(e->type) < 0)
        return sx_err_set(err, SX_EINVAL, "unknown event type \"%s\"",
                          e->type ? e->type : "(null)");
    event_new in = {
        .type = e->type,
        .replica_id = replica_id ? replica_id : default_replica,
        .deployment_id = e->deployment_id,
        .node_id = e->node_id,
        .group = e->group,
        .data = e->data,
        .notify_channel = EVENTS_NOTIFY_CHANNEL,
    };
    int rc = event_repo_insert(c, &in, NULL, err);
    if (rc)
        sx_err_prefix(err, "could not write event %s", e->type);
    return rc;
}

int events_emit_many(pg_conn *c, const char *replica_id, const sx_event *e, size_t n, sx_err *err)
{
    if (n == 0)
        return 0;
    event_new *in = sx_calloc(n, sizeof(*in));
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (events_type_index(e[i].type) < 0)
            rc = sx_err_set(err, SX_EINVAL, "unknown event type \"%s\"",
                            e[i].type ? e[i].type : "(null)");
        in[i] = (event_new){
            .type = e[i].type,
            .replica_id = replica_id ? replica_id : default_replica,
            .deployment_id = e[i].deployment_id,
            .node_id = e[i].node_id,
            .group = e[i].group,
            .data = e[i].data,
            .notify_channel = EVENTS_NOTIFY_CHANNEL,
        };
    }
    if (rc == 0 && (rc = event_repo_insert_many(c, in, n, err)) != 0)
        sx_err_prefix(err, "could not write %zu events", n);
    sx_free(in);
    return rc;
}
