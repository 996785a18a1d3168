"""openapi — discovery documents and the OpenAPI documents clients read.

Discovery: /api (APIVersions), /apis (APIGroupList), /apis/<group> (APIGroup),
/api/v1 and /apis/<group>/<version> (APIResourceList, with the /status subresources).
Aggregated discovery is not offered: clients that ask for it get the legacy documents
with Content-Type application/json, which they accept.

OpenAPI: kubectl reads /openapi/v3 (kubectl >= 1.27) or /openapi/v2 (protobuf, every
kubectl) to learn whether a kind's PATCH takes the fieldValidation parameter (then it
leaves validation to the server) and which patch types it accepts. The documents here
list one PATCH operation per kind with its x-kubernetes-group-version-kind, the
fieldValidation parameter and the patch content types (no strategic merge patch for
custom resources, as a real server), and for custom resources their schemas (so
`kubectl explain` works). Built-in kinds have no schema here: kubectl then computes
strategic merge patches from its compiled-in types, as it does against a real server.
"""
import hashlib
import json

from .resources import version_priority

VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0", "gitCommit": "sextant-test-apiserver",
           "gitTreeState": "clean", "buildDate": "2024-04-17T00:00:00Z", "goVersion": "go1.22.2",
           "compiler": "gc", "platform": "linux/amd64"}


def api_versions(host):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}


def _group(name, versions):
    vs = [{"groupVersion": "%s/%s" % (name, v), "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(registry):
    groups = registry.groups()
    order = [g for g in registry.builtin_groups if g in groups and g] + \
        sorted(g for g in groups if g and g not in registry.builtin_groups)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, groups[g]) for g in order]}


def api_group(registry, name):
    groups = registry.groups()
    if not name or name not in groups:
        return None
    d = _group(name, groups[name])
    d.update({"kind": "APIGroup", "apiVersion": "v1"})
    return d


def _hash(s):
    return __import__("base64").b64encode(hashlib.sha256(s.encode()).digest()[:8]).decode()


def resource_list(registry, group, version):
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources = []
    for rt in types:
        r = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
             "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
             "storageVersionHash": _hash("%s/%s/%s" % (group, rt.storage_version, rt.kind))}
        if rt.short_names:
            r["shortNames"] = list(rt.short_names)
        if rt.categories:
            r["categories"] = list(rt.categories)
        resources.append(r)
        has_status = rt.has_status(version) if hasattr(rt, "has_status") else rt.status
        if has_status:
            resources.append({"name": rt.plural + "/status", "singularName": "", "namespaced": rt.namespaced,
                              "kind": rt.kind, "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": version if not group else "%s/%s" % (group, version), "resources": resources}


def gv_path(group, version):
    return "api/v1" if not group else "apis/%s/%s" % (group, version)


def item_path(rt, version):
    base = "/" + gv_path(rt.group, version)
    if rt.namespaced:
        return "%s/namespaces/{namespace}/%s/{name}" % (base, rt.plural)
    return "%s/%s/{name}" % (base, rt.plural)


def patch_types(rt):
    t = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
    return t


def _gvk(rt, version):
    return {"group": rt.group, "version": version, "kind": rt.kind}


def _schema_name(rt, version):
    g = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return "%s.%s.%s" % (g, version, rt.kind)


# ---------------------------------------------------------------- OpenAPI v3

def v3_gv_doc(registry, group, version):
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths, schemas_ = {}, {"io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {"type": "object"}}
    for rt in types:
        content = {t: {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}
                   for t in patch_types(rt)}
        params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                  for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
        paths[item_path(rt, version)] = {
            "patch": {"operationId": "patch" + rt.kind, "parameters": params,
                      "requestBody": {"content": content, "required": True},
                      "responses": {"200": {"description": "OK"}},
                      "x-kubernetes-action": "patch",
                      "x-kubernetes-group-version-kind": _gvk(rt, version)}}
        sch = rt.schemas.get(version)
        if sch:
            s = dict(sch)
            s["x-kubernetes-group-version-kind"] = [_gvk(rt, version)]
            schemas_[_schema_name(rt, version)] = s
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas_}}


def v3_index(registry):
    out = {}
    for group, versions in registry.groups().items():
        for v in versions:
            doc = v3_gv_doc(registry, group, v)
            h = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()
            p = gv_path(group, v)
            out[p] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (p, h)}
    return {"paths": out}


# ---------------------------------------------------------------- OpenAPI v2 (protobuf)
# Field numbers of gnostic's openapi_v2.Document (openapiv2/OpenAPIv2.proto).

def _varint(n):
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint((num << 3) | 2) + _varint(len(payload)) + payload


def _gvk_yaml(rt, version):
    return "group: %s\nkind: %s\nversion: %s\n" % (json.dumps(rt.group), rt.kind, version)


def _types_and_versions(registry):
    for group, versions in registry.groups().items():
        for v in versions:
            for rt in registry.in_group_version(group, v):
                yield rt, v


def v2_protobuf(registry):
    paths = b""
    for rt, v in _types_and_versions(registry):
        query = _field(2, "query") + _field(4, "fieldValidation") + _field(6, "string")   # QueryParameterSubSchema
        nonbody = _field(3, query)                  # NonBodyParameter.query_parameter_sub_schema
        param = _field(2, nonbody)                  # Parameter.non_body_parameter
        item = _field(1, param)                     # ParametersItem.parameter
        ext = _field(1, "x-kubernetes-group-version-kind") + _field(2, _field(2, _gvk_yaml(rt, v)))
        op = _field(5, "patch" + rt.kind) + _field(8, item) + _field(13, ext)
        path_item = _field(8, op)                   # PathItem.patch
        paths += _field(2, _field(1, item_path(rt, v)) + _field(2, path_item))   # Paths.path (NamedPathItem)
    info = _field(1, "Kubernetes") + _field(2, VERSION["gitVersion"])
    return _field(1, "2.0") + _field(2, info) + _field(8, paths)


def v2_json(registry):
    paths = {}
    for rt, v in _types_and_versions(registry):
        paths[item_path(rt, v)] = {"patch": {
            "operationId": "patch" + rt.kind, "consumes": patch_types(rt),
            "parameters": [{"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": True}],
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": _gvk(rt, v)}}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": paths, "definitions": {}}


_ = version_priority
