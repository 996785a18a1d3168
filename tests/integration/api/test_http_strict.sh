#!/usr/bin/env bash
# test_http_strict.sh — the REST server's HTTP/1.1 framing, its handling of ill-formed
# UTF-8 and its request ids, against the real daemon, PostgreSQL and Redis.
#
# Raw requests go over a socket (python3): a request whose framing a proxy in front could
# read differently (two Content-Length, whitespace before a header's colon, Content-Length
# with Transfer-Encoding, a Transfer-Encoding not ending in chunked, an HTTP/1.1 request
# without exactly one Host) is answered 400 in the error shape and the connection is
# closed, so a request pipelined behind it is never answered. A path with bytes that are
# not UTF-8 gets a 4xx, never a 500; a viewer's refused DELETE on such a path leaves an
# audit row and an access log line that carry the path with U+FFFD. A client's
# X-Request-Id is kept as client_request_id beside the server's own id, which is the one
# answered and audited.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init http_strict
api_serve
OPER=$(api_token olga operator)
VIEW=$(api_token victor viewer)
check "sextant token mints tokens" [ -n "$OPER" ] && [ -n "$VIEW" ]

# raw FILE: sends the bytes of FILE on one connection and reads until the server closes
# it (or 10 s pass). Prints "<answers> <first status> <eof|open>"; the bytes received go
# to $WORK/raw.out.
cat >"$WORK/raw.py" <<'EOF'
import re, socket, sys
port, path = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(open(path, "rb").read())
s.settimeout(10)
got, end = b"", "eof"
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
except socket.timeout:
    end = "open"
except ConnectionResetError:
    pass
open(sys.argv[3], "wb").write(got)
st = re.findall(rb"HTTP/1\.[01] (\d{3}) ", got)
print(len(st), st[0].decode() if st else "-", end)
EOF
raw() {
    python3 "$WORK/raw.py" "$HTTP_PORT" "$1" "$WORK/raw.out"
    [ -z "${RAW_DEBUG:-}" ] || cat -v "$WORK/raw.out" >&2
}
# req NAME BYTES: a raw request (printf format) in $WORK/NAME.req, with a well-formed
# request pipelined behind it.
PIPELINED='GET /healthz HTTP/1.1\r\nHost: sextant\r\n\r\n'
req() {
    printf "$2$PIPELINED" >"$WORK/$1.req"
}

# ------------------------------------------------------------------ framing
# The control: two well-formed pipelined requests on one connection get two answers, and
# a closing request ends the connection.
printf "GET /healthz HTTP/1.1\r\nHost: sextant\r\n\r\nGET /healthz HTTP/1.1\r\nHost: sextant\r\nConnection: close\r\n\r\n" >"$WORK/ok.req"
check "two well-formed pipelined requests get two 200s" [ "$(raw "$WORK/ok.req")" = "2 200 eof" ]

req cl2 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nContent-Length: 5\r\nContent-Length: 45\r\n\r\nhello'
req cl_same 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello'
req cl_te 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nContent-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
req te_cl 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n'
req te_gzip 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nTransfer-Encoding: gzip\r\n\r\n'
req te_chunked_gzip 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n'
req te_http10 'POST /healthz HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
req cl_space 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nContent-Length : 5\r\n\r\nhello'
req no_host 'GET /healthz HTTP/1.1\r\n\r\n'
req two_hosts 'GET /healthz HTTP/1.1\r\nHost: sextant\r\nHost: other\r\n\r\n'
for name in cl2 cl_same cl_te te_cl te_gzip te_chunked_gzip te_http10 cl_space no_host two_hosts; do
    got=$(raw "$WORK/$name.req")
    check "$name: one answer, 400, the connection closed (got $got)" [ "$got" = "1 400 eof" ]
done
for name in cl2 cl_te cl_space no_host two_hosts; do
    raw "$WORK/$name.req" >/dev/null
    check "$name: the 400 has the error shape" contains "$WORK/raw.out" '{"error":{"code":"invalid_argument","message":"malformed request: '
    check "$name: the 400 says Connection: close" grep -qi '^Connection: close' "$WORK/raw.out"
done
# A Content-Length libmicrohttpd cannot read it refuses itself (with its own 400 body).
req cl_list 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nContent-Length: 5, 5\r\n\r\nhello'
for name in cl_list; do
    got=$(raw "$WORK/$name.req")
    check "$name: 400, nothing else answered, the connection closed (got $got)" \
        bash -c "grep -Eq '^[0-9]+ 400 eof$' <<<'$got' && ! grep -q 'HTTP/1.1 [1-35]' '$WORK/raw.out'"
done
printf 'GET /healthz HTTP/1.0\r\n\r\n' >"$WORK/http10.req"
check "HTTP/1.0 without Host is answered 200" [ "$(raw "$WORK/http10.req")" = "1 200 eof" ]
printf 'POST /healthz HTTP/1.1\r\nHost: sextant\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n' >"$WORK/chunked.req"
check "a chunked body alone still reaches routing (405)" [ "$(raw "$WORK/chunked.req")" = "1 405 eof" ]
check "the refused requests are in the access log" \
    contains "$WORK/serve.log" '"method":"GET","path":"/healthz","route":"unmatched","status":400,'

# ------------------------------------------------------------------ ill-formed UTF-8
FFFD=$'\xef\xbf\xbd'
st=$(api_call "$VIEW" DELETE '/api/v1/configs/bad%FFname' -H 'X-Request-Id: utf8-viewer')
check "a viewer's DELETE on a path that is not UTF-8 is a 4xx (got $st)" grep -Eqx '4[0-9][0-9]' <<<"$st"
RID=$(header X-Request-Id)
check "the answer carries the server's request id ($RID)" grep -Eqx '[0-9a-f]{32}' <<<"$RID"
check "the refusal has one audit row, by victor, under the server's id" \
    [ "$(sql "SELECT actor || '|' || actor_role || '|' || result || '|' || status_code FROM audit_log WHERE request_id = '$RID'")" = "victor|viewer|denied|$st" ]
check "the audit row keeps the path with U+FFFD" \
    [ "$(sql "SELECT details->>'path' FROM audit_log WHERE request_id = '$RID'")" = "/api/v1/configs/bad${FFFD}name" ]
check "the audit row keeps the client's X-Request-Id as client_request_id" \
    [ "$(sql "SELECT details->>'client_request_id' FROM audit_log WHERE request_id = '$RID'")" = utf8-viewer ]
check "no audit row takes the client's id as its request id" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE request_id = 'utf8-viewer'")" = 0 ]
# The access log line is written when the request completes, after the answer is sent.
check "the access log line has the path with U+FFFD and both ids" wait_for 10 \
    bash -c "grep -F '\"request_id\":\"$RID\"' '$WORK/serve.log' | grep -F '\"path\":\"/api/v1/configs/bad${FFFD}name\"' | grep -qF '\"client_request_id\":\"utf8-viewer\"'"

# The same byte sent raw, not percent-encoded.
printf "DELETE /api/v1/configs/raw\xffname HTTP/1.1\r\nHost: sextant\r\nAuthorization: Bearer $VIEW\r\nX-Request-Id: utf8-raw\r\nConnection: close\r\n\r\n" >"$WORK/rawbyte.req"
got=$(raw "$WORK/rawbyte.req")
check "a raw non-UTF-8 byte in the path is a 4xx (got $got)" grep -Eq '^1 4[0-9][0-9] eof$' <<<"$got"
check "it leaves an audit row with U+FFFD in the path" \
    [ "$(sql "SELECT details->>'path' FROM audit_log WHERE details->>'client_request_id' = 'utf8-raw'")" = "/api/v1/configs/raw${FFFD}name" ]

st=$(api_json "$OPER" PUT '/api/v1/configs/%C0%AF' '{"spec":{}}')
check "an operator's PUT on an overlong-encoded path is a 4xx, not a 500 (got $st)" grep -Eqx '4[0-9][0-9]' <<<"$st"
check "its answer is the error shape" jtrue 'typeof j.error.code === "string" && j.error.message.length > 0'
st=$(api_json "$OPER" PUT "/api/v1/configs/x%ED%A0%80" '{"spec":{}}' -H $'X-Request-Id: bad\xff-id')
check "a surrogate in the path is a 4xx too (got $st)" grep -Eqx '4[0-9][0-9]' <<<"$st"
RID=$(header X-Request-Id)
check "an ill-formed X-Request-Id is kept with U+FFFD in the access log" wait_for 10 \
    bash -c "grep -F '\"request_id\":\"$RID\"' '$WORK/serve.log' | grep -qF '\"client_request_id\":\"bad${FFFD}-id\"'"

st=$(api_call "$OPER" GET '/api/v1/configs?group=edge%FF')
check "a query argument that is not UTF-8 is read with U+FFFD: an empty list (got $st)" \
    bash -c "[ '$st' = 200 ] && grep -qF '\"items\":[]' '$WORK/body'"

check "no request was answered 500" bash -c "! grep -q '\"status\":500' '$WORK/serve.log'"
check "every access log line is a JSON object with a path" \
    node -e 'const fs = require("fs"); for (const l of fs.readFileSync(process.argv[1], "utf8").split("\n")) { if (!l.includes("\"component\":\"http\"") || !/"msg":"[A-Z]+ \//.test(l)) continue; const j = JSON.parse(l); if (typeof j.path !== "string" || typeof j.request_id !== "string") process.exit(1); }' "$WORK/serve.log"

api_stop
finish
