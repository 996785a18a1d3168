/*
 * test_auth.c — JWT verification and minting (api/auth.c) and the RBAC policy
 * (api/policy.c).
 *
 * Tokens are made here with libjwt directly (or by hand, for the ones libjwt refuses to
 * make), signed with an HS256 secret and an RSA key pair generated for the run. Every
 * refusal is checked for its reason, since the reason is what an operator reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "tests/lib/testlib.h"

#include "api/auth.h"
#include "api/policy.h"
#include "server/base/arena.h"
#include "server/base/mem.h"
#include "server/config.h"

#define SECRET       "0123456789abcdef0123456789abcdef-test-secret"
#define OTHER_SECRET "fedcba9876543210fedcba9876543210-other-secret"
#define ISSUER       "https://issuer.example"
#define AUDIENCE     "sextant"

static char dir[TL_DIR_MAX], pub_path[TL_PATH_MAX], priv_path[TL_PATH_MAX],
    other_priv_path[TL_PATH_MAX], policy_path[TL_PATH_MAX];
static char *pub_pem, *priv_pem, *other_priv_pem;
static int64_t now;

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = sx_calloc(1, 16384);
    size_t n = fread(buf, 1, 16383, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int write_key_pair(const char *pub, const char *priv)
{
    EVP_PKEY *pk = EVP_RSA_gen(2048);
    if (pk == NULL)
        return -1;
    FILE *f = pub ? fopen(pub, "w") : NULL;
    if (pub && (f == NULL || !PEM_write_PUBKEY(f, pk)))
        return -1;
    if (f)
        fclose(f);
    f = fopen(priv, "w");
    if (f == NULL || !PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL))
        return -1;
    fclose(f);
    EVP_PKEY_free(pk);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    char *const paths[] = {pub_path, priv_path, other_priv_path, policy_path};
    const char *const files[] = {"rsa.pub.pem", "rsa.key.pem", "other.key.pem", "rbac.yaml"};
    if (tl_tmpdir(dir, "auth", paths, files, 4) != 0)
        return -1;
    if (write_key_pair(pub_path, priv_path) != 0 || write_key_pair(NULL, other_priv_path) != 0)
        return -1;
    pub_pem = read_all(pub_path);
    priv_pem = read_all(priv_path);
    other_priv_pem = read_all(other_priv_path);
    now = (int64_t)time(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tl_rmdir(dir);
    sx_free(pub_pem);
    sx_free(priv_pem);
    sx_free(other_priv_pem);
    return 0;
}

/* Both algorithms, issuer and audience checked, 60 s of clock skew (the default). */
static sextant_config *full_cfg(void)
{
    char pub[200], priv[200];
    snprintf(pub, sizeof(pub), "SEXTANT_AUTH_RS256_PUBLIC_KEY_FILE=%s", pub_path);
    snprintf(priv, sizeof(priv), "SEXTANT_AUTH_RS256_PRIVATE_KEY_FILE=%s", priv_path);
    const char *extra[] = {
        "SEXTANT_AUTH_HS256_SECRET=" SECRET, pub, priv, "SEXTANT_AUTH_ISSUER=" ISSUER,
        "SEXTANT_AUTH_AUDIENCE=" AUDIENCE,   NULL};
    return tl_env_config(extra);
}

static sextant_config *hs_only_cfg(void)
{
    const char *extra[] = {"SEXTANT_AUTH_HS256_SECRET=" SECRET, NULL};
    return tl_env_config(extra);
}

static sextant_config *rs_only_cfg(void)
{
    char pub[200];
    snprintf(pub, sizeof(pub), "SEXTANT_AUTH_RS256_PUBLIC_KEY_FILE=%s", pub_path);
    const char *extra[] = {pub, NULL};
    return tl_env_config(extra);
}

/* Signs claims (JSON text) with libjwt. Caller frees with free. */
static char *sign(jwt_alg_t alg, const char *key, const char *claims)
{
    jwt_t *j = NULL;
    assert_int_equal(jwt_new(&j), 0);
    assert_int_equal(jwt_add_grants_json(j, claims), 0);
    assert_int_equal(jwt_set_alg(j, alg, (const unsigned char *)key, (int)strlen(key)), 0);
    char *t = jwt_encode_str(j);
    jwt_free(j);
    assert_non_null(t);
    return t;
}

static char *b64url(const char *s)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(s), j = 0;
    char *out = sx_malloc(n * 4 / 3 + 4);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        out[j++] = tbl[(v >> 18) & 63];
        out[j++] = tbl[(v >> 12) & 63];
        if (i + 1 < n)
            out[j++] = tbl[(v >> 6) & 63];
        if (i + 2 < n)
            out[j++] = tbl[v & 63];
    }
    out[j] = '\0';
    return out;
}

/* header.payload.sig from raw JSON texts, for tokens libjwt would not make. */
static char *raw_token(const char *header, const char *payload, const char *sig)
{
    char *h = b64url(header), *p = b64url(payload);
    char *t = sx_asprintf("%s.%s.%s", h, p, sig);
    sx_free(h);
    sx_free(p);
    return t;
}

/* Good claims with exp/nbf offsets from now, and optional overrides (JSON members). */
static char *claims(int64_t exp_off, const char *more)
{
    return sx_asprintf("{\"sub\":\"alice\",\"role\":\"operator\",\"iss\":\"" ISSUER
                       "\",\"aud\":\"" AUDIENCE "\",\"iat\":%lld,\"exp\":%lld%s%s}",
                       (long long)now, (long long)(now + exp_off), more ? "," : "",
                       more ? more : "");
}

/* Verifies "Bearer <token>" and returns the code; *reason gets the message. */
static int verify(const sextant_config *cfg, const char *token, char *reason, size_t n,
                  auth_identity *id_out)
{
    auth_verifier *v = auth_verifier_create(cfg);
    sx_arena *a = sx_arena_create();
    char *header = sx_asprintf("Bearer %s", token);
    auth_identity id;
    sx_err err;
    sx_err_clear(&err);
    int rc = auth_verify(v, header, now, a, &id, &err);
    snprintf(reason, n, "%s", rc == 0 ? "" : err.message);
    if (rc == 0 && id_out) {
        /* Copied out of the arena for the caller's assertions. */
        static char user[64], role[64];
        snprintf(user, sizeof(user), "%s", id.user);
        snprintf(role, sizeof(role), "%s", id.role);
        id_out->user = user;
        id_out->role = role;
        id_out->expires = id.expires;
    }
    sx_free(header);
    sx_arena_destroy(a);
    auth_verifier_destroy(v);
    return rc;
}

static void expect_refused(const sextant_config *cfg, const char *token, const char *reason)
{
    char got[256];
    int rc = verify(cfg, token, got, sizeof(got), NULL);
    if (rc != SX_EUNAUTH || strcmp(got, reason) != 0)
        print_message("token %.60s...: rc %d, reason \"%s\", wanted \"%s\"\n", token, rc, got,
                      reason);
    assert_int_equal(rc, SX_EUNAUTH);
    assert_string_equal(got, reason);
}

static void expect_accepted(const sextant_config *cfg, const char *token)
{
    char got[256];
    int rc = verify(cfg, token, got, sizeof(got), NULL);
    if (rc != 0)
        print_message("token refused: %s\n", got);
    assert_int_equal(rc, 0);
}

/* Signs claims(exp_off, more) with HS256 and SECRET; cfg refuses the token with reason, or
 * accepts it when reason is NULL. */
static void expect_hs256(const sextant_config *cfg, int64_t exp_off, const char *more,
                         const char *reason)
{
    char *c = claims(exp_off, more);
    char *t = sign(JWT_ALG_HS256, SECRET, c);
    if (reason != NULL)
        expect_refused(cfg, t, reason);
    else
        expect_accepted(cfg, t);
    free(t);
    sx_free(c);
}

/* ------------------------------------------------------------------ accepted */

TL_TEST(test_hs256_and_rs256_accepted)
{
    sextant_config *cfg = full_cfg();
    char *c = claims(600, NULL);
    char *hs = sign(JWT_ALG_HS256, SECRET, c);
    char *rs = sign(JWT_ALG_RS256, priv_pem, c);
    auth_identity id;
    char reason[256];
    assert_int_equal(verify(cfg, hs, reason, sizeof(reason), &id), 0);
    assert_string_equal(id.user, "alice");
    assert_string_equal(id.role, "operator");
    assert_int_equal(id.expires, now + 600);
    assert_int_equal(verify(cfg, rs, reason, sizeof(reason), &id), 0);
    assert_string_equal(id.user, "alice");
    /* An audience array naming us is accepted too. */
    char *c2 = sx_asprintf("{\"sub\":\"bob\",\"role\":\"viewer\",\"iss\":\"" ISSUER
                           "\",\"aud\":[\"other\",\"" AUDIENCE "\"],\"exp\":%lld}",
                           (long long)(now + 60));
    char *t2 = sign(JWT_ALG_HS256, SECRET, c2);
    expect_accepted(cfg, t2);
    /* Scheme case and surrounding spaces do not matter. */
    auth_verifier *v = auth_verifier_create(cfg);
    sx_arena *a = sx_arena_create();
    char *h = sx_asprintf("  bearer   %s  ", hs);
    sx_err err;
    assert_int_equal(auth_verify(v, h, now, a, &id, &err), 0);
    sx_free(h);
    sx_arena_destroy(a);
    auth_verifier_destroy(v);
    free(hs);
    free(rs);
    free(t2);
    sx_free(c);
    sx_free(c2);
    config_free(cfg);
}

/* ------------------------------------------------------------------ refused */

TL_TEST(test_time_claims)
{
    sextant_config *cfg = full_cfg();
    struct {
        int64_t exp_off;
        const char *more;
        const char *reason; /* NULL: accepted */
    } cases[] = {
        {-3600, NULL, "token expired"},
        {-61, NULL, "token expired"},
        {-59, NULL, NULL}, /* within the 60 s of skew */
        {600, "\"nbf\":0", NULL},
        {600, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_hs256(cfg, cases[i].exp_off, cases[i].more, cases[i].reason);
    /* nbf in the future, beyond and within the skew. */
    char more[64];
    snprintf(more, sizeof(more), "\"nbf\":%lld", (long long)(now + 120));
    expect_hs256(cfg, 600, more, "token not yet valid");
    snprintf(more, sizeof(more), "\"nbf\":%lld", (long long)(now + 30));
    expect_hs256(cfg, 600, more, NULL);
    /* exp is required, and must be a number. */
    char *t = sign(JWT_ALG_HS256, SECRET,
                   "{\"sub\":\"alice\",\"role\":\"viewer\",\"iss\":\"" ISSUER
                   "\",\"aud\":\"" AUDIENCE "\"}");
    expect_refused(cfg, t, "token has no expiry");
    free(t);
    t = sign(JWT_ALG_HS256, SECRET,
             "{\"sub\":\"alice\",\"role\":\"viewer\",\"exp\":\"tomorrow\",\"iss\":\"" ISSUER
             "\",\"aud\":\"" AUDIENCE "\"}");
    expect_refused(cfg, t, "token has no expiry");
    free(t);
    config_free(cfg);

    /* Without skew, a token a second past its exp is refused. */
    const char *extra[] = {"SEXTANT_AUTH_HS256_SECRET=" SECRET, "SEXTANT_AUTH_CLOCK_SKEW=0", NULL};
    cfg = tl_env_config(extra);
    expect_hs256(cfg, -1, NULL, "token expired");
    expect_hs256(cfg, 1, NULL, NULL);
    config_free(cfg);
}

TL_TEST(test_issuer_audience_subject_role)
{
    sextant_config *cfg = full_cfg();
    struct {
        const char *claims_fmt; /* one %lld: exp */
        const char *reason;
    } cases[] = {
        {"{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"https://evil.example\",\"aud\":\"" AUDIENCE
         "\",\"exp\":%lld}",
         "wrong issuer"},
        {"{\"sub\":\"a\",\"role\":\"viewer\",\"aud\":\"" AUDIENCE "\",\"exp\":%lld}",
         "wrong issuer"},
        {"{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"" ISSUER "\",\"aud\":\"other\","
         "\"exp\":%lld}",
         "wrong audience"},
        {"{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"" ISSUER "\",\"aud\":[\"x\",\"y\"],"
         "\"exp\":%lld}",
         "wrong audience"},
        {"{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"" ISSUER "\",\"exp\":%lld}",
         "wrong audience"},
        {"{\"role\":\"viewer\",\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"exp\":%lld}",
         "token has no subject"},
        {"{\"sub\":\"\",\"role\":\"viewer\",\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE
         "\",\"exp\":%lld}",
         "token has no subject"},
        {"{\"sub\":\"a\",\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"exp\":%lld}",
         "token has no role"},
        {"{\"sub\":\"a\",\"role\":7,\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"exp\":%lld}",
         "token has no role"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *c = sx_asprintf(cases[i].claims_fmt, (long long)(now + 600));
        char *t = sign(JWT_ALG_HS256, SECRET, c);
        expect_refused(cfg, t, cases[i].reason);
        free(t);
        sx_free(c);
    }
    config_free(cfg);
    /* Without auth.issuer and auth.audience, neither claim is looked at. */
    cfg = hs_only_cfg();
    char *c = sx_asprintf("{\"sub\":\"a\",\"role\":\"viewer\",\"iss\":\"whoever\",\"exp\":%lld}",
                          (long long)(now + 600));
    char *t = sign(JWT_ALG_HS256, SECRET, c);
    expect_accepted(cfg, t);
    free(t);
    sx_free(c);
    config_free(cfg);
}

TL_TEST(test_signatures_and_algorithms)
{
    sextant_config *full = full_cfg(), *hs = hs_only_cfg(), *rs = rs_only_cfg();
    char *c = claims(600, NULL);

    /* Bad signatures: another secret, another RSA key, a payload swapped under a valid
     * signature. */
    char *t = sign(JWT_ALG_HS256, OTHER_SECRET, c);
    expect_refused(full, t, "bad signature");
    free(t);
    t = sign(JWT_ALG_RS256, other_priv_pem, c);
    expect_refused(full, t, "bad signature");
    free(t);
    t = sign(JWT_ALG_HS256, SECRET, c);
    char *forged = sx_asprintf("{\"sub\":\"alice\",\"role\":\"admin\",\"iss\":\"" ISSUER
                               "\",\"aud\":\"" AUDIENCE "\",\"exp\":%lld}",
                               (long long)(now + 600));
    char *fp = b64url(forged);
    char *dot1 = strchr(t, '.'), *dot2 = strchr(dot1 + 1, '.');
    *dot1 = '\0';
    char *swapped = sx_asprintf("%s.%s%s", t, fp, dot2);
    expect_refused(full, swapped, "bad signature");
    free(t);
    sx_free(fp);
    sx_free(forged);
    sx_free(swapped);

    /* alg none, with and without a signature part, even with keys configured. */
    char *none = raw_token("{\"alg\":\"none\",\"typ\":\"JWT\"}", c, "");
    expect_refused(full, none, "unsigned tokens are not accepted");
    expect_refused(hs, none, "unsigned tokens are not accepted");
    sx_free(none);
    none = raw_token("{\"alg\":\"None\"}", c, "c2ln");
    expect_refused(full, none, "unsigned tokens are not accepted");
    sx_free(none);
    /* An HS256 header with an empty signature is unsigned too. */
    none = raw_token("{\"alg\":\"HS256\"}", c, "");
    expect_refused(full, none, "unsigned tokens are not accepted");
    sx_free(none);

    /* Algorithms that are not configured. */
    t = sign(JWT_ALG_RS256, priv_pem, c);
    expect_refused(hs, t, "token algorithm RS256 is not accepted");
    expect_accepted(rs, t);
    free(t);
    t = sign(JWT_ALG_HS512, SECRET, c);
    expect_refused(full, t, "token algorithm HS512 is not accepted");
    free(t);
    /* An algorithm name that is not a plain token is not echoed back. */
    none = raw_token("{\"alg\":\"HS256\\r\\nX-Evil: 1\"}", c, "c2ln");
    expect_refused(full, none, "token algorithm is not accepted");
    sx_free(none);
    /* Algorithm confusion: HS256 "signed" with the RSA public key as the secret. */
    t = sign(JWT_ALG_HS256, pub_pem, c);
    expect_refused(rs, t, "token algorithm HS256 is not accepted");
    expect_refused(full, t, "bad signature");
    free(t);

    sx_free(c);
    config_free(full);
    config_free(hs);
    config_free(rs);
}

TL_TEST(test_missing_and_garbled)
{
    sextant_config *cfg = full_cfg();
    auth_verifier *v = auth_verifier_create(cfg);
    sx_arena *a = sx_arena_create();
    auth_identity id;
    char *big = sx_calloc(1, AUTH_MAX_TOKEN + 64);
    memset(big, 'a', AUTH_MAX_TOKEN + 10);
    big[10] = '.';
    big[20] = '.';
    char *big_header = sx_asprintf("Bearer %s", big);
    struct {
        const char *header;
        const char *reason;
    } cases[] = {
        {NULL, "missing bearer token"},
        {"", "missing bearer token"},
        {"   ", "missing bearer token"},
        {"Bearer", "missing bearer token"},
        {"Bearer    ", "missing bearer token"},
        {"Basic YWxpY2U6cHc=", "malformed authorization header"},
        {"Bearertoken", "malformed authorization header"},
        {"Bearer a b", "malformed authorization header"},
        {"Bearer abc", "malformed token"},
        {"Bearer a.b", "malformed token"},
        {"Bearer a.b.c.d", "malformed token"},
        {"Bearer .b.c", "malformed token"},
        {"Bearer !!!.e30.c2ln", "malformed token"},
        {"Bearer e30.e30.c2ln", "malformed token"},  /* {} header: no alg */
        {"Bearer WzFd.e30.c2ln", "malformed token"}, /* [1] header: not an object */
        {"Bearer eyJhbGciOiJIUzI1NiJ9.bm9wZQ.c2ln", "malformed token"}, /* payload "nope" */
        {big_header, "malformed token"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sx_err err;
        sx_err_clear(&err);
        int rc = auth_verify(v, cases[i].header, now, a, &id, &err);
        if (rc != SX_EUNAUTH || strcmp(err.message, cases[i].reason) != 0)
            print_message("case %zu: rc %d \"%s\", wanted \"%s\"\n", i, rc, err.message,
                          cases[i].reason);
        assert_int_equal(rc, SX_EUNAUTH);
        assert_string_equal(err.message, cases[i].reason);
    }
    sx_free(big);
    sx_free(big_header);
    sx_arena_destroy(a);
    auth_verifier_destroy(v);
    config_free(cfg);

    /* No key configured at all: every signed token is refused, saying why. */
    cfg = tl_env_config(NULL);
    v = auth_verifier_create(cfg);
    assert_false(auth_has_keys(v));
    auth_verifier_destroy(v);
    expect_hs256(cfg, 600, NULL, "no token verification key is configured");
    config_free(cfg);
}

/* ------------------------------------------------------------------ minting */

TL_TEST(test_mint)
{
    /* RS256 when a private key is configured, and the server accepts it. */
    sextant_config *cfg = full_cfg();
    char *token = NULL;
    sx_err err;
    assert_int_equal(auth_mint(cfg, "root@example.com", "admin", 3600, &token, &err), 0);
    auth_identity id;
    char reason[256];
    assert_int_equal(verify(cfg, token, reason, sizeof(reason), &id), 0);
    assert_string_equal(id.user, "root@example.com");
    assert_string_equal(id.role, "admin");
    assert_true(id.expires >= now + 3600 && id.expires <= now + 3700);
    {
        jwt_t *j = NULL;
        assert_int_equal(jwt_decode(&j, token, NULL, 0), 0);
        assert_string_equal(jwt_get_header(j, "alg"), "RS256");
        assert_string_equal(jwt_get_grant(j, "iss"), ISSUER);
        assert_string_equal(jwt_get_grant(j, "aud"), AUDIENCE);
        assert_int_equal(strlen(jwt_get_grant(j, "jti")), 32);
        jwt_free(j);
    }
    sx_free(token);
    config_free(cfg);

    /* HS256 with the secret alone. */
    cfg = hs_only_cfg();
    assert_int_equal(auth_mint(cfg, "ops", "operator", 60, &token, &err), 0);
    expect_accepted(cfg, token);
    {
        jwt_t *j = NULL;
        assert_int_equal(jwt_decode(&j, token, NULL, 0), 0);
        assert_string_equal(jwt_get_header(j, "alg"), "HS256");
        assert_null(jwt_get_grant(j, "iss"));
        jwt_free(j);
    }
    sx_free(token);
    /* Bad input. */
    assert_int_equal(auth_mint(cfg, "", "viewer", 60, &token, &err), SX_EINVAL);
    assert_null(token);
    assert_int_equal(auth_mint(cfg, "bob", "", 60, &token, &err), SX_EINVAL);
    assert_int_equal(auth_mint(cfg, "bob", "viewer", 0, &token, &err), SX_EINVAL);
    assert_int_equal(auth_mint(cfg, "bo\nb", "viewer", 60, &token, &err), SX_EINVAL);
    config_free(cfg);

    /* No signing key: a clear error, not a token. */
    cfg = rs_only_cfg();
    assert_int_equal(auth_mint(cfg, "bob", "viewer", 60, &token, &err), SX_EINVAL);
    assert_null(token);
    assert_string_equal(err.message, "no signing key is configured");
    config_free(cfg);
}

/* ------------------------------------------------------------------ policy */

static const char *const resources[] = {"configs",     "snapshots", "proxies", "groups",
                                        "deployments", "audit",     "auth"};
static const char *const actions[] = {"read",  "create",   "update", "delete", "rollback",
                                      "apply", "validate", "pause",  "cancel"};

/* What the built-in policy grants, besides admin's everything: "resource.action". */
static const char *const operator_grants[] = {
    "configs.create",       "configs.update",     "configs.delete",       "configs.rollback",
    "configs.apply",        "configs.validate",   "groups.rollback",      "deployments.create",
    "deployments.update",   "deployments.delete", "deployments.rollback", "deployments.apply",
    "deployments.validate", "deployments.pause",  "deployments.cancel",   NULL};
/* And a group's settings (its data planes). */
static const char *const operator_setting_grants[] = {"groups.update", NULL};

static bool granted(const char *role, const char *res, const char *act)
{
    if (strcmp(role, "admin") == 0 || strcmp(act, "read") == 0)
        return true;
    if (strcmp(role, "operator") != 0)
        return false;
    char key[64];
    snprintf(key, sizeof(key), "%s.%s", res, act);
    for (size_t i = 0; operator_grants[i]; i++)
        if (strcmp(operator_grants[i], key) == 0)
            return true;
    for (size_t i = 0; operator_setting_grants[i]; i++)
        if (strcmp(operator_setting_grants[i], key) == 0)
            return true;
    return false;
}

TL_TEST(test_builtin_policy_table)
{
    policy *p = policy_builtin();
    const char *roles[] = {"admin", "operator", "viewer"};
    int failures = 0;
    for (size_t r = 0; r < 3; r++)
        for (size_t i = 0; i < sizeof(resources) / sizeof(resources[0]); i++)
            for (size_t k = 0; k < sizeof(actions) / sizeof(actions[0]); k++)
                for (int with_id = 0; with_id < 2; with_id++) {
                    bool want = granted(roles[r], resources[i], actions[k]);
                    bool got = policy_allows(p, roles[r], resources[i], with_id ? "x-1" : NULL,
                                             actions[k]);
                    if (want != got) {
                        print_message("%s %s %s%s: got %d, wanted %d\n", roles[r], actions[k],
                                      resources[i], with_id ? "/x-1" : "", got, want);
                        failures++;
                    }
                }
    assert_int_equal(failures, 0);
    assert_true(policy_has_role(p, "viewer"));
    assert_false(policy_has_role(p, "root"));
    assert_false(policy_allows(p, "root", "configs", NULL, "read"));
    char names[64];
    assert_string_equal(policy_role_names(p, names, sizeof(names)), "admin, operator, viewer");
    policy_free(p);
}

TL_TEST(test_policy_file)
{
    tl_write_file(policy_path, "# a custom policy\n"
                               "roles:\n"
                               "  - name: edge-oncall\n"
                               "    description: rolls back the edge groups only\n"
                               "    permissions:\n"
                               "      - resource: \"groups/edge-*\"\n"
                               "        actions: [rollback, read]\n"
                               "      - resource: \"configs/*\"\n"
                               "        actions: [read]\n"
                               "  - name: auditor\n"
                               "    permissions:\n"
                               "      - resource: audit\n"
                               "        actions: [\"*\"]\n"
                               "  - name: nobody\n"
                               "    permissions: []\n");
    policy *p = NULL;
    sx_err err;
    assert_int_equal(policy_load_file(policy_path, &p, NULL, &err), 0);
    assert_true(policy_allows(p, "edge-oncall", "groups", "edge-eu", "rollback"));
    assert_false(policy_allows(p, "edge-oncall", "groups", "core", "rollback"));
    assert_false(policy_allows(p, "edge-oncall", "groups", NULL, "rollback"));
    assert_false(policy_allows(p, "edge-oncall", "groups", "edge-eu", "delete"));
    assert_true(policy_allows(p, "edge-oncall", "configs", NULL, "read")); /* TYPE/+"*" */
    assert_true(policy_allows(p, "edge-oncall", "configs", "c1", "read"));
    assert_false(policy_allows(p, "edge-oncall", "configs", "c1", "update"));
    assert_true(policy_allows(p, "auditor", "audit", NULL, "read"));
    assert_false(policy_allows(p, "auditor", "configs", NULL, "read"));
    assert_true(policy_has_role(p, "nobody"));
    assert_false(policy_allows(p, "nobody", "auth", NULL, "read"));
    assert_false(policy_has_role(p, "viewer")); /* a file replaces the built-in policy */
    policy_free(p);

    /* The built-in text loads as a file too (the README shows it). */
    tl_write_file(policy_path, policy_builtin_yaml());
    assert_int_equal(policy_load_file(policy_path, &p, NULL, &err), 0);
    assert_true(policy_allows(p, "operator", "deployments", "d", "pause"));
    policy_free(p);

    assert_int_equal(policy_load_file("/nonexistent/rbac.yaml", &p, NULL, &err), SX_EIO);
    assert_null(p);
    assert_non_null(strstr(err.message, "No such file"));
}

TL_TEST(test_bad_policies)
{
    struct {
        const char *yaml;
        const char *where; /* "rbac.yaml:LINE" of one of the errors */
        const char *msg;   /* in that error's message */
    } cases[] = {
        {"", "rbac.yaml:1", "empty"},
        {"roles: [\n", "rbac.yaml:2", "invalid YAML"},
        {"- a\n- b\n", "rbac.yaml:1", "must be a mapping"},
        {"roles:\n  - name: viewer\n    permissions:\n      - resource: \"*\"\n"
         "        actions: [read]\nusers:\n  - email: a@example.com\n",
         "rbac.yaml:6", "users: not supported"},
        {"rolse: []\n", "rbac.yaml:1", "rolse: unknown key"},
        {"roles: []\nroles: []\n", "rbac.yaml:2", "duplicate key"},
        {"roles: {a: b}\n", "rbac.yaml:1", "must be a list of roles"},
        {"roles:\n  - permissions: []\n", "rbac.yaml:2", "roles[0].name: required"},
        {"roles:\n  - name: viewer\n", "rbac.yaml:2", "roles[0].permissions: required"},
        {"roles:\n  - name: Viewer!\n    permissions: []\n", "rbac.yaml:2", "invalid role name"},
        {"roles:\n  - name: a\n    permissions: []\n  - name: a\n    permissions: []\n",
         "rbac.yaml:4", "defined twice"},
        {"roles:\n  - name: a\n    permisions: []\n", "rbac.yaml:3",
         "roles[0].permisions: unknown key"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: configs\n", "rbac.yaml:4",
         "roles[0].permissions[0].actions: required"},
        {"roles:\n  - name: a\n    permissions:\n      - actions: [read]\n", "rbac.yaml:4",
         "roles[0].permissions[0].resource: required"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: configs\n"
         "        actions: read\n",
         "rbac.yaml:5", "must be a list of action names"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: configs\n"
         "        actions: []\n",
         "rbac.yaml:5", "at least one action"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: configs\n"
         "        actions: [read, \"Write It\"]\n",
         "rbac.yaml:5", "actions[1]: invalid action"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: \"a/b/c\"\n"
         "        actions: [read]\n",
         "rbac.yaml:4", "invalid resource pattern"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: \"configs/\"\n"
         "        actions: [read]\n",
         "rbac.yaml:4", "invalid resource pattern"},
        {"roles:\n  - name: a\n    permissions:\n      - resource: [configs]\n"
         "        actions: [read]\n",
         "rbac.yaml:4", "must be a resource pattern"},
        {"roles:\n  - name: a\n    permissions: []\n---\nroles: []\n", "rbac.yaml:5",
         "only one YAML document"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        policy *p = NULL;
        sx_fielderrs errs = {0};
        sx_err err;
        sx_err_clear(&err);
        int rc = policy_parse(cases[i].yaml, strlen(cases[i].yaml), "rbac.yaml", &p, &errs, &err);
        bool found = false;
        for (size_t k = 0; k < errs.count; k++)
            found = found || (strcmp(errs.items[k].path, cases[i].where) == 0 &&
                              strstr(errs.items[k].message, cases[i].msg) != NULL);
        if (rc != SX_EINVAL || p != NULL || !found) {
            print_message("case %zu: rc %d; wanted %s: ...%s...; got:\n", i, rc, cases[i].where,
                          cases[i].msg);
            for (size_t k = 0; k < errs.count; k++)
                print_message("    %s: %s\n", errs.items[k].path, errs.items[k].message);
        }
        assert_int_equal(rc, SX_EINVAL);
        assert_null(p);
        assert_true(found);
        /* The primary message names the file and the line of the first problem. */
        assert_non_null(strstr(err.message, "rbac.yaml:"));
        sx_fielderrs_free(&errs);
    }

    /* Several problems are all reported, each with its own line. */
    const char *many = "roles:\n"                      /* 1 */
                       "  - name: a\n"                 /* 2 */
                       "    permissions:\n"            /* 3 */
                       "      - resource: \"x/y/z\"\n" /* 4 bad pattern */
                       "        actions: [Read]\n"     /* 5 bad action */
                       "  - name: B\n"                 /* 6 bad name */
                       "    permissions: []\n"         /* 7 */
                       "    extra: 1\n";               /* 8 unknown key */
    policy *p = NULL;
    sx_fielderrs errs = {0};
    sx_err err;
    assert_int_equal(policy_parse(many, strlen(many), "rbac.yaml", &p, &errs, &err), SX_EINVAL);
    assert_int_equal(errs.count, 4);
    const char *lines[] = {"rbac.yaml:4", "rbac.yaml:5", "rbac.yaml:6", "rbac.yaml:8"};
    for (size_t i = 0; i < 4; i++) {
        bool found = false;
        for (size_t k = 0; k < errs.count; k++)
            found = found || strcmp(errs.items[k].path, lines[i]) == 0;
        assert_true(found);
    }
    assert_non_null(strstr(err.message, "(and more)"));
    assert_non_null(strstr(err.detail, "4 problems"));
    sx_fielderrs_free(&errs);
}

TL_MAIN_GROUP(setup, teardown)
