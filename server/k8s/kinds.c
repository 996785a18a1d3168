/*
 * kinds.c — the table of watched Kubernetes kinds and their API paths (see kinds.h).
 */
#include "server/k8s/kinds.h"

#include <stdio.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/mem.h"

#define GW "gateway.networking.k8s.io"

static const k8s_kind KINDS[] = {
    {"GatewayClass", GW, "v1", "gatewayclasses", false, NULL},
    {"Gateway", GW, "v1", "gateways", true, NULL},
    {"HTTPRoute", GW, "v1", "httproutes", true, NULL},
    {"GRPCRoute", GW, "v1", "grpcroutes", true, NULL},
    {"TCPRoute", GW, "v1alpha2", "tcproutes", true, NULL},
    {"TLSRoute", GW, "v1alpha2", "tlsroutes", true, NULL},
    {"UDPRoute", GW, "v1alpha2", "udproutes", true, NULL},
    {"ReferenceGrant", GW, "v1beta1", "referencegrants", true, NULL},
    {"BackendTLSPolicy", GW, "v1alpha3", "backendtlspolicies", true, NULL},
    {"Service", "", "v1", "services", true, NULL},
    {"EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", true, NULL},
    /* Only TLS Secrets can be certificateRefs; the others are never read. */
    {"Secret", "", "v1", "secrets", true, "type=kubernetes.io/tls"},
    {"Namespace", "", "v1", "namespaces", false, NULL},
    /* CA bundles (ca.crt) of BackendTLSPolicies. */
    {"ConfigMap", "", "v1", "configmaps", true, NULL},
    /* Sextant's own policies (deploy/k8s/crds/). */
    {"BackendLBPolicy", "sextant.dev", "v1alpha1", "backendlbpolicies", true, NULL},
    {"AIService", "sextant.dev", "v1alpha1", "aiservices", true, NULL},
    {"TokenPolicy", "sextant.dev", "v1alpha1", "tokenpolicies", true, NULL},
    {"WasmPlugin", "sextant.dev", "v1alpha1", "wasmplugins", true, NULL},
};

const k8s_kind *k8s_kind_table(size_t *n)
{
    *n = sizeof(KINDS) / sizeof(KINDS[0]);
    return KINDS;
}

const k8s_kind *k8s_kind_find(const char *kind)
{
    for (size_t i = 0; i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
        if (strcmp(KINDS[i].kind, kind) == 0)
            return &KINDS[i];
    return NULL;
}

const char *k8s_kind_api_version(const k8s_kind *k, char *out, size_t outlen)
{
    if (*k->group)
        snprintf(out, outlen, "%s/%s", k->group, k->version);
    else
        snprintf(out, outlen, "%s", k->version);
    return out;
}

/* Appends s percent-encoded as one path segment (RFC 3986 unreserved kept). */
static void put_segment(sx_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            sx_buf_putc(b, (char)*p);
        } else {
            sx_buf_putc(b, '%');
            sx_buf_putc(b, hex[*p >> 4]);
            sx_buf_putc(b, hex[*p & 15]);
        }
    }
}

char *k8s_kind_path(const k8s_kind *k, const char *ns, const char *name, const char *subresource)
{
    sx_buf b = {0};
    if (*k->group)
        sx_buf_printf(&b, "/apis/%s/%s", k->group, k->version);
    else
        sx_buf_printf(&b, "/api/%s", k->version);
    if (k->namespaced && ns && *ns) {
        sx_buf_puts(&b, "/namespaces/");
        put_segment(&b, ns);
    }
    sx_buf_printf(&b, "/%s", k->plural);
    if (name && *name) {
        sx_buf_putc(&b, '/');
        put_segment(&b, name);
        if (subresource && *subresource)
            sx_buf_printf(&b, "/%s", subresource);
    }
    return sx_buf_steal(&b);
}
