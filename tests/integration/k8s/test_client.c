/*
 * test_client.c — the Kubernetes client against the test API server (tests/k8s, started
 * by tests/lib/k8s.sh over HTTPS with a bearer token), with changes made by kubectl:
 *
 *   - the first list (in pages of two) fills the map with what the server holds, and a
 *     kind whose CRD is not applied yet is reported missing without holding readiness;
 *   - ADDED, MODIFIED and DELETED made with kubectl reach the map;
 *   - the server cuts every watch: the client watches again from where it was, and the
 *     changes made meanwhile arrive (no relist);
 *   - history is compacted while the client is away, and the server restarts with a new
 *     resourceVersion history: each time the client relists (counted) and the map
 *     converges to the server's content;
 *   - the CRD is applied: its kind is listed and watched;
 *   - a status written with a merge patch on /status is what kubectl then reads, and
 *     comes back through the watch;
 *   - the in-cluster configuration (service account files, KUBERNETES_SERVICE_HOST/PORT)
 *     reaches the same server.
 *
 * Secrets are watched through a field selector: only TLS ones reach their map.
 *
 * The map is compared with `kubectl get -A -o json` of the same kind: the keys and every
 * object's resourceVersion must match.
 */
#include "tests/lib/testlib.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/mem.h"
#include "server/base/metrics.h"
#include "server/k8s/client.h"
#include "server/k8s/http.h"

/* The longest a step waits for the client to converge before the test fails. */
#define WAIT_MS 30000

static const char HTTPROUTE_CRD[] =
    "apiVersion: apiextensions.k8s.io/v1\n"
    "kind: CustomResourceDefinition\n"
    "metadata: {name: httproutes.gateway.networking.k8s.io}\n"
    "spec:\n"
    "  group: gateway.networking.k8s.io\n"
    "  scope: Namespaced\n"
    "  names: {kind: HTTPRoute, listKind: HTTPRouteList, plural: httproutes, singular: "
    "httproute}\n"
    "  versions:\n"
    "  - name: v1\n"
    "    served: true\n"
    "    storage: true\n"
    "    subresources: {status: {}}\n"
    "    schema:\n"
    "      openAPIV3Schema:\n"
    "        type: object\n"
    "        x-kubernetes-preserve-unknown-fields: true\n";

typedef struct rig {
    char dir[64];
    k8s_cfg *cfg;
    wm_table *maps;
    wm_map *services, *routes;
    sx_metrics *metrics;
    k8s_client *client;
} rig;

static rig R;

/* ---------------------------------------------------------------- shell helpers */

/* Runs a shell command line (printf format) and returns its standard output; fails the
 * test when it exits non-zero. The caller frees the result. */
static char *run(const char *fmt, ...) SX_PRINTF(1, 2);
static char *run(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char cmd[4096];
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    sx_buf out = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
        sx_buf_append(&out, buf, n);
    int rc = pclose(p);
    if (rc != 0)
        fail_msg("`%s` exited with %d:\n%s", cmd, rc, sx_buf_cstr(&out));
    return out.data ? sx_buf_steal(&out) : sx_strdup("");
}

/* k8s.sh's function with args, for the server in R.dir. */
static void k8s_sh(const char *fn, const char *args)
{
    sx_free(run("bash -c 'source \"%s/tests/lib/k8s.sh\" && %s \"%s\" %s' 2>&1",
                tl_env("SEXTANT_SOURCE_DIR"), fn, R.dir, args));
}

/* kubectl with the server's kubeconfig; the manifest (NULL: none) goes to its input. */
static char *kubectl(const char *manifest, const char *args)
{
    char path[128] = "";
    if (manifest) {
        snprintf(path, sizeof(path), "%s/manifest.yaml", R.dir);
        tl_write_file(path, manifest);
    }
    return run("kubectl --kubeconfig '%s/kubeconfig' --cache-dir '%s/kube-cache' %s%s%s 2>&1",
               R.dir, R.dir, args, manifest ? " -f " : "", path);
}

/* ---------------------------------------------------------------- waiting */

static double relists(const char *kind)
{
    const char *labels[] = {kind};
    sx_metric *m = sx_metrics_counter(R.metrics, "sextant_k8s_relists_total", "", "kind");
    return sx_metric_value(m, labels);
}

/* Whether map holds exactly the objects of `kubectl get <resource> -A` (keys and
 * resourceVersions); *why says what differs. */
static bool converged(wm_map *map, const char *resource, char *why, size_t whylen)
{
    char args[128];
    snprintf(args, sizeof(args), "get %s -A -o json", resource);
    char *text = kubectl(NULL, args);
    json_t *list = json_loads(text, 0, NULL);
    sx_free(text);
    assert_non_null(list);
    json_t *items = json_object_get(list, "items");
    wm_state *s = wm_map_load_all(map);
    bool ok = json_array_size(items) == s->n;
    snprintf(why, whylen, "the server has %zu %s, the map %zu", json_array_size(items), resource,
             s->n);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        char *key = wm_key_of(it);
        long at = wm_state_find(s, key);
        const char *want =
            json_string_value(json_object_get(json_object_get(it, "metadata"), "resourceVersion"));
        const char *got =
            at < 0 ? NULL
                   : json_string_value(json_object_get(json_object_get(s->values[at], "metadata"),
                                                       "resourceVersion"));
        if (got == NULL || strcmp(got, want) != 0) {
            snprintf(why, whylen, "%s: the server has resourceVersion %s, the map %s", key, want,
                     got ? got : "nothing");
            ok = false;
        }
        sx_free(key);
    }
    wm_state_release(s);
    json_decref(list);
    return ok;
}

/* Waits until the map equals the server's content of resource. */
static void wait_converged(wm_map *map, const char *resource)
{
    int64_t deadline = sx_monotonic_ms() + WAIT_MS;
    char why[512];
    uint64_t gen = wm_table_generation(R.maps);
    while (!converged(map, resource, why, sizeof(why))) {
        int64_t left = deadline - sx_monotonic_ms();
        if (left <= 0)
            fail_msg("the %s map did not converge in %d ms: %s", resource, WAIT_MS, why);
        /* Between two looks the map must change (or the wait times out). */
        gen = wm_table_wait(R.maps, gen, left);
    }
}

/* Waits until key is in map (present) or not (!present). */
static void wait_key(wm_map *map, const char *key, bool present)
{
    int64_t deadline = sx_monotonic_ms() + WAIT_MS;
    uint64_t gen = wm_table_generation(R.maps);
    for (;;) {
        json_t *v = wm_get(map, key);
        json_decref(v);
        if ((v != NULL) == present)
            return;
        int64_t left = deadline - sx_monotonic_ms();
        if (left <= 0)
            fail_msg("%s is %s the map after %d ms", key, present ? "not in" : "still in", WAIT_MS);
        gen = wm_table_wait(R.maps, gen, left);
    }
}

static const char *label_of(wm_map *map, const char *key, const char *label, char *out,
                            size_t outlen)
{
    json_t *v = wm_get(map, key);
    const char *l = json_string_value(
        json_object_get(json_object_get(json_object_get(v, "metadata"), "labels"), label));
    snprintf(out, outlen, "%s", l ? l : "");
    json_decref(v);
    return out;
}

/* ---------------------------------------------------------------- setup */

static int setup(void **state)
{
    (void)state;
    snprintf(R.dir, sizeof(R.dir), "/tmp/sx-k8s-itXXXXXX");
    assert_non_null(mkdtemp(R.dir));
    k8s_sh("k8s_start", "");
    char kc[128];
    snprintf(kc, sizeof(kc), "%s/kubeconfig", R.dir);
    TL_OK(k8s_cfg_from_kubeconfig(kc, NULL, &R.cfg, &e_));
    R.maps = wm_table_create();
    R.metrics = sx_metrics_create();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    k8s_client_destroy(R.client);
    k8s_sh("k8s_stop", "");
    wm_table_destroy(R.maps);
    sx_metrics_destroy(R.metrics);
    k8s_cfg_free(R.cfg);
    sx_free(run("rm -rf '%s'", R.dir));
    return 0;
}

/* ---------------------------------------------------------------- steps */

TL_TEST(test_first_list)
{
    sx_free(kubectl("apiVersion: v1\nkind: Namespace\nmetadata: {name: it}\n---\n"
                    "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: it}\n"
                    "spec: {ports: [{port: 80}]}\n---\n"
                    "apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: it}\n"
                    "spec: {ports: [{port: 80}]}\n---\n"
                    "apiVersion: v1\nkind: Service\nmetadata: {name: c, namespace: it}\n"
                    "spec: {ports: [{port: 80}]}\n---\n"
                    "apiVersion: v1\nkind: Secret\nmetadata: {name: cert, namespace: it}\n"
                    "type: kubernetes.io/tls\nstringData: {tls.crt: c, tls.key: k}\n---\n"
                    "apiVersion: v1\nkind: Secret\nmetadata: {name: password, namespace: it}\n"
                    "stringData: {password: hunter2}\n",
                    "apply"));
    /* The client borrows its kinds for its whole life. */
    static k8s_kind kinds[3];
    kinds[0] = *k8s_kind_find("Service");
    kinds[1] = *k8s_kind_find("HTTPRoute");
    kinds[2] = *k8s_kind_find("Secret");
    k8s_client_options opt = {.cfg = R.cfg,
                              .maps = R.maps,
                              .kinds = kinds,
                              .nkinds = 3,
                              .metrics = R.metrics,
                              .page_size = 2,
                              .watch_timeout_s = 60,
                              .backoff_min_ms = 50,
                              .backoff_max_ms = 1000,
                              .missing_retry_ms = 200};
    TL_OK(k8s_client_create(&opt, &R.client, &e_));
    R.services = wm_table_find(R.maps, "Service");
    R.routes = wm_table_find(R.maps, "HTTPRoute");
    TL_OK(k8s_client_start(R.client, &e_));
    /* Synced although HTTPRoute is not served: its CRD is not applied yet. */
    assert_true(k8s_client_wait_synced(R.client, WAIT_MS));
    char why[512];
    if (!converged(R.services, "services", why, sizeof(why)))
        fail_msg("after the first list: %s", why);
    assert_true(wm_size(R.services) >= 3);
    assert_int_equal(wm_size(R.routes), 0);
    assert_int_equal(k8s_client_kind_state(R.client, "HTTPRoute") == K8S_KIND_MISSING ||
                         k8s_client_kind_state(R.client, "HTTPRoute") == K8S_KIND_LISTING,
                     1);
    /* Only TLS Secrets are listed (a field selector on type). */
    wm_map *secrets = wm_table_find(R.maps, "Secret");
    json_t *cert = wm_get(secrets, "it/cert");
    assert_non_null(cert);
    json_decref(cert);
    assert_null(wm_get(secrets, "it/password"));
    json_t *a = wm_get(R.services, "it/a");
    assert_string_equal(json_string_value(json_object_get(a, "kind")), "Service");
    assert_string_equal(json_string_value(json_object_get(a, "apiVersion")), "v1");
    assert_null(json_object_get(json_object_get(a, "metadata"), "managedFields"));
    json_decref(a);
}

/* After changes that deleted Service gone and labelled Service key tier=tier: the map
 * loses gone, converges on the API server's list and holds the new label. */
static void expect_services_after(const char *gone, const char *key, const char *tier)
{
    wait_key(R.services, gone, false);
    wait_converged(R.services, "services");
    char l[64];
    assert_string_equal(label_of(R.services, key, "tier", l, sizeof(l)), tier);
}

TL_TEST(test_watch_changes)
{
    sx_free(kubectl(NULL, "create service clusterip d -n it --tcp=80"));
    sx_free(kubectl(NULL, "label service a -n it tier=web"));
    sx_free(kubectl(NULL, "delete service b -n it"));
    expect_services_after("it/b", "it/a", "web");
    wait_key(R.services, "it/d", true);
    assert_true(relists("Service") == 0);
}

TL_TEST(test_dropped_watches_resume)
{
    k8s_sh("k8s_ctl", "drop-watches");
    /* Made while the client may be reconnecting: the next watch replays them. */
    sx_free(kubectl(NULL, "create service clusterip e -n it --tcp=80"));
    sx_free(kubectl(NULL, "delete service c -n it"));
    sx_free(kubectl(NULL, "label service d -n it tier=api"));
    expect_services_after("it/c", "it/d", "api");
    assert_true(relists("Service") == 0);
}

TL_TEST(test_compaction_and_restart_relist)
{
    /* Away while history is compacted: the resourceVersion held is 410 Gone. */
    k8s_client_stop(R.client);
    sx_free(kubectl(NULL, "create service clusterip f -n it --tcp=80"));
    sx_free(kubectl(NULL, "delete service d -n it"));
    k8s_sh("k8s_ctl", "compact");
    TL_OK(k8s_client_start(R.client, &e_));
    wait_key(R.services, "it/d", false);
    wait_converged(R.services, "services");
    assert_true(relists("Service") == 1);

    /* A restored etcd: a new history, every watch cut, every resourceVersion 410. */
    k8s_sh("k8s_ctl", "restart");
    sx_free(kubectl(NULL, "create service clusterip g -n it --tcp=80"));
    wait_key(R.services, "it/g", true);
    wait_converged(R.services, "services");
    assert_true(relists("Service") == 2);
}

TL_TEST(test_crd_applied_later)
{
    sx_free(kubectl(HTTPROUTE_CRD, "apply"));
    sx_free(kubectl("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
                    "metadata: {name: web, namespace: it}\n"
                    "spec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{name: a, port: "
                    "80}]}]}\n",
                    "apply"));
    wait_key(R.routes, "it/web", true);
    wait_converged(R.routes, "httproutes");
    json_t *r = wm_get(R.routes, "it/web");
    assert_string_equal(json_string_value(json_object_get(r, "apiVersion")),
                        "gateway.networking.k8s.io/v1");
    json_decref(r);
}

TL_TEST(test_status_write_back)
{
    json_t *status = tl_json("{'parents':[{'parentRef':{'name':'gw'},'controllerName':"
                             "'sextant.dev/gateway-controller','conditions':[{'type':'Accepted',"
                             "'status':'True','reason':'Accepted','message':'',"
                             "'observedGeneration':1,'lastTransitionTime':"
                             "'2026-01-01T00:00:00Z'}]}]}");
    sx_err e;
    sx_err_clear(&e);
    int rc = k8s_patch_status(R.client, "HTTPRoute", "it", "web", status, NULL, &e);
    if (rc != 200)
        tl_fail_err("k8s_patch_status", rc, &e);
    char *got = kubectl(NULL, "get httproute web -n it -o jsonpath={.status.parents[0]."
                              "controllerName}/{.status.parents[0].conditions[0].type}");
    assert_string_equal(got, "sextant.dev/gateway-controller/Accepted");
    sx_free(got);
    /* The status comes back through the watch. */
    wait_converged(R.routes, "httproutes");
    json_t *r = wm_get(R.routes, "it/web");
    tl_assert_json_equal(json_object_get(r, "status"), status);
    json_decref(r);

    /* An object that is not there: 404 and the server's Status message. */
    rc = k8s_patch_status(R.client, "HTTPRoute", "it", "nope", status, NULL, &e);
    assert_int_equal(rc, 404);
    assert_int_equal(e.code, SX_ENOTFOUND);
    assert_non_null(strstr(e.message, "\"nope\" not found"));
    json_decref(status);
}

/* The pod's view: the service account files k8s_start writes, under a root of their
 * own, and the API server's address in the environment. */
TL_TEST(test_in_cluster_config)
{
    char *url = run("cat '%s/url'", R.dir);
    char host[64], port[16];
    assert_int_equal(sscanf(url, "https://%63[^:]:%15[0-9]", host, port), 2);
    sx_free(url);
    sx_free(run("mkdir -p '%s/pod/var/run/secrets/kubernetes.io' && ln -s '%s/serviceaccount' "
                "'%s/pod%s'",
                R.dir, R.dir, R.dir, K8S_SA_DIR));
    setenv("KUBERNETES_SERVICE_HOST", host, 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    char root[128];
    snprintf(root, sizeof(root), "%s/pod", R.dir);
    k8s_cfg *c;
    TL_OK(k8s_cfg_in_cluster(root, &c, &e_));
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    json_t *ns = NULL;
    sx_err e;
    sx_err_clear(&e);
    int rc = k8s_http_request(NULL, c, "GET", "/api/v1/namespaces/it", NULL, NULL, &ns, &e);
    if (rc != 200)
        tl_fail_err("GET /api/v1/namespaces/it in-cluster", rc, &e);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ns, "metadata"), "name")),
                        "it");
    json_decref(ns);
    k8s_cfg_free(c);
}

TL_MAIN_GROUP(setup, teardown)
