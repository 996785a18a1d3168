# deps.sh — the Debian packages Sextant builds, runs and tests with, installed when
# missing. Sourced by tests/run.sh and deploy/local/up.sh (one list, two users).

SEXTANT_DEBS=(
    build-essential cmake pkg-config clang-format curl ca-certificates
    libpq-dev libhiredis-dev libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
    libmicrohttpd-dev libjansson-dev libjwt-dev libyaml-dev libcurl4-openssl-dev libssl-dev
    libcmocka-dev postgresql redis-server
)

# deps_install PKG...: installs the packages that are not installed yet (all of
# SEXTANT_DEBS when none are named). Uses sudo when not root.
deps_install() {
    local pkgs=("$@") missing=() p
    [ ${#pkgs[@]} -gt 0 ] || pkgs=("${SEXTANT_DEBS[@]}")
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing Debian packages: ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >/dev/null || true
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
