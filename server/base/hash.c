/*
 * hash.c — SHA-256 through OpenSSL's EVP interface.
 */
#include "server/base/hash.h"

#include <openssl/evp.h>
#include <stdlib.h>

void sx_sha256_hex(const void *p, size_t n, char out[SX_SHA256_HEX_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
        abort(); /* only fails when OpenSSL itself is broken */
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < len; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}
