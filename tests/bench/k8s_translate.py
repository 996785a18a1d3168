#!/usr/bin/python3
"""k8s_translate.py — the Kubernetes side of tests/bench/k8s_translate.sh.

Python 3 standard library only (Debian's /usr/bin/python3, as the test API server).
Every command talks to the test API server (tests/k8s/apiserver.py) started by
tests/lib/k8s.sh k8s_start DIR, with DIR's url, token and ca.crt.

  k8s_translate.py load DIR --gateways N [--routes 5] [--per-namespace 10] [--threads 8]
      Creates the objects of N Gateways with many parallel POSTs over keep-alive
      connections: one GatewayClass of Sextant's, N/per-namespace Namespaces, and per
      Gateway one HTTP listener, `--routes` HTTPRoutes, as many Services and one
      EndpointSlice per Service (three ready endpoints). Prints one JSON line:
      {"objects", "seconds", "per_kind": {...}}.

  k8s_translate.py list DIR [--page 500]
      The floor of the initial list: lists every kind Sextant watches, one thread and one
      connection per kind, in pages of `--page` (as Sextant does: limit/continue, no gzip),
      and parses every page. Prints {"objects", "seconds", "bytes"}.

  k8s_translate.py streams --gateways N --sample S
      The sample of groups the clients follow: S Gateways spread over the N, one line per
      ADS stream for bench_k8s_translate: "<group> <cluster>,<cluster>,..." (the EDS names
      of the Gateway's backends).

  k8s_translate.py changes DIR --client CMD... --gateways N --sample S --changes C
                   --metrics URL [--first K]
      Starts the client (bench_k8s_translate with the streams file), waits until every
      stream holds its first CDS and EDS, then C times: picks the next sampled Gateway
      (round robin) and one of its EndpointSlices, arms the client on that group's
      stream, takes a CLOCK_MONOTONIC time stamp, replaces the slice's endpoints with a
      merge patch (a fresh address), and waits until the client reports the group's new
      ClusterLoadAssignment; then waits (on /metrics) until Sextant's pass over every
      Gateway has ended before the next change, so changes never queue behind one another.
      Changes are numbered from K (default 0): a later call against the same API server
      with K past the earlier calls' changes makes new addresses, never a repeat.
      Prints {"changes", "latency": [...seconds], "pass": [...seconds], "client": {...}}.
"""
import argparse
import json
import os
import queue
import re
import ssl
import subprocess
import sys
import threading
import time
import http.client
import urllib.parse

GW_GROUP = "gateway.networking.k8s.io"
CONTROLLER = "sextant.dev/gateway-controller"
CLASS = "sextant-bench"
PORT = 8080

# What Sextant watches (server/k8s/kinds.c), as list paths.
WATCHED = [
    ("GatewayClass", "/apis/gateway.networking.k8s.io/v1/gatewayclasses"),
    ("Gateway", "/apis/gateway.networking.k8s.io/v1/gateways"),
    ("HTTPRoute", "/apis/gateway.networking.k8s.io/v1/httproutes"),
    ("GRPCRoute", "/apis/gateway.networking.k8s.io/v1/grpcroutes"),
    ("TCPRoute", "/apis/gateway.networking.k8s.io/v1alpha2/tcproutes"),
    ("TLSRoute", "/apis/gateway.networking.k8s.io/v1alpha2/tlsroutes"),
    ("UDPRoute", "/apis/gateway.networking.k8s.io/v1alpha2/udproutes"),
    ("ReferenceGrant", "/apis/gateway.networking.k8s.io/v1beta1/referencegrants"),
    ("BackendTLSPolicy", "/apis/gateway.networking.k8s.io/v1/backendtlspolicies"),
    ("Service", "/api/v1/services"),
    ("EndpointSlice", "/apis/discovery.k8s.io/v1/endpointslices"),
    ("Secret", "/api/v1/secrets?fieldSelector=" + urllib.parse.quote("type=kubernetes.io/tls")),
    ("Namespace", "/api/v1/namespaces"),
    ("ConfigMap", "/api/v1/configmaps"),
]


def die(msg):
    sys.stderr.write("k8s_translate.py: %s\n" % msg)
    sys.exit(1)


# ---------------------------------------------------------------- the objects

def ns_of(g, per_ns):
    return "bench-%03d" % (g // per_ns)


def gw_name(g):
    return "gw-%04d" % g


def svc_name(g, r):
    return "gw-%04d-s%d" % (g, r)


def group_of(g, per_ns):
    return "%s/%s" % (ns_of(g, per_ns), gw_name(g))


def address(g, r, k, salt=0):
    """A unique IPv4 address per Gateway, Service, endpoint (and change)."""
    n = ((g * 16 + r) * 4 + k) + salt * 65536
    return "10.%d.%d.%d" % ((n >> 16) & 255, (n >> 8) & 255, n & 255)


def endpoints(g, r, salt=0):
    return [{"addresses": [address(g, r, k, salt)], "conditions": {"ready": True}} for k in range(3)]


def objects(n_gw, n_routes, per_ns):
    """(kind, path, object) in creation order."""
    out = []
    for i in range((n_gw + per_ns - 1) // per_ns):
        name = "bench-%03d" % i
        out.append(("Namespace", "/api/v1/namespaces",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
    out.append(("GatewayClass", "/apis/%s/v1/gatewayclasses" % GW_GROUP,
                {"apiVersion": GW_GROUP + "/v1", "kind": "GatewayClass", "metadata": {"name": CLASS},
                 "spec": {"controllerName": CONTROLLER}}))
    for g in range(n_gw):
        ns = ns_of(g, per_ns)
        out.append(("Gateway", "/apis/%s/v1/namespaces/%s/gateways" % (GW_GROUP, ns),
                    {"apiVersion": GW_GROUP + "/v1", "kind": "Gateway",
                     "metadata": {"name": gw_name(g), "namespace": ns},
                     "spec": {"gatewayClassName": CLASS,
                              "listeners": [{"name": "http", "port": 80, "protocol": "HTTP",
                                             "hostname": "*.g%04d.bench.test" % g}]}}))
        for r in range(n_routes):
            svc = svc_name(g, r)
            out.append(("Service", "/api/v1/namespaces/%s/services" % ns,
                        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc, "namespace": ns},
                         "spec": {"selector": {"app": svc},
                                  "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]}}))
            out.append(("EndpointSlice", "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % ns,
                        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": svc + "-b7x2k", "namespace": ns,
                                      "labels": {"kubernetes.io/service-name": svc}},
                         "addressType": "IPv4",
                         "ports": [{"name": "http", "port": PORT, "protocol": "TCP"}],
                         "endpoints": endpoints(g, r)}))
            out.append(("HTTPRoute", "/apis/%s/v1/namespaces/%s/httproutes" % (GW_GROUP, ns),
                        {"apiVersion": GW_GROUP + "/v1", "kind": "HTTPRoute",
                         "metadata": {"name": "gw-%04d-r%d" % (g, r), "namespace": ns},
                         "spec": {"parentRefs": [{"name": gw_name(g), "sectionName": "http"}],
                                  "hostnames": ["r%d.g%04d.bench.test" % (r, g)],
                                  "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/api"}},
                                                         {"headers": [{"name": "x-route", "value": "r%d" % r}]}],
                                             "backendRefs": [{"name": svc, "port": PORT}]}]}}))
    return out


def sample(n_gw, s):
    """S Gateway indexes spread evenly over 0..N-1 (first and last included)."""
    s = max(1, min(s, n_gw))
    if s == 1:
        return [0]
    return sorted({round(i * (n_gw - 1) / (s - 1)) for i in range(s)})


# ---------------------------------------------------------------- the API server

class Api:
    def __init__(self, d):
        with open(os.path.join(d, "url")) as f:
            u = urllib.parse.urlsplit(f.read().strip())
        with open(os.path.join(d, "token")) as f:
            self.token = f.read().strip()
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        self.conn = None

    def request(self, method, path, body=None, ctype="application/json"):
        """(status, body bytes); reconnects once when a kept-alive connection was closed."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, ConnectionError, ssl.SSLError) as e:
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise RuntimeError("%s %s: %s" % (method, path, e))
        raise AssertionError("unreachable")


def cmd_load(a):
    objs = objects(a.gateways, a.routes, a.per_namespace)
    per_kind = {}
    for kind, _, _ in objs:
        per_kind[kind] = per_kind.get(kind, 0) + 1
    t0 = time.monotonic()
    # Namespaces and the class first (everything else needs them), then the rest in parallel.
    first = [o for o in objs if o[0] in ("Namespace", "GatewayClass")]
    rest = [o for o in objs if o[0] not in ("Namespace", "GatewayClass")]
    errors = []

    def post(batch):
        api = Api(a.dir)
        for kind, path, obj in batch:
            try:
                st, body = api.request("POST", path, obj)
            except RuntimeError as e:
                errors.append(str(e))
                return
            if st != 201:
                errors.append("%s %s: HTTP %d %s" % (kind, obj["metadata"]["name"], st, body[:300]))
                return

    def run(items):
        threads = [threading.Thread(target=post, args=(items[i::a.threads],)) for i in range(a.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run(first)
    if not errors:
        run(rest)
    if errors:
        die("load: " + errors[0])
    print(json.dumps({"objects": len(objs), "seconds": round(time.monotonic() - t0, 3), "per_kind": per_kind}))


def cmd_list(a):
    results = {}

    def one(kind, path):
        api = Api(a.dir)
        n, nbytes, cont = 0, 0, None
        sep = "&" if "?" in path else "?"
        while True:
            q = "%s%slimit=%d" % (path, sep, a.page)
            if cont:
                q += "&continue=" + urllib.parse.quote(cont)
            try:
                st, body = api.request("GET", q)
            except RuntimeError as e:
                results[kind] = (str(e), 0)
                return
            if st == 404:
                break
            if st != 200:
                results[kind] = ("HTTP %d" % st, 0)
                return
            nbytes += len(body)
            page = json.loads(body)
            n += len(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                break
        results[kind] = (n, nbytes)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=kp) for kp in WATCHED]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - t0
    bad = [k for k, _ in WATCHED if not isinstance(results.get(k, ("no answer",))[0], int)]
    if bad:
        die("list: %s: %s" % (bad[0], results[bad[0]][0]))
    print(json.dumps({"objects": sum(v[0] for v in results.values()),
                      "bytes": sum(v[1] for v in results.values()), "seconds": round(secs, 3)}))


def stream_lines(n_gw, n_routes, per_ns, s):
    lines = []
    for g in sample(n_gw, s):
        ns = ns_of(g, per_ns)
        names = ",".join("%s/%s:%d" % (ns, svc_name(g, r), PORT) for r in range(n_routes))
        lines.append((g, "%s %s" % (group_of(g, per_ns), names)))
    return lines


def cmd_streams(a):
    for _, line in stream_lines(a.gateways, a.routes, a.per_namespace, a.sample):
        print(line)


# ---------------------------------------------------------------- the changes

def metric_sum(url, name, labels=None):
    """The sum of every sample of metric name (with the given label values) on url."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", u.path or "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r'^%s(\{[^}]*\})? (\S+)$' % re.escape(name), line)
        if not m:
            continue
        if labels and not all('%s="%s"' % kv in (m.group(1) or "") for kv in labels.items()):
            continue
        total += float(m.group(2))
    return total


def pass_count(url):
    """Gateways the controller has reconciled (any result)."""
    return metric_sum(url, "sextant_k8s_reconcile_total", {"kind": "Gateway"})


def cmd_changes(a):
    streams = stream_lines(a.gateways, a.routes, a.per_namespace, a.sample)
    path = os.path.join(a.work, "streams.txt")
    with open(path, "w") as f:
        f.write("".join(line + "\n" for _, line in streams))
    client = subprocess.Popen(a.client + ["--streams-file", path, "--timeout", str(a.timeout)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    lines = queue.Queue()

    def reader():
        for line in client.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()

    def expect(prefix):
        while True:
            try:
                line = lines.get(timeout=a.timeout + 10)
            except queue.Empty:
                die("the client said nothing for %d s (waiting for %s)" % (a.timeout + 10, prefix))
            if line is None:
                die("the client exited (waiting for %s)" % prefix)
            if line.startswith("error"):
                die("client: " + line)
            if line.startswith(prefix):
                return line.split()

    ready = expect("ready")
    api = Api(a.dir)
    latencies, passes = [], []
    for i in range(a.first, a.first + a.changes):
        idx = i % len(streams)
        g = streams[idx][0]
        r = (i // len(streams)) % a.routes
        ns = ns_of(g, a.per_namespace)
        base = pass_count(a.metrics)
        client.stdin.write("arm %d %s\n" % (idx, address(g, r, 0, salt=i + 1)))
        expect("armed")
        t0 = time.monotonic_ns()
        st, body = api.request("PATCH", "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices/%s-b7x2k"
                               % (ns, svc_name(g, r)), {"endpoints": endpoints(g, r, salt=i + 1)},
                               "application/merge-patch+json")
        if st != 200:
            die("PATCH EndpointSlice: HTTP %d %s" % (st, body[:300]))
        client.stdin.write("wait %d %d\n" % (idx, t0))
        got = expect("got")
        latencies.append(float(got[2]))
        # The pass (the changed Gateway reconciled; the others, unchanged, are left alone)
        # ends before the next change.
        deadline = time.monotonic() + a.timeout
        while pass_count(a.metrics) < base + 1:
            if time.monotonic() > deadline:
                die("Sextant did not reconcile the changed Gateway within %d s" % a.timeout)
            time.sleep(0.01)
        passes.append((time.monotonic_ns() - t0) / 1e9)
    client.stdin.write("quit\n")
    client.stdin.flush()
    stats = expect("stats")
    client.wait(timeout=30)
    print(json.dumps({"changes": a.changes, "streams": len(streams), "latency": latencies, "pass": passes,
                      "connect_seconds": float(ready[2]),
                      "client": dict(kv.split("=", 1) for kv in stats[1:])}))


def main():
    p = argparse.ArgumentParser(description="the Kubernetes side of tests/bench/k8s_translate.sh")
    sub = p.add_subparsers(dest="cmd", required=True)

    def shape(sp):
        sp.add_argument("--gateways", type=int, required=True)
        sp.add_argument("--routes", type=int, default=5)
        sp.add_argument("--per-namespace", type=int, default=10)

    sp = sub.add_parser("load")
    sp.add_argument("dir")
    shape(sp)
    sp.add_argument("--threads", type=int, default=8)
    sp = sub.add_parser("list")
    sp.add_argument("dir")
    sp.add_argument("--page", type=int, default=500)
    sp = sub.add_parser("streams")
    shape(sp)
    sp.add_argument("--sample", type=int, required=True)
    sp = sub.add_parser("changes")
    sp.add_argument("dir")
    shape(sp)
    sp.add_argument("--sample", type=int, required=True)
    sp.add_argument("--changes", type=int, required=True)
    sp.add_argument("--metrics", required=True)
    sp.add_argument("--work", required=True)
    sp.add_argument("--timeout", type=int, default=300)
    sp.add_argument("--first", type=int, default=0)
    sp.add_argument("--client", nargs=argparse.REMAINDER, required=True)
    a = p.parse_args()
    if getattr(a, "routes", 1) < 1 or getattr(a, "routes", 1) > 16:
        die("--routes takes 1 to 16")
    {"load": cmd_load, "list": cmd_list, "streams": cmd_streams, "changes": cmd_changes}[a.cmd](a)


if __name__ == "__main__":
    main()
