/*
 * identity.c — xDS client credentials and the node ids they cover (see identity.h).
 *
 * A call's credentials are read once, when it is accepted: the SANs from the auth
 * context gRPC's TLS handshake filled in (peer_uri and peer_dns, only when the peer is
 * authenticated), the bearer token from the metadata, verified on the spot with the
 * same JWS checks as the REST API's tokens (server/base/jwt.h). The first request then
 * names the node, and xds_ident_check decides. Nothing here blocks or allocates per
 * request.
 */
#include "server/xds/identity.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/glob.h"
#include "server/base/jwt.h"
#include "server/base/mem.h"
#include "server/token_keys.h"

#define MAX_PATTERNS     64
#define MAX_PATTERN_LEN  256
#define MAX_SUBJECT_LEN  256
#define MAX_SANS         32
#define NODE_PLACEHOLDER "{node}"

static const char *const fail_names[XDS_AUTH_FAIL_COUNT] = {
    "ok",
    "missing_credentials",
    "bad_token",
    "node_not_covered",
    "group_not_covered",
    "identity_conflict",
};

const char *xds_auth_fail_name(xds_auth_fail f)
{
    return f >= 0 && f < XDS_AUTH_FAIL_COUNT ? fail_names[f] : "ok";
}

struct xds_ident {
    unsigned modes;
    char **san_patterns; /* xds.mtls.node_id_from, split at commas */
    size_t nsan;
    sx_jwt_keys keys;
};

struct xds_cred {
    char source[64];
    char **sans; /* URI and DNS SANs of an authenticated peer */
    size_t nsans;
    char **identities; /* "x509:<SAN>" per SAN; then "jwt:<sub>" */
    bool has_token;
    bool token_ok;
    char token_error[128];
    char *subject;
    char **nodes, **groups; /* the token's patterns */
    size_t nnodes, ngroups;
    bool groups_limited; /* the token has a "groups" claim */
    char *jwt_identity;
};

/* ------------------------------------------------------------------ patterns */

bool xds_ident_san_match(const char *p, const char *san, const char *node_id)
{
    size_t ph = strlen(NODE_PLACEHOLDER);
    for (;;) {
        if (*p == '\0')
            return *san == '\0';
        if (*p == '*') {
            /* Any run of characters but '/': try every length, shortest first. */
            for (const char *s = san;; s++) {
                if (xds_ident_san_match(p + 1, s, node_id))
                    return true;
                if (*s == '\0' || *s == '/')
                    return false;
            }
        }
        if (strncmp(p, NODE_PLACEHOLDER, ph) == 0) {
            size_t n = strlen(node_id);
            if (n == 0 || strncmp(san, node_id, n) != 0)
                return false;
            p += ph;
            san += n;
            continue;
        }
        if (*p != *san)
            return false;
        p++;
        san++;
    }
}

/* A SAN pattern is usable when it holds {node} exactly once and no other brace. */
static bool san_pattern_ok(const char *p)
{
    const char *at = strstr(p, NODE_PLACEHOLDER);
    if (at == NULL || strstr(at + 1, NODE_PLACEHOLDER) != NULL)
        return false;
    for (const char *q = p; *q; q++)
        if ((*q == '{' || *q == '}') && !(q >= at && q < at + strlen(NODE_PLACEHOLDER)))
            return false;
    return true;
}

static bool printable(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* Splits text at commas into trimmed, non-empty items (*out, each sx_free). */
static size_t split(const char *text, char ***out)
{
    size_t n = 0;
    *out = NULL;
    const char *p = text ? text : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *b = p, *e = p + len;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > b) {
            *out = sx_realloc(*out, (n + 1) * sizeof(char *));
            (*out)[n++] = sx_strndup(b, (size_t)(e - b));
        }
        p = end ? end + 1 : p + len;
    }
    return n;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sx_free(v[i]);
    sx_free(v);
}

/* ------------------------------------------------------------------ configuration */

int xds_ident_create(const sextant_config *cfg, xds_ident **out, sx_err *err)
{
    *out = NULL;
    const char *mode = cfg->xds.auth;
    if (mode == NULL || mode[0] == '\0') {
        sx_err_set(err, SX_EINVAL, "xds.auth is not set");
        sx_err_hint(err, "Set xds.auth to mtls, jwt or \"mtls,jwt\" to authenticate proxies, or "
                         "to none to let any client claim any node id (development only).");
        return SX_EINVAL;
    }
    xds_ident *id = sx_calloc(1, sizeof(*id));
    char **words = NULL;
    size_t nw = split(mode, &words);
    int rc = 0;
    bool none = false;
    for (size_t i = 0; i < nw && rc == 0; i++) {
        if (strcmp(words[i], "none") == 0)
            none = true;
        else if (strcmp(words[i], "mtls") == 0)
            id->modes |= XDS_AUTH_MTLS;
        else if (strcmp(words[i], "jwt") == 0)
            id->modes |= XDS_AUTH_JWT;
        else
            rc = sx_err_set(err, SX_EINVAL,
                            "xds.auth: unknown mode \"%.64s\" (none, mtls, jwt or \"mtls,jwt\")",
                            words[i]);
    }
    free_list(words, nw);
    if (rc == 0 && (nw == 0 || (none && id->modes != 0)))
        rc = sx_err_set(err, SX_EINVAL, "xds.auth: none cannot be combined with mtls or jwt");
    if (rc == 0 && (id->modes & XDS_AUTH_MTLS)) {
        if (cfg->grpc.tls.client_ca_file == NULL || cfg->grpc.tls.cert_file == NULL) {
            rc = sx_err_set(err, SX_EINVAL,
                            "xds.auth: mtls needs grpc.tls.cert_file, grpc.tls.key_file and "
                            "grpc.tls.client_ca_file");
        } else {
            id->nsan = split(cfg->xds.mtls_node_id_from, &id->san_patterns);
            if (id->nsan == 0) {
                rc = sx_err_set(err, SX_EINVAL, "xds.auth: mtls needs xds.mtls.node_id_from");
                sx_err_hint(err, "For instance \"spiffe://example.org/ns/*/node/{node}\": a client "
                                 "certificate's URI or DNS SAN that matches it, with the node "
                                 "id in place of {node}, may speak for that node.");
            }
            for (size_t i = 0; i < id->nsan && rc == 0; i++)
                if (!san_pattern_ok(id->san_patterns[i]))
                    rc = sx_err_set(err, SX_EINVAL,
                                    "xds.mtls.node_id_from: \"%.128s\" must hold {node} exactly "
                                    "once, and no other brace",
                                    id->san_patterns[i]);
        }
    }
    id->keys = token_keys_from_config(cfg);
    if (rc == 0 && (id->modes & XDS_AUTH_JWT) && !sx_jwt_has_keys(&id->keys))
        rc = sx_err_set(err, SX_EINVAL,
                        "xds.auth: jwt needs auth.hs256_secret, auth.hs256_secret_file or "
                        "auth.rs256_public_key_file");
    if (rc != 0) {
        xds_ident_destroy(id);
        return rc;
    }
    *out = id;
    return 0;
}

void xds_ident_destroy(xds_ident *id)
{
    if (id == NULL)
        return;
    free_list(id->san_patterns, id->nsan);
    sx_free(id);
}

void xds_ident_set_revoked(xds_ident *id, sx_jwt_revoked_fn revoked, void *ctx)
{
    id->keys.revoked = revoked;
    id->keys.revoked_ctx = ctx;
}

unsigned xds_ident_modes(const xds_ident *id)
{
    return id->modes;
}

const char *xds_ident_modes_text(const xds_ident *id)
{
    static const char *const text[] = {"none", "mtls", "jwt", "mtls,jwt"};
    return text[id->modes & 3];
}

/* ------------------------------------------------------------------ credentials */

/* "ipv4:10.0.0.1:5000" or "ipv6:[::1]:5000" (grpc_call_get_peer) as the address. */
static void peer_address(grpc_call *call, char *out, size_t n)
{
    out[0] = '\0';
    char *peer = call ? grpc_call_get_peer(call) : NULL;
    if (peer == NULL)
        return;
    const char *p = NULL;
    size_t len = 0;
    if (strncmp(peer, "ipv4:", 5) == 0) {
        p = peer + 5;
        const char *colon = strrchr(p, ':');
        len = colon ? (size_t)(colon - p) : strlen(p);
    } else if (strncmp(peer, "ipv6:", 5) == 0 && peer[5] == '[') {
        p = peer + 6;
        const char *close = strchr(p, ']');
        len = close ? (size_t)(close - p) : 0;
        const char *pct = memchr(p, '%', len); /* a zone: not inet text */
        if (pct)
            len = (size_t)(pct - p);
    }
    if (p && len > 0 && len < n) {
        memcpy(out, p, len);
        out[len] = '\0';
    }
    gpr_free(peer);
}

static void read_sans(xds_cred *c, grpc_call *call)
{
    grpc_auth_context *ctx = call ? grpc_call_auth_context(call) : NULL;
    if (ctx == NULL)
        return;
    if (grpc_auth_context_peer_is_authenticated(ctx)) {
        static const char *const props[] = {GRPC_PEER_URI_PROPERTY_NAME,
                                            GRPC_PEER_DNS_PROPERTY_NAME};
        for (size_t k = 0; k < 2; k++) {
            grpc_auth_property_iterator it =
                grpc_auth_context_find_properties_by_name(ctx, props[k]);
            const grpc_auth_property *p;
            while ((p = grpc_auth_property_iterator_next(&it)) != NULL && c->nsans < MAX_SANS) {
                if (p->value == NULL || p->value_length == 0 || p->value_length > 1024 ||
                    memchr(p->value, '\0', p->value_length) != NULL)
                    continue;
                c->sans = sx_realloc(c->sans, (c->nsans + 1) * sizeof(char *));
                c->sans[c->nsans++] = sx_strndup(p->value, p->value_length);
            }
        }
    }
    grpc_auth_context_release(ctx);
}

/* A claim holding a list of patterns: a non-empty array of printable strings. */
static bool pattern_claim(const json_t *claims, const char *name, char ***out, size_t *n)
{
    const json_t *v = json_object_get(claims, name);
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MAX_PATTERNS)
        return false;
    *out = sx_calloc(json_array_size(v), sizeof(char *));
    *n = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (s == NULL || !printable(s, MAX_PATTERN_LEN))
            return false;
        (*out)[(*n)++] = sx_strdup(s);
    }
    return true;
}

static void read_token(const xds_ident *id, xds_cred *c, const grpc_metadata_array *md, int64_t now)
{
    const grpc_metadata *auth = NULL;
    for (size_t i = 0; md && i < md->count; i++)
        if (grpc_slice_str_cmp(md->metadata[i].key, "authorization") == 0)
            auth = &md->metadata[i];
    if (auth == NULL)
        return;
    c->has_token = true;
    sx_arena *a = sx_arena_create();
    size_t len = GRPC_SLICE_LENGTH(auth->value);
    char *header = sx_arena_strndup(a, (const char *)GRPC_SLICE_START_PTR(auth->value),
                                    len > SX_JWT_MAX_TOKEN + 64 ? SX_JWT_MAX_TOKEN + 64 : len);
    const char *token = NULL;
    json_t *claims = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (sx_jwt_bearer(header, a, &token, &err) != 0 ||
        sx_jwt_verify(&id->keys, token, now, a, &claims, &err) != 0) {
        snprintf(c->token_error, sizeof(c->token_error), "%s", err.message);
    } else if (sx_jwt_text_claim(claims, "sub", MAX_SUBJECT_LEN) == NULL) {
        snprintf(c->token_error, sizeof(c->token_error), "token has no subject");
    } else if (!pattern_claim(claims, "nodes", &c->nodes, &c->nnodes)) {
        snprintf(c->token_error, sizeof(c->token_error),
                 "token has no \"nodes\" claim listing node id patterns");
    } else if (json_object_get(claims, "groups") != NULL &&
               !pattern_claim(claims, "groups", &c->groups, &c->ngroups)) {
        snprintf(c->token_error, sizeof(c->token_error), "token has a malformed \"groups\" claim");
    } else {
        c->token_ok = true;
        c->groups_limited = c->ngroups > 0;
        c->subject = sx_strdup(sx_jwt_text_claim(claims, "sub", MAX_SUBJECT_LEN));
        c->jwt_identity = sx_asprintf("jwt:%s", c->subject);
    }
    sx_arena_destroy(a);
}

xds_cred *xds_cred_read(const xds_ident *id, grpc_call *call, const grpc_metadata_array *md,
                        int64_t now)
{
    xds_cred *c = sx_calloc(1, sizeof(*c));
    peer_address(call, c->source, sizeof(c->source));
    if (id->modes & XDS_AUTH_MTLS) {
        read_sans(c, call);
        c->identities = c->nsans ? sx_calloc(c->nsans, sizeof(char *)) : NULL;
        for (size_t i = 0; i < c->nsans; i++)
            c->identities[i] = sx_asprintf("x509:%s", c->sans[i]);
    }
    if (id->modes & XDS_AUTH_JWT)
        read_token(id, c, md, now);
    return c;
}

void xds_cred_free(xds_cred *c)
{
    if (c == NULL)
        return;
    free_list(c->sans, c->nsans);
    free_list(c->identities, c->identities ? c->nsans : 0);
    free_list(c->nodes, c->nnodes);
    free_list(c->groups, c->ngroups);
    sx_free(c->subject);
    sx_free(c->jwt_identity);
    sx_free(c);
}

const char *xds_cred_source(const xds_cred *c)
{
    return c->source;
}

const char *xds_cred_who(const xds_cred *c)
{
    if (c->identities && c->nsans > 0)
        return c->identities[0];
    return c->token_ok ? c->jwt_identity : NULL;
}

xds_auth_fail xds_ident_check(const xds_ident *id, const xds_cred *c, const char *node_id,
                              const char *group, const char **identity, char *msg, size_t n)
{
    *identity = "";
    msg[0] = '\0';
    if (id->modes == 0)
        return XDS_AUTH_OK;
    if (id->modes & XDS_AUTH_MTLS)
        for (size_t i = 0; i < c->nsans; i++)
            for (size_t k = 0; k < id->nsan; k++)
                if (xds_ident_san_match(id->san_patterns[k], c->sans[i], node_id)) {
                    *identity = c->identities[i];
                    return XDS_AUTH_OK;
                }
    bool node_ok = false;
    if (c->token_ok) {
        for (size_t i = 0; i < c->nnodes && !node_ok; i++)
            node_ok = sx_glob_match(c->nodes[i], node_id);
        if (node_ok) {
            bool group_ok = !c->groups_limited || group == NULL;
            for (size_t i = 0; i < c->ngroups && !group_ok; i++)
                group_ok = sx_glob_match(c->groups[i], group);
            if (group_ok) {
                *identity = c->jwt_identity;
                return XDS_AUTH_OK;
            }
        }
    }
    bool has_cert = c->nsans > 0;
    if (c->has_token && !c->token_ok && !has_cert) {
        snprintf(msg, n, "the bearer token was refused: %s", c->token_error);
        return XDS_AUTH_FAIL_TOKEN;
    }
    if (!has_cert && !c->has_token) {
        static const char *const want[] = {
            "", "a client certificate with a URI or DNS SAN",
            "a bearer token in the authorization metadata",
            "a client certificate with a URI or DNS SAN, or a bearer token"};
        snprintf(msg, n, "no credentials: xds.auth is %s (%s)", xds_ident_modes_text(id),
                 want[id->modes & 3]);
        return XDS_AUTH_FAIL_MISSING;
    }
    if (node_ok) {
        snprintf(msg, n, "the credentials do not cover proxy group \"%.128s\"", group);
        return XDS_AUTH_FAIL_GROUP;
    }
    snprintf(msg, n, "the credentials do not cover node id \"%.256s\"", node_id);
    return XDS_AUTH_FAIL_NODE;
}

/* ------------------------------------------------------------------ minting */

static int pattern_list(const char *what, const char *const *v, size_t n, size_t min, json_t **out,
                        sx_err *err)
{
    *out = NULL;
    if (n < min || n > MAX_PATTERNS)
        return sx_err_set(err, SX_EINVAL, "give %zu to %d %s patterns", min, MAX_PATTERNS, what);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!printable(v[i], MAX_PATTERN_LEN)) {
            json_decref(a);
            return sx_err_set(err, SX_EINVAL,
                              "a %s pattern must be 1 to %d bytes without control characters", what,
                              MAX_PATTERN_LEN);
        }
        json_array_append_new(a, json_string(v[i]));
    }
    *out = a;
    return 0;
}

int xds_ident_mint(const sextant_config *cfg, const char *subject, const char *const *nodes,
                   size_t nnodes, const char *const *groups, size_t ngroups, int64_t ttl_s,
                   char **token, sx_err *err)
{
    *token = NULL;
    if (subject == NULL || !printable(subject, MAX_SUBJECT_LEN))
        return sx_err_set(err, SX_EINVAL,
                          "the subject must be 1 to %d bytes without control characters",
                          MAX_SUBJECT_LEN);
    json_t *jn = NULL, *jg = NULL;
    int rc = pattern_list("node id", nodes, nnodes, 1, &jn, err);
    if (rc == 0)
        rc = pattern_list("group", groups, ngroups, 0, &jg, err);
    if (rc != 0) {
        json_decref(jn);
        return rc;
    }
    json_t *claims = json_pack("{s:s,s:o}", "sub", subject, "nodes", jn);
    if (ngroups > 0)
        json_object_set(claims, "groups", jg);
    json_decref(jg);
    rc = token_keys_sign(cfg, claims, ttl_s, token, err);
    json_decref(claims);
    return rc;
}
