#!/usr/bin/env bash
# test_docker_image.sh — deploy/docker/Dockerfile read the way a reviewer would, without
# building it (no container engine is needed): every stage is Debian 12; the build stage
# installs tests/lib/deps.sh's build packages and runs deploy/local/up.sh's cmake commands
# and its UI build; the runtime stage installs the runtime packages, and those hold every
# shared library the built binary needs; it runs as a numeric non-root user; the UI stage's
# Node.js satisfies ui/package.json; EXPOSE names the ports of the defaults `sextant serve
# --help` prints; the image's sextant.yaml starts `sextant serve` with those ports and the
# HEALTHCHECK's path answers on it; .dockerignore keeps build trees and node_modules out.
source "$SEXTANT_SOURCE_DIR/tests/integration/deploy/lib.sh"

deploy_init docker
DF="$SRC/deploy/docker/Dockerfile"
UP="$SRC/deploy/local/up.sh"
# shellcheck source=tests/lib/deps.sh
source "$SRC/tests/lib/deps.sh"

# The Dockerfile's instructions, one per line (continuations joined, comments dropped).
awk '/^[[:space:]]*#/ { next } { if (sub(/\\$/, "")) { acc = acc $0; next } print acc $0; acc = "" }' "$DF" >"$WORK/df"
stage_of() { # stage_of NAME: the instructions of stage NAME ("" for the last one)
    awk -v n="$1" '
        toupper($1) == "FROM" { cur = (tolower($3) == "as") ? $4 : ""; last = NR }
        { lines[NR] = $0; st[NR] = cur }
        END { for (i = 1; i <= NR; i++) if ((n == "" && i >= last) || (n != "" && st[i] == n)) print lines[i] }
    ' "$WORK/df"
}
stage_of build >"$WORK/build"
stage_of ui >"$WORK/ui"
stage_of "" >"$WORK/runtime"

# ---------------------------------------------------------------- stages
while read -r _ image _; do
    check "stage image $image is Debian 12 (bookworm)" grep -Eq '^(debian:bookworm|[a-z0-9._/-]+:[^ ]*bookworm)' <<<"$image"
done < <(grep -i '^FROM ' "$WORK/df")
check "three stages: ui, build and the runtime" [ "$(grep -ci '^FROM ' "$WORK/df")" = 3 ] 
check "the build stage installs tests/lib/deps.sh's SEXTANT_BUILD_DEBS" \
    grep -q 'source tests/lib/deps.sh && deps_install "${SEXTANT_BUILD_DEBS\[@\]}"' "$WORK/build"
check "the runtime stage installs tests/lib/deps.sh's SEXTANT_RUNTIME_DEBS, nothing else" \
    sh -c "grep -q 'deps_install \"\${SEXTANT_RUNTIME_DEBS\[@\]}\"' '$WORK/runtime' && ! grep -Eq 'apt-get install|SEXTANT_BUILD_DEBS|SEXTANT_DEBS\b' '$WORK/runtime'"

# up.sh's cmake commands, as words without output redirections and the job count.
cmake_words() {
    sed -E 's/ -j("[$][(][^)]*[)]"|[0-9]*)//g' "$1" | grep -o 'cmake [^|;&]*' | sed -E 's/ [0-9]?>[^ ]*//g; s/ +$//' | sort -u
}
cmake_words "$UP" >"$WORK/up.cmake"
cmake_words "$WORK/build" >"$WORK/docker.cmake"
check "up.sh has cmake commands to compare" [ "$(wc -l <"$WORK/up.cmake")" -ge 2 ]
if diff "$WORK/up.cmake" "$WORK/docker.cmake" >"$WORK/cmake.diff"; then
    pass "the build stage runs up.sh's cmake commands: $(paste -sd';' "$WORK/up.cmake")"
else
    fail "the build stage's cmake commands differ from up.sh's: $(cat "$WORK/cmake.diff")"
fi
check "up.sh builds the UI with tests/lib/ui.sh's ui_build" grep -q '^ui_build ' "$UP"
check "... and so does the UI stage" grep -q 'source tests/lib/ui.sh && ui_build ' "$WORK/ui"
check "the runtime stage takes the UI the UI stage built" grep -q '^COPY --from=ui /src/ui/dist ' "$WORK/runtime"
check "the runtime stage takes the binary the build stage built" grep -q '^COPY --from=build .*/usr/bin/sextant /usr/bin/sextant' "$WORK/runtime"

# Node.js of the UI stage against ui/package.json's engines ("^20.19.0 || >=22.12.0"): the
# image tag's major version (its newest release) must satisfy one alternative.
NODE_MAJOR=$(sed -nE 's/^FROM node:([0-9]+)[-.].*/\1/p' "$WORK/df")
ENGINES=$(jq -r .engines.node "$SRC/ui/package.json")
node_ok() {
    local alt
    IFS='|' read -ra alts <<<"${ENGINES//||/|}"
    for alt in "${alts[@]}"; do
        alt=${alt// /}
        case $alt in
        ^*) [ "$NODE_MAJOR" = "$(cut -d. -f1 <<<"${alt#^}")" ] && return 0 ;;
        '>='*) [ "$NODE_MAJOR" -ge "$(cut -d. -f1 <<<"${alt#>=}")" ] && return 0 ;;
        esac
    done
    return 1
}
check "the UI stage's Node.js $NODE_MAJOR satisfies ui/package.json's engines ($ENGINES)" node_ok

# ---------------------------------------------------------------- runtime libraries
pkg_of() { # pkg_of PATH: the Debian package that owns a file (merged /usr or not)
    { dpkg -S "$1" 2>/dev/null || dpkg -S "/usr$1" 2>/dev/null || dpkg -S "${1#/usr}" 2>/dev/null; } |
        head -n 1 | cut -d: -f1
}
# What installing SEXTANT_RUNTIME_DEBS brings: the packages and, recursively, what they
# depend on (dpkg's own record of the installed packages; every alternative counted).
closure() {
    local -A seen=()
    local queue=("$@") p d
    while [ ${#queue[@]} -gt 0 ]; do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        [ -n "${seen[$p]:-}" ] && continue
        seen[$p]=1
        for d in $(dpkg-query -W -f='${Depends}, ${Pre-Depends}\n' "$p" 2>/dev/null |
            tr ',|' '\n\n' | sed -E 's/\(.*\)//; s/:any//; s/^ +| +$//g' | grep -v '^$'); do
            [ -n "${seen[$d]:-}" ] || queue+=("$d")
        done
    done
    printf '%s\n' "${!seen[@]}"
}
closure "${SEXTANT_RUNTIME_DEBS[@]}" >"$WORK/runtime-closure"
check "every SEXTANT_RUNTIME_DEBS package is a Debian package installed here" \
    [ "$(printf '%s\n' "${SEXTANT_RUNTIME_DEBS[@]}" | xargs dpkg-query -W -f='${Package}\n' 2>/dev/null | wc -l)" = ${#SEXTANT_RUNTIME_DEBS[@]} ]
missing=()
while read -r lib path; do
    pkg=$(pkg_of "$path")
    [ -n "$pkg" ] || { missing+=("$lib (no package owns $path)"); continue; }
    # the sanitizer build's runtimes and the libatomic they link (tests/run.sh runs this
    # test on build-asan too; the image holds a Release build)
    [[ $pkg =~ ^lib(a|ub|l|t)san[0-9]*$ ]] && continue
    [ "$pkg" = libatomic1 ] && ldd "$BIN" | grep -q libasan && continue
    grep -qx "$pkg" "$WORK/runtime-closure" || missing+=("$lib ($pkg)")
done < <(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
    grep -F -f <(readelf -d "$BIN" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'))
check "SEXTANT_RUNTIME_DEBS bring the package of every library the binary links: ${missing[*]:-all there}" \
    [ ${#missing[@]} -eq 0 ]
check "the HEALTHCHECK's curl is among them" sh -c "printf '%s\n' ${SEXTANT_RUNTIME_DEBS[*]} | grep -qx curl"

# ---------------------------------------------------------------- user, ports, health
USER_LINE=$(grep -i '^USER ' "$WORK/runtime" | tail -n 1)
check "the runtime runs as a numeric non-root user ($USER_LINE)" grep -Eq '^USER [1-9][0-9]*(:[0-9]+)?$' <<<"$USER_LINE"
HTTP_DEFAULT=$(default_port http.listen)
GRPC_DEFAULT=$(default_port grpc.listen)
EXPOSED=$(grep -i '^EXPOSE ' "$WORK/runtime" | cut -d' ' -f2- | tr ' ' '\n' | sort -n | paste -sd' ')
check "EXPOSE names the default ports ($EXPOSED)" [ "$EXPOSED" = "$(printf '%s\n' "$HTTP_DEFAULT" "$GRPC_DEFAULT" | sort -n | paste -sd' ')" ]
CONFIG_IN_IMAGE=$(sed -nE 's/^CMD .*"--config", "([^"]+)".*/\1/p' "$WORK/runtime")
check "CMD serves with the config file the image carries ($CONFIG_IN_IMAGE)" \
    grep -q "^COPY deploy/docker/sextant.yaml $CONFIG_IN_IMAGE\$" "$WORK/runtime"
check "the image's sextant.yaml listens on the default HTTP port" grep -q "listen: \"0.0.0.0:$HTTP_DEFAULT\"" "$SRC/deploy/docker/sextant.yaml"
check "... and the default gRPC port" grep -q "listen: \"0.0.0.0:$GRPC_DEFAULT\"" "$SRC/deploy/docker/sextant.yaml"
check "the image's sextant.yaml serves the UI where the image puts it" \
    grep -q "ui_dir: $(sed -nE 's|^COPY --from=ui /src/ui/dist (.*)$|\1|p' "$WORK/runtime")\$" "$SRC/deploy/docker/sextant.yaml"
HEALTH_URL=$(grep -o 'http://127.0.0.1:[0-9]*/[a-z/]*' "$WORK/runtime" | head -n 1)
check "the HEALTHCHECK asks the HTTP port ($HEALTH_URL)" grep -q "^http://127.0.0.1:$HTTP_DEFAULT/" <<<"$HEALTH_URL"
check "the HEALTHCHECK asks /healthz (a replica without its database must not be restarted)" \
    [ "${HEALTH_URL#http://127.0.0.1:"$HTTP_DEFAULT"}" = /healthz ]

# The image's config file, with this test's ports and a UI of no folder (the image's
# folder is not on this machine).
deploy_serve_checked "$SRC/deploy/docker/sextant.yaml" "the image's sextant.yaml" \
    '^(http\.listen|grpc\.listen|http\.ui_dir)$' SEXTANT_HTTP_UI_DIR=""
check "the HEALTHCHECK's path answers 200" [ "$(probe "${HEALTH_URL#http://127.0.0.1:"$HTTP_DEFAULT"}")" = 200 ]
serve_stop 15

# ---------------------------------------------------------------- build context
for pat in .git .local 'build*' '**/node_modules' ui/dist; do
    check ".dockerignore leaves out $pat" grep -qxF -- "$pat" "$SRC/.dockerignore"
done
while read -r src; do
    check "COPY source $src exists" test -e "$SRC/$src"
done < <(grep -i '^COPY ' "$WORK/df" | grep -v -- '--from=' | awk '{ for (i = 2; i < NF; i++) print $i }' | grep -v '^\.$')

finish
