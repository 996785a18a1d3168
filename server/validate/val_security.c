/*
 * val_security.c — the security stage: the config's certificates and keys are usable
 * at the time of the check, and the optional policies from the server's configuration
 * hold.
 *
 * Certificates are read with OpenSSL (libcrypto): every certificate of a secret's chain
 * must parse as PEM X.509 and be inside its validity period at now (one not yet valid
 * is refused as well: Envoy would serve it and clients would reject it); the private key
 * must parse as PEM (encrypted keys cannot be, since nobody could type the passphrase)
 * and match the first certificate. Inline CA bundles must parse. Policies:
 *   tls_on_privileged_ports   HTTP and GRPC listeners on ports 1..1023 other than 80
 *                             must terminate TLS (HTTPS listeners always do);
 *   refuse_private_endpoints  no endpoint in 10/8, 172.16/12, 192.168/16, 127/8,
 *                             169.254/16, ::1, fc00::/7 or fe80::/10 (IPv4-mapped IPv6
 *                             addresses count as their IPv4 address).
 * OpenSSL's per-thread error queue is cleared after every call that may fill it, so no
 * stale error reaches another user of the library on this thread.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "server/base/pem.h"
#include "server/validate/val_internal.h"

static BIO *mem_bio(const char *pem)
{
    size_t len = strlen(pem);
    return len > INT_MAX ? NULL : BIO_new_mem_buf(pem, (int)len);
}

/* Every certificate of a PEM text; NULL when there is none. */
static STACK_OF(X509) * read_chain(const char *pem)
{
    BIO *bio = mem_bio(pem);
    if (bio == NULL)
        return NULL;
    STACK_OF(X509) *chain = sk_X509_new_null();
    X509 *x;
    while ((x = sx_pem_read_x509(bio)) != NULL)
        sk_X509_push(chain, x);
    BIO_free(bio);
    ERR_clear_error(); /* the end of the text is reported as an error */
    if (sk_X509_num(chain) == 0) {
        sk_X509_free(chain);
        return NULL;
    }
    return chain;
}

static const char *asn1_time_text(const ASN1_TIME *t, char *buf, size_t n)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1 || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, n, "an unreadable time");
    ERR_clear_error();
    return buf;
}

static void validity(val_ctx *c, const char *path, X509 *x, size_t k)
{
    char when[64], which[48];
    if (k == 0)
        snprintf(which, sizeof which, "certificate");
    else
        snprintf(which, sizeof which, "certificate %zu of the chain", k + 1);
    time_t now = (time_t)c->now;
    int after = ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), now);
    int before = ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), now);
    ERR_clear_error();
    if (after == -2 || before == -2)
        val_add(c, path, "%s has an unreadable validity period", which);
    else if (after < 0)
        val_add(c, path, "%s expired at %s", which,
                asn1_time_text(X509_get0_notAfter(x), when, sizeof when));
    else if (before > 0)
        val_add(c, path, "%s is not valid before %s", which,
                asn1_time_text(X509_get0_notBefore(x), when, sizeof when));
}

static void secret(val_ctx *c, size_t i, const val_secret *s)
{
    char cp[VAL_PATH_MAX], kp[VAL_PATH_MAX];
    snprintf(cp, sizeof cp, "spec.secrets[%zu].cert_pem", i);
    snprintf(kp, sizeof kp, "spec.secrets[%zu].key_pem", i);
    STACK_OF(X509) *chain = NULL;
    if (!val_empty(s->cert_pem)) {
        chain = read_chain(s->cert_pem);
        if (chain == NULL)
            val_add(c, cp, "certificate does not parse as PEM X.509");
        for (int k = 0; chain && k < sk_X509_num(chain); k++)
            validity(c, cp, sk_X509_value(chain, k), (size_t)k);
    }
    EVP_PKEY *key = NULL;
    if (!val_empty(s->key_pem)) {
        BIO *bio = mem_bio(s->key_pem);
        key = bio ? sx_pem_read_key(bio) : NULL;
        BIO_free(bio);
        ERR_clear_error();
        if (key == NULL)
            val_add(c, kp, "private key does not parse as PEM (encrypted keys are not supported)");
    }
    if (chain && key && X509_check_private_key(sk_X509_value(chain, 0), key) != 1)
        val_add(c, kp, "private key does not match the certificate");
    ERR_clear_error();
    EVP_PKEY_free(key);
    sk_X509_pop_free(chain, X509_free);
}

static void ca_pems(val_ctx *c, const char *base, char **pems, size_t n)
{
    char p[VAL_PATH_MAX];
    for (size_t k = 0; k < n; k++) {
        snprintf(p, sizeof p, "%s[%zu]", base, k);
        if (val_empty(pems[k])) {
            val_add(c, p, "must not be empty");
            continue;
        }
        STACK_OF(X509) *chain = read_chain(pems[k]);
        if (chain == NULL)
            val_add(c, p, "ca certificate does not parse as PEM X.509");
        sk_X509_pop_free(chain, X509_free);
    }
}

/* ---------------------------------------------------------------- policies */

/* The private range holding addr, as text, or NULL. */
static const char *private_range(const char *addr)
{
    unsigned char a[16];
    if (inet_pton(AF_INET6, addr, a) == 1) {
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        static const unsigned char loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        if (memcmp(a, loop, 16) == 0)
            return "::1/128";
        if ((a[0] & 0xfe) == 0xfc)
            return "fc00::/7";
        if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
            return "fe80::/10";
        if (memcmp(a, mapped, 12) != 0)
            return NULL;
        memmove(a, a + 12, 4);
    } else if (inet_pton(AF_INET, addr, a) != 1) {
        return NULL;
    }
    if (a[0] == 10)
        return "10.0.0.0/8";
    if (a[0] == 172 && (a[1] & 0xf0) == 16)
        return "172.16.0.0/12";
    if (a[0] == 192 && a[1] == 168)
        return "192.168.0.0/16";
    if (a[0] == 127)
        return "127.0.0.0/8";
    if (a[0] == 169 && a[1] == 254)
        return "169.254.0.0/16";
    return NULL;
}

void val_security(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_secrets; i++)
        if (ir->secrets[i])
            secret(c, i, ir->secrets[i]);
    for (size_t i = 0; i < ir->n_listeners; i++) {
        const val_listener *l = ir->listeners[i];
        if (l == NULL)
            continue;
        if (l->tls && l->tls->frontend_validation) {
            snprintf(p, sizeof p, "spec.listeners[%zu].tls.frontend_validation.ca_pems", i);
            ca_pems(c, p, l->tls->frontend_validation->ca_pems,
                    l->tls->frontend_validation->n_ca_pems);
        }
        if (c->limits.tls_on_privileged_ports &&
            (l->protocol == VAL_P_HTTP || l->protocol == VAL_P_GRPC) && l->port > 0 &&
            l->port < 1024 && l->port != 80 && !(l->tls && l->tls->enabled)) {
            snprintf(p, sizeof p, "spec.listeners[%zu].tls", i);
            val_add(c, p,
                    "port %u is privileged: policy requires tls on ports below 1024 other than 80 "
                    "(set tls.enabled or use protocol HTTPS)",
                    l->port);
        }
    }
    for (size_t i = 0; i < ir->n_backends; i++) {
        const val_backend *b = ir->backends[i];
        if (b == NULL)
            continue;
        if (b->tls_validation) {
            snprintf(p, sizeof p, "spec.backends[%zu].tls_validation.ca_pems", i);
            ca_pems(c, p, b->tls_validation->ca_pems, b->tls_validation->n_ca_pems);
        }
        for (size_t k = 0; c->limits.refuse_private_endpoints && k < b->n_endpoints; k++) {
            const val_endpoint *e = b->endpoints[k];
            const char *range = e ? private_range(VAL_S(e->address)) : NULL;
            if (range == NULL)
                continue;
            snprintf(p, sizeof p, "spec.backends[%zu].endpoints[%zu].address", i, k);
            val_add(c, p, "private address %s (in %s) is refused by policy", e->address, range);
        }
    }
}
