# ui.sh — builds the web UI (ui/ -> ui/dist, which `sextant serve` serves at /) when
# its sources changed since the last build. Sourced by tests/run.sh, deploy/local/up.sh
# and the browser tests (tests/e2e/lib/harness.sh), so that each of them finds a current
# build without paying for a rebuild: a stamp (a hash of every input of the build) in
# ui/node_modules says what dist/ was built from. `npm ci` runs only when
# package-lock.json changed. Serialised with flock: parallel tests share one build.

# ui_sources_hash ROOT: one hash of everything the build reads.
ui_sources_hash() {
    local root=$1
    (
        cd "$root" &&
            find ui/src ui/scripts ui/public ui/index.html ui/package.json ui/package-lock.json \
                ui/tsconfig.json ui/vite.config.ts proto/gateway/control/v1/control.proto api/openapi.json \
                -type f ! -path 'ui/src/gen/*' 2>/dev/null | LC_ALL=C sort | xargs sha256sum
    ) | sha256sum | cut -c1-64
}

# ui_build ROOT: builds ROOT/ui when needed; quiet unless it fails (then the log is
# printed). Returns non-zero when the build fails or npm is missing.
ui_build() {
    local root=$1
    local ui="$root/ui"
    command -v npm >/dev/null || {
        echo "ui: npm is missing (apt-get install nodejs npm; tests/run.sh and deploy/local/up.sh do)" >&2
        return 1
    }
    (
        flock -w 600 9 || { echo "ui: another build holds /tmp/sextant-ui-build.lock" >&2; exit 1; }
        want=$(ui_sources_hash "$root")
        if [ -f "$ui/dist/index.html" ] && [ "$(cat "$ui/node_modules/.sextant-build-stamp" 2>/dev/null)" = "$want" ]; then
            exit 0
        fi
        log=$(mktemp /tmp/sextant-ui-build.XXXXXX)
        if ! cmp -s "$ui/package-lock.json" "$ui/node_modules/.sextant-lock-stamp" 2>/dev/null; then
            echo "ui: npm ci" >&2
            (cd "$ui" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) >"$log" 2>&1 ||
                { cat "$log" >&2; rm -f "$log"; exit 1; }
            cp "$ui/package-lock.json" "$ui/node_modules/.sextant-lock-stamp"
        fi
        echo "ui: npm run build" >&2
        (cd "$ui" && npm run build) >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
        rm -f "$log"
        echo "$want" >"$ui/node_modules/.sextant-build-stamp"
    ) 9>/tmp/sextant-ui-build.lock
}
