/*
 * test_certs.c — what server/certs.c accepts as serving material and what it refuses:
 * a chain with its key (serial, fingerprint and validity read from the leaf), a key of
 * another certificate, text that is not PEM, an encrypted key, a client CA bundle
 * without a certificate.
 */
#include "tests/lib/testlib.h"

#include <stdint.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string.h>
#include <time.h>

#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/certs.h"

typedef struct pair {
    char *cert, *key;
    char fingerprint[65];
    long serial;
} pair;

static char *bio_text(BIO *b)
{
    char *d = NULL;
    long n = BIO_get_mem_data(b, &d);
    return sx_strndup(d, (size_t)n);
}

/* A self-signed certificate valid for days, with its key (PEM); encrypted: the key
 * under a passphrase. */
static pair make(long serial, long days, bool encrypted)
{
    pair p;
    memset(&p, 0, sizeof(p));
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), days * 86400);
    X509_set_pubkey(x, k);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_sign(x, k, EVP_sha256());
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(cb, x);
    if (encrypted)
        PEM_write_bio_PKCS8PrivateKey(kb, k, EVP_aes_256_cbc(), NULL, 0, NULL, "secret");
    else
        PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL);
    p.cert = bio_text(cb);
    p.key = bio_text(kb);
    unsigned char md[32];
    unsigned int n = 0;
    X509_digest(x, EVP_sha256(), md, &n);
    for (unsigned int i = 0; i < n; i++)
        snprintf(p.fingerprint + 2 * i, 3, "%02x", md[i]);
    p.serial = serial;
    BIO_free(cb);
    BIO_free(kb);
    X509_free(x);
    EVP_PKEY_free(k);
    return p;
}

static void drop(pair *p)
{
    sx_free(p->cert);
    sx_free(p->key);
}

TL_TEST(test_good_material)
{
    pair a = make(0x1234, 5, false), ca = make(7, 30, false);
    certs_pem *p = NULL;
    sx_err err;
    assert_int_equal(certs_pem_parse(a.cert, a.key, ca.cert, &p, &err), 0);
    assert_string_equal(p->serial, "1234");
    assert_string_equal(p->fingerprint, a.fingerprint);
    int64_t left = p->not_after - (int64_t)time(NULL);
    assert_true(left > 5 * 86400 - 60 && left <= 5 * 86400);
    assert_non_null(p->ca);
    assert_string_equal(p->cert, a.cert); /* copied, whole */
    certs_pem_release(p);
    drop(&a);
    drop(&ca);
}

TL_TEST(test_refused_material)
{
    pair a = make(1, 90, false), b = make(2, 90, false), enc = make(3, 90, true);
    certs_pem *p = NULL;
    sx_err err;
    assert_int_equal(certs_pem_parse(a.cert, b.key, NULL, &p, &err), SX_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.message, "does not belong"));
    assert_int_equal(certs_pem_parse("not a certificate\n", a.key, NULL, &p, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "no PEM certificate"));
    assert_int_equal(certs_pem_parse(a.cert, "junk", NULL, &p, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "private key"));
    assert_int_equal(certs_pem_parse(enc.cert, enc.key, NULL, &p, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "unencrypted"));
    assert_int_equal(certs_pem_parse(a.cert, a.key, "no CA here", &p, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "client CA"));
    assert_null(p);
    drop(&a);
    drop(&b);
    drop(&enc);
}

int main(void)
{
    sx_log_configure(SX_LOG_ERROR, NULL);
    return tl_run("tests", NULL, NULL);
}
