/*
 * gw_listeners.c — the listeners of one Gateway: what each one accepts, whether it can
 * be served, and which IR listener serves it.
 *
 * A listener is judged alone first (protocol, port, TLS mode and options, certificate
 * references, allowedRoutes kinds), then against the listeners before it in the spec:
 * the first listener on a port claims it for its protocol, and a later one with another
 * protocol (HTTPS and TLS count as different, so do TLS Passthrough and Terminate) or
 * the same hostname is Conflicted and not served, so adding a listener never breaks one
 * that works. The served listeners of one port become one IR listener; HTTPS and TLS
 * Terminate listeners merged so bring all their certificates, and must agree on TLS
 * versions.
 *
 * Certificates: a certificateRef names a core Secret of type kubernetes.io/tls in the
 * Gateway's namespace, or in another one a ReferenceGrant opens to Gateways of this
 * namespace. tls.crt and tls.key must parse (OpenSSL), match, and be valid at the
 * translation's time, the checks Sextant's validation makes, so that a bad Secret
 * marks its listener (InvalidCertificateRef) instead of failing the whole Gateway.
 * TLS options: "sextant.dev/tls-min-version" and "sextant.dev/tls-max-version"
 * ("TLSv1.0" to "TLSv1.3"); any other option is refused (UnsupportedValue).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "server/base/pem.h"
#include "server/k8s/gw_internal.h"

#define OPT_MIN "sextant.dev/tls-min-version"
#define OPT_MAX "sextant.dev/tls-max-version"

static const struct {
    const char *name;
    gw_proto proto;
} PROTOCOLS[] = {
    {"HTTP", GP_HTTP},
    {"HTTPS", GP_HTTPS},
    {"TCP", GP_TCP},
    {"UDP", GP_UDP},
    {GW_PROTOCOL_PROXYLESS_GRPC, GP_PROXYLESS},
};

static unsigned supported_kinds(gw_proto p)
{
    switch (p) {
    case GP_HTTP:
    case GP_HTTPS:
        return RK_BIT(RK_HTTP) | RK_BIT(RK_GRPC);
    case GP_TLS_PASSTHROUGH:
    case GP_TLS_TERMINATE:
        return RK_BIT(RK_TLS);
    case GP_TCP:
        return RK_BIT(RK_TCP);
    case GP_UDP:
        return RK_BIT(RK_UDP);
    case GP_PROXYLESS:
        return RK_BIT(RK_GRPC);
    default:
        return 0;
    }
}

static const char *proto_text(gw_proto p)
{
    static const char *const texts[] = {
        "unknown",         "HTTP", "HTTPS", "TLS (Passthrough)",
        "TLS (Terminate)", "TCP",  "UDP",   GW_PROTOCOL_PROXYLESS_GRPC};
    _Static_assert(sizeof texts / sizeof *texts == GP_PROXYLESS + 1, "a text per gw_proto");
    return (size_t)p < sizeof texts / sizeof *texts ? texts[p] : texts[GP_UNKNOWN];
}

static bool terminates(gw_proto p)
{
    return p == GP_HTTPS || p == GP_TLS_TERMINATE;
}

static json_t *kind_json(gw_rk k)
{
    return json_pack("{s:s,s:s}", "group", GW_GROUP, "kind", gw_rk_name(k));
}

/* ---------------------------------------------------------------- certificates */

/* Why a PEM certificate chain and key cannot serve at now, or NULL when they can. */
static const char *pem_problem(gw_ctx *c, const char *crt, size_t crt_len, const char *key,
                               size_t key_len)
{
    if (crt_len > INT_MAX || key_len > INT_MAX)
        return "tls.crt or tls.key is too large";
    const char *why = NULL;
    BIO *bio = BIO_new_mem_buf(crt, (int)crt_len);
    X509 *first = NULL, *x;
    size_t n = 0;
    while (bio && why == NULL && (x = sx_pem_read_x509(bio))) {
        int after = X509_cmp_time(X509_get0_notAfter(x), &(time_t){(time_t)c->now});
        int before = X509_cmp_time(X509_get0_notBefore(x), &(time_t){(time_t)c->now});
        if (after == 0 || before == 0)
            why =
                gw_printf(c, "certificate %zu of tls.crt has an unreadable validity period", n + 1);
        else if (after < 0)
            why = gw_printf(c, "certificate %zu of tls.crt has expired", n + 1);
        else if (before > 0)
            why = gw_printf(c, "certificate %zu of tls.crt is not valid yet", n + 1);
        if (first == NULL)
            first = x;
        else
            X509_free(x);
        n++;
    }
    BIO_free(bio);
    ERR_clear_error();
    if (why == NULL && first == NULL)
        why = "tls.crt does not hold a PEM certificate";
    EVP_PKEY *pk = NULL;
    if (why == NULL) {
        bio = BIO_new_mem_buf(key, (int)key_len);
        pk = bio ? sx_pem_read_key(bio) : NULL;
        BIO_free(bio);
        ERR_clear_error();
        if (pk == NULL)
            why = "tls.key does not hold an unencrypted PEM private key";
        else if (X509_check_private_key(first, pk) != 1)
            why = "tls.key does not match the certificate of tls.crt";
    }
    ERR_clear_error();
    EVP_PKEY_free(pk);
    X509_free(first);
    return why;
}

/* Adds a Secret to g's secrets (once) and returns its qualified name. */
static const char *take_secret(gw_ctx *c, gw_gw *g, const char *ns, const char *name,
                               const char *crt, const char *key)
{
    const char *q = gw_printf(c, "%s/%s", ns, name);
    for (size_t i = 0; i < g->n_secrets; i++)
        if (strcmp(g->secrets[i].ns, ns) == 0 && strcmp(g->secrets[i].name, name) == 0)
            return q;
    size_t cap = g->n_secrets;
    g->secrets = gw_grow(c, g->secrets, sizeof *g->secrets, &cap, g->n_secrets + 1);
    g->secrets[g->n_secrets++] = (gw_secret){gw_strdup(c, ns), gw_strdup(c, name),
                                             json_pack("{s:s,s:s,s:s,s:s}", "namespace", ns, "name",
                                                       name, "cert_pem", crt, "key_pem", key)};
    return q;
}

/* Resolves one certificateRef of listener l; false with the reason and message. */
static bool cert_ref(gw_ctx *c, gw_gw *g, gw_lis *l, const json_t *ref, const char **reason,
                     const char **message)
{
    const char *group = gw_str_or(ref, "group", ""), *kind = gw_str_or(ref, "kind", "Secret");
    const char *name = gw_str_or(ref, "name", "");
    const char *ns = gw_str_or(ref, "namespace", g->obj->ns);
    *reason = "InvalidCertificateRef";
    if (group[0] != '\0' || strcmp(kind, "Secret") != 0) {
        *message = gw_printf(c,
                             "certificateRef %s of group \"%s\" and kind %s is not supported: "
                             "use a core Secret",
                             name, group, kind);
        return false;
    }
    if (strcmp(ns, g->obj->ns) != 0 &&
        !gw_grant_allows(c, GW_GROUP, "Gateway", g->obj->ns, "", "Secret", ns, name)) {
        *reason = "RefNotPermitted";
        *message = gw_printf(c,
                             "Secret %s/%s is in another namespace and no ReferenceGrant "
                             "there allows Gateways of namespace %s to use it",
                             ns, name, g->obj->ns);
        return false;
    }
    const gw_obj *s = gw_find(&c->idx[GW_SECRET], ns, name);
    if (s == NULL) {
        *message = gw_printf(c, "Secret %s/%s does not exist", ns, name);
        return false;
    }
    const char *type = gw_str(s->o, "type");
    if (type == NULL || strcmp(type, "kubernetes.io/tls") != 0) {
        *message = gw_printf(c, "Secret %s/%s is of type %s, not kubernetes.io/tls", ns, name,
                             type ? type : "Opaque");
        return false;
    }
    const json_t *data = gw_get(s->o, "data");
    const char *crt64 = gw_str(data, "tls.crt"), *key64 = gw_str(data, "tls.key");
    size_t crt_len = 0, key_len = 0;
    const char *crt = crt64 ? gw_base64(c, crt64, &crt_len) : NULL;
    const char *key = key64 ? gw_base64(c, key64, &key_len) : NULL;
    if (crt == NULL || key == NULL || crt_len == 0 || key_len == 0 || strlen(crt) != crt_len ||
        strlen(key) != key_len) {
        *message = gw_printf(c, "Secret %s/%s has no base64 tls.crt and tls.key", ns, name);
        return false;
    }
    const char *why = pem_problem(c, crt, crt_len, key, key_len);
    if (why) {
        *message = gw_printf(c, "Secret %s/%s: %s", ns, name, why);
        return false;
    }
    size_t cap = l->n_secrets;
    l->secrets = gw_grow(c, l->secrets, sizeof *l->secrets, &cap, l->n_secrets + 1);
    l->secrets[l->n_secrets++] = take_secret(c, g, ns, name, crt, key);
    return true;
}

/* ---------------------------------------------------------------- one listener */

static void refuse(gw_lis *l, const char *reason, const char *message)
{
    if (!l->accepted.ok)
        return; /* the first problem is the one reported */
    l->accepted = (gw_cond){"Accepted", false, reason, message};
}

static void unresolved(gw_lis *l, const char *reason, const char *message)
{
    /* RefNotPermitted says more than InvalidCertificateRef, which says more than
     * InvalidRouteKinds: the strongest reason is kept. */
    static const char *const order[] = {"InvalidRouteKinds", "InvalidCertificateRef",
                                        "RefNotPermitted"};
    int have = -1, want = -1;
    for (int i = 0; i < 3; i++) {
        if (!l->resolved.ok && l->resolved.reason && strcmp(l->resolved.reason, order[i]) == 0)
            have = i;
        if (strcmp(reason, order[i]) == 0)
            want = i;
    }
    if (!l->resolved.ok && have >= want)
        return;
    l->resolved = (gw_cond){"ResolvedRefs", false, reason, message};
}

static void allowed_routes(gw_ctx *c, gw_lis *l)
{
    const json_t *ar = gw_get(l->spec, "allowedRoutes");
    const char *from = gw_str_or(gw_get(ar, "namespaces"), "from", "Same");
    l->selector = gw_path(ar, "namespaces.selector");
    if (strcmp(from, "All") == 0)
        l->from = FROM_ALL;
    else if (strcmp(from, "Selector") == 0)
        l->from = FROM_SELECTOR;
    else if (strcmp(from, "None") == 0)
        l->from = FROM_NONE;
    else
        l->from = FROM_SAME;

    unsigned supported = supported_kinds(l->proto);
    l->supported_kinds = json_array();
    size_t n;
    const json_t *kinds = gw_array(ar, "kinds", &n);
    if (kinds == NULL) {
        for (int k = 0; k < RK_COUNT; k++)
            if (supported & RK_BIT(k))
                json_array_append_new(l->supported_kinds, kind_json((gw_rk)k));
        l->kinds = supported;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(kinds, i);
        const char *group = gw_str_or(e, "group", GW_GROUP), *kind = gw_str_or(e, "kind", "");
        int rk = -1;
        for (int k = 0; k < RK_COUNT && rk < 0; k++)
            if (strcmp(group, GW_GROUP) == 0 && strcmp(kind, gw_rk_name((gw_rk)k)) == 0)
                rk = k;
        if (rk < 0 || !(supported & RK_BIT(rk))) {
            unresolved(l, "InvalidRouteKinds",
                       gw_printf(c, "route kind %s%s%s is not supported on %s listeners", group,
                                 group[0] ? "/" : "", kind, proto_text(l->proto)));
            continue;
        }
        if (!(l->kinds & RK_BIT(rk)))
            json_array_append_new(l->supported_kinds, kind_json((gw_rk)rk));
        l->kinds |= RK_BIT(rk);
    }
}

static void tls_options(gw_ctx *c, gw_lis *l, const json_t *tls)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)gw_get(tls, "options"), k, v)
    {
        static const char *const versions[] = {"TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
        bool min = strcmp(k, OPT_MIN) == 0, max = strcmp(k, OPT_MAX) == 0;
        bool known = false;
        for (int i = 0; i < 4 && json_is_string(v); i++)
            known = known || strcmp(json_string_value(v), versions[i]) == 0;
        if ((!min && !max) || !terminates(l->proto)) {
            refuse(l, "UnsupportedValue",
                   gw_printf(c,
                             "tls option %s is not supported (%s and %s are, on listeners "
                             "that terminate TLS)",
                             k, OPT_MIN, OPT_MAX));
        } else if (!known) {
            refuse(l, "UnsupportedValue",
                   gw_printf(c, "tls option %s must be TLSv1.0, TLSv1.1, TLSv1.2 or TLSv1.3", k));
        } else if (min) {
            l->tls_min = json_string_value(v);
        } else {
            l->tls_max = json_string_value(v);
        }
    }
}

static void judge_tls(gw_ctx *c, gw_gw *g, gw_lis *l, const json_t *tls)
{
    if (l->proto == GP_PROXYLESS || l->proto == GP_HTTP || l->proto == GP_TCP ||
        l->proto == GP_UDP) {
        if (tls)
            refuse(l, "UnsupportedValue",
                   gw_printf(c, "tls is not used by %s listeners", proto_text(l->proto)));
        return;
    }
    tls_options(c, l, tls);
    if (!terminates(l->proto))
        return;
    size_t n;
    const json_t *refs = gw_array(tls, "certificateRefs", &n);
    if (n == 0) {
        unresolved(l, "InvalidCertificateRef",
                   "a listener that terminates TLS needs tls.certificateRefs");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *reason, *message;
        if (!cert_ref(c, g, l, json_array_get(refs, i), &reason, &message))
            unresolved(l, reason, message);
    }
}

static void judge_one(gw_ctx *c, gw_gw *g, gw_lis *l, const json_t *spec)
{
    l->spec = spec;
    l->name = gw_str_or(spec, "name", "");
    l->irl = -1;
    l->accepted = (gw_cond){"Accepted", true, "Accepted", "the listener is valid"};
    l->resolved = (gw_cond){"ResolvedRefs", true, "ResolvedRefs", "every reference resolved"};
    l->conflicted = (gw_cond){"Conflicted", false, "NoConflicts", "no conflict"};
    long long port = 0;
    gw_int(spec, "port", &port);
    l->port = (long)port;
    const char *proto = gw_str_or(spec, "protocol", "");
    const json_t *tls = gw_get(spec, "tls");
    for (size_t i = 0; i < sizeof PROTOCOLS / sizeof PROTOCOLS[0]; i++)
        if (strcmp(proto, PROTOCOLS[i].name) == 0)
            l->proto = PROTOCOLS[i].proto;
    if (strcmp(proto, "TLS") == 0)
        l->proto = strcmp(gw_str_or(tls, "mode", "Terminate"), "Passthrough") == 0
                       ? GP_TLS_PASSTHROUGH
                       : GP_TLS_TERMINATE;
    const char *host = gw_str(spec, "hostname");
    if (host && host[0] && l->proto != GP_TCP && l->proto != GP_UDP)
        l->hostname = gw_lower(c, host);
    allowed_routes(c, l);

    if (l->proto == GP_UNKNOWN)
        refuse(l, "UnsupportedProtocol",
               gw_printf(c, "protocol %s is not supported (HTTP, HTTPS, TLS, TCP and %s are)",
                         proto, GW_PROTOCOL_PROXYLESS_GRPC));
    else if (l->proto == GP_UDP)
        refuse(l, "UnsupportedProtocol",
               "UDP listeners are not supported: Sextant's Envoy translation has no UDP proxy");
    if (l->proto != GP_PROXYLESS && (port < 1 || port > 65535))
        refuse(l, "PortUnavailable", gw_printf(c, "port %lld is not between 1 and 65535", port));
    if (l->proto == GP_HTTPS && tls &&
        strcmp(gw_str_or(tls, "mode", "Terminate"), "Terminate") != 0)
        refuse(l, "UnsupportedValue",
               "HTTPS listeners terminate TLS: use protocol TLS for mode Passthrough");
    if (l->proto == GP_PROXYLESS && l->hostname && !gw_host_exact(l->hostname))
        refuse(l, "UnsupportedValue",
               gw_printf(c,
                         "proxyless gRPC clients dial exact names: hostname \"%s\" matches "
                         "none of them",
                         l->hostname));
    judge_tls(c, g, l, tls);
}

/* ---------------------------------------------------------------- the listeners together */

static bool same_host(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcasecmp(a, b) == 0);
}

static void conflicts(gw_ctx *c, gw_gw *g)
{
    for (size_t i = 0; i < g->n_lis; i++) {
        gw_lis *l = &g->lis[i];
        if (!l->accepted.ok)
            continue;
        for (size_t j = 0; j < i; j++) {
            const gw_lis *e = &g->lis[j];
            if (!e->accepted.ok || e->conflicted.ok)
                continue;
            bool proxyless = l->proto == GP_PROXYLESS;
            if (proxyless != (e->proto == GP_PROXYLESS))
                continue;
            if (!proxyless && e->port != l->port)
                continue;
            if (!proxyless && e->proto != l->proto) {
                l->conflicted = (gw_cond){
                    "Conflicted", true, "ProtocolConflict",
                    gw_printf(c, "port %ld is already taken by listener %s for protocol %s",
                              l->port, e->name, proto_text(e->proto))};
            } else if (same_host(e->hostname, l->hostname)) {
                l->conflicted = (gw_cond){
                    "Conflicted", true, "HostnameConflict",
                    gw_printf(c, "listener %s already serves %s%s%s%s", e->name,
                              l->hostname ? "hostname " : "every hostname",
                              l->hostname ? l->hostname : "", proxyless ? "" : " on port ",
                              proxyless ? "" : gw_printf(c, "%ld", l->port))};
            } else {
                continue;
            }
            refuse(l, "PortUnavailable", l->conflicted.message);
            break;
        }
    }
}

static void group_listeners(gw_ctx *c, gw_gw *g)
{
    g->irl = sx_arena_alloc(c->a, (g->n_lis + 1) * sizeof *g->irl);
    for (size_t i = 0; i < g->n_lis; i++) {
        gw_lis *l = &g->lis[i];
        if (!l->ok)
            continue;
        gw_irl *x = NULL;
        for (size_t k = 0; k < g->n_irl && l->proto != GP_PROXYLESS; k++)
            if (g->irl[k].proto != GP_PROXYLESS && g->irl[k].port == l->port)
                x = &g->irl[k];
        if (x) {
            const gw_lis *first = &g->lis[x->lis[0]];
            if (!same_host(first->tls_min, l->tls_min) || !same_host(first->tls_max, l->tls_max)) {
                l->ok = false;
                refuse(l, "UnsupportedValue",
                       gw_printf(c,
                                 "TLS versions differ from those of listener %s, which "
                                 "shares port %ld",
                                 first->name, l->port));
                continue;
            }
        } else {
            x = &g->irl[g->n_irl++];
            x->proto = l->proto;
            x->port = l->proto == GP_PROXYLESS ? 0 : l->port;
            x->name = l->proto == GP_PROXYLESS
                          ? gw_printf(c, "%s/%s/%s", g->obj->ns, g->obj->name, l->name)
                          : gw_printf(c, "%s/%s:%ld", g->obj->ns, g->obj->name, l->port);
            x->lis = sx_arena_alloc(c->a, g->n_lis * sizeof *x->lis);
        }
        l->irl = x - g->irl;
        x->lis[x->n_lis++] = i;
    }
}

void gw_listeners_build(gw_ctx *c, gw_gw *g)
{
    size_t n;
    const json_t *ls = gw_array(gw_get(g->obj->o, "spec"), "listeners", &n);
    g->lis = sx_arena_alloc(c->a, (n + 1) * sizeof *g->lis);
    g->n_lis = n;
    for (size_t i = 0; i < n; i++)
        judge_one(c, g, &g->lis[i], json_array_get(ls, i));
    conflicts(c, g);
    for (size_t i = 0; i < n; i++) {
        gw_lis *l = &g->lis[i];
        l->ok = l->accepted.ok && !l->conflicted.ok && (!terminates(l->proto) || l->n_secrets > 0);
    }
    group_listeners(c, g);
    for (size_t i = 0; i < n; i++) {
        gw_lis *l = &g->lis[i];
        if (l->ok)
            l->programmed = (gw_cond){"Programmed", true, "Programmed", "the listener is served"};
        else if (!l->accepted.ok)
            l->programmed = (gw_cond){"Programmed", false, "Invalid", l->accepted.message};
        else
            l->programmed = (gw_cond){"Programmed", false, "Invalid", l->resolved.message};
    }
}
