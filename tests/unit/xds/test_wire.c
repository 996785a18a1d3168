/*
 * test_wire.c — responses assembled from shared slices decode as the Envoy and
 * gateway.control.v1 messages they claim to be (server/xds/wire.c). The real clients
 * of the conformance tests check the same bytes against upstream's own decoders.
 */
#include "tests/lib/testlib.h"

#include <grpc/grpc.h>
#include <string.h>

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "gateway/control/v1/control.pb-c.h"
#include "server/xds/control.h"
#include "server/xds/wire.h"
#include "tests/unit/xds/xds_fixture.h"

#define CDS_URL "type.googleapis.com/envoy.config.cluster.v3.Cluster"

static int setup(void **state)
{
    (void)state;
    grpc_init();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    grpc_shutdown_blocking();
    return 0;
}

/* Reads bb into a new buffer (caller frees) and destroys bb. */
static uint8_t *take(grpc_byte_buffer *bb, size_t *len)
{
    grpc_slice s;
    assert_true(xds_wire_read(bb, &s));
    *len = GRPC_SLICE_LENGTH(s);
    uint8_t *out = sx_malloc(*len ? *len : 1);
    memcpy(out, GRPC_SLICE_START_PTR(s), *len);
    grpc_slice_unref(s);
    grpc_byte_buffer_destroy(bb);
    return out;
}

/* Decodes bb (destroyed) as a message of descriptor d; fails the test when it does not
 * decode. The caller frees the message with its free_unpacked. */
static void *unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d)
{
    size_t len;
    uint8_t *buf = take(bb, &len);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, buf);
    sx_free(buf);
    assert_non_null(m);
    return m;
}

static Envoy__Service__Discovery__V3__DiscoveryResponse *sotw_msg(grpc_byte_buffer *bb)
{
    return unpack(bb, &envoy__service__discovery__v3__discovery_response__descriptor);
}

static Envoy__Service__Discovery__V3__DeltaDiscoveryResponse *delta_msg(grpc_byte_buffer *bb)
{
    return unpack(bb, &envoy__service__discovery__v3__delta_discovery_response__descriptor);
}

static Gateway__Control__V1__DiscoveryResponse *control_msg(grpc_byte_buffer *bb)
{
    return unpack(bb, &gateway__control__v1__discovery_response__descriptor);
}

/* The shared slices of a snapshot built from fx_res(version, spec). */
static xds_wire_res *wire_res(long long version, const char *spec)
{
    tr_resources *r = fx_res(version, spec);
    xds_wire_res *w = xds_wire_res_create(r);
    tr_resources_unref(r); /* w holds its own reference */
    return w;
}

static void assert_any(const Google__Protobuf__Any *a, const tr_resource *x)
{
    assert_string_equal(a->type_url, CDS_URL);
    assert_int_equal(a->value.len, x->len);
    assert_memory_equal(a->value.data, x->bytes, x->len);
}

TL_TEST(test_sotw_response)
{
    xds_wire_res *w = wire_res(7, "cds:a=1,b=2,c=3");

    uint32_t idx[] = {0, 2};
    Envoy__Service__Discovery__V3__DiscoveryResponse *m =
        sotw_msg(xds_wire_sotw_response(w, TR_CDS, 7, "00000000000000ab", idx, 2, "sextant/r1"));
    assert_string_equal(m->version_info, "7");
    assert_string_equal(m->type_url, CDS_URL);
    assert_string_equal(m->nonce, "00000000000000ab");
    assert_non_null(m->control_plane);
    assert_string_equal(m->control_plane->identifier, "sextant/r1");
    assert_int_equal(m->n_resources, 2);
    assert_any(m->resources[0], &w->res->items[TR_CDS][0]);
    assert_any(m->resources[1], &w->res->items[TR_CDS][2]);
    envoy__service__discovery__v3__discovery_response__free_unpacked(m, NULL);

    /* A full response (one contiguous run) and an empty one. */
    uint32_t all[] = {0, 1, 2};
    m = sotw_msg(xds_wire_sotw_response(w, TR_CDS, 7, "n", all, 3, NULL));
    assert_int_equal(m->n_resources, 3);
    assert_null(m->control_plane);
    for (int i = 0; i < 3; i++)
        assert_any(m->resources[i], &w->res->items[TR_CDS][i]);
    envoy__service__discovery__v3__discovery_response__free_unpacked(m, NULL);
    m = sotw_msg(xds_wire_sotw_response(w, TR_LDS, 7, "n", NULL, 0, NULL));
    assert_int_equal(m->n_resources, 0);
    assert_string_equal(m->type_url, "type.googleapis.com/envoy.config.listener.v3.Listener");
    envoy__service__discovery__v3__discovery_response__free_unpacked(m, NULL);
    xds_wire_res_unref(w);
}

TL_TEST(test_delta_response)
{
    xds_wire_res *w = wire_res(9, "cds:a=1,b=2,c=3");
    uint32_t idx[] = {1, 2};
    char *removed[] = {"x", "y"};
    Envoy__Service__Discovery__V3__DeltaDiscoveryResponse *m = delta_msg(
        xds_wire_delta_response(w, TR_CDS, 9, "00000000000000cd", idx, 2, removed, 2, "cp"));
    assert_string_equal(m->system_version_info, "9");
    assert_string_equal(m->type_url, CDS_URL);
    assert_string_equal(m->nonce, "00000000000000cd");
    assert_string_equal(m->control_plane->identifier, "cp");
    assert_int_equal(m->n_resources, 2);
    for (int i = 0; i < 2; i++) {
        const tr_resource *x = &w->res->items[TR_CDS][idx[i]];
        assert_string_equal(m->resources[i]->name, x->name);
        assert_string_equal(m->resources[i]->version, x->version);
        assert_any(m->resources[i]->resource, x);
    }
    assert_int_equal(m->n_removed_resources, 2);
    assert_string_equal(m->removed_resources[0], "x");
    assert_string_equal(m->removed_resources[1], "y");
    envoy__service__discovery__v3__delta_discovery_response__free_unpacked(m, NULL);

    /* Removals only. */
    m = delta_msg(xds_wire_delta_response(w, TR_CDS, 9, "n", NULL, 0, removed, 1, NULL));
    assert_int_equal(m->n_resources, 0);
    assert_int_equal(m->n_removed_resources, 1);
    envoy__service__discovery__v3__delta_discovery_response__free_unpacked(m, NULL);
    xds_wire_res_unref(w);
}

static snap_entry *entry_with(long long version)
{
    Gateway__Control__V1__Listener l = GATEWAY__CONTROL__V1__LISTENER__INIT;
    l.name = "web";
    l.port = 8080;
    Gateway__Control__V1__Listener *ls[] = {&l};
    Gateway__Control__V1__BackendCluster b = GATEWAY__CONTROL__V1__BACKEND_CLUSTER__INIT;
    b.name = "api";
    Gateway__Control__V1__BackendCluster *bs[] = {&b};
    Gateway__Control__V1__ConfigSnapshot s = GATEWAY__CONTROL__V1__CONFIG_SNAPSHOT__INIT;
    s.id = "g:5";
    s.n_listeners = 1;
    s.listeners = ls;
    s.n_backends = 1;
    s.backends = bs;
    snap_entry *e = sx_calloc(1, sizeof(*e));
    atomic_init(&e->refs, 1);
    e->group = sx_strdup("g");
    e->version = version;
    e->checksum = sx_strdup("x");
    e->encoded_len = gateway__control__v1__config_snapshot__get_packed_size(&s);
    e->encoded = sx_malloc(e->encoded_len);
    gateway__control__v1__config_snapshot__pack(&s, e->encoded);
    return e;
}

TL_TEST(test_control_response_parts)
{
    snap_entry *e = entry_with(5);
    xds_wire_snap *s = xds_wire_snap_create(e, NULL, 0);
    snap_entry_unref(e); /* s holds its own */

    Gateway__Control__V1__DiscoveryResponse *m =
        control_msg(xds_wire_control_response(s, "00000000000000ef", XDS_CTL_ALL));
    assert_string_equal(m->version, "5");
    assert_string_equal(m->nonce, "00000000000000ef");
    assert_string_equal(m->snapshot->id, "g:5");
    assert_int_equal(m->snapshot->n_listeners, 1);
    assert_string_equal(m->snapshot->listeners[0]->name, "web");
    assert_int_equal(m->snapshot->n_backends, 1);
    gateway__control__v1__discovery_response__free_unpacked(m, NULL);

    /* Listeners only: the id stays, backends go. */
    m = control_msg(xds_wire_control_response(s, "n", 1u << 0));
    assert_string_equal(m->snapshot->id, "g:5");
    assert_int_equal(m->snapshot->n_listeners, 1);
    assert_int_equal(m->snapshot->listeners[0]->port, 8080);
    assert_int_equal(m->snapshot->n_backends, 0);
    gateway__control__v1__discovery_response__free_unpacked(m, NULL);

    /* Backends only. */
    m = control_msg(xds_wire_control_response(s, "n", 1u << 4));
    assert_int_equal(m->snapshot->n_listeners, 0);
    assert_string_equal(m->snapshot->backends[0]->name, "api");
    gateway__control__v1__discovery_response__free_unpacked(m, NULL);
    xds_wire_snap_unref(s);
}

TL_TEST(test_pack)
{
    Gateway__Control__V1__StatusAck ack = GATEWAY__CONTROL__V1__STATUS_ACK__INIT;
    ack.accepted = true;
    Gateway__Control__V1__StatusAck *m =
        unpack(xds_wire_pack(&ack.base), &gateway__control__v1__status_ack__descriptor);
    assert_true(m->accepted);
    gateway__control__v1__status_ack__free_unpacked(m, NULL);
}

TL_MAIN_GROUP(setup, teardown)
