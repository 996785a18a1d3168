#!/usr/bin/env bash
# test_ratelimit_shared.sh — API rate limits shared by every replica through Redis, the
# per-replica fallback while Redis is away, and failed authentications limited per
# client address with a bounded audit.
#
# Three `sextant serve` on one database and one Redis of this test's own (so that it can
# stop it). A user's reads spread over the three are allowed at most burst + rate ×
# elapsed in all (elapsed measured here around the requests), and a replica refuses that
# user before it has allowed a burst itself, which per-replica buckets never do. With
# Redis stopped no request fails, each replica still limits (its own bucket), the
# replica says so in /metrics (sextant_ratelimit_shared 0, a fallback counted) and in one
# log line however many requests; with Redis back the limits are shared again. A flood
# of bad tokens from one address turns from 401 into 429 with Retry-After, a valid token
# from the same address still passes, and the audit holds far fewer rows than
# requests (one per replica, status and second), whose counts add up to every bad request.
# Oversized writes from another address are all answered 413 and written only as far
# as that address's bucket allows.
set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
source "$SRC/tests/lib/shtest.sh"

N=3
PIDS=()
rl_cleanup() {
    local rc=$? p
    for p in "${PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    svc_redis_stop "$WORK/rl-redis"
    (exit "$rc")
    test_cleanup
}
work_init ratelimit rl_cleanup
test_db ratelimit || exit 1
RL_REDIS_PORT=$(free_port) || exit 1
svc_redis_start "$WORK/rl-redis" "$RL_REDIS_PORT" || exit 1
export SEXTANT_REDIS_URL="redis://127.0.0.1:$RL_REDIS_PORT"
export SEXTANT_AUTH_ENABLED=true
export SEXTANT_AUTH_HS256_SECRET="ratelimit-test-secret-0123456789abcdef-0123"
READ_RATE=2
READ_BURST=10
AUTH_RATE=1
AUTH_BURST=5
export SEXTANT_RATELIMIT_READ_RATE=$READ_RATE SEXTANT_RATELIMIT_READ_BURST=$READ_BURST
export SEXTANT_RATELIMIT_WRITE_RATE=1000 SEXTANT_RATELIMIT_WRITE_BURST=1000
export SEXTANT_RATELIMIT_AUTH_FAIL_RATE=$AUTH_RATE SEXTANT_RATELIMIT_AUTH_FAIL_BURST=$AUTH_BURST
# Generous: a loaded machine must not make a replica fall back while Redis is up (a
# stopped Redis refuses connections at once, so the fallback test does not wait on it).
export SEXTANT_RATELIMIT_REDIS_TIMEOUT=5s
export SEXTANT_HTTP_MAX_BODY_BYTES=1024
export SEXTANT_API_REFUSAL_INTERVAL=1s

PORTS=()
for i in $(seq 1 $N); do
    PORTS+=("$(free_port)") || exit 1
    gp=$(free_port) || exit 1
    SEXTANT_HTTP_LISTEN="127.0.0.1:${PORTS[$((i - 1))]}" SEXTANT_GRPC_LISTEN="127.0.0.1:$gp" \
        SEXTANT_REPLICA_ID="rl-$i" "${SX_ENV[@]}" "$BIN" serve >>"$WORK/serve$i.log" 2>&1 &
    PIDS+=("$!")
done
for i in $(seq 1 $N); do
    check "replica $i becomes ready" wait_for 30 ready "${PORTS[$((i - 1))]}"
done
HTTP_PORT=${PORTS[0]}

# get I TOKEN [ID]: GET /api/v1/whoami on replica I; prints the status.
get() {
    curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --max-time 10 \
        -H "Authorization: Bearer $2" ${3:+-H "X-Request-Id: $3"} \
        "http://127.0.0.1:${PORTS[$(($1 - 1))]}/api/v1/whoami"
}
now_ns() { date +%s%N; }
# metric_on I NAME VALUE: replica I's /metrics line NAME has VALUE.
metric_on() { [ "$(metric "$2" "${PORTS[$(($1 - 1))]}")" = "$3" ]; }
# ceil_s NS: whole seconds, rounded up.
ceil_s() { echo $((($1 + 999999999) / 1000000000)); }

# spread USER COUNT: COUNT reads by USER, round robin over the replicas. Sets ALLOWED,
# REFUSED, OTHER (any other status), ELAPSED_S, and EARLY (a replica refused while it
# had itself allowed fewer than the burst).
spread() {
    local tok i r st t0
    tok=$(token "$1" operator) || exit 1
    local -a own=(0 0 0)
    ALLOWED=0 REFUSED=0 OTHER=0 EARLY=0
    t0=$(now_ns)
    for i in $(seq 0 $(($2 - 1))); do
        r=$((i % N + 1))
        st=$(get "$r" "$tok")
        case $st in
        200)
            ALLOWED=$((ALLOWED + 1))
            own[r - 1]=$((own[r - 1] + 1))
            ;;
        429)
            REFUSED=$((REFUSED + 1))
            [ "${own[r - 1]}" -lt "$READ_BURST" ] && EARLY=1
            ;;
        *) OTHER=$((OTHER + 1)) ;;
        esac
    done
    ELAPSED_S=$(ceil_s $(($(now_ns) - t0)))
}

# ------------------------------------------------------------------ shared across replicas
spread spread@example.com 45
bound=$((READ_BURST + READ_RATE * ELAPSED_S))
check "shared: every request answered 200 or 429 (other: $OTHER)" [ "$OTHER" = 0 ]
check "shared: the burst passes ($ALLOWED allowed)" [ "$ALLOWED" -ge "$READ_BURST" ]
check "shared: at most burst + rate x elapsed in all ($ALLOWED <= $bound, ${ELAPSED_S} s)" \
    [ "$ALLOWED" -le "$bound" ]
check "shared: a replica refused before allowing a burst itself" [ "$EARLY" = 1 ]
for i in $(seq 1 $N); do
    check "replica $i: sextant_ratelimit_shared 1" metric_on "$i" sextant_ratelimit_shared 1
done
check "the bucket is a Redis key with a TTL" \
    bash -c "ttl=\$(redis-cli -p $RL_REDIS_PORT pttl \"\$(redis-cli -p $RL_REDIS_PORT --scan --pattern '*rl:read:spread@example.com')\"); [ \"\$ttl\" -gt 0 ]"

# ------------------------------------------------------------------ Redis away
svc_redis_stop "$WORK/rl-redis"
tok=$(token fallback@example.com operator)
statuses=
t0=$(now_ns)
for i in $(seq 1 30); do
    statuses="$statuses $(get 1 "$tok")"
done
elapsed=$(ceil_s $(($(now_ns) - t0)))
for i in 2 3; do
    statuses="$statuses $(get "$i" "$tok")"
done
ok=$(echo "$statuses" | tr ' ' '\n' | grep -c '^200$')
limited=$(echo "$statuses" | tr ' ' '\n' | grep -c '^429$')
check "Redis away: no request failed (got$statuses)" [ $((ok + limited)) = 32 ]
check "Redis away: replica 1 still limits ($limited refused)" [ "$limited" -gt 0 ]
check "Redis away: replica 1 allowed at most its own burst + rate x elapsed" \
    [ "$(echo "$statuses" | tr ' ' '\n' | head -n 31 | grep -c '^200$')" -le $((READ_BURST + READ_RATE * elapsed)) ]
check "Redis away: sextant_ratelimit_shared 0" metric_is sextant_ratelimit_shared 0
check "Redis away: one fallback counted" metric_is sextant_ratelimit_fallbacks_total 1
check "Redis away: one warning however many requests" \
    [ "$(grep -c 'enforces the API rate limits on its own until' "$WORK/serve1.log")" = 1 ]
check "Redis away: the daemon stays ready" ready "${PORTS[0]}"

# ------------------------------------------------------------------ Redis back
svc_redis_start "$WORK/rl-redis" "$RL_REDIS_PORT" || exit 1
probe=$(token probe@example.com operator)
# shared_again I: a request to replica I (which tries Redis once its back-off has
# passed), then its gauge says shared.
shared_again() {
    get "$1" "$probe" >/dev/null
    metric_on "$1" sextant_ratelimit_shared 1
}
for i in $(seq 1 $N); do
    check "Redis back: replica $i shares its limits again" wait_for 30 shared_again "$i"
    check "Redis back: replica $i said so in one line" \
        [ "$(grep -c 'redis answers again' "$WORK/serve$i.log")" = 1 ]
    check "Redis back: replica $i counted one fallback" \
        metric_on "$i" sextant_ratelimit_fallbacks_total 1
done
spread after@example.com 45
bound=$((READ_BURST + READ_RATE * ELAPSED_S))
check "Redis back: every request answered 200 or 429" [ "$OTHER" = 0 ]
check "Redis back: at most burst + rate x elapsed in all ($ALLOWED <= $bound)" [ "$ALLOWED" -le "$bound" ]
check "Redis back: a replica refused before allowing a burst itself" [ "$EARLY" = 1 ]

# ------------------------------------------------------------------ failed authentication
BAD="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJtYWxsb3J5Iiwicm9sZSI6ImFkbWluIn0.AAAA"
GOOD=$(token carol@example.com operator)
# The flood: FLOOD requests to each replica in turn, each batch one curl on one
# keep-alive connection, so that it is a flood however loaded the machine is.
FLOOD=150
t0=$(now_ns)
: >"$WORK/flood.codes"
: >"$WORK/flood.headers"
for r in $(seq 1 $N); do
    curl -s -o "$WORK/flood/$r-#1" --create-dirs -D - -w 'code %{http_code}\n' --max-time 60 \
        -H "Authorization: Bearer $BAD" \
        "http://127.0.0.1:${PORTS[$((r - 1))]}/api/v1/whoami?n=[1-$FLOOD]" >>"$WORK/flood.headers"
done
grep '^code ' "$WORK/flood.headers" | cut -d' ' -f2 >"$WORK/flood.codes"
sent=$(grep -c . "$WORK/flood.codes")
n401=$(grep -c '^401$' "$WORK/flood.codes")
n429=$(grep -c '^429$' "$WORK/flood.codes")
check "bad tokens: $((N * FLOOD)) sent" [ "$sent" = $((N * FLOOD)) ]
check "bad tokens: only 401 and 429" [ $((n401 + n429)) = "$sent" ]
check "bad tokens: the first $AUTH_BURST are 401" \
    [ "$(head -n "$AUTH_BURST" "$WORK/flood.codes" | grep -c '^401$')" = "$AUTH_BURST" ]
check "bad tokens: then 429 ($n429 of $sent)" [ "$n429" -gt 0 ]
check "bad tokens: 429 carries Retry-After" grep -qi '^Retry-After: [1-9]' "$WORK/flood.headers"
check "bad tokens: 429 says why" \
    bash -c "grep -l '\"code\":\"rate_limited\"' '$WORK'/flood/* | xargs grep -l 'too many failed authentications from this address' | grep -q ."
check "bad tokens: a valid token from the same address passes" [ "$(get 2 "$GOOD")" = 200 ]
# Every bad request is audited in aggregate (api.refusal_interval, 1 s here): one row per
# replica, status and interval, written when the interval is over, whose counts add up to
# every bad request.
elapsed=$(ceil_s $(($(now_ns) - t0)))
anon="result = 'denied' AND actor = 'anonymous' AND action = 'api.authenticate' AND host(source_ip) = '127.0.0.1'"
counted() { [ "$(sql "SELECT coalesce(sum((details->>'count')::int), 0) FROM audit_log WHERE $anon")" = "$sent" ]; }
check "bad tokens: the rows' counts add up to every bad request ($sent)" wait_for 20 counted
rows=$(sql "SELECT count(*) FROM audit_log WHERE $anon")
check "bad tokens: 401s counted as such ($n401)" \
    [ "$(sql "SELECT coalesce(sum((details->>'count')::int), 0) FROM audit_log WHERE $anon AND status_code = 401")" = "$n401" ]
check "bad tokens: rows bounded by replicas x statuses x intervals ($rows <= $N x 2 x ($elapsed + 1))" \
    [ "$rows" -le $((N * 2 * (elapsed + 1))) ]
check "bad tokens: far fewer rows than requests ($rows x 10 < $sent)" [ $((rows * 10)) -lt "$sent" ]
check "bad tokens: no row of their own" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE actor = 'anonymous' AND status_code IN (401, 429) AND action <> 'api.authenticate'")" = 0 ]

# ------------------------------------------------------------------ oversized writes
# Refused before authentication too: always 413, but written only while the address's
# bucket has a token, so a flood of them adds few rows. They come from 127.0.0.2, an
# address whose bucket the bad tokens above (from 127.0.0.1) have not touched.
head -c 4096 /dev/zero | tr '\0' 'x' >"$WORK/big.json"
t0=$(now_ns)
curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 --interface 127.0.0.2 -X POST \
    -H 'Content-Type: application/json' \
    --data-binary @"$WORK/big.json" "http://127.0.0.1:${PORTS[0]}/api/v1/configs?n=[1-100]" \
    >"$WORK/big.codes"
elapsed=$(ceil_s $(($(now_ns) - t0)))
rows=$(sql "SELECT count(*) FROM audit_log WHERE action = 'config.request_too_large' AND host(source_ip) = '127.0.0.2'")
check "oversized writes: every one answered 413" [ "$(grep -c '^413$' "$WORK/big.codes")" = 100 ]
check "oversized writes: the address's burst is written" [ "$rows" -ge "$AUTH_BURST" ]
check "oversized writes: rows bounded by the bucket ($rows <= $AUTH_BURST + $AUTH_RATE x $elapsed s)" \
    [ "$rows" -le $((AUTH_BURST + AUTH_RATE * elapsed)) ]
check "oversized writes: the rows carry the count of those not written" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'config.request_too_large' AND details ? 'suppressed'")" = "$rows" ]

for i in $(seq 1 $N); do
    stop_daemon "replica $i" "${PIDS[$((i - 1))]}" 15
done
PIDS=()
finish
