/*
 * token_keys.c — bearer-token verification keys from the configuration (token_keys.h).
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
