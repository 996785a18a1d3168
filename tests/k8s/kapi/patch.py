"""patch — the three patch formats of PATCH requests.

merge_patch      RFC 7386 JSON merge patch (application/merge-patch+json)
strategic_merge  strategic merge patch (application/strategic-merge-patch+json), for the
                 built-in kinds only, with the patch directives kubectl's three-way patches
                 use ($patch, $retainKeys, $setElementOrder/, $deleteFromPrimitiveList/);
                 lists merge by key where the Go type says so (merge_keys), else are replaced
json_patch       RFC 6902 JSON patch (application/json-patch+json)
apply_merge      the merge of a server-side apply (application/apply-patch+yaml), simplified:
                 the applied configuration is merged into the live object (maps by key,
                 list-map lists by their keys, other lists replaced); fields a manager stops
                 applying are not removed and field ownership conflicts are not detected
"""
from .util import bad_request, deepcopy, ApiError


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# ---------------------------------------------------------------- strategic merge patch

def strategic_merge(orig, patch, merge_keys, path=()):
    """merge_keys(path) -> ("merge", key) for lists of maps merged on key, ("merge", None) for
    primitive lists merged as sets, or None for lists that are replaced."""
    if not isinstance(patch, dict):
        return deepcopy(patch)
    if not isinstance(orig, dict):
        orig = {}
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise bad_request("Unknown patch type: %s in map: %s" % (directive, patch))
    out = dict(orig)
    retain = patch.get("$retainKeys")
    orders = {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k[len("$setElementOrder/"):]] = v
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k[len("$deleteFromPrimitiveList/"):]
            if isinstance(out.get(field), list):
                out[field] = [x for x in out[field] if x not in (v or [])]
            continue
        if v is None:
            out.pop(k, None)
            continue
        sub = path + (k,)
        if isinstance(v, dict):
            merged = strategic_merge(out.get(k), v, merge_keys, sub)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            out[k] = _merge_list(out.get(k), v, merge_keys(sub), merge_keys, sub)
        else:
            out[k] = v
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            out[field] = _apply_order(out[field], order, merge_keys(path + (field,)))
    if retain is not None:
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(orig, patch, strategy, merge_keys, path):
    if strategy is None:
        return [deepcopy(x) for x in patch if not (isinstance(x, dict) and x.get("$patch"))]
    orig = list(orig) if isinstance(orig, list) else []
    _, key = strategy
    if key is None:  # a set of primitives
        for x in patch:
            if isinstance(x, dict) and x.get("$patch") == "replace":
                return [y for y in patch if not isinstance(y, dict)]
            if x not in orig:
                orig.append(x)
        return orig
    for x in patch:
        if isinstance(x, dict) and x.get("$patch") == "replace":
            return [deepcopy(y) for y in patch if not (isinstance(y, dict) and "$patch" in y)]
    for x in patch:
        if not isinstance(x, dict):
            raise bad_request("merging an object in json but data type is not map[string]interface{}")
        if key not in x:
            raise bad_request("map: %s does not contain declared merge key: %s" % (x, key))
        idx = next((i for i, y in enumerate(orig) if isinstance(y, dict) and y.get(key) == x[key]), -1)
        if x.get("$patch") == "delete":
            if idx >= 0:
                orig.pop(idx)
            continue
        if idx >= 0:
            orig[idx] = strategic_merge(orig[idx], x, merge_keys, path)
        else:
            orig.append(strategic_merge({}, x, merge_keys, path))
    return orig


def _apply_order(items, order, strategy):
    if not strategy or not isinstance(order, list):
        return items
    key = strategy[1]

    def ident(x):
        return x.get(key) if key is not None and isinstance(x, dict) else (x if key is None else None)

    wanted = [o.get(key) if key is not None and isinstance(o, dict) else o for o in order]
    ordered = []
    for w in wanted:
        ordered += [x for x in items if ident(x) == w]
    return ordered + [x for x in items if ident(x) not in wanted]


# ---------------------------------------------------------------- JSON patch

def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request('the server rejected our request due to an error in our request: '
                          'json patch path must start with "/": ' + path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts, missing, bad_index, scalar):
    """The value at parts in doc; where there is none, the error names the part after the
    reason: a key missing, an index that is not one, or a step into a scalar."""
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise _jp_error(missing + p)
            cur = cur[p]
        elif isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError):
                raise _jp_error(bad_index + p)
        else:
            raise _jp_error(scalar + p)
    return cur


def _parent(doc, parts, create=False):
    return _walk(doc, parts[:-1], "missing path: ", "invalid index: ", "path through a scalar: ")


def _jp_error(msg):
    return ApiError(422, "Invalid", "the server rejected our request due to an error in our request: " + msg)


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise bad_request("Unexpected kind: missing op")
        kind = op["op"]
        parts = _pointer(op.get("path", ""))
        if kind in ("add", "replace", "test"):
            if "value" not in op:
                raise _jp_error("missing value for " + kind)
        if kind == "test":
            if _get(doc, parts) != op["value"]:
                raise _jp_error("testing value %s failed" % op.get("path"))
            continue
        if kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = deepcopy(_get(doc, src))
            if kind == "move":
                doc = _remove(doc, src)
            doc = _add(doc, parts, value)
            continue
        if kind == "add":
            doc = _add(doc, parts, deepcopy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, parts)
        elif kind == "replace":
            _get(doc, parts)
            doc = _remove(doc, parts)
            doc = _add(doc, parts, deepcopy(op["value"]))
        else:
            raise bad_request("Unexpected kind: " + str(kind))
    return doc


def _get(doc, parts):
    nonexistent = "unable to get nonexistent key: "
    return _walk(doc, parts, nonexistent, nonexistent, nonexistent)


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError:
                raise _jp_error("invalid index: " + last)
            if i < 0 or i > len(parent):
                raise _jp_error("index out of range: " + last)
            parent.insert(i, value)
    else:
        raise _jp_error("cannot add to a scalar")
    return doc


def _remove(doc, parts):
    if not parts:
        return None
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _jp_error("unable to remove nonexistent key: %s: missing value" % last)
        del parent[last]
    elif isinstance(parent, list):
        try:
            parent.pop(int(last))
        except (ValueError, IndexError):
            raise _jp_error("unable to remove nonexistent index: " + last)
    return doc


# ---------------------------------------------------------------- server-side apply (simplified)

def apply_merge(live, applied, map_keys, path=()):
    """map_keys(path) -> list of key names for list-map lists, or None."""
    if not isinstance(applied, dict) or not isinstance(live, dict):
        return deepcopy(applied)
    out = dict(live)
    for k, v in applied.items():
        sub = path + (k,)
        if isinstance(v, dict):
            out[k] = apply_merge(out.get(k), v, map_keys, sub)
        elif isinstance(v, list) and map_keys(sub) and isinstance(out.get(k), list):
            keys = map_keys(sub)
            merged = [deepcopy(x) for x in out[k]]
            for item in v:
                ident = tuple(item.get(n) for n in keys) if isinstance(item, dict) else None
                idx = next((i for i, y in enumerate(merged)
                            if isinstance(y, dict) and tuple(y.get(n) for n in keys) == ident), -1)
                if idx >= 0:
                    merged[idx] = apply_merge(merged[idx], item, map_keys, sub)
                else:
                    merged.append(deepcopy(item))
            out[k] = merged
        else:
            out[k] = deepcopy(v)
    return out
