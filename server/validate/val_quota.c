/*
 * val_quota.c — the quota stage: how many listeners, routes, backends and endpoints a
 * config holds, and the config together with its peers, against the limits from the
 * server's configuration (limits.config.* and limits.group.*).
 *
 * Routes are HTTP, gRPC and stream routes together; endpoints are summed over
 * backends. A limit of 0 means no limit. The group count adds every peer once: when
 * the peers belong to several groups this is the union of those groups, an upper bound
 * of any one group's count, so the check errs on the side of refusing.
 */
#include <stdio.h>

#include "server/validate/val_internal.h"

typedef struct counts {
    long long listeners, routes, backends, endpoints;
} counts;

static counts count(const ir_snapshot *ir)
{
    counts n = {(long long)ir->n_listeners,
                (long long)(ir->n_http_routes + ir->n_grpc_routes + ir->n_stream_routes),
                (long long)ir->n_backends, 0};
    for (size_t i = 0; i < ir->n_backends; i++)
        if (ir->backends[i])
            n.endpoints += (long long)ir->backends[i]->n_endpoints;
    return n;
}

static void limit(val_ctx *c, const char *path, long long have, long long max, const char *what,
                  const char *scope)
{
    if (max > 0 && have > max)
        val_add(c, path, "%lld %s exceed the limit of %lld per %s", have, what, max, scope);
}

void val_quota(val_ctx *c)
{
    counts self = count(c->docs[0].ir), all = self;
    for (size_t d = 1; d < c->ndocs; d++) {
        counts p = count(c->docs[d].ir);
        all.listeners += p.listeners;
        all.routes += p.routes;
        all.backends += p.backends;
        all.endpoints += p.endpoints;
    }
    const val_limits *l = &c->limits;
    limit(c, "spec.listeners", self.listeners, l->config_listeners, "listeners", "config");
    limit(c, "spec", self.routes, l->config_routes, "routes (http, grpc and stream)", "config");
    limit(c, "spec.backends", self.backends, l->config_backends, "backends", "config");
    limit(c, "spec.backends", self.endpoints, l->config_endpoints, "endpoints", "config");

    char what[96];
    size_t peers = c->ndocs - 1;
    const char *others = peers == 1 ? "config" : "configs";
    snprintf(what, sizeof what, "listeners in this config and the %zu other %s of its groups",
             peers, others);
    limit(c, "spec.listeners", all.listeners, l->group_listeners, what, "group");
    snprintf(what, sizeof what, "routes in this config and the %zu other %s of its groups", peers,
             others);
    limit(c, "spec", all.routes, l->group_routes, what, "group");
    snprintf(what, sizeof what, "backends in this config and the %zu other %s of its groups", peers,
             others);
    limit(c, "spec.backends", all.backends, l->group_backends, what, "group");
    snprintf(what, sizeof what, "endpoints in this config and the %zu other %s of its groups",
             peers, others);
    limit(c, "spec.backends", all.endpoints, l->group_endpoints, what, "group");
}
