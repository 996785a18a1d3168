/*
 * auth.h — JWT bearer tokens: verifying the Authorization header of a request and
 * minting tokens for bootstrap (`sextant token`).
 *
 * Accepted tokens are compact JWS with alg HS256 (when auth.hs256_secret is set) or
 * RS256 (when auth.rs256_public_key_file is set), and nothing else: the header's alg is
 * read and checked against the configured keys before any signature is looked at, so an
 * unsigned token ("alg":"none") or an HS256 token "signed" with the RSA public key is
 * refused whatever keys are configured. Claims: "exp" (required), "nbf" (optional),
 * both with auth.clock_skew of leeway; "iss" and "aud" (a string or an array) when
 * auth.issuer / auth.audience are set; "sub" the user and "role" the role, both
 * required non-empty strings.
 *
 * A refusal is SX_EUNAUTH with a short reason as the message, meant for the client:
 * "missing bearer token", "malformed authorization header", "malformed token",
 * "unsigned tokens are not accepted", "token algorithm X is not accepted",
 * "bad signature", "token expired", "token not yet valid", "token has no expiry",
 * "wrong issuer", "wrong audience", "token has no subject", "token has no role",
 * "no token verification key is configured", and those of the strict token policy:
 * "token lifetime exceeds the maximum" (auth.max_token_lifetime), "token issued in the
 * future", "unsupported critical header", "token subject is reserved" ("anonymous",
 * "kubernetes", "system:..."), "token subject contains control characters" (or
 * bidirectional control characters, or is not valid UTF-8), "token revoked".
 */
#ifndef SX_API_AUTH_H
#define SX_API_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/jwt.h"
#include "server/config.h"

/* Longest token accepted (bytes); longer ones are malformed. */
#define AUTH_MAX_TOKEN 8192

/* The verifier: the keys and claim rules of one configuration. Read-only once created,
 * so any number of threads may verify at once. */
typedef struct auth_verifier auth_verifier;

/* Who a verified token speaks for. Strings live in the arena given to auth_verify. */
typedef struct auth_identity {
    const char *user; /* "sub" */
    const char *role; /* "role", not yet checked against the RBAC policy */
    int64_t expires;  /* "exp", seconds since the epoch */
} auth_identity;

/* Creates a verifier for cfg->auth (borrowed; must outlive the verifier). Never NULL: a
 * configuration without keys gives a verifier that refuses every token (see
 * auth_has_keys). */
auth_verifier *auth_verifier_create(const sextant_config *cfg);
/* NULL allowed. */
void auth_verifier_destroy(auth_verifier *v);

/* Makes the verifier ask revoked (thread-safe; ctx borrowed, outliving the verifier)
 * about every token that passes the other checks; call before any verification. */
void auth_verifier_set_revoked(auth_verifier *v, sx_jwt_revoked_fn revoked, void *ctx);

/* True when at least one verification key (HS256 secret, RS256 public key) is set. */
bool auth_has_keys(const auth_verifier *v);

/* Verifies an Authorization header value (NULL when the request had none) at now
 * (seconds since the epoch). Returns 0 and fills *out (strings in a), or SX_EUNAUTH
 * with the reason in err->message. */
int auth_verify(const auth_verifier *v, const char *authorization, int64_t now, sx_arena *a,
                auth_identity *out, sx_err *err) SX_MUSTCHECK;

/* Same for a bare token (no "Bearer " prefix). */
int auth_verify_token(const auth_verifier *v, const char *token, int64_t now, sx_arena *a,
                      auth_identity *out, sx_err *err) SX_MUSTCHECK;

/*
 * Mints a token for user with role, valid from now for ttl_seconds (1 .. max lifetime), with
 * "iss"/"aud" from cfg when set, "iat", "exp" and a random "jti". Signs with RS256 when
 * auth.rs256_private_key_file is set, else with HS256 and auth.hs256_secret. Returns 0
 * and *token (caller frees with sx_free), or SX_EINVAL (bad user, role or ttl; no
 * signing key) with err; *token is then NULL.
 */
int auth_mint(const sextant_config *cfg, const char *user, const char *role, int64_t ttl_seconds,
              char **token, sx_err *err) SX_MUSTCHECK;

#endif
