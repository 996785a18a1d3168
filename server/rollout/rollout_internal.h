/*
 * rollout_internal.h — what the files of the rollout module share and nothing else
 * sees: the audit, event and pin-notification writers, and the steps both an operator
 * and the driver take (start a wave, begin a rollback). rollout.c defines them and the
 * operator actions; rollout_plan.c plans and creates deployments; rollout_step.c holds
 * the driver's steps. Only server/rollout/rollout*.c include it.
 */
#ifndef SX_ROLLOUT_ROLLOUT_INTERNAL_H
#define SX_ROLLOUT_ROLLOUT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/rollout/rollout.h"
#include "storage/pg_pool.h"
#include "storage/repo_deployments.h"
#include "storage/repo_snapshots.h"

/* The log component of every line the rollout module writes. */
#define ROLLOUT_LOG "rollouts"

struct sx_server;

/* Hands j to the arena (decref'd when it is freed); returns j. */
json_t *rollout_own(sx_arena *a, json_t *j);
/* This replica's id ("" when none is configured). */
const char *rollout_replica(const struct sx_server *srv);
/* v[0..n) as a JSON array of strings; new reference. */
json_t *rollout_strv(char **v, size_t n);

/* Appends an audit row for a deployment change on c; who NULL = the driver ("system").
 * Takes details. */
int rollout_audit(pg_conn *c, const struct sx_server *srv, const rollout_actor *who,
                  const char *action, const char *resource_type, const char *resource_id,
                  json_t *details, sx_err *err) SX_MUSTCHECK;
/* Writes one event of deployment d on c; takes data. */
int rollout_emit(pg_conn *c, const struct sx_server *srv, const char *type, const deploy_record *d,
                 json_t *data, sx_err *err) SX_MUSTCHECK;
/* Announces d's pins (PINS_NOTIFY_CHANNEL), delivered at commit. */
int rollout_notify_pins(pg_conn *c, const deploy_record *d, sx_err *err) SX_MUSTCHECK;

/* The staged snapshot version of group in d (0 when none). */
long long rollout_target_of(const deploy_record *d, const char *group);
/* Moves wave k of d from state expected to state. */
int rollout_set_wave_state(pg_conn *c, const deploy_record *d, int k, int expected, int state,
                           sx_err *err) SX_MUSTCHECK;
/* Moves wave k's nodes to the staged snapshots and marks it started (d in_progress). */
int rollout_start_wave(pg_conn *c, struct sx_server *srv, const deploy_record *d, int k,
                       sx_err *err) SX_MUSTCHECK;
/* Starts the rollback of d from state `from`: undoes a promotion, releases the pins,
 * marks the started waves rolled back and the pending ones canceled, audits and emits.
 * *written gets the snapshots an undone promotion wrote, for the cache. */
int rollout_begin_rollback(pg_conn *c, struct sx_server *srv, deploy_record *d, deploy_state from,
                           const char *reason, const rollout_actor *who, sx_arena *a,
                           snap_record ***written, size_t *nwritten, sx_err *err) SX_MUSTCHECK;

/* Blue-green: d is in progress, green (wave 0) completed and blue (wave 1) not started. */
bool rollout_awaiting_promotion(const deploy_record *d);
/* Blue-green: starts the blue wave of d (rollout_awaiting_promotion holds), audits
 * "deployment.promote" with trigger ("operator" or "timeout") and reason; who NULL = the
 * driver. */
int rollout_promote_blue(pg_conn *c, struct sx_server *srv, const deploy_record *d,
                         const char *trigger, const char *reason, const rollout_actor *who,
                         sx_err *err) SX_MUSTCHECK;

#endif
