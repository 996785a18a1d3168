#!/usr/bin/python3
"""tls_clients.py — long-lived TLS clients that must outlive a certificate rotation.

    /usr/bin/python3 tls_clients.py ads --target 127.0.0.1:PORT --ca CA.pem \
        --node NODE --group GROUP --out FILE
        An ADS (state of the world) stream through gRPC C core (Debian's python3-grpcio)
        over TLS: subscribes to every listener, ACKs each response and logs
            <unix ms> version <version_info>
        and, when the stream ends, <unix ms> ended <grpc code name>. Runs until SIGTERM.

    /usr/bin/python3 tls_clients.py probe --target 127.0.0.1:PORT --ca CA.pem \
        [--cert CHAIN.pem --key KEY.pem] --node NODE --group GROUP
        One new connection (with a client certificate for mutual TLS when given) and an
        ADS stream on it: prints "ok version <v>" and exits 0 on the first response,
        or "error <why>" and exits 1.

    /usr/bin/python3 tls_clients.py rest --port PORT --ca CA.pem --go FIFO --out FILE
        One HTTPS connection (keep-alive): GET /healthz, logs
            first <status> <sha256 of the server certificate>
        then waits for a line on the named pipe FIFO and sends a second GET on the same
        connection:  second <status> <sha256 of that connection's certificate>
        (or "second error <what>"), and exits.

The DiscoveryRequest and DiscoveryResponse fields used are encoded and decoded by hand in
protowire.py, so that no generated code is needed.
"""
import argparse
import hashlib
import http.client
import queue
import signal
import ssl
import sys

from protowire import drain, field, fields, now_ms, text

LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"


def request(node, group, version="", nonce=""):
    # DiscoveryRequest: version_info 1, node 2 (Node: id 1, cluster 2), type_url 4,
    # response_nonce 5.
    msg = field(2, field(1, node) + field(2, group)) + field(4, LDS)
    if version:
        msg = field(1, version) + msg
    if nonce:
        msg += field(5, nonce)
    return msg


def channel_for(a):
    import grpc

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    creds = grpc.ssl_channel_credentials(
        root_certificates=read(a.ca),
        private_key=read(a.key) if a.key else None,
        certificate_chain=read(a.cert) if a.cert else None,
    )
    return grpc.secure_channel(
        a.target, creds, options=[("grpc.ssl_target_name_override", "localhost")]
    )


def ads_stream(channel):
    """The ADS (state of the world) stream method of channel, on raw bytes."""
    return channel.stream_stream(
        "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )


def probe(a):
    """One new connection: the first ADS response within 10 s, or why not."""
    import grpc

    channel = channel_for(a)
    stream = ads_stream(channel)
    try:
        for raw in stream(iter([request(a.node, a.group)]), timeout=10):
            print("ok version %s" % text(fields(raw), 1))
            return 0
        print("error no response")
    except grpc.RpcError as e:
        print("error %s" % e.code().name)
    return 1


def ads(a):
    import grpc

    channel = channel_for(a)
    stream = ads_stream(channel)
    out = open(a.out, "a", buffering=1)
    q = queue.Queue()
    q.put(request(a.node, a.group))

    signal.signal(signal.SIGTERM, lambda *_: (q.put(None), sys.exit(0)))
    try:
        for raw in stream(drain(q)):
            r = fields(raw)
            out.write("%d version %s\n" % (now_ms(), text(r, 1)))
            q.put(request(a.node, a.group, text(r, 1), text(r, 5)))
        out.write("%d ended OK\n" % now_ms())
    except grpc.RpcError as e:
        out.write("%d ended %s\n" % (now_ms(), e.code().name))


def rest(a):
    ctx = ssl.create_default_context(cafile=a.ca)
    out = open(a.out, "a", buffering=1)
    conn = http.client.HTTPSConnection("localhost", a.port, context=ctx, timeout=30)

    def get():
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        r.read()
        der = conn.sock.getpeercert(binary_form=True)
        return "%d %s" % (r.status, hashlib.sha256(der).hexdigest())

    out.write("first %s\n" % get())
    with open(a.go) as go:  # blocks until the test writes its line
        go.readline()
    try:
        out.write("second %s\n" % get())
    except Exception as e:  # the connection was closed under us
        out.write("second error %s\n" % type(e).__name__)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    for mode in ("ads", "probe"):
        s = sub.add_parser(mode)
        s.add_argument("--target", required=True)
        s.add_argument("--ca", required=True)
        s.add_argument("--cert", help="client certificate chain (mutual TLS)")
        s.add_argument("--key", help="client private key (mutual TLS)")
        s.add_argument("--node", required=True)
        s.add_argument("--group", required=True)
        if mode == "ads":
            s.add_argument("--out", required=True)
    s = sub.add_parser("rest")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--ca", required=True)
    s.add_argument("--go", required=True)
    s.add_argument("--out", required=True)
    a = p.parse_args()
    if a.mode == "probe":
        sys.exit(probe(a))
    ads(a) if a.mode == "ads" else rest(a)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
