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
 *
 * The lifetime rule bounds what a leaked token is worth: without it a token valid until
 * year 9999 would be accepted. It is measured from "iat" when the token has one (a
 * token cannot claim to have been issued in the future), else from now, so a token
 * without "iat" is accepted only while its remaining life is within the maximum.
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

/* Decodes the UTF-8 sequence at *p into *cp and advances *p; false when it is not
 * well-formed (overlong, surrogate, beyond U+10FFFF, truncated). */
static bool next_code_point(const unsigned char **p, uint32_t *cp)
{
    const unsigned char *s = *p;
    uint32_t c = s[0];
    int n;
    uint32_t min;
    if (c < 0x80) {
        *cp = c;
        *p = s + 1;
        return true;
    } else if ((c & 0xe0) == 0xc0) {
        n = 1, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 2, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 3, min = 0x10000, c &= 0x07;
    } else {
        return false;
    }
    for (int i = 1; i <= n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return false;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return false;
    *cp = c;
    *p = s + n + 1;
    return true;
}

/* Characters that change how the text around them is displayed or broken into lines:
 * the bidirectional controls (Unicode UAX #9) and the line and paragraph separators. */
static bool is_bidi_or_separator(uint32_t c)
{
    return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
}

const char *sx_jwt_subject_problem(const char *sub, size_t max)
{
    if (sub == NULL || *sub == '\0' || strlen(sub) > max)
        return "token has no subject";
    for (const unsigned char *p = (const unsigned char *)sub; *p;) {
        uint32_t c;
        if (!next_code_point(&p, &c))
            return "token subject is not valid UTF-8";
        if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
            return "token subject contains control characters";
        if (is_bidi_or_separator(c))
            return "token subject contains bidirectional control characters";
    }
    /* The actors the server writes into the audit log itself. */
    if (strcmp(sub, "anonymous") == 0 || strcmp(sub, "kubernetes") == 0 ||
        strncmp(sub, "system:", 7) == 0)
        return "token subject is reserved";
    return NULL;
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
    /* RFC 7515 §4.1.11: extensions named in "crit" must be understood, and none are. */
    if (json_object_get(header, "crit") != NULL)
        return refuse(err, "unsupported critical header");

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
    int64_t iat = -1;
    if (json_object_get(claims, "iat") != NULL) {
        if (!time_claim(claims, "iat", &iat) || iat < 0)
            return refuse(err, "malformed token");
        if (iat > now + k->skew_s)
            return refuse(err, "token issued in the future");
    }
    if (k->max_lifetime_s > 0) {
        /* Without "iat" the remaining life counts, with the leeway a clock may be off. */
        int64_t from = iat >= 0 ? iat : now;
        int64_t allowed = k->max_lifetime_s + (iat >= 0 ? 0 : k->skew_s);
        if (exp - from > allowed)
            return refuse(err, "token lifetime exceeds the maximum");
    }
    if (k->revoked) {
        const char *jti = json_string_value(json_object_get(claims, "jti"));
        const char *sub = json_string_value(json_object_get(claims, "sub"));
        if (k->revoked(k->revoked_ctx, jti, sub, iat))
            return refuse(err, "token revoked");
    }
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
    if (s->max_lifetime_s > 0 && ttl_s > s->max_lifetime_s) {
        sx_err_set(err, SX_EINVAL, "the lifetime must be at most %llds (auth.max_token_lifetime)",
                   (long long)s->max_lifetime_s);
        sx_err_hint(err, "A longer-lived token would be refused by every replica.");
        return SX_EINVAL;
    }
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
