"""table — the meta.k8s.io Table and PartialObjectMetadata renderings clients may ask for
in the Accept header (kubectl get asks for Table: server-side printing).

A Table has the Name column, the kind's columns (a CRD's additionalPrinterColumns, or
Age when it has none; a few columns for the built-in kinds) and one row per object, whose
`object` is the PartialObjectMetadata (includeObject=Metadata, the default), the whole
object (Object) or nothing (None).
"""
from .util import bad_request

NAME_DESC = ("Name must be unique within a namespace. Is required when creating resources, although "
             "some resources may allow a client to request the generation of an appropriate name "
             "automatically. Name is primarily intended for creation idempotence and configuration "
             "definition. Cannot be updated.")


def negotiate(accept):
    """('json'|'table'|'meta', apiVersion) for an Accept header; None when nothing fits."""
    if not accept:
        return ("json", None)
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        params = {}
        for f in fields[1:]:
            if "=" in f:
                k, v = f.split("=", 1)
                params[k.strip()] = v.strip()
        if mt not in ("application/json", "*/*", "application/*"):
            continue
        as_ = params.get("as")
        if not as_:
            return ("json", None)
        if params.get("g") != "meta.k8s.io" or params.get("v") not in ("v1", "v1beta1"):
            continue
        if as_ == "Table":
            return ("table", "meta.k8s.io/" + params["v"])
        if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return ("meta", "meta.k8s.io/" + params["v"])
    return None


def columns(rt, version):
    cols = [{"name": "Name", "type": "string", "format": "name", "description": NAME_DESC, "priority": 0}]
    getters = [lambda o: (o.get("metadata") or {}).get("name")]
    for name, typ, fmt, desc, prio, getter in rt.table(version):
        cols.append({"name": name, "type": typ, "format": fmt,
                     "description": desc, "priority": prio})
        getters.append(getter)
    return cols, getters


def partial(obj, api_version):
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": obj.get("metadata") or {}}


def table(rt, version, objs, api_version, include, list_meta, with_columns=True):
    if include not in ("None", "Object", "Metadata"):
        raise bad_request('includeObject: Unsupported value: "%s"' % include)
    cols, getters = columns(rt, version)
    rows = []
    for o in objs:
        cells = []
        for g in getters:
            try:
                v = g(o)
            except (KeyError, TypeError, AttributeError, IndexError):
                v = None
            cells.append(v)
        row = {"cells": cells}
        if include == "Object":
            row["object"] = o
        elif include == "Metadata":
            row["object"] = partial(o, api_version)
        rows.append(row)
    t = {"kind": "Table", "apiVersion": api_version, "metadata": list_meta or {}, "rows": rows}
    if with_columns:
        t["columnDefinitions"] = cols
    return t
