/*
 * pem.c — PEM reading that refuses every passphrase prompt instead of reading one from
 * the terminal, as OpenSSL would by default.
 */
#include "server/base/pem.h"

#include <openssl/pem.h>

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

X509 *sx_pem_read_x509(BIO *bio)
{
    return PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
}

EVP_PKEY *sx_pem_read_key(BIO *bio)
{
    return PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
}
