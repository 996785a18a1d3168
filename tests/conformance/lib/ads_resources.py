#!/usr/bin/python3
"""ads_resources.py — a raw ADS client (gRPC C core through Debian's python3-grpcio) that
subscribes to listeners, clusters and endpoints on one stream, ACKs every response and
logs which resources each response carried, so that a test can tell a whole
state-of-the-world response from a subset.

    ads_resources.py --server HOST:PORT --node ID --cluster GROUP --out FILE
        [--protocol sotw|delta] [--eds-names FILE] [--version V]

sotw: one DiscoveryRequest per type on the StreamAggregatedResources stream: LDS and
CDS wildcard, EDS for the names in --eds-names (one a line); --version V puts
version_info V on each first request (a client that reconnects holding version V).
delta: the same subscriptions on DeltaAggregatedResources (LDS and CDS "*", EDS the
names). Every response is ACKed and logged as one line:
    <unix ms> response <lds|cds|eds> <version> <count> <name,name,...|-> [removed <names>]
where count and names are the resources it carried (Listener.name,
Cluster.name, ClusterLoadAssignment.cluster_name: field 1 of each, decoded from the
Any's value; Delta: Resource.name). A line "<unix ms> end <code> <details>" ends the log.
The messages are encoded by hand in protowire.py (field numbers from Envoy's protos
envoy/service/discovery/v3/discovery.proto), so no protoc is needed.
"""
import argparse
import queue
import sys

import grpc
from grpc_stream import log_to, run_stream
from protowire import drain, field, fields, text

TYPES = {
    "lds": "type.googleapis.com/envoy.config.listener.v3.Listener",
    "cds": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
    "eds": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
}
BY_URL = {v: k for k, v in TYPES.items()}
METHODS = {
    "sotw": "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
    "delta": "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
}


def node_msg(node, cluster):
    return field(1, node) + field(2, cluster)  # Node.id 1, Node.cluster 2


def sotw_request(url, names, version="", nonce="", node=None):
    # DiscoveryRequest: version_info 1, node 2, resource_names 3, type_url 4, response_nonce 5
    msg = field(1, version) if version else b""
    msg += field(2, node) if node else b""
    msg += b"".join(field(3, n) for n in names) + field(4, url)
    return msg + (field(5, nonce) if nonce else b"")


def delta_request(url, subscribe, nonce="", node=None):
    # DeltaDiscoveryRequest: node 1, type_url 2, resource_names_subscribe 3, response_nonce 6
    msg = field(1, node) if node else b""
    msg += field(2, url) + b"".join(field(3, n) for n in subscribe)
    return msg + (field(6, nonce) if nonce else b"")


def any_name(any_msg):
    """Field 1 (the name) of the resource an Any (type_url 1, value 2) carries."""
    return text(fields(fields(any_msg).get(2, [b""])[0]), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--protocol", default="sotw", choices=sorted(METHODS))
    ap.add_argument("--eds-names")
    ap.add_argument("--version", default="")
    a = ap.parse_args()

    eds = [l.strip() for l in open(a.eds_names)] if a.eds_names else []
    eds = [n for n in eds if n]
    log = log_to(a.out)

    node = node_msg(a.node, a.cluster)
    requests = queue.Queue()
    first = True
    for t in ("lds", "cds", "eds"):
        if t == "eds" and not eds:
            continue
        if a.protocol == "sotw":
            names = eds if t == "eds" else []
            requests.put(sotw_request(TYPES[t], names, a.version, node=node if first else None))
        else:
            names = eds if t == "eds" else ["*"]
            requests.put(delta_request(TYPES[t], names, node=node if first else None))
        first = False

    call = grpc.insecure_channel(a.server).stream_stream(METHODS[a.protocol])(drain(requests))

    def on_response(resp):
        fs = fields(resp)
        url, nonce = text(fs, 4), text(fs, 5)
        if a.protocol == "sotw":
            # DiscoveryResponse: version_info 1, resources 2 (Any: value 2), type_url 4, nonce 5
            version = text(fs, 1)
            names = [any_name(r) for r in fs.get(2, [])]
            removed = []
            requests.put(sotw_request(url, eds if BY_URL.get(url) == "eds" else [], version, nonce))
        else:
            # DeltaDiscoveryResponse: system_version_info 1, resources 2 (Resource: name 3),
            # type_url 4, nonce 5, removed_resources 6
            version = text(fs, 1)
            names = [text(fields(r), 3) for r in fs.get(2, [])]
            removed = [bytes(r).decode() for r in fs.get(6, [])]
            requests.put(delta_request(url, [], nonce))
        line = "response %s %s %d %s" % (BY_URL.get(url, url), version or "-", len(names), ",".join(sorted(names)) or "-")
        if removed:
            line += " removed " + ",".join(sorted(removed))
        log(line)

    run_stream(call, requests, log, on_response)
    return 0

if __name__ == "__main__":
    sys.exit(main())
