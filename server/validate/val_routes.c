/*
 * val_routes.c — one walk over the routes of a document and their rules, for the stages
 * that check the three kinds of route (HTTP, gRPC, stream) alike: references, actions,
 * claims and the schema's shared rules.
 *
 * The walk goes in the translator's order and, within a route, visits the route before
 * its rules, so that a stage's problems come out in the order of the document. Each
 * route and rule is seen through a view of what the kinds share (name, namespace,
 * hostnames, backend refs, filters, its path in the document); the message itself is
 * there for what only one kind has.
 */
#include <stdio.h>

#include "server/validate/val_internal.h"

/* The list field of each kind in the spec. */
static const char *const LISTS[] = {
    [VAL_ROUTE_HTTP] = "http_routes",
    [VAL_ROUTE_GRPC] = "grpc_routes",
    [VAL_ROUTE_STREAM] = "stream_routes",
};

/* The views of an HTTP or a gRPC route or rule: the members the two messages share by
 * name (a function cannot take either type). Stream routes and rules have fewer. */
#define ROUTE_VIEW(m)                                                                              \
    ((val_route){.name = (m)->name,                                                                \
                 .namespace_ = (m)->namespace_,                                                    \
                 .hostnames = (m)->hostnames,                                                      \
                 .n_hostnames = (m)->n_hostnames,                                                  \
                 .n_rules = (m)->n_rules,                                                          \
                 .msg = (m)})
#define RULE_VIEW(u)                                                                               \
    ((val_rule){.backend_refs = (u)->backend_refs,                                                 \
                .n_backend_refs = (u)->n_backend_refs,                                             \
                .filters = (u)->filters,                                                           \
                .n_filters = (u)->n_filters,                                                       \
                .n_matches = (u)->n_matches,                                                       \
                .session_persistence = (u)->session_persistence,                                   \
                .msg = (u)})

static size_t route_count(const ir_snapshot *ir, val_route_kind kind)
{
    switch (kind) {
    case VAL_ROUTE_HTTP:
        return ir->n_http_routes;
    case VAL_ROUTE_GRPC:
        return ir->n_grpc_routes;
    default:
        return ir->n_stream_routes;
    }
}

/* The view of route i of a kind; its msg is NULL when the route did not decode. */
static val_route route_view(const ir_snapshot *ir, val_route_kind kind, size_t i)
{
    const val_stream_route *s = kind == VAL_ROUTE_STREAM ? ir->stream_routes[i] : NULL;
    if (kind == VAL_ROUTE_HTTP && ir->http_routes[i])
        return ROUTE_VIEW(ir->http_routes[i]);
    if (kind == VAL_ROUTE_GRPC && ir->grpc_routes[i])
        return ROUTE_VIEW(ir->grpc_routes[i]);
    if (s)
        return (val_route){
            .name = s->name, .namespace_ = s->namespace_, .n_rules = s->n_rules, .msg = s};
    return (val_route){.msg = NULL};
}

/* The view of rule k of route r; its msg is NULL when the rule did not decode. */
static val_rule rule_view(const val_route *r, size_t k)
{
    const val_http_route *h = r->msg;
    const val_grpc_route *g = r->msg;
    const val_stream_rule *s =
        r->kind == VAL_ROUTE_STREAM ? ((const val_stream_route *)r->msg)->rules[k] : NULL;
    if (r->kind == VAL_ROUTE_HTTP && h->rules[k])
        return RULE_VIEW(h->rules[k]);
    if (r->kind == VAL_ROUTE_GRPC && g->rules[k])
        return RULE_VIEW(g->rules[k]);
    if (s)
        return (val_rule){
            .backend_refs = s->backend_refs, .n_backend_refs = s->n_backend_refs, .msg = s};
    return (val_rule){.msg = NULL};
}

void val_each_route(const ir_snapshot *ir, unsigned kinds,
                    void (*on_route)(void *arg, const val_route *r),
                    void (*on_rule)(void *arg, const val_rule *r), void *arg)
{
    char rp[VAL_PATH_MAX], up[VAL_PATH_MAX];
    for (int kind = VAL_ROUTE_HTTP; kind <= VAL_ROUTE_STREAM; kind++) {
        for (size_t i = 0; (kinds & VAL_KIND(kind)) && i < route_count(ir, kind); i++) {
            val_route r = route_view(ir, kind, i);
            if (r.msg == NULL)
                continue;
            r.kind = kind;
            r.idx = i;
            r.path = val_path(rp, "spec.%s[%zu]", LISTS[kind], i);
            if (on_route)
                on_route(arg, &r);
            for (size_t k = 0; on_rule && k < r.n_rules; k++) {
                val_rule u = rule_view(&r, k);
                if (u.msg == NULL)
                    continue;
                u.route = &r;
                u.idx = k;
                u.path = val_path(up, "%s.rules[%zu]", rp, k);
                on_rule(arg, &u);
            }
        }
    }
}

const void *val_rule_match(const val_rule *r, size_t j)
{
    if (r->route->kind == VAL_ROUTE_HTTP)
        return ((const val_http_rule *)r->msg)->matches[j];
    if (r->route->kind == VAL_ROUTE_GRPC)
        return ((const val_grpc_rule *)r->msg)->matches[j];
    return NULL;
}
