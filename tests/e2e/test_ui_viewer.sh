#!/usr/bin/env bash
# test_ui_viewer.sh — the web UI for a viewer, and when things are missing.
#
# A viewer opens a config's address without a session and lands on sign-in (no
# one-click sign-in: auth.dev_sign_in is off here); a bad token is refused with the
# server's reason; the viewer's token brings them back to the config, which is
# read-only: no save, no apply, no rollback, no "new config", no republish. The
# dashboard counts the two connected data planes, shows the replica as the leader and
# alive, and follows a change made elsewhere without moving what is on screen; the proxies page lists them with the version they
# acknowledged; every page reflows in a narrow window. Sign-in works with the keyboard
# alone. In a second window whose event stream is scripted, an event is parsed and
# shown, the dropped stream is reopened with Last-Event-ID and the token, and a 404
# from the endpoint turns the page to polling, which still brings changes in. Then the daemon restarts without its database: the
# UI still loads and says the database is unreachable instead of showing empty tables.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init viewer
e2e_services || exit 1
e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
VIEWER=$(e2e_token vera viewer)
GROUP=e2e-view

CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || exit 1
e2e_put_config "$ADMIN" "$CONFIG_ID" "$(e2e_spec web.example 10080 8081)" "second version" || exit 1
LATEST=$(e2e_group_version "$ADMIN" "$GROUP")
check "the fixture published snapshot v2 of $GROUP (got v$LATEST)" [ "$LATEST" = 2 ]
e2e_dataplane dp-view-1 "$GROUP"
e2e_dataplane dp-view-2 "$GROUP"
check "dp-view-1 acked v$LATEST" e2e_wait_acked "$ADMIN" dp-view-1 "$LATEST"
check "dp-view-2 acked v$LATEST" e2e_wait_acked "$ADMIN" dp-view-2 "$LATEST"

export VIEWER ADMIN CONFIG_ID GROUP LATEST NODES="dp-view-1 dp-view-2"
e2e_browser "$E2E/scenarios/viewer.mjs"

# ---------------------------------------------------------------- the database is gone
e2e_stop_serve
SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$(free_port)/nothing" \
    SEXTANT_DATABASE_CONNECT_TIMEOUT=500ms UNREADY=1 e2e_serve || exit 1
e2e_browser "$E2E/scenarios/database_down.mjs"
finish
