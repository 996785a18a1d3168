/*
 * gw_backends.c — backendRefs into IR backends: a core Service port and the ready
 * endpoints of its EndpointSlices.
 *
 * A backendRef names a Service (group "", kind Service; any other kind is InvalidKind)
 * in the route's namespace, or in another one whose ReferenceGrant lets routes of this
 * kind and namespace refer to it (else RefNotPermitted), and a port of that Service
 * (BackendNotFound when the Service or the port does not exist). Its endpoints are
 * those of the EndpointSlices labelled kubernetes.io/service-name=<service> in its
 * namespace whose condition ready is not false, at the port of the slice that has the
 * Service port's name (the target port, which the slice already resolved); FQDN slices
 * are skipped, since proxyless clients take endpoint addresses as they are.
 *
 * Every (Service, port, protocol) is one IR backend named "<service>:<port>", with
 * ":grpc" (GRPCRoutes) or ":h2c" (appProtocol kubernetes.io/h2c) appended when it is
 * spoken to over HTTP/2, shared by every route and Gateway that uses it and built once
 * per translation. Endpoints are sorted (address, port) and deduplicated; zones are
 * kept only when every endpoint has one (Sextant's validation refuses a backend whose
 * endpoints set a zone on some and not others).
 */
#include <stdlib.h>
#include <string.h>

#include "server/k8s/gw_internal.h"

typedef struct endpoint {
    const char *address, *zone;
    long port;
} endpoint;

static int cmp_endpoint(const void *a, const void *b)
{
    const endpoint *x = a, *y = b;
    int k = strcmp(x->address, y->address);
    if (k != 0)
        return k;
    return x->port < y->port ? -1 : x->port > y->port;
}

/* The first slice of service svc in ns, by binary search; c->n_slices when none. */
static size_t first_slice(const gw_ctx *c, const char *ns, const char *svc)
{
    size_t lo = 0, hi = c->n_slices;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(c->slices[mid].ns, ns);
        if (k == 0)
            k = strcmp(c->slice_svc[mid], svc);
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The port of slice s whose name is port_name, or 0. */
static long slice_port(const json_t *s, const char *port_name)
{
    size_t n;
    const json_t *ports = gw_array(s, "ports", &n);
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(ports, i);
        const char *proto = gw_str_or(p, "protocol", "TCP");
        long long v;
        if (strcmp(gw_str_or(p, "name", ""), port_name) == 0 && strcmp(proto, "TCP") == 0 &&
            gw_int(p, "port", &v) && v > 0 && v <= 65535)
            return (long)v;
    }
    return 0;
}

static json_t *endpoints_json(gw_ctx *c, const char *ns, const char *svc, const char *port_name,
                              size_t *count)
{
    endpoint *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = first_slice(c, ns, svc);
         i < c->n_slices && strcmp(c->slices[i].ns, ns) == 0 && strcmp(c->slice_svc[i], svc) == 0;
         i++) {
        const json_t *s = c->slices[i].o;
        const char *type = gw_str_or(s, "addressType", "IPv4");
        long port = slice_port(s, port_name);
        if ((strcmp(type, "IPv4") != 0 && strcmp(type, "IPv6") != 0) || port == 0)
            continue;
        size_t ne;
        const json_t *eps = gw_array(s, "endpoints", &ne);
        for (size_t k = 0; k < ne; k++) {
            const json_t *e = json_array_get(eps, k);
            if (json_is_false(gw_path(e, "conditions.ready")))
                continue;
            size_t na;
            const json_t *addrs = gw_array(e, "addresses", &na);
            for (size_t j = 0; j < na; j++) {
                const char *a = json_string_value(json_array_get(addrs, j));
                if (a == NULL || a[0] == '\0')
                    continue;
                v = gw_grow(c, v, sizeof *v, &cap, n + 1);
                v[n++] = (endpoint){a, gw_str(e, "zone"), port};
            }
        }
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_endpoint);
    bool zones = true;
    for (size_t i = 0; i < n; i++)
        zones = zones && v[i].zone && v[i].zone[0];
    json_t *out = json_array();
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && cmp_endpoint(&v[i - 1], &v[i]) == 0)
            continue;
        json_t *e = json_pack("{s:s,s:I,s:b}", "address", v[i].address, "port",
                              (json_int_t)v[i].port, "healthy", 1);
        if (zones)
            json_object_set_new(e, "zone", json_string(v[i].zone));
        json_array_append_new(out, e);
        (*count)++;
    }
    return out;
}

static long take_backend(gw_ctx *c, const char *ns, const char *svc, long port,
                         const char *port_name, const char *protocol)
{
    if (c->backend_keys == NULL)
        c->backend_keys = json_object();
    const char *key = gw_printf(c, "%s/%s:%ld:%s", ns, svc, port, protocol);
    const json_t *have = json_object_get(c->backend_keys, key);
    if (have)
        return (long)json_integer_value(have);
    c->backends = gw_grow(c, c->backends, sizeof *c->backends, &c->cap_backends, c->n_backends + 1);
    gw_backend *b = &c->backends[c->n_backends];
    memset(b, 0, sizeof *b);
    b->svc_ns = ns;
    b->svc = svc;
    b->port = port;
    b->protocol = protocol;
    b->name = protocol[0] ? gw_printf(c, "%s:%ld:%s", svc, port, gw_lower(c, protocol))
                          : gw_printf(c, "%s:%ld", svc, port);
    b->ir = json_pack("{s:s,s:s}", "name", b->name, "namespace", ns);
    if (protocol[0])
        json_object_set_new(b->ir, "protocol", json_string(protocol));
    json_object_set_new(b->ir, "endpoints", endpoints_json(c, ns, svc, port_name, &b->n_endpoints));
    gw_policies_apply(c, b, port_name);
    gw_sx_apply(c, b, port_name);
    json_object_set_new(c->backend_keys, key, json_integer((json_int_t)c->n_backends));
    return (long)c->n_backends++;
}

long gw_backend_ref(gw_ctx *c, gw_rk rk, const char *ns, const json_t *ref, const char *protocol,
                    const char **reason, const char **message)
{
    const char *group = gw_str_or(ref, "group", ""), *kind = gw_str_or(ref, "kind", "Service");
    const char *name = gw_str_or(ref, "name", "");
    const char *rns = gw_str_or(ref, "namespace", ns);
    if (group[0] != '\0' || strcmp(kind, "Service") != 0) {
        *reason = "InvalidKind";
        *message = gw_printf(c,
                             "backendRef %s of group \"%s\" and kind %s is not supported: "
                             "use a core Service",
                             name, group, kind);
        return -1;
    }
    if (strcmp(rns, ns) != 0 &&
        !gw_grant_allows(c, GW_GROUP, gw_rk_name(rk), ns, "", "Service", rns, name)) {
        *reason = "RefNotPermitted";
        *message = gw_printf(c,
                             "Service %s/%s is in another namespace and no ReferenceGrant "
                             "there allows %ss of namespace %s to use it",
                             rns, name, gw_rk_name(rk), ns);
        return -1;
    }
    *reason = "BackendNotFound";
    long long port;
    if (!gw_int(ref, "port", &port)) {
        *message = gw_printf(c, "backendRef to Service %s/%s has no port", rns, name);
        return -1;
    }
    const gw_obj *svc = gw_find(&c->idx[GW_SERVICE], rns, name);
    if (svc == NULL) {
        *message = gw_printf(c, "Service %s/%s does not exist", rns, name);
        return -1;
    }
    const json_t *spec = gw_get(svc->o, "spec");
    if (strcmp(gw_str_or(spec, "type", "ClusterIP"), "ExternalName") == 0) {
        *message = gw_printf(c,
                             "Service %s/%s is of type ExternalName, whose endpoints are "
                             "names Sextant does not resolve",
                             rns, name);
        return -1;
    }
    size_t n;
    const json_t *ports = gw_array(spec, "ports", &n), *sp = NULL;
    for (size_t i = 0; i < n && sp == NULL; i++) {
        long long p;
        if (gw_int(json_array_get(ports, i), "port", &p) && p == port)
            sp = json_array_get(ports, i);
    }
    if (sp == NULL) {
        *message = gw_printf(c, "Service %s/%s has no port %lld", rns, name, port);
        return -1;
    }
    if (protocol == NULL) {
        const char *app = gw_str_or(sp, "appProtocol", "");
        protocol = strcmp(app, "kubernetes.io/h2c") == 0 ? "H2C" : "";
    }
    *reason = NULL;
    *message = NULL;
    return take_backend(c, svc->ns, svc->name, (long)port, gw_str_or(sp, "name", ""), protocol);
}

void gw_backends_free(gw_ctx *c)
{
    for (size_t i = 0; i < c->n_backends; i++)
        json_decref(c->backends[i].ir);
    json_decref(c->backend_keys);
    c->n_backends = 0;
}
