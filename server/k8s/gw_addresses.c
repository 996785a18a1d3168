/*
 * gw_addresses.c — where a Gateway's proxies are reachable: its status.addresses, and
 * whether the addresses its spec asks for are among them.
 *
 * The addresses come from k8s.gateway_addresses when that is set (the same for every
 * Gateway). Otherwise from the data plane's Services: those in the Gateway's namespace
 * labelled gateway.networking.k8s.io/gateway-name=<gateway> (the label the Gateway API
 * gives the resources deployed for a Gateway). Of each such Service, in name order:
 * its load balancer's ingress IPs and host names and its externalIPs; a Service that is
 * not of type LoadBalancer also gives its cluster IPs. A LoadBalancer Service without
 * an ingress yet gives nothing and leaves the Gateway Programmed=False
 * (AddressNotAssigned) until its load balancer is assigned. Without either source the
 * Gateway has no status.addresses: proxyless clients need none.
 */
#include <stddef.h>
#include <arpa/inet.h>
#include <string.h>

#include "server/k8s/gw_internal.h"
#include "server/base/sorted.h"

#define GATEWAY_NAME_LABEL "gateway.networking.k8s.io/gateway-name"

static bool is_ip(const char *v)
{
    unsigned char raw[16];
    return inet_pton(AF_INET, v, raw) == 1 || inet_pton(AF_INET6, v, raw) == 1;
}

static void add(gw_ctx *c, gw_gw *g, size_t *cap, const char *type, const char *value)
{
    if (value == NULL || value[0] == '\0' || strcmp(value, "None") == 0)
        return;
    for (size_t i = 0; i < g->n_addrs; i++)
        if (strcmp(g->addrs[i].value, value) == 0)
            return;
    g->addrs = gw_grow(c, g->addrs, sizeof *g->addrs, cap, g->n_addrs + 1);
    g->addrs[g->n_addrs++] = (gw_addr){type, value};
}

/* The addresses of one data-plane Service; false when it is a LoadBalancer still
 * waiting for its ingress. */
static bool from_service(gw_ctx *c, gw_gw *g, size_t *cap, const json_t *svc)
{
    size_t before = g->n_addrs, n;
    const json_t *spec = gw_get(svc, "spec");
    const json_t *ing = gw_array(gw_path(svc, "status.loadBalancer"), "ingress", &n);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(ing, i);
        add(c, g, cap, "IPAddress", gw_str(e, "ip"));
        add(c, g, cap, "Hostname", gw_str(e, "hostname"));
    }
    const json_t *ext = gw_array(spec, "externalIPs", &n);
    for (size_t i = 0; i < n; i++)
        add(c, g, cap, "IPAddress", json_string_value(json_array_get(ext, i)));
    bool lb = strcmp(gw_str_or(spec, "type", "ClusterIP"), "LoadBalancer") == 0;
    if (lb)
        return g->n_addrs > before;
    const json_t *ips = gw_array(spec, "clusterIPs", &n);
    for (size_t i = 0; i < n; i++)
        add(c, g, cap, "IPAddress", json_string_value(json_array_get(ips, i)));
    if (n == 0)
        add(c, g, cap, "IPAddress", gw_str(spec, "clusterIP"));
    return true;
}

void gw_addresses_build(gw_ctx *c, gw_gw *g)
{
    size_t cap = 0;
    const gw_options *o = &c->in->options;
    for (size_t i = 0; i < o->n_gateway_addresses; i++) {
        const char *v = o->gateway_addresses[i];
        add(c, g, &cap, is_ip(v) ? "IPAddress" : "Hostname", v);
    }
    const char *pending = NULL;
    if (o->n_gateway_addresses == 0) {
        const gw_index *x = &c->idx[GW_SERVICE];
        const char *ns = g->obj->ns;
        /* the first Service of the Gateway's namespace */
        size_t lo = sx_sorted_first(x->v, x->n, sizeof(*x->v), offsetof(gw_obj, ns), ns);
        for (size_t i = lo; i < x->n && strcmp(x->v[i].ns, ns) == 0; i++) {
            const char *owner = gw_str(gw_path(x->v[i].o, "metadata.labels"), GATEWAY_NAME_LABEL);
            if (owner == NULL || strcmp(owner, g->obj->name) != 0)
                continue;
            g->address_source = x->v[i].name;
            if (!from_service(c, g, &cap, x->v[i].o) && pending == NULL)
                pending = x->v[i].name;
        }
    }
    if (pending && g->n_addrs == 0) {
        g->address_reason = "AddressNotAssigned";
        g->address_problem = gw_printf(c, "the load balancer of Service %s/%s has no address yet",
                                       g->obj->ns, pending);
        return;
    }

    size_t n;
    const json_t *want = gw_array(gw_get(g->obj->o, "spec"), "addresses", &n);
    for (size_t i = 0; i < n; i++) {
        const char *v = gw_str(json_array_get(want, i), "value");
        bool known = false;
        for (size_t k = 0; v && k < g->n_addrs && !known; k++)
            known = strcmp(g->addrs[k].value, v) == 0;
        if (known)
            continue;
        g->address_reason = "AddressNotUsable";
        g->address_problem =
            gw_printf(c,
                      "requested address \"%s\" is not one Sextant's proxies are reachable at "
                      "(k8s.gateway_addresses, or the Services labelled %s=%s)",
                      v ? v : "", GATEWAY_NAME_LABEL, g->obj->name);
        return;
    }
}

json_t *gw_addresses_json(const gw_gw *g)
{
    json_t *a = json_array();
    for (size_t i = 0; i < g->n_addrs; i++)
        json_array_append_new(
            a, json_pack("{s:s,s:s}", "type", g->addrs[i].type, "value", g->addrs[i].value));
    return a;
}
