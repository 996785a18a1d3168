#!/usr/bin/env python3
# flood.py — holds many idle and trickling TCP connections to a port, as a hostile client
# would, for tests/integration/api/test_http_flood.sh.
#
#   python3 flood.py PORT STATUS_FILE SOURCE:COUNT [SOURCE:COUNT...]
#
# For each SOURCE address (127.0.0.1, 127.0.0.3, ...) it keeps COUNT connections open:
# half of them send nothing, the other half send the start of a request and then one
# byte of a header value every half second, never ending the headers. A connection the
# server closes is opened again a second later. STATUS_FILE is rewritten every half
# second with one JSON object: {"wanted", "open", "connects", "closed_by_server"}
# (connections made and seen closed since the start). Runs until SIGTERM, then closes
# everything and exits 0. The open-files limit is raised to its hard limit; COUNT is
# cut to what it allows (the status file says how many are wanted).
import errno
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time

port = int(sys.argv[1])
status_file = sys.argv[2]
plan = []
for arg in sys.argv[3:]:
    src, n = arg.rsplit(":", 1)
    plan.append((src, int(n)))

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft = hard
except (ValueError, OSError):
    pass
room = max(0, soft - 64)
total = sum(n for _, n in plan)
if total > room:
    plan = [(s, n * room // total) for s, n in plan]

HEAD = b"GET /healthz HTTP/1.1\r\nHost: sextant\r\nX-Slow: "
sel = selectors.DefaultSelector()
stopping = False
stats = {"wanted": sum(n for _, n in plan), "open": 0, "connects": 0, "closed_by_server": 0}
# slots: (source, trickle?) -> socket or the time to open it again
slots = []
for src, n in plan:
    for i in range(n):
        slots.append({"src": src, "trickle": i % 2 == 1, "sock": None, "at": 0.0, "sent": 0})


def on_term(signum, frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)


def open_slot(s, now):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.bind((s["src"], 0))
        err = sock.connect_ex(("127.0.0.1", port))
    except OSError:
        sock.close()
        s["at"] = now + 1.0
        return
    if err not in (0, errno.EINPROGRESS):
        sock.close()
        s["at"] = now + 1.0
        return
    s["sock"] = sock
    s["sent"] = 0
    stats["connects"] += 1
    stats["open"] += 1
    sel.register(sock, selectors.EVENT_READ, s)


def close_slot(s, now, by_server):
    sock = s["sock"]
    if sock is None:
        return
    sel.unregister(sock)
    sock.close()
    s["sock"] = None
    s["at"] = now + 1.0
    stats["open"] -= 1
    if by_server:
        stats["closed_by_server"] += 1


def write_status():
    stats["open"] = sum(1 for s in slots if s["sock"] is not None)
    tmp = status_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(stats, f)
    os.replace(tmp, status_file)


last_trickle = last_status = 0.0
while not stopping:
    now = time.monotonic()
    for s in slots:
        if s["sock"] is None and s["at"] <= now:
            open_slot(s, now)
    for key, _ in sel.select(timeout=0.1):
        s = key.data
        try:
            data = key.fileobj.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            close_slot(s, time.monotonic(), True)
    now = time.monotonic()
    if now - last_trickle >= 0.5:
        last_trickle = now
        for s in slots:
            if not s["trickle"] or s["sock"] is None:
                continue
            chunk = HEAD if s["sent"] == 0 else b"a"
            try:
                s["sock"].send(chunk)
                s["sent"] += len(chunk)
            except BlockingIOError:
                pass
            except OSError:
                close_slot(s, now, True)
    if now - last_status >= 0.5:
        last_status = now
        write_status()

for s in slots:
    close_slot(s, time.monotonic(), False)
write_status()
