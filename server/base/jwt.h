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
 *
 * A refusal is SX_EUNAUTH with a short reason as the message, meant for the client:
 * "missing bearer token", "malformed authorization header", "malformed token",
 * "unsigned tokens are not accepted", "token algorithm X is not accepted",
 * "bad signature", "token expired", "token not yet valid", "token has no expiry",
 * "wrong issuer", "wrong audience", "no token verification key is configured".
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

/* Verification keys and claim rules; strings borrowed. NULL: not set (the algorithm is
 * refused, the claim not checked). */
typedef struct sx_jwt_keys {
    const char *hs256_secret;
    const char *rs256_public_pem;
    const char *issuer;
    const char *audience;
    int64_t skew_s; /* leeway on exp and nbf */
} sx_jwt_keys;

/* Signing keys and the claims every minted token carries; strings borrowed. RS256 when
 * rs256_private_pem is set, else HS256 with hs256_secret. */
typedef struct sx_jwt_signer {
    const char *rs256_private_pem;
    const char *hs256_secret;
    const char *issuer;   /* NULL: no "iss" */
    const char *audience; /* NULL: no "aud" */
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

/* Signs claims (borrowed; copied) with "iat", "exp" (now + ttl_s), a random "jti" and
 * the signer's "iss"/"aud" added. Returns 0 and *token (caller frees with sx_free), or
 * SX_EINVAL (no signing key; bad ttl), SX_EIO or SX_EINTERNAL with err; *token is then
 * NULL. */
int sx_jwt_sign(const sx_jwt_signer *s, const json_t *claims, int64_t ttl_s, char **token,
                sx_err *err) SX_MUSTCHECK;

#endif
