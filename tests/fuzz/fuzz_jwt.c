/*
 * fuzz_jwt.c — libFuzzer target for JWT bearer-token parsing and verification
 * (auth_verify, api/auth.h), with an HS256 secret, an issuer and an audience
 * configured.
 *
 * Byte 0 picks the form of the rest:
 *   even  the Authorization header value as a client sends it (anything at all);
 *   odd   "<JOSE header JSON>\n<claims JSON>", which the target signs with the
 *         configured secret, so that the claim checks behind the signature are reached.
 * Invariants: an accepted token names a non-empty user and role and an expiry; a refusal
 * is SX_EUNAUTH with a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "api/auth.h"
#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/base/mem.h"
#include "server/config.h"

#define SECRET "fuzzing-secret-fuzzing-secret-0123456789"
#define NOW    1767225600LL

static auth_verifier *verifier(void)
{
    static auth_verifier *v;
    static sextant_config *cfg;
    if (v)
        return v;
    char *envp[] = {"SEXTANT_DATABASE_URL=postgresql://sextant@127.0.0.1:5432/sextant",
                    "SEXTANT_AUTH_HS256_SECRET=" SECRET, "SEXTANT_AUTH_ISSUER=sextant",
                    "SEXTANT_AUTH_AUDIENCE=api", NULL};
    sx_fielderrs errs = {0};
    if (config_load(NULL, envp, &cfg, &errs) != 0)
        abort();
    sx_fielderrs_free(&errs);
    v = auth_verifier_create(cfg);
    if (!auth_has_keys(v))
        abort();
    return v;
}

/* Appends the base64url form (no padding) of data to out at *at. */
static void b64url(const uint8_t *data, size_t n, char *out, size_t *at)
{
    size_t w = (size_t)EVP_EncodeBlock((unsigned char *)out + *at, data, (int)n);
    while (w > 0 && out[*at + w - 1] == '=')
        w--;
    for (size_t i = 0; i < w; i++) {
        char *c = &out[*at + i];
        if (*c == '+')
            *c = '-';
        else if (*c == '/')
            *c = '_';
    }
    *at += w;
    out[*at] = '\0';
}

static void verify(const char *header)
{
    sx_arena *a = sx_arena_create();
    auth_identity id;
    sx_err err;
    sx_err_clear(&err);
    int rc = auth_verify(verifier(), header, NOW, a, &id, &err);
    if (rc == 0) {
        if (id.user == NULL || id.user[0] == '\0' || id.role == NULL || id.role[0] == '\0')
            abort();
    } else if (rc != SX_EUNAUTH || err.message[0] == '\0') {
        abort();
    }
    sx_arena_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 3 * AUTH_MAX_TOKEN)
        return 0;
    if ((data[0] & 1) == 0) {
        char *h = sx_malloc(size);
        memcpy(h, data + 1, size - 1);
        h[size - 1] = '\0';
        verify(h);
        sx_free(h);
        return 0;
    }
    const uint8_t *hdr = data + 1;
    size_t rest = size - 1;
    const uint8_t *nl = memchr(hdr, '\n', rest);
    if (nl == NULL)
        return 0;
    size_t nh = (size_t)(nl - hdr);
    const uint8_t *claims = nl + 1;
    size_t nc = rest - nh - 1;
    size_t cap = 4 * (nh + nc) / 3 + 128;
    char *tok = sx_malloc(cap + 4);
    size_t at = 0;
    memcpy(tok, "Bearer ", 7);
    at = 7;
    b64url(hdr, nh, tok, &at);
    tok[at++] = '.';
    b64url(claims, nc, tok, &at);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned maclen = 0;
    HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET), (const unsigned char *)tok + 7, at - 7, mac,
         &maclen);
    tok[at++] = '.';
    b64url(mac, maclen, tok, &at);
    verify(tok);
    sx_free(tok);
    return 0;
}
