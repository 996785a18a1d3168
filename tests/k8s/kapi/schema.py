"""schema — what a kube-apiserver does with a CRD's structural schema (openAPIV3Schema).

prune     drops fields the schema does not know (unless x-kubernetes-preserve-unknown-fields)
          and nulls of fields that are not nullable; returns the dropped paths, which
          fieldValidation=Strict turns into a 400 and Warn into Warning headers
default   fills `default` values where a field is absent, recursively
validate  type, required, enum, minimum/maximum, min/maxLength, min/maxItems, pattern,
          format date-time, x-kubernetes-list-type map/set uniqueness: FieldErrors worded
          as kube-openapi words them. CEL rules (x-kubernetes-validations) are not evaluated.
"""
import re

from .util import FieldError, RFC3339, deepcopy

# ObjectMeta's fields: anything else under metadata is pruned, as a typed decode would.
OBJECT_META_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
}


def _join(path, key):
    return key if not path else path + "." + key


def prune(obj, schema, path="", root=True):
    """Prunes obj in place; returns the list of dropped field paths."""
    dropped = []
    if not isinstance(schema, dict):
        return dropped
    if isinstance(obj, dict):
        if root:
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                for k in list(meta):
                    if k not in OBJECT_META_FIELDS:
                        dropped.append("metadata." + k)
                        del meta[k]
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        for k in list(obj):
            if root and k in ("apiVersion", "kind", "metadata"):
                continue
            v = obj[k]
            sub = None
            if props is not None and k in props:
                sub = props[k]
            elif isinstance(addl, dict):
                sub = addl
            elif addl is True or preserve:
                continue
            else:
                dropped.append(_join(path, k))
                del obj[k]
                continue
            if v is None and not sub.get("nullable") and sub.get("default") is None:
                del obj[k]
                continue
            dropped += prune(v, sub, _join(path, k), False)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(obj):
                dropped += prune(v, items, "%s[%d]" % (path, i), False)
    return dropped


def default(obj, schema):
    """Applies defaults in place (absent fields, and nulls of non-nullable fields)."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for k, sub in props.items():
            if "default" in sub and (k not in obj or (obj[k] is None and not sub.get("nullable"))):
                obj[k] = deepcopy(sub["default"])
        for k, v in obj.items():
            if k in props:
                default(v, props[k])
            elif isinstance(schema.get("additionalProperties"), dict):
                default(v, schema["additionalProperties"])
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for v in obj:
            default(v, schema["items"])


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _is_type(v, t):
    if t == "integer":
        return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    return True


_PATTERNS = {}


def _pattern(p):
    r = _PATTERNS.get(p)
    if r is None:
        r = _PATTERNS[p] = re.compile(p)
    return r


def validate(obj, schema, path="", root=True):
    errs = []
    if not isinstance(schema, dict):
        return errs
    body = path or "body"
    if obj is None:
        if schema.get("nullable"):
            return errs
    if schema.get("x-kubernetes-int-or-string"):
        if not (_is_type(obj, "integer") or isinstance(obj, str)):
            errs.append(FieldError("Invalid", path, _type_name(obj),
                                   '%s in body must be of type integer,string: "%s"' % (body, _type_name(obj))))
        return errs
    t = schema.get("type")
    if t and not _is_type(obj, t):
        errs.append(FieldError("Invalid", path, _type_name(obj),
                               '%s in body must be of type %s: "%s"' % (body, t, _type_name(obj))))
        return errs
    if "enum" in schema and obj not in schema["enum"]:
        errs.append(FieldError("Unsupported", path, obj, "supported values: " +
                               ", ".join('"%s"' % e if isinstance(e, str) else str(e) for e in schema["enum"])))
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        if "maximum" in schema and obj > schema["maximum"]:
            errs.append(FieldError("Invalid", path, obj, "%s in body should be less than or equal to %s"
                                   % (body, schema["maximum"])))
        if "minimum" in schema and obj < schema["minimum"]:
            errs.append(FieldError("Invalid", path, obj, "%s in body should be greater than or equal to %s"
                                   % (body, schema["minimum"])))
        if schema.get("format") == "int32" and not -2**31 <= obj < 2**31:
            errs.append(FieldError("Invalid", path, obj, "%s in body must be of type int32" % body))
    if isinstance(obj, str):
        if "maxLength" in schema and len(obj) > schema["maxLength"]:
            errs.append(FieldError("TooLong", path, obj, "may not be more than %d bytes" % schema["maxLength"]))
        if "minLength" in schema and len(obj) < schema["minLength"]:
            errs.append(FieldError("Invalid", path, obj, "%s in body should be at least %d chars long"
                                   % (body, schema["minLength"])))
        if "pattern" in schema and not _pattern(schema["pattern"]).search(obj):
            errs.append(FieldError("Invalid", path, obj, "%s in body should match '%s'" % (body, schema["pattern"])))
        if schema.get("format") == "date-time" and not RFC3339.match(obj):
            errs.append(FieldError("Invalid", path, obj, '%s in body must be of type date-time: "%s"' % (body, obj)))
    if isinstance(obj, list):
        if "maxItems" in schema and len(obj) > schema["maxItems"]:
            errs.append(FieldError("TooMany", path, len(obj), "must have at most %d items" % schema["maxItems"]))
        if "minItems" in schema and len(obj) < schema["minItems"]:
            errs.append(FieldError("Invalid", path, len(obj), "%s in body should have at least %d items"
                                   % (body, schema["minItems"])))
        lt = schema.get("x-kubernetes-list-type")
        if lt == "set":
            seen = []
            for i, v in enumerate(obj):
                if v in seen:
                    errs.append(FieldError("Duplicate", "%s[%d]" % (path, i), v))
                seen.append(v)
        elif lt == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen = []
            for i, v in enumerate(obj):
                if isinstance(v, dict):
                    ident = tuple(v.get(k) for k in keys)
                    if ident in seen:
                        errs.append(FieldError("Duplicate", "%s[%d]" % (path, i),
                                               {k: v.get(k) for k in keys}))
                    seen.append(ident)
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(obj):
                errs += validate(v, items, "%s[%d]" % (path, i), False)
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for r in schema.get("required") or []:
            if r not in obj:
                errs.append(FieldError("Required", _join(path, r)))
        for k, v in obj.items():
            if root and k in ("apiVersion", "kind", "metadata"):
                continue
            if k in props:
                errs += validate(v, props[k], _join(path, k), False)
            elif isinstance(schema.get("additionalProperties"), dict):
                errs += validate(v, schema["additionalProperties"], _join(path, k), False)
        if "maxProperties" in schema and len(obj) > schema["maxProperties"]:
            errs.append(FieldError("TooMany", path, len(obj), "must have at most %d items" % schema["maxProperties"]))
    return errs


def schema_at(schema, path):
    """The sub-schema at a field path (list items are passed through transparently)."""
    cur = schema
    for p in path:
        if not isinstance(cur, dict):
            return None
        while cur.get("type") == "array" and isinstance(cur.get("items"), dict):
            cur = cur["items"]
        props = cur.get("properties") or {}
        if p in props:
            cur = props[p]
        elif isinstance(cur.get("additionalProperties"), dict):
            cur = cur["additionalProperties"]
        else:
            return None
    return cur


def list_map_keys(schema, path):
    s = schema_at(schema, path)
    if isinstance(s, dict) and s.get("x-kubernetes-list-type") == "map":
        return s.get("x-kubernetes-list-map-keys")
    return None


def check_structural(schema, path="openAPIV3Schema"):
    """The few structural-schema rules a CRD must meet; returns FieldErrors."""
    errs = []
    if not isinstance(schema, dict):
        return [FieldError("Required", path, None, "schemas are required")]
    t = schema.get("type")
    if not t and not schema.get("x-kubernetes-int-or-string") and \
            not schema.get("x-kubernetes-preserve-unknown-fields") and path != "openAPIV3Schema":
        errs.append(FieldError("Required", path + ".type", None, "must not be empty for specified object fields"))
    if path == "openAPIV3Schema" and t not in (None, "object"):
        errs.append(FieldError("Invalid", path + ".type", t, 'must be object at the root'))
    for k, v in (schema.get("properties") or {}).items():
        errs += check_structural(v, "%s.properties[%s]" % (path, k))
    if isinstance(schema.get("items"), dict):
        errs += check_structural(schema["items"], path + ".items")
    elif t == "array":
        errs.append(FieldError("Required", path + ".items", None, "must be specified"))
    if isinstance(schema.get("additionalProperties"), dict):
        errs += check_structural(schema["additionalProperties"], path + ".additionalProperties")
    for p in [schema.get("pattern")] if schema.get("pattern") else []:
        try:
            re.compile(p)
        except re.error as e:
            errs.append(FieldError("Invalid", path + ".pattern", p, "must be a valid regular expression, "
                                   "but isn't: " + str(e)))
    return errs
