"""api — the object lifecycle of a kube-apiserver: get, list, create, update, patch, delete,
the /status subresource, and what list and watch responses look like.

Semantics followed (Kubernetes API concepts and conventions):
- metadata.uid and creationTimestamp are set on create; resourceVersion on every write;
  metadata.generation starts at 1 and grows only when something other than metadata (and
  status, for kinds with a status subresource) changes;
- the main resource ignores status changes and /status ignores everything but status;
- PUT with a stale metadata.resourceVersion is 409 Conflict; custom resources need one;
- an update or patch that changes nothing writes nothing (no new resourceVersion, no event);
- a namespaced object needs its Namespace; deleting a Namespace deletes what is in it,
  deleting a CRD deletes its objects and stops serving its kind;
- objects with finalizers get a deletionTimestamp and stay until the finalizers are gone
  (removing the last one completes the deletion); no finalizer may be added meanwhile;
- lists are consistent snapshots: limit/continue pages are served at the resourceVersion
  of the first page; an expired continue token is 410 with an inconsistent-continue token;
- fieldValidation Strict/Warn/Ignore for unknown and duplicate fields (Warn by default).
"""
import base64
import json
import random
import threading
import time
import uuid

from . import patch as patches
from . import schema as schemas
from .selectors import parse_field_selector, parse_label_selector
from .store import obj_key
from .util import (ApiError, FieldError, already_exists, bad_request, check_dns1123_subdomain,
                   check_label_value, check_qualified_name, conflict, deepcopy, expired, invalid,
                   not_found, now_rfc3339, qualified, success_status, too_large_rv, unsupported_media)

MAX_ANNOTATIONS = 256 * 1024
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")


class Request:
    """One API request, already routed: rt/version/namespace/name/subresource."""

    def __init__(self, method, rt, version, namespace, name, subresource, query, body,
                 content_type, user_agent):
        self.method = method
        self.rt = rt
        self.version = version
        self.namespace = namespace
        self.name = name
        self.subresource = subresource
        self.query = query
        self.body = body
        self.content_type = content_type
        self.user_agent = user_agent or ""
        self.warnings = []
        self.pruned = []
        self.registry = None

    def q(self, name, default=None):
        return self.query.get(name, default)


class Api:
    def __init__(self, registry, store):
        self.registry = registry
        self.store = store

    # ------------------------------------------------------------ output
    def out(self, rt, version, obj):
        if obj is None:
            return None
        o = {"apiVersion": rt.api_version(version), "kind": rt.kind}
        o.update((k, v) for k, v in obj.items() if k not in ("apiVersion", "kind"))
        return o

    def list_item(self, rt, version, obj):
        o = self.out(rt, version, obj)
        if rt.builtin:
            o.pop("apiVersion", None)
            o.pop("kind", None)
        return o

    # ------------------------------------------------------------ decoding
    def decode(self, req, require_typemeta=True):
        dups = []

        def hook(pairs):
            d = {}
            for k, v in pairs:
                if k in d:
                    dups.append(k)
                d[k] = v
            return d
        try:
            obj = json.loads(req.body.decode("utf-8") if req.body else "", object_pairs_hook=hook)
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("couldn't get version/kind; json parse error: %s" % e)
        if not isinstance(obj, dict):
            raise bad_request("couldn't get version/kind; json parse error: json: cannot unmarshal %s "
                              "into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; "
                              "Kind string \"json:\\\"kind,omitempty\\\"\" }" % type(obj).__name__)
        for d in dups:
            self.field_problem(req, 'json: duplicate field "%s"' % d)
        rt = req.rt
        want_av = rt.api_version(req.version)
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if not rt.builtin and require_typemeta:
            if not kind:
                raise bad_request("Object 'Kind' is missing in '%s'" % json.dumps(obj, separators=(",", ":"))[:512])
            if not av:
                raise bad_request("Object 'apiVersion' is missing in '%s'" % json.dumps(obj, separators=(",", ":"))[:512])
        if av and av != want_av:
            raise bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                              % (av, want_av))
        if kind and kind != rt.kind:
            raise bad_request("the server could not find the requested resource: %s in version %s does not "
                              "match the kind in the data (%s)" % (rt.kind, want_av, kind))
        obj["apiVersion"] = want_av
        obj["kind"] = rt.kind
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise bad_request("json: cannot unmarshal %s into Go struct field .metadata of type v1.ObjectMeta"
                              % type(meta).__name__)
        return obj

    def field_validation(self, req):
        fv = req.q("fieldValidation", "Warn")
        if fv not in ("Strict", "Warn", "Ignore"):
            raise bad_request('fieldValidation parameter unsupported: "%s"' % fv)
        return fv

    def field_problem(self, req, msg):
        fv = self.field_validation(req)
        if fv == "Strict":
            raise bad_request("strict decoding error: " + msg)
        if fv == "Warn":
            req.warnings.append(msg)

    # ------------------------------------------------------------ checks shared by writes
    def check_meta(self, rt, obj, errs):
        meta = obj["metadata"]
        if rt.builtin is False or rt.plural in ("customresourcedefinitions",):
            e = check_dns1123_subdomain(meta["name"])
            if e:
                errs.append(FieldError("Invalid", "metadata.name", meta["name"], e))
        for field in ("labels", "annotations"):
            m = meta.get(field)
            if m is None:
                continue
            if not isinstance(m, dict):
                errs.append(FieldError("Invalid", "metadata." + field, m, "must be a map"))
                continue
            size = 0
            for k, v in m.items():
                e = check_qualified_name(k)
                if e:
                    errs.append(FieldError("Invalid", "metadata.%s" % field, k, e))
                if not isinstance(v, str):
                    errs.append(FieldError("Invalid", "metadata.%s.%s" % (field, k), v, "must be a string"))
                    continue
                if field == "labels":
                    e = check_label_value(v)
                    if e:
                        errs.append(FieldError("Invalid", "metadata.labels", v, e))
                size += len(k) + len(v)
            if field == "annotations" and size > MAX_ANNOTATIONS:
                errs.append(FieldError("TooLong", "metadata.annotations", "",
                                       "must have at most %d bytes" % MAX_ANNOTATIONS))
        for i, f in enumerate(meta.get("finalizers") or []):
            e = check_qualified_name(f) if isinstance(f, str) else "must be a string"
            if e:
                errs.append(FieldError("Invalid", "metadata.finalizers[%d]" % i, f, e))
        for i, ref in enumerate(meta.get("ownerReferences") or []):
            for f in ("apiVersion", "kind", "name", "uid"):
                if not isinstance(ref, dict) or not ref.get(f):
                    errs.append(FieldError("Invalid" if f != "uid" else "Invalid",
                                           "metadata.ownerReferences[%d].%s" % (i, f), "", f + " must not be empty"))

    def has_status(self, rt, version):
        return rt.has_status(version) if hasattr(rt, "has_status") else rt.status

    def prepare(self, req, obj, old):
        """Prunes, defaults and validates obj (create when old is None); raises 422."""
        rt = req.rt
        errs = []
        pruned = []
        if rt.builtin:
            if rt.known_fields is not None:
                for k in list(obj):
                    if k not in rt.known_fields:
                        pruned.append(k)
                        del obj[k]
            for k in list(obj["metadata"]):
                if k not in schemas.OBJECT_META_FIELDS:
                    pruned.append("metadata." + k)
                    del obj["metadata"][k]
            req.registry = self.registry
            hook_errs = rt.prepare_create(obj, req) if old is None else rt.prepare_update(obj, old, req)
            pruned += req.pruned
        else:
            sch = rt.schemas.get(req.version) or {}
            pruned = schemas.prune(obj, sch)
            schemas.default(obj, sch)
            hook_errs = schemas.validate(obj, sch)
        for p in pruned:
            self.field_problem(req, 'unknown field "%s"' % p)
        self.check_meta(rt, obj, errs)
        errs += hook_errs
        if errs:
            raise invalid(rt, obj["metadata"].get("name"), errs)

    def ensure_namespace(self, req, name):
        if req.rt.namespaced:
            ns = self.store.get(("", "namespaces"), req.namespace)
            if ns is None:
                raise not_found(self.registry.types[("", "namespaces")], req.namespace)
            if ns["metadata"].get("deletionTimestamp"):
                d = {"name": name, "kind": req.rt.plural}
                if req.rt.group:
                    d["group"] = req.rt.group
                raise ApiError(403, "Forbidden", "%s \"%s\" is forbidden: unable to create new content in namespace "
                               "%s because it is being terminated" % (qualified(req.rt), name, req.namespace), d)

    def manager(self, req):
        m = req.q("fieldManager")
        if m:
            return m
        ua = req.user_agent.split("/")[0].strip()
        return ua or "unknown"

    def track(self, req, obj, old, operation="Update"):
        """Keeps metadata.managedFields: one entry per manager/operation/subresource; its
        fieldsV1 lists the fields the manager set (lists are atomic entries here)."""
        meta = obj["metadata"]
        entries = [dict(e) for e in ((old or {}).get("metadata") or {}).get("managedFields") or []]
        changed = _fields(old, obj) if old is not None else _fields(None, obj)
        if req.subresource == "status":
            changed = {"f:status": changed.get("f:status", {})} if "f:status" in changed else {}
        if not changed:
            meta["managedFields"] = entries
            return
        mgr = self.manager(req)
        sub = req.subresource or ""
        for e in entries:
            if e.get("manager") == mgr and e.get("operation") == operation and e.get("subresource", "") == sub:
                e["fieldsV1"] = _union(e.get("fieldsV1") or {}, changed)
                e["time"] = now_rfc3339()
                e["apiVersion"] = req.rt.api_version(req.version)
                break
        else:
            e = {"manager": mgr, "operation": operation, "apiVersion": req.rt.api_version(req.version),
                 "time": now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": changed}
            if sub:
                e["subresource"] = sub
            entries.append(e)
        meta["managedFields"] = entries

    # ------------------------------------------------------------ get
    def get(self, req):
        obj = self.store.get(req.rt.gr, self.key(req))
        if obj is None:
            raise not_found(req.rt, req.name)
        return 200, self.out(req.rt, req.version, obj)

    def key(self, req, name=None):
        name = name or req.name
        return (req.namespace + "/" + name) if req.rt.namespaced else name

    # ------------------------------------------------------------ list
    def selectors(self, req):
        ls = parse_label_selector(req.q("labelSelector"))
        fs = parse_field_selector(req.q("fieldSelector"), req.rt.field_selectors)
        rt = req.rt

        def match(obj):
            if not ls.empty() and not ls.matches((obj.get("metadata") or {}).get("labels")):
                return False
            if not fs.empty() and not fs.matches(obj, rt.field_value):
                return False
            return True
        return match, ls.empty() and fs.empty()

    def parse_rv(self, s):
        try:
            v = int(s)
            if v < 0:
                raise ValueError()
            return v
        except (TypeError, ValueError):
            raise bad_request("invalid resource version: %s" % s)

    def wait_rv(self, rv):
        deadline = time.time() + 3
        while self.store.rv < rv and time.time() < deadline:
            time.sleep(0.05)
        if self.store.rv < rv:
            raise too_large_rv(rv, self.store.rv)

    def list(self, req):
        rt = req.rt
        match, unfiltered = self.selectors(req)
        limit = req.q("limit")
        try:
            limit = max(int(limit), 0) if limit not in (None, "") else 0
        except ValueError:
            raise bad_request("invalid limit: " + limit)
        cont = req.q("continue") or ""
        rv_param = req.q("resourceVersion") or ""
        match_param = req.q("resourceVersionMatch") or ""
        if match_param and match_param not in ("NotOlderThan", "Exact"):
            raise invalid_list_options('resourceVersionMatch: Unsupported value: "%s": supported values: '
                                       '"Exact", "NotOlderThan"' % match_param)
        if match_param and not rv_param:
            raise invalid_list_options("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
                                       "unless resourceVersion is provided")
        if cont and rv_param:
            raise invalid_list_options("resourceVersion: Forbidden: specifying resource version is not "
                                       "allowed when using continue")
        start = None
        with self.store.lock:
            if cont:
                snap, start = self.decode_continue(cont)
                if snap == 0:
                    # the token of a 410: the rest of the list from the latest snapshot
                    snap = self.store.rv
                elif snap < self.store.compacted:
                    raise expired(INCONSISTENT_CONTINUE, {"continue": encode_continue(0, start)})
            elif rv_param and rv_param != "0":
                want = self.parse_rv(rv_param)
                if match_param == "Exact" and want < self.store.compacted:
                    raise expired("too old resource version: %d (%d)" % (want, self.store.compacted))
                if want > self.store.rv:
                    self.store.lock.release()
                    try:
                        self.wait_rv(want)
                    finally:
                        self.store.lock.acquire()
                # Exact: that very version; otherwise (NotOlderThan) the latest one.
                snap = want if match_param == "Exact" else self.store.rv
            else:
                if match_param == "Exact":
                    raise invalid_list_options('resourceVersionMatch: Forbidden: resourceVersionMatch "Exact" '
                                               'is forbidden for resourceVersion "0"')
                snap = self.store.rv
            ns = req.namespace if rt.namespaced else None
            pairs = self.store.items(rt.gr, snap, start, ns)
        items, more, last_key = [], 0, None
        for key, obj in pairs:
            if not match(obj):
                continue
            if limit and len(items) >= limit:
                more += 1
                if not unfiltered:
                    break
                continue
            items.append(obj)
            last_key = key
        meta = {"resourceVersion": str(snap)}
        if more:
            meta["continue"] = encode_continue(snap, last_key + "\x00")
            if unfiltered:
                meta["remainingItemCount"] = more
        return items, meta

    def decode_continue(self, token):
        try:
            pad = "=" * (-len(token) % 4)
            d = json.loads(base64.urlsafe_b64decode(token + pad))
            if d.get("v") != "meta.k8s.io/v1" or not isinstance(d.get("rv"), int) or not isinstance(d.get("start"), str):
                raise ValueError()
            return d["rv"], d["start"]
        except (ValueError, TypeError):
            raise bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                              "(version meta.k8s.io/v1)")

    def list_body(self, req, items, meta):
        rt = req.rt
        return {"kind": rt.list_kind, "apiVersion": rt.api_version(req.version), "metadata": meta,
                "items": [self.list_item(rt, req.version, o) for o in items]}

    # ------------------------------------------------------------ create
    def set_namespace(self, req, meta):
        """Gives meta the namespace of the URL (none for a cluster-scoped kind); refuses
        an object that names another one."""
        if req.rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != req.namespace:
                raise bad_request("the namespace of the provided object does not match the namespace "
                                  "sent on the request")
            meta["namespace"] = req.namespace
        else:
            meta.pop("namespace", None)

    def create(self, req, obj=None):
        rt = req.rt
        if obj is None:
            obj = self.decode(req)
        meta = obj["metadata"]
        self.set_namespace(req, meta)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789")
                                                          for _ in range(5))
        if not meta.get("name"):
            raise invalid(rt, "", [FieldError("Required", "metadata.name", None,
                                              "name or generateName is required")])
        if not isinstance(meta["name"], str):
            raise invalid(rt, "", [FieldError("Invalid", "metadata.name", meta["name"], "must be a string")])
        self.ensure_namespace(req, meta["name"])
        for f in ("uid", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(f, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if self.has_status(rt, req.version) and not rt.builtin:
            obj.pop("status", None)
        self.prepare(req, obj, None)
        self.track(req, obj, None)
        with self.store.lock:
            if self.store.get(rt.gr, obj_key(obj)) is not None:
                raise already_exists(rt, meta["name"])
            if req.q("dryRun") == "All":
                return 201, self.out(rt, req.version, obj)
            stored = self.store_put(rt, obj)
        return 201, self.out(rt, req.version, stored)

    def store_put(self, rt, obj):
        """Stores obj (the store's lock held) and returns the stored object; a stored
        CustomResourceDefinition also serves its kind from then on."""
        stored = self.store.put(rt.gr, obj)
        if rt.plural == "customresourcedefinitions":
            self.registry.register_crd(stored)
        return stored

    # ------------------------------------------------------------ update / patch
    def update(self, req):
        new = self.decode(req)
        return self.write(req, new, require_rv=True)

    def write(self, req, new, require_rv):
        rt = req.rt
        meta = new["metadata"]
        if meta.get("name") and meta["name"] != req.name:
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                              % (meta["name"], req.name))
        meta["name"] = req.name
        self.set_namespace(req, meta)
        with self.store.lock:
            old = self.store.get(rt.gr, self.key(req))
            if old is None:
                raise not_found(rt, req.name)
            omet = old["metadata"]
            rv = meta.get("resourceVersion")
            if not rv:
                if require_rv and not rt.unconditional_update:
                    raise invalid(rt, req.name, [FieldError("Invalid", "metadata.resourceVersion", 0,
                                                            "must be specified for an update")])
            elif rv != omet["resourceVersion"]:
                raise conflict(rt, req.name)
            if meta.get("uid") and meta["uid"] != omet["uid"]:
                raise conflict(rt, req.name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                               % (omet["uid"], meta["uid"]))
            status_sub = req.subresource == "status"
            has_status = self.has_status(rt, req.version)
            if status_sub:
                result = self.out(rt, req.version, deepcopy(old))
                if "status" in new:
                    result["status"] = new["status"]
                else:
                    result.pop("status", None)
            else:
                result = new
                m = result["metadata"]
                for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation", "managedFields"):
                    if f in omet:
                        m[f] = omet[f]
                    else:
                        m.pop(f, None)
                if has_status:
                    if "status" in old:
                        result["status"] = deepcopy(old["status"])
                    else:
                        result.pop("status", None)
            result["metadata"]["resourceVersion"] = omet["resourceVersion"]
            if omet.get("deletionTimestamp") and not status_sub:
                added = [f for f in result["metadata"].get("finalizers") or []
                         if f not in (omet.get("finalizers") or [])]
                if added:
                    raise invalid(rt, req.name, [FieldError(
                        "Forbidden", "metadata.finalizers", None,
                        "no new finalizers can be added if the object is being deleted, found new "
                        "finalizers []string{%s}" % ", ".join('"%s"' % f for f in added))])
            self.prepare(req, result, old)
            if rt.generation and not status_sub:
                if _spec_part(old, has_status) != _spec_part(result, has_status):
                    result["metadata"]["generation"] = int(omet.get("generation") or 0) + 1
            if _comparable(result) == _comparable(self.out(rt, req.version, old)):
                return 200, self.out(rt, req.version, old)
            self.track(req, result, old)
            if req.q("dryRun") == "All":
                return 200, self.out(rt, req.version, result)
            if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
                gone = self.finish_delete(rt, old)
                return 200, self.out(rt, req.version, gone)
            stored = self.store_put(rt, result)
        return 200, self.out(rt, req.version, stored)

    def patch(self, req):
        rt = req.rt
        ctype = (req.content_type or "").split(";")[0].strip()
        accepted = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
        if rt.builtin:
            accepted.insert(2, "application/strategic-merge-patch+json")
        if ctype not in accepted:
            raise unsupported_media(accepted)
        try:
            body = json.loads(req.body.decode("utf-8") or "null")
        except (ValueError, UnicodeDecodeError) as e:
            if ctype == "application/apply-patch+yaml":
                raise bad_request("error decoding YAML: this server accepts apply configurations in JSON "
                                  "only (JSON is YAML): %s" % e)
            raise bad_request("error decoding patch: %s" % e)
        if ctype == "application/apply-patch+yaml":
            return self.apply(req, body)
        with self.store.lock:
            old = self.store.get(rt.gr, self.key(req))
            if old is None:
                raise not_found(rt, req.name)
            cur = self.out(rt, req.version, deepcopy(old))
            if ctype == "application/merge-patch+json":
                if not isinstance(body, dict):
                    raise bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}"
                                      % type(body).__name__)
                new = patches.merge_patch(cur, body)
            elif ctype == "application/strategic-merge-patch+json":
                if not isinstance(body, dict):
                    raise bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}"
                                      % type(body).__name__)
                new = patches.strategic_merge(cur, body, rt.merge_keys)
            else:
                new = patches.json_patch(cur, body)
            if not isinstance(new, dict):
                raise bad_request("the patch did not result in an object")
            if new.get("apiVersion") != cur["apiVersion"] or new.get("kind") != cur["kind"]:
                raise bad_request("the API version or kind in the patched object does not match the request")
            if not isinstance(new.get("metadata"), dict):
                new["metadata"] = {}
            return self.write(req, new, require_rv=False)

    def apply(self, req, applied):
        rt = req.rt
        if not req.q("fieldManager"):
            raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
        if not isinstance(applied, dict):
            raise bad_request("error decoding YAML: the apply configuration must be an object")
        if (applied.get("metadata") or {}).get("managedFields"):
            raise bad_request("metadata.managedFields must be nil")
        req.body = json.dumps(applied).encode()
        with self.store.lock:
            old = self.store.get(rt.gr, self.key(req))
            if old is None:
                obj = self.decode(req)
                obj["metadata"].setdefault("name", req.name)
                code, created = self.create(req, obj)
                return code, created
            obj = self.decode(req)
            sch = rt.schemas.get(req.version) if not rt.builtin else None
            cur = self.out(rt, req.version, deepcopy(old))
            new = patches.apply_merge(cur, obj, lambda p: schemas.list_map_keys(sch, p) if sch else None)
            return self.write(req, new, require_rv=False)

    # ------------------------------------------------------------ delete
    def delete(self, req):
        rt = req.rt
        opts = {}
        if req.body:
            try:
                opts = json.loads(req.body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise bad_request("couldn't get version/kind; json parse error: %s" % e)
            if not isinstance(opts, dict):
                raise bad_request("the body of a delete must be a DeleteOptions object")
        pre = opts.get("preconditions") or {}
        with self.store.lock:
            old = self.store.get(rt.gr, self.key(req))
            if old is None:
                raise not_found(rt, req.name)
            omet = old["metadata"]
            if pre.get("uid") and pre["uid"] != omet["uid"]:
                raise conflict(rt, req.name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                               % (pre["uid"], omet["uid"]))
            if pre.get("resourceVersion") and pre["resourceVersion"] != omet["resourceVersion"]:
                raise conflict(rt, req.name, "Precondition failed: ResourceVersion in precondition: %s, "
                               "ResourceVersion in object meta: %s" % (pre["resourceVersion"], omet["resourceVersion"]))
            if req.q("dryRun") == "All" or "All" in (opts.get("dryRun") or []):
                return 200, self.deleted_body(req, old)
            if omet.get("finalizers") or rt.plural == "namespaces":
                if omet.get("deletionTimestamp"):
                    return 200, self.out(rt, req.version, old)
                new = deepcopy(old)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                if rt.plural == "namespaces":
                    new["status"] = {"phase": "Terminating"}
                stored = self.store.put(rt.gr, new)
                if rt.plural == "namespaces":
                    # as the namespace controller does, after the answer: the content goes,
                    # then the namespace (once nothing else holds it with a finalizer)
                    threading.Thread(target=self.finish_namespace, args=(rt, omet["name"]), daemon=True).start()
                return 200, self.out(rt, req.version, stored)
            gone = self.finish_delete(rt, old)
        return 200, self.deleted_body(req, gone)

    def finish_namespace(self, rt, name):
        with self.store.lock:
            ns = self.store.get(rt.gr, name)
            if ns is not None and ns["metadata"].get("deletionTimestamp") and not ns["metadata"].get("finalizers"):
                self.finish_delete(rt, ns)

    def finish_delete(self, rt, obj):
        """Removes obj for good, with what goes with it (a Namespace's objects, a CRD's kind)."""
        if rt.plural == "namespaces":
            ns = obj["metadata"]["name"]
            for gr, t in list(self.registry.types.items()):
                if t.namespaced:
                    for key, _ in self.store.items(gr, namespace=ns):
                        self.store.remove(gr, key)
        if rt.plural == "customresourcedefinitions":
            spec = obj.get("spec") or {}
            gr = (spec.get("group"), (spec.get("names") or {}).get("plural"))
            for key, _ in self.store.items(gr):
                self.store.remove(gr, key)
            self.store.close_watchers("end", gr)
            self.registry.unregister(gr)
        return self.store.remove(rt.gr, obj_key(obj))

    def deleted_body(self, req, obj):
        rt = req.rt
        if rt.delete_returns_object:
            return self.out(rt, req.version, obj)
        details = {"name": obj["metadata"]["name"], "kind": rt.plural, "uid": obj["metadata"]["uid"]}
        if rt.group:
            details["group"] = rt.group
        return success_status(200, details)

    def delete_collection(self, req):
        items, _ = self.list(req)
        deleted = []
        for obj in items:
            sub = Request("DELETE", req.rt, req.version, obj["metadata"].get("namespace") or req.namespace,
                          obj["metadata"]["name"], None, {"dryRun": req.q("dryRun")} if req.q("dryRun") else {},
                          req.body, None, req.user_agent)
            try:
                self.delete(sub)
                deleted.append(self.out(req.rt, req.version, obj))
            except ApiError as e:
                if e.code != 404:
                    raise
        rt = req.rt
        return 200, {"kind": rt.list_kind, "apiVersion": rt.api_version(req.version),
                     "metadata": {"resourceVersion": str(self.store.rv)},
                     "items": [self.list_item(rt, req.version, o) for o in deleted]}


def invalid_list_options(msg):
    return ApiError(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: " + msg,
                    {"kind": "ListOptions", "group": "meta.k8s.io"})


def encode_continue(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _spec_part(obj, has_status):
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "apiVersion", "kind") and not (has_status and k == "status")}


def _comparable(obj):
    o = dict(obj)
    m = dict(o.get("metadata") or {})
    m.pop("managedFields", None)
    m.pop("resourceVersion", None)
    o["metadata"] = m
    return json.dumps(o, sort_keys=True)


def _fields(old, new):
    """The fieldsV1 set of what differs between old and new (everything when old is None)."""
    out = {}
    if not isinstance(new, dict):
        return out
    for k, v in new.items():
        if k in ("apiVersion", "kind"):
            continue
        if k == "metadata":
            sub = {}
            for mk in ("labels", "annotations", "finalizers", "ownerReferences"):
                if mk in v and (old is None or (old.get("metadata") or {}).get(mk) != v[mk]):
                    sub["f:" + mk] = {("f:" + x): {} for x in v[mk]} if isinstance(v[mk], dict) else {}
            if sub:
                out["f:metadata"] = sub
            continue
        ov = None if old is None else old.get(k)
        if old is not None and ov == v:
            continue
        if isinstance(v, dict):
            out["f:" + k] = _fields(ov if isinstance(ov, dict) else None, v) or {}
            if out["f:" + k] == {} and v:
                out["f:" + k] = {"f:" + x: {} for x in v}
        else:
            out["f:" + k] = {}
    return out


def _union(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = _union(out.get(k) or {}, v) if isinstance(v, dict) and v else (out.get(k) or v)
    return out

