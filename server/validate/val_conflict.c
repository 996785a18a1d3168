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
        for (size_t d = 1; d < c->ndocs; d++) {
            const ir_snapshot *pir = c->docs[d].ir;
            for (size_t i = 0; i < pir->n_listeners; i++) {
                const val_listener *o = pir->listeners[i];
                const char *hit = val_sockets_clash(l, o);
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

/* Whether two lists (na and nb entries) hold the same entries in any order; same(a, i,
 * b, j) compares entry i of list a with entry j of list b. */
static bool same_sets(const void *a, size_t na, const void *b, size_t nb,
                      bool (*same)(const void *a, size_t i, const void *b, size_t j))
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = same(a, i, b, j);
        if (!found)
            return false;
    }
    return true;
}

/* Whether two header or query matches, each a name, a value and a match type, are the
 * same; fold: names do not count case (header names). */
static bool same_entry(const char *an, const char *av, const char *at, const char *bn,
                       const char *bv, const char *bt, bool fold)
{
    int names = fold ? strcasecmp(VAL_S(an), VAL_S(bn)) : strcmp(VAL_S(an), VAL_S(bn));
    return names == 0 && strcmp(VAL_S(av), VAL_S(bv)) == 0 && is_regex(at) == is_regex(bt);
}

static bool same_header(const void *la, size_t i, const void *lb, size_t j)
{
    val_header_match *const *a = la, *const *b = lb;
    return a[i] && b[j] &&
           same_entry(a[i]->name, a[i]->value, a[i]->type, b[j]->name, b[j]->value, b[j]->type,
                      true);
}

static bool same_query(const void *la, size_t i, const void *lb, size_t j)
{
    val_query_match *const *a = la, *const *b = lb;
    return a[i] && b[j] &&
           same_entry(a[i]->name, a[i]->value, a[i]->type, b[j]->name, b[j]->value, b[j]->type,
                      false);
}

static bool same_http(const void *ma, const void *mb)
{
    const val_http_match *a = ma, *b = mb;
    const char *pa, *pb;
    size_t la = path_of(a, &pa), lb = path_of(b, &pb);
    return strcmp(path_type(a), path_type(b)) == 0 && la == lb && memcmp(pa, pb, la) == 0 &&
           strcmp(VAL_S(a->method), VAL_S(b->method)) == 0 &&
           same_sets(a->headers, a->n_headers, b->headers, b->n_headers, same_header) &&
           same_sets(a->query_params, a->n_query_params, b->query_params, b->n_query_params,
                     same_query);
}

static bool same_grpc(const void *ma, const void *mb)
{
    const val_grpc_match *a = ma, *b = mb;
    return is_regex(a->match_type) == is_regex(b->match_type) &&
           strcmp(VAL_S(a->service), VAL_S(b->service)) == 0 &&
           strcmp(VAL_S(a->method), VAL_S(b->method)) == 0 &&
           same_sets(a->headers, a->n_headers, b->headers, b->n_headers, same_header);
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

static void describe_http(const void *match, char *buf, size_t n)
{
    const val_http_match *m = match;
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

static void describe_grpc(const void *match, char *buf, size_t n)
{
    const val_grpc_match *m = match;
    int k =
        snprintf(buf, n, "%sservice \"%s\", method \"%s\"",
                 is_regex(m->match_type) ? "RegularExpression " : "",
                 val_empty(m->service) ? "*" : m->service, val_empty(m->method) ? "*" : m->method);
    if (k > 0 && (size_t)k < n && m->n_headers)
        snprintf(buf + k, n - (size_t)k, ", %zu header match%s", m->n_headers,
                 m->n_headers == 1 ? "" : "es");
}

/* ---------------------------------------------------------------- routes */

/* What the route checks know of the matches of one kind of route (HTTP, gRPC). */
typedef struct match_kind {
    const char *name; /* in messages */
    const void *any;  /* the match of a rule without matches */
    size_t what_max;  /* room for a description, with its NUL */
    void (*describe)(const void *m, char *buf, size_t n);
    bool (*same)(const void *a, const void *b);
} match_kind;

static const match_kind MATCH_KINDS[] = {
    [VAL_ROUTE_HTTP] = {"http", &ANY_PATH, 160, describe_http, same_http},
    [VAL_ROUTE_GRPC] = {"grpc", &ANY_METHOD, 300, describe_grpc, same_grpc},
};

/* A search for the first route of one kind that claims host h with match m. */
typedef struct claim {
    const match_kind *kind;
    const char *h;
    const void *m;
    bool found;
    const char *ns, *name; /* the route found */
} claim;

static void claim_rule(void *arg, const val_rule *u)
{
    claim *cl = arg;
    if (cl->found || !host_in(cl->h, u->route->hostnames, u->route->n_hostnames))
        return;
    bool hit = u->n_matches == 0 && cl->kind->same(cl->m, cl->kind->any);
    for (size_t j = 0; j < u->n_matches && !hit; j++) {
        const void *other = val_rule_match(u, j);
        hit = other && cl->kind->same(cl->m, other);
    }
    if (hit) {
        cl->found = true;
        cl->ns = u->route->namespace_;
        cl->name = u->route->name;
    }
}

/* Reports at p every other document whose route of r's kind already claims m (described
 * as what) on one of r's hostnames. */
static void report_claims(val_ctx *c, const char *p, const val_route *r, const void *m,
                          const char *what)
{
    char host[300], q[VAL_PATH_MAX];
    const char *h;
    size_t nh = hosts_of(r->hostnames, r->n_hostnames, &h, 0);
    for (size_t x = 0; x < nh; x++) {
        hosts_of(r->hostnames, r->n_hostnames, &h, x);
        for (size_t d = 1; d < c->ndocs; d++) {
            claim cl = {.kind = &MATCH_KINDS[r->kind], .h = h, .m = m};
            val_each_route(c->docs[d].ir, VAL_KIND(r->kind), NULL, claim_rule, &cl);
            if (!cl.found)
                continue;
            val_add_conflict(c, p, c->docs[d].ref,
                             "%s with %s is already routed by %s route \"%s\" of config %s",
                             host_text(h, host, sizeof host), what, cl.kind->name,
                             val_qname(cl.ns, cl.name, q, sizeof q), c->docs[d].ref);
        }
    }
}

/* Each match of an HTTP or gRPC rule (a rule without matches has the kind's "any"). */
static void rule_claims(void *arg, const val_rule *u)
{
    val_ctx *c = arg;
    const match_kind *k = &MATCH_KINDS[u->route->kind];
    char p[VAL_PATH_MAX], what[300];
    size_t nm = u->n_matches ? u->n_matches : 1;
    for (size_t j = 0; j < nm; j++) {
        const void *m = u->n_matches ? val_rule_match(u, j) : k->any;
        if (m == NULL)
            continue;
        if (u->n_matches)
            val_path(p, "%s.matches[%zu]", u->path, j);
        else
            val_path(p, "%s", u->path);
        k->describe(m, what, k->what_max);
        report_claims(c, p, u->route, m, what);
    }
}

void val_conflict(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    listeners(c, ir);
    val_each_route(ir, VAL_KIND(VAL_ROUTE_HTTP) | VAL_KIND(VAL_ROUTE_GRPC), NULL, rule_claims, c);
}
