/*
 * revocations.h — the revoked bearer tokens this replica refuses: an in-memory copy of
 * the token_revocations table (storage/repo_revocations.h) that token verification
 * (server/base/jwt.h, for the REST API and the xDS server alike) asks on every token.
 *
 * The copy is reloaded whole on every NOTIFY of REVOKE_NOTIFY_CHANNEL, after every
 * reconnection of the listener and at every periodic check, through the snapshot
 * loader's worker (server/snapshot/loader.h), which retries a failed reload with a
 * back-off: a revocation committed on any replica holds here as soon as the
 * notification arrives. Until the first load succeeds (the database unreachable at
 * start) and while it is unreachable, the last loaded copy (at first: empty) is used,
 * so proxies and clients keep working on the tokens they hold while PostgreSQL is away.
 *
 * Thread safety: revocations_check may be called from any thread at any time (a
 * read lock); reloads replace the copy under a write lock.
 */
#ifndef SX_SERVER_REVOCATIONS_H
#define SX_SERVER_REVOCATIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/err.h"
#include "server/snapshot/loader.h"
#include "storage/pg_pool.h"

typedef struct revocations revocations;

/* Creates an empty copy loading from pool (borrowed; NULL: never loads) and, when loader
 * is not NULL, subscribes it to REVOKE_NOTIFY_CHANNEL there (before the loader's
 * component starts). Returns 0 and *out (revocations_destroy), or the subscription's
 * error. */
int revocations_create(pg_pool *pool, snap_loader *loader, revocations **out,
                       sx_err *err) SX_MUSTCHECK;

/* Frees the copy, after the loader's component has stopped. NULL allowed. */
void revocations_destroy(revocations *r);

/* Reloads the copy from the database now. Returns 0, or the database's error (the
 * previous copy stays). */
int revocations_reload(revocations *r, sx_err *err) SX_MUSTCHECK;

/* Whether a token is revoked (sx_jwt_revoked_fn; ctx is the revocations): its jti was
 * revoked, or its subject's tokens issued at or before a time after iat (iat -1: a
 * token without "iat" counts as issued before). jti and sub may be NULL. */
bool revocations_check(void *ctx, const char *jti, const char *sub, int64_t iat);

#endif
