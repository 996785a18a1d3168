#!/usr/bin/env bash
# test_ui_static.sh — the web UI's files at / (api/static.c) and the local demo's
# one-click sign-in (api/dev_sign_in.c), through the real daemon.
#
# A fake UI build (index.html, a hashed bundle with its .gz twin, a dot file, a symbolic
# link pointing out of the folder) in http.ui_dir: / and any app address answer
# index.html (no-cache, ETag, CSP); the bundle answers with its type, a year of
# immutable caching, gzip when asked for and identity otherwise, 304 on If-None-Match;
# a missing bundle is a 404, not the page; nothing outside the folder, no dot file and
# no link target is ever served, however the path is spelt; /api/ paths keep their JSON
# 404 and other methods do not reach the files. GET /api/v1/whoami lists what each role
# may do. POST /api/v1/auth/dev-sign-in does not exist until auth.dev_sign_in is on;
# then it mints a working token of a policy role (audited), refuses unknown roles
# (audited), and the daemon warns. A configured http.ui_dir without index.html stops the
# daemon at start with the key named; "" serves no UI.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init ui-static
UI="$WORK/ui"
mkdir -p "$UI/assets"
printf '<!doctype html><title>fake ui</title><div id="app">fake-ui-index</div>\n' >"$UI/index.html"
head -c 4000 /dev/zero | tr '\0' 'x' | sed 's/^/console.log("bundle");\/\//' >"$UI/assets/app-3f9a1c.js"
gzip -9 -k "$UI/assets/app-3f9a1c.js"
printf '<svg xmlns="http://www.w3.org/2000/svg"/>\n' >"$UI/favicon.svg"
printf 'secret-dot-file\n' >"$UI/.env"
printf 'outside-the-ui-folder\n' >"$WORK/outside.txt"
ln -s ../../outside.txt "$UI/assets/escape.js"
export SEXTANT_HTTP_UI_DIR="$UI"
api_serve

# ---------------------------------------------------------------- the page and the app's addresses
st=$(http GET /)
check "GET / answers 200 (got $st)" [ "$st" = 200 ]
check "GET / is index.html" contains "$WORK/body" fake-ui-index
check "index.html is text/html" [ "$(header Content-Type)" = "text/html; charset=utf-8" ]
check "index.html is revalidated every time (no-cache)" [ "$(header Cache-Control)" = no-cache ]
csp_self() { [[ "$(header Content-Security-Policy)" == *"default-src 'self'"* ]]; }
check "index.html has a Content-Security-Policy" csp_self
check "index.html may not be framed" [ "$(header X-Frame-Options)" = DENY ]
ETAG=$(header ETag)
check "index.html has an ETag ($ETAG)" [ -n "$ETAG" ]
st=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' -H "If-None-Match: $ETAG" "http://127.0.0.1:$HTTP_PORT/")
check "If-None-Match with its ETag answers 304 without a body (got $st)" [ "$st" = "304 0" ]
for p in /configs /configs/9b2f6c1e-0d4e-4c3f-9a7b-1f2e3d4c5b6a/history /proxies/envoy-1.example.com /sign-in; do
    st=$(http GET "$p")
    check "GET $p answers index.html (history fallback, got $st)" bash -c "[ '$st' = 200 ] && grep -q fake-ui-index '$WORK/body'"
done
st=$(http HEAD / -I)
check "HEAD / answers 200 (got $st)" [ "$st" = 200 ]

# ---------------------------------------------------------------- bundles
st=$(http GET /assets/app-3f9a1c.js)
check "a bundle answers 200 (got $st)" [ "$st" = 200 ]
check "a bundle is JavaScript" [ "$(header Content-Type)" = "text/javascript; charset=utf-8" ]
check "a hashed bundle is cached for a year, immutable" [ "$(header Cache-Control)" = "public, max-age=31536000, immutable" ]
check "without Accept-Encoding it is sent as is" bash -c "[ -z '$(header Content-Encoding)' ] && cmp -s '$WORK/body' '$UI/assets/app-3f9a1c.js'"
st=$(http GET /assets/app-3f9a1c.js -H 'Accept-Encoding: br, gzip')
check "with Accept-Encoding: gzip the .gz twin is sent" [ "$st $(header Content-Encoding)" = "200 gzip" ]
check "the gzip body is the bundle" bash -c "gunzip -c '$WORK/body' | cmp -s - '$UI/assets/app-3f9a1c.js'"
check "the answer varies on Accept-Encoding" [ "$(header Vary)" = Accept-Encoding ]
st=$(http GET /assets/app-3f9a1c.js -H 'Accept-Encoding: gzip;q=0')
check "gzip;q=0 gets the plain bundle" [ "$st:$(header Content-Encoding)" = "200:" ]
st=$(http GET /favicon.svg)
check "an SVG is image/svg+xml" [ "$st $(header Content-Type)" = "200 image/svg+xml" ]
st=$(http GET /assets/missing-0000.js)
check "a missing bundle is a 404, not the page (got $st)" bash -c "[ '$st' = 404 ] && ! grep -q fake-ui-index '$WORK/body'"

# ---------------------------------------------------------------- nothing outside
for p in /../outside.txt /%2e%2e/outside.txt /assets/../../outside.txt /assets/..%2f..%2foutside.txt \
    /assets/%2e%2e/%2e%2e/outside.txt /assets/escape.js /.env /assets/..%5c..%5coutside.txt; do
    st=$(http GET "$p" --path-as-is)
    check "GET $p never serves a file outside the UI or a dot file (got $st)" \
        bash -c "! grep -q -e outside-the-ui-folder -e secret-dot-file '$WORK/body'"
done

# ---------------------------------------------------------------- the API keeps its answers
st=$(http GET /api/v1/nothing)
check "an unknown /api path is still the JSON 404 (got $st)" [ "$st $(jv .error.code)" = "404 not_found" ]
st=$(http GET /api)
check "GET /api is the JSON 404 (got $st)" [ "$st $(jv .error.code)" = "404 not_found" ]
st=$(http POST /configs -H 'Content-Type: application/json' -d '{}')
check "POST to an app address is the JSON 404, not the page (got $st)" [ "$st $(jv .error.code)" = "404 not_found" ]
st=$(http GET /healthz)
check "/healthz is untouched" [ "$st $(jv .status)" = "200 ok" ]

# ---------------------------------------------------------------- whoami: what each role may do
for role in admin operator viewer; do
    printf -v "TOK_$role" '%s' "$(api_token "$role-user" "$role")"
done
st=$(api_call "$TOK_viewer" GET /api/v1/whoami)
check "whoami lists a viewer's permissions: read only" \
    jtrue 'j.role === "viewer" && Object.values(j.permissions).every((a) => a.length === 1 && a[0] === "read")'
st=$(api_call "$TOK_operator" GET /api/v1/whoami)
check "whoami lists an operator's permissions: configs changes, no audit writes" \
    jtrue '["create","update","rollback","validate"].every((a) => j.permissions.configs.includes(a)) && j.permissions.groups.includes("rollback")'
st=$(api_call "$TOK_admin" GET /api/v1/whoami)
check "whoami lists every action of the route table for an admin" \
    jtrue 'j.permissions.configs.includes("delete") && j.permissions.audit.includes("read")'

# ---------------------------------------------------------------- dev sign-in: off
st=$(api_json "" POST /api/v1/auth/dev-sign-in '{"role":"admin"}')
check "dev sign-in does not exist while auth.dev_sign_in is off (got $st)" [ "$st $(jv .error.code)" = "404 not_found" ]
st=$(http GET /api/v1/auth/dev-sign-in)
check "nor does its GET (got $st)" [ "$st" = 404 ]

# ---------------------------------------------------------------- dev sign-in: on
api_stop
SEXTANT_AUTH_DEV_SIGN_IN=true api_serve
check "the daemon warns that dev sign-in is on" contains "$WORK/serve.log" "auth.dev_sign_in is on"
st=$(http GET /api/v1/auth/dev-sign-in)
check "GET dev-sign-in lists the policy's roles (got $st)" [ "$st $(jv '.roles.join()')" = "200 admin,operator,viewer" ]
check "and the tokens' lifetime" [ "$(jv .ttl_seconds)" = 3600 ]
st=$(api_json "" POST /api/v1/auth/dev-sign-in '{"role":"operator"}')
RID=$(header X-Request-Id)
check "POST dev-sign-in mints a token (got $st)" [ "$st" = 200 ]
check "the answer must not be cached" [ "$(header Cache-Control)" = no-store ]
DEV=$(jv .token)
check "the default user is dev-<role>" [ "$(jv .user) $(jv .role)" = "dev-operator operator" ]
st=$(api_call "$DEV" GET /api/v1/whoami)
check "the token works (whoami $st)" [ "$st $(jv .user) $(jv .role)" = "200 dev-operator operator" ]
check "the token is HS256 and lives an hour" node -e '
    const [h, p] = process.argv[1].split(".").slice(0, 2).map((x) => JSON.parse(Buffer.from(x, "base64url")));
    process.exit(h.alg === "HS256" && p.exp - p.iat === 3600 ? 0 : 1);' "$DEV"
check "the sign-in is audited (request $RID)" [ "$(sql "SELECT actor || ' ' || actor_role || ' ' || result || ' ' || (details->>'ttl_seconds') FROM audit_log WHERE action = 'auth.dev_sign_in' AND request_id = '$RID'")" = "dev-operator operator success 3600" ]
st=$(api_json "" POST /api/v1/auth/dev-sign-in '{"role":"viewer","user":"ann@example.com"}')
check "a user name may be given" [ "$st $(jv .user) $(jv .role)" = "200 ann@example.com viewer" ]
st=$(api_json "" POST /api/v1/auth/dev-sign-in '{"role":"root"}')
check "an unknown role is refused with the policy's roles (got $st)" \
    bash -c "[ '$st' = 400 ] && grep -q 'admin, operator, viewer' '$WORK/body'"
RID=$(header X-Request-Id)
check "the refusal is audited as failed" [ "$(sql "SELECT result || ' ' || status_code FROM audit_log WHERE action = 'auth.dev_sign_in' AND request_id = '$RID'")" = "failed 400" ]
st=$(api_json "" POST /api/v1/auth/dev-sign-in '{"role":"admin","ttl":"10y"}')
check "unknown fields are refused (got $st)" [ "$st $(jv '.error.details[0].path')" = "400 ttl" ]
st=$(api_call "" POST /api/v1/auth/dev-sign-in -H 'Content-Type: text/plain' -d 'admin')
check "a body that is not JSON is refused (got $st)" [ "$st" = 415 ]
api_stop

# ---------------------------------------------------------------- http.ui_dir misconfigured or off
SEXTANT_HTTP_UI_DIR="$WORK/nothing-built" timeout 20 "${SX_ENV[@]}" "$BIN" serve >"$WORK/bad-ui.log" 2>&1
rc=$?
check "a configured http.ui_dir without index.html stops the daemon (exit $rc)" [ "$rc" != 0 ] && [ "$rc" != 124 ]
check "the error names http.ui_dir" contains "$WORK/bad-ui.log" "http.ui_dir $WORK/nothing-built has no index.html"
SEXTANT_HTTP_UI_DIR= api_serve
st=$(http GET /)
check "http.ui_dir \"\" serves no UI: / is the JSON 404 (got $st)" [ "$st $(jv .error.code)" = "404 not_found" ]
api_stop
finish
