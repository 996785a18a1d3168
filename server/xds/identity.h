/*
 * identity.h — who an xDS client is, and which node ids it may speak for (xds.auth).
 *
 * Every stream (ADS state of the world, Delta, gateway.control.v1) and every
 * ReportStatus call presents credentials when it is accepted: the client certificate of
 * an mTLS connection (grpc.tls.client_ca_file, verified by gRPC's TLS) and/or a bearer
 * token in the gRPC "authorization" metadata. xds.auth says which count:
 *
 *   none      nobody is authenticated; any client may claim any node id (development)
 *   mtls      a URI or DNS SAN of the client certificate must match one of the patterns
 *             of xds.mtls.node_id_from with the node id in place of {node}
 *   jwt       a token signed with the auth.* keys whose "nodes" claim (globs, `*` any run
 *             of characters) covers the node id and whose "groups" claim, when present,
 *             covers the node's proxy group; minted by `sextant token --node-pattern`
 *   mtls,jwt  either one
 *
 * The SAN check reads the peer properties gRPC's handshake put on the call's auth
 * context; it does not build or know the server's TLS credentials, and trusts them to
 * require a client certificate and verify it against grpc.tls.client_ca_file
 * (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY): gRPC reports the SANs of
 * an unverified certificate too.
 *
 * An accepted node id comes with the identity that covered it ("x509:<SAN>" or
 * "jwt:<sub>", "" under none): a stream may supersede an older stream of its node only
 * when both have the same identity (streams.h).
 */
#ifndef SX_XDS_IDENTITY_H
#define SX_XDS_IDENTITY_H

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/err.h"
#include "server/base/jwt.h"
#include "server/config.h"

/* The modes of xds.auth, as bits. */
enum { XDS_AUTH_MTLS = 1, XDS_AUTH_JWT = 2 };

/* Why a client was refused: the reason label of sextant_xds_auth_failures_total. */
typedef enum xds_auth_fail {
    XDS_AUTH_OK,
    XDS_AUTH_FAIL_MISSING,  /* no credentials of an accepted kind: "missing_credentials" */
    XDS_AUTH_FAIL_TOKEN,    /* the bearer token did not verify: "bad_token" */
    XDS_AUTH_FAIL_NODE,     /* the credentials do not cover the node id: "node_not_covered" */
    XDS_AUTH_FAIL_GROUP,    /* the token does not cover the node's group: "group_not_covered" */
    XDS_AUTH_FAIL_IDENTITY, /* a live stream of the node has another identity:
                             * "identity_conflict" */
    XDS_AUTH_FAIL_COUNT,
} xds_auth_fail;

/* The label of a failure (XDS_AUTH_OK: "ok"). */
const char *xds_auth_fail_name(xds_auth_fail f);

/* The configured rules: modes, SAN patterns, token keys. Read-only once created. */
typedef struct xds_ident xds_ident;

/* What one call presented, read when it was accepted. */
typedef struct xds_cred xds_cred;

/* Reads xds.auth, xds.mtls.node_id_from and the auth.* keys of cfg (borrowed; must
 * outlive the result). Returns 0 and *out, or SX_EINVAL with err naming the key: xds.auth
 * unset or unknown, mtls without grpc.tls.client_ca_file or without a valid
 * xds.mtls.node_id_from, jwt without a verification key. */
int xds_ident_create(const sextant_config *cfg, xds_ident **out, sx_err *err) SX_MUSTCHECK;
/* NULL allowed. */
void xds_ident_destroy(xds_ident *id);
/* Makes token verification ask revoked (NULL: nothing is revoked; ctx borrowed); call
 * before any stream is accepted. */
void xds_ident_set_revoked(xds_ident *id, sx_jwt_revoked_fn revoked, void *ctx);
/* The mode bits (0: none) and their text ("none", "mtls", "jwt", "mtls,jwt"). */
unsigned xds_ident_modes(const xds_ident *id);
const char *xds_ident_modes_text(const xds_ident *id);

/* The credentials of call, accepted with metadata md, at now (seconds since the epoch):
 * the certificate's URI and DNS SANs (mtls), the verified token's claims or why it did
 * not verify (jwt), and the client's address. Never NULL; free with xds_cred_free. */
xds_cred *xds_cred_read(const xds_ident *id, grpc_call *call, const grpc_metadata_array *md,
                        int64_t now);
/* NULL allowed. */
void xds_cred_free(xds_cred *c);
/* The client's IP address as text ("" when unknown: not an IP transport). */
const char *xds_cred_source(const xds_cred *c);
/* Who the credentials name, whatever node they cover: the first certificate SAN
 * ("x509:<SAN>") or the verified token's subject ("jwt:<sub>"); NULL when neither. For
 * the record of a refusal. */
const char *xds_cred_who(const xds_cred *c);

/* Whether c may speak for node_id in group (NULL: the group is not checked). XDS_AUTH_OK
 * with *identity (owned by c), else the failure, with a message for the client in msg
 * (n bytes). */
xds_auth_fail xds_ident_check(const xds_ident *id, const xds_cred *c, const char *node_id,
                              const char *group, const char **identity, char *msg, size_t n);

/* Whether the SAN pattern matches san with node_id in place of {node} (`*`: any run of
 * characters but '/'). */
bool xds_ident_san_match(const char *pattern, const char *san, const char *node_id);

/*
 * Mints a proxy token: "sub" subject, "nodes" the node id patterns (1..64, each 1..256
 * printable bytes), "groups" the group patterns (none: any group), valid for ttl_s,
 * signed with the auth.* signing key of cfg. Returns 0 and *token (sx_free), or SX_EINVAL
 * with err.
 */
int xds_ident_mint(const sextant_config *cfg, const char *subject, const char *const *nodes,
                   size_t nnodes, const char *const *groups, size_t ngroups, int64_t ttl_s,
                   char **token, sx_err *err) SX_MUSTCHECK;

#endif
