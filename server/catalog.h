/*
 * catalog.h — the read side of the REST API: configs and their versions, snapshots,
 * proxy groups, proxies, their NACKs, the audit log, deployments and the replicas, one
 * page or one record at a time, and a search across them by name or id.
 *
 * Every function takes typed input (ids, filters, a page size and cursor), takes a
 * pooled connection of its own for the call and gives it back before it returns, and
 * puts what it found in the caller's arena. None of them sees an HTTP request. Pages
 * follow the repositories' keyset paging: limit 0 is the default page size, cursor NULL
 * the first page, and next_cursor NULL on the last page.
 *
 * err must not be NULL. Failures: SX_EUNAVAILABLE when the database is not wired or
 * unreachable (the pool's own code otherwise, such as SX_ETIMEOUT), SX_ENOTFOUND for a
 * named record that does not exist, and whatever the repository reports.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef SX_SERVER_CATALOG_H
#define SX_SERVER_CATALOG_H

#include <stdbool.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/groups.h"
#include "storage/repo_audit.h"
#include "storage/repo_configs.h"
#include "storage/repo_deployments.h"
#include "storage/repo_events.h"
#include "storage/repo_k8s_status.h"
#include "storage/repo_nodes.h"
#include "storage/repo_replicas.h"
#include "storage/repo_search.h"
#include "storage/repo_snapshots.h"

struct sx_server;

/* The pieces every read here is made of, for the other modules that take a connection
 * for one call (server/fleetview.c, server/k8s/status_store.c): a pooled connection, or NULL with
 * err set (SX_EUNAVAILABLE when srv has no database); giving c (NULL allowed) back to the pool,
 * returning rc; and the configured fleet.stale_after / fleet.disconnected_after. */
pg_conn *catalog_acquire(const struct sx_server *srv, sx_err *err);
int catalog_release(const struct sx_server *srv, pg_conn *c, int rc);
node_thresholds catalog_thresholds(const struct sx_server *srv);

/* One page of configs matching f. */
int catalog_configs(struct sx_server *srv, const cfg_filter *f, sx_arena *a, cfg_list *out,
                    sx_err *err) SX_MUSTCHECK;

/* The status written back to the Kubernetes objects of managed config source_ref (its
 * Gateway first, then the objects attached to it); none is not an error. */
int catalog_k8s_status(struct sx_server *srv, const char *source_ref, sx_arena *a,
                       k8s_status_record **out, size_t *count, sx_err *err) SX_MUSTCHECK;

/* Config id with its latest version (spec included). include_deleted also finds a
 * deleted config. */
int catalog_config(struct sx_server *srv, const char *id, bool include_deleted, sx_arena *a,
                   cfg_record **cfg, cfg_version **latest, sx_err *err) SX_MUSTCHECK;

/* One page of config id's versions, newest first (specs not loaded). */
int catalog_versions(struct sx_server *srv, const char *id, int limit, const char *cursor,
                     sx_arena *a, cfg_version_list *out, sx_err *err) SX_MUSTCHECK;

/* Version v of config id, spec included. */
int catalog_version(struct sx_server *srv, const char *id, int v, sx_arena *a, cfg_version **out,
                    sx_err *err) SX_MUSTCHECK;

/* Versions *from and *to of config id (deleted or not), for a diff. 0 picks the default:
 * *to the latest version, *from the one before *to (or 1); both are set to the versions
 * read. */
int catalog_version_pair(struct sx_server *srv, const char *id, int *from, int *to, sx_arena *a,
                         cfg_version **vfrom, cfg_version **vto, sx_err *err) SX_MUSTCHECK;

/* One page of snapshots: of group, newest first, or of every group when group is NULL
 * or "". */
int catalog_snapshots(struct sx_server *srv, const char *group, int limit, const char *cursor,
                      sx_arena *a, snap_list *out, sx_err *err) SX_MUSTCHECK;

/* Snapshot id with its IR, and in *sources (an array of s->source_count, in a) the
 * config each source was built from, NULL where it cannot be read; a deleted config
 * keeps its name. */
int catalog_snapshot(struct sx_server *srv, long long id, sx_arena *a, snap_record **out,
                     cfg_record ***sources, sx_err *err) SX_MUSTCHECK;

/* One proxy group with its settings (server/groups.h): any valid name is a group, with
 * its defaults until it has settings or snapshots. SX_EINVAL for a bad name. */
int catalog_group(struct sx_server *srv, const char *group, sx_arena *a, groups_info *out,
                  sx_err *err) SX_MUSTCHECK;
/* The data planes each of the n groups serves (the default for those that never chose),
 * in *planes (n entries in a). */
int catalog_group_planes(struct sx_server *srv, const char *const *groups, size_t n, sx_arena *a,
                         unsigned **planes, sx_err *err) SX_MUSTCHECK;

/* One page of proxy groups and, in *counts (an array of out->count, in a), the fleet's
 * health in each of them. */
int catalog_groups(struct sx_server *srv, int limit, const char *cursor, sx_arena *a,
                   snap_group_list *out, node_state_counts **counts, sx_err *err) SX_MUSTCHECK;

/* One page of proxies matching f; f->thresholds are replaced by the configured
 * fleet.stale_after / fleet.disconnected_after. */
int catalog_proxies(struct sx_server *srv, const node_filter *f, sx_arena *a, node_list *out,
                    sx_err *err) SX_MUSTCHECK;

/* Proxy node_id with its state under the configured thresholds. */
int catalog_proxy(struct sx_server *srv, const char *node_id, sx_arena *a, node_record **out,
                  sx_err *err) SX_MUSTCHECK;

/* The snapshots (IR included) node n should have (*desired: its pinned version, else its
 * group's latest) and last acknowledged (*acked); NULL where there is none. */
int catalog_proxy_snapshots(struct sx_server *srv, const node_record *n, sx_arena *a,
                            snap_record **desired, snap_record **acked, sx_err *err) SX_MUSTCHECK;

/* One page of the NACK events (config_rejected) of node_id, newest first. */
int catalog_proxy_nacks(struct sx_server *srv, const char *node_id, int limit, const char *cursor,
                        sx_arena *a, event_page *out, sx_err *err) SX_MUSTCHECK;

/* One page of audit entries matching f, newest first. */
int catalog_audit(struct sx_server *srv, const audit_filter *f, sx_arena *a, audit_list *out,
                  sx_err *err) SX_MUSTCHECK;

/* One page of deployments matching f. */
int catalog_deployments(struct sx_server *srv, const deploy_filter *f, sx_arena *a,
                        deploy_list *out, sx_err *err) SX_MUSTCHECK;

/* Deployment id with its waves. */
int catalog_deployment(struct sx_server *srv, const char *id, sx_arena *a, deploy_record **out,
                       sx_err *err) SX_MUSTCHECK;

/* One page of the replicas sharing the database; alive when heard from within three
 * leader.heartbeat intervals. */
int catalog_replicas(struct sx_server *srv, int limit, const char *cursor, sx_arena *a,
                     replica_list *out, sx_err *err) SX_MUSTCHECK;

/* The proxies, configs, groups and deployments whose name or id contains q, at most
 * limit of each kind (storage/repo_search.h; SX_EINVAL for a bad q or limit). */
int catalog_search(struct sx_server *srv, const char *q, int limit, sx_arena *a, search_list *out,
                   sx_err *err) SX_MUSTCHECK;

#endif
