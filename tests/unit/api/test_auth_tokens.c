/*
 * test_auth_tokens.c — the strict token policy of the JWT core (server/base/jwt.c) as
 * the REST API's verifier (api/auth.c) applies it: the maximum lifetime, measured from
 * "iat" or, without one, from now; a "crit" header; a subject with control or
 * bidirectional characters, or one of the reserved actors; a revoked token; and that
 * `sextant token`'s minting stays within the maximum.
 *
 * Tokens are signed here with libjwt and an HS256 secret, so headers and claims can be
 * anything a client could send.
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

#include <jansson.h>
#include <jwt.h>

#include "tests/lib/testlib.h"

#include "api/auth.h"
#include "server/base/arena.h"
#include "server/base/jwt.h"
#include "server/base/mem.h"
#include "server/config.h"

#define SECRET "0123456789abcdef0123456789abcdef-test-secret"

static int64_t now;

/* A configuration through the real loader with the HS256 secret and extra settings
 * (NULL-terminated, NULL allowed). */
static sextant_config *load_cfg(const char *extra)
{
    char *envv[] = {"SEXTANT_DATABASE_URL=postgresql:///unused",
                    "SEXTANT_AUTH_HS256_SECRET=" SECRET, (char *)extra, NULL};
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    int rc = config_load(NULL, envv, &cfg, &errs);
    for (size_t i = 0; i < errs.count; i++)
        print_message("config: %s: %s\n", errs.items[i].path, errs.items[i].message);
    sx_fielderrs_free(&errs);
    assert_int_equal(rc, 0);
    return cfg;
}

/* Signs claims (JSON text) with HS256, with the extra header members (JSON object text,
 * NULL: none). Caller frees with free. */
static char *sign(const char *claims, const char *headers)
{
    jwt_t *j = NULL;
    assert_int_equal(jwt_new(&j), 0);
    assert_int_equal(jwt_add_grants_json(j, claims), 0);
    if (headers)
        assert_int_equal(jwt_add_headers_json(j, headers), 0);
    assert_int_equal(
        jwt_set_alg(j, JWT_ALG_HS256, (const unsigned char *)SECRET, (int)strlen(SECRET)), 0);
    char *t = jwt_encode_str(j);
    jwt_free(j);
    assert_non_null(t);
    return t;
}

/* Verifies token with cfg (and revoked, when not NULL); "" when accepted, else the
 * reason, in a static buffer. */
static const char *verdict(const sextant_config *cfg, const char *token, sx_jwt_revoked_fn revoked,
                           void *ctx)
{
    static char reason[256];
    auth_verifier *v = auth_verifier_create(cfg);
    if (revoked)
        auth_verifier_set_revoked(v, revoked, ctx);
    sx_arena *a = sx_arena_create();
    auth_identity id;
    sx_err err;
    sx_err_clear(&err);
    int rc = auth_verify_token(v, token, now, a, &id, &err);
    if (rc != 0)
        assert_int_equal(rc, SX_EUNAUTH);
    snprintf(reason, sizeof(reason), "%s", rc == 0 ? "" : err.message);
    sx_arena_destroy(a);
    auth_verifier_destroy(v);
    return reason;
}

/* The verdict on a token of claims and headers, signed here. */
static const char *verdict_of(const sextant_config *cfg, const char *claims, const char *headers)
{
    char *t = sign(claims, headers);
    const char *r = verdict(cfg, t, NULL, NULL);
    free(t);
    return r;
}

static int setup(void **state)
{
    (void)state;
    now = (int64_t)time(NULL);
    return 0;
}

/* ------------------------------------------------------------------ lifetime */

TL_TEST(test_lifetime_from_iat)
{
    sextant_config *cfg = load_cfg(NULL); /* the default maximum: 24 h */
    assert_int_equal(cfg->auth.max_token_lifetime_ms, 24LL * 3600 * 1000);
    char c[256];
    /* Exactly the maximum from iat is accepted, a second more is not, wherever now is
     * within the token's life. */
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
             (long long)(now - 3600), (long long)(now - 3600 + 86400));
    assert_string_equal(verdict_of(cfg, c, NULL), "");
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
             (long long)(now - 3600), (long long)(now - 3600 + 86401));
    assert_string_equal(verdict_of(cfg, c, NULL), "token lifetime exceeds the maximum");
    /* A token valid until year 9999. */
    snprintf(c, sizeof(c),
             "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":253402300799}",
             (long long)now);
    assert_string_equal(verdict_of(cfg, c, NULL), "token lifetime exceeds the maximum");
    /* iat cannot be set in the future to look short-lived: beyond the skew it is refused. */
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
             (long long)(now + 3600), (long long)(now + 7200));
    assert_string_equal(verdict_of(cfg, c, NULL), "token issued in the future");
    snprintf(c, sizeof(c),
             "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":\"yesterday\",\"exp\":%lld}",
             (long long)(now + 60));
    assert_string_equal(verdict_of(cfg, c, NULL), "malformed token");
    config_free(cfg);

    /* A shorter configured maximum. */
    cfg = load_cfg("SEXTANT_AUTH_MAX_TOKEN_LIFETIME=15m");
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
             (long long)now, (long long)(now + 900));
    assert_string_equal(verdict_of(cfg, c, NULL), "");
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
             (long long)now, (long long)(now + 901));
    assert_string_equal(verdict_of(cfg, c, NULL), "token lifetime exceeds the maximum");
    config_free(cfg);
}

TL_TEST(test_lifetime_without_iat)
{
    /* Without iat the remaining life counts, with the clock skew (60 s by default). */
    sextant_config *cfg = load_cfg("SEXTANT_AUTH_MAX_TOKEN_LIFETIME=1h");
    char c[256];
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"exp\":%lld}",
             (long long)(now + 3600 + 60));
    assert_string_equal(verdict_of(cfg, c, NULL), "");
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"exp\":%lld}",
             (long long)(now + 3600 + 61));
    assert_string_equal(verdict_of(cfg, c, NULL), "token lifetime exceeds the maximum");
    assert_string_equal(
        verdict_of(cfg, "{\"sub\":\"alice\",\"role\":\"viewer\",\"exp\":9999999999}", NULL),
        "token lifetime exceeds the maximum");
    config_free(cfg);
}

/* ------------------------------------------------------------------ crit */

TL_TEST(test_crit_header)
{
    sextant_config *cfg = load_cfg(NULL);
    char c[256];
    snprintf(c, sizeof(c), "{\"sub\":\"alice\",\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
             (long long)now, (long long)(now + 600));
    assert_string_equal(verdict_of(cfg, c, NULL), "");
    /* An extension this server does not know, a registered name listed as critical, and
     * a malformed crit: all refused. */
    assert_string_equal(verdict_of(cfg, c,
                                   "{\"crit\":[\"http://example.com/ext\"],"
                                   "\"http://example.com/ext\":true}"),
                        "unsupported critical header");
    assert_string_equal(verdict_of(cfg, c, "{\"crit\":[\"exp\"]}"), "unsupported critical header");
    assert_string_equal(verdict_of(cfg, c, "{\"crit\":[]}"), "unsupported critical header");
    assert_string_equal(verdict_of(cfg, c, "{\"crit\":\"b64\"}"), "unsupported critical header");
    /* Other unknown header members are not critical. */
    assert_string_equal(verdict_of(cfg, c, "{\"kid\":\"k1\",\"x-extra\":1}"), "");
    config_free(cfg);
}

/* ------------------------------------------------------------------ subject */

TL_TEST(test_subject_characters)
{
    sextant_config *cfg = load_cfg(NULL);
    static const struct {
        const char *sub_json; /* the claim as JSON text */
        const char *reason;   /* "" when accepted */
    } cases[] = {
        {"\"alice@example.com\"", ""},
        {"\"Zoë Çelik\"", ""},
        {"\"\xe5\xb1\xb1\xe7\x94\xb0\"", ""}, /* CJK letters */
        {"\"ali\\nce\"", "token subject contains control characters"},
        {"\"ali\\u001bce\"", "token subject contains control characters"}, /* ESC */
        {"\"ali\\u007fce\"", "token subject contains control characters"},
        {"\"ali\\u0085ce\"", "token subject contains control characters"}, /* C1 NEL */
        {"\"admin\\u202e\"", "token subject contains bidirectional control characters"},
        {"\"\\u2066alice\\u2069\"", "token subject contains bidirectional control characters"},
        {"\"al\\u200fice\"", "token subject contains bidirectional control characters"},
        {"\"al\\u061cice\"", "token subject contains bidirectional control characters"},
        {"\"al\\u2028ice\"", "token subject contains bidirectional control characters"},
        {"\"\"", "token has no subject"},
        {"7", "token has no subject"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *c = sx_asprintf("{\"sub\":%s,\"role\":\"viewer\",\"iat\":%lld,\"exp\":%lld}",
                              cases[i].sub_json, (long long)now, (long long)(now + 600));
        const char *got = verdict_of(cfg, c, NULL);
        if (strcmp(got, cases[i].reason) != 0)
            print_message("sub %s: got \"%s\", wanted \"%s\"\n", cases[i].sub_json, got,
                          cases[i].reason);
        assert_string_equal(got, cases[i].reason);
        sx_free(c);
    }
    config_free(cfg);
}

TL_TEST(test_reserved_subjects)
{
    sextant_config *cfg = load_cfg(NULL);
    static const struct {
        const char *sub;
        bool reserved;
    } subjects[] = {
        {"anonymous", true},
        {"kubernetes", true},
        {"system:admin", true},
        {"system:", true},
        {"system:serviceaccount:x:y", true},
        {"anonymous2", false},
        {"Kubernetes-bot", false},
        {"systems:x", false},
        {"my-system:x", false},
    };
    char *token = NULL;
    sx_err err;
    for (size_t i = 0; i < sizeof(subjects) / sizeof(subjects[0]); i++) {
        char *c = sx_asprintf("{\"sub\":\"%s\",\"role\":\"admin\",\"iat\":%lld,\"exp\":%lld}",
                              subjects[i].sub, (long long)now, (long long)(now + 600));
        assert_string_equal(verdict_of(cfg, c, NULL),
                            subjects[i].reserved ? "token subject is reserved" : "");
        sx_free(c);
        if (!subjects[i].reserved)
            continue;
        /* And sextant token will not mint one. */
        sx_err_clear(&err);
        assert_int_equal(auth_mint(cfg, subjects[i].sub, "admin", 60, &token, &err), SX_EINVAL);
        assert_null(token);
        assert_string_equal(err.message, "the user is reserved");
    }
    sx_err_clear(&err);
    assert_int_equal(auth_mint(cfg, "eve\xe2\x80\xae", "admin", 60, &token, &err), SX_EINVAL);
    assert_string_equal(err.message, "the user contains bidirectional control characters");
    config_free(cfg);
}

/* ------------------------------------------------------------------ revocation */

/* A revocation list of one jti and one (subject, time), as server/revocations.c keeps. */
typedef struct fake_list {
    const char *jti;
    const char *sub;
    int64_t before;
    int calls;
} fake_list;

static bool fake_revoked(void *ctx, const char *jti, const char *sub, int64_t iat)
{
    fake_list *l = ctx;
    l->calls++;
    if (jti && strcmp(jti, l->jti) == 0)
        return true;
    return sub && strcmp(sub, l->sub) == 0 && (iat < 0 || iat <= l->before);
}

TL_TEST(test_revoked_hook)
{
    sextant_config *cfg = load_cfg(NULL);
    fake_list l = {.jti = "j-revoked", .sub = "bob", .before = now - 100};
    struct {
        const char *jti, *sub;
        int64_t iat_off; /* 1: no iat */
        const char *reason;
    } cases[] = {
        {"j-revoked", "alice", 0, "token revoked"},
        {"j-other", "alice", 0, ""},
        {"j-other", "bob", -200, "token revoked"}, /* issued before the cut */
        {"j-other", "bob", -100, "token revoked"}, /* at it */
        {"j-other", "bob", -50, ""},               /* after it */
        {"j-other", "bob", 1, "token revoked"},    /* no iat: counts as before */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char iat[64] = "";
        if (cases[i].iat_off != 1)
            snprintf(iat, sizeof(iat), ",\"iat\":%lld", (long long)(now + cases[i].iat_off));
        char *c = sx_asprintf("{\"sub\":\"%s\",\"role\":\"viewer\",\"jti\":\"%s\",\"exp\":%lld%s}",
                              cases[i].sub, cases[i].jti, (long long)(now + 600), iat);
        char *t = sign(c, NULL);
        assert_string_equal(verdict(cfg, t, fake_revoked, &l), cases[i].reason);
        free(t);
        sx_free(c);
    }
    assert_int_equal(l.calls, 6);
    /* A token refused for another reason never reaches the list. */
    char *t = sign("{\"sub\":\"bob\",\"role\":\"viewer\",\"exp\":1}", NULL);
    assert_string_equal(verdict(cfg, t, fake_revoked, &l), "token expired");
    assert_int_equal(l.calls, 6);
    free(t);
    config_free(cfg);
}

/* ------------------------------------------------------------------ minting */

TL_TEST(test_minted_tokens_pass)
{
    sextant_config *cfg = load_cfg("SEXTANT_AUTH_MAX_TOKEN_LIFETIME=2h");
    char *token = NULL;
    sx_err err;
    sx_err_clear(&err);
    /* Up to the maximum: minted with jti and iat, and accepted. */
    assert_int_equal(auth_mint(cfg, "alice", "viewer", 7200, &token, &err), 0);
    assert_string_equal(verdict(cfg, token, NULL, NULL), "");
    jwt_t *j = NULL;
    assert_int_equal(jwt_decode(&j, token, NULL, 0), 0);
    assert_int_equal(strlen(jwt_get_grant(j, "jti")), 32);
    long iat = jwt_get_grant_int(j, "iat");
    assert_true(iat >= now && iat <= now + 5);
    assert_int_equal(jwt_get_grant_int(j, "exp") - iat, 7200);
    jwt_free(j);
    sx_free(token);
    /* Beyond it: refused with the setting named. */
    assert_int_equal(auth_mint(cfg, "alice", "viewer", 7201, &token, &err), SX_EINVAL);
    assert_null(token);
    assert_non_null(strstr(err.message, "auth.max_token_lifetime"));
    config_free(cfg);
}

TL_MAIN_GROUP(setup, NULL)
