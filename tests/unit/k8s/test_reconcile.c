/*
 * test_reconcile.c — the per-object reconcile bookkeeping and the finalizer guard: which
 * objects a pass reconciles, requeue delays doubling to the maximum and reset by a
 * success, each object on its own time, objects gone forgotten, the metrics; a status's
 * problem found; a GatewayClass's finalizer added, held while Gateways use it (with the
 * condition naming them) and removed when none does.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/metrics.h"
#include "server/k8s/finalizer.h"
#include "server/k8s/reconcile.h"
#include "server/k8s/watchmap.h"

static json_t *fp(const char *s)
{
    return json_pack("{s:s}", "status", s);
}

TL_TEST(test_backoff_doubles_to_the_maximum)
{
    sx_metrics *m = sx_metrics_create();
    k8s_rec *r = k8s_rec_create(m, 1000, 4000);
    int64_t now = 0;
    k8s_rec_begin(r);
    assert_true(k8s_rec_wanted(r, "Gateway", "shop/a", fp("x"), false, now, false)); /* new */
    assert_true(k8s_rec_wanted(r, "Gateway", "shop/b", fp("y"), false, now, false));
    assert_int_equal(k8s_rec_done(r, "Gateway", "shop/a", K8S_REC_INVALID, "bad", now), 1000);
    assert_int_equal(k8s_rec_done(r, "Gateway", "shop/b", K8S_REC_SUCCESS, NULL, now), 0);
    k8s_rec_end(r);
    assert_int_equal(k8s_rec_next_due(r), 1000);

    /* Nothing changed, not due yet: neither is reconciled; b is unaffected by a. */
    int64_t want[] = {2000, 4000, 4000, 4000};
    for (int i = 0; i < 4; i++) {
        k8s_rec_begin(r);
        assert_false(k8s_rec_wanted(r, "Gateway", "shop/a", fp("x"), true, now + 1, false));
        assert_false(k8s_rec_wanted(r, "Gateway", "shop/b", fp("y"), false, now + 1, false));
        k8s_rec_end(r);
        now = k8s_rec_next_due(r);
        k8s_rec_begin(r);
        assert_true(k8s_rec_wanted(r, "Gateway", "shop/a", fp("x"), false, now, false));
        assert_false(k8s_rec_wanted(r, "Gateway", "shop/b", fp("y"), false, now, false));
        assert_int_equal(k8s_rec_done(r, "Gateway", "shop/a", K8S_REC_ERROR, "down", now), want[i]);
        k8s_rec_end(r);
    }
    assert_int_equal(k8s_rec_failures(r, "Gateway", "shop/a"), 5);

    /* A change reconciles it at once; success forgets the failures. */
    k8s_rec_begin(r);
    assert_true(k8s_rec_wanted(r, "Gateway", "shop/a", fp("x2"), false, now + 1, false));
    assert_int_equal(k8s_rec_done(r, "Gateway", "shop/a", K8S_REC_SUCCESS, NULL, now + 1), 0);
    assert_false(k8s_rec_wanted(r, "Gateway", "shop/b", fp("y"), false, now + 1, false));
    k8s_rec_end(r);
    assert_int_equal(k8s_rec_failures(r, "Gateway", "shop/a"), 0);
    assert_true(k8s_rec_next_due(r) == INT64_MAX);

    /* Dirty and not waiting: reconciled; a pass with all: everything. */
    k8s_rec_begin(r);
    assert_true(k8s_rec_wanted(r, "Gateway", "shop/a", fp("x2"), true, now + 2, false));
    assert_true(k8s_rec_wanted(r, "Gateway", "shop/b", fp("y"), false, now + 2, true));
    k8s_rec_end(r);

    /* Gone from a pass: forgotten. */
    k8s_rec_begin(r);
    assert_false(k8s_rec_wanted(r, "Gateway", "shop/b", fp("y"), false, now + 3, false));
    k8s_rec_end(r);
    k8s_rec_begin(r);
    assert_true(k8s_rec_wanted(r, "Gateway", "shop/a", fp("x2"), false, now + 4, false));
    k8s_rec_end(r);

    const char *inv[] = {"Gateway", "invalid"}, *err[] = {"Gateway", "error"},
               *ok[] = {"Gateway", "success"}, *kind[] = {"Gateway"};
    sx_metric *total = sx_metrics_counter(m, "sextant_k8s_reconcile_total", "", "kind,result");
    sx_metric *requeues = sx_metrics_counter(m, "sextant_k8s_requeues_total", "", "kind");
    assert_int_equal((int)sx_metric_value(total, inv), 1);
    assert_int_equal((int)sx_metric_value(total, err), 4);
    assert_int_equal((int)sx_metric_value(total, ok), 2);
    assert_int_equal((int)sx_metric_value(requeues, kind), 5);
    k8s_rec_destroy(r);
    sx_metrics_destroy(m);
}

TL_TEST(test_status_problem)
{
    char why[512];
    json_t *ok = json_pack("{s:[{s:s,s:s,s:s}]}", "conditions", "type", "Accepted", "status",
                           "True", "reason", "Accepted");
    assert_false(k8s_rec_status_problem(ok, "sextant.dev/gateway-controller", why, sizeof why));
    json_t *gw = json_pack(
        "{s:[{s:s,s:s,s:s,s:s}],s:[{s:s,s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}]}", "conditions",
        "type", "Programmed", "status", "False", "reason", "Invalid", "message", "no listener",
        "listeners", "name", "https", "conditions", "type", "Programmed", "status", "False",
        "reason", "Invalid", "message", "m", "type", "ResolvedRefs", "status", "False", "reason",
        "InvalidCertificateRef", "message", "not a certificate");
    assert_true(k8s_rec_status_problem(gw, "sextant.dev/gateway-controller", why, sizeof why));
    assert_string_equal(why, "listener https: ResolvedRefs=False (InvalidCertificateRef): not a "
                             "certificate");
    /* Another controller's parent entry is not ours to judge. */
    json_t *route = json_pack("{s:[{s:s,s:{s:s,s:s},s:[{s:s,s:s,s:s,s:s}]}]}", "parents",
                              "controllerName", "example.com/other", "parentRef", "name", "gw",
                              "namespace", "shop", "conditions", "type", "Accepted", "status",
                              "False", "reason", "NotAllowedByListeners", "message", "no");
    assert_false(k8s_rec_status_problem(route, "sextant.dev/gateway-controller", why, sizeof why));
    assert_true(k8s_rec_status_problem(route, "example.com/other", why, sizeof why));
    assert_string_equal(why, "Gateway shop/gw: Accepted=False (NotAllowedByListeners): no");
    json_decref(ok);
    json_decref(gw);
    json_decref(route);
}

static json_t *klass(const char *controller, const char *finalizer, bool deleting)
{
    json_t *o = json_pack("{s:{s:s,s:s},s:{s:s}}", "metadata", "name", "sextant", "resourceVersion",
                          "7", "spec", "controllerName", controller);
    json_t *meta = json_object_get(o, "metadata");
    if (finalizer)
        json_object_set_new(meta, "finalizers", json_pack("[s,s]", "example.com/x", finalizer));
    if (deleting)
        json_object_set_new(meta, "deletionTimestamp", json_string("2026-11-26T10:00:00Z"));
    return o;
}

TL_TEST(test_gateway_class_finalizer)
{
    const char *ours = "sextant.dev/gateway-controller";
    k8s_fin_guard g = k8s_fin_gateway_class(&ours);
    wm_table *t = wm_table_create();
    wm_map *gws = wm_table_add(t, "Gateway");
    assert_int_equal(wm_store(gws, "shop/web",
                              json_pack("{s:{s:s,s:s},s:{s:s}}", "metadata", "namespace", "shop",
                                        "name", "web", "spec", "gatewayClassName", "sextant")),
                     1);
    assert_int_equal(wm_store(gws, "shop/other",
                              json_pack("{s:{s:s,s:s},s:{s:s}}", "metadata", "namespace", "shop",
                                        "name", "other", "spec", "gatewayClassName", "else")),
                     1);
    wm_table_state *ts = wm_table_load_all(t);
    json_t *holders = NULL;

    json_t *fresh = klass(ours, NULL, false);
    assert_int_equal(k8s_fin_judge(&g, fresh, ts, &holders), K8S_FIN_ADD);
    json_decref(holders);
    json_t *p = k8s_fin_patch(fresh, K8S_FIN_ADD);
    char *dump = json_dumps(p, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(dump, "{\"metadata\":{\"finalizers\":[\"sextant.dev/finalizer\"],"
                              "\"resourceVersion\":\"7\"}}");
    free(dump);
    json_decref(p);

    json_t *held = klass(ours, K8S_FINALIZER, true);
    assert_int_equal(k8s_fin_judge(&g, held, ts, &holders), K8S_FIN_HOLD);
    assert_int_equal(json_array_size(holders), 1);
    assert_string_equal(json_string_value(json_array_get(holders, 0)), "Gateway shop/web");
    json_t *status = json_object();
    k8s_fin_condition(status, NULL, K8S_FIN_HOLD, holders, 3, "2026-11-26T10:00:01Z");
    json_t *c = json_array_get(json_object_get(status, "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "type")), K8S_FIN_CONDITION);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "InUse");
    assert_string_equal(json_string_value(json_object_get(c, "message")),
                        "deletion waits for 1 object still using it: Gateway shop/web");
    json_decref(holders);

    /* Nothing uses it any more: the finalizer goes, the other one stays. */
    assert_int_equal(wm_delete(gws, "shop/web"), 1);
    wm_table_state_free(ts);
    ts = wm_table_load_all(t);
    assert_int_equal(k8s_fin_judge(&g, held, ts, &holders), K8S_FIN_REMOVE);
    json_decref(holders);
    p = k8s_fin_patch(held, K8S_FIN_REMOVE);
    dump = json_dumps(p, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(dump, "{\"metadata\":{\"finalizers\":[\"example.com/x\"],"
                              "\"resourceVersion\":\"7\"}}");
    free(dump);
    json_decref(p);
    k8s_fin_condition(status, NULL, K8S_FIN_REMOVE, NULL, 3, "2026-11-26T10:00:02Z");
    assert_null(json_object_get(status, "conditions"));

    /* Not ours but with our finalizer: it goes; not ours without: nothing. */
    json_t *foreign = klass("example.com/other", K8S_FINALIZER, false);
    assert_int_equal(k8s_fin_judge(&g, foreign, ts, &holders), K8S_FIN_REMOVE);
    json_decref(holders);
    json_t *plain = klass("example.com/other", NULL, true);
    assert_int_equal(k8s_fin_judge(&g, plain, ts, &holders), K8S_FIN_NONE);
    json_decref(holders);

    json_decref(fresh);
    json_decref(held);
    json_decref(foreign);
    json_decref(plain);
    json_decref(status);
    wm_table_state_free(ts);
    wm_table_destroy(t);
}

TL_MAIN()
