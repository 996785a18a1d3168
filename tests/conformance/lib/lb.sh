# lb.sh — Sextant replicas behind a real HAProxy, for the failover tests: replicas on
# fixed ports (so one can be restarted where the load balancer expects it), HAProxy
# with deploy/lb/haproxy.cfg rendered into $WORK by deploy/lb/render.sh, its stats
# socket read back, and each replica's xDS stream gauge.
#
#   source "$SEXTANT_SOURCE_DIR/tests/conformance/lib/harness.sh"
#   source "$CONF/lib/lb.sh"
#   lb_replica r1; lb_replica r2        # R1_HTTP, R1_GRPC, PID_r1 ... (ready)
#   lb_start r1 r2 r3                   # LB_GRPC, LB_HTTP; r3 may start later
#   lb_up xds_replicas 2                # wait for it: two servers of the pool are UP
#   lb_replica_streams r1               # the replica's connected xDS streams

LB_SOCK=
LB_GRPC=
LB_HTTP=

# lb_need_haproxy: fails the test (with a reason) when HAProxy is not installed.
lb_need_haproxy() {
    command -v haproxy >/dev/null && return 0
    echo "conformance: haproxy is missing (apt-get install haproxy; tests/run.sh does)" >&2
    return 1
}

# lb_replica NAME: `sextant serve` as replica NAME (conf_serve's environment), on the
# ports it had before when it ran already, else on free ones; sets NAME_HTTP,
# NAME_GRPC and PID_NAME and waits until it is ready.
lb_replica() {
    local name=$1 up http grpc
    up=$(echo "$name" | tr '[:lower:]' '[:upper:]')
    local hv="${up}_HTTP" gv="${up}_GRPC"
    conf_ports "$name" "${!hv:-}" "${!gv:-}" || return 1
    conf_serve_on "$name" "$http" "$grpc" 30
}

# lb_ports NAME: gives replica NAME its ports without starting it (for a replica the
# load balancer lists before it runs).
lb_ports() {
    local http grpc
    conf_ports "$1"
}

# lb_start NAME...: renders the HAProxy configuration for the named replicas (their
# ports must be known) into $WORK/haproxy.cfg, checks it with haproxy -c and starts
# HAProxy in the foreground (bg_run haproxy) on LB_GRPC and LB_HTTP.
lb_start() {
    local args=() name up hv gv
    LB_GRPC=$(free_port) || return 1
    LB_HTTP=$(free_port) || return 1
    LB_SOCK="$WORK/haproxy.sock"
    for name in "$@"; do
        up=$(echo "$name" | tr '[:lower:]' '[:upper:]')
        hv="${up}_HTTP" gv="${up}_GRPC"
        args+=(--replica "$name=127.0.0.1:${!gv}:${!hv}")
    done
    "$SRC/deploy/lb/render.sh" --grpc-bind "127.0.0.1:$LB_GRPC" --http-bind "127.0.0.1:$LB_HTTP" \
        --stats-socket "$LB_SOCK" "${args[@]}" >"$WORK/haproxy.cfg" || return 1
    haproxy -c -q -f "$WORK/haproxy.cfg" || { echo "conformance: haproxy -c refused the configuration" >&2; return 1; }
    bg_run haproxy haproxy -db -f "$WORK/haproxy.cfg"
    wait_for 10 listening "$LB_GRPC" && wait_for 10 listening "$LB_HTTP" && wait_for 10 test -S "$LB_SOCK"
}

# lb_cmd COMMAND: the answer of HAProxy's stats socket to COMMAND.
lb_cmd() {
    "$PYTHON" - "$LB_SOCK" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
PY
}

# lb_stat POOL FIELD: "server value" lines of one column of `show stat` for the servers
# of backend POOL (FIELD as in HAProxy's CSV header: status, chkdown, scur, ...).
lb_stat() {
    lb_cmd "show stat" | awk -F, -v p="$1" -v f="$2" '
        NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) col[$i] = i; next }
        $1 == p && $2 != "BACKEND" && $2 != "FRONTEND" { print $2, $col[f] }'
}

# lb_up POOL N: exactly N servers of POOL are UP.
lb_up() {
    [ "$(lb_stat "$1" status | awk '$2 == "UP"' | wc -l)" = "$2" ]
}

# lb_server_up POOL NAME: server NAME of POOL is UP.
lb_server_up() {
    [ "$(lb_stat "$1" status | awk -v n="$2" '$1 == n { print $2 }')" = UP ]
}

# lb_replica_streams NAME: the xDS streams replica NAME holds (sextant_xds_streams summed
# over protocols), or nothing when it does not answer.
lb_replica_streams() {
    local up hv
    up=$(echo "$1" | tr '[:lower:]' '[:upper:]')
    hv="${up}_HTTP"
    curl -s --max-time 5 "http://127.0.0.1:${!hv}/metrics" |
        awk '$1 ~ /^sextant_xds_streams[{ ]/ || $1 == "sextant_xds_streams" { n += $2; seen = 1 }
             END { if (seen) print n + 0 }'
}

# lb_spread TOTAL NAME...: every named replica holds TOTAL/count streams ±20% (the
# figures are left in $WORK/spread).
lb_spread() {
    local total=$1 name n ok=0
    shift
    : >"$WORK/spread"
    for name in "$@"; do
        n=$(lb_replica_streams "$name")
        echo "$name ${n:-none}" >>"$WORK/spread"
        [ -n "$n" ] || ok=1
        [ -n "$n" ] && ! awk -v n="$n" -v t="$total" -v k=$# 'BEGIN { a = t / k; exit !(n >= 0.8 * a && n <= 1.2 * a) }' && ok=1
    done
    return $ok
}

# lb_load_field FILE EXPR: a value of ads_load.js's summary (jv syntax).
lb_load_field() {
    jv "$2" "$1"
}
