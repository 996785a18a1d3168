/*
 * test_gw_addresses.c — a Gateway's status.addresses: from k8s.gateway_addresses when it
 * is set, else from the data plane's Services labelled gateway.networking.k8s.io/
 * gateway-name in the Gateway's namespace (tests/k8s/fixtures/gateway-addresses.yaml),
 * and what happens to a Gateway whose spec.addresses asks for one it does not have.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/k8s/gw.h"
#include "tests/unit/k8s/gw_fixture.h"

static const gw_options NO_ADDRESSES = {0};

static fx_run *run(const gw_options *opts)
{
    static fx_run r;
    const char *files[] = {"gateway-addresses.yaml", NULL};
    fx_translate(&r, files, opts);
    return &r;
}

static void expect(const fx_run *r, const char *gw, const char *addrs, const char *programmed,
                   const char *reason, json_int_t gen)
{
    const json_t *st = fx_status(r, GW_GATEWAY, FX_NS, gw);
    if (addrs == NULL) {
        assert_null(json_object_get(st, "addresses"));
    } else {
        json_t *want = tl_json(addrs);
        tl_assert_json_equal(json_object_get(st, "addresses"), want);
        json_decref(want);
    }
    fx_cond(json_object_get(st, "conditions"), "Accepted", "True", "Accepted", gen);
    fx_cond(json_object_get(st, "conditions"), "Programmed", programmed, reason, gen);
}

TL_TEST(test_from_services)
{
    fx_run *r = run(&NO_ADDRESSES);
    /* A load balancer's ingress: its IP and its host name, not the cluster IP. */
    expect(r, "lb-ready",
           "[{'type': 'IPAddress', 'value': '198.51.100.20'},"
           " {'type': 'Hostname', 'value': 'lb.example.net'}]",
           "True", "Programmed", 1);
    /* A cluster IP Service: its external IP, then both cluster IPs; the Service of the
     * same name and label in another namespace does not count. */
    expect(r, "cluster-ip",
           "[{'type': 'IPAddress', 'value': '203.0.113.5'},"
           " {'type': 'IPAddress', 'value': '10.96.0.12'},"
           " {'type': 'IPAddress', 'value': 'fd00:10:96::12'}]",
           "True", "Programmed", 1);
    /* A spec address its Service has is fine. */
    expect(r, "wants-own", "[{'type': 'IPAddress', 'value': '10.96.0.13'}]", "True", "Programmed",
           1);
    /* No data-plane Service: no addresses (proxyless clients need none), programmed. */
    expect(r, "no-proxy-service", NULL, "True", "Programmed", 1);
    /* A requested address nothing gives. */
    expect(r, "wants-other", NULL, "False", "AddressNotUsable", 3);
    const json_t *c =
        fx_cond(json_object_get(fx_status(r, GW_GATEWAY, FX_NS, "wants-other"), "conditions"),
                "Programmed", "False", "AddressNotUsable", 3);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")), "198.51.100.99"));
    fx_run_free(r);
}

TL_TEST(test_load_balancer_pending)
{
    fx_run *r = run(&NO_ADDRESSES);
    expect(r, "lb-pending", NULL, "False", "AddressNotAssigned", 2);
    const json_t *c =
        fx_cond(json_object_get(fx_status(r, GW_GATEWAY, FX_NS, "lb-pending"), "conditions"),
                "Programmed", "False", "AddressNotAssigned", 2);
    assert_non_null(
        strstr(json_string_value(json_object_get(c, "message")), FX_NS "/lb-pending-proxy"));
    /* Its configuration is still built: the proxies serve, only the address is missing. */
    const gw_gateway_out *g = fx_gateway(r, FX_NS, "lb-pending");
    assert_null(g->error);
    assert_non_null(g->spec);
    fx_run_free(r);
}

TL_TEST(test_configured_addresses_win)
{
    fx_run *r = run(NULL); /* k8s.gateway_addresses = [192.0.2.10] */
    const char *one = "[{'type': 'IPAddress', 'value': '192.0.2.10'}]";
    expect(r, "lb-ready", one, "True", "Programmed", 1);
    expect(r, "lb-pending", one, "True", "Programmed", 2);
    expect(r, "no-proxy-service", one, "True", "Programmed", 1);
    /* The Service's address is not one of the configured ones. */
    expect(r, "wants-own", one, "False", "AddressNotUsable", 1);
    fx_run_free(r);
}

TL_MAIN()
