/*
 * rollout.h — deployments: applying a config version to the nodes a selector picks, in
 * waves gated on the nodes' own ACKs, with automatic rollback.
 *
 * The model (README "Rollouts"): a deployment stages one snapshot per affected group
 * (the group's live configs with the config at the requested version) without making
 * it current. When it starts, every selected node is pinned to the snapshot it has now
 * (its group's current one); each wave then pins its nodes to the staged snapshot. The
 * pins live in node_status, so every replica serves a node the same version. Nodes
 * outside the selector keep following their group's current snapshot, which does not
 * move while a deployment holds the group (direct changes of it are refused). When
 * every wave has ACKed, the deployment completes and, unless "promote": false, the
 * staged snapshots become current and the version the config's live one; the pins are
 * released. A rollback releases the pins (and undoes a promotion), so every node is
 * back on what it had.
 *
 * States (deployments.state) and who moves them:
 *
 *   pending ──driver──▶ in_progress ──driver──▶ completed
 *                        │  ▲    │                   │
 *                  pause │  │ resume                 │ rollback (operator)
 *                        ▼  │    │ NACK rate / wave timeout / health (driver)
 *                       paused   ▼                   ▼
 *                        │     failed ──driver──▶ rolling_back ──driver──▶ rolled_back
 *                        │                           ▲      └───driver──▶ rollback_failed
 *   pending/in_progress/paused ──cancel──▶ canceling ┘ (driver)
 *   in_progress/paused/rollback_failed ──rollback (operator)──▶ rolling_back
 *
 * Blue-green (strategy.h) is two waves, green then blue, inside in_progress: once green
 * ACKed, the driver holds before the blue wave until "promote" (operator) or the
 * strategy's promote_timeout (driver: on_timeout "rollback" starts the rollback,
 * "promote" promotes, both audited as the system). Promote pins every blue node to the
 * staged snapshot at once; when blue ACKed the deployment completes as any other, so a
 * rollback afterwards puts every node back on the old (blue) snapshot at once. NACKs of
 * green fail the first wave and roll it back like any wave. The phase is derived from
 * the waves ("blue_green" of the JSON form), not stored.
 *
 * "failed" is entered and left in one transaction (the automatic rollback starts at
 * once); the audit log and the events keep both steps. Every change happens in one
 * transaction holding the deployment's row lock, re-reading its state first, so a step
 * is never taken twice, whichever replica takes it.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef SX_ROLLOUT_ROLLOUT_H
#define SX_ROLLOUT_ROLLOUT_H

#include <stdbool.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/idem.h"
#include "server/rollout/strategy.h"
#include "server/validate/validate.h"
#include "storage/repo_deployments.h"

struct sx_server;

/* Who asks, for the audit log. */
typedef struct rollout_actor {
    const char *user;       /* required */
    const char *role;       /* NULL = "" */
    const char *request_id; /* NULL = none */
    const char *source_ip;  /* NULL = none */
    /* NULL, or the client's key of the request (server/idem.h): rollout_apply renders its
     * *out (a json_t), rollout_act its deploy_record. When the key is answered already,
     * they return 0 with idem->replayed true and *out NULL: nothing was done. */
    idem_request *idem;
} rollout_actor;

/* A rollout asked for: config_id at version, to the nodes the selector picks, with a
 * strategy and a policy. Pointers are borrowed for the call. The selector's lists are
 * NULL when not given (an empty list given is a non-NULL pointer with count 0). */
typedef struct rollout_request {
    const char *config_id; /* required: the config (a UUID) */
    int version;           /* required: one of its versions (1..INT_MAX) */
    bool dry_run;          /* plan only: nothing is written */
    rollout_strategy strategy;
    rollout_policy policy; /* rollout_policy_defaults, with the request's overrides */
    bool has_selector;     /* a selector was given (stored with the deployment) */
    const char *const *node_ids;
    size_t node_id_count;
    const char *const *groups; /* subset of the config's groups; NULL = all of them */
    size_t group_count;
    const char *const *namespaces;
    size_t namespace_count;
    const json_t *labels; /* an object of strings every selected node must carry; NULL = any */
    const char *reason;   /* NULL = none */
} rollout_request;

/* The rollout policy of the daemon's configuration (rollouts.*), promote on: what a
 * request's overrides start from. */
rollout_policy rollout_policy_defaults(const struct sx_server *srv);

/*
 * Plans req. A dry run sets *out to {"plan": {...}, "validation": {...}} and writes
 * nothing; otherwise the deployment is created (pending) and audited, and *out is its
 * JSON (*created true). *out is a new reference. Failures: SX_EINVAL with verrs
 * (selector names unknown nodes, or no connected node is selected), SX_ENOTFOUND
 * (config, version, group), SX_ECONFLICT (a deployment already holds one of the groups),
 * SX_EVALIDATION with problems/verrs.
 */
int rollout_apply(struct sx_server *srv, const rollout_request *req, const rollout_actor *who,
                  sx_arena *a, json_t **out, bool *created, val_result *problems,
                  sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

typedef enum rollout_action {
    ROLLOUT_PAUSE,
    ROLLOUT_RESUME,
    ROLLOUT_CANCEL,
    ROLLOUT_ROLLBACK,
    ROLLOUT_PROMOTE, /* blue-green: switch blue over once green ACKed */
} rollout_action;

/* "pause", "resume", "cancel", "rollback", "promote". */
const char *rollout_action_name(rollout_action act);

/* An operator's action on deployment id, audited as "deployment.<action>" with reason.
 * *out is the deployment afterwards. SX_ECONFLICT when its state does not allow it,
 * SX_ENOTFOUND, SX_EINVAL for a malformed id. */
int rollout_act(struct sx_server *srv, const char *id, rollout_action act, const char *reason,
                const rollout_actor *who, sx_arena *a, deploy_record **out,
                sx_err *err) SX_MUSTCHECK;

/* Counts what ended a blue-green hold in sextant_rollout_bluegreen_total{outcome}:
 * "promoted" (operator), "promoted_on_timeout", "rolled_back_on_timeout". */
void rollout_count_bluegreen(struct sx_server *srv, const char *outcome);

/* One step of the driver for deployment id if replica holds its lease: starts it,
 * tallies the current wave and completes, fails or advances it, finishes a cancel or a
 * rollback. Does nothing when there is nothing to do yet. *wave_seconds is the duration
 * of a wave it completed, else 0. */
int rollout_step(struct sx_server *srv, const char *id, const char *replica, double *wave_seconds,
                 sx_err *err) SX_MUSTCHECK;

/* The REST form of a deployment (waves included when loaded). New reference. */
json_t *rollout_deployment_json(const deploy_record *d);

#endif
