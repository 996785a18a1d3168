"""grpc_stream.py — what the raw xDS clients (ads_auth.py, ads_resources.py) share around
a gRPC stream: the log they write and the run of a stream until it ends.

    log_to(path)      a function that appends a line to the file path, stamped with
                      now_ms(): "<unix ms> <line>"
    end_line(e)       the log line of a call that failed: "end <grpc code name> <details>"
    run_stream(call, requests, log, on_response)
                      calls on_response(resp) for every response of the stream call
                      (it puts its replies on requests, the queue the call drains) until
                      the stream ends or SIGTERM/SIGINT cancels it; logs "end OK" or
                      end_line, then ends the requests
"""
import signal

import grpc
from protowire import now_ms


def log_to(path):
    out = open(path, "a", buffering=1)

    def log(line):
        out.write("%d %s\n" % (now_ms(), line))

    return log


def end_line(e):
    return "end %s %s" % (e.code().name, e.details())


def run_stream(call, requests, log, on_response):
    signal.signal(signal.SIGTERM, lambda *_: call.cancel())
    signal.signal(signal.SIGINT, lambda *_: call.cancel())
    try:
        for resp in call:
            on_response(resp)
        log("end OK")
    except grpc.RpcError as e:
        log(end_line(e))
    requests.put(None)
