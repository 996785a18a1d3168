"""util — errors as Kubernetes Status objects, time stamps and name rules.

Every failure a handler raises is an ApiError; the server turns it into the Status
object a real kube-apiserver answers with (kind Status, status Failure, reason, code,
details), which is what clients branch on.
"""
import datetime
import re
import time


class ApiError(Exception):
    """A request that fails with a Kubernetes Status (code, reason, message, details)."""

    def __init__(self, code, reason, message, details=None, headers=None, list_meta=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.list_meta = list_meta

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.list_meta or {}),
              "status": "Failure", "message": self.message, "reason": self.reason,
              "code": self.code}
        if self.details is not None:
            st["details"] = self.details
        return st


def success_status(code, details):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


def qualified(rt):
    """The resource name as Kubernetes messages spell it: plural.group, or plural for core."""
    return rt.plural + ("." + rt.group if rt.group else "")


def _details(rt, name, causes=None, kind=None):
    d = {}
    if name:
        d["name"] = name
    if rt.group:
        d["group"] = rt.group
    d["kind"] = kind or rt.plural
    if causes:
        d["causes"] = causes
    return d


def not_found(rt, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified(rt), name),
                    _details(rt, name))


def not_found_resource():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(rt, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (qualified(rt), name),
                    _details(rt, name))


def conflict(rt, name, why="the object has been modified; please apply your changes "
             "to the latest version and try again"):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (qualified(rt), name, why), _details(rt, name))


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def method_not_allowed(method):
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})


def unsupported_media(accepted):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: " + ", ".join(accepted), {})


def expired(message, list_meta=None):
    return ApiError(410, "Expired", message, None, list_meta=list_meta)


def too_large_rv(rv, current):
    return ApiError(504, "Timeout", "Too large resource version: %d, current: %d" % (rv, current),
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


class FieldError:
    """One field's problem, as apimachinery's field.Error renders it."""

    def __init__(self, kind, field, value=None, detail=""):
        self.kind = kind      # Invalid, Required, Unsupported, Duplicate, TooLong, TooMany, Forbidden
        self.field = field
        self.value = value
        self.detail = detail

    def cause_reason(self):
        return {"Invalid": "FieldValueInvalid", "Required": "FieldValueRequired",
                "Unsupported": "FieldValueNotSupported", "Duplicate": "FieldValueDuplicate",
                "TooLong": "FieldValueTooLong", "TooMany": "FieldValueTooMany",
                "Forbidden": "FieldValueForbidden"}[self.kind]

    def body(self):
        if self.kind == "Required":
            return "Required value" + (": " + self.detail if self.detail else "")
        if self.kind == "Forbidden":
            return "Forbidden" + (": " + self.detail if self.detail else "")
        if self.kind == "Unsupported":
            return "Unsupported value: %s%s" % (go_value(self.value),
                                                ": " + self.detail if self.detail else "")
        if self.kind == "Duplicate":
            return "Duplicate value: %s" % go_value(self.value)
        if self.kind == "TooLong":
            return "Too long: " + self.detail
        if self.kind == "TooMany":
            return "Too many: %s: %s" % (go_value(self.value), self.detail)
        return "Invalid value: %s%s" % (go_value(self.value),
                                        ": " + self.detail if self.detail else "")

    def message(self):
        return "%s: %s" % (self.field, self.body()) if self.field else self.body()


def go_value(v):
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return '"' + type(v).__name__ + '"'
    return str(v)


def invalid(rt, name, errors):
    """422 Invalid for a list of FieldErrors, worded like a real API server."""
    msgs = [e.message() for e in errors]
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    kind = rt.kind + ("." + rt.group if rt.group else "")
    causes = [{"reason": e.cause_reason(), "message": e.body(), "field": e.field} for e in errors]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name or "", agg),
                    _details(rt, name, causes, kind=rt.kind))


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def parse_time(s):
    try:
        s2 = s.replace("z", "Z").replace("Z", "+00:00")
        if "." in s2:
            head, rest = s2.split(".", 1)
            frac = re.match(r"\d+", rest).group(0)
            s2 = head + "." + (frac + "000000")[:6] + rest[len(frac):]
        return datetime.datetime.fromisoformat(s2).timestamp()
    except (ValueError, AttributeError):
        return None


def human_duration(seconds):
    """apimachinery's duration.HumanDuration: the AGE column."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm%ds" % (m, s % 60) if s % 60 else "%dm" % m
    if m < 180:
        return "%dm" % m
    h = m // 60
    if h < 8:
        return "%dh%dm" % (h, m % 60) if m % 60 else "%dh" % h
    if h < 48:
        return "%dh" % h
    if h < 24 * 8:
        return "%dd%dh" % (h // 24, h % 24) if h % 24 else "%dd" % (h // 24)
    if h < 24 * 365 * 2:
        return "%dd" % (h // 24)
    if h < 24 * 365 * 8:
        return "%dy%dd" % (h // (24 * 365), (h // 24) % 365)
    return "%dy" % (h // (24 * 365))


def age(obj):
    t = parse_time(((obj.get("metadata") or {}).get("creationTimestamp")) or "")
    return "<unknown>" if t is None else human_duration(time.time() - t)


# ---------------------------------------------------------------- names (apimachinery validation)

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _check_name(v, max_len, pattern, message):
    """apimachinery's answer for v: too long, not matching pattern (message), or None."""
    if len(v) > max_len:
        return "must be no more than %d characters" % max_len
    if not pattern.match(v):
        return message
    return None


def check_dns1123_label(v):
    return _check_name(v, 63, DNS1123_LABEL,
                       "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                       "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                       "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def check_dns1123_subdomain(v):
    return _check_name(v, 253, DNS1123_SUBDOMAIN,
                       "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                       "characters, '-' or '.', and must start and end with an alphanumeric character "
                       "(e.g. 'example.com', regex used for validation is "
                       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def check_dns1035_label(v):
    return _check_name(v, 63, DNS1035_LABEL,
                       "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                       "start with an alphabetic character, and end with an alphanumeric character "
                       "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                       "'[a-z]([-a-z0-9]*[a-z0-9])?')")


def check_qualified_name(v):
    """A label or annotation key: [prefix/]name."""
    parts = v.split("/")
    if len(parts) > 2 or not v:
        return ("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')")
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            return "prefix part must be non-empty"
        err = check_dns1123_subdomain(parts[0])
        if err:
            return "prefix part " + err
    if not name:
        return "name part must be non-empty"
    err = _check_name(name, 63, QUALIFIED_NAME,
                      "must consist of alphanumeric characters, '-', '_' or '.', and must "
                      "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                      "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    return "name part " + err if err else None


def check_label_value(v):
    return _check_name(v, 63, LABEL_VALUE,
                       "a valid label must be an empty string or consist of alphanumeric characters, "
                       "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                       "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                       "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def deepcopy(o):
    """A copy of a JSON value (dicts, lists and scalars only)."""
    if isinstance(o, dict):
        return {k: deepcopy(v) for k, v in o.items()}
    if isinstance(o, list):
        return [deepcopy(v) for v in o]
    return o
