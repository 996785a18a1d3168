# shellcheck shell=bash
# rollout.sh — what the rollout tests share, on top of tests/conformance/lib/harness.sh
# (scratch folder, PostgreSQL + Redis, migrated database, `sextant serve` replicas, echo
# backends, cleanup): JWT auth, short rollout ticks and leases, REST calls, JSON
# queries (q.js), a fleet of real xDS clients (fleet.js) and its state, deployments,
# server-sent events captures, and a dump of all of it when a test fails.
#
#   source "$SEXTANT_SOURCE_DIR/tests/integration/rollout/lib/rollout.sh"
#   rt_init NAME                       # services, auth, SEXTANT_ROLLOUTS_TICK/LEASE
#   rt_serve r1                        # replica r1 (R1_HTTP, R1_GRPC); REST goes to the first
#   G=rt-demo; rt_old_config           # echo backends OLD and NEW; CONFIG_ID, V1
#   rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix d- --kinds grpcjs:2,ads:4   # FLEET_PORT, GRPCJS
#   V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")")
#   rt_apply "$CONFIG_ID" '{"version": 2, ...}'   # ST (status), DEPLOY, body in $WORK/body
#   wait_for 60 rt_deploy_in "$DEPLOY" completed
#   finish
#
# Tests using it are under tests/integration/rollout/ (label integration); each runs
# alone with `ctest --test-dir BUILD -R integration_rollout_test_rollout_rolling`.

# shellcheck source=tests/conformance/lib/harness.sh
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

RT_LIB="$SRC/tests/integration/rollout/lib"
TOKEN=
FLEET_PORT=
HTTP_PORT=
RT_DEPLOYMENTS=() # ids the dump on failure describes

# rt_init NAME: scratch folder, PostgreSQL + Redis + migrations, JWT auth on, rate limits
# out of the way, rollout ticks and leases short (overridable from the environment),
# TOKEN for an operator.
rt_init() {
    conf_init "$1"
    trap rt_cleanup EXIT
    conf_services || exit 1
    export SEXTANT_AUTH_ENABLED=true
    export SEXTANT_AUTH_HS256_SECRET="rollout-tests-secret-0123456789abcdef-0123"
    export SEXTANT_RATELIMIT_WRITE_RATE=1000 SEXTANT_RATELIMIT_WRITE_BURST=1000
    export SEXTANT_RATELIMIT_READ_RATE=10000 SEXTANT_RATELIMIT_READ_BURST=10000
    export SEXTANT_ROLLOUTS_TICK=${SEXTANT_ROLLOUTS_TICK:-200ms}
    export SEXTANT_ROLLOUTS_LEASE=${SEXTANT_ROLLOUTS_LEASE:-3s}
    # ACKs reach node_status (where the driver counts them) within 100 ms.
    export SEXTANT_NODES_FLUSH_INTERVAL=${SEXTANT_NODES_FLUSH_INTERVAL:-100ms}
    TOKEN=$(token rollout-tester operator) || exit 1
    [ -n "$TOKEN" ] || { echo "rollout: sextant token minted nothing" >&2; exit 1; }
}

# rt_serve NAME: a replica (see conf_serve); the first one started receives the REST
# calls until rt_use says otherwise.
rt_serve() {
    conf_serve "$1" || return 1
    local up
    up=$(echo "$1" | tr '[:lower:]' '[:upper:]')
    local var="${up}_HTTP"
    [ -n "$HTTP_PORT" ] || HTTP_PORT=${!var}
}

# rt_use NAME: REST calls go to replica NAME from now on.
rt_use() {
    local up var
    up=$(echo "$1" | tr '[:lower:]' '[:upper:]')
    var="${up}_HTTP"
    HTTP_PORT=${!var}
}

# rt_cleanup: on failure, what a reader needs first (deployments, fleet, events), then
# the harness's cleanup (logs' tails, processes, services).
RT_DUMPED=0
rt_cleanup() {
    local rc=$?
    if { [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; } && [ "$RT_DUMPED" = 0 ]; then
        rt_dump >&2 2>/dev/null || true
    fi
    (exit "$rc")
    conf_cleanup
}

# rt_finish [REPLICA...]: the end of a test: the dump when a check failed (while the
# fleet and the replicas still answer), the fleet stopped, each named replica stopped
# with SIGTERM and checked to exit 0, then finish.
rt_finish() {
    local r
    if [ "$FAILS" -gt 0 ]; then
        rt_dump >&2 2>/dev/null || true
        RT_DUMPED=1
    fi
    [ -n "$FLEET_PORT" ] && bg_stop fleet
    FLEET_PORT=
    for r in "$@"; do conf_stop_serve "$r"; done
    finish
}

# rt_check DESCRIPTION COMMAND...: check (tests/lib/shtest.sh) that also returns the
# command's status, for `rt_check ... || show_why`.
rt_check() {
    local what=$1
    shift
    if "$@"; then
        pass "$what"
        return 0
    fi
    fail "$what"
    return 1
}

# ---------------------------------------------------------------- JSON and SQL

# jv EXPR [FILE]: the value at EXPR (.state, .waves[0].acks) of FILE ($WORK/body).
jv() {
    node "$RT_LIB/q.js" "j$1" "${2:-$WORK/body}"
}
# jtrue EXPR [FILE...]: the JavaScript expression over j (FILE, default $WORK/body),
# j2, ... and q.js's helpers is true.
jtrue() {
    local e=$1
    shift
    [ $# -gt 0 ] || set -- "$WORK/body"
    node "$RT_LIB/q.js" --test "$e" "$@"
}
# jq_ EXPR FILE...: prints the expression's value (q.js).
jq_() {
    local e=$1
    shift
    node "$RT_LIB/q.js" "$e" "$@"
}

# ---------------------------------------------------------------- REST

# rt_api METHOD PATH [JSON [curl args...]]: prints the status; body in $WORK/body,
# headers in $WORK/headers.
rt_api() {
    local method=$1 path=$2
    shift 2
    local data=()
    if [ $# -ge 1 ]; then
        [ -n "$1" ] && data=(-H 'Content-Type: application/json' --data-binary "$1")
        shift
    fi
    curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' -X "$method" --max-time 20 \
        -H "Authorization: Bearer $TOKEN" "${data[@]}" "$@" "http://127.0.0.1:$HTTP_PORT$path"
}

# rt_echo_spec BACKEND PORT: a config spec routing xds:///echo.test (listener echo-grpc,
# whose route configuration is named after it) to backend BACKEND at 127.0.0.1:PORT.
# The backend's name is in the route, the cluster and the endpoints, so a marker in it
# is in every resource the change touches (RDS, CDS, EDS), and not in the listener.
rt_echo_spec() {
    node -e '
        const {build} = require(process.argv[1]);
        const s = build([{host: "echo.test", name: process.argv[2], ports: [Number(process.argv[3])], listenerName: "echo-grpc"}]);
        process.stdout.write(JSON.stringify(s));' "$CONF/lib/snapshots.js" "$1" "$2"
}

# rt_config_create NAME GROUP SPEC: POST /api/v1/configs (namespace rollout); sets
# CONFIG_ID. Fails (with the answer on stderr) unless 201.
rt_config_create() {
    local st
    st=$(rt_api POST /api/v1/configs "{\"namespace\":\"rollout\",\"name\":\"$1\",\"groups\":[\"$2\"],\"spec\":$3}")
    if [ "$st" != 201 ]; then
        echo "rollout: POST /api/v1/configs answered $st: $(cat "$WORK/body")" >&2
        return 1
    fi
    # shellcheck disable=SC2034 # for the test that called it
    CONFIG_ID=$(jv .id)
}

# rt_old_config: the echo backends OLD and NEW (ECHO_OLD, ECHO_NEW) and the config
# "web" of group G routing to OLD (CONFIG_ID); V1 is the group's snapshot of it.
rt_old_config() {
    echo_backend OLD || exit 1
    echo_backend NEW || exit 1
    rt_config_create web "$G" "$(rt_echo_spec echo-old "$ECHO_OLD")" || exit 1
    V1=$(rt_group_current "$G")
}

# rt_config_draft ID SPEC [MESSAGE]: PUT a new version as a draft (stored and
# validated, not composed into any snapshot); prints its version.
rt_config_draft() {
    local st
    st=$(rt_api PUT "/api/v1/configs/$1" "{\"spec\":$2,\"draft\":true,\"message\":\"${3:-rollout candidate}\"}")
    if [ "$st" != 200 ] && [ "$st" != 201 ]; then
        echo "rollout: PUT /api/v1/configs/$1 (draft) answered $st: $(cat "$WORK/body")" >&2
        return 1
    fi
    jv .version
}

# rt_group_current GROUP: the group's current snapshot version (what its unpinned nodes
# receive), from the database.
rt_group_current() {
    sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = '$1'"
}

# ---------------------------------------------------------------- deployments

# rt_apply CONFIG_ID BODY: POST .../apply; sets ST to the status (body in $WORK/body);
# on 201 sets DEPLOY and remembers the deployment for the failure dump. (Not to be
# called in $(...): it sets variables.)
ST=
DEPLOY=
rt_apply() {
    ST=$(rt_api POST "/api/v1/configs/$1/apply" "$2")
    if [ "$ST" = 201 ]; then
        DEPLOY=$(jv .id)
        RT_DEPLOYMENTS+=("$DEPLOY")
    fi
}

# rt_deploy WHAT VERSION STRATEGY REASON [MEMBERS]: rt_apply of VERSION to group $G of
# $CONFIG_ID with the STRATEGY object, a 30 s wave timeout and REASON (MEMBERS, more
# JSON members of the request, before the wave timeout); checks it is created (201,
# described as WHAT) or ends the test through r1. Sets DEPLOY and TARGET (the snapshot
# version staged for $G); the answer stays in $WORK/body.
TARGET=
rt_deploy() {
    rt_apply "$CONFIG_ID" "{\"version\":$2,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":$3,${5:+$5,}\"wave_timeout\":\"30s\",\"reason\":\"$4\"}"
    expect_status "$1" 201 "$ST"
    [ "$ST" = 201 ] || rt_finish r1
    TARGET=$(jv ".target_snapshots[\"$G\"]")
}

# rt_deploy_get ID [FILE]: GET /api/v1/deployments/ID into FILE ($WORK/deploy.json);
# true on 200.
rt_deploy_get() {
    local f=${2:-$WORK/deploy.json}
    [ "$(curl -s -o "$f.tmp" -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:$HTTP_PORT/api/v1/deployments/$1")" = 200 ] && mv "$f.tmp" "$f"
}

# rt_deploy_in ID STATE...: the deployment is in one of the states now.
rt_deploy_in() {
    local id=$1 s cur
    shift
    rt_deploy_get "$id" || return 1
    cur=$(jv .state "$WORK/deploy.json")
    for s in "$@"; do [ "$cur" = "$s" ] && return 0; done
    return 1
}

# rt_deploy_true ID EXPR: EXPR (over j = the deployment) holds now.
rt_deploy_true() {
    rt_deploy_get "$1" && jtrue "$2" "$WORK/deploy.json"
}

# rt_deploy_action ID ACTION REASON: POST /api/v1/deployments/ID/ACTION; prints status.
rt_deploy_action() {
    rt_api POST "/api/v1/deployments/$1/$2" "{\"reason\":\"$3\"}"
}

# rt_refused WHAT ID ACTION REASON: POST /api/v1/deployments/ID/ACTION is refused (409).
rt_refused() {
    local st
    st=$(rt_deploy_action "$2" "$3" "$4")
    expect_status "$1" 409 "$st"
}

# rt_audit_count ACTION ID [SQL CONDITION]: audit rows of ACTION on deployment ID.
rt_audit_count() {
    sql "SELECT count(*) FROM audit_log WHERE action = '$1' AND resource_id = '$2'${3:+ AND ($3)}"
}

# rt_db_events ID: the deployment's events from the events table, one per line:
# "id type data".
rt_db_events() {
    sql "SELECT id || ' ' || type || ' ' || data::text FROM events WHERE deployment_id = '$1' ORDER BY id"
}

# ---------------------------------------------------------------- the fleet

# rt_fleet_spec ARGS...: fleet_spec.js (see there) to stdout.
rt_fleet_spec() {
    node "$RT_LIB/fleet_spec.js" "$@"
}

# rt_fleet_start SPEC_FILE: starts fleet.js (log fleet.log); sets FLEET_PORT.
rt_fleet_start() {
    rm -f "$WORK/fleet.port"
    bg_run fleet node "$RT_LIB/fleet.js" --spec "$1" --port-file "$WORK/fleet.port"
    if ! wait_for 30 test -s "$WORK/fleet.port"; then
        echo "rollout: the fleet did not start" >&2
        return 1
    fi
    FLEET_PORT=$(cat "$WORK/fleet.port")
}

# rt_fleet_up ARGS...: the fleet of group G that fleet_spec.js makes of ARGS
# ($WORK/spec.json), started; GRPCJS names its grpc-js clients; a check that every
# client connects and runs V1.
rt_fleet_up() {
    rt_fleet_spec --group "$G" "$@" >"$WORK/spec.json" || exit 1
    rt_fleet_start "$WORK/spec.json" || exit 1
    GRPCJS=$(jq_ 'j.clients.filter(c => c.kind === "grpcjs").map(c => c.id).join(" ")' "$WORK/spec.json")
    local n
    n=$(jq_ 'j.clients.length' "$WORK/spec.json")
    check "$n clients run v$V1" wait_for 40 rt_fleet_all "x.version === '$V1' && x.connected"
}

# rt_acked_all VERSION COUNT: node_status says COUNT connected nodes of group G acked
# VERSION.
rt_acked_all() {
    [ "$(sql "SELECT count(*) FROM node_status s JOIN proxy_nodes p USING (node_id) WHERE p.group_name = '$G' AND p.connected AND s.acked_snapshot_version = $1")" = "$2" ]
}

# rt_fleet_state [FILE]: the fleet's state into FILE ($WORK/fleet.json).
rt_fleet_state() {
    local f=${1:-$WORK/fleet.json}
    curl -sf --max-time 5 -o "$f.tmp" "http://127.0.0.1:$FLEET_PORT/state" && mv "$f.tmp" "$f"
}

# rt_fleet_true EXPR: EXPR over j = the fleet's state (q.js helpers c(id), onv, ...).
rt_fleet_true() {
    rt_fleet_state && jtrue "$1" "$WORK/fleet.json"
}

# rt_fleet_all EXPR [IDS...]: EXPR (over x = a client) holds for every client (or the
# ones named).
rt_fleet_all() {
    local e=$1
    shift
    local ids
    ids=$(printf '"%s",' "$@")
    rt_fleet_true "(($#) ? [${ids%,}].map(id => c(id)) : clients()).every(x => x && ($e))"
}

# rt_fleet_post PATH JSON: POST to the fleet (behaviour, stop, start); true on 2xx.
rt_fleet_post() {
    local body=${2:-}
    [ -n "$body" ] || body='{}'
    curl -sf --max-time 5 -o /dev/null -X POST -H 'Content-Type: application/json' \
        --data-binary "$body" "http://127.0.0.1:$FLEET_PORT$1"
}

# rt_fleet_ids EXPR: ids of the clients (x) for which EXPR holds, space separated.
rt_fleet_ids() {
    rt_fleet_state && jq_ "clients().filter(x => $1).map(x => x.node_id).join(' ')" "$WORK/fleet.json"
}

# rt_watch_start ID OLD_VERSION OLD_BACKEND: watch.js in the background (pid
# PID_watch) checking at every moment that nodes of waves not started yet run the old
# version (and reach OLD_BACKEND) and nodes of completed waves the target; its report
# goes to $WORK/watch.json once the deployment is final.
rt_watch_start() {
    bg_run watch node "$RT_LIB/watch.js" --api "http://127.0.0.1:$HTTP_PORT" --token "$TOKEN" \
        --fleet "http://127.0.0.1:$FLEET_PORT" --deployment "$1" --old-version "$2" \
        --old-backend "$3" --out "$WORK/watch.json"
}

# ---------------------------------------------------------------- server-sent events

# rt_sse_start NAME [LAST_EVENT_ID]: captures GET /api/v1/events of the current replica
# into $WORK/sse_NAME.log (background, pid PID_sse_NAME).
rt_sse_start() {
    local name=$1 last=${2:-}
    local hdr=()
    [ -n "$last" ] && hdr=(-H "Last-Event-ID: $last")
    bg_run "sse_$name" curl -sN --max-time 600 -H "Authorization: Bearer $TOKEN" \
        -H 'Accept: text/event-stream' "${hdr[@]}" "http://127.0.0.1:$HTTP_PORT/api/v1/events"
}

# rt_events_route: true when the replica serves GET /api/v1/events (not 404).
rt_events_route() {
    local st
    st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H "Authorization: Bearer $TOKEN" \
        -H 'Accept: text/event-stream' "http://127.0.0.1:$HTTP_PORT/api/v1/events" 2>/dev/null)
    # A stream that stays open ends with curl's timeout: status 200 was sent.
    [ "$st" = 200 ]
}

# ---------------------------------------------------------------- failure dump

rt_dump() {
    local id
    echo "=== rollout dump"
    for id in "${RT_DEPLOYMENTS[@]}"; do
        if rt_deploy_get "$id" "$WORK/dump_deploy.json"; then
            echo "--- deployment $id"
            jq_ 'JSON.stringify({state: j.state, state_reason: j.state_reason, current_wave: j.current_wave, target: j.target_snapshots, baseline: j.baseline_snapshots, owner: j.owner_replica})' "$WORK/dump_deploy.json"
            jq_ '(j.waves || []).map(w => `wave ${w.index} ${w.state} acks=${w.acks} nacks=${w.nacks} started=${w.started_at} completed=${w.completed_at} nodes=${(w.node_ids || []).join(",")} errors=${JSON.stringify((w.errors || []).slice(0, 3))}`).join("\n")' "$WORK/dump_deploy.json"
        else
            echo "--- deployment $id: not readable; from the database:"
            sql "SELECT state, state_reason, current_wave, owner_replica FROM deployments WHERE id = '$id'"
            sql "SELECT wave_index, state, acks, nacks, started_at, completed_at FROM deployment_waves WHERE deployment_id = '$id' ORDER BY wave_index"
        fi
        echo "--- events of $id"
        rt_db_events "$id" | cut -c1-300
    done
    if [ -n "$FLEET_PORT" ] && rt_fleet_state "$WORK/dump_fleet.json"; then
        echo "--- fleet (id kind server connected version acked backend nacks last_nack)"
        jq_ 'clients().map(x => `${x.node_id} ${x.kind} ${x.server} ${x.connected} v=${x.version} ${Object.entries(x.acked).map(([t, a]) => t + "=" + a.version).join(",")} ${x.backend || "-"} nacks=${x.nacks} ${x.last_nack ? x.last_nack.type + "@" + x.last_nack.version : ""}`).join("\n")' "$WORK/dump_fleet.json"
    fi
    echo "--- proxy_nodes / node_status"
    sql "SELECT p.node_id, p.group_name, p.connected, p.replica_id, s.desired_snapshot_version, s.acked_snapshot_version, s.last_nack_version FROM proxy_nodes p LEFT JOIN node_status s USING (node_id) ORDER BY 1" 2>/dev/null
    echo "--- groups"
    sql "SELECT name, latest_snapshot_version, current_snapshot_version FROM proxy_groups ORDER BY 1" 2>/dev/null
}
