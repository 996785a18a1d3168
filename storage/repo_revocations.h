/*
 * repo_revocations.h — revoked bearer tokens (table token_revocations,
 * migrations/0013_token_revocations.sql).
 *
 * A revocation names one token by its "jti", or a subject and a time: every token of
 * that subject issued at or before it. Adding one notifies REVOKE_NOTIFY_CHANNEL in the
 * same transaction, so every replica that listens reloads the list once it is committed.
 *
 * Memory: results live in the caller's sx_arena. Failures: SX_EINVAL for bad input
 * (with the reason), database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_REVOCATIONS_H
#define SX_STORAGE_REPO_REVOCATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* The channel a committed revocation is announced on (no payload). */
#define REVOKE_NOTIFY_CHANNEL "sextant_revocations"

/* Longest jti or subject stored (bytes). */
#define REVOKE_MAX_TEXT 256

/* One revocation as loaded: jti set and subject NULL, or the reverse. */
typedef struct revoke_row {
    const char *jti;
    const char *subject;
    int64_t issued_before; /* seconds since the epoch, rounded down; subject rows only */
} revoke_row;

/* What was recorded by revoke_repo_add. */
typedef struct revoke_added {
    long long id;
    const char *issued_before; /* RFC 3339 UTC; NULL for a jti revocation */
} revoke_added;

/*
 * Records a revocation and notifies REVOKE_NOTIFY_CHANNEL, in one transaction: by jti
 * (subject and before NULL), or of subject's tokens issued at or before before (a
 * timestamp PostgreSQL reads, such as RFC 3339; NULL: now). SX_EINVAL when neither or
 * both of jti and subject are given, a text is empty or too long, or before is not a
 * time. *out (in a) says what was stored.
 */
int revoke_repo_add(pg_pool *p, const char *jti, const char *subject, const char *before,
                    sx_arena *a, revoke_added *out, sx_err *err) SX_MUSTCHECK;

/* Every revocation: for each subject only its latest time. *rows (in a) and *n. */
int revoke_repo_load(pg_pool *p, sx_arena *a, revoke_row **rows, size_t *n,
                     sx_err *err) SX_MUSTCHECK;

#endif
