/*
 * translate_fx.c — the fixture of the translator's tests (see translate_fx.h).
 */
#include "tests/lib/translate_fx.h"

#include <stdio.h>

#include "server/ir/ir.h"

int tl_translate(const char *ir_text, tr_resources **out, sx_err *err)
{
    json_t *j = tl_json(ir_text);
    sx_fielderrs errs = {0};
    ir_snapshot *ir = NULL;
    assert_int_equal(ir_snapshot_from_json(j, NULL, &ir, &errs), 0);
    json_decref(j);
    sx_err_clear(err);
    int rc = tr_resources_build(ir, "edge", 1, out, err);
    ir_snapshot_free(ir);
    return rc;
}

tr_resources *tl_translated(const char *ir_text)
{
    tr_resources *r = NULL;
    sx_err err;
    int rc = tl_translate(ir_text, &r, &err);
    if (rc != 0)
        tl_fail_err("tr_resources_build", rc, &err);
    return r;
}

ProtobufCMessage *tl_unpack_any(const Google__Protobuf__Any *any,
                                const ProtobufCMessageDescriptor *d)
{
    assert_non_null(any);
    char want[256];
    snprintf(want, sizeof want, "type.googleapis.com/%s", d->name);
    assert_string_equal(any->type_url, want);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, any->value.len, any->value.data);
    assert_non_null(m);
    return m;
}

/* Resource name of type t in r, decoded as d (it must be there). */
static ProtobufCMessage *decoded(const tr_resources *r, tr_type t, const char *name,
                                 const ProtobufCMessageDescriptor *d)
{
    const tr_resource *x = tr_resources_find(r, t, name);
    assert_non_null(x);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, x->len, x->bytes);
    assert_non_null(m);
    return m;
}

Envoy__Config__Listener__V3__Listener *tl_listener(const tr_resources *r, const char *name)
{
    return (Envoy__Config__Listener__V3__Listener *)decoded(
        r, TR_LDS, name, &envoy__config__listener__v3__listener__descriptor);
}

Hcm *tl_hcm_of(const tr_resources *r, const char *listener)
{
    Envoy__Config__Listener__V3__Listener *l = tl_listener(r, listener);
    Hcm *h = (Hcm *)tl_unpack_any(
        l->filter_chains[0]->filters[0]->typed_config,
        &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);
    return h;
}

ProtobufCMessage *tl_http_filter_before_router(const tr_resources *r, const char *listener,
                                               const char *filter,
                                               const ProtobufCMessageDescriptor *d)
{
    Hcm *h = tl_hcm_of(r, listener);
    assert_int_equal(h->n_http_filters, 2);
    assert_string_equal(h->http_filters[0]->name, filter);
    assert_true(h->http_filters[0]->is_optional);
    assert_string_equal(h->http_filters[1]->name, "envoy.filters.http.router");
    ProtobufCMessage *m = tl_unpack_any(h->http_filters[0]->typed_config, d);
    protobuf_c_message_free_unpacked(&h->base, NULL);
    return m;
}

Envoy__Config__Route__V3__RouteConfiguration *tl_route_config(const tr_resources *r,
                                                              const char *name)
{
    return (Envoy__Config__Route__V3__RouteConfiguration *)decoded(
        r, TR_RDS, name, &envoy__config__route__v3__route_configuration__descriptor);
}

ProtobufCMessage *tl_route_filter(const Envoy__Config__Route__V3__Route *route, const char *filter,
                                  const ProtobufCMessageDescriptor *d)
{
    assert_int_equal(route->n_typed_per_filter_config, 1);
    assert_string_equal(route->typed_per_filter_config[0]->key, filter);
    Envoy__Config__Route__V3__FilterConfig *fc =
        (Envoy__Config__Route__V3__FilterConfig *)tl_unpack_any(
            route->typed_per_filter_config[0]->value,
            &envoy__config__route__v3__filter_config__descriptor);
    assert_true(fc->is_optional);
    ProtobufCMessage *m = tl_unpack_any(fc->config, d);
    protobuf_c_message_free_unpacked(&fc->base, NULL);
    return m;
}
