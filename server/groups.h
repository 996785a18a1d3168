/*
 * groups.h — a proxy group's own settings: the data planes it serves (Envoy proxies,
 * proxyless gRPC clients, gateway.control.v1 clients), which decide what validation
 * lets its configs hold (server/validate/validate.h, val_planes.c).
 *
 * A group that never chose serves the configured default (groups.default_data_planes).
 * A change is refused, and changes nothing, when a live config of the group holds what
 * one of the new data planes cannot take, or when the group's configuration does not
 * translate for the ADS data planes; a change that passes is written and audited
 * ("group.update") in one transaction. The write paths of configs read the data planes
 * of their groups with groups_planes after locking the groups' rows, so a change of the
 * data planes and a change of a config of the group never pass each other's checks.
 * A change that passes NOTIFYs GROUPS_NOTIFY_CHANNEL with the group's name once
 * committed, so what derives from a group's data planes on any replica (the
 * Kubernetes translation of its Gateways' policies) follows at once.
 */
#ifndef SX_SERVER_GROUPS_H
#define SX_SERVER_GROUPS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/idem.h"
#include "server/validate/validate.h"
#include "storage/pg_pool.h"

/* The channel a change of a group's data planes is NOTIFYed on (payload: the group). */
#define GROUPS_NOTIFY_CHANNEL "sextant_groups"

/* A group as the API shows it. */
typedef struct groups_info {
    const char *name;
    unsigned planes;           /* the data planes it serves (VAL_PLANE_* bits) */
    bool planes_default;       /* it never chose: planes is the configured default */
    long long current_version; /* snapshot its nodes receive; 0: none yet */
} groups_info;

/* On c: the data planes of each of the n groups, in *out (n entries in a, the order
 * given; planes 0 for a group that never chose, which validation reads as the default). */
int groups_planes(pg_conn *c, const char *const *groups, size_t n, sx_arena *a,
                  val_group_planes **out, sx_err *err) SX_MUSTCHECK;

/* in (NULL allowed: *out NULL) with the data planes of the n groups read on c, for a
 * validation of a config of those groups; the copy lives in a. */
int groups_limits(pg_conn *c, const val_limits *in, const char *const *groups, size_t n,
                  sx_arena *a, const val_limits **out, sx_err *err) SX_MUSTCHECK;

/* One group; a group nobody configured or published to is answered with its defaults
 * (it exists as soon as a config names it). SX_EINVAL for a name no group can have. */
int groups_get(pg_pool *pool, const char *group, unsigned default_planes, sx_arena *a,
               groups_info *out, sx_err *err) SX_MUSTCHECK;

/* A change of a group's data planes; pointers borrowed for the call. */
typedef struct groups_set_request {
    const char *group;
    const char *const *planes; /* names: "envoy", "grpc", "control"; reset: ignored */
    size_t nplanes;
    bool reset;              /* back to the configured default */
    unsigned default_planes; /* groups.default_data_planes */
    const char *author;      /* required */
    const char *actor_role;
    const char *request_id;
    const char *client_request_id;
    const char *source_ip;
    idem_request *idem; /* NULL: no Idempotency-Key */
} groups_set_request;

/* Sets the data planes. SX_EINVAL for a bad group name; SX_EVALIDATION with problems in
 * *problems (paths "data_planes" or "configs[<ns>/<name>].spec.…", data_plane naming
 * the one that cannot take it) when the names are wrong or the group's configs do not
 * fit; nothing is written then. *out is the group after the change. */
int groups_set_planes(pg_pool *pool, const groups_set_request *req, sx_arena *a, groups_info *out,
                      val_result *problems, sx_err *err) SX_MUSTCHECK;

/* Who asked for a change of a group, for its audit row (NULL = none, except author).
 * GROUPS_WHO(req) takes them from a request that has fields of these names. */
typedef struct groups_who {
    const char *author, *actor_role, *request_id, *client_request_id, *source_ip;
} groups_who;
#define GROUPS_WHO(req)                                                                            \
    ((groups_who){(req)->author, (req)->actor_role, (req)->request_id, (req)->client_request_id,   \
                  (req)->source_ip})

/* The checks a change of group starts with: SX_EINVAL unless group is a valid proxy
 * group name and author is set; what names the change in the message ("a rollback"
 * gives "a rollback needs a proxy group"). */
int groups_check_change(const char *group, const char *author, const char *what,
                        sx_err *err) SX_MUSTCHECK;

/* Last in the transaction on c of a change of group that passed: its audit row (action,
 * status 200, details owned by the caller) by who, then the answer to idem (NULL: none)
 * rendered from result. */
int groups_change_end(pg_conn *c, groups_who who, const char *action, const char *group,
                      json_t *details, idem_request *idem, const void *result, sx_arena *a,
                      sx_err *err) SX_MUSTCHECK;

#endif
