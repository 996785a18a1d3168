#!/usr/bin/env bash
# test_ui_keyboard.sh — a workflow through the web UI with the keyboard only, the focus
# visible at every step.
#
# A config rolled out (version 2, one wave) to two gateway.control.v1 data planes in
# group e2e-kbd. The scenario: "/" puts the focus in the search box; a fragment of the
# deployment's id lists it, ↓ makes it the active hit and Enter opens its page; Tab
# walks to the timeline's list of ACKs, Enter opens it and Tab reaches an ACK's link;
# Shift+Tab walks back to the navigation's Fleet link and Enter opens the fleet page;
# Tab reaches the group's replicas and Enter shows them (the address names the group),
# then a replica's proxies, then a proxy, whose page Enter opens. Every element the
# focus reaches on the way shows a focus ring (its computed outline or box shadow)
# inside the window.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init keyboard
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
e2e_rolled_fleet e2e-kbd dp-kbd-1 dp-kbd-2 || exit 1

export DEPLOYMENT_ID GROUP NODE=dp-kbd-1
e2e_browser "$E2E/scenarios/keyboard.mjs"
finish
