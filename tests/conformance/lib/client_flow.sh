# client_flow.sh — the scenario both real xDS clients go through (sourced by
# test_grpc_js_xds.sh and test_grpc_python_xds.sh after harness.sh).
#
# conf_client_flow KIND GROUP: KIND is "js" (@grpc/grpc-js-xds) or "py" (gRPC C core
# through python3-grpcio).
#   1. two echo backends A and B; a snapshot routes echo.test to A; one replica;
#   2. the client dials xds:///echo.test through Sextant and reaches A;
#   3. `sextant publish` moves the endpoints to B: the next calls land on B, and no
#      call fails on the way;
#   4. a snapshot without the listener and route: calls fail the way the client
#      reports a missing listener (UNAVAILABLE, "... does not exist");
#   5. the listener comes back (with different content, see xds-clients.md) and calls
#      reach A again;
#   6. Sextant recorded the node (group, replica) and its ACK in the database.

conf_client_flow() {
    local kind=$1 group=$2 node="conformance-$1-client" v1 v2 v3 v4 log t0 errs client
    log="$WORK/calls.log"

    conf_services || exit 1
    echo_backend A || exit 1
    echo_backend B || exit 1
    conf_serve r1 || exit 1

    conf_echo_snapshot "$WORK/a.json" "$ECHO_A"
    v1=$(conf_publish "$group" "$WORK/a.json") || exit 1
    check "sextant publish writes version 1 of group $group (got '$v1')" [ "$v1" = 1 ]

    case "$kind" in
    js) client=(env GRPC_TRACE=xds_resolver GRPC_VERBOSITY=DEBUG node "$CONF/lib/xds_client.js") ;;
    py) client=("$PYTHON" "$CONF/lib/xds_client.py") ;;
    esac
    GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "$node" "$group" "$R1_GRPC") \
        bg_run client "${client[@]}" --target xds:///echo.test --out "$log" --interval-ms 50
    check "$kind: a call to xds:///echo.test reaches backend A" wait_for 20 last_is "$log" "ok A"
    if ! last_is "$log" "ok A"; then
        echo "last outcome: $(last_result "$log")" >&2
        finish
    fi

    # ---------------------------------------------------------------- endpoints move to B
    conf_echo_snapshot "$WORK/b.json" "$ECHO_B"
    t0=$(now_ms)
    v2=$(conf_publish "$group" "$WORK/b.json")
    check "sextant publish writes version 2 (got '$v2')" [ "$v2" = 2 ]
    check "$kind: after publish moves the endpoints, calls land on backend B" wait_for 10 last_is "$log" "ok B"
    errs=$(results_since "$log" "$t0" | grep -c '^err' || true)
    check "$kind: no call failed while the endpoints moved ($errs failed)" [ "$errs" = 0 ]

    # ---------------------------------------------------------------- listener and route removed
    conf_echo_snapshot "$WORK/none.json" "$ECHO_B" --no-listener
    v3=$(conf_publish "$group" "$WORK/none.json")
    check "sextant publish writes version 3 (got '$v3')" [ "$v3" = 3 ]
    check "$kind: without the listener and route, calls fail" wait_for 10 last_is "$log" "err"
    local last
    last=$(last_result "$log")
    echo "$kind reports: $last"
    check "$kind: the failure is UNAVAILABLE (got: $last)" bash -c "[[ '$last' == 'err 14 UNAVAILABLE '* ]]"
    case "$kind" in
    js) # grpc-js fails calls with "No connection established"; its resolver trace says why.
        check "$kind: the client's resolver reports that the listener does not exist" \
            wait_for 5 grep -q 'Resolution error: LDS resource does not exist' "$WORK/client.log" ;;
    py) # C core puts the reason into the call's status.
        check "$kind: the failure says the listener does not exist (got: $last)" \
            bash -c "[[ '$last' == *'listener resource does not exist'* ]]" ;;
    esac

    # ---------------------------------------------------------------- back again
    # The listener must not come back identical to the deleted one (grpc-js compares
    # with its stale cache and does not recover): another IR listener name changes the
    # Listener's route_config_name.
    node -e '
        const s = require(process.argv[1]).build([{host: "echo.test", name: "echo", listenerName: "echo-grpc-again",
            ports: [Number(process.argv[2])], timeout: "7s"}]);
        process.stdout.write(JSON.stringify(s));' "$CONF/lib/snapshots.js" "$ECHO_A" >"$WORK/a2.json"
    v4=$(conf_publish "$group" "$WORK/a2.json")
    check "sextant publish writes version 4 (got '$v4')" [ "$v4" = 4 ]
    check "$kind: the listener is back and calls reach backend A again" wait_for 10 last_is "$log" "ok A"

    # ---------------------------------------------------------------- what Sextant recorded
    local q="SELECT group_name || ' ' || coalesce(replica_id, '-') FROM proxy_nodes WHERE node_id = '$node'"
    check "$kind: proxy_nodes holds the client with its group and replica" \
        wait_for 5 bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc \"$q\")\" = '$group r1' ]"
    q="SELECT acked_snapshot_version FROM node_status WHERE node_id = '$node'"
    check "$kind: node_status records the ACK of version 4" \
        wait_for 5 bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc \"$q\")\" = 4 ]"
    q="SELECT count(*) FROM node_status WHERE node_id = '$node' AND last_nack_error IS NOT NULL"
    check "$kind: the client NACKed nothing Sextant sent" \
        [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "$q")" = 0 ]
    if [ "$FAILS" -gt 0 ]; then
        echo "--- node_status" >&2
        psql "$SEXTANT_DATABASE_URL" -qXc "SELECT * FROM node_status" >&2
        echo "--- client outcomes (first and last of each run)" >&2
        cut -d' ' -f2- "$log" | uniq -c | tail -n 20 >&2
    fi

    bg_stop client
    conf_stop_serve r1
}
