#!/usr/bin/env bash
# test_fleet_views.sh — the fleet views against the real daemon, PostgreSQL and Redis:
# proxies and live events written with psql at known ages show in
# GET /api/v1/fleet/topology (states, current / behind, versions per group, replicas),
# /fleet/health (per-minute cells rebuilt from the events and node status),
# /fleet/metrics (ACKs, NACKs, pushes summed over the replicas' heartbeats, publish →
# ACK latency, streams per replica) and
# /deployments/{id}/timeline (each wave's first ACK per proxy, NACKs grouped by
# message); bad windows are 400, unknown groups and deployments 404; a role scoped to
# some groups sees only their rows.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init fleet_views
export SEXTANT_FLEET_STALE_AFTER=120s SEXTANT_FLEET_DISCONNECTED_AFTER=300s
api_policy 'operator *=*' 'viewer *=read' 'core-viewer proxies=read@core' 'core-viewer deployments=read@core'
api_serve
VIEW=$(api_token victor viewer)
OPER=$(api_token olga operator)
CORE=$(api_token carla core-viewer)

# Two configs in group edge: snapshots 1 and 2, the group's current version is 2.
call_status "POST /configs web" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body web edge "$(api_spec 10080 a.example)")"
CFG=$(jv .id)
call_status "POST /configs api" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body api edge "$(api_spec 10081 b.example)")"
check "group edge is at version 2" [ "$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = 'edge'")" = 2 ]

# Five proxies seen for two hours; n-down left 30 minutes ago.
sql "INSERT INTO proxy_nodes (node_id, group_name, replica_id, connected, first_seen, last_seen,
                              connected_at, disconnected_at) VALUES
       ('n-cur',   'edge', 'r-a', true,  now() - interval '2 hours', now(), now() - interval '2 hours', NULL),
       ('n-nack',  'edge', 'r-a', true,  now() - interval '2 hours', now(), now() - interval '2 hours', NULL),
       ('n-old',   'edge', 'r-b', true,  now() - interval '2 hours', now(), now() - interval '2 hours', NULL),
       ('n-stale', 'edge', 'r-b', true,  now() - interval '2 hours', now() - interval '200 seconds',
                   now() - interval '2 hours', NULL),
       ('n-down',  'edge', 'r-b', false, now() - interval '2 hours', now(), now() - interval '2 hours',
                   now() - interval '30 minutes'),
       ('c-1',     'core', 'r-c', true,  now() - interval '2 hours', now(), now() - interval '2 hours', NULL);
     INSERT INTO node_status (node_id, acked_snapshot_version, acked_at, last_nack_version,
                              last_nack_error, last_nack_at, nack_count) VALUES
       ('n-cur',   2, now(), NULL, NULL, NULL, 0),
       ('n-nack',  2, now(), 2, 'bad listener', now() + interval '1 second', 1),
       ('n-old',   1, now(), NULL, NULL, NULL, 0),
       ('n-stale', 2, now(), NULL, NULL, NULL, 0),
       ('n-down',  1, now(), NULL, NULL, NULL, 0)" >/dev/null

# A deployment of web v1 to edge at version 2: wave 0 (n-cur, n-nack) started 20 min
# ago, wave 1 (n-old) 3 min ago, wave 2 not yet.
DEP=6f1c0c7e-0d57-4c1e-9d7a-4b8a2f1e9c01
sql "INSERT INTO deployments (id, config_id, config_version, created_by, state, groups)
       VALUES ('$DEP', '$CFG', 1, 'olga', 'completed', '{edge}');
     INSERT INTO deployment_waves (deployment_id, wave_index, state, node_ids, target_snapshots, started_at) VALUES
       ('$DEP', 0, 'completed',   '{n-cur,n-nack}', '{\"edge\": 2}', now() - interval '20 minutes'),
       ('$DEP', 1, 'in_progress', '{n-old}',        '{\"edge\": 2}', now() - interval '3 minutes'),
       ('$DEP', 2, 'pending',     '{n-stale}',      '{\"edge\": 2}', NULL);
     INSERT INTO events (at, type, replica_id, node_id, group_name, data) VALUES
       (now() - interval '19 minutes', 'config_applied',  'r-a', 'n-cur',  'edge', '{\"version\": 2}'),
       (now() - interval '18 minutes', 'config_applied',  'r-a', 'n-cur',  'edge', '{\"version\": 2}'),
       (now() - interval '19 minutes', 'config_applied',  'r-a', 'n-nack', 'edge', '{\"version\": 1}'),
       (now() - interval '10 minutes', 'config_rejected', 'r-a', 'n-nack', 'edge', '{\"version\": 2, \"error\": \"bad listener\"}'),
       (now() - interval '5 minutes',  'config_applied',  'r-a', 'n-nack', 'edge', '{\"version\": 2}'),
       (now() - interval '2 minutes',  'config_rejected', 'r-b', 'n-old',  'edge', '{\"version\": 2, \"error\": \"bad listener\"}'),
       (now() - interval '90 seconds', 'config_rejected', 'r-b', 'n-old',  'edge', '{\"version\": 2, \"error\": \"bad cluster\"}'),
       (now() - interval '100 minutes','config_rejected', 'r-b', 'n-old',  'edge', '{\"version\": 1, \"error\": \"too old\"}'),
       (now(),                         'config_applied',  'r-a', 'n-cur',  'edge', '{\"version\": 2}'),
       (now() - interval '1 minute',   'proxy_stale',     'leader-x', 'n-stale', 'edge', '{}')" >/dev/null

# ---- topology
call_status "GET /fleet/topology" 200 api_call "$VIEW" GET /api/v1/fleet/topology
check "topology: edge at current 2 and latest 2" \
    jtrue 'const g = j.groups.find(g => g.group === "edge"); g.current_version === 2 && g.latest_version === 2'
check "topology: edge counts by state" \
    jtrue 'const c = j.groups.find(g => g.group === "edge").counts; c.total === 5 && c.connected === 3 && c.stale === 1 && c.disconnected === 1 && c.nacking === 1'
check "topology: three hold the current version, n-old is behind" \
    jtrue 'const c = j.groups.find(g => g.group === "edge").counts; c.current === 3 && c.behind === 1 && c.ahead === 0'
check "topology: version distribution of the proxies not disconnected" \
    [ "$(jv '.groups.find(g => g.group === "edge").versions.map(v => v.version + ":" + v.count).join(",")')" = "1:1,2:3" ]
check "topology: replicas r-a (2 current) and r-b (1 behind, 1 stale, 1 down)" \
    [ "$(jv '.groups.find(g => g.group === "edge").replicas.map(r => [r.replica_id, r.counts.total, r.counts.current, r.counts.behind, r.counts.stale, r.counts.disconnected].join("/")).join(",")')" = "r-a/2/2/0/0/0,r-b/3/1/1/1/1" ]
call_status "GET /fleet/topology?group=edge" 200 api_call "$VIEW" GET "/api/v1/fleet/topology?group=edge"
check "?group=edge: only edge" [ "$(jv '.groups.map(g => g.group).join(",")')" = edge ]
call_error "GET /fleet/topology?group=nowhere" 404 not_found api_call "$VIEW" GET "/api/v1/fleet/topology?group=nowhere"

# ---- health per minute (index 59 is the present minute)
call_status "GET /fleet/health" 200 api_call "$VIEW" GET /api/v1/fleet/health
check "health: 60 minutes of edge" jtrue 'j.minutes === 60 && j.groups.find(g => g.group === "edge").cells.length === 60'
check "health: 40 min ago all five were connected" \
    jtrue 'const c = j.groups.find(g => g.group === "edge").cells[19]; c.connected === 5 && c.disconnected === 0'
check "health: 20 min ago n-down was gone" \
    jtrue 'const c = j.groups.find(g => g.group === "edge").cells[39]; c.connected === 4 && c.disconnected === 1'
check "health: now 3 connected, 1 stale, 1 disconnected, 1 NACKing" \
    jtrue 'const c = j.groups.find(g => g.group === "edge").cells[59]; c.connected === 3 && c.stale === 1 && c.disconnected === 1 && c.nacking === 1'
check "health: n-nack NACKing for the 5 minutes between its NACK and its ACK" \
    jtrue 'const cs = j.groups.find(g => g.group === "edge").cells; cs.slice(40, 59).filter(c => c.nacking >= 1).length >= 5 && cs[20].nacking === 0'
check "health: streams per replica, r-b lost n-down" \
    jtrue 'const a = j.replicas.find(r => r.replica_id === "r-a").streams, b = j.replicas.find(r => r.replica_id === "r-b").streams; a.length === 60 && a[10] === 2 && b[10] === 3 && b[59] === 2'
call_status "GET /fleet/health?window=5&group=edge" 200 api_call "$VIEW" GET "/api/v1/fleet/health?window=5&group=edge"
check "?window=5: five cells" jtrue 'j.minutes === 5 && j.groups.length === 1 && j.groups[0].cells.length === 5'
call_error "GET /fleet/health?group=nowhere" 404 not_found api_call "$VIEW" GET "/api/v1/fleet/health?group=nowhere"
for w in 0 -1 abc 1441 1.5; do
    call_error "GET /fleet/health?window=$w" 400 invalid_argument api_call "$VIEW" GET "/api/v1/fleet/health?window=$w"
done
check "the 400 names the window" [ "$(jv '.error.details[0].path')" = window ]

# ---- metrics
call_status "GET /fleet/metrics" 200 api_call "$VIEW" GET /api/v1/fleet/metrics
check "metrics: 60 minutes" jtrue 'j.minutes === 60 && j.series.length === 60'
check "metrics: 5 ACKs and 3 NACKs in the hour" \
    jtrue 'j.series.reduce((n, s) => n + s.acks, 0) === 5 && j.series.reduce((n, s) => n + s.nacks, 0) === 3'
check "metrics: the present ACK has a publish → ACK latency, earlier ones (before the publish) none" \
    jtrue 'const l = j.series.filter(s => s.latency_p50_ms !== null); l.length === 1 && l[0].latency_p50_ms >= 0 && l[0].latency_max_ms >= l[0].latency_p50_ms'
check "metrics: streams per replica (the sweep that found n-stale silent holds no stream)" jtrue 'j.replicas.map(r => r.replica_id).join(",") === "r-a,r-b,r-c"'
call_error "GET /fleet/metrics?window=2000" 400 invalid_argument api_call "$VIEW" GET "/api/v1/fleet/metrics?window=2000"

# Pushes per minute: each replica's heartbeat carries its last hour (replicas.
# pushes_per_minute); the metrics sum them per minute over every replica. r-x and r-y
# pushed 7 and 5 ten minutes ago, r-y 2 in this minute and 9 two hours ago (outside).
M0=$(sql "SELECT extract(epoch FROM date_trunc('minute', now()))::bigint")
sql "INSERT INTO replicas (replica_id, version, http_address, grpc_address, started_at, pushes_per_minute)
     VALUES ('r-x', 'test', 'x:1', 'x:2', now(), jsonb_build_object(($M0 - 600)::text, 7)),
            ('r-y', 'test', 'y:1', 'y:2', now(), jsonb_build_object(($M0 - 600)::text, 5,
                                                                   $M0::text, 2, ($M0 - 7200)::text, 9))"
call_status "GET /fleet/metrics (pushes)" 200 api_call "$VIEW" GET /api/v1/fleet/metrics
check "metrics: 12 pushes ten minutes ago (two replicas), 2 in this minute, none older than the window" \
    jtrue "const at = (t) => j.series[(t - Date.parse(j.start) / 1000) / 60].pushes;
           at($M0 - 600) === 12 && at($M0) === 2 && j.series.reduce((n, s) => n + s.pushes, 0) === 14"
check "a replica's own heartbeat writes its pushes (none here: no proxy connected)" \
    [ "$(sql "SELECT pushes_per_minute FROM replicas WHERE replica_id NOT IN ('r-x', 'r-y')")" = "{}" ]

# ---- deployment timeline
call_status "GET /deployments/$DEP/timeline" 200 api_call "$VIEW" GET "/api/v1/deployments/$DEP/timeline"
check "timeline: the two waves that started" [ "$(jv '.waves.map(w => w.index).join(",")')" = "0,1" ]
check "timeline: wave 0's first ACK of version 2 per proxy, in time order" \
    [ "$(jv '.waves[0].acks.map(a => a.node_id + "@" + Math.round(a.offset_s / 60)).join(",")')" = "n-cur@1,n-nack@15" ]
check "timeline: wave 1 has no ACK yet" jtrue 'j.waves[1].acks.length === 0'
check "timeline: NACKs of version 2 grouped by message" \
    [ "$(jv '.nack_errors.map(e => e.error + ":" + e.count + ":" + e.nodes).join(",")')" = "bad listener:2:2,bad cluster:1:1" ]
call_error "GET /deployments/<unknown>/timeline" 404 not_found api_call "$VIEW" GET /api/v1/deployments/00000000-0000-4000-8000-000000000000/timeline
call_error "GET /deployments/not-a-uuid/timeline" 404 not_found api_call "$VIEW" GET /api/v1/deployments/not-a-uuid/timeline
# ---- a role scoped to group core
call_status "scoped: GET /fleet/topology" 200 api_call "$CORE" GET /api/v1/fleet/topology
check "scoped: only core" [ "$(jv '.groups.map(g => g.group + ":" + g.counts.total).join(",")')" = "core:1" ]
call_error "scoped: GET /fleet/topology?group=edge" 404 not_found api_call "$CORE" GET "/api/v1/fleet/topology?group=edge"
call_status "scoped: GET /fleet/health" 200 api_call "$CORE" GET /api/v1/fleet/health
check "scoped: health of core only, no replica streams" jtrue 'j.groups.map(g => g.group).join() === "core" && j.replicas.length === 0'
call_error "scoped: GET /fleet/metrics (every group's figures)" 404 not_found api_call "$CORE" GET /api/v1/fleet/metrics
call_error "scoped: the timeline of a deployment of edge" 404 not_found api_call "$CORE" GET "/api/v1/deployments/$DEP/timeline"
call_error "GET /fleet/topology without a token" 401 unauthenticated api_call "" GET /api/v1/fleet/topology

api_stop
finish
