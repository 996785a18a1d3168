/*
 * gw_policies.c — BackendTLSPolicies: the TLS a Gateway speaks to the Services they
 * target, and their status for each Gateway that uses them.
 *
 * A policy targets core Services of its namespace (targetRefs; a sectionName names one
 * port of the Service by its name). The oldest policy (creationTimestamp, then
 * namespace/name) of a target applies to it; the others are Accepted=False, Conflicted,
 * for that target; a policy for one port wins over one for the whole Service. What it
 * gives the IR backends of the target is their tls_validation: hostname (SNI and the
 * name the certificate must carry), the CA bundles of caCertificateRefs (key ca.crt of
 * a ConfigMap, or of a Secret) or wellKnownCACertificates System, and subjectAltNames.
 * A policy that cannot be applied (no CA bundle resolves, options set, an unknown
 * target kind) leaves its backends without traffic rather than speaking plain text to
 * a Service that expects TLS.
 *
 * Status: status.ancestors holds, for each Gateway of ours whose spec uses a backend
 * the policy targets, an entry (ancestorRef the Gateway, our controllerName) with
 * Accepted and ResolvedRefs; entries of other controllers are kept as they were.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

static int cmp_policy(const void *a, const void *b)
{
    const gw_policy *x = a, *y = b;
    int k = strcmp(x->created, y->created);
    if (k == 0)
        k = strcmp(x->obj->ns, y->obj->ns);
    return k != 0 ? k : strcmp(x->obj->name, y->obj->name);
}

/* Whether text holds at least one PEM certificate and nothing else that fails. */
static bool pem_certificates(const char *text, size_t len)
{
    if (len == 0 || len > INT_MAX)
        return false;
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    size_t n = 0;
    X509 *x;
    while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        X509_free(x);
        n++;
    }
    BIO_free(bio);
    ERR_clear_error();
    return n > 0;
}

/* The PEM bundle of one caCertificateRef, or NULL with the reason and message. */
static const char *ca_bundle(gw_ctx *c, const char *ns, const json_t *ref, const char **reason,
                             const char **message)
{
    const char *group = gw_str_or(ref, "group", ""), *kind = gw_str_or(ref, "kind", "");
    const char *name = gw_str_or(ref, "name", "");
    *reason = "InvalidCACertificateRef";
    const char *pem = NULL;
    size_t len = 0;
    if (group[0] == '\0' && strcmp(kind, "ConfigMap") == 0) {
        const gw_obj *o = gw_find(&c->idx[GW_CONFIG_MAP], ns, name);
        pem = o ? gw_str(gw_get(o->o, "data"), "ca.crt") : NULL;
        len = pem ? strlen(pem) : 0;
        if (o == NULL) {
            *message = gw_printf(c, "ConfigMap %s/%s does not exist", ns, name);
            return NULL;
        }
    } else if (group[0] == '\0' && strcmp(kind, "Secret") == 0) {
        const gw_obj *o = gw_find(&c->idx[GW_SECRET], ns, name);
        const char *b64 = o ? gw_str(gw_get(o->o, "data"), "ca.crt") : NULL;
        pem = b64 ? gw_base64(c, b64, &len) : NULL;
        if (o == NULL) {
            *message = gw_printf(c, "Secret %s/%s does not exist", ns, name);
            return NULL;
        }
    } else {
        *reason = "InvalidKind";
        *message = gw_printf(c,
                             "caCertificateRef %s of group \"%s\" and kind %s is not "
                             "supported: use a ConfigMap or a Secret",
                             name, group, kind);
        return NULL;
    }
    if (pem == NULL || !pem_certificates(pem, len)) {
        *message = gw_printf(c, "%s %s/%s has no PEM certificate under ca.crt", kind, ns, name);
        return NULL;
    }
    return pem;
}

/* Judges policy p and builds the tls_validation it gives. */
static void judge(gw_ctx *c, gw_policy *p)
{
    const json_t *spec = gw_get(p->obj->o, "spec");
    const json_t *v = gw_get(spec, "validation");
    const char *ns = p->obj->ns;
    p->accepted = (gw_cond){"Accepted", true, "Accepted", "the policy applies"};
    p->resolved = (gw_cond){"ResolvedRefs", true, "ResolvedRefs", "every reference resolved"};
    if (json_object_size(gw_get(spec, "options"))) {
        p->accepted = (gw_cond){"Accepted", false, "Invalid",
                                "options are not supported by Sextant: its backends get no "
                                "traffic"};
        return;
    }
    json_t *tls = json_pack("{s:s}", "hostname", gw_str_or(v, "hostname", ""));
    const char *wk = gw_str(v, "wellKnownCACertificates");
    size_t n;
    const json_t *refs = gw_array(v, "caCertificateRefs", &n);
    json_t *pems = json_array(), *names = json_array();
    for (size_t i = 0; i < n; i++) {
        const json_t *ref = json_array_get(refs, i);
        const char *reason, *message;
        const char *pem = ca_bundle(c, ns, ref, &reason, &message);
        if (pem == NULL) {
            if (p->resolved.ok)
                p->resolved = (gw_cond){"ResolvedRefs", false, reason, message};
            continue;
        }
        json_array_append_new(pems, json_string(pem));
        json_array_append_new(names,
                              json_string(gw_printf(c, "%s/%s", ns, gw_str_or(ref, "name", ""))));
    }
    if (json_array_size(pems)) {
        json_object_set_new(tls, "ca_certificate_refs", names);
        json_object_set_new(tls, "ca_pems", pems);
    } else {
        json_decref(names);
        json_decref(pems);
    }
    if (wk && n == 0) {
        if (strcmp(wk, "System") == 0) {
            json_object_set_new(tls, "well_known_ca_certificates", json_string(wk));
        } else {
            p->accepted = (gw_cond){
                "Accepted", false, "Invalid",
                gw_printf(c, "wellKnownCACertificates %s is not supported (System is)", wk)};
            json_decref(tls);
            return;
        }
    } else if (json_object_get(tls, "ca_pems") == NULL) {
        p->accepted = (gw_cond){"Accepted", false, "NoValidCACertificate",
                                "no caCertificateRef resolved: its backends get no traffic"};
        json_decref(tls);
        return;
    }
    json_t *sans = json_array();
    size_t ns_;
    const json_t *san = gw_array(v, "subjectAltNames", &ns_);
    for (size_t i = 0; i < ns_; i++) {
        const json_t *e = json_array_get(san, i);
        const char *type = gw_str_or(e, "type", "");
        const char *val = strcmp(type, "URI") == 0 ? gw_str(e, "uri") : gw_str(e, "hostname");
        if (val)
            json_array_append_new(sans, json_string(val));
    }
    if (json_array_size(sans))
        json_object_set_new(tls, "subject_alt_names", sans);
    else
        json_decref(sans);
    p->tls = tls;
}

/* Records that policy pi targets key; the first policy of a key applies to it. */
static void claim(gw_ctx *c, size_t pi, const char *key)
{
    json_t *list = json_object_get(c->policy_targets, key);
    if (list == NULL) {
        list = json_array();
        json_object_set_new(c->policy_targets, key, list);
    }
    json_array_append_new(list, json_integer((json_int_t)pi));
    if (json_array_size(list) > 1) {
        gw_policy *p = &c->policies[pi];
        const gw_policy *w = &c->policies[json_integer_value(json_array_get(list, 0))];
        p->accepted = (gw_cond){"Accepted", false, "Conflicted",
                                gw_printf(c,
                                          "BackendTLSPolicy %s/%s, older, targets the same "
                                          "Service port",
                                          w->obj->ns, w->obj->name)};
    }
}

void gw_policies_build(gw_ctx *c)
{
    const gw_index *x = &c->idx[GW_BACKEND_TLS_POLICY];
    c->policies = sx_arena_alloc(c->a, (x->n + 1) * sizeof *c->policies);
    c->policy_targets = json_object();
    for (size_t i = 0; i < x->n; i++) {
        gw_policy *p = &c->policies[c->n_policies++];
        memset(p, 0, sizeof *p);
        p->obj = &x->v[i];
        p->created = gw_str_or(gw_get(x->v[i].o, "metadata"), "creationTimestamp", "");
    }
    if (c->n_policies > 1)
        qsort(c->policies, c->n_policies, sizeof *c->policies, cmp_policy);
    for (size_t i = 0; i < c->n_policies; i++) {
        gw_policy *p = &c->policies[i];
        judge(c, p);
        size_t n;
        const json_t *targets = gw_array(gw_get(p->obj->o, "spec"), "targetRefs", &n);
        for (size_t k = 0; k < n; k++) {
            const json_t *t = json_array_get(targets, k);
            if (gw_str_or(t, "group", "")[0] != '\0' ||
                strcmp(gw_str_or(t, "kind", ""), "Service") != 0) {
                p->accepted =
                    (gw_cond){"Accepted", false, "Invalid", "only core Services can be targeted"};
                continue;
            }
            claim(c, i,
                  gw_printf(c, "%s/%s/%s", p->obj->ns, gw_str_or(t, "name", ""),
                            gw_str_or(t, "sectionName", "*")));
        }
    }
}

void gw_policies_apply(gw_ctx *c, gw_backend *b, const char *port_name)
{
    const char *keys[2] = {gw_printf(c, "%s/%s/%s", b->svc_ns, b->svc, port_name),
                           gw_printf(c, "%s/%s/*", b->svc_ns, b->svc)};
    for (int i = 0; i < 2; i++) {
        const json_t *list = json_object_get(c->policy_targets, keys[i]);
        if (list == NULL)
            continue;
        const gw_policy *p = &c->policies[json_integer_value(json_array_get(list, 0))];
        b->policy_key = keys[i];
        if (p->tls && (p->accepted.ok || strcmp(p->accepted.reason, "Conflicted") == 0))
            json_object_set_new(b->ir, "tls_validation", json_deep_copy(p->tls));
        else
            b->blocked = true;
        return;
    }
}

void gw_policies_used(gw_ctx *c, const gw_backend *b, size_t gi)
{
    const json_t *list = b->policy_key ? json_object_get(c->policy_targets, b->policy_key) : NULL;
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        gw_policy *p = &c->policies[json_integer_value(v)];
        bool have = false;
        for (size_t k = 0; k < p->n_gws && !have; k++)
            have = p->gws[k] == gi;
        if (!have) {
            p->gws = gw_grow(c, p->gws, sizeof *p->gws, &p->cap_gws, p->n_gws + 1);
            p->gws[p->n_gws++] = gi;
        }
    }
}

/* ---------------------------------------------------------------- status */

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Policies by their place in the input index, which is namespace/name order. */
static int cmp_by_obj(const void *a, const void *b)
{
    const gw_obj *x = (*(gw_policy *const *)a)->obj, *y = (*(gw_policy *const *)b)->obj;
    return x < y ? -1 : x > y;
}

static bool same_ancestor(const json_t *ref, const gw_gw *g, const char *policy_ns)
{
    return strcmp(gw_str_or(ref, "group", GW_GROUP), GW_GROUP) == 0 &&
           strcmp(gw_str_or(ref, "kind", "Gateway"), "Gateway") == 0 &&
           strcmp(gw_str_or(ref, "namespace", policy_ns), g->obj->ns) == 0 &&
           strcmp(gw_str_or(ref, "name", ""), g->obj->name) == 0;
}

void gw_policies_status(gw_ctx *c, gw_output *out, size_t *cap)
{
    /* Emitted in namespace/name order, like every other kind. */
    gw_policy **order = sx_malloc((c->n_policies + 1) * sizeof *order);
    for (size_t i = 0; i < c->n_policies; i++)
        order[i] = &c->policies[i];
    qsort(order, c->n_policies, sizeof *order, cmp_by_obj);
    for (size_t oi = 0; oi < c->n_policies; oi++) {
        gw_policy *p = order[oi];
        const json_t *prev = gw_get(p->obj->o, "status");
        size_t n;
        const json_t *old = gw_array(prev, "ancestors", &n);
        bool ours = false;
        json_t *ancestors = gw_status_others(c, old, n, &ours);
        if (p->n_gws == 0 && !ours) {
            json_decref(ancestors);
            continue;
        }
        qsort(p->gws, p->n_gws, sizeof *p->gws, cmp_size);
        int64_t gen = gw_generation(p->obj->o);
        for (size_t k = 0; k < p->n_gws; k++) {
            const gw_gw *g = &c->gws[p->gws[k]];
            const json_t *pconds = NULL;
            for (size_t i = 0; i < n && pconds == NULL; i++) {
                const json_t *e = json_array_get(old, i);
                if (gw_status_is_ours(c, e) &&
                    same_ancestor(gw_get(e, "ancestorRef"), g, p->obj->ns))
                    pconds = gw_get(e, "conditions");
            }
            gw_cond conds[2] = {p->accepted, p->resolved};
            json_array_append_new(
                ancestors, json_pack("{s:{s:s,s:s,s:s,s:s},s:s,s:o}", "ancestorRef", "group",
                                     GW_GROUP, "kind", "Gateway", "namespace", g->obj->ns, "name",
                                     g->obj->name, "controllerName", c->controller, "conditions",
                                     gw_conditions(conds, 2, pconds, gen, c->now_text)));
        }
        gw_status_push(out, cap, GW_BACKEND_TLS_POLICY, p->obj,
                       gw_status_set(prev, "ancestors", ancestors));
    }
    sx_free(order);
}

void gw_policies_free(gw_ctx *c)
{
    for (size_t i = 0; i < c->n_policies; i++)
        json_decref(c->policies[i].tls);
    json_decref(c->policy_targets);
}
