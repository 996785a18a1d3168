/*
 * jwt.h — compact JWS tokens (HS256, RS256) on libjwt: verifying a token's signature and
 * its time, issuer and audience claims, and signing a set of claims. What the REST API's
 * bearer tokens (api/auth.h) and the xDS server's proxy tokens (server/xds/identity.h)
 * share; each of them checks its own claims on top.
 *
 * Accepted tokens are signed with HS256 (when a shared secret is set) or RS256 (when an
 * RSA public key is set), and nothing else: the header's alg is read and checked against
 * the configured keys before any signature is looked at, so an unsigned token
 * ("alg":"none") or an HS256 token "signed" with the RSA public key is refused whatever
 * keys are configured. "exp" is required, "nbf" optional, both with skew_s of leeway;
 * "iss" and "aud" (a string or an array) are checked when an issuer or audience is set.
 * A token may live at most max_lifetime_s: exp - iat, or exp - now when it has no "iat"
 * (an "iat" in the future beyond skew_s is refused too). A "crit" header is refused:
 * no JWS extension is understood here, and RFC 7515 §4.1.11 says a recipient must then
 * refuse the token. Last, the revoked hook (when set) is asked about the token's "jti",
 * "sub" and "iat".
 *
 * A refusal is SX_EUNAUTH with a short reason as the message, meant for the client:
 * "missing bearer token", "malformed authorization header", "malformed token",
 * "unsigned tokens are not accepted", "token algorithm X is not accepted",
 * "bad signature", "token expired", "token not yet valid", "token has no expiry",
 * "wrong issuer", "wrong audience", "no token verification key is configured",
 * "token lifetime exceeds the maximum", "token issued in the future",
 * "unsupported critical header", "token revoked".
 */
#ifndef SX_BASE_JWT_H
#define SX_BASE_JWT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/base/arena.h"
#include "server/base/err.h"

/* Longest token accepted (bytes); longer ones are malformed. */
#define SX_JWT_MAX_TOKEN 8192

/* Whether a verified token is revoked: jti and sub NULL when the token has none, iat -1
 * when it has none. Called on the verifying thread; must be thread-safe and not block. */
typedef bool (*sx_jwt_revoked_fn)(void *ctx, const char *jti, const char *sub, int64_t iat);

/* Verification keys and claim rules; strings borrowed. NULL: not set (the algorithm is
 * refused, the claim not checked). */
typedef struct sx_jwt_keys {
    const char *hs256_secret;
    const char *rs256_public_pem;
    const char *issuer;
    const char *audience;
    int64_t skew_s;            /* leeway on exp, nbf and iat */
    int64_t max_lifetime_s;    /* longest exp - iat (or exp - now); 0: no maximum */
    sx_jwt_revoked_fn revoked; /* NULL: no token is revoked */
    void *revoked_ctx;
} sx_jwt_keys;

/* Signing keys and the claims every minted token carries; strings borrowed. RS256 when
 * rs256_private_pem is set, else HS256 with hs256_secret. */
typedef struct sx_jwt_signer {
    const char *rs256_private_pem;
    const char *hs256_secret;
    const char *issuer;     /* NULL: no "iss" */
    const char *audience;   /* NULL: no "aud" */
    int64_t max_lifetime_s; /* longest ttl allowed; 0: 366 days */
} sx_jwt_signer;

/* True when at least one verification key is set. */
bool sx_jwt_has_keys(const sx_jwt_keys *k);

/* The token of an Authorization header value ("Bearer TOKEN"; NULL when there was none)
 * into *token (in a). Returns 0, or SX_EUNAUTH with the reason. */
int sx_jwt_bearer(const char *authorization, sx_arena *a, const char **token,
                  sx_err *err) SX_MUSTCHECK;

/* Verifies token at now (seconds since the epoch). Returns 0 and *claims (the payload,
 * released with a), or SX_EUNAUTH with the reason in err->message; *claims is then
 * NULL. */
int sx_jwt_verify(const sx_jwt_keys *k, const char *token, int64_t now, sx_arena *a,
                  json_t **claims, sx_err *err) SX_MUSTCHECK;

/* A printable, non-empty string claim of at most max bytes, or NULL. */
const char *sx_jwt_text_claim(const json_t *claims, const char *name, size_t max);

/* Checks a user name for a token's "sub": 1 to max bytes of valid UTF-8 without control
 * characters (C0, DEL, C1), bidirectional controls (U+061C, U+200E/F, U+202A..E,
 * U+2066..9) or line/paragraph separators, and none of the actors the server itself
 * records ("anonymous", "kubernetes", "system:..."). Returns NULL when it is fine, else
 * a short reason (static) such as "token subject is reserved". */
const char *sx_jwt_subject_problem(const char *sub, size_t max);

/* Signs claims (borrowed; copied) with "iat", "exp" (now + ttl_s), a random "jti" and
 * the signer's "iss"/"aud" added. Returns 0 and *token (caller frees with sx_free), or
 * SX_EINVAL (no signing key; a ttl under 1 s or over the signer's maximum), SX_EIO or SX_EINTERNAL
 * with err; *token is then NULL. */
int sx_jwt_sign(const sx_jwt_signer *s, const json_t *claims, int64_t ttl_s, char **token,
                sx_err *err) SX_MUSTCHECK;

#endif
