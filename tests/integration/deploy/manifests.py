#!/usr/bin/python3
"""manifests.py — reads deploy/k8s as Kubernetes would, for tests/integration/deploy/*.sh.

    manifests.py schema RENDERED.yaml          every object against the Kubernetes API's own
                                               types (Debian's python3-kubernetes models):
                                               unknown fields, wrong types, missing required
    manifests.py listed DIR                    kustomization.yaml lists every manifest of DIR
    manifests.py facts RENDERED.yaml           JSON of what the tests compare with the binary
    manifests.py rbac RENDERED.yaml LOG        every request in the API server log LOG (lines
                                               as tests/k8s/apiserver.py writes them) is granted
                                               to the Deployment's service account, and every
                                               grant was used

Each check prints one line per problem and exits 1 when there was any.
"""
import json
import os
import re
import sys
import urllib.parse

import yaml
from kubernetes import client

PROBLEMS = []


def problem(msg):
    PROBLEMS.append(msg)
    print("problem: " + msg)


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def name_of(doc):
    return "%s %s" % (doc.get("kind"), (doc.get("metadata") or {}).get("name"))


# ---------------------------------------------------------------- schema

PRIMITIVES = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object,
              "datetime": str, "date": str}


def model_class(type_name):
    return getattr(client, type_name, None)


# The python-kubernetes container types: the pattern of the type name (its group the
# element type), the JSON type, what it is called, its (key, element) pairs and how an
# element's place is written.
CONTAINERS = (
    (r"list\[(.*)\]$", list, "a list", enumerate, "%s[%d]"),
    (r"dict\(str, (.*)\)$", dict, "a mapping", lambda d: d.items(), "%s.%s"),
)


def walk(value, type_name, where):
    """Checks value against the python-kubernetes type name (V1Deployment, list[...], ...)."""
    if value is None:
        return
    for pattern, json_type, called, items, place in CONTAINERS:
        m = re.match(pattern, type_name)
        if m:
            if not isinstance(value, json_type):
                problem("%s: %s is expected" % (where, called))
                return
            for k, v in items(value):
                walk(v, m.group(1), place % (where, k))
            return
    if type_name in PRIMITIVES:
        want = PRIMITIVES[type_name]
        if type_name == "str" and isinstance(value, (int, float)) and not isinstance(value, bool):
            problem("%s: a string is expected, not the number %r (quote it)" % (where, value))
        elif not isinstance(value, want) or (type_name == "int" and isinstance(value, bool)):
            problem("%s: %s expected, got %r" % (where, type_name, value))
        return
    cls = model_class(type_name)
    if cls is None:
        return  # IntOrString and similar: any scalar
    if not isinstance(value, dict):
        problem("%s: an object (%s) is expected" % (where, type_name))
        return
    by_json = {v: k for k, v in cls.attribute_map.items()}
    for key, v in value.items():
        if key not in by_json:
            problem("%s: unknown field %r (%s has %s)" % (where, key, type_name, ", ".join(sorted(by_json))))
            continue
        walk(v, cls.openapi_types[by_json[key]], "%s.%s" % (where, key))


KINDS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}


def cmd_schema(path):
    api = client.ApiClient()
    for doc in load(path):
        t = KINDS.get((doc.get("apiVersion"), doc.get("kind")))
        if t is None:
            problem("%s: %s is not a kind this check knows" % (name_of(doc), doc.get("apiVersion")))
            continue
        walk(doc, t, name_of(doc))
        # The client's own deserializer checks required fields and enumerations.
        try:
            api._ApiClient__deserialize(doc, t)
        except (ValueError, TypeError) as e:
            problem("%s: %s" % (name_of(doc), e))


def cmd_listed(folder):
    with open(os.path.join(folder, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    listed = set(k.get("resources") or [])
    present = {n for n in os.listdir(folder) if n.endswith(".yaml") and n != "kustomization.yaml"}
    for n in sorted(present - listed):
        problem("%s is not listed in kustomization.yaml" % n)
    for n in sorted(listed - present):
        problem("kustomization.yaml lists %s, which does not exist" % n)


# ---------------------------------------------------------------- facts


def find(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def cmd_facts(path):
    docs = load(path)
    deps = find(docs, "Deployment")
    if len(deps) != 1:
        problem("one Deployment expected, found %d" % len(deps))
        return
    dep = deps[0]
    pod = dep["spec"]["template"]["spec"]
    main = [c for c in pod["containers"] if c["name"] == "sextant"]
    if len(main) != 1:
        problem("the Deployment has no container named sextant")
        return
    c = main[0]
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    probes = {}
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(kind)
        if p and "httpGet" in p:
            port = p["httpGet"]["port"]
            probes[kind] = {"path": p["httpGet"]["path"], "port": ports.get(port, port)}
    config_maps = {}
    for cm in find(docs, "ConfigMap"):
        for key, text in (cm.get("data") or {}).items():
            config_maps["%s/%s" % (cm["metadata"]["name"], key)] = text
    # the file `serve --config` names, found through the volume mounted at its folder
    args = c.get("args") or []
    config_path = args[args.index("--config") + 1] if "--config" in args else None
    config_text = None
    if config_path:
        for m in c.get("volumeMounts", []):
            if os.path.dirname(config_path) == m["mountPath"].rstrip("/"):
                vol = [v for v in pod.get("volumes", []) if v["name"] == m["name"]][0]
                if "configMap" in vol:
                    config_text = config_maps.get("%s/%s" % (vol["configMap"]["name"], os.path.basename(config_path)))
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = {"value": e["value"]}
        else:
            env[e["name"]] = {"from": list(e["valueFrom"].keys())[0]}
    services = []
    for s in find(docs, "Service"):
        for p in s["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])
            services.append({"service": s["metadata"]["name"], "port": p["port"],
                             "target": ports.get(tp, tp), "selector": s["spec"].get("selector", {})})
    pod_sc = pod.get("securityContext", {})
    out = {
        "replicas": dep["spec"].get("replicas"),
        "labels": dep["spec"]["template"]["metadata"].get("labels", {}),
        "service_account": pod.get("serviceAccountName"),
        "ports": ports,
        "probes": probes,
        "config_path": config_path,
        "config": config_text,
        "env": env,
        "services": services,
        "pdb": [p["spec"] for p in find(docs, "PodDisruptionBudget")],
        "anti_affinity": bool((pod.get("affinity") or {}).get("podAntiAffinity")),
        "resources": c.get("resources", {}),
        "run_as_non_root": pod_sc.get("runAsNonRoot") or (c.get("securityContext") or {}).get("runAsNonRoot"),
        "containers": [
            {"name": x["name"], "securityContext": x.get("securityContext", {})}
            for x in pod.get("initContainers", []) + pod["containers"]
        ],
        "network_policy_ports": [
            p.get("port") for np in find(docs, "NetworkPolicy")
            for rule in np["spec"].get("ingress", []) for p in rule.get("ports", [])
        ],
    }
    json.dump(out, sys.stdout, indent=1)
    print()


# ---------------------------------------------------------------- RBAC

# "GET /apis/gateway.networking.k8s.io/v1/namespaces/x/httproutes/y/status?... HTTP/1.1" 200 -
REQUEST = re.compile(r'"(GET|PATCH|PUT|POST|DELETE) (\S+) HTTP/1\.1" (\d+)')


def request_of(method, url):
    """(group, resource, verb) of an API request, the way the API server's authorizer
    names it; resource is "plural" or "plural/subresource"."""
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(u.query)
    parts = [p for p in u.path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"]:
        group, rest = parts[1], parts[3:]
    else:
        return None  # discovery, /version, ...: not resource requests
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    if not rest:
        return None
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None
    if method == "GET":
        watching = q.get("watch", ["false"])[0] in ("1", "true", "True")
        verb = "watch" if watching else ("get" if name else "list")
    else:
        verb = {"PATCH": "patch", "PUT": "update", "POST": "create", "DELETE": "delete"}[method]
    return (group, resource + ("/" + sub if sub else ""), verb)


def granted_rules(docs):
    dep = find(docs, "Deployment")[0]
    sa = dep["spec"]["template"]["spec"].get("serviceAccountName", "default")
    ns = dep["metadata"].get("namespace")
    rules = []
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
             for d in docs if d.get("kind") in ("ClusterRole", "Role")}
    for b in docs:
        if b.get("kind") not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and s.get("namespace") == ns
                   for s in b.get("subjects", [])):
            continue
        ref = b["roleRef"]
        key = (ref["kind"], b["metadata"].get("namespace") if ref["kind"] == "Role" else None, ref["name"])
        role = roles.get(key)
        if role is None:
            problem("%s binds %s %s, which is not among the manifests" % (name_of(b), ref["kind"], ref["name"]))
            continue
        if b["kind"] == "RoleBinding":
            problem("%s grants only in namespace %s, but Sextant reads every namespace" %
                    (name_of(b), b["metadata"].get("namespace")))
            continue
        rules.extend(role.get("rules", []))
    return rules


def allows(rule, req):
    group, resource, verb = req
    return ((group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", [])) and
            (resource in rule.get("resources", []) or "*" in rule.get("resources", [])) and
            (verb in rule.get("verbs", []) or "*" in rule.get("verbs", [])) and
            not rule.get("resourceNames"))


def cmd_rbac(path, log):
    docs = load(path)
    rules = granted_rules(docs)
    seen = set()
    with open(log, errors="replace") as f:
        for line in f:
            m = REQUEST.search(line)
            if not m:
                continue
            req = request_of(m.group(1), m.group(2))
            if req is None:
                continue
            if req not in seen:
                seen.add(req)
                if not any(allows(r, req) for r in rules):
                    problem("the daemon's %s of %s (group %r) is not granted by the ClusterRole" %
                            (req[2], req[1], req[0]))
    if not seen:
        problem("no API request of the daemon in %s" % log)
    for r in rules:
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    if (g, res, v) not in seen:
                        problem("the ClusterRole grants %s on %s (group %r), which the daemon never did" % (v, res, g))
    for req in sorted(seen):
        print("request: %s %s %s" % (req[2], req[1], req[0] or "core"))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"schema": cmd_schema, "listed": cmd_listed, "facts": cmd_facts, "rbac": cmd_rbac}[cmd](*args)
    sys.exit(1 if PROBLEMS else 0)


if __name__ == "__main__":
    main()
