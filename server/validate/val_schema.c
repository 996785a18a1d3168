/*
 * val_schema.c — the schema stage's own checks, after the JSON codec and the IR's
 * value-range rules (ir_snapshot_from_json, run by validate.c): required fields,
 * hostnames, durations, regular expressions, IP literals and sane rule matches.
 *
 * Each rule reports every occurrence with its path. Hostnames are RFC 1123 names
 * (labels of letters, digits and hyphens, 1 to 63 characters, not starting or ending
 * with a hyphen; 253 characters in all), optionally with a wildcard first label
 * ("*.example.com") where Gateway API allows one; an IP address is not a hostname.
 * Endpoints must be IP literals because proxyless gRPC clients take EDS addresses as
 * they are and never resolve names.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/validate/val_internal.h"

typedef Google__Protobuf__Duration val_duration;

static bool is_ip(const char *s)
{
    unsigned char raw[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, raw) == 1 || inet_pton(AF_INET6, s, raw) == 1;
}

/* ---------------------------------------------------------------- hostnames */

/* Why h is not a hostname (NULL when it is one). wildcard: "*.suffix" is allowed. */
static const char *hostname_problem(const char *h, bool wildcard, char *buf, size_t n)
{
    size_t len = strlen(h);
    if (len > 253)
        return "it is longer than 253 characters";
    if (is_ip(h))
        return "it is an ip address";
    const char *rest = h;
    if (h[0] == '*') {
        if (!wildcard)
            return "a wildcard is not allowed here";
        if (h[1] != '.' || h[2] == '\0')
            return "a wildcard must be the whole first label, as in \"*.example.com\"";
        rest = h + 2;
    }
    for (const char *label = rest;;) {
        const char *end = strchr(label, '.');
        size_t ll = end ? (size_t)(end - label) : strlen(label);
        if (ll == 0)
            return "empty label";
        if (ll > 63) {
            snprintf(buf, n, "label \"%.*s\" is longer than 63 characters", (int)ll, label);
            return buf;
        }
        for (size_t i = 0; i < ll; i++) {
            unsigned char ch = (unsigned char)label[i];
            if (ch == '*')
                return "a wildcard must be the whole first label, as in \"*.example.com\"";
            if (!isalnum(ch) && ch != '-') {
                if (ch >= 0x20 && ch < 0x7f)
                    snprintf(buf, n, "'%c' is not allowed (letters, digits, hyphens and dots only)",
                             ch);
                else
                    snprintf(buf, n,
                             "byte 0x%02x is not allowed (letters, digits, hyphens and dots only)",
                             ch);
                return buf;
            }
        }
        if (label[0] == '-' || label[ll - 1] == '-') {
            snprintf(buf, n, "label \"%.*s\" starts or ends with a hyphen", (int)ll, label);
            return buf;
        }
        if (end == NULL)
            break;
        label = end + 1;
    }
    return NULL;
}

static void check_hostname(val_ctx *c, const char *path, const char *h, bool wildcard)
{
    if (val_empty(h)) {
        val_add(c, path, "must not be empty");
        return;
    }
    char buf[128];
    const char *why = hostname_problem(h, wildcard, buf, sizeof buf);
    if (why)
        val_add(c, path, "\"%s\" is not a valid hostname: %s", h, why);
}

static void check_hostnames(val_ctx *c, const char *base, char **hosts, size_t n)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        check_hostname(c, val_path(p, "%s[%zu]", base, i), hosts[i], true);
    }
}

/* ---------------------------------------------------------------- small rules */

static void required(val_ctx *c, const char *path, const char *s)
{
    if (val_empty(s))
        val_add(c, path, "must not be empty");
}

static bool negative(const val_duration *d)
{
    return d->seconds < 0 || d->nanos < 0;
}

static bool zero(const val_duration *d)
{
    return d->seconds == 0 && d->nanos == 0;
}

/* A duration that, when set, must be above zero. */
static void positive(val_ctx *c, const char *path, const val_duration *d)
{
    if (d && (negative(d) || zero(d)))
        val_add(c, path, "must be positive");
}

/* A duration that, when set, must not be below zero (0 turns the timeout off). */
static void not_negative(val_ctx *c, const char *path, const val_duration *d)
{
    if (d && negative(d))
        val_add(c, path, "must not be negative");
}

static void regex(val_ctx *c, const char *path, const char *re)
{
    char why[160];
    if (val_empty(re))
        val_add(c, path, "a RegularExpression match needs a pattern");
    else if (!val_regex_check(re, c->limits.regex_max_program_size, why, sizeof why))
        val_add(c, path, "invalid regular expression: %s", why);
}

static bool is_regex_type(const char *t)
{
    return t && strcmp(t, "RegularExpression") == 0;
}

/* RFC 9110 token characters, which a header name is made of. */
static bool header_name_ok(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (!isalnum(*p) && !strchr("!#$%&'*+-.^_`|~", *p))
            return false;
    return true;
}

static void header_matches(val_ctx *c, const char *base, val_header_match **h, size_t n)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        if (h[i] == NULL)
            continue;
        snprintf(p, sizeof p, "%s.headers[%zu].name", base, i);
        if (val_empty(h[i]->name))
            val_add(c, p, "must not be empty");
        else if (!header_name_ok(h[i]->name))
            val_add(c, p, "\"%s\" is not a valid header name", h[i]->name);
        if (is_regex_type(h[i]->type))
            regex(c, val_path(p, "%s.headers[%zu].value", base, i), h[i]->value);
    }
}

static void backend_ref(val_ctx *c, const char *path, const val_backend_ref *r)
{
    char p[VAL_PATH_MAX];
    required(c, val_path(p, "%s.name", path), r->name);
}

static void backend_refs(val_ctx *c, const char *base, val_backend_ref **refs, size_t n)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        if (refs[i] == NULL)
            continue;
        backend_ref(c, val_path(p, "%s.backend_refs[%zu]", base, i), refs[i]);
    }
}

/* The filter type each configuration member goes with. */
static const char *filter_type_of(const val_filter *f)
{
    static const char *const types[] = {
        [GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_HEADER_MODIFIER] = "RequestHeaderModifier",
        [GATEWAY__CONTROL__V1__FILTER__CONFIG_RESPONSE_HEADER_MODIFIER] = "ResponseHeaderModifier",
        [GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_REDIRECT] = "RequestRedirect",
        [GATEWAY__CONTROL__V1__FILTER__CONFIG_URL_REWRITE] = "URLRewrite",
        [GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_MIRROR] = "RequestMirror",
        [GATEWAY__CONTROL__V1__FILTER__CONFIG_EXTENSION_REF] = "ExtensionRef"};
    return (size_t)f->config_case < sizeof types / sizeof *types ? types[f->config_case] : NULL;
}

static void filters(val_ctx *c, const char *base, val_filter **f, size_t n)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        if (f[i] == NULL)
            continue;
        snprintf(p, sizeof p, "%s.filters[%zu]", base, i);
        const char *t = filter_type_of(f[i]);
        if (t == NULL) {
            val_add(c, p, "filter has no configuration");
            continue;
        }
        if (!val_empty(f[i]->type) && strcmp(f[i]->type, t) != 0)
            val_add(c, p, "type \"%s\" does not match its configuration (a %s filter)", f[i]->type,
                    t);
        char q[VAL_PATH_MAX];
        if (f[i]->config_case == GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_MIRROR) {
            snprintf(q, sizeof q, "%s.request_mirror.backend_ref", p);
            if (f[i]->request_mirror->backend_ref == NULL)
                val_add(c, q, "must be set");
            else
                backend_ref(c, q, f[i]->request_mirror->backend_ref);
        } else if (f[i]->config_case == GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_REDIRECT &&
                   !val_empty(f[i]->request_redirect->hostname)) {
            check_hostname(c, val_path(q, "%s.request_redirect.hostname", p),
                           f[i]->request_redirect->hostname, false);
        } else if (f[i]->config_case == GATEWAY__CONTROL__V1__FILTER__CONFIG_URL_REWRITE &&
                   !val_empty(f[i]->url_rewrite->hostname)) {
            check_hostname(c, val_path(q, "%s.url_rewrite.hostname", p),
                           f[i]->url_rewrite->hostname, false);
        }
    }
}

static void session_persistence(val_ctx *c, const char *base,
                                const Gateway__Control__V1__SessionPersistence *s)
{
    if (s == NULL)
        return;
    char p[VAL_PATH_MAX];
    positive(c, val_path(p, "%s.session_persistence.absolute_timeout", base), s->absolute_timeout);
    positive(c, val_path(p, "%s.session_persistence.idle_timeout", base), s->idle_timeout);
}

/* ---------------------------------------------------------------- objects */

static const char *const METHODS[] = {"GET",     "HEAD",    "POST",  "PUT",   "DELETE",
                                      "CONNECT", "OPTIONS", "TRACE", "PATCH", NULL};

static void http_match(val_ctx *c, const char *base, const val_http_match *m)
{
    char p[VAL_PATH_MAX];
    snprintf(p, sizeof p, "%s.path", base);
    if (is_regex_type(m->path_type)) {
        regex(c, p, m->path);
    } else if (!val_empty(m->path)) {
        if (m->path[0] != '/')
            val_add(c, p, "must start with \"/\"");
        else if (strpbrk(m->path, "?#"))
            val_add(c, p, "must not contain \"?\" or \"#\": a path match does not see the query");
    }
    if (!val_empty(m->method)) {
        bool ok = false;
        for (size_t i = 0; METHODS[i] && !ok; i++)
            ok = strcmp(m->method, METHODS[i]) == 0;
        if (!ok) {
            val_add(c, val_path(p, "%s.method", base),
                    "must be one of GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, "
                    "PATCH");
        }
    }
    header_matches(c, base, m->headers, m->n_headers);
    for (size_t i = 0; i < m->n_query_params; i++) {
        const val_query_match *q = m->query_params[i];
        if (q == NULL)
            continue;
        required(c, val_path(p, "%s.query_params[%zu].name", base, i), q->name);
        if (is_regex_type(q->type))
            regex(c, val_path(p, "%s.query_params[%zu].value", base, i), q->value);
    }
}

static void grpc_match(val_ctx *c, const char *base, const val_grpc_match *m)
{
    char p[VAL_PATH_MAX];
    const char *parts[2][2] = {{"service", VAL_S(m->service)}, {"method", VAL_S(m->method)}};
    long long limit = c->limits.regex_max_program_size;
    bool parts_ok = true;
    char why[160];
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s.%s", base, parts[i][0]);
        if (is_regex_type(m->match_type)) {
            if (!val_empty(parts[i][1])) {
                if (strchr(parts[i][1], '/'))
                    val_add(c, p, "must not contain \"/\"");
                else if (!val_regex_check(parts[i][1], limit, why, sizeof why))
                    val_add(c, p, "invalid regular expression: %s", why);
                else
                    continue;
                parts_ok = false;
            }
        } else if (strchr(parts[i][1], '/')) {
            val_add(c, p, "must not contain \"/\"");
        }
    }
    /* The proxy compiles one path regex of both parts (server/translate/translate_route.c
     * grpc_parts), whose program may be over the limit when each part alone is not. */
    if (is_regex_type(m->match_type) && parts_ok) {
        sx_buf re = {0};
        bool s = !val_empty(m->service), me = !val_empty(m->method);
        sx_buf_printf(&re, "/%s%s%s/%s%s%s", s ? "(?:" : "", s ? m->service : "[^/]+", s ? ")" : "",
                      me ? "(?:" : "", me ? m->method : "[^/]+", me ? ")" : "");
        if (!val_regex_check(sx_buf_cstr(&re), limit, why, sizeof why))
            val_add(c, base, "invalid regular expression: service and method as one path: %s", why);
        sx_buf_free(&re);
    }
    header_matches(c, base, m->headers, m->n_headers);
}

static void listeners(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], q[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_listeners; i++) {
        const val_listener *l = ir->listeners[i];
        if (l == NULL)
            continue;
        snprintf(p, sizeof p, "spec.listeners[%zu]", i);
        required(c, val_path(q, "%s.name", p), l->name);
        if (l->protocol == GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_UNSPECIFIED)
            val_add(c, val_path(q, "%s.protocol", p), "must be set");
        for (size_t k = 0;; k++) {
            char field[32];
            const char *a = val_listener_addr(l, k, field, sizeof field);
            if (a == NULL)
                break;
            snprintf(q, sizeof q, "%s.%s", p, field);
            if (k > 0 && val_empty(a))
                val_add(c, q, "must not be empty");
            else if (!val_empty(a) && !is_ip(a))
                val_add(c, q, "\"%s\" is not an ip address", a);
        }
        check_hostnames(c, val_path(q, "%s.hostnames", p), l->hostnames, l->n_hostnames);
        if (l->tls) {
            check_hostnames(c, val_path(q, "%s.tls.sni_hosts", p), l->tls->sni_hosts,
                            l->tls->n_sni_hosts);
        }
    }
}

/* A route's own fields; its rules are checked by route_rule. */
static void route_head(void *arg, const val_route *r)
{
    val_ctx *c = arg;
    char q[VAL_PATH_MAX];
    required(c, val_path(q, "%s.name", r->path), r->name);
    if (r->kind != VAL_ROUTE_STREAM) {
        check_hostnames(c, val_path(q, "%s.hostnames", r->path), r->hostnames, r->n_hostnames);
    } else if (((const val_stream_route *)r->msg)->kind ==
               GATEWAY__CONTROL__V1__ROUTE_KIND__ROUTE_KIND_UNSPECIFIED) {
        val_add(c, val_path(q, "%s.kind", r->path), "must be set");
    }
}

/* What only an HTTP rule at q has: timeouts and retries. */
static void http_rule_extras(val_ctx *c, const char *q, const val_http_rule *rule)
{
    char r[VAL_PATH_MAX];
    const Gateway__Control__V1__HttpRouteTimeouts *t = rule->timeouts;
    if (t) {
        not_negative(c, val_path(r, "%s.timeouts.request", q), t->request);
        not_negative(c, val_path(r, "%s.timeouts.backend_request", q), t->backend_request);
        if (t->request && t->backend_request && !negative(t->request) &&
            !negative(t->backend_request) && !zero(t->request) &&
            (t->backend_request->seconds > t->request->seconds ||
             (t->backend_request->seconds == t->request->seconds &&
              t->backend_request->nanos > t->request->nanos)))
            val_add(c, r, "must not be longer than timeouts.request");
    }
    if (rule->retry)
        positive(c, val_path(r, "%s.retry.backoff", q), rule->retry->backoff);
}

/* A rule of any kind: its matches (stream rules: the SNI hostname), filters, backend
 * refs, then what one kind has alone, then session persistence. */
static void route_rule(void *arg, const val_rule *u)
{
    val_ctx *c = arg;
    char r[VAL_PATH_MAX];
    for (size_t j = 0; j < u->n_matches; j++) {
        const void *m = val_rule_match(u, j);
        if (m == NULL)
            continue;
        val_path(r, "%s.matches[%zu]", u->path, j);
        if (u->route->kind == VAL_ROUTE_HTTP)
            http_match(c, r, m);
        else
            grpc_match(c, r, m);
    }
    const val_stream_rule *sr = u->msg;
    if (u->route->kind == VAL_ROUTE_STREAM && !val_empty(sr->sni_hostname))
        check_hostname(c, val_path(r, "%s.sni_hostname", u->path), sr->sni_hostname, true);
    filters(c, u->path, u->filters, u->n_filters);
    backend_refs(c, u->path, u->backend_refs, u->n_backend_refs);
    if (u->route->kind == VAL_ROUTE_HTTP)
        http_rule_extras(c, u->path, u->msg);
    session_persistence(c, u->path, u->session_persistence);
}

static void backends(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], q[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_backends; i++) {
        const val_backend *b = ir->backends[i];
        if (b == NULL)
            continue;
        snprintf(p, sizeof p, "spec.backends[%zu]", i);
        required(c, val_path(q, "%s.name", p), b->name);
        positive(c, val_path(q, "%s.connect_timeout", p), b->connect_timeout);
        positive(c, val_path(q, "%s.request_timeout", p), b->request_timeout);
        session_persistence(c, p, b->session_persistence);
        if (b->ai_service)
            positive(c, val_path(q, "%s.ai_service.timeout", p), b->ai_service->timeout);
        if (b->tls_validation && !val_empty(b->tls_validation->hostname)) {
            check_hostname(c, val_path(q, "%s.tls_validation.hostname", p),
                           b->tls_validation->hostname, false);
        }
        for (size_t k = 0; k < b->n_endpoints; k++) {
            const val_endpoint *e = b->endpoints[k];
            if (e == NULL)
                continue;
            snprintf(q, sizeof q, "%s.endpoints[%zu].address", p, k);
            if (val_empty(e->address))
                val_add(c, q, "must not be empty");
            else if (!is_ip(e->address))
                val_add(c, q,
                        "\"%s\" is not an ip address: xDS clients take endpoint addresses as "
                        "they are and do not resolve names",
                        e->address);
        }
    }
}

static void secrets(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_secrets; i++) {
        const val_secret *s = ir->secrets[i];
        if (s == NULL)
            continue;
        required(c, val_path(p, "spec.secrets[%zu].name", i), s->name);
        required(c, val_path(p, "spec.secrets[%zu].cert_pem", i), s->cert_pem);
        required(c, val_path(p, "spec.secrets[%zu].key_pem", i), s->key_pem);
    }
}

void val_schema(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    listeners(c, ir);
    val_each_route(ir, VAL_KINDS_ALL, route_head, route_rule, c);
    backends(c, ir);
    secrets(c, ir);
}
