/*
 * val_conflict.c — the conflict stage: what the config claims that another config of
 * its groups claims already. Every problem names that config ("namespace/name (id)").
 *
 * Two claims clash when
 *   - two listeners take the same socket: the same port, and the same address or either
 *     address a wildcard ("", 0.0.0.0, ::), any of their addresses counted;
 *   - two routes match the same requests: a hostname in common (case does not matter;
 *     a route without hostnames claims "any hostname", which clashes with another such
 *     route only) and the same match: for HTTP the same path type and path (defaults
 *     PathPrefix "/"; a prefix's trailing slashes do not count), method, header and
 *     query matches (in any order); for gRPC the same match type, service, method and
 *     header matches. Which route Envoy would pick is then up to the merge order, not to
 *     the operators, so the change is refused instead.
 * Port 0 (proxyless) listeners have no socket; their names are the semantic stage's.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/validate/val_internal.h"

/* ---------------------------------------------------------------- listeners */

static void listeners(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], ap[64];
    for (size_t j = 0; j < ir->n_listeners; j++) {
        const val_listener *l = ir->listeners[j];
        if (l == NULL || l->port == 0)
            continue;
        for (size_t d = 1; d < c->ndocs; d++) {
            const ir_snapshot *pir = c->docs[d].ir;
            for (size_t i = 0; i < pir->n_listeners; i++) {
                const val_listener *o = pir->listeners[i];
                if (o == NULL || o->port != l->port)
                    continue;
                const char *hit = NULL;
                for (size_t x = 0; hit == NULL; x++) {
                    char fx[32], fy[32];
                    const char *a = val_listener_addr(l, x, fx, sizeof fx);
                    if (a == NULL)
                        break;
                    for (size_t y = 0; hit == NULL; y++) {
                        const char *b = val_listener_addr(o, y, fy, sizeof fy);
                        if (b == NULL)
                            break;
                        if (val_addrs_overlap(a, b))
                            hit = a;
                    }
                }
                if (hit == NULL)
                    continue;
                snprintf(p, sizeof p, "spec.listeners[%zu].port", j);
                val_add_conflict(
                    c, p, c->docs[d].ref, "%s is already claimed by listener \"%s\" of config %s",
                    val_addr_port(hit, l->port, ap, sizeof ap), VAL_S(o->name), c->docs[d].ref);
            }
        }
    }
}

/* ---------------------------------------------------------------- matches */

static const val_http_match ANY_PATH = GATEWAY__CONTROL__V1__HTTP_MATCH__INIT;
static const val_grpc_match ANY_METHOD = GATEWAY__CONTROL__V1__GRPC_MATCH__INIT;

static bool is_regex(const char *t)
{
    return t && strcmp(t, "RegularExpression") == 0;
}

static const char *path_type(const val_http_match *m)
{
    return val_empty(m->path_type) ? "PathPrefix" : m->path_type;
}

/* The path of a match as the translator reads it: "/" by default, and a prefix without
 * its trailing slashes. Returns its length; *out points into the match. */
static size_t path_of(const val_http_match *m, const char **out)
{
    const char *v = val_empty(m->path) ? "/" : m->path;
    size_t len = strlen(v);
    if (strcmp(path_type(m), "PathPrefix") == 0)
        while (len > 1 && v[len - 1] == '/')
            len--;
    *out = v;
    return len;
}

static bool same_headers(val_header_match **a, size_t na, val_header_match **b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = a[i] && b[j] && strcasecmp(VAL_S(a[i]->name), VAL_S(b[j]->name)) == 0 &&
                    strcmp(VAL_S(a[i]->value), VAL_S(b[j]->value)) == 0 &&
                    is_regex(a[i]->type) == is_regex(b[j]->type);
        if (!found)
            return false;
    }
    return true;
}

static bool same_query(val_query_match **a, size_t na, val_query_match **b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = a[i] && b[j] && strcmp(VAL_S(a[i]->name), VAL_S(b[j]->name)) == 0 &&
                    strcmp(VAL_S(a[i]->value), VAL_S(b[j]->value)) == 0 &&
                    is_regex(a[i]->type) == is_regex(b[j]->type);
        if (!found)
            return false;
    }
    return true;
}

static bool same_http(const val_http_match *a, const val_http_match *b)
{
    const char *pa, *pb;
    size_t la = path_of(a, &pa), lb = path_of(b, &pb);
    return strcmp(path_type(a), path_type(b)) == 0 && la == lb && memcmp(pa, pb, la) == 0 &&
           strcmp(VAL_S(a->method), VAL_S(b->method)) == 0 &&
           same_headers(a->headers, a->n_headers, b->headers, b->n_headers) &&
           same_query(a->query_params, a->n_query_params, b->query_params, b->n_query_params);
}

static bool same_grpc(const val_grpc_match *a, const val_grpc_match *b)
{
    return is_regex(a->match_type) == is_regex(b->match_type) &&
           strcmp(VAL_S(a->service), VAL_S(b->service)) == 0 &&
           strcmp(VAL_S(a->method), VAL_S(b->method)) == 0 &&
           same_headers(a->headers, a->n_headers, b->headers, b->n_headers);
}

/* The hostnames of a route: "" stands for "any hostname" when it has none. */
static size_t hosts_of(char **hosts, size_t n, const char **out, size_t k)
{
    if (n == 0) {
        *out = "";
        return 1;
    }
    *out = k < n ? VAL_S(hosts[k]) : "";
    return n;
}

static bool host_in(const char *h, char **hosts, size_t n)
{
    if (n == 0)
        return h[0] == '\0';
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(VAL_S(hosts[i]), h) == 0)
            return true;
    return false;
}

static const char *host_text(const char *h, char *buf, size_t n)
{
    if (h[0] == '\0')
        snprintf(buf, n, "any hostname");
    else
        snprintf(buf, n, "hostname \"%s\"", h);
    return buf;
}

static void describe_http(const val_http_match *m, char *buf, size_t n)
{
    const char *p;
    size_t len = path_of(m, &p);
    int k = snprintf(buf, n, "%s \"%.*s\"", path_type(m), (int)len, p);
    if (k > 0 && (size_t)k < n && !val_empty(m->method))
        k += snprintf(buf + k, n - (size_t)k, ", method %s", m->method);
    if (k > 0 && (size_t)k < n && m->n_headers)
        k += snprintf(buf + k, n - (size_t)k, ", %zu header match%s", m->n_headers,
                      m->n_headers == 1 ? "" : "es");
    if (k > 0 && (size_t)k < n && m->n_query_params)
        snprintf(buf + k, n - (size_t)k, ", %zu query match%s", m->n_query_params,
                 m->n_query_params == 1 ? "" : "es");
}

static void describe_grpc(const val_grpc_match *m, char *buf, size_t n)
{
    int k =
        snprintf(buf, n, "%sservice \"%s\", method \"%s\"",
                 is_regex(m->match_type) ? "RegularExpression " : "",
                 val_empty(m->service) ? "*" : m->service, val_empty(m->method) ? "*" : m->method);
    if (k > 0 && (size_t)k < n && m->n_headers)
        snprintf(buf + k, n - (size_t)k, ", %zu header match%s", m->n_headers,
                 m->n_headers == 1 ? "" : "es");
}

/* The claim_fn (below) of HTTP routes, and then of gRPC routes. */
static bool http_claim(const ir_snapshot *ir, const char *h, const void *match, const char **ns,
                       const char **name)
{
    const val_http_match *m = match;
    for (size_t i = 0; i < ir->n_http_routes; i++) {
        const val_http_route *r = ir->http_routes[i];
        if (r == NULL || !host_in(h, r->hostnames, r->n_hostnames))
            continue;
        for (size_t k = 0; k < r->n_rules; k++) {
            const val_http_rule *rule = r->rules[k];
            if (rule == NULL)
                continue;
            bool hit = rule->n_matches == 0 && same_http(m, &ANY_PATH);
            for (size_t j = 0; j < rule->n_matches && !hit; j++)
                hit = rule->matches[j] && same_http(m, rule->matches[j]);
            if (hit) {
                *ns = r->namespace_;
                *name = r->name;
                return true;
            }
        }
    }
    return false;
}

static bool grpc_claim(const ir_snapshot *ir, const char *h, const void *match, const char **ns,
                       const char **name)
{
    const val_grpc_match *m = match;
    for (size_t i = 0; i < ir->n_grpc_routes; i++) {
        const val_grpc_route *r = ir->grpc_routes[i];
        if (r == NULL || !host_in(h, r->hostnames, r->n_hostnames))
            continue;
        for (size_t k = 0; k < r->n_rules; k++) {
            const val_grpc_rule *rule = r->rules[k];
            if (rule == NULL)
                continue;
            bool hit = rule->n_matches == 0 && same_grpc(m, &ANY_METHOD);
            for (size_t j = 0; j < rule->n_matches && !hit; j++)
                hit = rule->matches[j] && same_grpc(m, rule->matches[j]);
            if (hit) {
                *ns = r->namespace_;
                *name = r->name;
                return true;
            }
        }
    }
    return false;
}

/* Finds the route of one kind (HTTP or gRPC) in ir that claims host h with match m: its
 * namespace and name in *ns and *name; false when none does. */
typedef bool (*claim_fn)(const ir_snapshot *ir, const char *h, const void *m, const char **ns,
                         const char **name);

/* Reports at p every other document whose kind route already claims m (described as what)
 * on one of the hostnames. */
static void report_claims(val_ctx *c, const char *p, char **hostnames, size_t nhostnames,
                          const void *m, const char *what, const char *kind, claim_fn claim)
{
    char host[300], q[VAL_PATH_MAX];
    const char *h;
    size_t nh = hosts_of(hostnames, nhostnames, &h, 0);
    for (size_t x = 0; x < nh; x++) {
        hosts_of(hostnames, nhostnames, &h, x);
        for (size_t d = 1; d < c->ndocs; d++) {
            const char *ns, *name;
            if (!claim(c->docs[d].ir, h, m, &ns, &name))
                continue;
            val_add_conflict(c, p, c->docs[d].ref,
                             "%s with %s is already routed by %s route \"%s\" of config %s",
                             host_text(h, host, sizeof host), what, kind,
                             val_qname(ns, name, q, sizeof q), c->docs[d].ref);
        }
    }
}

static void http_routes(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], what[160];
    for (size_t i = 0; i < ir->n_http_routes; i++) {
        const val_http_route *r = ir->http_routes[i];
        for (size_t k = 0; r && k < r->n_rules; k++) {
            const val_http_rule *rule = r->rules[k];
            if (rule == NULL)
                continue;
            size_t nm = rule->n_matches ? rule->n_matches : 1;
            for (size_t j = 0; j < nm; j++) {
                const val_http_match *m = rule->n_matches ? rule->matches[j] : &ANY_PATH;
                if (m == NULL)
                    continue;
                if (rule->n_matches)
                    snprintf(p, sizeof p, "spec.http_routes[%zu].rules[%zu].matches[%zu]", i, k, j);
                else
                    snprintf(p, sizeof p, "spec.http_routes[%zu].rules[%zu]", i, k);
                describe_http(m, what, sizeof what);
                report_claims(c, p, r->hostnames, r->n_hostnames, m, what, "http", http_claim);
            }
        }
    }
}

static void grpc_routes(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], what[300];
    for (size_t i = 0; i < ir->n_grpc_routes; i++) {
        const val_grpc_route *r = ir->grpc_routes[i];
        for (size_t k = 0; r && k < r->n_rules; k++) {
            const val_grpc_rule *rule = r->rules[k];
            if (rule == NULL)
                continue;
            size_t nm = rule->n_matches ? rule->n_matches : 1;
            for (size_t j = 0; j < nm; j++) {
                const val_grpc_match *m = rule->n_matches ? rule->matches[j] : &ANY_METHOD;
                if (m == NULL)
                    continue;
                if (rule->n_matches)
                    snprintf(p, sizeof p, "spec.grpc_routes[%zu].rules[%zu].matches[%zu]", i, k, j);
                else
                    snprintf(p, sizeof p, "spec.grpc_routes[%zu].rules[%zu]", i, k);
                describe_grpc(m, what, sizeof what);
                report_claims(c, p, r->hostnames, r->n_hostnames, m, what, "grpc", grpc_claim);
            }
        }
    }
}

void val_conflict(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    listeners(c, ir);
    http_routes(c, ir);
    grpc_routes(c, ir);
}
