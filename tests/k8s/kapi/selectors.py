"""selectors — label selectors (labels.Parse syntax) and field selectors.

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>n`,
`k<n`, joined by commas (all must hold). Field selectors: `f=v`, `f==v`, `f!=v` joined by
commas, on the fields a resource type allows (metadata.name and metadata.namespace for
every kind, a few more for some built-in kinds). A malformed selector is a 400.
"""
from .util import bad_request, check_qualified_name, check_label_value


class LabelSelector:
    def __init__(self, reqs):
        self.reqs = reqs  # list of (key, op, values)

    def empty(self):
        return not self.reqs

    def matches(self, labels):
        labels = labels or {}
        for key, op, values in self.reqs:
            has = key in labels
            v = labels.get(key)
            if op == "exists" and not has:
                return False
            if op == "!" and has:
                return False
            if op in ("=", "==", "in") and (not has or v not in values):
                return False
            if op in ("!=", "notin") and has and v in values:
                return False
            if op in (">", "<"):
                if not has:
                    return False
                try:
                    n = int(v)
                except ValueError:
                    return False
                if (op == ">" and not n > values[0]) or (op == "<" and not n < values[0]):
                    return False
        return True


def _lex(s):
    toks, i = [], 0
    specials = "(),!=<>"
    while i < len(s):
        c = s[i]
        if c in " \t":
            i += 1
        elif c in specials:
            if s.startswith("==", i) or s.startswith("!=", i):
                toks.append(s[i:i + 2])
                i += 2
            else:
                toks.append(c)
                i += 1
        else:
            j = i
            while j < len(s) and s[j] not in specials and s[j] not in " \t":
                j += 1
            toks.append(s[i:j])
            i = j
    return toks


def parse_label_selector(s):
    if s is None or s.strip() == "":
        return LabelSelector([])
    toks = _lex(s)
    reqs, i = [], 0

    def err(msg):
        return bad_request("unable to parse requirement: " + msg)

    def word(k):
        return k is not None and k not in ("(", ")", ",", "!", "=", "==", "!=", "<", ">")

    def check_key(k):
        e = check_qualified_name(k)
        if e:
            raise err('key: Invalid value: "%s": %s' % (k, e))

    def check_val(v):
        e = check_label_value(v)
        if e:
            raise err('values[0][%s]: Invalid value: "%s": %s' % ("", v, e))

    while i < len(toks):
        t = toks[i]
        if t == "!":
            i += 1
            key = toks[i] if i < len(toks) else None
            if not word(key):
                raise err("found '%s', expected: identifier" % (key or "EOS"))
            check_key(key)
            reqs.append((key, "!", []))
            i += 1
        elif word(t):
            key = t
            check_key(key)
            i += 1
            op = toks[i] if i < len(toks) else None
            if op is None or op == ",":
                reqs.append((key, "exists", []))
            elif op in ("=", "==", "!="):
                i += 1
                val = toks[i] if i < len(toks) and word(toks[i]) else ""
                if val:
                    i += 1
                check_val(val)
                reqs.append((key, op, [val]))
            elif op in (">", "<"):
                i += 1
                val = toks[i] if i < len(toks) else ""
                try:
                    n = int(val)
                except ValueError:
                    raise err("for 'Gt', 'Lt' operators, the value must be an integer")
                i += 1
                reqs.append((key, op, [n]))
            elif op in ("in", "notin"):
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    raise err("found '%s', expected: '('" % (toks[i] if i < len(toks) else "EOS"))
                i += 1
                vals = []
                while i < len(toks) and toks[i] != ")":
                    if toks[i] == ",":
                        i += 1
                        continue
                    if not word(toks[i]):
                        raise err("found '%s', expected: ',', ')' or identifier" % toks[i])
                    check_val(toks[i])
                    vals.append(toks[i])
                    i += 1
                if i >= len(toks):
                    raise err("found 'EOS', expected: ')'")
                i += 1
                reqs.append((key, op, vals))
            else:
                raise err("found '%s', expected: in, notin, =, ==, !=, gt, lt" % op)
        else:
            raise err("found '%s', expected: !, identifier, or 'end of string'" % t)
        if i < len(toks):
            if toks[i] != ",":
                raise err("found '%s', expected: ',' or 'end of string'" % toks[i])
            i += 1
            if i >= len(toks):
                raise err("found 'EOS', expected: identifier")
    return LabelSelector(reqs)


def selector_from_label_selector_object(sel):
    """A metav1.LabelSelector object (matchLabels, matchExpressions) as a LabelSelector."""
    reqs = []
    for k, v in (sel.get("matchLabels") or {}).items():
        reqs.append((k, "=", [v]))
    for e in sel.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(e.get("operator"))
        if op:
            reqs.append((e.get("key"), op, list(e.get("values") or [])))
    return LabelSelector(reqs)


class FieldSelector:
    def __init__(self, reqs):
        self.reqs = reqs  # list of (field, op, value)

    def empty(self):
        return not self.reqs

    def fields(self):
        return [f for f, _, _ in self.reqs]

    def matches(self, obj, getter):
        for f, op, v in self.reqs:
            actual = getter(obj, f)
            if op in ("=", "==") and actual != v:
                return False
            if op == "!=" and actual == v:
                return False
        return True


def _split_unescaped(s, sep):
    parts, cur, i = [], "", 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            cur += s[i:i + 2]
            i += 2
        elif s[i] == sep:
            parts.append(cur)
            cur = ""
            i += 1
        else:
            cur += s[i]
            i += 1
    parts.append(cur)
    return parts


def _unescape(s):
    out, i = "", 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            if s[i + 1] not in "\\,=!":
                raise bad_request("invalid field selector: invalid escape sequence: \\" + s[i + 1])
            out += s[i + 1]
            i += 2
        else:
            out += s[i]
            i += 1
    return out


def parse_field_selector(s, allowed):
    if s is None or s.strip() == "":
        return FieldSelector([])
    reqs = []
    for part in _split_unescaped(s, ","):
        if part == "":
            continue
        for op in ("!=", "==", "="):
            idx = _find_unescaped(part, op)
            if idx >= 0:
                field = part[:idx].strip()
                value = _unescape(part[idx + len(op):])
                break
        else:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
        if field not in allowed:
            raise bad_request("field label not supported: " + field)
        reqs.append((field, op, value))
    return FieldSelector(reqs)


def _find_unescaped(s, op):
    i = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s.startswith(op, i):
            if op == "=" and i > 0 and s[i - 1] in "!=":
                i += 1
                continue
            if op == "=" and s.startswith("==", i):
                return -1
            return i
        i += 1
    return -1
