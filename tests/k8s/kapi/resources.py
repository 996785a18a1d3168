"""resources — the resource types the server serves and what is special about each.

A ResourceType carries what discovery, routing and the object lifecycle need: group,
served versions, plural/singular/kind, scope, short names, whether it has a /status
subresource and a metadata.generation, the schema (CRDs), the field selectors it allows,
the strategic-merge keys of its lists (built-in kinds), its table columns, and hooks that
default and validate an object on create and update the way its registry strategy does.

Built in: core v1 Namespace, Service, Secret, ConfigMap, Event; discovery.k8s.io/v1
EndpointSlice; coordination.k8s.io/v1 Lease; apiextensions.k8s.io/v1
CustomResourceDefinition. Every other kind exists only while its CRD does (Registry).
"""
import base64
import binascii
import ipaddress
import re

from . import schema as schemas
from .util import (FieldError, check_dns1035_label, check_dns1123_label, check_dns1123_subdomain,
                   age, deepcopy, now_rfc3339)

CORE_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _name_errors(obj):
    """The errors of an object whose name must be a DNS-1123 subdomain: none or one."""
    e = check_dns1123_subdomain(obj["metadata"]["name"])
    return [FieldError("Invalid", "metadata.name", obj["metadata"]["name"], e)] if e else []


class ResourceType:
    def __init__(self, group, versions, plural, kind, namespaced, singular=None, list_kind=None,
                 short_names=(), categories=(), status=False, generation=False, builtin=True):
        self.group = group
        self.versions = list(versions)          # served versions, highest priority first
        self.storage_version = self.versions[0]
        self.plural = plural
        self.kind = kind
        self.singular = singular or kind.lower()
        self.list_kind = list_kind or kind + "List"
        self.namespaced = namespaced
        self.short_names = list(short_names)
        self.categories = list(categories)
        self.status = status                    # has a /status subresource
        self.generation = generation            # keeps metadata.generation
        self.builtin = builtin
        self.schemas = {}                       # version -> openAPIV3Schema (CRDs)
        self.columns = {}                       # version -> additionalPrinterColumns (CRDs)
        self.field_selectors = {"metadata.name", "metadata.namespace"}
        self.smp_keys = {}                      # path tuple -> merge key (None: primitive set)
        self.delete_returns_object = not builtin
        self.unconditional_update = builtin
        self.known_fields = None                # top-level fields of a built-in kind

    @property
    def gr(self):
        return (self.group, self.plural)

    def api_version(self, version):
        return version if not self.group else self.group + "/" + version

    def merge_keys(self, path):
        if path in self.smp_keys:
            return ("merge", self.smp_keys[path])
        if path == ("metadata", "ownerReferences"):
            return ("merge", "uid")
        if path == ("metadata", "finalizers"):
            return ("merge", None)
        return None

    def field_value(self, obj, field):
        meta = obj.get("metadata") or {}
        if field == "metadata.name":
            return meta.get("name", "")
        if field == "metadata.namespace":
            return meta.get("namespace", "")
        cur = obj
        for p in field.split("."):
            cur = cur.get(p) if isinstance(cur, dict) else None
        return "" if cur is None else str(cur)

    # hooks: each returns a list of FieldErrors; obj is changed in place. By default both
    # check the object with validate (old: None on create).
    def validate(self, obj, old=None):
        return []

    def prepare_create(self, obj, ctx):
        return self.validate(obj)

    def prepare_update(self, obj, old, ctx):
        return self.validate(obj, old)

    def table(self, version):
        """[(name, type, format, description, priority, getter)] without the Name column."""
        cols = self.columns.get(version)
        if cols is None:
            return [("Age", "date", "", "", 0, age)]
        return crd_columns(cols)


def version_priority(v):
    """Kubernetes version ordering: GA > beta > alpha, then by major, then minor number."""
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (0, 0, 0, v)
    major = int(m.group(1))
    stage = {"alpha": 1, "beta": 2, None: 3}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor, "")


# ---------------------------------------------------------------- table columns of CRDs

def jsonpath(obj, expr):
    """The small JSONPath dialect of additionalPrinterColumns: .a.b, [*], [N], [?(@.k=="v")]."""
    toks = re.findall(r'\.([A-Za-z0-9_-]+)|\[(\*|\d+|\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*"([^"]*)"\))\]', expr)
    cur = [obj]
    for field, bracket, fkey, fval in toks:
        nxt = []
        for c in cur:
            if field:
                if isinstance(c, dict) and field in c:
                    nxt.append(c[field])
            elif bracket == "*":
                if isinstance(c, list):
                    nxt += c
                elif isinstance(c, dict):
                    nxt += list(c.values())
            elif bracket.isdigit():
                if isinstance(c, list) and int(bracket) < len(c):
                    nxt.append(c[int(bracket)])
            else:
                if isinstance(c, list):
                    for x in c:
                        v = x
                        for p in fkey.split("."):
                            v = v.get(p) if isinstance(v, dict) else None
                        if v == fval:
                            nxt.append(x)
        cur = nxt
    return cur


def crd_columns(cols):
    out = []
    for c in cols:
        def getter(obj, c=c):
            vals = jsonpath(obj, c.get("jsonPath", ""))
            if not vals:
                return None
            if c.get("type") == "date":
                from .util import parse_time, human_duration
                import time
                t = parse_time(vals[0]) if isinstance(vals[0], str) else None
                return "<invalid>" if t is None else human_duration(time.time() - t)
            v = vals[0]
            if c.get("type") in ("integer", "number", "boolean") or isinstance(v, str):
                return v
            import json
            return json.dumps(v)
        out.append((c["name"], c.get("type", "string"), c.get("format", ""),
                    c.get("description", ""), c.get("priority", 0), getter))
    return out


# ---------------------------------------------------------------- built-in kinds

class Namespace(ResourceType):
    def __init__(self):
        super().__init__("", ["v1"], "namespaces", "Namespace", False, short_names=["ns"], status=True)
        self.field_selectors = {"metadata.name", "status.phase"}
        self.known_fields = {"apiVersion", "kind", "metadata", "spec", "status"}
        self.delete_returns_object = True

    def _common(self, obj):
        meta = obj["metadata"]
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        spec = obj.setdefault("spec", {})
        spec.setdefault("finalizers", ["kubernetes"])
        err = check_dns1123_label(meta["name"])
        return [FieldError("Invalid", "metadata.name", meta["name"], err)] if err else []

    def prepare_create(self, obj, ctx):
        obj["status"] = {"phase": "Active"}
        return self._common(obj)

    def prepare_update(self, obj, old, ctx):
        return self._common(obj)

    def table(self, version):
        return [("Status", "string", "", "The status of the namespace", 0,
                 lambda o: (o.get("status") or {}).get("phase")),
                ("Age", "string", "", "", 0, age)]


SERVICE_SPEC_FIELDS = {
    "ports", "selector", "clusterIP", "clusterIPs", "type", "externalIPs", "sessionAffinity",
    "loadBalancerIP", "loadBalancerSourceRanges", "externalName", "externalTrafficPolicy",
    "healthCheckNodePort", "publishNotReadyAddresses", "sessionAffinityConfig", "ipFamilies",
    "ipFamilyPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass",
    "internalTrafficPolicy", "trafficDistribution",
}


class Service(ResourceType):
    def __init__(self):
        super().__init__("", ["v1"], "services", "Service", True, short_names=["svc"],
                         categories=["all"], status=True)
        self.smp_keys = {("spec", "ports"): "port", ("status", "conditions"): "type"}
        self.known_fields = {"apiVersion", "kind", "metadata", "spec", "status"}

    def _validate(self, obj, ctx, old=None):
        errs = []
        meta = obj["metadata"]
        e = check_dns1035_label(meta["name"])
        if e:
            errs.append(FieldError("Invalid", "metadata.name", meta["name"], e))
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return [FieldError("Invalid", "spec", spec, "must be an object")]
        for k in list(spec):
            if k not in SERVICE_SPEC_FIELDS:
                ctx.pruned.append("spec." + k)
                del spec[k]
        stype = spec.setdefault("type", "ClusterIP")
        if stype not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
            errs.append(FieldError("Unsupported", "spec.type", stype,
                                   'supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'))
        if stype == "ExternalName":
            if not spec.get("externalName"):
                errs.append(FieldError("Required", "spec.externalName"))
            return errs
        spec.setdefault("sessionAffinity", "None")
        if old is not None:
            ospec = old.get("spec") or {}
            if "clusterIP" not in spec and "clusterIP" in ospec:
                spec["clusterIP"] = ospec["clusterIP"]
                spec["clusterIPs"] = list(ospec.get("clusterIPs") or [ospec["clusterIP"]])
            elif spec.get("clusterIP") != ospec.get("clusterIP") and ospec.get("clusterIP"):
                errs.append(FieldError("Invalid", "spec.clusterIPs[0]", spec.get("clusterIP"),
                                       "may not change once set"))
        if "clusterIP" not in spec or spec["clusterIP"] == "":
            spec["clusterIP"] = ctx.registry.allocate_ip()
        if spec["clusterIP"] != "None":
            try:
                ipaddress.ip_address(spec["clusterIP"])
            except ValueError:
                errs.append(FieldError("Invalid", "spec.clusterIPs[0]", spec["clusterIP"],
                                       "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        ports = spec.get("ports")
        headless = spec["clusterIP"] == "None"
        if not ports and not headless:
            errs.append(FieldError("Required", "spec.ports"))
        names = set()
        for i, p in enumerate(ports or []):
            path = "spec.ports[%d]" % i
            if not isinstance(p, dict):
                errs.append(FieldError("Invalid", path, p, "must be an object"))
                continue
            port = p.get("port")
            if not isinstance(port, int) or isinstance(port, bool):
                errs.append(FieldError("Required", path + ".port"))
            elif not 1 <= port <= 65535:
                errs.append(FieldError("Invalid", path + ".port", port, "must be between 1 and 65535, inclusive"))
            proto = p.setdefault("protocol", "TCP")
            if proto not in ("TCP", "UDP", "SCTP"):
                errs.append(FieldError("Unsupported", path + ".protocol", proto,
                                       'supported values: "SCTP", "TCP", "UDP"'))
            p.setdefault("targetPort", port)
            tp = p["targetPort"]
            if isinstance(tp, int) and not 1 <= tp <= 65535:
                errs.append(FieldError("Invalid", path + ".targetPort", tp, "must be between 1 and 65535, inclusive"))
            name = p.get("name")
            if len(ports) > 1 and not name:
                errs.append(FieldError("Required", path + ".name"))
            if name:
                e = check_dns1123_label(name)
                if e:
                    errs.append(FieldError("Invalid", path + ".name", name, e))
                if name in names:
                    errs.append(FieldError("Duplicate", path + ".name", name))
                names.add(name)
            if stype in ("NodePort", "LoadBalancer") and "nodePort" not in p:
                p["nodePort"] = ctx.registry.allocate_node_port()
        if stype in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        return errs

    def prepare_create(self, obj, ctx):
        obj["status"] = {"loadBalancer": {}}
        return self._validate(obj, ctx)

    def prepare_update(self, obj, old, ctx):
        return self._validate(obj, ctx, old)

    def table(self, version):
        def ports(o):
            out = []
            for p in (o.get("spec") or {}).get("ports") or []:
                s = str(p.get("port"))
                if p.get("nodePort"):
                    s += ":%s" % p["nodePort"]
                out.append(s + "/" + p.get("protocol", "TCP"))
            return ",".join(out) or "<none>"

        def ext(o):
            spec = o.get("spec") or {}
            if spec.get("type") == "ExternalName":
                return spec.get("externalName")
            ing = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
            ips = [i.get("ip") or i.get("hostname") for i in ing] + list(spec.get("externalIPs") or [])
            return ",".join(ips) if ips else ("<pending>" if spec.get("type") == "LoadBalancer" else "<none>")
        return [("Type", "string", "", "", 0, lambda o: (o.get("spec") or {}).get("type")),
                ("Cluster-IP", "string", "", "", 0, lambda o: (o.get("spec") or {}).get("clusterIP")),
                ("External-IP", "string", "", "", 0, ext),
                ("Port(s)", "string", "", "", 0, ports),
                ("Age", "string", "", "", 0, age),
                ("Selector", "string", "", "", 1,
                 lambda o: ",".join("%s=%s" % kv for kv in sorted(((o.get("spec") or {}).get("selector") or {}).items())) or "<none>")]


CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def _check_data_keys(data, field, errs):
    for k in data:
        if not CONFIG_KEY.match(k) or len(k) > 253:
            errs.append(FieldError("Invalid", "%s[%s]" % (field, k), k,
                                   "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                                   "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation "
                                   "is '[-._a-zA-Z0-9]+')"))


class Secret(ResourceType):
    def __init__(self):
        super().__init__("", ["v1"], "secrets", "Secret", True)
        self.field_selectors = {"metadata.name", "metadata.namespace", "type"}
        self.known_fields = {"apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"}

    def validate(self, obj, old=None):
        errs = _name_errors(obj)
        obj.setdefault("type", "Opaque")
        data = obj.get("data")
        if data is not None and not isinstance(data, dict):
            return errs + [FieldError("Invalid", "data", data, "must be an object")]
        data = obj.setdefault("data", {}) if data is not None or obj.get("stringData") else data
        for k, v in (obj.pop("stringData", None) or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        size = 0
        for k, v in (data or {}).items():
            try:
                size += len(base64.b64decode(v, validate=True)) if isinstance(v, str) else 0
                if not isinstance(v, str):
                    raise binascii.Error()
            except binascii.Error:
                errs.append(FieldError("Invalid", "data[%s]" % k, v, "illegal base64 data"))
        _check_data_keys(data or {}, "data", errs)
        if size > 1024 * 1024:
            errs.append(FieldError("TooLong", "data", "", "may not be more than 1048576 bytes"))
        if obj["type"] == "kubernetes.io/tls":
            for k in ("tls.crt", "tls.key"):
                if k not in (data or {}):
                    errs.append(FieldError("Required", "data[%s]" % k))
        if old is not None:
            if obj["type"] != old.get("type", "Opaque"):
                errs.append(FieldError("Invalid", "type", obj["type"], "field is immutable"))
            if old.get("immutable") and (obj.get("data") != old.get("data") or not obj.get("immutable")):
                errs.append(FieldError("Forbidden", "data", None, "field is immutable when `immutable` is set"))
        return errs

    def table(self, version):
        return [("Type", "string", "", "", 0, lambda o: o.get("type")),
                ("Data", "string", "", "", 0, lambda o: len(o.get("data") or {})),
                ("Age", "string", "", "", 0, age)]


class ConfigMap(ResourceType):
    def __init__(self):
        super().__init__("", ["v1"], "configmaps", "ConfigMap", True, short_names=["cm"])
        self.known_fields = {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"}

    def validate(self, obj, old=None):
        errs = _name_errors(obj)
        for field in ("data", "binaryData"):
            d = obj.get(field)
            if d is None:
                continue
            if not isinstance(d, dict):
                errs.append(FieldError("Invalid", field, d, "must be an object"))
                continue
            _check_data_keys(d, field, errs)
            for k, v in d.items():
                if not isinstance(v, str):
                    errs.append(FieldError("Invalid", "%s[%s]" % (field, k), v, "must be a string"))
        return errs

    def table(self, version):
        return [("Data", "string", "", "", 0, lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
                ("Age", "string", "", "", 0, age)]


class Event(ResourceType):
    def __init__(self):
        super().__init__("", ["v1"], "events", "Event", True, short_names=["ev"])
        self.field_selectors = {"metadata.name", "metadata.namespace", "involvedObject.kind",
                                "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                                "involvedObject.apiVersion", "involvedObject.resourceVersion",
                                "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}

    def field_value(self, obj, field):
        if field == "source":
            return (obj.get("source") or {}).get("component", "")
        return super().field_value(obj, field)

    def table(self, version):
        return [("Type", "string", "", "", 0, lambda o: o.get("type")),
                ("Reason", "string", "", "", 0, lambda o: o.get("reason")),
                ("Object", "string", "", "", 0, lambda o: "%s/%s" % (
                    ((o.get("involvedObject") or {}).get("kind") or "").lower(),
                    (o.get("involvedObject") or {}).get("name"))),
                ("Message", "string", "", "", 0, lambda o: o.get("message"))]


class EndpointSlice(ResourceType):
    def __init__(self):
        super().__init__("discovery.k8s.io", ["v1"], "endpointslices", "EndpointSlice", True, generation=True)
        self.known_fields = {"apiVersion", "kind", "metadata", "addressType", "endpoints", "ports"}

    def validate(self, obj, old=None):
        errs = _name_errors(obj)
        at = obj.get("addressType")
        if at is None:
            errs.append(FieldError("Required", "addressType"))
        elif at not in ("IPv4", "IPv6", "FQDN"):
            errs.append(FieldError("Unsupported", "addressType", at, 'supported values: "FQDN", "IPv4", "IPv6"'))
        if old is not None and at != old.get("addressType"):
            errs.append(FieldError("Invalid", "addressType", at, "field is immutable"))
        eps = obj.get("endpoints")
        if eps is None:
            obj["endpoints"] = eps = []
        if not isinstance(eps, list):
            return errs + [FieldError("Invalid", "endpoints", eps, "must be a list")]
        if len(eps) > 1000:
            errs.append(FieldError("TooMany", "endpoints", len(eps), "must have at most 1000 items"))
        for i, ep in enumerate(eps):
            path = "endpoints[%d]" % i
            if not isinstance(ep, dict):
                errs.append(FieldError("Invalid", path, ep, "must be an object"))
                continue
            addrs = ep.get("addresses")
            if not addrs:
                errs.append(FieldError("Required", path + ".addresses", None, "must contain at least 1 address"))
                continue
            if len(addrs) > 100:
                errs.append(FieldError("TooMany", path + ".addresses", len(addrs), "must have at most 100 items"))
            for j, a in enumerate(addrs):
                ok = True
                try:
                    ip = ipaddress.ip_address(a)
                    ok = (at == "IPv4" and ip.version == 4) or (at == "IPv6" and ip.version == 6)
                except (ValueError, TypeError):
                    ok = at == "FQDN" and isinstance(a, str) and check_dns1123_subdomain(a) is None
                if not ok:
                    errs.append(FieldError("Invalid", "%s.addresses[%d]" % (path, j), a,
                                           "must be a valid %s address" % (at or "IP")))
            for c, v in (ep.get("conditions") or {}).items():
                if c not in ("ready", "serving", "terminating") or not isinstance(v, bool):
                    errs.append(FieldError("Invalid", "%s.conditions.%s" % (path, c), v, "must be a boolean"))
        ports = obj.get("ports")
        if ports is not None:
            if not isinstance(ports, list):
                return errs + [FieldError("Invalid", "ports", ports, "must be a list")]
            names = set()
            for i, p in enumerate(ports):
                path = "ports[%d]" % i
                if not isinstance(p, dict):
                    errs.append(FieldError("Invalid", path, p, "must be an object"))
                    continue
                p.setdefault("protocol", "TCP")
                p.setdefault("name", "")
                if p["protocol"] not in ("TCP", "UDP", "SCTP"):
                    errs.append(FieldError("Unsupported", path + ".protocol", p["protocol"],
                                           'supported values: "SCTP", "TCP", "UDP"'))
                port = p.get("port")
                if port is not None and (not isinstance(port, int) or not 0 <= port <= 65535):
                    errs.append(FieldError("Invalid", path + ".port", port, "must be between 0 and 65535, inclusive"))
                if p["name"] in names:
                    errs.append(FieldError("Duplicate", path + ".name", p["name"]))
                names.add(p["name"])
        return errs

    def table(self, version):
        def ports(o):
            ps = [str(p.get("port")) for p in o.get("ports") or [] if p.get("port") is not None]
            return ",".join(ps) or "<unset>"

        def eps(o):
            addrs = [a for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
            s = ",".join(addrs[:3])
            return (s + " + %d more..." % (len(addrs) - 3)) if len(addrs) > 3 else (s or "<unset>")
        return [("AddressType", "string", "", "", 0, lambda o: o.get("addressType")),
                ("Ports", "string", "", "", 0, ports),
                ("Endpoints", "string", "", "", 0, eps),
                ("Age", "string", "", "", 0, age)]


class Lease(ResourceType):
    def __init__(self):
        super().__init__("coordination.k8s.io", ["v1"], "leases", "Lease", True)
        self.known_fields = {"apiVersion", "kind", "metadata", "spec"}

    def validate(self, obj, old=None):
        errs = _name_errors(obj)
        spec = obj.get("spec") or {}
        d = spec.get("leaseDurationSeconds")
        if d is not None and (not isinstance(d, int) or d <= 0):
            errs.append(FieldError("Invalid", "spec.leaseDurationSeconds", d, "must be greater than 0"))
        t = spec.get("leaseTransitions")
        if t is not None and (not isinstance(t, int) or t < 0):
            errs.append(FieldError("Invalid", "spec.leaseTransitions", t, "must be greater than or equal to 0"))
        return errs

    def table(self, version):
        return [("Holder", "string", "", "", 0, lambda o: (o.get("spec") or {}).get("holderIdentity")),
                ("Age", "string", "", "", 0, age)]


class CRDType(ResourceType):
    """apiextensions.k8s.io/v1 CustomResourceDefinition; creating one registers its kind."""

    def __init__(self):
        super().__init__("apiextensions.k8s.io", ["v1"], "customresourcedefinitions",
                         "CustomResourceDefinition", False, short_names=["crd", "crds"],
                         categories=["api-extensions"], status=True, generation=True)
        self.known_fields = {"apiVersion", "kind", "metadata", "spec", "status"}
        self.delete_returns_object = True

    def _validate(self, obj, old=None):
        errs = []
        meta = obj["metadata"]
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [FieldError("Required", "spec")]
        names = spec.get("names") or {}
        group = spec.get("group") or ""
        if not group:
            errs.append(FieldError("Required", "spec.group"))
        elif "." not in group:
            errs.append(FieldError("Invalid", "spec.group", group, "should be a domain with at least one dot"))
        for f in ("plural", "kind"):
            if not names.get(f):
                errs.append(FieldError("Required", "spec.names." + f))
        if names.get("plural") and names["plural"] != names["plural"].lower():
            errs.append(FieldError("Invalid", "spec.names.plural", names["plural"], "must be lowercase"))
        if names.get("plural") and group and meta["name"] != names["plural"] + "." + group:
            errs.append(FieldError("Invalid", "metadata.name", meta["name"],
                                   'must be spec.names.plural+"."+spec.group'))
        if names.get("kind"):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        scope = spec.get("scope")
        if scope not in ("Namespaced", "Cluster"):
            errs.append(FieldError("Unsupported", "spec.scope", scope, 'supported values: "Cluster", "Namespaced"'))
        versions = spec.get("versions")
        if not versions:
            errs.append(FieldError("Required", "spec.versions", None, "must have exactly one version marked as storage version"))
            return errs
        seen, storage = set(), 0
        for i, v in enumerate(versions):
            path = "spec.versions[%d]" % i
            name = v.get("name")
            if not name:
                errs.append(FieldError("Required", path + ".name"))
            elif check_dns1035_label(name):
                errs.append(FieldError("Invalid", path + ".name", name, check_dns1035_label(name)))
            if name in seen:
                errs.append(FieldError("Duplicate", path + ".name", name))
            seen.add(name)
            if v.get("storage"):
                storage += 1
            if not isinstance(v.get("served"), bool):
                errs.append(FieldError("Required", path + ".served"))
            sch = (v.get("schema") or {}).get("openAPIV3Schema")
            if sch is None:
                errs.append(FieldError("Required", path + ".schema.openAPIV3Schema", None, "schemas are required"))
            else:
                for e in schemas.check_structural(sch, path + ".schema.openAPIV3Schema"):
                    errs.append(e)
        if storage != 1:
            errs.append(FieldError("Invalid", "spec.versions", versions and "[...]",
                                   "must have exactly one version marked as storage version"))
        spec.setdefault("conversion", {"strategy": "None"})
        if old is not None:
            ospec = old.get("spec") or {}
            if group != ospec.get("group"):
                errs.append(FieldError("Invalid", "spec.group", group, "field is immutable"))
            if names.get("plural") != (ospec.get("names") or {}).get("plural"):
                errs.append(FieldError("Invalid", "spec.names.plural", names.get("plural"), "field is immutable"))
            if scope != ospec.get("scope"):
                errs.append(FieldError("Invalid", "spec.scope", scope, "field is immutable"))
        return errs

    def _status(self, obj, old):
        spec = obj["spec"]
        now = now_rfc3339()
        ost = (old or {}).get("status") or {}
        stored = list(ost.get("storedVersions") or [])
        for v in spec["versions"]:
            if v.get("storage") and v["name"] not in stored:
                stored.append(v["name"])
        conds = ost.get("conditions") or [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]
        obj["status"] = {"conditions": conds, "acceptedNames": deepcopy(spec["names"]),
                         "storedVersions": stored}

    def prepare_create(self, obj, ctx):
        errs = self._validate(obj)
        if not errs:
            self._status(obj, None)
        return errs

    def prepare_update(self, obj, old, ctx):
        errs = self._validate(obj, old)
        if not errs:
            self._status(obj, old)
        return errs

    def table(self, version):
        return [("Created At", "date", "", "", 0,
                 lambda o: (o.get("metadata") or {}).get("creationTimestamp"))]


class CustomType(ResourceType):
    """A kind served because its CustomResourceDefinition exists."""

    def __init__(self, crd):
        spec = crd["spec"]
        names = spec["names"]
        served = sorted([v for v in spec["versions"] if v.get("served")],
                        key=lambda v: version_priority(v["name"]), reverse=True)
        super().__init__(spec["group"], [v["name"] for v in served] or ["none"], names["plural"],
                         names["kind"], spec["scope"] == "Namespaced", singular=names.get("singular"),
                         list_kind=names.get("listKind"), short_names=names.get("shortNames") or (),
                         categories=names.get("categories") or (), generation=True, builtin=False)
        self.storage_version = next(v["name"] for v in spec["versions"] if v.get("storage"))
        self.crd_name = crd["metadata"]["name"]
        self.status_versions = set()
        for v in spec["versions"]:
            self.schemas[v["name"]] = (v.get("schema") or {}).get("openAPIV3Schema") or {}
            if v.get("additionalPrinterColumns"):
                self.columns[v["name"]] = v["additionalPrinterColumns"]
            if "status" in (v.get("subresources") or {}):
                self.status_versions.add(v["name"])
        self.status = bool(self.status_versions)
        self.delete_returns_object = True
        self.unconditional_update = False

    def has_status(self, version):
        return version in self.status_versions


class Registry:
    """The resource types being served, by (group, plural); CRDs come and go."""

    def __init__(self):
        self.types = {}
        self.builtin_groups = ["", "apiextensions.k8s.io", "coordination.k8s.io", "discovery.k8s.io"]
        for rt in (Namespace(), Service(), Secret(), ConfigMap(), Event(), EndpointSlice(), Lease(), CRDType()):
            self.types[rt.gr] = rt
        self._next_ip = 10
        self._next_node_port = 30000

    def allocate_ip(self):
        self._next_ip += 1
        return "10.96.%d.%d" % (self._next_ip // 250, self._next_ip % 250 + 1)

    def allocate_node_port(self):
        self._next_node_port += 1
        return self._next_node_port

    def lookup(self, group, version, plural):
        rt = self.types.get((group, plural))
        if rt is None or version not in rt.versions:
            return None
        return rt

    def register_crd(self, crd):
        rt = CustomType(crd)
        self.types[rt.gr] = rt
        return rt

    def unregister(self, gr):
        return self.types.pop(gr, None)

    def groups(self):
        """{group: [versions, highest priority first]} of every served type."""
        out = {}
        for rt in self.types.values():
            vs = out.setdefault(rt.group, [])
            for v in rt.versions:
                if v not in vs:
                    vs.append(v)
        for g in out:
            out[g].sort(key=version_priority, reverse=True)
        return out

    def in_group_version(self, group, version):
        return sorted([rt for rt in self.types.values() if rt.group == group and version in rt.versions],
                      key=lambda r: r.plural)
