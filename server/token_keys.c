/*
 * token_keys.c — bearer-token verification and signing keys from the configuration
 * (token_keys.h).
 */
#include "server/token_keys.h"

sx_jwt_keys token_keys_from_config(const sextant_config *cfg)
{
    return (sx_jwt_keys){
        .hs256_secret = cfg->auth.hs256_secret,
        .rs256_public_pem = cfg->auth.rs256_public_key_pem,
        .issuer = cfg->auth.issuer,
        .audience = cfg->auth.audience,
        .skew_s = cfg->auth.clock_skew_ms / 1000,
        .max_lifetime_s = cfg->auth.max_token_lifetime_ms / 1000,
    };
}

int token_keys_sign(const sextant_config *cfg, const json_t *claims, int64_t ttl_s, char **token,
                    sx_err *err)
{
    sx_jwt_signer s = {
        .rs256_private_pem = cfg->auth.rs256_private_key_pem,
        .hs256_secret = cfg->auth.hs256_secret,
        .issuer = cfg->auth.issuer,
        .audience = cfg->auth.audience,
        .max_lifetime_s = cfg->auth.max_token_lifetime_ms / 1000,
    };
    return sx_jwt_sign(&s, claims, ttl_s, token, err);
}
