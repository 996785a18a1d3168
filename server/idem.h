/*
 * idem.h — idempotent changes: the answer of a change made under a client's key is
 * stored in the change's own transaction, so a retry of the same request gets the same
 * answer instead of a second change.
 *
 * The REST API reads the key and hashes the request; the domain sees only this typed
 * value. A write path that takes an idem_request calls idem_begin first thing in its
 * transaction and idem_end last: idem_begin claims the key (storage/repo_idem.h) or
 * finds it answered, idem_end renders the answer from the path's result (the caller's
 * render function) and stores it. A transaction that fails stores nothing, so only
 * changes that committed are ever replayed; a refused request can be retried with its
 * key and runs again.
 *
 * Concurrency: a second request with the same key while the first one's transaction is
 * open waits for it (the key's primary key), then replays its answer, or runs itself
 * when the first rolled back. Keys are kept for api.idempotency_ttl and pruned by the
 * fleet sweep (idem_prune).
 */
#ifndef SX_SERVER_IDEM_H
#define SX_SERVER_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_idem.h"

struct sx_server;

/* Renders the answer of a committed change from the write path's result (its type is
 * the path's: each path names it): *status and a new JSON body. Runs inside the
 * transaction, must not fail and may run more than once (a rerun transaction). */
typedef json_t *(*idem_render_fn)(const void *result, void *ud, int *status);

/* A change asked for under a key. The caller fills the inputs (borrowed for the call);
 * the write path fills the outputs. */
typedef struct idem_request {
    const char *subject;      /* whose key: the authenticated user; required */
    const char *key;          /* the client's key: 1..IDEM_KEY_MAX printable ASCII */
    const char *request_hash; /* hex SHA-256 of the request (method, path, body) */
    long long ttl_ms;         /* a key older than this counts as unused */
    idem_render_fn render;    /* required */
    void *ud;                 /* render's */

    bool replayed;    /* out: the key was answered already; nothing was done and the
                         write path's own result is not filled */
    int status;       /* out: the answer's status (replayed or just stored) */
    const char *body; /* out: the answer's body, byte for byte (in the call's arena) */
} idem_request;

/* Inside the write path's transaction on c, before it changes anything: with r NULL,
 * nothing. Else claims r's key (resets r's outputs first, as the transaction may be a
 * rerun): 0 with r->replayed false, go on; 0 with r->replayed true, the key holds the
 * answer of this same request, which is in r->status and r->body: change nothing and
 * end the transaction; SX_EKEYREUSED when the key answered another request (its hash
 * differs); database errors otherwise. */
int idem_begin(pg_conn *c, idem_request *r, sx_arena *a, sx_err *err) SX_MUSTCHECK;

/* Inside the same transaction, after the change: with r NULL, nothing. Else renders
 * result with r->render and stores the answer under the claimed key; r->status and
 * r->body then hold it. */
int idem_end(pg_conn *c, idem_request *r, const void *result, sx_arena *a,
             sx_err *err) SX_MUSTCHECK;

/* Outside any transaction: the committed answer under subject's key younger than
 * api.idempotency_ttl, in *out (in a), or NULL. SX_EUNAVAILABLE without a database. */
int idem_lookup(struct sx_server *srv, const char *subject, const char *key, sx_arena *a,
                idem_record **out, sx_err *err) SX_MUSTCHECK;

/* api.idempotency_ttl in milliseconds. */
long long idem_ttl_ms(const struct sx_server *srv);

/* Deletes the keys older than api.idempotency_ttl on c; *deleted gets how many. */
int idem_prune(struct sx_server *srv, pg_conn *c, long long *deleted, sx_err *err) SX_MUSTCHECK;

/* Whether a client's key is 1..IDEM_KEY_MAX printable ASCII characters. */
bool idem_key_valid(const char *key);

/* The error of a key used for another request: SX_EKEYREUSED with detail and hint. */
int idem_reused(sx_err *err, const char *key);

#endif
