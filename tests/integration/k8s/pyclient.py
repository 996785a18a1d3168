#!/usr/bin/python3
"""pyclient.py — checks of the test Kubernetes API server with the official Python client
(Debian's python3-kubernetes), for tests/integration/k8s/test_apiserver.sh.

    pyclient.py KUBECONFIG watch NAMESPACE ROUTE     a watch on HTTPRoutes follows ADDED then
                                                     MODIFIED (the route's hostnames, patched
                                                     here while the stream is open)
    pyclient.py KUBECONFIG pages                     namespaces listed 2 at a time with continue
                                                     are the whole list, once, at one snapshot,
                                                     even when a namespace is created meanwhile
    pyclient.py KUBECONFIG gone NAMESPACE RV         a watch from a compacted RV raises a 410
    pyclient.py KUBECONFIG badtoken                  a wrong token raises a 401
    pyclient.py KUBECONFIG finalizer NAME            a GatewayClass NAME created with a
                                                     finalizer: delete answers it with a
                                                     deletionTimestamp, a patch with a stale
                                                     resourceVersion raises 409, removing the
                                                     finalizer deletes it (get raises 404)

Prints what it saw; exits 0 when the check holds, 1 otherwise.
"""
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION = "gateway.networking.k8s.io", "v1"


def api_client(kubeconfig):
    return config.new_client_from_config(config_file=kubeconfig)


def check_watch(kubeconfig, ns, route):
    api = client.CustomObjectsApi(api_client(kubeconfig))
    w = watch.Watch()
    seen = []
    ready = threading.Event()
    done = threading.Event()

    def follow():
        for ev in w.stream(api.list_namespaced_custom_object, GROUP, VERSION, ns, "httproutes",
                           timeout_seconds=20):
            obj = ev["object"]
            seen.append((ev["type"], obj["metadata"]["name"], obj["metadata"]["resourceVersion"],
                         list(obj["spec"].get("hostnames") or [])))
            print("event", *seen[-1], flush=True)
            if ev["type"] == "ADDED" and obj["metadata"]["name"] == route:
                ready.set()
            if ev["type"] == "MODIFIED" and obj["metadata"]["name"] == route:
                done.set()
                w.stop()
    t = threading.Thread(target=follow, daemon=True)
    t.start()
    if not ready.wait(10):
        print("no ADDED event for %s" % route)
        return 1
    api.patch_namespaced_custom_object(GROUP, VERSION, ns, "httproutes", route,
                                       {"spec": {"hostnames": ["shop.example.com", "py.example.com"]}})
    if not done.wait(10):
        print("no MODIFIED event after the patch")
        return 1
    t.join(5)
    added = [s for s in seen if s[0] == "ADDED" and s[1] == route]
    modified = [s for s in seen if s[0] == "MODIFIED" and s[1] == route]
    ok = (added and modified and seen.index(added[0]) < seen.index(modified[0]) and
          modified[0][3] == ["shop.example.com", "py.example.com"] and
          int(modified[0][2]) > int(added[0][2]))
    print("watch followed ADDED then MODIFIED" if ok else "unexpected events: %s" % seen)
    return 0 if ok else 1


def check_pages(kubeconfig):
    v1 = client.CoreV1Api(api_client(kubeconfig))
    full = v1.list_namespace()
    want = [n.metadata.name for n in full.items]
    names, token, rvs, pages, remaining = [], None, set(), 0, []
    while True:
        page = v1.list_namespace(limit=2, _continue=token) if token else v1.list_namespace(limit=2)
        pages += 1
        names += [n.metadata.name for n in page.items]
        rvs.add(page.metadata.resource_version)
        remaining.append(page.metadata.remaining_item_count)
        if pages == 1:
            # a write between pages must not show up in the later pages (one snapshot)
            v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="paged-later")))
        token = page.metadata._continue
        if not token:
            break
        if len(page.items) != 2:
            print("a page before the last has %d items" % len(page.items))
            return 1
    print("pages", pages, "names", names, "resourceVersions", sorted(rvs), "remaining", remaining)
    ok = (names == want and len(set(names)) == len(names) and len(rvs) == 1 and
          pages == (len(want) + 1) // 2 and "paged-later" not in names and
          remaining[0] == len(want) - 2 and remaining[-1] is None)
    after = [n.metadata.name for n in v1.list_namespace().items]
    ok = ok and "paged-later" in after
    v1.delete_namespace("paged-later")
    print("paginated list is consistent" if ok else "paginated list is wrong (want %s)" % want)
    return 0 if ok else 1


def check_gone(kubeconfig, ns, rv):
    api = client.CustomObjectsApi(api_client(kubeconfig))
    w = watch.Watch()
    try:
        for ev in w.stream(api.list_namespaced_custom_object, GROUP, VERSION, ns, "httproutes",
                           resource_version=rv, timeout_seconds=10):
            print("unexpected event", ev["type"])
            return 1
    except ApiException as e:
        print("watch from %s: ApiException %s %s" % (rv, e.status, e.reason))
        return 0 if e.status == 410 else 1
    print("the watch from %s ended without an error" % rv)
    return 1


def check_badtoken(kubeconfig):
    c = api_client(kubeconfig)
    c.configuration.api_key = {"authorization": "Bearer not-the-token"}
    try:
        client.CoreV1Api(c).list_namespace()
    except ApiException as e:
        print("wrong token: ApiException %s" % e.status)
        return 0 if e.status == 401 else 1
    print("a wrong token was accepted")
    return 1


def check_finalizer(kubeconfig, name):
    api = client.CustomObjectsApi(api_client(kubeconfig))
    body = {"apiVersion": GROUP + "/" + VERSION, "kind": "GatewayClass",
            "metadata": {"name": name, "finalizers": ["example.com/py"]},
            "spec": {"controllerName": "example.com/py"}}
    created = api.create_cluster_custom_object(GROUP, VERSION, "gatewayclasses", body)
    rv = created["metadata"]["resourceVersion"]
    got = api.delete_cluster_custom_object(GROUP, VERSION, "gatewayclasses", name)
    if not got.get("metadata", {}).get("deletionTimestamp"):
        print("delete answered no deletionTimestamp: %s" % got)
        return 1
    print("delete: deletionTimestamp", got["metadata"]["deletionTimestamp"])
    try:
        api.patch_cluster_custom_object(GROUP, VERSION, "gatewayclasses", name,
                                        {"metadata": {"resourceVersion": rv, "finalizers": None}})
        print("a patch with the stale resourceVersion %s was applied" % rv)
        return 1
    except ApiException as e:
        print("stale resourceVersion: ApiException %s" % e.status)
        if e.status != 409:
            return 1
    api.patch_cluster_custom_object(GROUP, VERSION, "gatewayclasses", name,
                                    {"metadata": {"finalizers": None}})
    try:
        api.get_cluster_custom_object(GROUP, VERSION, "gatewayclasses", name)
        print("still there after its last finalizer was removed")
        return 1
    except ApiException as e:
        print("after the finalizer went: ApiException %s" % e.status)
        return 0 if e.status == 404 else 1


def main():
    kubeconfig, what = sys.argv[1], sys.argv[2]
    if what == "watch":
        return check_watch(kubeconfig, sys.argv[3], sys.argv[4])
    if what == "pages":
        return check_pages(kubeconfig)
    if what == "gone":
        return check_gone(kubeconfig, sys.argv[3], sys.argv[4])
    if what == "badtoken":
        return check_badtoken(kubeconfig)
    if what == "finalizer":
        return check_finalizer(kubeconfig, sys.argv[3])
    print("unknown check " + what)
    return 2


if __name__ == "__main__":
    sys.exit(main())
