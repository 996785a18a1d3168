#!/usr/bin/python3
"""xds_client.py — a proxyless gRPC client (gRPC C core through Debian's python3-grpcio)
that calls sextant.test.Echo/Hello on TARGET over and over and logs each outcome.

    GRPC_XDS_BOOTSTRAP_CONFIG='{...}' /usr/bin/python3 xds_client.py \
        --target xds:///echo.test --out FILE [--interval-ms 50] [--deadline-ms 2000]

Same log format as xds_client.js: one line per call,
    <unix ms> ok <backend>
    <unix ms> err <grpc code> <code name> <details>
Runs until SIGTERM/SIGINT. The messages of echo.proto are two string fields, encoded
by hand in protowire.py so that no protoc is needed.
"""
import argparse
import signal
import sys
import time

import grpc
from protowire import field, fields, now_ms, text


def encode_request(message):
    return field(1, message)  # HelloRequest.message = 1


def decode_reply(buf):
    """HelloReply: returns field 1 (backend) as text."""
    return text(fields(buf), 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", default="xds:///echo.test")
    p.add_argument("--out", default="/dev/stdout")
    p.add_argument("--interval-ms", type=int, default=50)
    p.add_argument("--deadline-ms", type=int, default=2000)
    a = p.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    channel = grpc.insecure_channel(a.target)
    hello = channel.unary_unary(
        "/sextant.test.Echo/Hello",
        request_serializer=encode_request,
        response_deserializer=decode_reply,
    )
    seq = 0
    with open(a.out, "a", buffering=1) as out:
        while True:
            seq += 1
            try:
                backend = hello("call %d" % seq, timeout=a.deadline_ms / 1000.0)
                line = "ok %s" % backend
            except grpc.RpcError as e:
                code = e.code()
                details = " ".join(str(e.details() or "").split())
                line = "err %d %s %s" % (code.value[0], code.name, details)
            out.write("%d %s\n" % (now_ms(), line))
            time.sleep(a.interval_ms / 1000.0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
