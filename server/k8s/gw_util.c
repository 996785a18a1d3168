/*
 * gw_util.c — small pieces the Gateway API translator uses everywhere: reading
 * Kubernetes JSON, arena strings, lookups by namespace/name, Gateway API hostname
 * matching, label selectors, ReferenceGrants, durations and base64.
 *
 * Hostname rules are the Gateway API's: "*.example.com" matches any name with at least
 * one more label in front ("a.example.com", "a.b.example.com", "*.a.example.com") but
 * not "example.com"; the intersection of a listener and a route hostname is the more
 * specific of the two. Durations are GEP-2257's: one to four number-unit pairs with
 * units h, m, s and ms ("1h30m", "500ms", "0s").
 */
#include <stddef.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/base/b64.h"
#include "server/base/mem.h"
#include "server/base/sorted.h"
#include "server/k8s/gw_internal.h"

/* ---------------------------------------------------------------- JSON */

const json_t *gw_get(const json_t *o, const char *key)
{
    return json_is_object(o) ? json_object_get(o, key) : NULL;
}

const json_t *gw_path(const json_t *o, const char *path)
{
    char key[64];
    while (o && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = gw_get(o, key);
        path += n + (dot ? 1 : 0);
    }
    return o;
}

const char *gw_str(const json_t *o, const char *key)
{
    const json_t *v = gw_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *gw_str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = gw_str(o, key);
    return s ? s : dflt;
}

bool gw_int(const json_t *o, const char *key, long long *v)
{
    const json_t *x = gw_get(o, key);
    if (!json_is_integer(x))
        return false;
    *v = (long long)json_integer_value(x);
    return true;
}

const json_t *gw_array(const json_t *o, const char *key, size_t *n)
{
    const json_t *a = gw_get(o, key);
    if (!json_is_array(a)) {
        *n = 0;
        return NULL;
    }
    *n = json_array_size(a);
    return a;
}

int64_t gw_generation(const json_t *o)
{
    long long g;
    return gw_int(gw_get(o, "metadata"), "generation", &g) ? (int64_t)g : 0;
}

/* ---------------------------------------------------------------- arena */

char *gw_strdup(gw_ctx *c, const char *s)
{
    return sx_arena_strdup(c->a, s ? s : "");
}

char *gw_printf(gw_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *tmp = NULL;
    int n = vasprintf(&tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fprintf(stderr, "k8s: out of memory\n");
        abort();
    }
    char *s = sx_arena_strndup(c->a, tmp, (size_t)n);
    free(tmp);
    return s;
}

char *gw_lower(gw_ctx *c, const char *s)
{
    char *d = gw_strdup(c, s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

void *gw_grow(gw_ctx *c, void *v, size_t es, size_t *cap, size_t need)
{
    if (need <= *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need)
        nc *= 2;
    void *nv = sx_arena_alloc(c->a, nc * es);
    if (v && *cap)
        memcpy(nv, v, *cap * es);
    *cap = nc;
    return nv;
}

const gw_obj *gw_find(const gw_index *x, const char *ns, const char *name)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(x->v[mid].ns, ns);
        if (k == 0)
            k = strcmp(x->v[mid].name, name);
        if (k == 0)
            return &x->v[mid];
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---------------------------------------------------------------- hostnames */

bool gw_host_covers(const char *w, const char *h)
{
    if (w[0] != '*' || w[1] != '.')
        return false;
    const char *suffix = w + 1; /* ".example.com" */
    size_t n = strlen(h), m = strlen(suffix);
    if (n <= m || strcasecmp(h + n - m, suffix) != 0)
        return false;
    /* At least one whole label in front: "*.example.com" does not cover "*.com"-style
     * names shorter than itself, and the label must not be empty. */
    return h[n - m - 1] != '.';
}

const char *gw_host_intersect(const char *l, const char *r)
{
    if (strcasecmp(l, r) == 0)
        return l;
    if (gw_host_covers(l, r))
        return r;
    if (gw_host_covers(r, l))
        return l;
    return NULL;
}

bool gw_host_exact(const char *h)
{
    unsigned char raw[16];
    if (h == NULL || h[0] == '\0' || strchr(h, '*'))
        return false;
    return inet_pton(AF_INET, h, raw) != 1 && inet_pton(AF_INET6, h, raw) != 1;
}

/* ---------------------------------------------------------------- label selectors */

static bool in_values(const json_t *values, const char *v)
{
    size_t i;
    const json_t *x;
    json_array_foreach(values, i, x)
    {
        if (json_is_string(x) && v && strcmp(json_string_value(x), v) == 0)
            return true;
    }
    return false;
}

bool gw_selector_match(const json_t *selector, const json_t *labels)
{
    if (!json_is_object(selector))
        return false;
    const char *k;
    const json_t *v;
    const json_t *ml = gw_get(selector, "matchLabels");
    json_object_foreach((json_t *)ml, k, v)
    {
        const char *have = gw_str(labels, k);
        if (!json_is_string(v) || have == NULL || strcmp(have, json_string_value(v)) != 0)
            return false;
    }
    size_t n, i;
    const json_t *exprs = gw_array(selector, "matchExpressions", &n);
    for (i = 0; i < n; i++) {
        const json_t *e = json_array_get(exprs, i);
        const char *key = gw_str(e, "key"), *op = gw_str(e, "operator");
        if (key == NULL || op == NULL)
            return false;
        const char *have = gw_str(labels, key);
        const json_t *vals = gw_get(e, "values");
        if (strcmp(op, "In") == 0) {
            if (have == NULL || !in_values(vals, have))
                return false;
        } else if (strcmp(op, "NotIn") == 0) {
            if (have != NULL && in_values(vals, have))
                return false;
        } else if (strcmp(op, "Exists") == 0) {
            if (have == NULL)
                return false;
        } else if (strcmp(op, "DoesNotExist") == 0) {
            if (have != NULL)
                return false;
        } else {
            return false;
        }
    }
    return true;
}

json_t *gw_namespace_labels(gw_ctx *c, const char *ns)
{
    const gw_obj *o = gw_find(&c->idx[GW_NAMESPACE], "", ns);
    const json_t *l = o ? gw_path(o->o, "metadata.labels") : NULL;
    json_t *out = json_is_object(l) ? json_deep_copy(l) : json_object();
    if (json_object_get(out, "kubernetes.io/metadata.name") == NULL)
        json_object_set_new(out, "kubernetes.io/metadata.name", json_string(ns));
    return out;
}

/* ---------------------------------------------------------------- ReferenceGrants */

bool gw_grant_allows(gw_ctx *c, const char *from_group, const char *from_kind, const char *from_ns,
                     const char *to_group, const char *to_kind, const char *to_ns,
                     const char *to_name)
{
    const gw_index *x = &c->idx[GW_REFERENCE_GRANT];
    /* Grants are sorted by namespace: find the first of to_ns. */
    size_t lo = sx_sorted_first(x->v, x->n, sizeof(*x->v), offsetof(gw_obj, ns), to_ns);
    for (size_t g = lo; g < x->n && strcmp(x->v[g].ns, to_ns) == 0; g++) {
        const json_t *spec = gw_get(x->v[g].o, "spec");
        size_t nf, nt;
        const json_t *from = gw_array(spec, "from", &nf), *to = gw_array(spec, "to", &nt);
        bool from_ok = false, to_ok = false;
        for (size_t i = 0; i < nf && !from_ok; i++) {
            const json_t *f = json_array_get(from, i);
            from_ok = strcmp(gw_str_or(f, "group", ""), from_group) == 0 &&
                      strcmp(gw_str_or(f, "kind", ""), from_kind) == 0 &&
                      strcmp(gw_str_or(f, "namespace", ""), from_ns) == 0;
        }
        for (size_t i = 0; i < nt && from_ok && !to_ok; i++) {
            const json_t *t = json_array_get(to, i);
            const char *name = gw_str(t, "name");
            to_ok = strcmp(gw_str_or(t, "group", ""), to_group) == 0 &&
                    strcmp(gw_str_or(t, "kind", ""), to_kind) == 0 &&
                    (name == NULL || name[0] == '\0' || strcmp(name, to_name) == 0);
        }
        if (from_ok && to_ok)
            return true;
    }
    return false;
}

/* ---------------------------------------------------------------- durations */

bool gw_duration_ms(const char *s, int64_t *ms)
{
    if (s == NULL || *s == '\0')
        return false;
    int64_t total = 0;
    int pairs = 0;
    while (*s) {
        if (!isdigit((unsigned char)*s) || ++pairs > 4)
            return false;
        int64_t v = 0;
        int digits = 0;
        while (isdigit((unsigned char)*s)) {
            if (++digits > 5)
                return false;
            v = v * 10 + (*s++ - '0');
        }
        if (s[0] == 'm' && s[1] == 's') {
            total += v;
            s += 2;
        } else if (*s == 'h') {
            total += v * 3600000;
            s++;
        } else if (*s == 'm') {
            total += v * 60000;
            s++;
        } else if (*s == 's') {
            total += v * 1000;
            s++;
        } else {
            return false;
        }
    }
    *ms = total;
    return true;
}

json_t *gw_duration_json(int64_t ms)
{
    char buf[48];
    if (ms % 1000 == 0) {
        snprintf(buf, sizeof buf, "%llds", (long long)(ms / 1000));
    } else {
        /* "1.5s", not "1.500s": the fraction without its trailing zeros. */
        int frac = (int)(ms % 1000), digits = 3;
        while (frac % 10 == 0) {
            frac /= 10;
            digits--;
        }
        snprintf(buf, sizeof buf, "%lld.%0*ds", (long long)(ms / 1000), digits, frac);
    }
    return json_string(buf);
}

/* ---------------------------------------------------------------- base64 */

char *gw_base64(gw_ctx *c, const char *s, size_t *len)
{
    char *out = sx_arena_alloc(c->a, strlen(s) / 4 * 3 + 4);
    size_t n;
    if (!sx_b64_decode_text(s, out, &n))
        return NULL;
    if (len)
        *len = n;
    return out;
}

/* ---------------------------------------------------------------- sorting */

static int cmp_by_key(const void *a, const void *b, void *arg)
{
    const char *key = arg;
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const char *kx = gw_str(x, key), *ky = gw_str(y, key);
    int k = strcmp(kx ? kx : "", ky ? ky : "");
    if (k != 0)
        return k;
    char *tx = json_dumps(x, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *ty = json_dumps(y, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    k = strcmp(tx ? tx : "", ty ? ty : "");
    free(tx);
    free(ty);
    return k;
}

void gw_sort_by(json_t *array, const char *key)
{
    size_t n = json_array_size(array);
    if (n < 2)
        return;
    json_t **v = sx_malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(array, i));
    qsort_r(v, n, sizeof *v, cmp_by_key, (void *)key);
    json_array_clear(array);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(array, v[i]);
    sx_free(v);
}
