#!/usr/bin/env python3
"""webhook_receiver.py — a webhook receiver for the alert tests.

    python3 webhook_receiver.py --secret S --record FILE --port-file FILE [--fail-first N]

Listens on 127.0.0.1 (a free port, written to --port-file once listening) and, for each
POST, checks X-Sextant-Signature against the HMAC-SHA256 of the exact body bytes with
the secret (compare_digest), answers 500 to the first N requests (a receiver that is
down) and 204 to the others (401 when the signature is wrong), and appends one JSON line
to --record: {"n", "path", "status", "signature_ok", "delivery", "content_type",
"payload" (the parsed body, or null)}. The line is written before the answer is sent, so
a sender that saw the answer finds the line there.
"""
import argparse
import hashlib
import hmac
import http.server
import json
import os
import threading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secret", required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--fail-first", type=int, default=0)
    o = ap.parse_args()
    lock = threading.Lock()
    state = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            want = "sha256=" + hmac.new(o.secret.encode(), body, hashlib.sha256).hexdigest()
            got = self.headers.get("X-Sextant-Signature", "")
            ok = hmac.compare_digest(want, got)
            try:
                payload = json.loads(body)
            except ValueError:
                payload = None
            with lock:
                state["n"] += 1
                n = state["n"]
                status = 500 if n <= o.fail_first else (204 if ok else 401)
                with open(o.record, "a") as f:
                    f.write(json.dumps({
                        "n": n, "path": self.path, "status": status, "signature_ok": ok,
                        "delivery": self.headers.get("X-Sextant-Delivery"),
                        "content_type": self.headers.get("Content-Type"),
                        "payload": payload}) + "\n")
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = o.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, o.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
