/*
 * fleetview.h — the read side of the fleet views: topology and version distribution per
 * group, per-minute proxy health, the ACK / NACK / latency metrics of the last hour,
 * and a deployment's wave timeline.
 *
 * Like server/catalog.h, every function takes typed input, takes a pooled connection of
 * its own for the call and gives it back before it returns, and puts its answer (a JSON
 * document, see storage/repo_fleet.h) in the caller's arena. Node states use the
 * configured fleet.stale_after / fleet.disconnected_after.
 *
 * err must not be NULL. Failures: SX_EUNAVAILABLE when the database is not wired or
 * unreachable, SX_EINVAL for bad input, SX_ENOTFOUND for a group that has no proxies,
 * snapshots or settings, or a deployment that does not exist.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef SX_SERVER_FLEETVIEW_H
#define SX_SERVER_FLEETVIEW_H

#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/repo_deployments.h"
#include "storage/repo_fleet.h"

struct sx_server;

/* The default window of the per-minute views, in minutes. */
#define FLEETVIEW_WINDOW_DEFAULT 60

/* Topology of every group, or of group only (not NULL): fleet_repo_topology's array. */
int fleetview_topology(struct sx_server *srv, const char *group, sx_arena *a, json_t **out,
                       sx_err *err) SX_MUSTCHECK;

/* Proxy health per minute over the last minutes minutes (fleet_repo_health). */
int fleetview_health(struct sx_server *srv, int minutes, const char *group, sx_arena *a,
                     json_t **out, sx_err *err) SX_MUSTCHECK;

/* fleet_repo_metrics over the last minutes minutes, with "replicas" of
 * fleet_repo_health added: the open streams of each replica per minute. */
int fleetview_metrics(struct sx_server *srv, int minutes, sx_arena *a, json_t **out,
                      sx_err *err) SX_MUSTCHECK;

/* Deployment id (*d, with its waves, for the caller's scope check) and its timeline
 * (fleet_repo_timeline). */
int fleetview_timeline(struct sx_server *srv, const char *id, sx_arena *a, deploy_record **d,
                       json_t **out, sx_err *err) SX_MUSTCHECK;

#endif
