/*
 * val_planes.c — the data planes a proxy group serves, and the semantic check of what
 * each of them can express.
 *
 * A group serves Envoy proxies ("envoy"), proxyless gRPC clients ("grpc") and
 * gateway.control.v1 data planes ("control"), in any mix. The gateway.control.v1
 * protocol carries the IR itself, so a control data plane takes everything that
 * decodes; the two ADS kinds receive what the Envoy translator (server/translate/) makes
 * of it, so a feature without an Envoy counterpart cannot reach them. This check names
 * such a feature at its path and says which data plane of which group cannot take it,
 * before the translator check runs (which then says nothing more at that path); a
 * config whose groups serve no ADS kind is not translated at all (val_translate.c).
 *
 * What the translator does express (session persistence, a token policy's request
 * rate, HTTP/3 and UDP listeners) passes here; only the parts of those it cannot are
 * refused (an idle timeout, token counts, ...), so that the problem names the data plane
 * instead of leaving it to the translator's generic message. The table of what each
 * kind takes is FEATURES below; the README's feature table says the same for operators,
 * and the two change together.
 */
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/translate/resources.h"
#include "server/validate/val_internal.h"

static const struct {
    unsigned bit;
    const char *name;
} PLANES[] = {
    {VAL_PLANE_ENVOY, "envoy"},
    {VAL_PLANE_GRPC, "grpc"},
    {VAL_PLANE_CONTROL, "control"},
};

#define NPLANES (sizeof PLANES / sizeof PLANES[0])

const char *val_plane_name(unsigned plane)
{
    for (size_t i = 0; i < NPLANES; i++)
        if (PLANES[i].bit == plane)
            return PLANES[i].name;
    return "unknown";
}

int val_planes_parse(const char *const *names, size_t n, unsigned *out, char *why, size_t whyn)
{
    *out = 0;
    if (n == 0) {
        snprintf(why, whyn, "must name at least one data plane (envoy, grpc, control)");
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        unsigned bit = 0;
        for (size_t i = 0; names[k] && i < NPLANES; i++)
            if (strcmp(names[k], PLANES[i].name) == 0)
                bit = PLANES[i].bit;
        if (bit == 0) {
            snprintf(why, whyn, "unknown data plane \"%.64s\" (envoy, grpc or control)",
                     names[k] ? names[k] : "");
            return -1;
        }
        if (*out & bit) {
            snprintf(why, whyn, "data plane \"%s\" is named twice", names[k]);
            return -1;
        }
        *out |= bit;
    }
    return 0;
}

int val_planes_parse_csv(const char *csv, unsigned *out, char *why, size_t whyn)
{
    char buf[128];
    const char *names[8];
    size_t n = 0;
    *out = 0;
    if (csv == NULL || strlen(csv) >= sizeof buf) {
        snprintf(why, whyn, "must be a comma-separated list of envoy, grpc and control");
        return -1;
    }
    memcpy(buf, csv, strlen(csv) + 1);
    char *s = buf;
    while (n < sizeof names / sizeof names[0]) {
        char *comma = strchr(s, ',');
        if (comma)
            *comma = '\0';
        while (*s == ' ')
            s++;
        size_t len = strlen(s);
        while (len > 0 && s[len - 1] == ' ')
            s[--len] = '\0';
        if (len > 0)
            names[n++] = s;
        if (comma == NULL)
            break;
        s = comma + 1;
    }
    return val_planes_parse(names, n, out, why, whyn);
}

json_t *val_planes_json(unsigned planes)
{
    json_t *a = json_array();
    for (size_t i = 0; i < NPLANES; i++)
        if (planes & PLANES[i].bit)
            json_array_append_new(a, json_string(PLANES[i].name));
    return a;
}

/* The planes' names into buf: "envoy", "envoy and control", "envoy, grpc and control". */
static const char *planes_text(unsigned planes, char *buf, size_t n)
{
    buf[0] = '\0';
    size_t used = 0, left = 0;
    for (size_t i = 0; i < NPLANES; i++)
        left += (planes & PLANES[i].bit) != 0;
    for (size_t i = 0; i < NPLANES; i++)
        if (planes & PLANES[i].bit) {
            left--;
            int w = snprintf(buf + used, n - used, "%s%s",
                             used == 0   ? ""
                             : left == 0 ? " and "
                                         : ", ",
                             PLANES[i].name);
            if (w < 0 || (size_t)w >= n - used)
                break;
            used += (size_t)w;
        }
    return buf;
}

/* ---------------------------------------------------------------- the check */

/* What an ADS data plane cannot take: control-only features. */
typedef enum feature {
    F_AI_SERVICE,
    F_TOKEN_COUNT,
    F_TOKEN_SCOPE,
    F_TOKEN_ACTION,
    F_TOKEN_NO_RATE,
    F_WASM_PLUGIN,
    F_WASM_LIMITS,
    F_WASM_HOOKS,
    F_BACKEND_SESSION,
    F_EXTENSION_REF,
    F_SESSION_IDLE,
    F_SESSION_ABSOLUTE,
    F_HEADER_SESSION,
} feature;

/* Per feature, the planes that take it and how an operator reads it. */
static const struct {
    unsigned takes;
    const char *what;
} FEATURES[] = {
    [F_AI_SERVICE] = {VAL_PLANE_CONTROL, "ai services"},
    [F_TOKEN_COUNT] = {VAL_PLANE_CONTROL,
                       "token counts of a token policy (Envoy's local rate limit counts requests)"},
    [F_TOKEN_SCOPE] = {VAL_PLANE_CONTROL,
                       "a token policy scope other than the proxy's own (\"\" or \"proxy\")"},
    [F_TOKEN_ACTION] = {VAL_PLANE_CONTROL,
                        "an action on limit other than \"reject\" (Envoy answers 429)"},
    [F_TOKEN_NO_RATE] = {VAL_PLANE_CONTROL,
                         "a token policy without requests_per_minute (the rate Envoy limits)"},
    [F_WASM_PLUGIN] = {VAL_PLANE_ENVOY | VAL_PLANE_CONTROL,
                       "wasm plugins (proxyless gRPC clients run none)"},
    [F_WASM_LIMITS] = {VAL_PLANE_CONTROL, "memory or execution time limits of a wasm sandbox "
                                          "(Envoy's wasm runtime has none per plugin)"},
    [F_WASM_HOOKS] = {VAL_PLANE_CONTROL, "wasm execution hooks (Envoy calls every callback the "
                                         "module exports)"},
    [F_BACKEND_SESSION] = {VAL_PLANE_CONTROL, "session persistence on a backend (set it on the "
                                              "route rules instead)"},
    [F_EXTENSION_REF] = {VAL_PLANE_CONTROL, "extension_ref filters"},
    [F_SESSION_IDLE] = {VAL_PLANE_CONTROL,
                        "an idle timeout of session persistence (Envoy's stateful session has "
                        "none)"},
    [F_SESSION_ABSOLUTE] = {VAL_PLANE_CONTROL,
                            "an absolute timeout of session persistence other than a permanent "
                            "cookie's lifetime (cookie_lifetime_type Permanent)"},
    [F_HEADER_SESSION] = {VAL_PLANE_ENVOY | VAL_PLANE_CONTROL,
                          "header-based session persistence (gRPC clients keep sessions in "
                          "cookies only)"},
};

/* The first group of the config that serves plane, for the message; NULL when the config
 * names none (a dry run without groups: the default). */
static const char *group_serving(const val_ctx *c, unsigned plane)
{
    unsigned dflt = c->limits.default_planes ? c->limits.default_planes : VAL_PLANES_ALL;
    for (size_t i = 0; i < c->limits.ngroups; i++)
        if ((c->limits.groups[i].planes ? c->limits.groups[i].planes : dflt) & plane)
            return c->limits.groups[i].group;
    return NULL;
}

/* Reports f at path for every plane the config's groups serve that cannot take it. */
static void refuse(val_ctx *c, const char *path, feature f)
{
    unsigned served = val_ctx_planes(c);
    for (size_t i = 0; i < NPLANES; i++) {
        unsigned bit = PLANES[i].bit;
        if (!(served & bit) || (FEATURES[f].takes & bit))
            continue;
        char takes[64];
        const char *g = group_serving(c, bit);
        if (g)
            val_add_plane(c, path, PLANES[i].name,
                          "the %s data plane cannot take %s: group \"%s\" serves %s, and only "
                          "%s data planes take it",
                          PLANES[i].name, FEATURES[f].what, g, PLANES[i].name,
                          planes_text(FEATURES[f].takes, takes, sizeof takes));
        else
            val_add_plane(c, path, PLANES[i].name,
                          "the %s data plane cannot take %s: only %s data planes take it",
                          PLANES[i].name, FEATURES[f].what,
                          planes_text(FEATURES[f].takes, takes, sizeof takes));
    }
}

static bool header_type(const Gateway__Control__V1__SessionPersistence *s)
{
    return s && s->type && strcmp(s->type, "Header") == 0;
}

static void on_rule(void *arg, const val_rule *u)
{
    val_ctx *c = arg;
    char p[VAL_PATH_MAX];
    for (size_t k = 0; k < u->n_filters; k++)
        if (u->filters[k] &&
            u->filters[k]->config_case == GATEWAY__CONTROL__V1__FILTER__CONFIG_EXTENSION_REF)
            refuse(c, val_path(p, "%s.filters[%zu].extension_ref", u->path, k), F_EXTENSION_REF);
    if (header_type(u->session_persistence))
        refuse(c, val_path(p, "%s.session_persistence.type", u->path), F_HEADER_SESSION);
    const Gateway__Control__V1__SessionPersistence *sp = u->session_persistence;
    if (sp && sp->idle_timeout)
        refuse(c, val_path(p, "%s.session_persistence.idle_timeout", u->path), F_SESSION_IDLE);
    if (sp && sp->absolute_timeout &&
        (header_type(sp) || !sp->cookie_lifetime_type ||
         strcmp(sp->cookie_lifetime_type, "Permanent") != 0))
        refuse(c, val_path(p, "%s.session_persistence.absolute_timeout", u->path),
               F_SESSION_ABSOLUTE);
}

unsigned val_ctx_planes(const val_ctx *c)
{
    if (c->limits.ngroups == 0)
        return c->limits.default_planes ? c->limits.default_planes : VAL_PLANES_ALL;
    unsigned u = 0;
    for (size_t i = 0; i < c->limits.ngroups; i++)
        u |= c->limits.groups[i].planes
                 ? c->limits.groups[i].planes
                 : (c->limits.default_planes ? c->limits.default_planes : VAL_PLANES_ALL);
    return u;
}

void val_planes_check(val_ctx *c)
{
    if (!(val_ctx_planes(c) & ~VAL_PLANE_CONTROL))
        return; /* control data planes take all the protocol carries */
    const ir_snapshot *ir = c->docs[0].ir;
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_backends; i++) {
        const val_backend *b = ir->backends[i];
        if (b == NULL)
            continue;
        if (b->ai_service)
            refuse(c, val_path(p, "spec.backends[%zu].ai_service", i), F_AI_SERVICE);
        const Gateway__Control__V1__TokenPolicyConfig *t = b->token_policy;
        if (t && t->tokens_per_minute)
            refuse(c, val_path(p, "spec.backends[%zu].token_policy.tokens_per_minute", i),
                   F_TOKEN_COUNT);
        if (t && t->tokens_per_hour)
            refuse(c, val_path(p, "spec.backends[%zu].token_policy.tokens_per_hour", i),
                   F_TOKEN_COUNT);
        if (t && !val_empty(t->scope) && strcmp(t->scope, "proxy") != 0)
            refuse(c, val_path(p, "spec.backends[%zu].token_policy.scope", i), F_TOKEN_SCOPE);
        if (t && !val_empty(t->on_limit) && strcmp(t->on_limit, "reject") != 0)
            refuse(c, val_path(p, "spec.backends[%zu].token_policy.on_limit", i), F_TOKEN_ACTION);
        if (t && t->requests_per_minute == 0)
            refuse(c, val_path(p, "spec.backends[%zu].token_policy.requests_per_minute", i),
                   F_TOKEN_NO_RATE);
        const Gateway__Control__V1__WasmPluginConfig *w = b->wasm_plugin;
        if (w)
            refuse(c, val_path(p, "spec.backends[%zu].wasm_plugin", i), F_WASM_PLUGIN);
        if (w && w->sandbox && w->sandbox->max_memory_bytes)
            refuse(c, val_path(p, "spec.backends[%zu].wasm_plugin.sandbox.max_memory_bytes", i),
                   F_WASM_LIMITS);
        if (w && w->sandbox && w->sandbox->max_execution_time_ms)
            refuse(c,
                   val_path(p, "spec.backends[%zu].wasm_plugin.sandbox.max_execution_time_ms", i),
                   F_WASM_LIMITS);
        if (w && w->n_hooks)
            refuse(c, val_path(p, "spec.backends[%zu].wasm_plugin.hooks", i), F_WASM_HOOKS);
        if (b->session_persistence)
            refuse(c, val_path(p, "spec.backends[%zu].session_persistence", i), F_BACKEND_SESSION);
    }
    val_each_route(ir, VAL_KINDS_ALL, NULL, on_rule, c);
}

/* ---------------------------------------------------------------- a group's change */

int val_planes_refusals(const json_t *spec, const char *group, unsigned planes, val_result *out)
{
    val_decoded d;
    val_decode(spec, true, &d);
    val_group_planes g = {group, planes};
    val_doc doc = {.ir = d.ir, .clean = d.clean};
    val_result local = {0};
    val_ctx c = {.docs = &doc, .ndocs = 1, .out = &local, .stage = VAL_SEMANTIC};
    c.limits.groups = &g;
    c.limits.ngroups = 1;
    c.limits.default_planes = planes;
    val_planes_check(&c);
    size_t n = local.count;
    /* Appended to out as they are (the caller names the config). */
    for (size_t i = 0; i < local.count; i++) {
        if (out->count == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 16;
            out->items = sx_realloc(out->items, out->cap * sizeof *out->items);
        }
        out->items[out->count++] = local.items[i];
    }
    sx_free(local.items);
    val_decoded_free(&d);
    return n ? SX_EVALIDATION : 0;
}

static const ir_snapshot *part_of(const void *ctx, size_t i)
{
    return ((const val_decoded *)ctx)[i].ir;
}

int val_planes_translate(const json_t *const *specs, size_t n, const char *group, sx_err *err)
{
    val_decoded *d = sx_calloc(n ? n : 1, sizeof *d);
    for (size_t i = 0; i < n; i++)
        val_decode(specs[i], true, &d[i]);
    ir_snapshot m;
    ir_snapshot_concat(&m, n, part_of, d); /* borrows the documents' objects */
    tr_resources *res = NULL;
    int rc = tr_resources_build(&m, group, 0, &res, err);
    tr_resources_unref(res);
    ir_snapshot_unconcat(&m);
    for (size_t i = 0; i < n; i++)
        val_decoded_free(&d[i]);
    sx_free(d);
    return rc;
}
