/*
 * driver.h — the component that moves deployments forward on every replica.
 *
 * Every rollouts.tick it lists the deployments that need driving (pending,
 * in_progress, canceling, rolling_back), takes or renews the lease on each
 * (deploy_repo_claim: rollouts.lease, database clock) and takes one step of each it
 * holds (rollout_step); between ticks, when woken (rollout_driver_wake: an ACK, a NACK,
 * a deployment change or a pin NOTIFY), it steps the deployments it already drives. A
 * replica that dies stops renewing; once its leases lapse another replica's next tick
 * takes its deployments over and continues from the stored state. It also keeps the
 * sextant_deployments{state} gauge and observes sextant_rollout_wave_duration_seconds.
 * Not a readiness dependency.
 */
#ifndef SX_ROLLOUT_DRIVER_H
#define SX_ROLLOUT_DRIVER_H

#include "server/base/err.h"

struct sx_server;
typedef struct rollout_driver rollout_driver;

/* Creates the driver for srv (borrowed) and registers its metrics. Never NULL. */
rollout_driver *rollout_driver_create(struct sx_server *srv);
/* Registers the component "rollouts" with srv->sup, subscribes the driver to the events
 * and assignments channels of srv->listener and hooks it to srv->nodes' flushes (each
 * when present). */
int rollout_driver_register(rollout_driver *d, sx_err *err) SX_MUSTCHECK;
/* Makes the driver take its next step soon (within its minimum gap between steps)
 * instead of at the next tick. Thread-safe; never blocks on the database. */
void rollout_driver_wake(rollout_driver *d);
/* Frees the driver; its thread must have stopped, and the listener and node-status
 * queue it is hooked to must be gone. NULL allowed. */
void rollout_driver_destroy(rollout_driver *d);

#endif
