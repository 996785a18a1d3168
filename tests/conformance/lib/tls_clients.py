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

The DiscoveryRequest and DiscoveryResponse fields used are encoded and decoded by hand,
so that no generated code is needed.
"""
import argparse
import hashlib
import http.client
import queue
import signal
import ssl
import sys
import time

LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def request(node, group, version="", nonce=""):
    # DiscoveryRequest: version_info 1, node 2 (Node: id 1, cluster 2), type_url 4,
    # response_nonce 5.
    msg = field(2, field(1, node) + field(2, group)) + field(4, LDS)
    if version:
        msg = field(1, version) + msg
    if nonce:
        msg += field(5, nonce)
    return msg


def decode(buf):
    """The length-delimited fields 1 (version_info) and 5 (nonce) of a DiscoveryResponse."""
    i, out = 0, {}
    while i < len(buf):
        key, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            key |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        wt = key & 7
        if wt == 0:
            while buf[i] & 0x80:
                i += 1
            i += 1
            continue
        if wt != 2:
            raise ValueError("unexpected wire type %d" % wt)
        n, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if key >> 3 in (1, 5):
            out[key >> 3] = buf[i : i + n].decode()
        i += n
    return out


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


def probe(a):
    """One new connection: the first ADS response within 10 s, or why not."""
    import grpc

    channel = channel_for(a)
    stream = channel.stream_stream(
        "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    try:
        for raw in stream(iter([request(a.node, a.group)]), timeout=10):
            print("ok version %s" % decode(raw).get(1, ""))
            return 0
        print("error no response")
    except grpc.RpcError as e:
        print("error %s" % e.code().name)
    return 1


def ads(a):
    import grpc

    channel = channel_for(a)
    stream = channel.stream_stream(
        "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    out = open(a.out, "a", buffering=1)
    q = queue.Queue()
    q.put(request(a.node, a.group))

    def requests():
        while True:
            item = q.get()
            if item is None:
                return
            yield item

    signal.signal(signal.SIGTERM, lambda *_: (q.put(None), sys.exit(0)))
    try:
        for raw in stream(requests()):
            r = decode(raw)
            out.write("%d version %s\n" % (int(time.time() * 1000), r.get(1, "")))
            q.put(request(a.node, a.group, r.get(1, ""), r.get(5, "")))
        out.write("%d ended OK\n" % int(time.time() * 1000))
    except grpc.RpcError as e:
        out.write("%d ended %s\n" % (int(time.time() * 1000), e.code().name))


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
