#!/usr/bin/env bash
# test_systemd_unit.sh — deploy/systemd as an operator installs it: systemd-analyze verifies
# the unit (with the binary under test where the unit names /usr/bin/sextant) and rates its
# sandbox; the files it names are the ones shipped beside it; its ExecStartPre and
# ExecStart run as written (the same arguments, the example's sextant.yaml, the database
# URL from the environment as sextant.env gives it): migrate succeeds, serve gets ready
# with every value of the file, and the migration step is the one the daemon needs.
#
# systemd-analyze verify loads the unit offline (no running systemd needed: it works in a
# container whose PID 1 is not systemd); `security --offline` scores the hardening from
# the file alone.
source "$SEXTANT_SOURCE_DIR/tests/integration/deploy/lib.sh"

deploy_init systemd
D="$SRC/deploy/systemd"
UNIT="$D/sextant.service"

value() { # value KEY: the unit's (last) KEY=, without the key
    awk -F= -v k="$1" '$1 == k { sub(/^[^=]*=/, ""); v = $0 } END { print v }' "$UNIT"
}

# ---------------------------------------------------------------- the unit file
if ! command -v systemd-analyze >/dev/null; then
    fail "systemd-analyze is missing (Debian package systemd; tests/lib/deps.sh installs it)"
else
    mkdir -p "$WORK/unit"
    sed "s|/usr/bin/sextant|$BIN|g" "$UNIT" >"$WORK/unit/sextant.service"
    if systemd-analyze verify "$WORK/unit/sextant.service" >"$WORK/verify.log" 2>&1 && [ ! -s "$WORK/verify.log" ]; then
        pass "systemd-analyze verify accepts sextant.service without a warning"
    else
        fail "systemd-analyze verify: $(cat "$WORK/verify.log")"
    fi
    # 1.5 of 10 ("OK"); the score moves only when the sandbox changes.
    if systemd-analyze security --offline=yes --threshold=15 "$WORK/unit/sextant.service" >"$WORK/security.log" 2>&1; then
        pass "systemd-analyze security: $(grep -o 'Overall exposure level.*' "$WORK/security.log")"
    else
        fail "systemd-analyze security: $(grep -o 'Overall exposure level.*' "$WORK/security.log" || tail -n 3 "$WORK/security.log")"
    fi
fi
for key in DynamicUser NoNewPrivileges ProtectHome PrivateTmp MemoryDenyWriteExecute; do
    check "$key=yes" [ "$(value "$key")" = yes ]
done
check "ProtectSystem=strict" [ "$(value ProtectSystem)" = strict ]
check "an empty CapabilityBoundingSet" grep -qx 'CapabilityBoundingSet=' "$UNIT"
check "SystemCallFilter=@system-service" grep -qx 'SystemCallFilter=@system-service' "$UNIT"
check "RestrictAddressFamilies names the families a replica uses" \
    [ "$(value RestrictAddressFamilies)" = "AF_INET AF_INET6 AF_UNIX" ]
check "Restart=on-failure" [ "$(value Restart)" = on-failure ]

START=$(value ExecStart)
PRE=$(value ExecStartPre)
CONFIG=$(sed -n 's/.*--config \([^ ]*\).*/\1/p' <<<"$START")
check "ExecStart runs serve with a config file ($START)" [ "$START" = "/usr/bin/sextant serve --config $CONFIG" ]
check "ExecStartPre runs migrate with the same config file" [ "$PRE" = "/usr/bin/sextant migrate --config $CONFIG" ]
check "the config file it names is shipped beside it" test -f "$D/$(basename "$CONFIG")"
check "the EnvironmentFile it names is shipped beside it" test -f "$D/$(basename "$(value EnvironmentFile)")"
check "sextant.env sets the database URL" grep -q '^SEXTANT_DATABASE_URL=' "$D/sextant.env"
check "the credential's file is where sextant.yaml reads it" \
    grep -q "hs256_secret_file: /run/credentials/sextant.service/$(value LoadCredential | cut -d: -f1)\$" "$D/sextant.yaml"

# ---------------------------------------------------------------- the commands, as written
# A fresh database: what ExecStartPre finds on a first start. The unit's commands with the
# binary under test and the shipped file; the environment is sextant.env's with the
# database URL of this test, plus this test's ports and JWT key file (the credential).
psql "$SEXTANT_DATABASE_URL" -qXc 'DROP SCHEMA public CASCADE; CREATE SCHEMA public' >/dev/null
read -ra PRE_ARGS <<<"${PRE#/usr/bin/sextant }"
if SEXTANT_AUTH_HS256_SECRET_FILE="$WORK/jwt-hs256" "${SX_ENV[@]}" "$BIN" "${PRE_ARGS[@]/$CONFIG/$D/sextant.yaml}" >"$WORK/migrate.log" 2>&1; then
    pass "ExecStartPre ($PRE) migrates a fresh database"
else
    fail "ExecStartPre: $(cat "$WORK/migrate.log")"
fi
check "... and a second time, as on every restart" \
    env SEXTANT_AUTH_HS256_SECRET_FILE="$WORK/jwt-hs256" "${SX_ENV[@]}" "$BIN" "${PRE_ARGS[@]/$CONFIG/$D/sextant.yaml}"
deploy_serve_checked "$D/sextant.yaml" "the unit's sextant.yaml (ExecStart)" \
    '^(http\.listen|grpc\.listen|http\.ui_dir|auth\.hs256_secret_file|log\.level)$' SEXTANT_HTTP_UI_DIR=""
check "the default ports: HTTP" grep -q "listen: \"[0-9.]*:$(default_port http.listen)\"" "$D/sextant.yaml"
check "the default ports: gRPC" grep -q "listen: \"[0-9.]*:$(default_port grpc.listen)\"" "$D/sextant.yaml"
serve_stop 15

finish
