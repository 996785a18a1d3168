/*
 * val_dependency.c — the dependency stage: the secrets a config's listeners reference
 * exist, in the config or in another config of its groups.
 *
 * Listener TLS (tls.secret_refs) and the client certificate a listener presents to TLS
 * backends (backend_tls.client_certificate_ref) name secrets the way the translator
 * resolves them: a qualified name, or a bare name exactly one secret has. A listener
 * that terminates TLS needs at least one certificate to do it with.
 */
#include <stdio.h>

#include "server/validate/val_internal.h"

#define P_TLS GATEWAY__CONTROL__V1__LISTENER_PROTOCOL__LISTENER_PROTOCOL_TLS

static void secret_ref(val_ctx *c, const char *path, const char *ref)
{
    char why[SX_ERR_MESSAGE_MAX];
    size_t n;
    if (val_resolve(&c->secrets, ref, "secret", &n, why, sizeof why) == NULL)
        val_add(c, path, "%s", why);
}

/* Whether the translator gives listener l a TLS transport socket it terminates. */
static bool terminates_tls(const val_listener *l)
{
    if (l->protocol == VAL_P_HTTPS || l->protocol == P_TLS)
        return true;
    return (l->protocol == VAL_P_HTTP || l->protocol == VAL_P_GRPC) && l->port != 0 && l->tls &&
           l->tls->enabled;
}

void val_dependency(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_listeners; i++) {
        const val_listener *l = ir->listeners[i];
        if (l == NULL)
            continue;
        if (terminates_tls(l) && (l->tls == NULL || l->tls->n_secret_refs == 0)) {
            snprintf(p, sizeof p, "spec.listeners[%zu].tls%s", i, l->tls ? ".secret_refs" : "");
            val_add(c, p, "a listener that terminates tls needs at least one secret");
        }
        for (size_t k = 0; l->tls && k < l->tls->n_secret_refs; k++) {
            snprintf(p, sizeof p, "spec.listeners[%zu].tls.secret_refs[%zu]", i, k);
            secret_ref(c, p, l->tls->secret_refs[k]);
        }
        if (l->backend_tls && l->backend_tls->client_certificate_ref &&
            l->backend_tls->client_certificate_ref[0]) {
            snprintf(p, sizeof p, "spec.listeners[%zu].backend_tls.client_certificate_ref", i);
            secret_ref(c, p, l->backend_tls->client_certificate_ref);
        }
    }
}
