/*
 * gw.c — the Gateway API translator's entry point: indexes the input, judges the
 * GatewayClasses, takes the Gateways of ours and runs the other parts over them in
 * order (see gw_internal.h), then hands the specs and statuses to the caller.
 *
 * Everything is sorted before it is walked: each kind by (namespace, name), with a
 * repeated namespace/name kept once (the one whose canonical text sorts first), so the
 * order objects arrive in never shows in the output. Internal memory lives in one arena
 * per call; the output owns its strings and JSON outright.
 */
#include "server/k8s/gw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

static const char *const KIND_NAMES[GW_KIND_COUNT] = {
    [GW_GATEWAY_CLASS] = "GatewayClass",
    [GW_GATEWAY] = "Gateway",
    [GW_HTTP_ROUTE] = "HTTPRoute",
    [GW_GRPC_ROUTE] = "GRPCRoute",
    [GW_TCP_ROUTE] = "TCPRoute",
    [GW_TLS_ROUTE] = "TLSRoute",
    [GW_UDP_ROUTE] = "UDPRoute",
    [GW_REFERENCE_GRANT] = "ReferenceGrant",
    [GW_BACKEND_TLS_POLICY] = "BackendTLSPolicy",
    [GW_SERVICE] = "Service",
    [GW_ENDPOINT_SLICE] = "EndpointSlice",
    [GW_SECRET] = "Secret",
    [GW_NAMESPACE] = "Namespace",
    [GW_CONFIG_MAP] = "ConfigMap",
    [GW_BACKEND_LB_POLICY] = "BackendLBPolicy",
    [GW_AI_SERVICE] = "AIService",
    [GW_TOKEN_POLICY] = "TokenPolicy",
    [GW_WASM_PLUGIN] = "WasmPlugin",
};

const char *gw_kind_name(gw_kind k)
{
    return (unsigned)k < GW_KIND_COUNT ? KIND_NAMES[k] : "Unknown";
}

gw_kind gw_rk_kind(gw_rk k)
{
    static const gw_kind kinds[RK_COUNT] = {GW_HTTP_ROUTE, GW_GRPC_ROUTE, GW_TLS_ROUTE,
                                            GW_TCP_ROUTE, GW_UDP_ROUTE};
    return kinds[k];
}

const char *gw_rk_name(gw_rk k)
{
    return gw_kind_name(gw_rk_kind(k));
}

/* ---------------------------------------------------------------- the input */

static int cmp_text(const json_t *a, const json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *y = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    int k = strcmp(x ? x : "", y ? y : "");
    free(x);
    free(y);
    return k;
}

static int cmp_obj(const void *a, const void *b)
{
    const gw_obj *x = a, *y = b;
    int k = strcmp(x->ns, y->ns);
    if (k == 0)
        k = strcmp(x->name, y->name);
    return k != 0 ? k : cmp_text(x->o, y->o);
}

static void index_kind(gw_ctx *c, gw_kind k)
{
    const gw_objects *src = &c->in->objects[k];
    gw_index *x = &c->idx[k];
    x->v = sx_arena_alloc(c->a, (src->count + 1) * sizeof *x->v);
    for (size_t i = 0; i < src->count; i++) {
        const json_t *o = src->items ? src->items[i] : NULL;
        const json_t *md = gw_get(o, "metadata");
        const char *name = gw_str(md, "name");
        if (name == NULL || name[0] == '\0')
            continue;
        x->v[x->n++] = (gw_obj){o, gw_str_or(md, "namespace", ""), name};
    }
    if (x->n > 1)
        qsort(x->v, x->n, sizeof *x->v, cmp_obj);
    size_t w = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (w > 0 && strcmp(x->v[w - 1].ns, x->v[i].ns) == 0 &&
            strcmp(x->v[w - 1].name, x->v[i].name) == 0)
            continue;
        x->v[w++] = x->v[i];
    }
    x->n = w;
}

typedef struct slice_key {
    gw_obj obj;
    const char *svc;
} slice_key;

static int cmp_slice(const void *a, const void *b)
{
    const slice_key *x = a, *y = b;
    int k = strcmp(x->obj.ns, y->obj.ns);
    if (k == 0)
        k = strcmp(x->svc, y->svc);
    return k != 0 ? k : strcmp(x->obj.name, y->obj.name);
}

/* EndpointSlices by the Service they belong to (label kubernetes.io/service-name). */
static void index_slices(gw_ctx *c)
{
    const gw_index *x = &c->idx[GW_ENDPOINT_SLICE];
    slice_key *v = sx_arena_alloc(c->a, (x->n + 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < x->n; i++) {
        const char *svc =
            gw_str(gw_path(x->v[i].o, "metadata.labels"), "kubernetes.io/service-name");
        if (svc && svc[0])
            v[n++] = (slice_key){x->v[i], svc};
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_slice);
    c->slices = sx_arena_alloc(c->a, (n + 1) * sizeof *c->slices);
    c->slice_svc = sx_arena_alloc(c->a, (n + 1) * sizeof *c->slice_svc);
    for (size_t i = 0; i < n; i++) {
        c->slices[i] = v[i].obj;
        c->slice_svc[i] = v[i].svc;
    }
    c->n_slices = n;
}

/* ---------------------------------------------------------------- classes and Gateways */

static void judge_classes(gw_ctx *c)
{
    const gw_index *x = &c->idx[GW_GATEWAY_CLASS];
    c->classes = sx_arena_alloc(c->a, (x->n + 1) * sizeof *c->classes);
    for (size_t i = 0; i < x->n; i++) {
        const json_t *spec = gw_get(x->v[i].o, "spec");
        const char *ctl = gw_str(spec, "controllerName");
        if (ctl == NULL || strcmp(ctl, c->controller) != 0)
            continue;
        gw_class *k = &c->classes[c->n_classes++];
        k->obj = &x->v[i];
        k->accepted = (gw_cond){"Accepted", true, "Accepted", "the class is handled by Sextant"};
        if (gw_get(spec, "parametersRef"))
            k->accepted = (gw_cond){"Accepted", false, "InvalidParameters",
                                    "parametersRef is not supported: Sextant takes no class "
                                    "parameters"};
    }
}

static const gw_class *find_class(const gw_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->n_classes; i++)
        if (strcmp(c->classes[i].obj->name, name) == 0)
            return &c->classes[i];
    return NULL;
}

/* The group name of a Gateway from the template; NULL (with why) on a bad template. */
static char *group_name(const char *tmpl, const char *ns, const char *gw, const char *cls,
                        const char **why)
{
    static const struct {
        const char *key;
        int which;
    } keys[] = {{"<namespace>", 0}, {"<gateway>", 1}, {"<class>", 2}};
    const char *vals[3] = {ns, gw, cls};
    size_t cap = strlen(tmpl) + strlen(ns) + strlen(gw) + strlen(cls) + 1, o = 0;
    char *out = sx_malloc(cap * 2);
    for (const char *p = tmpl; *p;) {
        if (*p == '<') {
            bool hit = false;
            for (size_t k = 0; k < 3 && !hit; k++) {
                size_t n = strlen(keys[k].key);
                if (strncmp(p, keys[k].key, n) == 0) {
                    const char *v = vals[keys[k].which];
                    size_t vn = strlen(v);
                    memcpy(out + o, v, vn);
                    o += vn;
                    p += n;
                    hit = true;
                }
            }
            if (!hit) {
                *why = "unknown placeholder (use <namespace>, <gateway> and <class>)";
                sx_free(out);
                return NULL;
            }
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
    if (o == 0) {
        *why = "it makes an empty name";
        sx_free(out);
        return NULL;
    }
    return out;
}

/* What of a Gateway's own spec the IR cannot carry, judged before its listeners. */
static void judge_gateway(gw_gw *g)
{
    const json_t *spec = gw_get(g->obj->o, "spec");
    if (gw_path(spec, "infrastructure.parametersRef")) {
        g->refused = "InvalidParameters";
        g->refused_message = "infrastructure.parametersRef is not supported: Sextant takes no "
                             "Gateway parameters";
        return;
    }
    if (gw_get(spec, "tls")) {
        g->refused = "Invalid";
        g->refused_message = "spec.tls (Gateway-wide frontend and backend TLS) is not supported; "
                             "set TLS on each listener";
        return;
    }
}

static int take_gateways(gw_ctx *c, sx_err *err)
{
    const gw_index *x = &c->idx[GW_GATEWAY];
    const char *tmpl =
        c->in->options.group_template ? c->in->options.group_template : GW_DEFAULT_GROUP_TEMPLATE;
    c->gws = sx_arena_alloc(c->a, (x->n + 1) * sizeof *c->gws);
    for (size_t i = 0; i < x->n; i++) {
        const char *cls = gw_str(gw_get(x->v[i].o, "spec"), "gatewayClassName");
        const gw_class *k = cls ? find_class(c, cls) : NULL;
        if (k == NULL)
            continue;
        const char *why = NULL;
        char *group = group_name(tmpl, x->v[i].ns, x->v[i].name, cls, &why);
        if (group == NULL)
            return sx_err_set(err, SX_EINVAL, "k8s.group_template \"%s\" is not usable: %s", tmpl,
                              why);
        gw_gw *g = &c->gws[c->n_gws++];
        memset(g, 0, sizeof *g);
        g->obj = &x->v[i];
        g->class_name = cls;
        g->group = gw_strdup(c, group);
        sx_free(group);
        if (!k->accepted.ok) {
            g->refused = "Invalid";
            g->refused_message =
                gw_printf(c, "GatewayClass %s is not accepted: %s", cls, k->accepted.message);
        }
        gw_addresses_build(c, g);
    }
    return 0;
}

/* ---------------------------------------------------------------- the output */

static void fill_output(gw_ctx *c, gw_output *out)
{
    out->gateways = sx_calloc(c->n_gws ? c->n_gws : 1, sizeof *out->gateways);
    out->n_gateways = c->n_gws;
    out->counters.gateways = c->n_gws;
    for (size_t i = 0; i < c->n_gws; i++) {
        gw_gw *g = &c->gws[i];
        gw_gateway_out *o = &out->gateways[i];
        o->ns = sx_strdup(g->obj->ns);
        o->name = sx_strdup(g->obj->name);
        o->group = sx_strdup(g->group);
        o->source_ref = sx_asprintf("Gateway %s/%s", g->obj->ns, g->obj->name);
        o->spec = g->spec;
        g->spec = NULL;
        o->error = g->error ? sx_strdup(g->error) : NULL;
        o->objects = g->objects;
        o->endpoints = g->endpoints;
        if (o->spec == NULL) {
            out->counters.gateways_failed++;
            continue;
        }
        size_t n;
        out->counters.listeners += (gw_array(o->spec, "listeners", &n), n);
        out->counters.routes += (gw_array(o->spec, "http_routes", &n), n);
        out->counters.routes += (gw_array(o->spec, "grpc_routes", &n), n);
        out->counters.routes += (gw_array(o->spec, "stream_routes", &n), n);
        out->counters.backends += (gw_array(o->spec, "backends", &n), n);
        out->counters.secrets += (gw_array(o->spec, "secrets", &n), n);
        out->counters.endpoints += o->endpoints;
    }
}

static void ctx_free(gw_ctx *c)
{
    for (size_t i = 0; i < c->n_gws; i++) {
        gw_gw *g = &c->gws[i];
        json_decref(g->spec);
        for (size_t k = 0; k < g->n_lis; k++)
            json_decref(g->lis[k].supported_kinds);
        for (size_t k = 0; k < g->n_secrets; k++)
            json_decref(g->secrets[k].ir);
    }
    gw_routes_free(c);
    gw_backends_free(c);
    gw_policies_free(c);
    gw_sx_free(c);
    sx_arena_destroy(c->a);
}

int gw_translate(const gw_input *in, gw_output *out, sx_err *err)
{
    memset(out, 0, sizeof *out);
    out->now = in->now;
    gw_ctx c = {.in = in, .now = in->now};
    c.a = sx_arena_create();
    c.controller = in->options.controller_name && in->options.controller_name[0]
                       ? in->options.controller_name
                       : GW_DEFAULT_CONTROLLER;
    time_t t = (time_t)in->now;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(c.now_text, sizeof c.now_text, "%Y-%m-%dT%H:%M:%SZ", &tm);

    size_t total = 0;
    for (int k = 0; k < GW_KIND_COUNT; k++) {
        out->counters.objects_in[k] = in->objects[k].count;
        total += in->objects[k].count;
        index_kind(&c, (gw_kind)k);
    }
    index_slices(&c);
    size_t max_in = in->options.limits.max_input_objects;
    if (max_in > 0 && total > max_in) {
        c.over_input = true;
        c.over_input_message = gw_printf(&c,
                                         "the cluster holds %zu objects of the watched kinds, "
                                         "over the limit of %zu (k8s.max_input_objects): "
                                         "nothing was translated and the last good "
                                         "configuration keeps serving",
                                         total, max_in);
    }

    judge_classes(&c);
    int rc = take_gateways(&c, err);
    if (rc != 0) {
        ctx_free(&c);
        return rc;
    }
    out->over_input = c.over_input;
    if (c.over_input) {
        for (size_t i = 0; i < c.n_gws; i++) {
            c.gws[i].error = c.over_input_message;
            c.gws[i].error_reason = "NoResources";
        }
    } else {
        for (size_t i = 0; i < c.n_gws; i++) {
            if (c.gws[i].refused == NULL)
                judge_gateway(&c.gws[i]);
            gw_listeners_build(&c, &c.gws[i]);
        }
        gw_policies_build(&c);
        gw_sx_build(&c);
        gw_routes_collect(&c);
        for (size_t i = 0; i < c.n_gws; i++) {
            gw_routes_attach(&c, &c.gws[i], i);
            gw_spec_build(&c, &c.gws[i], i);
        }
    }
    gw_status_all(&c, out);
    fill_output(&c, out);
    ctx_free(&c);
    return 0;
}

void gw_output_free(gw_output *out)
{
    if (out == NULL)
        return;
    for (size_t i = 0; i < out->n_gateways; i++) {
        gw_gateway_out *g = &out->gateways[i];
        sx_free(g->ns);
        sx_free(g->name);
        sx_free(g->group);
        sx_free(g->source_ref);
        json_decref(g->spec);
        sx_free(g->error);
    }
    sx_free(out->gateways);
    for (size_t i = 0; i < out->n_statuses; i++) {
        gw_status_out *s = &out->statuses[i];
        sx_free(s->api_version);
        sx_free(s->ns);
        sx_free(s->name);
        sx_free(s->resource_version);
        json_decref(s->status);
        json_decref(s->prev_);
    }
    sx_free(out->statuses);
    memset(out, 0, sizeof *out);
}
