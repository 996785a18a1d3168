#!/usr/bin/env bash
# test_secrets_at_rest.sh — private keys in configs are encrypted at rest, redacted for
# readers without secrets:read, and still reach the proxy.
#
# With a keyring (secrets.key_file: key k1), a config whose TLS secret carries a private
# key is created through REST. Read back with psql, config_versions.spec, snapshots.ir
# and snapshots.encoded hold no PEM and name key k1; the snapshot cached in Redis holds
# none either, nor do the audit log, the stored idempotent answer and the daemon's log.
# Over REST the key reads "[redacted]" for a viewer, an operator and a role granted every
# action on "*" (no wildcard grants secrets), in the config, its versions, its diff and
# the snapshot view; a role granted secrets:read (and the built-in admin) reads the PEM.
# A proxy's ADS stream (Envoy's protos) receives the private key in the SDS Secret.
# Rotation: keyring k1 + k2 (active), `sextant rotate-secrets` reseals every stored key
# with k2 (the key id in the columns changes), a second run reseals nothing; with k1
# gone from the keyring the replica serves the key again. A keyring that is wrong (k2
# under another key), lacks k2, or is absent makes `sextant serve` exit 1 at start with
# the reason; a missing key file is a configuration error. Without a keyring, a fresh
# database refuses private keys (422) unless secrets.allow_plaintext is set (warned).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init secrets
conf_services || exit 1
export SEXTANT_AUTH_ENABLED=true
export SEXTANT_AUTH_HS256_SECRET="conformance-secrets-secret-0123456789abcdef"
GROUP=shop
NS=conformance

key32() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
K1=$(key32)
K2=$(key32)
KEYS="$WORK/secrets.keys"
printf '# test keyring\nk1 %s\n' "$K1" >"$KEYS"
export SEXTANT_SECRETS_KEY_FILE="$KEYS"

# Roles: the built-ins, plus one with every action on "*" and one with secrets:read.
rbac_policy "$WORK/rbac.yaml" 'admin *=*' 'admin secrets=read' 'operator *=read' \
    'operator configs=create,update' 'viewer *=read' 'wildcard *=*' 'keyholder *=read' \
    'keyholder secrets=read'
export SEXTANT_AUTH_POLICY_FILE="$WORK/rbac.yaml"
OPERATOR=$(token olga operator)
VIEWER=$(token vera viewer)
ADMIN=$(token ada admin)
WILDCARD=$(token wanda wildcard)
KEYHOLDER=$(token kim keyholder)

# Two certificates and their private keys (tls, tls2), as an operator would paste them.
for c in tls tls2; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -keyout "$WORK/$c.key" -out "$WORK/$c.crt" -subj /CN=shop.example.com \
        -addext subjectAltName=DNS:shop.example.com 2>/dev/null
    check "openssl made private key $c" grep -q "PRIVATE KEY" "$WORK/$c.key"
done
# The base64 bodies of the keys (their second lines), plaintext fragments to look for too.
FRAG=$(sed -n 2p "$WORK/tls.key" | cut -c1-40)
FRAG2=$(sed -n 2p "$WORK/tls2.key" | cut -c1-40)

spec() { # spec BACKEND_PORT CERT: the config's spec, TLS listener + secret CERT.crt/.key
    node -e '
        const fs = require("fs");
        const [crt, key, port, ns] = process.argv.slice(1);
        console.log(JSON.stringify({
          listeners: [{name: "https", protocol: "LISTENER_PROTOCOL_HTTPS", port: 8443, address: "0.0.0.0",
                       hostnames: ["shop.example.com"], attached_routes: ["site"],
                       tls: {secret_refs: ["shop-tls"]}}],
          http_routes: [{name: "site", namespace: ns, rules: [{backend_refs: [{name: "api"}]}]}],
          backends: [{name: "api", namespace: ns, protocol: "HTTP",
                      endpoints: [{address: "127.0.0.1", port: Number(port), healthy: true}]}],
          secrets: [{namespace: ns, name: "shop-tls", cert_pem: fs.readFileSync(crt, "utf8"),
                     key_pem: fs.readFileSync(key, "utf8")}],
        }));' "$WORK/$2.crt" "$WORK/$2.key" "$1" "$NS"
}
call() { # call TOKEN METHOD PATH [BODY [curl args]]: status; body in $WORK/body
    local tok=$1 method=$2 path=$3 data=()
    shift 3
    if [ $# -gt 0 ]; then
        data=(-H 'Content-Type: application/json' --data-binary "$1")
        shift
    fi
    http "$method" "$path" -H "Authorization: Bearer $tok" "${data[@]}" "$@"
}
# The private key as the body of the last call has it at JSON path $1.
key_at() { jv "$1"; }
same_key() { [ "$(key_at "$1")" = "$(cat "$WORK/${2:-tls2}.key")" ]; } # same_key PATH [CERT]
# No plaintext of either key anywhere in the text $1.
no_plaintext() { ! grep -qF -e "PRIVATE KEY" -e "$FRAG" -e "$FRAG2" <<<"$1"; }
sds_fetch() { # sds_fetch NODE: what a proxy receives, into $WORK/sds.json
    node "$CONF/lib/sds_fetch.js" --server "127.0.0.1:$R1_GRPC" --group "$GROUP" --node "$1" >"$WORK/sds.json"
}
proxy_has_key() {
    sds_fetch "$1" && [ "$(jv '.secrets["conformance/shop-tls"].key' "$WORK/sds.json")" = "$(cat "$WORK/tls2.key")" ]
}

chmod 644 "$KEYS"
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP
check "the daemon warns that the key file can be read by others" \
    grep -q "secrets.key_file $KEYS can be read by other users" "$WORK/r1.log"
chmod 600 "$KEYS"

# ---------------------------------------------------------------- write through REST
st=$(call "$OPERATOR" POST /api/v1/configs \
    "{\"namespace\":\"$NS\",\"name\":\"shop\",\"groups\":[\"$GROUP\"],\"spec\":$(spec 9 tls)}" \
    -H 'Idempotency-Key: create-shop')
expect_status "an operator creates a config carrying a private key" 201 "$st"
ID=$(jv .id)
check "the answer to the operator shows the key redacted" [ "$(key_at .spec.secrets[0].key_pem)" = "[redacted]" ]
check "the answer keeps the certificate" [ "$(jv .spec.secrets[0].cert_pem)" = "$(cat "$WORK/tls.crt")" ]
st=$(call "$OPERATOR" PUT "/api/v1/configs/$ID" "{\"spec\":$(spec 10 tls2),\"message\":\"new key\"}" -H 'If-Match: "1"')
expect_status "an operator changes its key (version 2)" 200 "$st"

# ---------------------------------------------------------------- at rest: PostgreSQL
SPECS=$(sql "SELECT spec::text FROM config_versions WHERE config_id = '$ID' ORDER BY version")
check "config_versions.spec holds no PEM and no key bytes" no_plaintext "$SPECS"
check "config_versions.spec holds the keys sealed with k1" \
    [ "$(sql "SELECT count(*) FROM config_versions WHERE config_id = '$ID' AND spec->'secrets'->0->>'key_pem' LIKE 'sxsealed:v1:k1:%'")" = 2 ]
check "config_versions.spec keeps the certificate readable" \
    [ "$(sql "SELECT count(*) FROM config_versions WHERE config_id = '$ID' AND spec->'secrets'->0->>'cert_pem' LIKE '-----BEGIN CERTIFICATE-----%'")" = 2 ]
IRS=$(sql "SELECT ir::text FROM snapshots WHERE group_name = '$GROUP'")
check "snapshots.ir holds no PEM and no key bytes" no_plaintext "$IRS"
check "the snapshots' encoded bytes are sealed with k1 and hold no PEM" \
    [ "$(sql "SELECT count(*) FILTER (WHERE substring(encoded from 1 for 7) = '\\x5358453102'::bytea || 'k1'::bytea AND position('PRIVATE KEY'::bytea in encoded) = 0), count(*) FROM snapshots WHERE group_name = '$GROUP'")" = "2|2" ]
check "the audit log holds no private key" no_plaintext "$(sql "SELECT details::text FROM audit_log")"
check "the stored idempotent answer holds no private key" \
    no_plaintext "$(sql "SELECT coalesce(string_agg(t::text, ''), '') FROM idempotency_keys t")"
check "secret_keys knows key k1" [ "$(sql "SELECT string_agg(key_id, ',') FROM secret_keys")" = k1 ]

# ---------------------------------------------------------------- at rest: Redis
REDIS_PORT=${SEXTANT_REDIS_URL##*:}
CACHED=$(redis-cli -p "$REDIS_PORT" --no-raw GET "sextant:snapshot:$GROUP:2")
check "Redis caches snapshot 2 of $GROUP" [ -n "$CACHED" ]
check "the cached snapshot is sealed and holds no PEM" \
    bash -c '[[ "$1" == *SXE1* ]] && ! grep -qF "PRIVATE KEY" <<<"$1"' _ "$CACHED"

# ---------------------------------------------------------------- REST: redacted or not
for who in VIEWER OPERATOR WILDCARD; do
    st=$(call "${!who}" GET "/api/v1/configs/$ID")
    check "GET the config as ${who,,} ($st): key redacted, certificate shown" \
        [ "$st $(key_at .spec.secrets[0].key_pem) $(jtrue 'j.spec.secrets[0].cert_pem.startsWith("-----BEGIN CERTIFICATE")' && echo cert)" = "200 [redacted] cert" ]
done
st=$(call "$VIEWER" GET "/api/v1/configs/$ID/versions/1")
check "GET version 1 as viewer: key redacted" [ "$st $(key_at .spec.secrets[0].key_pem)" = "200 [redacted]" ]
st=$(call "$VIEWER" GET "/api/v1/configs/$ID/diff?from=1&to=2")
check "the diff as viewer ($st) shows the key changed, redacted" \
    jtrue 'j.changed.some((e) => e.path.endsWith(".key_pem") && e.old === "[redacted]" && e.new === "[redacted]")'
check "the diff as viewer holds no private key" no_plaintext "$(cat "$WORK/body")"
SNAP_ID=$(sql "SELECT id FROM snapshots WHERE group_name = '$GROUP' AND version = 2")
st=$(call "$VIEWER" GET "/api/v1/snapshots/$SNAP_ID")
check "the snapshot view as viewer: key redacted" [ "$st $(key_at .ir.secrets[0].key_pem)" = "200 [redacted]" ]
check "the snapshot view as viewer holds no private key" no_plaintext "$(cat "$WORK/body")"
for who in ADMIN KEYHOLDER; do
    st=$(call "${!who}" GET "/api/v1/configs/$ID")
    check "GET the config as ${who,,} (secrets:read) shows the private key ($st)" same_key .spec.secrets[0].key_pem
done
st=$(call "$KEYHOLDER" GET "/api/v1/snapshots/$SNAP_ID")
check "the snapshot view as keyholder shows the private key" same_key .ir.secrets[0].key_pem
st=$(call "$KEYHOLDER" GET "/api/v1/configs/$ID/diff?from=1&to=2")
check "the diff as keyholder ($st) shows both keys" \
    jtrue 'j.changed.some((e) => e.path.endsWith(".key_pem") && e.old.includes("PRIVATE KEY") && e.new.includes("PRIVATE KEY"))'
st=$(call "$ADMIN" GET "/api/v1/configs/$ID/versions/1")
check "version 1 as admin shows its own key" same_key .spec.secrets[0].key_pem tls

# ---------------------------------------------------------------- the proxy gets the key
check "a proxy's ADS stream receives the private key in the SDS Secret" proxy_has_key proxy-1
check "... with the certificate" [ "$(jv '.secrets["conformance/shop-tls"].cert' "$WORK/sds.json")" = "$(cat "$WORK/tls2.crt")" ]

# ---------------------------------------------------------------- rotation to k2
printf 'k1 %s\nk2 %s active\n' "$K1" "$K2" >"$KEYS"
conf_stop_serve r1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP
check "with k2 active, a proxy still receives the key sealed with k1" proxy_has_key proxy-2
"${SX_ENV[@]}" "$BIN" rotate-secrets >"$WORK/rotate1.out" 2>"$WORK/rotate1.err"
check "sextant rotate-secrets succeeds" [ $? = 0 ]
check "it resealed both versions and both snapshots, and retired k1" \
    jtrue 'j.configs_resealed === 2 && j.snapshots_resealed === 2 && j.keys_retired === 1 && j.active_key === "k2"' "$WORK/rotate1.out"
check "config_versions.spec now names k2 only" \
    [ "$(sql "SELECT string_agg(DISTINCT split_part(spec->'secrets'->0->>'key_pem', ':', 3), ',') FROM config_versions WHERE config_id = '$ID'")" = k2 ]
check "snapshots.ir and the encoded bytes now name k2 only" \
    [ "$(sql "SELECT count(*) FROM snapshots WHERE group_name = '$GROUP' AND split_part(ir->'secrets'->0->>'key_pem', ':', 3) = 'k2' AND substring(encoded from 1 for 7) = '\\x5358453102'::bytea || 'k2'::bytea")" = 2 ]
check "still no plaintext in the database" no_plaintext "$(sql "SELECT string_agg(spec::text, '') FROM config_versions") $(sql "SELECT string_agg(ir::text || encode(encoded, 'escape'), '') FROM snapshots")"
"${SX_ENV[@]}" "$BIN" rotate-secrets >"$WORK/rotate2.out" 2>"$WORK/rotate2.err"
check "a second rotate-secrets succeeds and reseals nothing" \
    jtrue 'j.configs_resealed === 0 && j.snapshots_resealed === 0 && j.keys_retired === 0' "$WORK/rotate2.out"

printf 'k2 %s\n' "$K2" >"$KEYS"
conf_stop_serve r1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP
check "with k1 gone, a proxy receives the key (resealed with k2)" proxy_has_key proxy-3
st=$(call "$ADMIN" GET "/api/v1/configs/$ID/versions/1")
check "with k1 gone, an admin reads version 1's key ($st)" same_key .spec.secrets[0].key_pem tls
st=$(call "$OPERATOR" PUT "/api/v1/configs/$ID" "{\"spec\":$(spec 11 tls2)}" -H 'If-Match: "2"')
expect_status "a change after the rotation is stored" 200 "$st"
check "...sealed with k2" \
    [ "$(sql "SELECT split_part(spec->'secrets'->0->>'key_pem', ':', 3) FROM config_versions WHERE config_id = '$ID' AND version = 3")" = k2 ]

# ---------------------------------------------------------------- editing without secrets:read
st=$(call "$OPERATOR" GET "/api/v1/configs/$ID")
node -e '
    const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    j.spec.backends[0].endpoints[0].port = 12;
    console.log(JSON.stringify({spec: j.spec}));
    j.spec.secrets.push({...j.spec.secrets[0], name: "other-tls"});
    require("fs").writeFileSync(process.argv[2], JSON.stringify({spec: j.spec}));
' "$WORK/body" "$WORK/new-secret.json" >"$WORK/edited.json"
st=$(call "$OPERATOR" PUT "/api/v1/configs/$ID" "$(cat "$WORK/edited.json")" -H 'If-Match: "3"')
expect_status "an operator writes back the config as read, key redacted, port changed" 200 "$st"
st=$(call "$ADMIN" GET "/api/v1/configs/$ID/versions/4")
check "version 4 has the new port" [ "$(jv .spec.backends[0].endpoints[0].port)" = 12 ]
check "version 4 kept the stored private key" same_key .spec.secrets[0].key_pem
st=$(call "$OPERATOR" PUT "/api/v1/configs/$ID" "$(cat "$WORK/new-secret.json")" -H 'If-Match: "4"')
check "a new secret whose key reads [redacted] is refused (422: $(jv .error.message))" \
    [ "$st $(sql "SELECT latest_version FROM configs WHERE id = '$ID'")" = "422 4" ]
conf_stop_serve r1
check "the daemon's logs hold no private key" no_plaintext "$(cat "$WORK"/*.log)"

# ---------------------------------------------------------------- a wrong keyring fails at start
serve_refused() { # serve_refused WHAT TEXT: `sextant serve` exits 1 saying TEXT
    local out rc
    out=$(SEXTANT_HTTP_LISTEN="127.0.0.1:$(free_port)" SEXTANT_GRPC_LISTEN="127.0.0.1:$(free_port)" \
        timeout 20 "${SX_ENV[@]}" "$BIN" serve 2>&1)
    rc=$?
    if [ "$rc" = 1 ] && grep -qF -- "$2" <<<"$out"; then
        pass "$1"
    else
        fail "$1 (exit $rc): $(tail -n 3 <<<"$out")"
    fi
}
printf 'k2 %s\n' "$K1" >"$KEYS"
serve_refused "serve refuses a keyring whose k2 is another key" \
    "key k2 of secrets.key_file is not the key that sealed the stored secrets"
printf 'k3 %s\n' "$K2" >"$KEYS"
serve_refused "serve refuses a keyring without k2" "secrets sealed with key k2, which secrets.key_file does not hold"
printf 'k2 not-a-key\n' >"$KEYS"
serve_refused "serve refuses a malformed keyring" "key k2 is not 32 bytes"
rm -f "$KEYS"
serve_refused "serve refuses a key file that does not exist" "secrets.key_file"
unset SEXTANT_SECRETS_KEY_FILE
serve_refused "serve refuses to start without a keyring" \
    "the database holds secrets sealed with key k2, and secrets.key_file is not set"

# ---------------------------------------------------------------- no keyring: refused, or opted out
PLAIN_DB="${SEXTANT_DATABASE_URL%/*}/plain"
psql "${SEXTANT_DATABASE_URL%/*}/postgres" -qXc "CREATE DATABASE plain" >/dev/null
SEXTANT_DATABASE_URL=$PLAIN_DB migrate || exit 1
export SEXTANT_DATABASE_URL=$PLAIN_DB SEXTANT_REDIS_KEY_PREFIX="plain:"
conf_serve r2 || exit 1
HTTP_PORT=$R2_HTTP
st=$(call "$OPERATOR" POST /api/v1/configs "{\"namespace\":\"$NS\",\"name\":\"shop\",\"groups\":[\"$GROUP\"],\"spec\":$(spec 9 tls)}")
check "without a keyring a private key is refused (422: $(jv .error.message))" \
    [ "$st $(jtrue 'j.error.message.includes("no secrets key is configured")' && echo said)" = "422 said" ]
check "...and nothing was stored" [ "$(sql "SELECT count(*) FROM configs")" = 0 ]
conf_stop_serve r2
export SEXTANT_SECRETS_ALLOW_PLAINTEXT=true
conf_serve r3 || exit 1
HTTP_PORT=$R3_HTTP
check "with secrets.allow_plaintext the daemon warns at start" grep -q "stored unencrypted" "$WORK/r3.log"
st=$(call "$OPERATOR" POST /api/v1/configs "{\"namespace\":\"$NS\",\"name\":\"shop\",\"groups\":[\"$GROUP\"],\"spec\":$(spec 9 tls)}")
expect_status "with secrets.allow_plaintext the config is stored" 201 "$st"
check "...in plaintext, as asked" [ "$(sql "SELECT count(*) FROM config_versions WHERE spec->'secrets'->0->>'key_pem' LIKE '-----BEGIN PRIVATE KEY-----%'")" = 1 ]
st=$(call "$VIEWER" GET "/api/v1/configs/$(jv .id)")
check "...and still redacted for a viewer" [ "$st $(key_at .spec.secrets[0].key_pem)" = "200 [redacted]" ]
conf_stop_serve r3
finish
