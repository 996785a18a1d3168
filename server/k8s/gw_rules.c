/*
 * gw_rules.c — one route's rules into IR rules, once per translation, whatever
 * Gateways and listeners the route attaches to.
 *
 * HTTPRoute rules keep their matches (path Exact, PathPrefix and RegularExpression;
 * headers and query parameters Exact and RegularExpression, the first of a repeated
 * name only, as the Gateway API says; method), filters (RequestHeaderModifier,
 * ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror), backendRefs with
 * their weights, timeouts and retries. GRPCRoute rules keep their method matches
 * (service and method, Exact or RegularExpression), header matches, header modifiers
 * and mirrors. TLS and TCP routes keep their one rule's backendRefs.
 *
 * An ExtensionRef filter naming a WasmPlugin (group sextant.dev) of the route's
 * namespace runs that plugin on the rule's backends (gw_sextant_attach.c: it wins over
 * the plugins targetRefs attach there); one that does not exist (BackendNotFound) or is
 * invalid (UnsupportedValue) sets ResolvedRefs=False and the rule forwards nothing,
 * rather than skip the filter.
 *
 * What the IR or its Envoy translation cannot carry refuses the whole route with
 * Accepted=False and reason UnsupportedValue, naming the field: other ExtensionRef
 * filters, two WasmPlugins on one rule, CORS and ExternalAuth filters, filters on a
 * backendRef, session persistence, a mirror fraction that is not a whole percent, a
 * regular expression RE2 cannot take, UDPRoutes.
 * A RequestRedirect with a URLRewrite (or two of either) is IncompatibleFilters. A
 * backendRef that does not resolve sets ResolvedRefs=False (the first problem is the
 * reason) and is left out of the IR rule, as is a mirror to it.
 */
#include <string.h>
#include <strings.h>

#include "server/k8s/gw_internal.h"
#include "server/validate/validate.h"

typedef struct rule_state {
    gw_ctx *c;
    gw_route *r;
    gw_rule *rule;
    const char *where; /* "rules[2]", for messages */
    const char *protocol;
    bool redirect, rewrite, prefix_rewrite;
    bool blocked; /* a filter it names cannot be used: the rule forwards nothing */
} rule_state;

static void refuse(gw_route *r, const char *reason, const char *message)
{
    if (r->refused_reason == NULL) {
        r->refused_reason = reason;
        r->refused_message = message;
    }
}

static void unresolved(gw_route *r, const char *reason, const char *message)
{
    if (r->resolved.ok)
        r->resolved = (gw_cond){"ResolvedRefs", false, reason, message};
}

static void note_backend(gw_ctx *c, gw_rule *rule, size_t bi)
{
    for (size_t i = 0; i < rule->n_backends; i++)
        if (rule->backends[i] == bi)
            return;
    size_t cap = rule->n_backends;
    rule->backends = gw_grow(c, rule->backends, sizeof *rule->backends, &cap, rule->n_backends + 1);
    rule->backends[rule->n_backends++] = bi;
}

/* A regular expression of the route, checked as Sextant's validation will check it. */
static void regex(rule_state *s, const char *what, const char *re)
{
    char why[160];
    if (re == NULL ||
        !val_regex_check(re, s->c->in->options.regex_max_program_size, why, sizeof why))
        refuse(s->r, "UnsupportedValue",
               gw_printf(s->c, "%s %s: regular expression \"%s\" is not supported: %s", s->where,
                         what, re ? re : "", re ? why : "missing"));
}

/* ---------------------------------------------------------------- backends */

static json_t *backend_refs(rule_state *s, const json_t *refs, bool *sends)
{
    json_t *out = json_array();
    size_t n = json_array_size(refs);
    for (size_t i = 0; i < n; i++) {
        const json_t *ref = json_array_get(refs, i);
        size_t nf;
        if (gw_array(ref, "filters", &nf) && nf > 0)
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c,
                             "%s backendRefs[%zu]: filters on a backendRef are not "
                             "supported; put them on the rule",
                             s->where, i));
        long long weight = 1;
        gw_int(ref, "weight", &weight);
        if (weight < 0 || weight > 1000000) {
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s backendRefs[%zu]: weight %lld is not between 0 and 1000000",
                             s->where, i, weight));
            continue;
        }
        const char *reason, *message;
        long bi =
            gw_backend_ref(s->c, s->r->kind, s->r->obj->ns, ref, s->protocol, &reason, &message);
        if (bi < 0) {
            unresolved(s->r, reason, message);
            continue;
        }
        const gw_backend *b = &s->c->backends[bi];
        if (b->n_endpoints == 0 || b->blocked)
            weight = 0; /* no ready endpoint (validation refuses traffic to an empty
                           backend), or a BackendTLSPolicy that cannot be applied */
        *sends = *sends || weight > 0;
        note_backend(s->c, s->rule, (size_t)bi);
        json_array_append_new(out, json_pack("{s:s,s:s,s:I}", "name", b->name, "namespace",
                                             b->svc_ns, "weight", (json_int_t)weight));
    }
    return out;
}

/* ---------------------------------------------------------------- matches */

/* Header or query parameter matches, the first of each name only (case-insensitive
 * for headers). */
static json_t *value_matches(rule_state *s, const json_t *in, bool headers, const char *what)
{
    json_t *out = json_array();
    size_t n = json_array_size(in);
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(in, i);
        const char *name = gw_str_or(m, "name", ""), *value = gw_str_or(m, "value", "");
        const char *type = gw_str_or(m, "type", "Exact");
        bool seen = false;
        for (size_t k = 0; k < json_array_size(out) && !seen; k++) {
            const char *o = gw_str(json_array_get(out, k), "name");
            seen = headers ? strcasecmp(o, name) == 0 : strcmp(o, name) == 0;
        }
        if (seen)
            continue;
        json_t *o = json_pack("{s:s,s:s}", "name", name, "value", value);
        if (strcmp(type, "RegularExpression") == 0) {
            regex(s, what, value);
            json_object_set_new(o, "type", json_string(type));
        } else if (strcmp(type, "Exact") != 0) {
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: %s match type %s is not supported", s->where, what, type));
        }
        json_array_append_new(out, o);
    }
    return out;
}

static json_t *http_match(rule_state *s, const json_t *m, bool *prefix_only)
{
    json_t *o = json_object();
    const json_t *path = gw_get(m, "path");
    if (path) {
        const char *type = gw_str_or(path, "type", "PathPrefix");
        const char *value = gw_str_or(path, "value", "/");
        if (strcmp(type, "RegularExpression") == 0)
            regex(s, "path", value);
        else if (strcmp(type, "Exact") != 0 && strcmp(type, "PathPrefix") != 0)
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: path match type %s is not supported", s->where, type));
        *prefix_only = *prefix_only && strcmp(type, "PathPrefix") == 0;
        json_object_set_new(o, "path", json_string(value));
        json_object_set_new(o, "path_type", json_string(type));
    }
    const char *method = gw_str(m, "method");
    if (method)
        json_object_set_new(o, "method", json_string(method));
    if (json_array_size(gw_get(m, "headers")))
        json_object_set_new(o, "headers", value_matches(s, gw_get(m, "headers"), true, "header"));
    if (json_array_size(gw_get(m, "queryParams")))
        json_object_set_new(o, "query_params",
                            value_matches(s, gw_get(m, "queryParams"), false, "query parameter"));
    return o;
}

static json_t *grpc_match(rule_state *s, const json_t *m)
{
    json_t *o = json_object();
    const json_t *meth = gw_get(m, "method");
    if (meth) {
        const char *type = gw_str_or(meth, "type", "Exact");
        const char *svc = gw_str(meth, "service"), *name = gw_str(meth, "method");
        if (strcmp(type, "RegularExpression") == 0) {
            if (svc)
                regex(s, "method.service", svc);
            if (name)
                regex(s, "method.method", name);
            json_object_set_new(o, "match_type", json_string(type));
        } else if (strcmp(type, "Exact") != 0) {
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: method match type %s is not supported", s->where, type));
        }
        if ((svc && strchr(svc, '/')) || (name && strchr(name, '/')))
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: service and method must not contain \"/\"", s->where));
        if (svc)
            json_object_set_new(o, "service", json_string(svc));
        if (name)
            json_object_set_new(o, "method", json_string(name));
    }
    if (json_array_size(gw_get(m, "headers")))
        json_object_set_new(o, "headers", value_matches(s, gw_get(m, "headers"), true, "header"));
    return o;
}

/* ---------------------------------------------------------------- filters */

static json_t *headers_of(const json_t *list)
{
    json_t *out = json_array();
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n; i++) {
        const json_t *h = json_array_get(list, i);
        json_array_append_new(out, json_pack("{s:s,s:s}", "name", gw_str_or(h, "name", ""), "value",
                                             gw_str_or(h, "value", "")));
    }
    return out;
}

static json_t *header_modifier(const json_t *f)
{
    json_t *o = json_object();
    if (json_array_size(gw_get(f, "set")))
        json_object_set_new(o, "set", headers_of(gw_get(f, "set")));
    if (json_array_size(gw_get(f, "add")))
        json_object_set_new(o, "add", headers_of(gw_get(f, "add")));
    if (json_array_size(gw_get(f, "remove")))
        json_object_set_new(o, "remove", json_deep_copy(gw_get(f, "remove")));
    return o;
}

static json_t *path_modifier(rule_state *s, const json_t *p)
{
    const char *type = gw_str_or(p, "type", "");
    if (strcmp(type, "ReplaceFullPath") == 0)
        return json_pack("{s:s,s:s}", "type", type, "replace_full_path",
                         gw_str_or(p, "replaceFullPath", "/"));
    if (strcmp(type, "ReplacePrefixMatch") == 0) {
        s->prefix_rewrite = true;
        return json_pack("{s:s,s:s}", "type", type, "replace_prefix_match",
                         gw_str_or(p, "replacePrefixMatch", "/"));
    }
    refuse(s->r, "UnsupportedValue",
           gw_printf(s->c, "%s: path modifier type %s is not supported", s->where, type));
    return NULL;
}

static json_t *redirect(rule_state *s, const json_t *f)
{
    json_t *o = json_object();
    const char *scheme = gw_str(f, "scheme"), *host = gw_str(f, "hostname");
    long long port, code;
    if (scheme) {
        if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: redirect scheme %s is not supported (http and https are)",
                             s->where, scheme));
        json_object_set_new(o, "scheme", json_string(scheme));
    }
    if (host)
        json_object_set_new(o, "hostname", json_string(host));
    if (gw_get(f, "path")) {
        json_t *p = path_modifier(s, gw_get(f, "path"));
        if (p)
            json_object_set_new(o, "path", p);
    }
    if (gw_int(f, "port", &port))
        json_object_set_new(o, "port", json_integer(port));
    if (gw_int(f, "statusCode", &code)) {
        if (code != 301 && code != 302 && code != 303 && code != 307 && code != 308)
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c,
                             "%s: redirect status %lld is not supported (301, 302, 303, "
                             "307 and 308 are)",
                             s->where, code));
        json_object_set_new(o, "status_code", json_integer(code));
    }
    return o;
}

static json_t *mirror(rule_state *s, const json_t *f)
{
    const char *reason, *message;
    long bi = gw_backend_ref(s->c, s->r->kind, s->r->obj->ns, gw_get(f, "backendRef"), s->protocol,
                             &reason, &message);
    long long percent = 100, num, den = 100;
    gw_int(f, "percent", &percent);
    const json_t *frac = gw_get(f, "fraction");
    if (frac && gw_int(frac, "numerator", &num)) {
        gw_int(frac, "denominator", &den);
        if (den <= 0 || (num * 100) % den != 0) {
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: mirror fraction %lld/%lld is not a whole percent", s->where,
                             num, den));
            return NULL;
        }
        percent = num * 100 / den;
    }
    if (bi < 0) {
        unresolved(s->r, reason, message);
        return NULL;
    }
    const gw_backend *b = &s->c->backends[bi];
    if (percent <= 0 || b->blocked)
        return NULL; /* mirrors nothing */
    note_backend(s->c, s->rule, (size_t)bi);
    json_t *m = json_pack("{s:{s:s,s:s}}", "backend_ref", "name", b->name, "namespace", b->svc_ns);
    if (percent < 100)
        json_object_set_new(m, "percent", json_integer(percent));
    return m;
}

/* Refuses the rule when it already has a RequestRedirect or URLRewrite filter: it can
 * have one of them, not both (nor two of one). */
static void refuse_second_redirect(rule_state *s)
{
    if (s->redirect || s->rewrite)
        refuse(s->r, "IncompatibleFilters",
               gw_printf(s->c,
                         "%s: a rule can have one RequestRedirect or one URLRewrite filter, "
                         "not both",
                         s->where));
}

/* Whether an extensionRef names a WasmPlugin of Sextant's. */
static bool wasm_ref(const json_t *ref)
{
    return strcmp(gw_str_or(ref, "group", ""), "sextant.dev") == 0 &&
           strcmp(gw_str_or(ref, "kind", ""), "WasmPlugin") == 0;
}

/* An ExtensionRef filter naming WasmPlugin name of the route's namespace: the plugin
 * runs on the rule's backends. One that does not exist or cannot be used is not skipped:
 * the rule forwards nothing (ResolvedRefs=False). */
static void wasm_filter(rule_state *s, const char *name)
{
    const char *ns = s->r->obj->ns;
    long pi = gw_sx_find_wasm(s->c, ns, name);
    if (s->rule->wasm) {
        refuse(s->r, "UnsupportedValue",
               gw_printf(s->c, "%s: a rule takes one ExtensionRef to a WasmPlugin, not more",
                         s->where));
    } else if (pi < 0) {
        s->blocked = true;
        unresolved(s->r, "BackendNotFound",
                   gw_printf(s->c,
                             "%s: the ExtensionRef filter names WasmPlugin %s/%s, which does "
                             "not exist; the rule forwards nothing",
                             s->where, ns, name));
    } else if (s->c->sxps[pi].ir == NULL) {
        s->blocked = true;
        unresolved(s->r, "UnsupportedValue",
                   gw_printf(s->c,
                             "%s: the ExtensionRef filter names WasmPlugin %s/%s, which is "
                             "invalid (%s); the rule forwards nothing",
                             s->where, ns, name, s->c->sxps[pi].accepted.message));
    } else {
        s->rule->wasm = (size_t)pi + 1;
    }
}

static json_t *filters(rule_state *s, const json_t *in, bool grpc)
{
    json_t *out = json_array();
    size_t n = json_array_size(in);
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(in, i);
        const char *type = gw_str_or(f, "type", "");
        json_t *conf = NULL;
        const char *member = NULL;
        if (strcmp(type, "RequestHeaderModifier") == 0) {
            member = "request_header_modifier";
            conf = header_modifier(gw_get(f, "requestHeaderModifier"));
        } else if (strcmp(type, "ResponseHeaderModifier") == 0) {
            member = "response_header_modifier";
            conf = header_modifier(gw_get(f, "responseHeaderModifier"));
        } else if (strcmp(type, "RequestMirror") == 0) {
            member = "request_mirror";
            conf = mirror(s, gw_get(f, "requestMirror"));
        } else if (!grpc && strcmp(type, "RequestRedirect") == 0) {
            refuse_second_redirect(s);
            s->redirect = true;
            member = "request_redirect";
            conf = redirect(s, gw_get(f, "requestRedirect"));
        } else if (!grpc && strcmp(type, "URLRewrite") == 0) {
            refuse_second_redirect(s);
            s->rewrite = true;
            member = "url_rewrite";
            const json_t *rw = gw_get(f, "urlRewrite");
            conf = json_object();
            if (gw_str(rw, "hostname"))
                json_object_set_new(conf, "hostname", json_string(gw_str(rw, "hostname")));
            if (gw_get(rw, "path")) {
                json_t *p = path_modifier(s, gw_get(rw, "path"));
                if (p)
                    json_object_set_new(conf, "path", p);
            }
        } else if (strcmp(type, "ExtensionRef") == 0 && wasm_ref(gw_get(f, "extensionRef"))) {
            wasm_filter(s, gw_str_or(gw_get(f, "extensionRef"), "name", ""));
        } else {
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: filter type %s is not supported (%s are)", s->where,
                             type[0] ? type : "\"\"",
                             grpc ? "RequestHeaderModifier, ResponseHeaderModifier, "
                                    "RequestMirror and ExtensionRef to a sextant.dev WasmPlugin"
                                  : "RequestHeaderModifier, ResponseHeaderModifier, "
                                    "RequestRedirect, URLRewrite, RequestMirror and ExtensionRef "
                                    "to a sextant.dev WasmPlugin"));
        }
        if (conf)
            json_array_append_new(out, json_pack("{s:s,s:o}", "type", type, member, conf));
    }
    return out;
}

/* ---------------------------------------------------------------- HTTP extras */

static void timeouts(rule_state *s, const json_t *t, json_t *rule)
{
    if (t == NULL)
        return;
    json_t *o = json_object();
    int64_t req = -1, back = -1;
    const char *keys[2] = {"request", "backendRequest"}, *ir[2] = {"request", "backend_request"};
    int64_t *vals[2] = {&req, &back};
    for (int i = 0; i < 2; i++) {
        const char *v = gw_str(t, keys[i]);
        if (v == NULL)
            continue;
        if (!gw_duration_ms(v, vals[i])) {
            refuse(
                s->r, "UnsupportedValue",
                gw_printf(s->c, "%s: timeouts.%s \"%s\" is not a duration", s->where, keys[i], v));
            continue;
        }
        json_object_set_new(o, ir[i], gw_duration_json(*vals[i]));
    }
    if (req > 0 && back > req)
        refuse(s->r, "UnsupportedValue",
               gw_printf(s->c,
                         "%s: timeouts.backendRequest must not be longer than "
                         "timeouts.request",
                         s->where));
    if (json_object_size(o))
        json_object_set_new(rule, "timeouts", o);
    else
        json_decref(o);
}

static void retry(rule_state *s, const json_t *r, json_t *rule)
{
    if (r == NULL)
        return;
    json_t *o = json_object();
    size_t n;
    const json_t *codes = gw_array(r, "codes", &n);
    for (size_t i = 0; i < n; i++) {
        json_int_t code = json_integer_value(json_array_get(codes, i));
        if (code < 400 || code > 599)
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: retry code %lld is not between 400 and 599", s->where,
                             (long long)code));
    }
    if (n)
        json_object_set_new(o, "codes", json_deep_copy(codes));
    long long attempts;
    if (gw_int(r, "attempts", &attempts)) {
        if (attempts < 0 || attempts > 100)
            refuse(s->r, "UnsupportedValue",
                   gw_printf(s->c, "%s: retry attempts %lld is not between 0 and 100", s->where,
                             attempts));
        json_object_set_new(o, "attempts", json_integer(attempts));
    }
    const char *backoff = gw_str(r, "backoff");
    int64_t ms;
    if (backoff && !gw_duration_ms(backoff, &ms))
        refuse(s->r, "UnsupportedValue",
               gw_printf(s->c, "%s: retry backoff \"%s\" is not a duration", s->where, backoff));
    else if (backoff && ms > 0)
        json_object_set_new(o, "backoff", gw_duration_json(ms));
    json_object_set_new(rule, "retry", o);
}

/* ---------------------------------------------------------------- rules */

static void http_like_rule(gw_ctx *c, gw_route *r, size_t k, const json_t *in, bool grpc)
{
    gw_rule *rule = &r->rules[k];
    rule_state s = {.c = c,
                    .r = r,
                    .rule = rule,
                    .where = gw_printf(c, "rules[%zu]", k),
                    .protocol = grpc ? "GRPC" : NULL};
    json_t *ir = json_object();
    const char *name = gw_str(in, "name");
    if (name)
        json_object_set_new(ir, "name", json_string(name));
    size_t nm;
    const json_t *matches = gw_array(in, "matches", &nm);
    bool prefix_only = true;
    if (nm) {
        json_t *ms = json_array();
        for (size_t i = 0; i < nm; i++)
            json_array_append_new(ms,
                                  grpc ? grpc_match(&s, json_array_get(matches, i))
                                       : http_match(&s, json_array_get(matches, i), &prefix_only));
        json_object_set_new(ir, "matches", ms);
    }
    json_t *fs = filters(&s, gw_get(in, "filters"), grpc);
    if (json_array_size(fs))
        json_object_set_new(ir, "filters", fs);
    else
        json_decref(fs);
    if (s.prefix_rewrite && !prefix_only)
        refuse(r, "UnsupportedValue",
               gw_printf(c,
                         "%s: ReplacePrefixMatch needs every match of the rule to be a "
                         "PathPrefix match",
                         s.where));
    bool sends = false;
    json_t *refs = backend_refs(&s, gw_get(in, "backendRefs"), &sends);
    if (json_array_size(refs))
        json_object_set_new(ir, "backend_refs", refs);
    else
        json_decref(refs);
    if (!grpc) {
        timeouts(&s, gw_get(in, "timeouts"), ir);
        retry(&s, gw_get(in, "retry"), ir);
    }
    if (gw_get(in, "sessionPersistence"))
        refuse(r, "UnsupportedValue",
               gw_printf(c,
                         "%s: sessionPersistence is not supported by Sextant's Envoy "
                         "translation",
                         s.where));
    if ((sends || s.redirect) && !s.blocked) {
        rule->ir = ir;
        r->n_kept++;
    } else {
        json_decref(ir);
    }
}

static void stream_rule(gw_ctx *c, gw_route *r, size_t k, const json_t *in)
{
    gw_rule *rule = &r->rules[k];
    rule_state s = {.c = c, .r = r, .rule = rule, .where = gw_printf(c, "rules[%zu]", k)};
    bool sends = false;
    json_t *refs = backend_refs(&s, gw_get(in, "backendRefs"), &sends);
    if (sends) {
        rule->ir = refs;
        r->n_kept++;
    } else {
        json_decref(refs);
    }
}

void gw_route_analyse(gw_ctx *c, gw_route *r)
{
    r->resolved = (gw_cond){"ResolvedRefs", true, "ResolvedRefs", "every backendRef resolved"};
    size_t n;
    const json_t *rules = gw_array(gw_get(r->obj->o, "spec"), "rules", &n);
    r->rules = sx_arena_alloc(c->a, (n + 1) * sizeof *r->rules);
    r->n_rules = n;
    if (r->kind == RK_UDP)
        refuse(r, "UnsupportedValue",
               "UDPRoutes are not supported: Sextant's Envoy translation has no UDP proxy");
    if ((r->kind == RK_TLS || r->kind == RK_TCP || r->kind == RK_UDP) && n > 1)
        refuse(r, "UnsupportedValue",
               gw_printf(c, "a %s has one rule, this one has %zu", gw_rk_name(r->kind), n));
    for (size_t k = 0; k < n; k++) {
        const json_t *in = json_array_get(rules, k);
        if (r->kind == RK_HTTP || r->kind == RK_GRPC)
            http_like_rule(c, r, k, in, r->kind == RK_GRPC);
        else
            stream_rule(c, r, k, in);
    }
}
