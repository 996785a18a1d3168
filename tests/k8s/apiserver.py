#!/usr/bin/python3
"""apiserver.py — a Kubernetes API server for tests, Python 3 standard library only.

    /usr/bin/python3 tests/k8s/apiserver.py --port PORT --cert server.crt --key server.key \
        --token-file TOKEN [--client-ca CA] [--host 127.0.0.1] [--bookmark-interval 60] [--start-rv 100]

Started by tests/lib/k8s.sh (k8s_start), which makes the CA, the certificate and the token.
It speaks HTTPS (HTTP/1.1; watch streams in chunked transfer) and wants
`Authorization: Bearer TOKEN` on every request, or a client certificate signed by
--client-ca (401 otherwise; a wrong token is 401 even with a certificate). It follows the Kubernetes
API conventions for what Sextant uses:

- discovery (/api, /apis, /apis/<group>[/<version>]), /version, /healthz, /readyz, /livez,
  /openapi/v2 (protobuf or JSON) and /openapi/v3 (for kubectl);
- core v1 Namespace (cluster-scoped), Service, Secret, ConfigMap, Event; discovery.k8s.io/v1
  EndpointSlice; coordination.k8s.io/v1 Lease; apiextensions.k8s.io/v1
  CustomResourceDefinition: applying a CRD serves its kind, deleting it stops (404 before);
- list (per namespace or across them; labelSelector, fieldSelector, limit/continue,
  resourceVersion + resourceVersionMatch), get, create, update (PUT, 409 on a stale
  resourceVersion), patch (merge, strategic merge for built-in kinds, JSON patch, apply),
  delete, deletecollection, the /status subresource;
- watch (?watch=true) with resourceVersion, allowWatchBookmarks, timeoutSeconds and
  sendInitialEvents: newline-delimited JSON events ADDED/MODIFIED/DELETED/BOOKMARK/ERROR;
  from a compacted resourceVersion the stream is one ERROR event carrying a 410 Expired
  Status, as a real server streams it; bookmarks every --bookmark-interval seconds and
  one 2 s before timeoutSeconds ends the stream;
- errors as Status objects (400, 401, 404, 405, 409, 410, 415, 422, 504);
- Table output for kubectl get (Accept: application/json;as=Table;v=v1;g=meta.k8s.io);
  answers over 128 KiB gzipped for clients that accept it (watch streams never).

Test controls (same token), under /_test/:
  POST compact                        every older resourceVersion becomes 410 Gone
  POST drop-watches                   cuts every open watch connection
  POST restart[?restamp=true]         a new resourceVersion history (see kapi/store.py)
  POST fail-next?count=N&code=S[&path=SUBSTRING]   the next N API requests fail with S
  GET  state                          {"resourceVersion", "compacted", "watches": {resource: n}}
"""
import argparse
import gzip
import hmac
import json
import os
import random
import select
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kapi import openapi, table  # noqa: E402
from kapi.api import Api, Request  # noqa: E402
from kapi.resources import Registry  # noqa: E402
from kapi.store import Store, Watcher  # noqa: E402
from kapi.util import ApiError, bad_request, method_not_allowed, not_found_resource  # noqa: E402

MAX_BODY = 3 * 1024 * 1024
GZIP_THRESHOLD = 128 * 1024
TRUE = ("1", "t", "T", "true", "TRUE", "True")  # Go's strconv.ParseBool, as query parameters use
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
           410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, token, bookmark_interval, start_rv):
        super().__init__(addr, Handler)
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.registry = Registry()
        self.store = Store(start_rv)
        self.api = Api(self.registry, self.store)
        self.fail_lock = threading.Lock()
        self.fail = None  # (count, code, path substring)
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            req = Request("POST", self.registry.types[("", "namespaces")], "v1", None, None, None, {},
                          json.dumps({"metadata": {"name": ns}}).encode(), "application/json", "kube-apiserver")
            self.api.create(req)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, socket.timeout, OSError)):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sextant-test-apiserver"
    sys_version = ""

    def setup(self):
        # The TLS handshake happens here, in the connection's own thread, so that a slow
        # or failing client never holds up the accept loop. Headers and body are separate
        # writes: without TCP_NODELAY each answer would wait for the client's delayed ACK.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request.settimeout(10)
        self.request.do_handshake()
        self.request.settimeout(None)
        super().setup()

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (time.strftime("%H:%M:%S"), fmt % args))

    # ------------------------------------------------------------ plumbing
    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
                if len(body) > MAX_BODY:
                    raise ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
        return self.rfile.read(n) if n else b""

    def send_json(self, code, obj, content_type="application/json", warnings=(), extra=None):
        pretty = self.query.get("pretty") in TRUE if hasattr(self, "query") else False
        data = (json.dumps(obj, indent=2) if pretty else json.dumps(obj, separators=(",", ":"))).encode() + b"\n"
        self.send_raw(code, data, content_type, warnings, extra)

    def send_raw(self, code, data, content_type, warnings=(), extra=None):
        gzipped = False
        if len(data) > GZIP_THRESHOLD and "gzip" in (self.headers.get("Accept-Encoding") or ""):
            # as kube-apiserver (APIResponseCompression): large answers gzipped when accepted
            data = gzip.compress(data, compresslevel=1)
            gzipped = True
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for w in warnings:
            self.send_header("Warning", '299 - "%s"' % w.replace("\\", "\\\\").replace('"', '\\"'))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error_status(self, e):
        headers = dict(e.headers)
        if e.code == 429 and "Retry-After" not in headers:
            headers["Retry-After"] = "1"
        self.send_json(e.code, e.status(), extra=headers)

    def authorized(self):
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            return hmac.compare_digest(auth[7:].strip().encode(), self.server.token.encode())
        # a client certificate the handshake verified against --client-ca
        try:
            return bool(self.connection.getpeercert())
        except (ValueError, OSError):
            return False

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        path = url.path
        try:
            body = self.read_body()
        except ApiError as e:
            self.close_connection = True
            return self.send_error_status(e)
        except (ValueError, OSError):
            self.close_connection = True
            return
        if not self.authorized():
            return self.send_json(401, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                        "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        try:
            if path.startswith("/_test/"):
                return self.control(path[len("/_test/"):])
            self.injected_failure(path)
            self.route(path, body)
        except ApiError as e:
            self.send_error_status(e)
        except (ConnectionError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        except Exception as e:  # a bug here: answer as a real server would, and log it
            traceback.print_exc()
            self.send_error_status(ApiError(500, "InternalError", "Internal error occurred: %s" % e,
                                            {"causes": [{"message": str(e)}]}))

    def injected_failure(self, path):
        srv = self.server
        with srv.fail_lock:
            if not srv.fail:
                return
            count, code, sub = srv.fail
            if sub and sub not in self.path:
                return
            srv.fail = (count - 1, code, sub) if count > 1 else None
        raise ApiError(code, REASONS.get(code, "InternalError"),
                       "injected failure (test control fail-next)", {})

    # ------------------------------------------------------------ test controls
    def control(self, action):
        srv = self.server
        st = srv.store
        if action == "state" and self.command == "GET":
            with st.lock:
                return self.send_json(200, {"resourceVersion": str(st.rv), "compacted": str(st.compacted),
                                            "watches": st.watcher_counts()})
        if self.command != "POST":
            raise method_not_allowed(self.command)
        if action == "compact":
            return self.send_json(200, {"compacted": str(st.compact())})
        if action == "drop-watches":
            return self.send_json(200, {"dropped": st.drop_watches()})
        if action == "restart":
            rv = st.restart(restamp=self.query.get("restamp") in TRUE)
            return self.send_json(200, {"resourceVersion": str(rv)})
        if action == "fail-next":
            try:
                count = int(self.query.get("count", "1"))
                code = int(self.query.get("code", "500"))
            except ValueError:
                raise bad_request("fail-next takes count=N and code=STATUS")
            if count < 1 or not 400 <= code <= 599:
                raise bad_request("fail-next takes count >= 1 and an HTTP error code")
            with srv.fail_lock:
                srv.fail = (count, code, self.query.get("path") or "")
            return self.send_json(200, {"count": count, "code": code})
        raise not_found_resource()

    # ------------------------------------------------------------ routing
    def route(self, path, body):
        srv = self.server
        reg = srv.registry
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        if self.command in ("GET", "HEAD"):
            doc = self.discovery(parts)
            if doc is not None:
                return
        if len(parts) >= 2 and parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise not_found_resource()
        if not rest:
            raise not_found_resource()
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise not_found_resource()
        rt = reg.lookup(group, version, rest[0])
        if rt is None:
            raise not_found_resource()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if rt.namespaced and ns is None and (name is not None or self.command not in ("GET", "HEAD")):
            raise not_found_resource()
        if not rt.namespaced and ns is not None:
            raise not_found_resource()
        if sub is not None:
            has_status = rt.has_status(version) if hasattr(rt, "has_status") else rt.status
            if sub != "status" or not has_status:
                raise not_found_resource()
            if self.command not in ("GET", "HEAD", "PUT", "PATCH"):
                raise method_not_allowed(self.command)
        req = Request(self.command, rt, version, ns, name, sub, self.query, body,
                      self.headers.get("Content-Type"), self.headers.get("User-Agent"))
        api = srv.api
        m = self.command
        if m in ("GET", "HEAD") and name is None:
            if self.query.get("watch") in TRUE:
                return self.watch(req)
            items, meta = api.list(req)
            return self.respond_list(req, items, meta)
        if m in ("GET", "HEAD"):
            code, obj = api.get(req)
        elif m == "POST" and name is None:
            code, obj = api.create(req)
        elif m == "PUT" and name is not None:
            code, obj = api.update(req)
        elif m == "PATCH" and name is not None:
            code, obj = api.patch(req)
        elif m == "DELETE" and name is not None:
            code, obj = api.delete(req)
        elif m == "DELETE":
            code, obj = api.delete_collection(req)
        else:
            raise method_not_allowed(m)
        self.respond_object(req, code, obj)

    def representation(self):
        rep = table.negotiate(self.headers.get("Accept"))
        if rep is None:
            raise ApiError(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                           "application/json;as=Table;v=v1;g=meta.k8s.io", {})
        return rep

    def respond_object(self, req, code, obj):
        kind, av = self.representation()
        if kind == "table" and obj.get("kind") == req.rt.kind and req.method == "GET":
            t = table.table(req.rt, req.version, [obj], av, self.query.get("includeObject", "Metadata"),
                            {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
            return self.send_json(code, t, "application/json;as=Table;v=%s;g=meta.k8s.io" % av.split("/")[1],
                                  req.warnings)
        if kind == "meta" and obj.get("kind") == req.rt.kind:
            return self.send_json(code, table.partial(obj, av), warnings=req.warnings)
        self.send_json(code, obj, warnings=req.warnings)

    def respond_list(self, req, items, meta):
        kind, av = self.representation()
        api = self.server.api
        if kind == "table":
            objs = [api.out(req.rt, req.version, o) for o in items]
            t = table.table(req.rt, req.version, objs, av, self.query.get("includeObject", "Metadata"), meta)
            return self.send_json(200, t, "application/json;as=Table;v=%s;g=meta.k8s.io" % av.split("/")[1])
        if kind == "meta":
            return self.send_json(200, {"kind": "PartialObjectMetadataList", "apiVersion": av, "metadata": meta,
                                        "items": [table.partial(o, av) for o in items]})
        self.send_json(200, api.list_body(req, items, meta))

    def discovery(self, parts):
        """Answers the discovery and meta endpoints; returns None for other paths."""
        with self.server.store.lock:  # CRDs change what is served: a consistent document
            answer = self.discovery_document(parts)
        if answer is None:
            return None
        data, ctype = answer
        if isinstance(data, bytes):
            self.send_raw(200, data, ctype)
        else:
            self.send_json(200, data, ctype)
        return True

    def discovery_document(self, parts):
        """(document or bytes, content type) for a discovery or meta path, or None."""
        reg = self.server.registry
        host = "%s:%d" % self.server.server_address[:2]
        doc = None
        if parts == ["api"]:
            doc = openapi.api_versions(host)
        elif parts == ["apis"]:
            doc = openapi.api_group_list(reg)
        elif parts == ["api", "v1"]:
            doc = openapi.resource_list(reg, "", "v1")
        elif len(parts) == 2 and parts[0] == "apis":
            doc = openapi.api_group(reg, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = openapi.resource_list(reg, parts[1], parts[2])
        elif parts == ["version"]:
            doc = openapi.VERSION
        elif len(parts) == 1 and parts[0] in ("healthz", "readyz", "livez"):
            return b"ok", "text/plain; charset=utf-8"
        elif parts == ["openapi", "v2"]:
            if "protobuf" in (self.headers.get("Accept") or ""):
                return openapi.v2_protobuf(reg), "application/octet-stream"
            doc = openapi.v2_json(reg)
        elif parts == ["openapi", "v3"]:
            doc = openapi.v3_index(reg)
        elif len(parts) >= 3 and parts[:2] == ["openapi", "v3"]:
            rest = parts[2:]
            if rest == ["api", "v1"]:
                doc = openapi.v3_gv_doc(reg, "", "v1")
            elif len(rest) == 3 and rest[0] == "apis":
                doc = openapi.v3_gv_doc(reg, rest[1], rest[2])
        else:
            return None
        if doc is None:
            raise not_found_resource()
        return doc, "application/json"

    # ------------------------------------------------------------ watch
    def watch(self, req):
        srv = self.server
        api = srv.api
        st = srv.store
        rt = req.rt
        match, _ = api.selectors(req)
        kind, av = self.representation()
        rv_param = self.query.get("resourceVersion") or ""
        bookmarks = self.query.get("allowWatchBookmarks") in TRUE
        initial_events = self.query.get("sendInitialEvents") in TRUE
        if "sendInitialEvents" in self.query:
            if self.query.get("resourceVersionMatch") != "NotOlderThan":
                raise ApiError(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                               'Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
                               {"kind": "ListOptions", "group": "meta.k8s.io"})
            if initial_events and not bookmarks:
                raise ApiError(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: allowWatchBookmarks: '
                               'Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true',
                               {"kind": "ListOptions", "group": "meta.k8s.io"})
        timeout = self.query.get("timeoutSeconds")
        try:
            timeout = float(timeout) if timeout not in (None, "") else 0
        except ValueError:
            raise bad_request("invalid timeoutSeconds: " + timeout)
        if timeout <= 0:
            # no timeout asked for: the server's own, between 30 and 60 minutes
            timeout = 1800 * (1 + random.random())
        from_rv = None
        if rv_param not in ("", "0") and not initial_events:
            from_rv = api.parse_rv(rv_param)
        w = Watcher(st, rt.gr, req.namespace if rt.namespaced else None, match, bookmarks)
        with st.lock:
            initial = st.add_watcher(w, from_rv)
            snapshot_rv = st.rv
            compacted = st.compacted
        self.log_message('"WATCH %s" from %s', self.path, rv_param or "now")
        self.send_response(200)
        ctype = "application/json"
        if kind == "table":
            ctype = "application/json;as=Table;v=%s;g=meta.k8s.io" % av.split("/")[1]
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.end_headers()
        first = [True]

        def encode(etype, obj):
            if etype in ("ERROR", "BOOKMARK"):
                o = obj
            elif kind == "table":
                o = table.table(rt, req.version, [obj], av, self.query.get("includeObject", "Metadata"),
                                {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                                with_columns=first[0])
                first[0] = False
            elif kind == "meta":
                o = table.partial(obj, av)
            else:
                o = obj
            return json.dumps({"type": etype, "object": o}, separators=(",", ":")).encode() + b"\n"

        def send(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def bookmark(rv, initial_end=False):
            meta = {"resourceVersion": str(rv)}
            if rt.builtin:
                meta["creationTimestamp"] = None
            if initial_end:
                meta["annotations"] = {"k8s.io/initial-events-end": "true"}
            return encode("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version(req.version), "metadata": meta})

        try:
            if initial is False:
                status = ApiError(410, "Expired", "too old resource version: %d (%d)" % (from_rv, compacted)).status()
                send(encode("ERROR", status))
                self.wfile.write(b"0\r\n\r\n")
                return
            for obj in initial:
                if match(obj):
                    send(encode("ADDED", api.out(rt, req.version, obj)))
            if initial_events:
                send(bookmark(snapshot_rv, True))
            deadline = time.time() + timeout
            pre_timeout = deadline - 2
            next_bm = min(time.time() + srv.bookmark_interval, pre_timeout)
            while True:
                with w.cond:
                    if not w.queue and w.closed is None:
                        now = time.time()
                        wake = min(deadline, next_bm) if bookmarks else deadline
                        if now < wake:
                            w.cond.wait(min(wake - now, 1.0))
                    events = list(w.queue)
                    w.queue.clear()
                    closed = w.closed
                    cur_rv = st.rv
                if not events and closed is None and self.peer_closed():
                    self.close_connection = True
                    return
                out = b""
                for e in events:
                    for t, o, shared in self.translate(req, w, e):
                        if shared and kind == "json":
                            data = e.encoded.get((req.version, t))
                            if data is None:
                                data = e.encoded[(req.version, t)] = encode(t, o)
                            out += data
                        else:
                            out += encode(t, o)
                if out:
                    send(out)
                if closed == "drop":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if closed == "end":
                    break
                now = time.time()
                if bookmarks and now >= next_bm and not events:
                    send(bookmark(cur_rv))
                    # periodic bookmarks, and one 2 s before the timeout ends the watch
                    next_bm = float("inf") if now >= pre_timeout else min(now + srv.bookmark_interval, pre_timeout)
                if now >= deadline:
                    break
            self.wfile.write(b"0\r\n\r\n")
        except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
            self.close_connection = True
        finally:
            st.remove_watcher(w)

    def peer_closed(self):
        """True once the client has closed its end (a watch notices it within a second,
        as a real server does, rather than on its next write)."""
        sock = self.connection
        try:
            if sock.pending():
                return False
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            sock.setblocking(False)
            try:
                return sock.recv(1) == b""
            finally:
                sock.setblocking(True)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return False
        except (OSError, ValueError):
            return True

    def translate(self, req, w, e):
        """The events a watcher with selectors sees for one stored change: (type, object,
        whether the object is the stored one, so that its encoding can be shared)."""
        api = self.server.api
        rt = req.rt
        if w.namespace and e.ns != w.namespace:
            return []
        cur_ok = e.type != "DELETED" and w.match(e.obj)
        prev_ok = e.prev is not None and w.match(e.prev)
        if e.type == "DELETED":
            return [("DELETED", api.out(rt, req.version, e.obj), True)] if prev_ok else []
        if cur_ok and prev_ok:
            return [("MODIFIED", api.out(rt, req.version, e.obj), True)]
        if cur_ok:
            return [("ADDED", api.out(rt, req.version, e.obj), True)]
        if prev_ok:
            gone = dict(e.prev)
            gone["metadata"] = dict(gone["metadata"], resourceVersion=str(e.rv))
            return [("DELETED", api.out(rt, req.version, gone), False)]
        return []


def main():
    ap = argparse.ArgumentParser(description="Kubernetes API server for tests")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA instead of the token")
    ap.add_argument("--bookmark-interval", type=float, default=60.0,
                    help="seconds between BOOKMARK events of watches that allow them (default 60)")
    ap.add_argument("--start-rv", type=int, default=100)
    args = ap.parse_args()
    with open(args.token_file) as f:
        token = f.read().strip()
    if not token:
        sys.exit("apiserver: the token file is empty")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["http/1.1"])
    if args.client_ca:
        ctx.load_verify_locations(args.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    srv = Server((args.host, args.port), token, args.bookmark_interval, args.start_rv)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)

    def stop(signum, frame):
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write("apiserver: listening on https://%s:%d\n" % (args.host, args.port))
    sys.stderr.flush()
    srv.serve_forever(poll_interval=0.2)
    srv.store.drop_watches()
    srv.server_close()
    sys.stderr.write("apiserver: stopped\n")


if __name__ == "__main__":
    main()
