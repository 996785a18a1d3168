/*
 * repo_idem.h — the stored answers of requests sent with an idempotency key (table
 * idempotency_keys, migrations/0006_idempotency.sql).
 *
 * A key belongs to a subject (the authenticated user). It is claimed inside the
 * transaction of the change it guards (idem_repo_claim) and answered in that same
 * transaction (idem_repo_answer), so the row exists exactly when the change committed.
 * A second transaction claiming the same key while the first is still open waits on the
 * primary key until the first ends: then it finds the answer (the first committed) or
 * claims the key itself (the first rolled back). A key older than the TTL the caller
 * passes counts as absent and is claimed anew; idem_repo_prune deletes old keys.
 *
 * Memory: results live in the caller's sx_arena. Failures: SX_EINVAL for bad input,
 * database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_IDEM_H
#define SX_STORAGE_REPO_IDEM_H

#include <stdbool.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* The longest key a client may send. */
#define IDEM_KEY_MAX 255

/* A key's stored answer. */
typedef struct idem_record {
    char *request_hash; /* hex SHA-256 of the request that used the key first */
    int status;         /* the HTTP status it was answered with */
    char *response;     /* the body it was answered with, byte for byte */
    char *created_at;   /* RFC 3339 UTC */
} idem_record;

/*
 * Claims subject's key for the transaction open on c, with the hash of the request it
 * guards. *existing is NULL when the key is now this transaction's (no row, or one
 * older than ttl_ms that is replaced), else the answer stored under the key (whatever
 * its request_hash: comparing is the caller's business). Waits for a transaction that
 * holds the key uncommitted. SX_EINVAL for an empty subject or key, a key that is not
 * 1..IDEM_KEY_MAX printable ASCII characters or a hash that is not 64 hex digits.
 */
int idem_repo_claim(pg_conn *c, const char *subject, const char *key, const char *request_hash,
                    long long ttl_ms, sx_arena *a, idem_record **existing,
                    sx_err *err) SX_MUSTCHECK;

/* Stores the answer (status 100..599, body NUL-terminated) of the key this transaction
 * claimed. SX_ENOTFOUND when it holds no claim of that key. */
int idem_repo_answer(pg_conn *c, const char *subject, const char *key, int status, const char *body,
                     sx_err *err) SX_MUSTCHECK;

/* The answer stored under subject's key, if one younger than ttl_ms is committed:
 * *out NULL otherwise. Does not wait for a transaction holding the key. */
int idem_repo_get(pg_conn *c, const char *subject, const char *key, long long ttl_ms, sx_arena *a,
                  idem_record **out, sx_err *err) SX_MUSTCHECK;

/* Deletes every key older than older_than_ms; *deleted (NULL allowed) gets how many. */
int idem_repo_prune(pg_conn *c, long long older_than_ms, long long *deleted,
                    sx_err *err) SX_MUSTCHECK;

/* Whether key is 1..IDEM_KEY_MAX printable ASCII characters (0x20..0x7e). */
bool idem_repo_key_valid(const char *key);

#endif
