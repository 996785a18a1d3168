#!/usr/bin/env bash
# test_alerts.sh — Sextant's own alerts, end to end, with short windows: two replicas
# (r1 leads, r2 stands by) sharing one PostgreSQL, a fleet of three ADS clients of group
# G on r1, and a webhook receiver (webhook_receiver.py) that checks every body's
# X-Sextant-Signature and answers 500 to its first request. Then:
#   - only the leader evaluates (sextant_alert_evaluations_total);
#   - replica_lost: r2 is killed (SIGKILL) and fires once its heartbeat is older than
#     alerts.replica_lost_after (sextant_alerts_firing{rule="replica_lost"} 1), and
#     resolves when r2 runs again;
#   - nack_rate and deployment_failed: a rolling deployment whose version every client
#     NACKs fails and rolls back; the group's NACK rate and the deployment fire, and
#     both resolve when their windows have passed;
#   - proxy_disconnected: one client stops, fires after alerts.disconnected_after, and
#     resolves when it connects again;
#   - each alert fired once (one row per rule and subject, resolved now, one
#     alert_firing and one alert_resolved event each), and the receiver got each firing
#     and each resolution exactly once with a good signature; the very first POST was
#     answered 500 and delivered by its retry (same X-Sextant-Delivery, attempt 2);
#     sextant_alert_webhook_deliveries_total says 8 delivered; a second webhook where
#     nothing listens has each of its 8 deliveries retried 3 times and given up;
#   - GET /api/v1/alerts filters by state, pages by keyset, and refuses a bad state;
#     no log line holds the webhook secret;
#   - r2 stopped cleanly (SIGTERM) fires no replica_lost, however long it stays away.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init alerts
HERE="$SRC/tests/integration/alerts"
SECRET="alert-hook-secret-$RANDOM-$RANDOM-0123456789"
bg_run receiver python3 "$HERE/webhook_receiver.py" --secret "$SECRET" \
    --record "$WORK/hooks.jsonl" --port-file "$WORK/hook.port" --fail-first 1
wait_for 10 test -s "$WORK/hook.port" || { echo "alerts: the webhook receiver did not start" >&2; exit 1; }
: >"$WORK/hooks.jsonl"
# A second webhook where nothing listens: its deliveries are given up after the retries.
DEAD_PORT=$(free_port)
export SEXTANT_ALERTS_WEBHOOKS="[{\"url\":\"http://127.0.0.1:$(cat "$WORK/hook.port")/hooks/sextant\",\"secret\":\"$SECRET\"},{\"url\":\"http://127.0.0.1:$DEAD_PORT/nobody\",\"secret\":\"other-$SECRET\"}]"
export SEXTANT_ALERTS_INTERVAL=200ms SEXTANT_ALERTS_NACK_WINDOW=3s
export SEXTANT_ALERTS_NACK_MIN_RESPONSES=1 SEXTANT_ALERTS_DISCONNECTED_AFTER=1s
export SEXTANT_ALERTS_DEPLOYMENT_WINDOW=5s SEXTANT_ALERTS_REPLICA_LOST_AFTER=3s
export SEXTANT_ALERTS_WEBHOOK_BACKOFF_MIN=200ms SEXTANT_ALERTS_WEBHOOK_BACKOFF_MAX=1s
export SEXTANT_ALERTS_WEBHOOK_RETRIES=3 SEXTANT_ALERTS_WEBHOOK_TIMEOUT=5s
export SEXTANT_LEADER_HEARTBEAT=300ms SEXTANT_LEADER_RETRY=200ms

# metric_on NAME VALUE PORT: the /metrics line NAME of the replica on PORT is VALUE.
metric_on() {
    [ "$(metric "$1" "$3")" = "$2" ]
}

rt_serve r1 || exit 1
check "r1 leads" wait_for 20 metric_on sextant_leader 1 "$R1_HTTP"
rt_serve r2 || exit 1
check "r2 stands by" metric_on sextant_leader 0 "$R2_HTTP"
evals_r1() { [ "$(metric sextant_alert_evaluations_total "$R1_HTTP")" -ge 3 ] 2>/dev/null; }
check "the leader evaluates the rules" wait_for 10 evals_r1
check "the standby does not" metric_on sextant_alert_evaluations_total 0 "$R2_HTTP"

# alerts_has STATE RULE SUBJECT: GET /api/v1/alerts?state=STATE lists an alert of RULE
# on SUBJECT.
alerts_has() {
    [ "$(rt_api GET "/api/v1/alerts?state=$1&limit=1000")" = 200 ] &&
        jtrue "j.items.some(a => a.rule === '$2' && a.subject === '$3' && a.state === '$1')"
}

# ---------------------------------------------------------------- replica_lost
bg_stop r2 KILL
check "replica_lost fires for the killed r2" wait_for 20 alerts_has firing replica_lost r2
check "... its message names the replica" jtrue "j.items.find(a => a.rule === 'replica_lost').message.includes('replica r2') && j.items.find(a => a.rule === 'replica_lost').value >= 3"
check "sextant_alerts_firing{rule=\"replica_lost\"} is 1" \
    wait_for 10 metric_on 'sextant_alerts_firing{rule="replica_lost"}' 1 "$R1_HTTP"
rt_serve r2 || exit 1
check "replica_lost resolves once r2 beats again" wait_for 20 alerts_has resolved replica_lost r2

# ---------------------------------------------------------------- nack_rate, deployment_failed
G=alerts-web
MARKER=alertme
rt_old_config
rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix al- --kinds ads:3
CLIENTS=$(jq_ 'j.clients.map(c => c.id).join(" ")' "$WORK/spec.json")
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec "echo-$MARKER" "$ECHO_NEW")" "refused by every client") || exit 1
for n in $CLIENTS; do
    rt_fleet_post "/clients/$n/behaviour" "{\"nack_if\":\"$MARKER\",\"nack_message\":\"refusing $MARKER\"}" ||
        fail "the fleet takes $n's behaviour"
done
rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"rolling\",\"wave_size\":3},\"nack_threshold\":0.15,\"nack_min_sample\":1,\"wave_timeout\":\"30s\",\"reason\":\"alerts test\"}"
expect_status "the deployment is created" 201 "$ST"
check "the deployment fails and rolls back" wait_for 60 rt_deploy_in "$DEPLOY" rolled_back
check "nack_rate fires for group $G" wait_for 20 alerts_has firing nack_rate "$G"
check "... with the rate (above 5%) and the counts in its message" \
    jtrue "const a = j.items.find(a => a.rule === 'nack_rate'); a.value > 0.05 && /NACKed/.test(a.message)"
check "deployment_failed fires for the deployment" wait_for 20 alerts_has firing deployment_failed "$DEPLOY"
check "... its message says rolled_back" \
    jtrue "j.items.find(a => a.rule === 'deployment_failed').message.includes('rolled_back')"
check "nack_rate resolves once its window has passed" wait_for 30 alerts_has resolved nack_rate "$G"
check "deployment_failed resolves once its window has passed" \
    wait_for 30 alerts_has resolved deployment_failed "$DEPLOY"

# ---------------------------------------------------------------- proxy_disconnected
ONE=${CLIENTS%% *}
rt_fleet_post "/clients/$ONE/stop" '{}' || fail "the fleet stops $ONE"
check "proxy_disconnected fires for $ONE" wait_for 20 alerts_has firing proxy_disconnected "$ONE"
rt_fleet_post "/clients/$ONE/start" '{}' || fail "the fleet starts $ONE"
check "proxy_disconnected resolves when $ONE connects again" \
    wait_for 20 alerts_has resolved proxy_disconnected "$ONE"

# ---------------------------------------------------------------- once each
check "one row per alert, all resolved" \
    [ "$(sql "SELECT string_agg(rule || ':' || state, ' ' ORDER BY rule) FROM alerts")" = \
      "deployment_failed:resolved nack_rate:resolved proxy_disconnected:resolved replica_lost:resolved" ]
check "one alert_firing and one alert_resolved event per alert" \
    [ "$(sql "SELECT count(*) FILTER (WHERE type = 'alert_firing') || '/' || count(*) FILTER (WHERE type = 'alert_resolved') FROM events WHERE type LIKE 'alert_%'")" = "4/4" ]

# hooks PYTHON_EXPR: the expression over r (the receiver's records, in order) is true.
hooks() {
    python3 - "$WORK/hooks.jsonl" "$1" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
delivered_all() {
    hooks "len([x for x in r if x['status'] == 204]) == 8"
}
check "the receiver got 8 deliveries (4 alerts, fired and resolved)" wait_for 20 delivered_all
for rs in "replica_lost r2" "nack_rate $G" "deployment_failed $DEPLOY" "proxy_disconnected $ONE"; do
    read -r rule subject <<<"$rs"
    for state in firing resolved; do
        check "$rule $subject $state: delivered once, signed, in the documented shape" hooks "
len([x for x in r if x['status'] == 204 and x['signature_ok'] and x['payload']['state'] == '$state'
     and x['payload']['alert']['rule'] == '$rule' and x['payload']['alert']['subject'] == '$subject'
     and x['payload']['alert']['state'] == '$state' and x['payload']['sent_at'] and x['payload']['replica'] == 'r1'
     and x['delivery'] == '%d-$state' % x['payload']['alert']['id']
     and x['content_type'] == 'application/json' and x['path'] == '/hooks/sextant']) == 1"
    done
done
check "every POST carried a good signature" hooks "all(x['signature_ok'] for x in r)"
check "the first POST was answered 500 and its retry delivered it (attempt 2, same delivery)" hooks "(
r[0]['status'] == 500 and r[0]['payload']['attempt'] == 1 and
[x for x in r if x['delivery'] == r[0]['delivery'] and x['status'] == 204][0]['payload']['attempt'] == 2 and
len([x for x in r if x['delivery'] == r[0]['delivery']]) == 2)"
check "deliveries counted: 8 delivered" \
    metric_on 'sextant_alert_webhook_deliveries_total{result="delivered"}' 8 "$R1_HTTP"
check "... 8 failed: those to the webhook where nothing listens, after their 3 retries" \
    wait_for 30 metric_on 'sextant_alert_webhook_deliveries_total{result="failed"}' 8 "$R1_HTTP"
check "... 25 retried: 3 for each of those, 1 for the first POST answered 500" \
    metric_on 'sextant_alert_webhook_deliveries_total{result="retried"}' 25 "$R1_HTTP"
check "... none dropped" [ -z "$(metric 'sextant_alert_webhook_deliveries_total{result="dropped"}' "$R1_HTTP")" ]
check "giving up is logged with the webhook's origin, not its path" \
    grep -q "gave up delivering alert to webhook.*\"webhook\":\"http://127.0.0.1:$DEAD_PORT\"" "$WORK/r1.log"
check "nothing fires now (sextant_alerts_firing)" \
    wait_for 10 metric_on 'sextant_alerts_firing{rule="replica_lost"}' 0 "$R1_HTTP"

# ---------------------------------------------------------------- the list
st=$(rt_api GET "/api/v1/alerts?state=bogus")
check "state=bogus is 400 naming the parameter (got $st)" \
    jtrue "'$st' === '400' && j.error.details.some(d => d.path === 'state')"
st=$(rt_api GET "/api/v1/alerts?state=firing")
check "state=firing: none" jtrue "'$st' === '200' && j.items.length === 0 && j.next_cursor === null"
st=$(rt_api GET "/api/v1/alerts?limit=3")
cp "$WORK/body" "$WORK/page1.json"
check "limit=3: three alerts, newest first, and a cursor" \
    jtrue "'$st' === '200' && j.items.length === 3 && j.items[0].id > j.items[1].id && j.items[1].id > j.items[2].id && j.next_cursor" "$WORK/page1.json"
st=$(rt_api GET "/api/v1/alerts?limit=3&cursor=$(jv .next_cursor "$WORK/page1.json")")
check "the next page: the fourth, oldest one, and no cursor" \
    jtrue "'$st' === '200' && j.items.length === 1 && j.items[0].id < j2.items[2].id && j.next_cursor === null" "$WORK/body" "$WORK/page1.json"
st=$(rt_api GET "/api/v1/alerts?state=all")
check "state=all lists all four" jtrue "'$st' === '200' && j.items.length === 4"

check "no log holds a webhook secret or path" \
    bash -c "! grep -rqE -- '$SECRET|/nobody|/hooks/sextant' '$WORK'/r1.log '$WORK'/r2.log"

# ---------------------------------------------------------------- a clean stop is no loss
conf_stop_serve r2
r2_silent() {
    [ "$(sql "SELECT stopped_at IS NOT NULL AND now() - last_seen > interval '3 seconds' FROM replicas WHERE replica_id = 'r2'")" = t ]
}
check "r2, stopped cleanly, said so, and has been silent past alerts.replica_lost_after" wait_for 20 r2_silent
E0=$(metric sextant_alert_evaluations_total "$R1_HTTP")
evals_since() { [ "$(metric sextant_alert_evaluations_total "$R1_HTTP")" -ge $((E0 + 2)) ]; }
check "the leader has evaluated the rules twice since" wait_for 10 evals_since
check "... and fired no replica_lost for it" \
    [ "$(sql "SELECT count(*) FROM alerts WHERE rule = 'replica_lost' AND state = 'firing'")" = 0 ]
rt_finish r1
