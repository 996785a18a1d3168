#!/usr/bin/env python3
"""xds_fanout_snapshot.py — the ConfigSnapshots (IR JSON) xds_fanout.sh publishes.

    xds_fanout_snapshot.py ENDPOINTS VARIANT > snapshot.json
    xds_fanout_snapshot.py --eds-names > names.txt

100 backend clusters (namespace "bench", be-000 .. be-099) share ENDPOINTS endpoints
(IP literals 10.C.X.Y, spread over three zones), and one HTTP listener with one route
splitting traffic over the first ten clusters, so that every xDS type has content.
VARIANT 0 is the initial snapshot; VARIANT 1 is the update the benchmark times: every
endpoint moves to another port (EDS changes) and every cluster gets another connect
timeout (CDS changes too, so both types carry a new version). VARIANT 2 is the
initial snapshot with only the first cluster's endpoints on another port: one
ClusterLoadAssignment changes, no other resource does.
Standard library only.
"""
import json
import sys

CLUSTERS = 100
NAMESPACE = "bench"


def name(c):
    return "be-%03d" % c


def snapshot(endpoints, variant):
    per, extra = divmod(endpoints, CLUSTERS)
    # variant 2: variant 0 but for the endpoints of cluster 0
    port_of = lambda c: 8080 + (variant if variant < 2 else (1 if c == 0 else 0))
    timeout = 1 + (variant if variant < 2 else 0)
    backends = []
    for c in range(CLUSTERS):
        n = per + (1 if c < extra else 0)
        eps = [
            {
                "address": "10.%d.%d.%d" % (c, j // 250, j % 250 + 1),
                "port": port_of(c),
                "healthy": True,
                "zone": "zone-" + "abc"[j % 3],
            }
            for j in range(n)
        ]
        backends.append(
            {
                "name": name(c),
                "namespace": NAMESPACE,
                "protocol": "http",
                "connect_timeout": "%ds" % timeout,
                "endpoints": eps,
            }
        )
    return {
        "listeners": [
            {
                "name": "bench-http",
                "address": "0.0.0.0",
                "port": 10080,
                "protocol": "LISTENER_PROTOCOL_HTTP",
                "hostnames": ["bench.local"],
                "attached_routes": ["bench"],
            }
        ],
        "http_routes": [
            {
                "name": "bench",
                "namespace": NAMESPACE,
                "hostnames": ["bench.local"],
                "rules": [
                    {
                        "name": "all",
                        "matches": [{"path": "/", "path_type": "PathPrefix"}],
                        "backend_refs": [
                            {"name": name(c), "namespace": NAMESPACE, "port": 8080, "weight": 1}
                            for c in range(10)
                        ],
                        "timeouts": {"request": "5s"},
                    }
                ],
            }
        ],
        "backends": backends,
    }


def main(argv):
    if argv[1:] == ["--eds-names"]:
        for c in range(CLUSTERS):
            print("%s/%s" % (NAMESPACE, name(c)))
        return 0
    if len(argv) != 3 or not argv[1].isdigit() or argv[2] not in ("0", "1", "2"):
        sys.stderr.write(__doc__)
        return 2
    json.dump(snapshot(int(argv[1]), int(argv[2])), sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
