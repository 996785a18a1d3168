/*
 * repo_fleet.h — the fleet at a glance: aggregates of proxy_nodes / node_status per
 * group and replica, per-minute health and ACK figures rebuilt from the events table,
 * and the ACKs and NACKs of a deployment's waves.
 *
 * Every function is one read-only statement whose answer is a JSON document built by
 * PostgreSQL (jsonb_build_object), so a group of ten thousand proxies travels as a few
 * counts, never as rows. Node states use the thresholds of node_thresholds
 * (storage/repo_nodes.h) for the present minute; past minutes are rebuilt from the live
 * events (proxy_connected, proxy_disconnected, proxy_stale, config_applied,
 * config_rejected) kept for events.retention, falling back to a node's connected_at /
 * disconnected_at when it wrote no event in the window.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Failures:
 * SX_EINVAL for bad input (message names the field), database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_FLEET_H
#define SX_STORAGE_REPO_FLEET_H

#include <stdbool.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_nodes.h"

/* Longest window of the per-minute reads, in minutes (one day). */
#define FLEET_REPO_MINUTES_MAX 1440

/* *known is true when group has proxies, snapshots or settings. */
int fleet_repo_group_known(pg_conn *c, const char *group, bool *known, sx_err *err) SX_MUSTCHECK;

/*
 * The topology of every group (or only group, when not NULL): a JSON array ordered by
 * group of {"group", "current_version" (the snapshot its proxies receive unless a
 * deployment pins them, proxy_groups.current_snapshot_version; null when none),
 * "latest_version" (its newest snapshot, staged ones included; null when none), "counts",
 * "versions": [{"version" (null: never ACKed), "count"}] of the proxies that are not
 * disconnected, "replicas": [{"replica_id", "counts"}]}, where counts is {"total",
 * "connected", "stale", "disconnected", "nacking", "current", "ahead", "behind"}:
 * nacking, current (holds current_version), ahead (holds a newer version: a deployment
 * moved it) and behind (holds an older one or none) count only proxies that are not
 * disconnected. *out is owned by a.
 */
int fleet_repo_topology(pg_conn *c, const char *group, const node_thresholds *t, sx_arena *a,
                        json_t **out, sx_err *err) SX_MUSTCHECK;

/*
 * Proxy health per minute over the last minutes (1..FLEET_REPO_MINUTES_MAX) minutes, the
 * last one being the present minute: {"start" (RFC 3339, the first minute), "minutes",
 * "groups": [{"group", "cells": [{"connected", "stale", "disconnected", "nacking"}, one
 * per minute]}], "replicas": [{"replica_id", "streams": [open streams (connected or
 * stale proxies) per minute]}]}, of every group or only group (not NULL). A proxy is
 * NACKing in a minute when its last answer by then was a NACK. *out is owned by a.
 */
int fleet_repo_health(pg_conn *c, int minutes, const char *group, const node_thresholds *t,
                      sx_arena *a, json_t **out, sx_err *err) SX_MUSTCHECK;

/*
 * ACK, NACK and push figures per minute over the last minutes minutes: {"start",
 * "minutes", "series": [{"acks", "nacks", "pushes", "latency_p50_ms", "latency_p95_ms",
 * "latency_max_ms"}]}, pushes being the responses every replica in the replicas table
 * sent in that minute (each heartbeat's pushes_per_minute, server/replicas.h), latency
 * being from a snapshot's creation to a proxy's ACK of it (null in a minute without
 * one), leaving out the ACKs of proxies that connected after the snapshot was made
 * (they never waited for it). *out is owned by a.
 */
int fleet_repo_metrics(pg_conn *c, int minutes, sx_arena *a, json_t **out,
                       sx_err *err) SX_MUSTCHECK;

/*
 * The ACKs and NACKs of deployment id's waves, from the events of the wave's proxies
 * since the wave started that name the wave's target version of their group:
 * {"waves": [{"index", "acks": [{"node_id", "group", "version", "at", "offset_s"
 * (seconds since the wave started)}] first ACK per proxy in time order}],
 * "nack_errors": [{"error", "count", "nodes"}] most frequent first}. A deployment
 * that does not exist gives empty arrays (the caller checks existence). *out is owned
 * by a. SX_EINVAL for an id that is not a UUID.
 */
int fleet_repo_timeline(pg_conn *c, const char *id, sx_arena *a, json_t **out,
                        sx_err *err) SX_MUSTCHECK;

#endif
