#!/usr/bin/env bash
# test_ui_rollout.sh — a rollout in waves from the web UI, and one that NACKs.
#
# Three gateway.control.v1 data planes follow group G at v1. An operator (one-click dev
# sign-in) saves a change as a draft, opens Apply, chooses a rolling strategy of one
# proxy per wave, and runs a dry run: the plan lists three waves naming every proxy and
# the group's difference. Applying opens the deployment page, where the waves fill up
# with ACKs as they happen; the operator pauses after the first wave (no further wave
# starts while paused) and resumes, and the rollout completes: every proxy runs the new
# snapshot. Then a fourth data plane that rejects snapshots carrying "nack-me" joins; a
# change carrying it, applied all at once, is NACKed: the deployment page shows the
# proxy's error and the deployment rolls itself back, and every proxy is back on the
# previous snapshot.
#
# Then, with the rejecting data plane gone (scenarios/rollout_control.mjs): a canary of
# 34 % then +33 % chosen on the Apply page plans waves of 2 and 1 proxies (the canary
# rule, and what the API plans for the same request); while it waits out its interval
# after wave 1 its progress ("wave 1/2 · 2/3 ACKed", a bar) shows on the deployments
# list and on a dashboard open in another tab, which follows it live without moving
# it; Cancel on its page takes it through canceling / rolling back to rolled back, wave
# 1 rolled back and wave 2 canceled. A deployment that completed is rolled back with
# the Roll back button after its confirmation: the config's live version and the
# group's content go back, and every proxy acknowledges it (proxies page and API).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init rollout
e2e_services || exit 1
SEXTANT_ROLLOUTS_TICK=200ms SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
e2e_web_fleet e2e-rollout dp-ro-1 dp-ro-2 dp-ro-3 || exit 1

export GRPC_PORT BAD=dp-ro-bad
# The scenario starts the rejecting data plane itself, between its two rollouts.
export DATAPLANE_CMD="node $E2E/lib/dataplane.cjs --server 127.0.0.1:$GRPC_PORT --node dp-ro-bad --group $GROUP --nack-matching nack-me"
export DATAPLANE_LOG="$WORK/dp-ro-bad.log"
e2e_browser "$E2E/scenarios/rollout.mjs"
e2e_browser "$E2E/scenarios/rollout_control.mjs"

st=$(e2e_rest "$ADMIN" GET "/api/v1/deployments")
check "four deployments were made (got $st $(jv '.items.length'))" [ "$st $(jv '.items.length')" = "200 4" ]
STATES=$(jv '.items.map((d) => d.state).join()')
check "newest first: rolled back by hand, canceled, NACKed, completed (got $STATES)" \
    [ "$STATES" = "rolled_back,rolled_back,rolled_back,completed" ]
check "every list item carries its progress" \
    [ "$(jv '.items.map((d) => d.progress.waves + "/" + d.progress.nodes).join()')" = "1/3,2/3,1/4,3/3" ]
finish
