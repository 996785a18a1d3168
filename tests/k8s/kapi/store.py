"""store — objects and their resourceVersion history, as etcd plus the watch cache keep them.

One global revision counter: every write (create, update, delete) takes the next
resourceVersion, so resourceVersions are global and strictly increasing. Each key keeps
its versions since the compaction point, so a paginated list can be served at the
snapshot of its first page and a watch can start from any resourceVersion not older than
the compaction point. Older resourceVersions are 410 Gone (Expired).

Watchers get events pushed into their own queue under the store lock, in revision order;
the thread serving a watch drains its queue. Everything is under one lock: objects stored
here are never changed in place (a write stores a new dict), so readers may use them after
letting go of the lock.

Test controls: compact() (every older resourceVersion becomes 410), drop_watches() (every
open watch connection is cut), restart() (the revision jumps far ahead and is marked
compacted, as `etcdutl snapshot restore --bump-revision --mark-compacted` leaves a
restored etcd: the objects stay, every resourceVersion a client holds becomes 410, open
watches are cut; with restamp=True every object also gets a new resourceVersion).
"""
import bisect
import collections
import threading

from .util import deepcopy

RESTART_BUMP = 1000000


class Event:
    __slots__ = ("rv", "gr", "type", "key", "ns", "obj", "prev", "encoded")

    def __init__(self, rv, gr, etype, key, ns, obj, prev):
        self.rv = rv
        self.gr = gr
        self.type = etype      # ADDED, MODIFIED, DELETED
        self.key = key
        self.ns = ns
        self.obj = obj         # the object after the change (for DELETED: its last state, at rv)
        self.prev = prev       # the object before the change, or None
        self.encoded = {}      # (version, type) -> the watch event's JSON line, shared by watchers


class Watcher:
    def __init__(self, store, gr, namespace, match, bookmarks):
        self.gr = gr
        self.namespace = namespace
        self.match = match     # obj -> bool (label and field selectors)
        self.bookmarks = bookmarks
        self.queue = collections.deque()
        self.cond = threading.Condition(store.lock)
        self.closed = None     # None, "drop" (cut the connection) or "end" (end the stream)


def obj_key(obj):
    meta = obj["metadata"]
    ns = meta.get("namespace") or ""
    return (ns + "/" + meta["name"]) if ns else meta["name"]


class Store:
    def __init__(self, start_rv=1):
        self.lock = threading.RLock()
        self.rv = start_rv
        self.compacted = 0
        self.hist = {}          # gr -> {key: [(rv, obj or None)]}
        self.keys = {}          # gr -> sorted list of keys with a history
        self.events = []        # Events with rv > compacted, in order
        self.watchers = {}      # gr -> set of Watchers

    # ------------------------------------------------------------ reads
    def get(self, gr, key):
        with self.lock:
            versions = self.hist.get(gr, {}).get(key)
            return versions[-1][1] if versions else None

    def _at(self, versions, rv):
        if versions[-1][0] <= rv:
            return versions[-1][1]
        i = bisect.bisect_right([v[0] for v in versions], rv)
        return versions[i - 1][1] if i > 0 else None

    def items(self, gr, rv=None, start=None, namespace=None):
        """(key, obj) pairs existing at rv (now when None), in key order, from key start on."""
        with self.lock:
            if rv is None:
                rv = self.rv
            hist = self.hist.get(gr, {})
            keys = self.keys.get(gr, [])
            i = bisect.bisect_left(keys, start) if start else 0
            if namespace:
                i = max(i, bisect.bisect_left(keys, namespace + "/"))
            out = []
            for key in keys[i:]:
                if namespace and not key.startswith(namespace + "/"):
                    break
                obj = self._at(hist[key], rv)
                if obj is not None:
                    out.append((key, obj))
            return out

    def all_groups(self):
        with self.lock:
            return list(self.hist)

    # ------------------------------------------------------------ writes
    def _record(self, gr, key, obj, etype, prev):
        self.rv += 1
        rv = self.rv
        obj = dict(obj)
        obj["metadata"] = dict(obj["metadata"])
        obj["metadata"]["resourceVersion"] = str(rv)
        hist = self.hist.setdefault(gr, {})
        if key not in hist:
            hist[key] = []
            bisect.insort(self.keys.setdefault(gr, []), key)
        hist[key].append((rv, None if etype == "DELETED" else obj))
        ns = obj["metadata"].get("namespace") or ""
        ev = Event(rv, gr, etype, key, ns, obj, prev)
        self.events.append(ev)
        for w in self.watchers.get(gr, ()):
            w.queue.append(ev)
            w.cond.notify()
        return obj

    def put(self, gr, obj):
        """Creates or replaces obj; returns the stored object (with its new resourceVersion)."""
        with self.lock:
            key = obj_key(obj)
            prev = self.get(gr, key)
            return self._record(gr, key, obj, "MODIFIED" if prev is not None else "ADDED", prev)

    def remove(self, gr, key):
        """Deletes the object at key; returns its last state stamped with the deletion's rv."""
        with self.lock:
            prev = self.get(gr, key)
            if prev is None:
                return None
            return self._record(gr, key, prev, "DELETED", prev)

    # ------------------------------------------------------------ watches
    def add_watcher(self, w, from_rv):
        """Registers w. from_rv None: returns the current objects (for synthetic ADDED
        events). Otherwise queues the events after from_rv, or returns False when from_rv
        is older than the compaction point (the caller answers 410)."""
        with self.lock:
            initial = []
            if from_rv is None:
                initial = [obj for _, obj in self.items(w.gr, namespace=w.namespace)]
            else:
                if from_rv < self.compacted:
                    return False
                i = bisect.bisect_right([e.rv for e in self.events], from_rv)
                for e in self.events[i:]:
                    if e.gr == w.gr:
                        w.queue.append(e)
            self.watchers.setdefault(w.gr, set()).add(w)
            return initial

    def remove_watcher(self, w):
        with self.lock:
            self.watchers.get(w.gr, set()).discard(w)

    def watcher_counts(self):
        with self.lock:
            return {"%s/%s" % gr if gr[0] else gr[1]: len(ws) for gr, ws in self.watchers.items() if ws}

    def close_watchers(self, how, gr=None):
        with self.lock:
            n = 0
            for g, ws in self.watchers.items():
                if gr is not None and g != gr:
                    continue
                for w in ws:
                    if w.closed is None:
                        w.closed = how
                        n += 1
                    w.cond.notify()
            return n

    # ------------------------------------------------------------ test controls
    def compact(self, rv=None):
        with self.lock:
            self.compacted = self.rv if rv is None else min(rv, self.rv)
            c = self.compacted
            self.events = [e for e in self.events if e.rv > c]
            for gr, hist in self.hist.items():
                for key in list(hist):
                    versions = hist[key]
                    i = bisect.bisect_right([v[0] for v in versions], c)
                    kept = versions[i:]
                    if i > 0 and versions[i - 1][1] is not None:
                        kept.insert(0, versions[i - 1])
                    if kept:
                        hist[key] = kept
                    else:
                        del hist[key]
                        keys = self.keys[gr]
                        keys.pop(bisect.bisect_left(keys, key))
            return c

    def drop_watches(self):
        return self.close_watchers("drop")

    def restart(self, restamp=False):
        with self.lock:
            self.rv += RESTART_BUMP
            if restamp:
                for gr, hist in self.hist.items():
                    for key in self.keys.get(gr, []):
                        cur = hist[key][-1][1]
                        if cur is not None:
                            self.rv += 1
                            obj = deepcopy(cur)
                            obj["metadata"]["resourceVersion"] = str(self.rv)
                            hist[key].append((self.rv, obj))
            self.compact()
            self.drop_watches()
            return self.rv
