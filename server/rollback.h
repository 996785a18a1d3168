/*
 * rollback.h — a proxy group's rollback to one of its snapshots: the old content is
 * validated as any change is, then republished as the group's newest version.
 *
 * An old snapshot may no longer pass what validation checks today: its certificate has
 * expired since, a limit or a data plane of the group changed. Such a rollback is
 * refused with every problem (paths start at "snapshot", the snapshot's IR), unless the
 * request says force: then it is republished anyway, and its audit row says it was
 * forced and what validation said.
 *
 * Memory: results and problems belong to the caller (the arena, val_result_free).
 * Thread safety: any thread; the work is one transaction on the pool.
 */
#ifndef SX_SERVER_ROLLBACK_H
#define SX_SERVER_ROLLBACK_H

#include <stdbool.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/idem.h"
#include "server/validate/validate.h"
#include "storage/pg_pool.h"
#include "storage/repo_snapshots.h"

/* A group's rollback to one of its snapshots; pointers borrowed for the call. */
typedef struct rollback_group_request {
    const char *group;             /* required */
    long long snapshot_version;    /* the snapshot whose content becomes the newest again */
    bool force;                    /* republish even when validation refuses it (audited) */
    const char *author;            /* required */
    const char *actor_role;        /* NULL = "" */
    const char *message;           /* NULL = "" */
    const char *request_id;        /* NULL = none */
    const char *client_request_id; /* NULL = none */
    const char *source_ip;         /* NULL = none */
    const val_limits *limits;      /* the configured limits; NULL: the content is not validated */
    long long now_unix;            /* the time certificates are checked against; 0: now */
    val_result *problems;          /* receives what validation found (required with limits) */
    idem_request *idem;            /* NULL, or the client's key (server/idem.h); render gets the
                                      rollback_group_result; replayed as rollback_group */
} rollback_group_request;

typedef struct rollback_group_result {
    long long before_version; /* the group's newest version before */
    long long version;        /* its newest version after: the new snapshot, or before_version
                                 when snapshot_version's content is already the newest */
    bool changed;             /* a new snapshot was written */
    bool forced;              /* validation refused the content and force republished it */
} rollback_group_result;

/*
 * Validates the content of snapshot req->snapshot_version of req->group against the
 * group as it is now (its data planes, req->limits, certificates at req->now_unix; the
 * quotas per config apply to the group as a whole) and republishes it (its IR and the
 * config versions it was built from) as the group's next version, audited
 * ("group.rollback", with before and after versions, and forced and validation when
 * force overrode a refusal), cached and NOTIFYd in one transaction. SX_ENOTFOUND when
 * the group has no such snapshot; SX_EVALIDATION with req->problems when validation
 * refuses the content and force is not set, or (verrs) when it no longer passes the
 * codec; database errors otherwise. The configs themselves are not changed: the next
 * config change recomposes the group from its configs again.
 */
int rollback_group(pg_pool *pool, snap_repo *snaps, const rollback_group_request *req, sx_arena *a,
                   rollback_group_result *out, sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

#endif
