/*
 * denials.h — refusals recorded in aggregate: one audit row per kind of refusal, client
 * address and interval, carrying how many refusals it stands for.
 *
 * A refused client can retry as fast as it likes; the audit log may not grow at that
 * pace. Both doors of the control plane record their refusals here: xDS clients refused
 * for their credentials (server/xds), and REST requests refused for their token (401)
 * or by a rate limit (429, api/rest.c). A refusal is keyed by its action, its status,
 * its client address and, for a refusal of an authenticated caller, its actor; the
 * first refusal of a key opens an interval (the caller logs that one, denials_note says
 * so), the rest of the interval is only counted. When the interval is over,
 * denials_flush hands one row per key to the audit writer: the key's action, result
 * "denied", its status, the address as source_ip, as actor the key's actor or else the
 * first identity its clients presented ("anonymous" when none did), and in details the
 * count, the count per reason, the first few targets asked for (under the name given at
 * creation: "nodes", "routes") and identities presented, and the interval in seconds.
 * Memory is bounded: past DENIALS_MAX_KEYS open keys, further ones are counted under one
 * row per action and status without an address or actor.
 *
 * Thread-safe (one mutex). The audit writer is called without it held, never by
 * denials_note: recording a refusal never waits for the database.
 */
#ifndef SX_SERVER_DENIALS_H
#define SX_SERVER_DENIALS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/err.h"
#include "storage/repo_audit.h"

#define DENIALS_MAX_KEYS 4096

typedef struct denials denials;

/* Writes one audit row (row borrowed); returns 0 or a project error code with err. */
typedef int (*denials_audit_fn)(void *ctx, const audit_new *row, sx_err *err);

/* One refusal. Strings are borrowed; what came from the client is cut and made valid
 * UTF-8 before it is kept. */
typedef struct denial {
    const char *action;        /* the row's action, e.g. "proxy.connect"; required */
    const char *resource_type; /* the row's resource type; required */
    int status_code;           /* the row's status (403, 401, 429) */
    const char *source;        /* the client address; NULL or "" when unknown */
    const char *actor;         /* the authenticated caller refused (part of the key); NULL:
                                * refused before it was known who the caller is */
    const char *actor_role;    /* the actor's role; NULL = "" */
    const char *client;        /* an identity the client presented, kept in "clients" */
    const char *reason;        /* counted in "reasons"; required */
    const char *target;        /* what was asked for (a node id, a route), kept in the
                                * targets list and the first one as resource_id */
} denial;

/* interval_ms: how long a key's interval lasts (<= 0: 60 s); targets: the name of the
 * targets list in details; audit NULL: rows are not written. Never NULL. */
denials *denials_create(int64_t interval_ms, const char *targets, denials_audit_fn audit,
                        void *ctx);
/* Starts a thread that flushes once a second (for an owner without a periodic task of
 * its own); denials_destroy stops it. 0, or SX_EINTERNAL when it cannot start. */
int denials_start(denials *d, sx_err *err) SX_MUSTCHECK;
/* NULL allowed. Stops the flushing thread if started, then writes every open key's row
 * (so call it while the audit writer still works). */
void denials_destroy(denials *d);

/* Records one refusal at now_ms (monotonic). Returns true when it is the first of its
 * key's interval: the caller logs that one, and only that one. */
bool denials_note(denials *d, const denial *in, int64_t now_ms);

/* Writes the rows of every key whose interval is over at now_ms (all of them when all
 * is true). A row that cannot be written is logged. */
void denials_flush(denials *d, int64_t now_ms, bool all);

/* How many refusals are counted but not yet written (for tests and metrics). */
int64_t denials_pending(denials *d);

#endif
