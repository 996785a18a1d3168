/*
 * translate.c — the translation context: problems, arena helpers, Any packing,
 * emitted resources and the name tables that resolve references between IR objects.
 *
 * Names. A backend, a secret and a route are known by their qualified name,
 * "<namespace>/<name>" (just "<name>" when the namespace is empty). A BackendRef
 * resolves to the backend with the qualified name of (ref.namespace, or the route's
 * namespace when empty; ref.name) and nothing else. Listener references (secret_refs,
 * attached_routes, backend_tls.client_certificate_ref) carry no namespace of their own,
 * so they may be a qualified name or a bare name that exactly one object has; a bare
 * name shared by several objects is refused as ambiguous rather than guessed.
 */
#include "server/translate/translate.h"

#include <stddef.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/hash.h"
#include "server/base/mem.h"
#include "server/base/sorted.h"
#include "server/base/num.h"

/* ---------------------------------------------------------------- context helpers */

void tr_error(tr_ctx *tr, const char *path, const char *fmt, ...)
{
    if (tr->errs.count >= TR_MAX_ERRORS) {
        tr->errs_unlisted++;
        return;
    }
    char msg[SX_ERR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < tr->errs.count; i++) {
        if (strcmp(tr->errs.items[i].path, path) == 0 &&
            strcmp(tr->errs.items[i].message, msg) == 0)
            return;
    }
    sx_fielderrs_add(&tr->errs, path, "%s", msg);
}

void *tr_alloc(tr_ctx *tr, size_t n)
{
    return sx_arena_alloc(tr->arena, n);
}

char *tr_strdup(tr_ctx *tr, const char *s)
{
    return sx_arena_strdup(tr->arena, s ? s : "");
}

char *tr_printf(tr_ctx *tr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = sx_arena_alloc(tr->arena, (size_t)(n < 0 ? 0 : n) + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
    va_end(ap);
    return s;
}

void **tr_ptrs(tr_ctx *tr, size_t n)
{
    return n ? sx_arena_alloc(tr->arena, n * sizeof(void *)) : NULL;
}

void *tr_dup_msg(tr_ctx *tr, const void *init, size_t size)
{
    void *p = sx_arena_alloc(tr->arena, size);
    memcpy(p, init, size);
    return p;
}

const char *tr_qname(tr_ctx *tr, const char *ns, const char *name)
{
    if (ns == NULL || ns[0] == '\0')
        return tr_strdup(tr, name);
    return tr_printf(tr, "%s/%s", ns, name ? name : "");
}

Google__Protobuf__Any *tr_any(tr_ctx *tr, const ProtobufCMessage *m)
{
    Google__Protobuf__Any *any = TR_NEW(tr, Google__Protobuf__Any, GOOGLE__PROTOBUF__ANY__INIT);
    any->type_url = tr_printf(tr, "type.googleapis.com/%s", m->descriptor->name);
    size_t len = protobuf_c_message_get_packed_size(m);
    any->value.data = tr_alloc(tr, len ? len : 1);
    any->value.len = protobuf_c_message_pack(m, any->value.data);
    return any;
}

Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *
tr_http_filter(tr_ctx *tr, const char *name, Google__Protobuf__Any *config, bool optional)
{
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *f =
        TR_NEW(tr, Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter,
               ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__INIT);
    f->name = (char *)name;
    f->config_type_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    f->typed_config = config;
    f->is_optional = optional;
    return f;
}

Envoy__Config__Core__V3__ConfigSource *tr_ads(tr_ctx *tr)
{
    Envoy__Config__Core__V3__ConfigSource *cs = TR_NEW(
        tr, Envoy__Config__Core__V3__ConfigSource, ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__INIT);
    /* The empty AggregatedConfigSource is the whole point: its presence selects ADS,
     * and clients reject a config source that selects nothing. */
    cs->config_source_specifier_case =
        ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS;
    cs->ads = TR_NEW(tr, Envoy__Config__Core__V3__AggregatedConfigSource,
                     ENVOY__CONFIG__CORE__V3__AGGREGATED_CONFIG_SOURCE__INIT);
    cs->resource_api_version = ENVOY__CONFIG__CORE__V3__API_VERSION__V3;
    return cs;
}

Google__Protobuf__UInt64Value *tr_u64(tr_ctx *tr, uint64_t v)
{
    Google__Protobuf__UInt64Value *w =
        TR_NEW(tr, Google__Protobuf__UInt64Value, GOOGLE__PROTOBUF__UINT64_VALUE__INIT);
    w->value = v;
    return w;
}

Google__Protobuf__UInt32Value *tr_u32(tr_ctx *tr, uint32_t v)
{
    Google__Protobuf__UInt32Value *w =
        TR_NEW(tr, Google__Protobuf__UInt32Value, GOOGLE__PROTOBUF__UINT32_VALUE__INIT);
    w->value = v;
    return w;
}

Google__Protobuf__Duration *tr_duration(tr_ctx *tr, const Google__Protobuf__Duration *d,
                                        const char *path)
{
    if (d == NULL)
        return NULL;
    if (d->seconds < 0 || d->nanos < 0) {
        tr_error(tr, path, "must not be negative");
        return NULL;
    }
    Google__Protobuf__Duration *c =
        TR_NEW(tr, Google__Protobuf__Duration, GOOGLE__PROTOBUF__DURATION__INIT);
    c->seconds = d->seconds;
    c->nanos = d->nanos;
    return c;
}

char *tr_lower(tr_ctx *tr, const char *s)
{
    char *c = tr_strdup(tr, s);
    for (char *p = c; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return c;
}

void tr_pv_push(tr_ctx *tr, tr_pvec *p, void *x)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        void **v = tr_alloc(tr, cap * sizeof *v);
        if (p->n)
            memcpy(v, p->v, p->n * sizeof *v);
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = x;
}

Envoy__Type__Matcher__V3__RegexMatcher *tr_regex(tr_ctx *tr, const char *re)
{
    Envoy__Type__Matcher__V3__RegexMatcher *m = TR_NEW(
        tr, Envoy__Type__Matcher__V3__RegexMatcher, ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__INIT);
    m->engine_type_case = ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__ENGINE_TYPE_GOOGLE_RE2;
    m->google_re2 = TR_NEW(tr, Envoy__Type__Matcher__V3__RegexMatcher__GoogleRE2,
                           ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__GOOGLE_RE2__INIT);
    m->regex = tr_strdup(tr, re);
    return m;
}

void tr_emit(tr_ctx *tr, tr_type t, const char *name, const ProtobufCMessage *m)
{
    tr_out *o = &tr->out[t];
    if (o->count == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 16;
        o->items = sx_realloc(o->items, o->cap * sizeof *o->items);
    }
    tr_resource *r = &o->items[o->count++];
    memset(r, 0, sizeof *r);
    r->name = sx_strdup(name);
    size_t len = protobuf_c_message_get_packed_size(m);
    r->bytes = sx_malloc(len ? len : 1);
    r->len = protobuf_c_message_pack(m, r->bytes);
    char hex[SX_SHA256_HEX_LEN + 1];
    sx_sha256_hex(r->bytes, r->len, hex);
    memcpy(r->version, hex, 16);
    r->version[16] = '\0';
}

/* ---------------------------------------------------------------- name tables */

static int cmp_name(const void *a, const void *b)
{
    const tr_name *x = a, *y = b;
    int c = strcmp(x->qname, y->qname);
    if (c == 0)
        c = SX_CMP(x->kind, y->kind);
    return c ? c : SX_CMP(x->idx, y->idx);
}

static const char *route_list_name(tr_route_kind k)
{
    return k == TR_ROUTE_HTTP   ? "http_routes"
           : k == TR_ROUTE_GRPC ? "grpc_routes"
                                : "stream_routes";
}

/* Sorts a table and reports entries sharing a qualified name (and kind). */
static void sort_and_check(tr_ctx *tr, tr_name *t, size_t n, const char *list, const char *what)
{
    qsort(t, n, sizeof *t, cmp_name);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(t[i].qname, t[i - 1].qname) != 0 || t[i].kind != t[i - 1].kind)
            continue;
        const char *l = list ? list : route_list_name(t[i].kind);
        tr_error(tr, tr_printf(tr, "%s[%zu]", l, t[i].idx),
                 "duplicate %s name \"%s\" (also %s[%zu])", what, t[i].qname, l, t[i - 1].idx);
    }
}

static void add_name(tr_ctx *tr, tr_name *slot, const char *ns, const char *name,
                     tr_route_kind kind, size_t idx, const char *path, const char *what)
{
    if (name == NULL || name[0] == '\0')
        tr_error(tr, path, "%s name must not be empty", what);
    slot->qname = tr_qname(tr, ns, name);
    slot->name = name ? name : "";
    slot->kind = kind;
    slot->idx = idx;
}

void tr_index(tr_ctx *tr)
{
    const ir_snapshot *ir = tr->ir;

    tr->n_backends = ir->n_backends;
    tr->backends = tr_alloc(tr, (ir->n_backends + 1) * sizeof *tr->backends);
    for (size_t i = 0; i < ir->n_backends; i++)
        add_name(tr, &tr->backends[i], ir->backends[i]->namespace_, ir->backends[i]->name, 0, i,
                 tr_printf(tr, "backends[%zu].name", i), "backend");
    sort_and_check(tr, tr->backends, tr->n_backends, "backends", "backend");

    tr->n_secrets = ir->n_secrets;
    tr->secrets = tr_alloc(tr, (ir->n_secrets + 1) * sizeof *tr->secrets);
    for (size_t i = 0; i < ir->n_secrets; i++)
        add_name(tr, &tr->secrets[i], ir->secrets[i]->namespace_, ir->secrets[i]->name, 0, i,
                 tr_printf(tr, "secrets[%zu].name", i), "secret");
    sort_and_check(tr, tr->secrets, tr->n_secrets, "secrets", "secret");

    size_t n = ir->n_http_routes + ir->n_grpc_routes + ir->n_stream_routes, k = 0;
    tr->routes = tr_alloc(tr, (n + 1) * sizeof *tr->routes);
    for (size_t i = 0; i < ir->n_http_routes; i++, k++)
        add_name(tr, &tr->routes[k], ir->http_routes[i]->namespace_, ir->http_routes[i]->name,
                 TR_ROUTE_HTTP, i, tr_printf(tr, "http_routes[%zu].name", i), "route");
    for (size_t i = 0; i < ir->n_grpc_routes; i++, k++)
        add_name(tr, &tr->routes[k], ir->grpc_routes[i]->namespace_, ir->grpc_routes[i]->name,
                 TR_ROUTE_GRPC, i, tr_printf(tr, "grpc_routes[%zu].name", i), "route");
    for (size_t i = 0; i < ir->n_stream_routes; i++, k++)
        add_name(tr, &tr->routes[k], ir->stream_routes[i]->namespace_, ir->stream_routes[i]->name,
                 TR_ROUTE_STREAM, i, tr_printf(tr, "stream_routes[%zu].name", i), "route");
    tr->n_routes = n;
    sort_and_check(tr, tr->routes, tr->n_routes, NULL, "route");

    tr->http_sets = tr_alloc(tr, (ir->n_http_routes + 1) * sizeof *tr->http_sets);
    tr->grpc_sets = tr_alloc(tr, (ir->n_grpc_routes + 1) * sizeof *tr->grpc_sets);
    tr->backend_tls = tr_alloc(tr, (ir->n_backends + 1) * sizeof *tr->backend_tls);
    tr->backend_tls_from = tr_alloc(tr, (ir->n_backends + 1) * sizeof *tr->backend_tls_from);
    tr->proxyless_from = tr_alloc(tr, (ir->n_backends + 1) * sizeof *tr->proxyless_from);
}

/* The first entry of a sorted table whose qname is qname, or NULL. */
static const tr_name *find_first(const tr_name *t, size_t n, const char *qname)
{
    size_t lo = sx_sorted_first(t, n, sizeof(*t), offsetof(tr_name, qname), qname);
    return lo < n && strcmp(t[lo].qname, qname) == 0 ? &t[lo] : NULL;
}

long tr_backend_find(tr_ctx *tr, const char *qname)
{
    const tr_name *e = find_first(tr->backends, tr->n_backends, qname);
    return e ? (long)e->idx : -1;
}

long tr_backend_ref(tr_ctx *tr, const ir_backend_ref *ref, const char *default_ns, const char *path)
{
    const char *ns = ref->namespace_ && ref->namespace_[0] ? ref->namespace_ : default_ns;
    const char *qname = tr_qname(tr, ns, ref->name);
    if (ref->name == NULL || ref->name[0] == '\0') {
        tr_error(tr, path, "backend name must not be empty");
        return -1;
    }
    const tr_name *e = find_first(tr->backends, tr->n_backends, qname);
    if (e)
        return (long)e->idx;
    for (size_t i = 0; i < tr->n_backends; i++) {
        if (strcmp(tr->backends[i].name, ref->name) == 0) {
            tr_error(tr, path, "unknown backend \"%s\" (there is a backend \"%s\")", qname,
                     tr->backends[i].qname);
            return -1;
        }
    }
    tr_error(tr, path, "unknown backend \"%s\"", qname);
    return -1;
}

/* Resolves a listener-side reference in a table: exact qualified name first, then a
 * bare name held by exactly one qualified name. Returns how many entries match (all of
 * one qualified name, so contiguous in the sorted table) and the first in *out; 0
 * after recording an error. */
static size_t resolve(tr_ctx *tr, const tr_name *t, size_t n, const char *ref, const char *path,
                      const char *what, const tr_name **out)
{
    *out = NULL;
    if (ref == NULL || ref[0] == '\0') {
        tr_error(tr, path, "%s reference must not be empty", what);
        return 0;
    }
    const tr_name *e = find_first(t, n, ref);
    if (e == NULL && strchr(ref, '/') == NULL) {
        for (size_t i = 0; i < n; i++) {
            if (strcmp(t[i].name, ref) != 0)
                continue;
            if (e && strcmp(e->qname, t[i].qname) != 0) {
                tr_error(tr, path,
                         "%s reference \"%s\" is ambiguous: \"%s\" and \"%s\" match; use the "
                         "qualified name",
                         what, ref, e->qname, t[i].qname);
                return 0;
            }
            if (e == NULL)
                e = &t[i];
        }
    }
    if (e == NULL) {
        tr_error(tr, path, "unknown %s \"%s\"", what, ref);
        return 0;
    }
    size_t k = 1;
    while (e + k < t + n && strcmp(e[k].qname, e->qname) == 0)
        k++;
    *out = e;
    return k;
}

const char *tr_secret_ref(tr_ctx *tr, const char *ref, const char *path)
{
    const tr_name *e;
    return resolve(tr, tr->secrets, tr->n_secrets, ref, path, "secret", &e) ? e->qname : NULL;
}

size_t tr_route_ref(tr_ctx *tr, const char *ref, const char *path, const tr_name **out)
{
    return resolve(tr, tr->routes, tr->n_routes, ref, path, "route", out);
}
