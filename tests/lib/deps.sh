# deps.sh — the Debian packages Sextant builds, runs and tests with, installed when
# missing. Sourced by tests/run.sh, deploy/local/up.sh and deploy/docker/Dockerfile (one
# list for every user).

# What building the daemon needs (deploy/docker/Dockerfile installs these in its build
# stage; CMakeLists.txt also wants cmocka to configure). The web UI needs nodejs and npm.
SEXTANT_BUILD_DEBS=(
    build-essential cmake pkg-config curl ca-certificates
    libpq-dev libhiredis-dev libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
    libmicrohttpd-dev libjansson-dev libjwt-dev libyaml-dev libcurl4-openssl-dev libssl-dev
    libcmocka-dev libre2-dev libgnutls28-dev
)
# What the built daemon needs at run time on Debian 12: the packages of the shared
# libraries it links (tests/integration/deploy/test_docker_image.sh checks this against the
# binary), and curl for a container's health check. deploy/docker/Dockerfile's runtime
# stage installs exactly these.
SEXTANT_RUNTIME_DEBS=(
    libpq5 libhiredis0.14 libgrpc29 libprotobuf-c1 libmicrohttpd12 libjansson4 libjwt0
    libyaml-0-2 libcurl4 libssl3 libre2-9 libgnutls30 ca-certificates curl
)
# Everything deploy/local/up.sh and the tests need: the build, then the services and tools.
SEXTANT_DEBS=(
    "${SEXTANT_BUILD_DEBS[@]}" nodejs npm clang-format jq postgresql redis-server python3-grpcio
    haproxy # the load balancer of deploy/lb and of the failover tests
    kubernetes-client python3-kubernetes python3-yaml # kubectl and the Python client, against tests/k8s/apiserver.py
    python3-cryptography # certificates with an expiry in seconds (tests/conformance/test_k8s_reconcile.sh)
    chromium fonts-liberation # the browser tests (tests/e2e) drive Debian's Chromium
    systemd # systemd-analyze, which checks deploy/systemd/sextant.service
    prometheus # promtool, which checks and unit-tests deploy/prometheus/sextant-alerts.yaml
    clang libclang-rt-14-dev # the clang builds (tests/build_matrix.sh) and libFuzzer (tests/fuzz)
    valgrind # memcheck over a conformance run (tests/conformance/test_valgrind_memcheck.sh)
    linux-perf # profiles of the benchmarks (tests/bench/rollout.sh --perf)
)

# deps_install PKG...: installs the packages that are not installed yet (all of
# SEXTANT_DEBS when none are named). Uses sudo when not root.
deps_install() {
    local pkgs=("$@") missing=() p
    [ ${#pkgs[@]} -gt 0 ] || pkgs=("${SEXTANT_DEBS[@]}")
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            deps_provided "$p" || deps_command_present "$p" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing Debian packages: ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >/dev/null || true
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# deps_command_present PKG: the command PKG exists for is already installed by another
# package (a kubectl from the Kubernetes or Google Cloud repositories owns /usr/bin/kubectl,
# which Debian's kubernetes-client would have to overwrite); the tests use either.
deps_command_present() {
    case "$1" in
    kubernetes-client) command -v kubectl >/dev/null ;;
    *) return 1 ;;
    esac
}

# deps_provided PKG: an installed package provides PKG (NodeSource's nodejs provides
# npm and conflicts with Debian's npm package, so npm must not be installed then).
deps_provided() {
    dpkg-query -W -f='${db:Status-Abbrev}|${Provides}\n' 2>/dev/null | awk -F'|' -v p="$1" '
        $1 ~ /^ii/ {
            n = split($2, a, /, */)
            for (i = 1; i <= n; i++) { sub(/ .*/, "", a[i]); if (a[i] == p) found = 1 }
        }
        END { exit !found }'
}
