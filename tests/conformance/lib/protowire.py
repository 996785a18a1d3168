"""protowire.py — the protobuf wire format by hand, for the conformance clients
(ads_auth.py, ads_resources.py, tls_clients.py, xds_client.py), so that none of them needs protoc or
generated code.

    field(num, data)  a length-delimited field (string or message)
    fields(buf)       the length-delimited and varint fields of a message: {number: [values]}
    text(fs, num)     the first value of field num as text ("" when absent)
    drain(q)          the items put on a queue.Queue until a None: a request iterator
                      for a gRPC stream the caller keeps feeding
    now_ms()          the time as whole Unix milliseconds, the log lines' stamp
"""
import time


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
    """A length-delimited field (string or message)."""
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def _read_varint(buf, i):
    n, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def fields(buf):
    """The length-delimited and varint fields of a message: {number: [values]}."""
    i, out = 0, {}
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 2:
            n, i = _read_varint(buf, i)
            out.setdefault(num, []).append(buf[i : i + n])
            i += n
        elif wire == 0:
            n, i = _read_varint(buf, i)
            out.setdefault(num, []).append(n)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("unexpected wire type %d" % wire)
    return out


def text(fs, num):
    return fs.get(num, [b""])[0].decode()


def drain(q):
    while True:
        item = q.get()
        if item is None:
            return
        yield item


def now_ms():
    return int(time.time() * 1000)
