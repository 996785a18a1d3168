/*
 * auth.c — the REST API's bearer tokens: the "sub" and "role" claims on top of the JWS
 * checks of server/base/jwt.h, and minting them.
 *
 * The signature, the algorithm and the exp/nbf/iss/aud claims are checked by
 * sx_jwt_verify (server/base/jwt.c), which the xDS server's proxy tokens share; what
 * is the REST API's own is that a token names a user and a role.
 */
#include "api/auth.h"

#include <string.h>

#include <jansson.h>

#include "server/base/jwt.h"
#include "server/base/mem.h"
#include "server/token_keys.h"

#define MAX_USER_LEN 256
#define MAX_ROLE_LEN 64

struct auth_verifier {
    sx_jwt_keys keys; /* borrowed from the config */
};

auth_verifier *auth_verifier_create(const sextant_config *cfg)
{
    auth_verifier *v = sx_calloc(1, sizeof(*v));
    v->keys = token_keys_from_config(cfg);
    return v;
}

void auth_verifier_set_revoked(auth_verifier *v, sx_jwt_revoked_fn revoked, void *ctx)
{
    v->keys.revoked = revoked;
    v->keys.revoked_ctx = ctx;
}

void auth_verifier_destroy(auth_verifier *v)
{
    sx_free(v);
}

bool auth_has_keys(const auth_verifier *v)
{
    return sx_jwt_has_keys(&v->keys);
}

int auth_verify_token(const auth_verifier *v, const char *token, int64_t now, sx_arena *a,
                      auth_identity *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *claims = NULL;
    int rc = sx_jwt_verify(&v->keys, token, now, a, &claims, err);
    if (rc != 0)
        return rc;
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    const char *problem = sx_jwt_subject_problem(sub, MAX_USER_LEN);
    if (problem != NULL)
        return sx_err_set(err, SX_EUNAUTH, "%s", problem);
    const char *role = sx_jwt_text_claim(claims, "role", MAX_ROLE_LEN);
    if (role == NULL)
        return sx_err_set(err, SX_EUNAUTH, "token has no role");
    out->user = sx_arena_strdup(a, sub);
    out->role = sx_arena_strdup(a, role);
    out->expires = (int64_t)json_number_value(json_object_get(claims, "exp"));
    return 0;
}

int auth_verify(const auth_verifier *v, const char *authorization, int64_t now, sx_arena *a,
                auth_identity *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *token = NULL;
    int rc = sx_jwt_bearer(authorization, a, &token, err);
    if (rc != 0)
        return rc;
    return auth_verify_token(v, token, now, a, out, err);
}

/* ------------------------------------------------------------------ minting */

int auth_mint(const sextant_config *cfg, const char *user, const char *role, int64_t ttl_seconds,
              char **token, sx_err *err)
{
    *token = NULL;
    if (user == NULL || *user == '\0' || strlen(user) > MAX_USER_LEN)
        return sx_err_set(err, SX_EINVAL, "the user must be 1 to %d bytes", MAX_USER_LEN);
    const char *problem = sx_jwt_subject_problem(user, MAX_USER_LEN);
    if (problem != NULL) {
        /* "token subject is reserved" as "the user is reserved": it is not a token yet. */
        static const char prefix[] = "token subject ";
        if (strncmp(problem, prefix, sizeof(prefix) - 1) == 0)
            return sx_err_set(err, SX_EINVAL, "the user %s", problem + sizeof(prefix) - 1);
        return sx_err_set(err, SX_EINVAL, "%s", problem);
    }
    if (role == NULL || *role == '\0' || strlen(role) > MAX_ROLE_LEN)
        return sx_err_set(err, SX_EINVAL, "the role must be 1 to %d bytes", MAX_ROLE_LEN);
    json_t *claims = json_pack("{s:s,s:s}", "sub", user, "role", role);
    int rc = token_keys_sign(cfg, claims, ttl_seconds, token, err);
    json_decref(claims);
    return rc;
}
