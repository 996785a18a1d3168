/*
 * pem.h — reading PEM certificates and private keys from memory without ever asking
 * for a passphrase: an encrypted key is simply not read (a server has nobody to ask).
 */
#ifndef SX_BASE_PEM_H
#define SX_BASE_PEM_H

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

/* The next certificate of bio, or NULL at the end or on text that is not one. The
 * caller frees it with X509_free. */
X509 *sx_pem_read_x509(BIO *bio);

/* The unencrypted private key of bio, or NULL when there is none (or it is encrypted).
 * The caller frees it with EVP_PKEY_free. */
EVP_PKEY *sx_pem_read_key(BIO *bio);

#endif
