#!/usr/bin/python3
"""ads_auth.py — a raw xDS client (gRPC C core through Debian's python3-grpcio) that
opens one stream as a node, with the credentials it is given, and logs what happens.

    ads_auth.py --server HOST:PORT --node ID [--cluster GROUP] --out FILE
        [--protocol sotw|delta|control|report]
        [--ca CA.pem --cert CERT.pem --key KEY.pem]   # TLS, with a client certificate
        [--token JWT]                                 # "authorization: Bearer JWT"

sotw, delta and control open a stream (ADS state of the world, ADS Delta,
gateway.control.v1 StreamConfiguration), subscribe to every cluster (every snapshot for
control), ACK every response and log one line per response and one when the stream ends:
    <unix ms> response <version>
    <unix ms> end <grpc code name> <details>
report sends one unary ReportStatus for the node (--repeat N: N, one after the other)
and logs for each
    <unix ms> end <grpc code name> <details>
then exits. A stream runs until it ends or until SIGTERM/SIGINT. The messages are encoded
by hand in protowire.py (field numbers from Envoy's and Sextant's protos), so no protoc is needed.
"""
import argparse
import queue
import sys

import grpc
from grpc_stream import end_line, log_to, run_stream
from protowire import drain, field, fields, text

CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
METHODS = {
    "sotw": "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
    "delta": "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
    "control": "/gateway.control.v1.ConfigurationDiscoveryService/StreamConfiguration",
    "report": "/gateway.control.v1.ConfigurationDiscoveryService/ReportStatus",
}


def node_msg(node, cluster):
    return field(1, node) + (field(2, cluster) if cluster else b"")  # Node.id, Node.cluster


def first_request(proto, node, cluster):
    if proto == "sotw":  # DiscoveryRequest: node 2, type_url 4
        return field(2, node_msg(node, cluster)) + field(4, CDS)
    if proto == "delta":  # DeltaDiscoveryRequest: node 1, type_url 2
        return field(1, node_msg(node, cluster)) + field(2, CDS)
    # gateway.control.v1 DiscoveryRequest: node_id 1, cluster 2
    return field(1, node) + (field(2, cluster) if cluster else b"")


def ack(proto, node, cluster, resp):
    """The ACK of a response, and the version it carried."""
    fs = fields(resp)
    if proto == "sotw":  # DiscoveryResponse: version_info 1, type_url 4, nonce 5
        version = text(fs, 1)
        return version, (
            field(1, version) + field(2, node_msg(node, cluster)) + field(4, text(fs, 4)) + field(5, text(fs, 5))
        )
    if proto == "delta":  # DeltaDiscoveryResponse: system_version_info 1, type_url 4, nonce 5
        version = text(fs, 1)
        return version, field(2, text(fs, 4)) + field(6, text(fs, 5))
    # gateway.control.v1 DiscoveryResponse: version 1, nonce 2; request: version 3, nonce 4
    version = text(fs, 1)
    return version, field(1, node) + field(3, version) + field(4, text(fs, 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--cluster", default="")
    ap.add_argument("--protocol", default="sotw", choices=sorted(METHODS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--token")
    ap.add_argument("--repeat", type=int, default=1, help="report: how many calls")
    a = ap.parse_args()

    log = log_to(a.out)

    if a.ca:
        read = lambda p: open(p, "rb").read() if p else None
        creds = grpc.ssl_channel_credentials(read(a.ca), read(a.key), read(a.cert))
        channel = grpc.secure_channel(a.server, creds, options=[("grpc.ssl_target_name_override", "localhost")])
    else:
        channel = grpc.insecure_channel(a.server)
    metadata = [("authorization", "Bearer " + a.token)] if a.token else None

    if a.protocol == "report":
        call = channel.unary_unary(METHODS["report"])
        for _ in range(a.repeat):
            try:
                call(field(1, a.node) + field(2, "v1") + b"\x18\x01", metadata=metadata, timeout=10)
                log("end OK")
            except grpc.RpcError as e:
                log(end_line(e))
        return 0

    requests = queue.Queue()
    requests.put(first_request(a.protocol, a.node, a.cluster))

    call = channel.stream_stream(METHODS[a.protocol])(drain(requests), metadata=metadata)

    def on_response(resp):
        version, reply = ack(a.protocol, a.node, a.cluster, resp)
        log("response %s" % version)
        requests.put(reply)

    run_stream(call, requests, log, on_response)
    return 0


if __name__ == "__main__":
    sys.exit(main())
