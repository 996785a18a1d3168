/*
 * jwt.c — JWS verification and signing on libjwt (see jwt.h).
 *
 * libjwt 1.10's jwt_decode trusts the token's own header to choose how to check the
 * signature: with "alg":"none" it checks nothing, and given an RSA public key as the
 * "key" of an HS256 token it computes an HMAC with the PEM text (the classic algorithm
 * confusion). So the header is decoded here first, its alg must be one of the
 * configured ones, and only then does jwt_decode run with the key of that algorithm;
 * afterwards the algorithm libjwt used is checked once more. libjwt 1.10 validates no
 * claims, so exp/nbf/iss/aud are checked here on the payload that was just verified.
 */
#include "server/base/jwt.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <jwt.h>

#include "server/base/b64.h"
#include "server/base/mem.h"

#define MAX_HEADER_BYTES 2048
#define MAX_TTL_SECONDS  (366LL * 24 * 3600)

bool sx_jwt_has_keys(const sx_jwt_keys *k)
{
    return k->hs256_secret != NULL || k->rs256_public_pem != NULL;
}

/* ------------------------------------------------------------------ decoding */

/* Decodes unpadded base64url s[0..n) into a new NUL-terminated buffer in a; NULL when
 * s is not base64url. */
static char *b64url_decode(sx_arena *a, const char *s, size_t n, size_t *out_len)
{
    char *out = sx_arena_alloc(a, n / 4 * 3 + 3);
    bool clean;
    /* Leftover bits must be zero, or two encodings would decode to the same bytes. */
    if (!sx_b64_decode(s, n, SX_B64_URL, (uint8_t *)out, out_len, &clean) || !clean)
        return NULL;
    out[*out_len] = '\0';
    return out;
}

/* Decodes one token segment as a JSON object; NULL when it is not one. The result is
 * released with the arena. */
static json_t *segment_json(sx_arena *a, const char *s, size_t n)
{
    size_t len;
    char *text = b64url_decode(a, s, n, &len);
    if (text == NULL || memchr(text, '\0', len) != NULL)
        return NULL;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return sx_arena_defer(a, (sx_cleanup_fn)json_decref, j);
}

static int refuse(sx_err *err, const char *fmt, ...) SX_PRINTF(2, 3);
static int refuse(sx_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sx_err_vset(err, SX_EUNAUTH, fmt, ap);
    va_end(ap);
    return SX_EUNAUTH;
}

/* A claim holding a JSON number, as whole seconds; false when absent or not a number. */
static bool time_claim(const json_t *claims, const char *name, int64_t *out)
{
    const json_t *v = json_object_get(claims, name);
    if (!json_is_number(v))
        return false;
    double d = json_number_value(v);
    if (d != d || d > 9.2e18 || d < -9.2e18)
        return false;
    *out = (int64_t)d;
    return true;
}

const char *sx_jwt_text_claim(const json_t *claims, const char *name, size_t max)
{
    const char *s = json_string_value(json_object_get(claims, name));
    if (s == NULL || *s == '\0' || strlen(s) > max)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return NULL;
    return s;
}

static bool audience_matches(const json_t *aud, const char *want)
{
    if (json_is_string(aud))
        return strcmp(json_string_value(aud), want) == 0;
    if (!json_is_array(aud))
        return false;
    size_t i;
    const json_t *e;
    json_array_foreach(aud, i, e)
    {
        if (json_is_string(e) && strcmp(json_string_value(e), want) == 0)
            return true;
    }
    return false;
}

/* Checks the signature with libjwt using the key of alg, which the caller has checked
 * to be configured. */
static bool signature_ok(const sx_jwt_keys *k, const char *token, jwt_alg_t alg)
{
    const char *key = alg == JWT_ALG_HS256 ? k->hs256_secret : k->rs256_public_pem;
    jwt_t *j = NULL;
    int rc = jwt_decode(&j, token, (const unsigned char *)key, (int)strlen(key));
    bool ok = rc == 0 && j != NULL && jwt_get_alg(j) == alg;
    jwt_free(j);
    return ok;
}

int sx_jwt_verify(const sx_jwt_keys *k, const char *token, int64_t now, sx_arena *a,
                  json_t **claims_out, sx_err *err)
{
    *claims_out = NULL;
    if (token == NULL || *token == '\0')
        return refuse(err, "missing bearer token");
    size_t n = strlen(token);
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (n > SX_JWT_MAX_TOKEN || dot1 == NULL || dot2 == NULL || strchr(dot2 + 1, '.') != NULL ||
        dot1 == token || dot2 == dot1 + 1)
        return refuse(err, "malformed token");
    size_t hlen = (size_t)(dot1 - token);
    if (hlen > MAX_HEADER_BYTES)
        return refuse(err, "malformed token");
    json_t *header = segment_json(a, token, hlen);
    json_t *claims = segment_json(a, dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (header == NULL || claims == NULL)
        return refuse(err, "malformed token");

    /* The algorithm first: nothing about the token is trusted before it is known to be
     * one we hold a key for. */
    const char *alg = json_string_value(json_object_get(header, "alg"));
    if (alg == NULL)
        return refuse(err, "malformed token");
    if (strcasecmp(alg, "none") == 0 || dot2[1] == '\0')
        return refuse(err, "unsigned tokens are not accepted");
    if (!sx_jwt_has_keys(k))
        return refuse(err, "no token verification key is configured");
    jwt_alg_t want;
    if (strcmp(alg, "HS256") == 0 && k->hs256_secret)
        want = JWT_ALG_HS256;
    else if (strcmp(alg, "RS256") == 0 && k->rs256_public_pem)
        want = JWT_ALG_RS256;
    else if (strlen(alg) <= 16 && strspn(alg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789") == strlen(alg))
        return refuse(err, "token algorithm %s is not accepted", alg);
    else
        return refuse(err, "token algorithm is not accepted"); /* not echoed: junk */
    if (!signature_ok(k, token, want))
        return refuse(err, "bad signature");

    int64_t exp, nbf;
    if (!time_claim(claims, "exp", &exp))
        return refuse(err, "token has no expiry");
    if (now >= exp + k->skew_s)
        return refuse(err, "token expired");
    if (json_object_get(claims, "nbf") != NULL) {
        if (!time_claim(claims, "nbf", &nbf))
            return refuse(err, "malformed token");
        if (now + k->skew_s < nbf)
            return refuse(err, "token not yet valid");
    }
    if (k->issuer) {
        const char *iss = json_string_value(json_object_get(claims, "iss"));
        if (iss == NULL || strcmp(iss, k->issuer) != 0)
            return refuse(err, "wrong issuer");
    }
    if (k->audience && !audience_matches(json_object_get(claims, "aud"), k->audience))
        return refuse(err, "wrong audience");
    *claims_out = claims;
    return 0;
}

int sx_jwt_bearer(const char *authorization, sx_arena *a, const char **token, sx_err *err)
{
    *token = NULL;
    if (authorization == NULL)
        return refuse(err, "missing bearer token");
    const char *p = authorization;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0')
        return refuse(err, "missing bearer token");
    /* RFC 7235: the scheme is case-insensitive, then one or more spaces. */
    if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\0'))
        return refuse(err, "malformed authorization header");
    p += 6;
    while (*p == ' ')
        p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0)
        return refuse(err, "missing bearer token");
    for (size_t i = 0; i < n; i++)
        if (isspace((unsigned char)p[i]))
            return refuse(err, "malformed authorization header");
    if (n > SX_JWT_MAX_TOKEN)
        return refuse(err, "malformed token");
    *token = sx_arena_strndup(a, p, n);
    return 0;
}

/* ------------------------------------------------------------------ signing */

int sx_jwt_sign(const sx_jwt_signer *s, const json_t *claims, int64_t ttl_s, char **token,
                sx_err *err)
{
    *token = NULL;
    if (ttl_s < 1 || ttl_s > MAX_TTL_SECONDS)
        return sx_err_set(err, SX_EINVAL, "the lifetime must be between 1s and 366 days");
    jwt_alg_t alg;
    const char *key;
    if (s->rs256_private_pem) {
        alg = JWT_ALG_RS256;
        key = s->rs256_private_pem;
    } else if (s->hs256_secret) {
        alg = JWT_ALG_HS256;
        key = s->hs256_secret;
    } else {
        sx_err_set(err, SX_EINVAL, "no signing key is configured");
        sx_err_hint(err, "Set auth.hs256_secret, auth.hs256_secret_file or "
                         "auth.rs256_private_key_file.");
        return SX_EINVAL;
    }

    unsigned char rnd[16];
    char jti[33];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return sx_err_set(err, SX_EIO, "could not read random bytes for the token id");
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(jti + i * 2, 3, "%02x", rnd[i]);

    char *body = json_dumps(claims, JSON_COMPACT);
    if (body == NULL)
        return sx_err_set(err, SX_EINTERNAL, "could not encode the token's claims");
    long now = (long)time(NULL);
    jwt_t *j = NULL;
    if (jwt_new(&j) != 0) {
        free(body);
        return sx_err_set(err, SX_EINTERNAL, "could not create a token");
    }
    int rc = jwt_add_grants_json(j, body);
    free(body);
    rc = rc ? rc : jwt_add_grant_int(j, "iat", now);
    rc = rc ? rc : jwt_add_grant_int(j, "exp", now + (long)ttl_s);
    rc = rc ? rc : jwt_add_grant(j, "jti", jti);
    if (rc == 0 && s->issuer)
        rc = jwt_add_grant(j, "iss", s->issuer);
    if (rc == 0 && s->audience)
        rc = jwt_add_grant(j, "aud", s->audience);
    if (rc == 0)
        rc = jwt_set_alg(j, alg, (const unsigned char *)key, (int)strlen(key));
    char *text = rc == 0 ? jwt_encode_str(j) : NULL;
    jwt_free(j);
    if (text == NULL)
        return sx_err_set(err, SX_EINTERNAL, "could not sign the token with %s: %s",
                          alg == JWT_ALG_RS256 ? "RS256" : "HS256",
                          rc ? strerror(rc) : "the key was refused");
    *token = sx_strdup(text);
    free(text);
    return 0;
}
