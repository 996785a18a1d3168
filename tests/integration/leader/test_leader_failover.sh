#!/usr/bin/env bash
# test_leader_failover.sh — leader election across three replicas, and its failovers.
#
# Three `sextant serve` replicas (r1, r2, r3) share one PostgreSQL; each reaches it
# through a TCP forwarder of its own (tests/lib/tcp_forward.py), so the test can cut one
# replica's database connections. leader.retry 500ms, leader.lease 6s, leader.check
# 500ms, leader.heartbeat 500ms. Then:
#   - exactly one replica leads: sextant_leader is 1 there and 0 elsewhere, and
#     GET /api/v1/replicas lists the three, alive, with that one as the leader;
#   - the fleet sweep runs on the leader only (sextant_fleet_sweeps_total);
#   - SIGKILL to the leader: another leads within retry + lease (+ slack), measured
#     from the kill to its "this replica leads" log line; the killed one is shown not
#     alive and not leader; it restarts with the same id and does not take the lead;
#   - the leader's database connections are cut (the forwarder closes them, so the
#     server frees its lock at once): another leads, and the cut one stopped leading
#     before that, by their logs' timestamps; restored, it stays a standby;
#   - over the whole run, no two replicas' leading intervals (from the "leads" line to
#     the "stops leading" / "gives the lead up" line, or to the kill) overlap.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/lib/shtest.sh"
BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=$SEXTANT_SOURCE_DIR

RETRY_MS=500
LEASE_MS=6000
CHECK_MS=500
# Slack over retry + lease for a take-over: connecting, and a loaded machine's delays.
SLACK_MS=4000
export SEXTANT_LEADER_RETRY=${RETRY_MS}ms SEXTANT_LEADER_LEASE=${LEASE_MS}ms
export SEXTANT_LEADER_CHECK=${CHECK_MS}ms SEXTANT_LEADER_HEARTBEAT=500ms
export SEXTANT_AUTH_ENABLED=true
export SEXTANT_AUTH_HS256_SECRET="leader-test-secret-0123456789abcdef-0123456789"

own_init leader
own_services || exit 1
PG_URL=$SEXTANT_DATABASE_URL
VIEWER=$(token vera viewer)
now_ms() { date +%s%3N; }

# start NAME: replica NAME through its forwarder (started once, kept across restarts).
start() {
    local name=$1 up fwd http grpc
    up=$(echo "$name" | tr '[:lower:]' '[:upper:]')
    fwd="${up}_FWD"
    if [ -z "${!fwd:-}" ]; then
        printf -v "$fwd" '%s' "$(free_port)"
        bg_run "fwd-$name" python3 "$SRC/tests/lib/tcp_forward.py" "${!fwd}" 127.0.0.1 "$PG_PORT"
        wait_for 10 listening "${!fwd}" || return 1
        printf -v "${up}_HTTP" '%s' "$(free_port)"
        printf -v "${up}_GRPC" '%s' "$(free_port)"
    fi
    http="${up}_HTTP"
    grpc="${up}_GRPC"
    SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:${!fwd}/sextant" \
        SEXTANT_HTTP_LISTEN="127.0.0.1:${!http}" SEXTANT_GRPC_LISTEN="127.0.0.1:${!grpc}" \
        SEXTANT_REPLICA_ID="$name" bg_run "$name" "${SX_ENV[@]}" "$BIN" serve
    wait_for 20 ready "${!http}"
}
port_of() { local v; v="$(echo "$1" | tr '[:lower:]' '[:upper:]')_HTTP"; echo "${!v}"; }
# leaders: the replicas whose sextant_leader is 1, among the named running ones.
leaders() {
    local r out=()
    for r in "$@"; do
        [ "$(metric sextant_leader "$(port_of "$r")")" = 1 ] && out+=("$r")
    done
    echo "${out[*]}"
}
# one_leader NAMES...: exactly one of them has sextant_leader 1 (in LEADER) and every
# other 0.
one_leader() {
    local r n=0
    LEADER=
    for r in "$@"; do
        case "$(metric sextant_leader "$(port_of "$r")")" in
        1) LEADER=$r n=$((n + 1)) ;;
        0) ;;
        *) return 1 ;;
        esac
    done
    [ "$n" = 1 ]
}
# replicas_agree PORT LEADER ALIVE...: GET /api/v1/replicas (a viewer) lists exactly the
# ALIVE replicas as alive, LEADER (alive) as the only leader.
replicas_agree() {
    local port=$1 leader=$2
    shift 2
    local alive
    alive=$(printf '"%s",' "$@")
    HTTP_PORT=$port
    [ "$(http GET /api/v1/replicas -H "Authorization: Bearer $VIEWER")" = 200 ] &&
        jtrue "const a = [${alive%,}].sort().join();
               j.items.filter(r => r.alive).map(r => r.id).sort().join() === a &&
               j.items.filter(r => r.leader).map(r => r.id).join() === '$leader'"
}
# leads_ms NAME: the epoch ms of the last "this replica leads" line of NAME's log.
leads_ms() {
    python3 - "$WORK/$1.log" <<'PY'
import datetime, json, sys
last = None
for line in open(sys.argv[1], errors="replace"):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("component") == "leader" and j.get("msg", "").startswith("this replica leads"):
        last = j["ts"]
if last:
    t = datetime.datetime.strptime(last, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    print(int(t.timestamp() * 1000))
PY
}
leads_after() { # leads_after NAME MS: NAME logged "leads" after MS
    local t
    t=$(leads_ms "$1")
    [ -n "$t" ] && [ "$t" -gt "$2" ]
}

for r in r1 r2 r3; do
    start "$r" || { fail "replica $r did not become ready"; finish; }
done
ALL=(r1 r2 r3)

# ---- one leader, and the API says the same
check "exactly one replica leads (sextant_leader)" wait_for 20 one_leader r1 r2 r3
L1=$LEADER
echo "$L1 leads"
check "GET /api/v1/replicas: three alive, $L1 the leader" \
    wait_for 10 replicas_agree "$(port_of r1)" "$L1" r1 r2 r3
check "each replica is listed with its version, addresses and times" \
    jtrue "j.items.length === 3 && j.items.every(r => r.version && r.http_address.startsWith('127.0.0.1:') &&
           r.grpc_address.startsWith('127.0.0.1:') && r.started_at && r.last_seen) &&
           j.items.find(r => r.id === '$L1').term >= 1 && j.next_cursor === null"
HTTP_PORT=$(port_of r2)
check "a page of one has a next cursor" \
    [ "$(http GET '/api/v1/replicas?limit=1' -H "Authorization: Bearer $VIEWER")" = 200 ]
check "... and the first replica by id" jtrue "j.items.length === 1 && j.items[0].id === 'r1' && j.next_cursor"
check "without a token: 401" [ "$(http GET /api/v1/replicas)" = 401 ]

# ---- the sweep runs on the leader only
sweeps() { metric sextant_fleet_sweeps_total "$(port_of "$1")"; }
# A gain sweeps at once; the second sweep comes a full period (10 s) later, by when
# every standby has been through its own loop more than once.
check "the leader sweeps (twice)" wait_for 30 eval '[ "$(sweeps "$L1")" -ge 2 ]'
for r in "${ALL[@]}"; do
    [ "$r" = "$L1" ] && continue
    check "standby $r never swept (sextant_fleet_sweeps_total $(sweeps "$r"))" [ "$(sweeps "$r")" = 0 ]
done

# ---- SIGKILL the leader
KILL1=$(now_ms)
bg_stop "$L1" KILL
KILL1_END=$(now_ms)
REST=()
for r in "${ALL[@]}"; do [ "$r" = "$L1" ] || REST+=("$r"); done
new_leader() { # new_leader SINCE NAMES...: one of NAMES logged "leads" after SINCE
    local since=$1 r
    shift
    for r in "$@"; do leads_after "$r" "$since" && { NEW=$r; return 0; }; done
    return 1
}
BOUND1=$((RETRY_MS + LEASE_MS + SLACK_MS))
# takeover SINCE WHAT NAMES...: one of NAMES (NEW) must lead within retry + lease + slack
# of SINCE, when WHAT happened.
takeover() {
    local since=$1 what=$2 t
    shift 2
    if wait_for $((BOUND1 / 1000 + 5)) new_leader "$since" "$@"; then
        t=$(($(leads_ms "$NEW") - since))
        echo "take-over after $what: $NEW leads $t ms after it (bound: retry + lease + slack = $BOUND1 ms)"
        check "another replica leads within retry + lease + slack after $what ($t ms <= $BOUND1 ms)" [ "$t" -le "$BOUND1" ]
    else
        fail "no replica took the lead after $what"
    fi
}
takeover "$KILL1" "the SIGKILL of $L1" "${REST[@]}"
check "exactly one of the survivors leads (sextant_leader)" wait_for 10 one_leader "${REST[@]}"
L2=$LEADER
check "it is the one that logged it ($L2)" [ "$L2" = "${NEW:-}" ]
check "GET /api/v1/replicas: $L1 not alive, $L2 the leader" \
    wait_for 10 replicas_agree "$(port_of "$L2")" "$L2" "${REST[@]}"
check "the new leader sweeps at once" wait_for 10 eval '[ "$(sweeps "$L2")" -ge 1 ]'

start "$L1" || fail "$L1 did not restart"
check "$L1, restarted with the same id, is listed alive again and does not lead" \
    wait_for 10 replicas_agree "$(port_of "$L2")" "$L2" r1 r2 r3
check "... and its sextant_leader is 0" one_leader r1 r2 r3

# ---- cut the leader's database connections
fwd_pid() { local v; v="PID_fwd_$1"; echo "${!v}"; }
CUT=$(now_ms)
kill -USR1 "$(fwd_pid "$L2")"
OTHERS=()
for r in "${ALL[@]}"; do [ "$r" = "$L2" ] || OTHERS+=("$r"); done
takeover "$CUT" "the cut of $L2's connections" "${OTHERS[@]}"
L3=${NEW:-}
check "$L2 says it stopped leading" contains "$WORK/$L2.log" "this replica stops leading"
check "$L2's sextant_leader is 0" [ "$(metric sextant_leader "$(port_of "$L2")")" = 0 ]
kill -USR2 "$(fwd_pid "$L2")"
check "restored, $L2 is alive again, and $L3 still leads" \
    wait_for 15 replicas_agree "$(port_of "$L2")" "$L3" r1 r2 r3
check "... exactly one replica leads (sextant_leader)" one_leader r1 r2 r3
check "... and it is $L3" [ "$LEADER" = "$L3" ]

# ---- no two leading intervals overlap
python3 - "$WORK" "$L1" "$KILL1_END" r1 r2 r3 >"$WORK/intervals.out" <<'PY'
import datetime, json, sys
work, killed, killed_at, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def ms(ts):
    t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp() * 1000)
spans, bad = [], 0
for n in names:
    start = None
    for line in open("%s/%s.log" % (work, n), errors="replace"):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("component") != "leader":
            continue
        msg = j.get("msg", "")
        if msg.startswith("this replica leads"):
            if start is not None:  # a start without an end: the process was killed
                spans.append((start, killed_at if n == killed else None, n))
            start = ms(j["ts"])
        elif msg.startswith("this replica stops leading") or msg.startswith("this replica gives the lead up"):
            if start is not None:
                spans.append((start, ms(j["ts"]), n))
            start = None
    if start is not None:
        spans.append((start, killed_at if n == killed and start < killed_at else None, n))
spans.sort()
for s in spans:
    print("%s leads from %d to %s" % (s[2], s[0], s[1] if s[1] is not None else "now"))
for a, b in zip(spans, spans[1:]):
    if a[1] is None or b[0] <= a[1]:
        print("OVERLAP: %s (%d..%s) and %s (from %d)" % (a[2], a[0], a[1], b[2], b[0]))
        bad += 1
    else:
        print("gap between %s's end and %s's start: %d ms" % (a[2], b[2], b[0] - a[1]))
print("terms: %d" % len(spans))
sys.exit(1 if bad or len(spans) < 3 else 0)
PY
check "no two replicas led at the same time (three terms or more)" [ $? = 0 ]
cat "$WORK/intervals.out"

for r in r1 r2 r3; do
    v="PID_$r"
    stop_daemon "$r" "${!v}" 15
done
finish
