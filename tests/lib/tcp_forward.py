#!/usr/bin/env python3
"""tcp_forward.py — a TCP forwarder a test controls, to cut a process's connections.

    tcp_forward.py LISTEN_PORT TARGET_HOST TARGET_PORT

Listens on 127.0.0.1:LISTEN_PORT and relays every connection to TARGET_HOST:TARGET_PORT,
each direction on a thread of its own; an end of stream on one side is passed on to the
other. Signals drive it:

    SIGUSR1  cut: every relayed connection is closed on both sides at once (the server
             sees its client go away, the client sees the server go away), and new
             connections are accepted and closed straight away until the next SIGUSR2;
    SIGUSR2  restore: new connections are relayed again.

Each change is printed on standard output as "<epoch ms> cut" or "<epoch ms> restored",
flushed, so a test can line it up with other logs.
"""
import signal
import socket
import sys
import threading
import time

lock = threading.Lock()
conns = set()  # every socket of a relayed connection, both sides
cut = False


def say(what):
    print("%d %s" % (int(time.time() * 1000), what), flush=True)


def close(s):
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    # The end of one direction ends the connection: pass it on to both sides.
    with lock:
        conns.discard(src)
        conns.discard(dst)
    close(src)
    close(dst)


def on_cut(signum, frame):
    global cut
    with lock:
        cut = True
        victims = list(conns)
        conns.clear()
    for s in victims:
        close(s)
    say("cut")


def on_restore(signum, frame):
    global cut
    with lock:
        cut = False
    say("restored")


def main():
    port, host, target = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    signal.signal(signal.SIGUSR1, on_cut)
    signal.signal(signal.SIGUSR2, on_restore)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(128)
    say("listening")
    while True:
        client, _ = srv.accept()
        with lock:
            refuse = cut
        if refuse:
            close(client)
            continue
        try:
            upstream = socket.create_connection((host, target), timeout=5)
            upstream.settimeout(None)
        except OSError:
            close(client)
            continue
        with lock:
            conns.update((client, upstream))
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


if __name__ == "__main__":
    main()
