/*
 * token_keys.h — the keys and claim rules that verify and mint a bearer token, as the
 * auth.* settings give them: the REST API (api/auth.c) and the xDS server (server/xds/
 * identity.c) verify and mint tokens with the same ones.
 */
#ifndef SX_SERVER_TOKEN_KEYS_H
#define SX_SERVER_TOKEN_KEYS_H

#include "server/base/jwt.h"
#include "server/config.h"

/* The verification keys and rules of cfg (strings borrowed from it); no token is
 * revoked until the caller sets revoked. */
sx_jwt_keys token_keys_from_config(const sextant_config *cfg);

/* sx_jwt_sign with cfg's signing keys, issuer, audience and longest lifetime: claims
 * (borrowed) signed into *token (caller frees with sx_free); errors as sx_jwt_sign's. */
int token_keys_sign(const sextant_config *cfg, const json_t *claims, int64_t ttl_s, char **token,
                    sx_err *err) SX_MUSTCHECK;

#endif
