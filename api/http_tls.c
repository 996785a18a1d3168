/*
 * http_tls.c — the REST listener's certificate, handed to GnuTLS at every TLS handshake
 * so that a reloaded certificate (server/certs.h) reaches new connections without a
 * restart and open connections keep theirs.
 *
 * libmicrohttpd (0.9.75, built on GnuTLS) loads MHD_OPTION_HTTPS_MEM_CERT/KEY once and
 * cannot swap them on a running daemon; MHD_OPTION_HTTPS_CERT_CALLBACK2 instead makes
 * GnuTLS ask a callback for the certificate of each handshake. The callback imports the
 * current version into objects of that handshake alone and sets
 * GNUTLS_CERT_RETR_DEINIT_ALL, so GnuTLS frees them when the session ends: no version is
 * freed while a handshake still signs with it, and none outlives its sessions.
 *
 * GnuTLS's callback has no argument of ours and libmicrohttpd has no per-daemon one, so
 * the certificates live behind one pointer of this file, set by http_start; one process
 * runs one TLS REST listener.
 */
#include "api/http_internal.h"

#include <stdatomic.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include "server/base/log.h"
#include "server/certs.h"

#define MAX_CHAIN 16

static _Atomic(certs *) rest_certs;

static int on_certificate(gnutls_session_t session, const struct gnutls_cert_retr_st *info,
                          gnutls_pcert_st **pcerts, unsigned int *npcerts,
                          gnutls_ocsp_data_st **ocsp, unsigned int *nocsp, gnutls_privkey_t *pkey,
                          unsigned int *flags)
{
    (void)session;
    (void)info;
    certs_pem *p = certs_current(atomic_load(&rest_certs), CERTS_HTTP);
    if (p == NULL)
        return -1; /* no certificate: the handshake fails */
    gnutls_pcert_st *list = gnutls_calloc(MAX_CHAIN, sizeof(*list));
    unsigned int n = MAX_CHAIN;
    gnutls_privkey_t key = NULL;
    gnutls_datum_t d = {(unsigned char *)p->cert, (unsigned int)strlen(p->cert)};
    int rc = list ? gnutls_pcert_list_import_x509_raw(list, &n, &d, GNUTLS_X509_FMT_PEM, 0)
                  : GNUTLS_E_MEMORY_ERROR;
    bool chain_ok = rc >= 0;
    if (rc >= 0)
        rc = gnutls_privkey_init(&key);
    if (rc >= 0) {
        d = (gnutls_datum_t){(unsigned char *)p->key, (unsigned int)strlen(p->key)};
        rc = gnutls_privkey_import_x509_raw(key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    }
    uint64_t generation = p->generation;
    certs_pem_release(p);
    if (rc < 0) {
        SX_ERROR("http", "TLS handshake without a certificate: GnuTLS refused version %llu: %s",
                 (unsigned long long)generation, gnutls_strerror(rc));
        if (chain_ok)
            for (unsigned int i = 0; i < n; i++)
                gnutls_pcert_deinit(&list[i]);
        gnutls_privkey_deinit(key);
        gnutls_free(list);
        return -1;
    }
    *pcerts = list;
    *npcerts = n;
    *ocsp = NULL;
    *nocsp = 0;
    *pkey = key;
    *flags = GNUTLS_CERT_RETR_DEINIT_ALL;
    return 0;
}

void http_set_certs(http_server *s, struct certs *c)
{
    s->certs = c;
}

int http_tls_option(http_server *s, struct MHD_OptionItem *opt, sx_err *err)
{
    *opt = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    if (!certs_enabled(s->certs, CERTS_HTTP))
        return 0;
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return sx_err_set(err, SX_EUNSUPPORTED,
                          "http.tls is set but libmicrohttpd was built without TLS");
    certs *none = NULL;
    if (!atomic_compare_exchange_strong(&rest_certs, &none, s->certs) && none != s->certs)
        return sx_err_set(err, SX_EINVAL, "another HTTPS server runs in this process");
    gnutls_certificate_retrieve_function3 *fn = on_certificate;
    *opt = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK2, 0, (void *)fn};
    return 0;
}

void http_tls_stopped(http_server *s)
{
    certs *mine = s->certs;
    atomic_compare_exchange_strong(&rest_certs, &mine, NULL);
}
