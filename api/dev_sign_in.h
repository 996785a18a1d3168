/*
 * dev_sign_in.h — POST /api/v1/auth/dev-sign-in: the local demo's one-click sign-in.
 *
 * With auth.dev_sign_in true and an HS256 secret configured, anyone who can reach the
 * API may ask for a short-lived token of any role the RBAC policy defines; the web UI's
 * sign-in page offers it as buttons. Without both, the routes do not exist (the router's
 * usual 404), so a production server shows no trace of it. Development only:
 * deploy/local/up.sh turns it on, and the daemon warns at start when it is on.
 */
#ifndef SX_API_DEV_SIGN_IN_H
#define SX_API_DEV_SIGN_IN_H

#include "api/rest.h"
#include "server/base/err.h"

/* Lifetime of a dev sign-in token, seconds. */
#define DEV_SIGN_IN_TTL_SECONDS 3600

/*
 * Registers, when rest_server(api)->config->auth.dev_sign_in is true and auth.hs256_secret
 * is set (a warning is logged when it is true without a secret, or with auth.enabled
 * false, and nothing is registered):
 *
 *   GET  /api/v1/auth/dev-sign-in  -> 200 {"roles": [...], "ttl_seconds": N}
 *   POST /api/v1/auth/dev-sign-in  {"role": R, "user"?: U}
 *        -> 200 {"token", "user", "role", "expires_at"}; 400 for an unknown role or a bad
 *           user; 503 when the audit row cannot be written.
 *
 * Neither route asks for a token. Every sign-in writes one audit_log row (action
 * "auth.dev_sign_in", resource type "auth", the user as resource id and actor); a
 * refused one writes a "failed" row. The token is HS256 even when an RS256 signing key
 * is configured, signed with auth.hs256_secret, "sub" U (default "dev-<role>"), valid
 * for DEV_SIGN_IN_TTL_SECONDS. Returns 0, or the router's error (SX_ECONFLICT).
 */
int dev_sign_in_register(rest_api *api, sx_err *err) SX_MUSTCHECK;

#endif
