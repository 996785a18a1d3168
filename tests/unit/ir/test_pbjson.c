/*
 * test_pbjson.c — the generic proto3 JSON codec, seen from its user: JSON in, JSON out,
 * and the exact path and message of every error.
 *
 * Every scalar kind is exercised through "test.Kitchen", a message described by a
 * hand-written protobuf-c descriptor below (the project's protos have no sint, fixed or
 * float fields), and the protocol's own messages are round-tripped too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/lib/testlib.h"

#include "gateway/control/v1/control.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/empty.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "google/protobuf/wrappers.pb-c.h"
#include "server/base/fielderr.h"
#include "server/base/mem.h"
#include "server/ir/pbjson.h"

/* ------------------------------------------------------------------ test.Kitchen */

typedef struct KitchenIntsEntry {
    ProtobufCMessage base;
    int32_t key;
    int64_t value;
} KitchenIntsEntry;

typedef struct KitchenFlagsEntry {
    ProtobufCMessage base;
    protobuf_c_boolean key;
    char *value;
} KitchenFlagsEntry;

typedef struct Kitchen Kitchen;
struct Kitchen {
    ProtobufCMessage base;
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    int32_t s32;
    int64_t s64;
    uint32_t f32;
    uint64_t f64;
    int32_t sf32;
    int64_t sf64;
    float fl;
    double db;
    protobuf_c_boolean b;
    char *s;
    ProtobufCBinaryData by;
    int color;
    size_t n_rep_i64;
    int64_t *rep_i64;
    size_t n_ints;
    KitchenIntsEntry **ints;
    size_t n_flags;
    KitchenFlagsEntry **flags;
    protobuf_c_boolean has_opt;
    uint32_t opt;
    Kitchen *child;
    Google__Protobuf__Int64Value *wrapped;
    uint32_t choice_case;
    union {
        char *c_str;
        int64_t c_int;
        Kitchen *c_msg;
    };
    size_t n_tags;
    char **tags;
};

static const ProtobufCMessageDescriptor kitchen_descriptor;
static const ProtobufCMessageDescriptor ints_entry_descriptor;
static const ProtobufCMessageDescriptor flags_entry_descriptor;

static const ProtobufCEnumValue color_values[] = {
    {"COLOR_UNSPECIFIED", "COLOR_UNSPECIFIED", 0},
    {"COLOR_RED", "COLOR_RED", 1},
    {"COLOR_BLUE", "COLOR_BLUE", 2},
};
static const ProtobufCEnumValueIndex color_by_name[] = {
    {"COLOR_BLUE", 2}, {"COLOR_RED", 1}, {"COLOR_UNSPECIFIED", 0}};
static const ProtobufCIntRange color_ranges[] = {{0, 0}, {0, 3}};
static const ProtobufCEnumDescriptor color_descriptor = {PROTOBUF_C__ENUM_DESCRIPTOR_MAGIC,
                                                         "test.Color",
                                                         "Color",
                                                         "Color",
                                                         "test",
                                                         3,
                                                         color_values,
                                                         3,
                                                         color_by_name,
                                                         1,
                                                         color_ranges,
                                                         NULL,
                                                         NULL,
                                                         NULL,
                                                         NULL};

#define FD(name, id, label, type, qoff, off, desc, def, flags)                                     \
    {                                                                                              \
        name, id, PROTOBUF_C_LABEL_##label, PROTOBUF_C_TYPE_##type, qoff, off, desc, def, flags,   \
            0, NULL, NULL                                                                          \
    }
#define K(f) offsetof(Kitchen, f)

static const ProtobufCFieldDescriptor kitchen_fields[] = {
    FD("i32", 1, NONE, INT32, 0, K(i32), NULL, NULL, 0),
    FD("i64", 2, NONE, INT64, 0, K(i64), NULL, NULL, 0),
    FD("u32", 3, NONE, UINT32, 0, K(u32), NULL, NULL, 0),
    FD("u64", 4, NONE, UINT64, 0, K(u64), NULL, NULL, 0),
    FD("s32", 5, NONE, SINT32, 0, K(s32), NULL, NULL, 0),
    FD("s64", 6, NONE, SINT64, 0, K(s64), NULL, NULL, 0),
    FD("f32", 7, NONE, FIXED32, 0, K(f32), NULL, NULL, 0),
    FD("f64", 8, NONE, FIXED64, 0, K(f64), NULL, NULL, 0),
    FD("sf32", 9, NONE, SFIXED32, 0, K(sf32), NULL, NULL, 0),
    FD("sf64", 10, NONE, SFIXED64, 0, K(sf64), NULL, NULL, 0),
    FD("fl", 11, NONE, FLOAT, 0, K(fl), NULL, NULL, 0),
    FD("db", 12, NONE, DOUBLE, 0, K(db), NULL, NULL, 0),
    FD("b", 13, NONE, BOOL, 0, K(b), NULL, NULL, 0),
    FD("s", 14, NONE, STRING, 0, K(s), NULL, &protobuf_c_empty_string, 0),
    FD("by", 15, NONE, BYTES, 0, K(by), NULL, NULL, 0),
    FD("color", 16, NONE, ENUM, 0, K(color), &color_descriptor, NULL, 0),
    FD("rep_i64", 17, REPEATED, INT64, K(n_rep_i64), K(rep_i64), NULL, NULL,
       PROTOBUF_C_FIELD_FLAG_PACKED),
    FD("ints", 18, REPEATED, MESSAGE, K(n_ints), K(ints), &ints_entry_descriptor, NULL, 0),
    FD("flags", 19, REPEATED, MESSAGE, K(n_flags), K(flags), &flags_entry_descriptor, NULL, 0),
    FD("opt", 20, OPTIONAL, UINT32, K(has_opt), K(opt), NULL, NULL, 0),
    FD("child", 21, NONE, MESSAGE, 0, K(child), &kitchen_descriptor, NULL, 0),
    FD("wrapped", 22, NONE, MESSAGE, 0, K(wrapped), &google__protobuf__int64_value__descriptor,
       NULL, 0),
    FD("c_str", 23, NONE, STRING, K(choice_case), K(c_str), NULL, &protobuf_c_empty_string,
       PROTOBUF_C_FIELD_FLAG_ONEOF),
    FD("c_int", 24, NONE, INT64, K(choice_case), K(c_int), NULL, NULL, PROTOBUF_C_FIELD_FLAG_ONEOF),
    FD("c_msg", 25, NONE, MESSAGE, K(choice_case), K(c_msg), &kitchen_descriptor, NULL,
       PROTOBUF_C_FIELD_FLAG_ONEOF),
    FD("tags", 26, REPEATED, STRING, K(n_tags), K(tags), NULL, NULL, 0),
};
#define N_KITCHEN_FIELDS (sizeof(kitchen_fields) / sizeof(kitchen_fields[0]))

static const ProtobufCFieldDescriptor ints_fields[] = {
    FD("key", 1, NONE, INT32, 0, offsetof(KitchenIntsEntry, key), NULL, NULL, 0),
    FD("value", 2, NONE, INT64, 0, offsetof(KitchenIntsEntry, value), NULL, NULL, 0),
};
static const ProtobufCFieldDescriptor flags_fields[] = {
    FD("key", 1, NONE, BOOL, 0, offsetof(KitchenFlagsEntry, key), NULL, NULL, 0),
    FD("value", 2, NONE, STRING, 0, offsetof(KitchenFlagsEntry, value), NULL,
       &protobuf_c_empty_string, 0),
};

static unsigned kitchen_by_name[N_KITCHEN_FIELDS];
static const unsigned entry_by_name[] = {0, 1};
static const ProtobufCIntRange kitchen_ranges[] = {{1, 0}, {0, N_KITCHEN_FIELDS}};
static const ProtobufCIntRange entry_ranges[] = {{1, 0}, {0, 2}};

static void kitchen_init(ProtobufCMessage *m)
{
    memset(m, 0, sizeof(Kitchen));
    m->descriptor = &kitchen_descriptor;
    ((Kitchen *)m)->s = (char *)protobuf_c_empty_string;
}

static void ints_init(ProtobufCMessage *m)
{
    memset(m, 0, sizeof(KitchenIntsEntry));
    m->descriptor = &ints_entry_descriptor;
}

static void flags_init(ProtobufCMessage *m)
{
    memset(m, 0, sizeof(KitchenFlagsEntry));
    m->descriptor = &flags_entry_descriptor;
    ((KitchenFlagsEntry *)m)->value = (char *)protobuf_c_empty_string;
}

static const ProtobufCMessageDescriptor kitchen_descriptor = {PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,
                                                              "test.Kitchen",
                                                              "Kitchen",
                                                              "Kitchen",
                                                              "test",
                                                              sizeof(Kitchen),
                                                              N_KITCHEN_FIELDS,
                                                              kitchen_fields,
                                                              kitchen_by_name,
                                                              1,
                                                              kitchen_ranges,
                                                              kitchen_init,
                                                              NULL,
                                                              NULL,
                                                              NULL};
static const ProtobufCMessageDescriptor ints_entry_descriptor = {
    PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,
    "test.Kitchen.IntsEntry",
    "IntsEntry",
    "KitchenIntsEntry",
    "test",
    sizeof(KitchenIntsEntry),
    2,
    ints_fields,
    entry_by_name,
    1,
    entry_ranges,
    ints_init,
    NULL,
    NULL,
    NULL};
static const ProtobufCMessageDescriptor flags_entry_descriptor = {
    PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,
    "test.Kitchen.FlagsEntry",
    "FlagsEntry",
    "KitchenFlagsEntry",
    "test",
    sizeof(KitchenFlagsEntry),
    2,
    flags_fields,
    entry_by_name,
    1,
    entry_ranges,
    flags_init,
    NULL,
    NULL,
    NULL};

static int setup_descriptors(void **state)
{
    (void)state;
    for (unsigned i = 0; i < N_KITCHEN_FIELDS; i++) {
        unsigned j = i;
        while (j > 0 &&
               strcmp(kitchen_fields[kitchen_by_name[j - 1]].name, kitchen_fields[i].name) > 0) {
            kitchen_by_name[j] = kitchen_by_name[j - 1];
            j--;
        }
        kitchen_by_name[j] = i;
    }
    return 0;
}

/* ------------------------------------------------------------------ helpers */

/* Decodes text as desc and asserts it fails with exactly the errors given. */
static void expect_errors(const ProtobufCMessageDescriptor *desc, const char *text,
                          const char *prefix, const tl_want_err *want, size_t n)
{
    json_t *j = tl_json(text);
    sx_fielderrs errs = {0};
    ProtobufCMessage *m = (ProtobufCMessage *)1;
    int rc = pbjson_decode(desc, j, prefix, &m, &errs);
    assert_int_equal(rc, SX_EINVAL);
    assert_null(m);
    tl_assert_fielderrs(&errs, want, n);
    sx_fielderrs_free(&errs);
    json_decref(j);
}

/* A test.Kitchen document that fails with exactly one error. */
typedef struct one_err_case {
    const char *text;
    const char *path;
    const char *message;
} one_err_case;

/* Each case's document is refused with its one error, under the prefix "k". */
static void expect_each(const one_err_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const tl_want_err w = {cases[i].path, cases[i].message};
        expect_errors(&kitchen_descriptor, cases[i].text, "k", &w, 1);
    }
}

/* Decodes text, asserting success; the caller frees the message. */
static ProtobufCMessage *decode_ok(const ProtobufCMessageDescriptor *desc, const json_t *j)
{
    sx_fielderrs errs = {0};
    ProtobufCMessage *m = NULL;
    int rc = pbjson_decode(desc, j, "", &m, &errs);
    if (rc != 0) {
        char *s = sx_fielderrs_join(&errs);
        print_error("decode failed: %s\n", s);
        sx_free(s);
        fail();
    }
    assert_non_null(m);
    sx_fielderrs_free(&errs);
    return m;
}

/* JSON -> message -> bytes -> message -> JSON is lossless, and packing again gives the
 * same bytes; returns nothing, asserts everything. */
static void assert_round_trip(const ProtobufCMessageDescriptor *desc, const char *text)
{
    json_t *in = tl_json(text);
    ProtobufCMessage *m1 = decode_ok(desc, in);
    size_t n1 = protobuf_c_message_get_packed_size(m1);
    uint8_t *b1 = sx_malloc(n1);
    assert_int_equal(protobuf_c_message_pack(m1, b1), n1);
    ProtobufCMessage *m2 = protobuf_c_message_unpack(desc, NULL, n1, b1);
    assert_non_null(m2);
    json_t *out = pbjson_encode(m2, 0);
    tl_assert_json_equal(out, in);
    size_t n2 = protobuf_c_message_get_packed_size(m2);
    assert_int_equal(n2, n1);
    uint8_t *b2 = sx_malloc(n2);
    protobuf_c_message_pack(m2, b2);
    assert_memory_equal(b1, b2, n1);
    sx_free(b1);
    sx_free(b2);
    json_decref(in);
    json_decref(out);
    protobuf_c_message_free_unpacked(m1, NULL);
    protobuf_c_message_free_unpacked(m2, NULL);
}

/* Decodes in and asserts that encoding gives want (the canonical form). */
static void assert_normalises(const ProtobufCMessageDescriptor *desc, const char *in,
                              const char *want)
{
    json_t *ji = tl_json(in), *jw = tl_json(want);
    ProtobufCMessage *m = decode_ok(desc, ji);
    json_t *out = pbjson_encode(m, 0);
    tl_assert_json_equal(out, jw);
    json_decref(out);
    json_decref(ji);
    json_decref(jw);
    protobuf_c_message_free_unpacked(m, NULL);
}

/* ------------------------------------------------------------------ round trips */

static const char KITCHEN_FULL[] =
    "{'i32': -5, 'i64': '-9007199254740993', 'u32': 4294967295,"
    " 'u64': '18446744073709551615', 's32': -7, 's64': '-9223372036854775808',"
    " 'f32': 9, 'f64': '10', 'sf32': -11, 'sf64': '-12', 'fl': 1.5, 'db': 0.1,"
    " 'b': true, 's': 'h\\u00e9llo \\u2603', 'by': 'AAEC/w==', 'color': 'COLOR_BLUE',"
    " 'rep_i64': ['1', '-2', '9007199254740993'],"
    " 'ints': {'-3': '4', '5': '6'}, 'flags': {'true': 'yes', 'false': 'no'},"
    " 'opt': 0, 'child': {'i32': 1, 'child': {'s': 'deep'}}, 'wrapped': '0',"
    " 'c_msg': {'c_str': ''}, 'tags': ['a', '', 'c']}";

TL_TEST(test_kitchen_round_trip)
{
    assert_round_trip(&kitchen_descriptor, KITCHEN_FULL);
    assert_round_trip(&kitchen_descriptor, "{}");
    assert_round_trip(&kitchen_descriptor, "{'c_int': '-1'}");
    assert_round_trip(&kitchen_descriptor, "{'c_str': 'x', 'fl': 'NaN', 'db': '-Infinity'}");
}

TL_TEST(test_kitchen_input_forms)
{
    /* lowerCamelCase names, numbers as strings and strings as numbers, exponents, enum
     * numbers, URL-safe unpadded base64: all decode to the one canonical form. */
    assert_normalises(&kitchen_descriptor,
                      "{'repI64': [1, '2e0'], 'i32': '12', 'u32': 1e3, 'u64': 42, 'i64': -3.0,"
                      " 'color': 1, 'by': 'AAEC_w', 'db': '2.5', 'fl': 'Infinity', 'cInt': '7',"
                      " 's32': '-0', 'ints': {'07': '1'}}",
                      "{'rep_i64': ['1', '2'], 'i32': 12, 'u32': 1000, 'u64': '42', 'i64': '-3',"
                      " 'color': 'COLOR_RED', 'by': 'AAEC/w==', 'db': 2.5, 'fl': 'Infinity',"
                      " 'c_int': '7', 'ints': {'7': '1'}}");
    /* null means "not set", for every kind of field. */
    assert_normalises(&kitchen_descriptor,
                      "{'i32': null, 's': null, 'rep_i64': null, 'ints': null, 'child': null,"
                      " 'c_str': null, 'c_int': '3', 'wrapped': null, 'opt': null}",
                      "{'c_int': '3'}");
    /* Base64 with one padding character and unpadded variants of the same bytes. */
    assert_normalises(&kitchen_descriptor, "{'by': 'YWI='}", "{'by': 'YWI='}");
    assert_normalises(&kitchen_descriptor, "{'by': 'YWI'}", "{'by': 'YWI='}");
    assert_normalises(&kitchen_descriptor, "{'by': 'YQ'}", "{'by': 'YQ=='}");
}

TL_TEST(test_emit_defaults)
{
    Kitchen k;
    kitchen_init(&k.base);
    json_t *got = pbjson_encode(&k.base, PBJSON_EMIT_DEFAULTS);
    json_t *want = tl_json("{'i32': 0, 'i64': '0', 'u32': 0, 'u64': '0', 's32': 0, 's64': '0',"
                           " 'f32': 0, 'f64': '0', 'sf32': 0, 'sf64': '0', 'fl': 0, 'db': 0,"
                           " 'b': false, 's': '', 'by': '', 'color': 'COLOR_UNSPECIFIED',"
                           " 'rep_i64': [], 'ints': {}, 'flags': {}, 'child': null,"
                           " 'wrapped': null, 'tags': []}");
    tl_assert_json_equal(got, want);
    json_decref(got);
    json_decref(want);
    json_t *empty = pbjson_encode(&k.base, 0);
    assert_int_equal(json_object_size(empty), 0);
    json_decref(empty);
}

TL_TEST(test_encode_invalid_utf8)
{
    Kitchen k;
    kitchen_init(&k.base);
    char bad[] = "a\xff"
                 "b\xc3";
    k.s = bad;
    json_t *got = pbjson_encode(&k.base, 0);
    assert_string_equal(json_string_value(json_object_get(got, "s")), "a\xef\xbf\xbd"
                                                                      "b\xef\xbf\xbd");
    json_decref(got);

    /* A map key too: the entry is kept under the repaired key, not dropped (an encoded
     * snapshot must not lose what it carried, and must decode back to itself). */
    Gateway__Control__V1__Listener l = GATEWAY__CONTROL__V1__LISTENER__INIT;
    Gateway__Control__V1__Listener__MetadataEntry e =
        GATEWAY__CONTROL__V1__LISTENER__METADATA_ENTRY__INIT;
    char key[] = "k\x8d";
    e.key = key;
    e.value = "v";
    Gateway__Control__V1__Listener__MetadataEntry *ep = &e;
    l.name = "l";
    l.n_metadata = 1;
    l.metadata = &ep;
    got = pbjson_encode(&l.base, 0);
    json_t *md = json_object_get(got, "metadata");
    assert_int_equal(json_object_size(md), 1);
    assert_string_equal(json_string_value(json_object_get(md, "k\xef\xbf\xbd")), "v");
    ProtobufCMessage *back = NULL;
    sx_fielderrs errs = {0};
    assert_int_equal(
        pbjson_decode(&gateway__control__v1__listener__descriptor, got, NULL, &back, &errs), 0);
    json_t *again = pbjson_encode(back, 0);
    tl_assert_json_equal(again, got);
    json_decref(again);
    protobuf_c_message_free_unpacked(back, NULL);
    sx_fielderrs_free(&errs);
    json_decref(got);
}

TL_TEST(test_protocol_round_trips)
{
    assert_round_trip(&gateway__control__v1__discovery_request__descriptor,
                      "{'node_id': 'gw-7f9c-0', 'cluster': 'edge-eu', 'version': '41',"
                      " 'nonce': 'n-123', 'subscriptions': ['listeners', 'routes'],"
                      " 'result_status': 'DISCOVERY_RESULT_STATUS_NACK',"
                      " 'error_detail': 'listener \\'https\\': no certificate'}");
    assert_round_trip(&gateway__control__v1__discovery_response__descriptor,
                      "{'version': '42', 'nonce': 'n-124', 'snapshot': {'id': 'snap-42',"
                      " 'generated_at': '2026-01-02T03:04:05Z',"
                      " 'listeners': [{'name': 'http', 'port': 80,"
                      " 'protocol': 'LISTENER_PROTOCOL_HTTP'}]}}");
    assert_round_trip(&gateway__control__v1__dataplane_status_report__descriptor,
                      "{'node_id': 'gw-7f9c-0', 'version': '42', 'ready': true,"
                      " 'message': 'serving', 'observed_at': '2026-05-06T07:08:09.500Z'}");
    assert_round_trip(&gateway__control__v1__status_ack__descriptor, "{'accepted': true}");
    /* lowerCamelCase input decodes too; output keeps the proto names. */
    assert_normalises(&gateway__control__v1__discovery_request__descriptor,
                      "{'nodeId': 'a', 'resultStatus': 1, 'errorDetail': ''}",
                      "{'node_id': 'a', 'result_status': 'DISCOVERY_RESULT_STATUS_ACK'}");
}

/* ------------------------------------------------------------------ well-known types */

TL_TEST(test_timestamp)
{
    const ProtobufCMessageDescriptor *ts = &google__protobuf__timestamp__descriptor;
    assert_normalises(ts, "'2026-01-02T03:04:05Z'", "'2026-01-02T03:04:05Z'");
    assert_normalises(ts, "'2026-01-02T03:04:05.1Z'", "'2026-01-02T03:04:05.100Z'");
    assert_normalises(ts, "'2026-01-02T03:04:05.000001Z'", "'2026-01-02T03:04:05.000001Z'");
    assert_normalises(ts, "'2026-01-02T03:04:05.123456789Z'", "'2026-01-02T03:04:05.123456789Z'");
    assert_normalises(ts, "'2026-01-02T03:04:05.000000000Z'", "'2026-01-02T03:04:05Z'");
    /* Offsets are normalised to UTC, across a day and a year boundary. */
    assert_normalises(ts, "'2026-01-02T03:04:05.123+02:00'", "'2026-01-02T01:04:05.123Z'");
    assert_normalises(ts, "'2025-12-31T23:30:00-01:00'", "'2026-01-01T00:30:00Z'");
    assert_normalises(ts, "'2024-02-29t12:00:00z'", "'2024-02-29T12:00:00Z'");
    assert_normalises(ts, "'1970-01-01T00:00:00Z'", "'1970-01-01T00:00:00Z'");
    assert_normalises(ts, "'1969-12-31T23:59:59.5Z'", "'1969-12-31T23:59:59.500Z'");
    assert_normalises(ts, "'0001-01-01T00:00:00Z'", "'0001-01-01T00:00:00Z'");
    assert_normalises(ts, "'9999-12-31T23:59:59.999999999Z'", "'9999-12-31T23:59:59.999999999Z'");

    const tl_want_err e1[] = {
        {"t", "invalid timestamp \"2026-01-02 03:04:05Z\": expected RFC 3339 format such as "
              "2026-01-02T03:04:05Z"}};
    expect_errors(ts, "'2026-01-02 03:04:05Z'", "t", e1, 1);
    const tl_want_err e2[] = {
        {"t", "invalid timestamp \"2026-02-30T00:00:00Z\": date/time field value out of range"}};
    expect_errors(ts, "'2026-02-30T00:00:00Z'", "t", e2, 1);
    const tl_want_err e3[] = {
        {"t", "invalid timestamp \"2026-01-02T03:04:05\": expected RFC 3339 format such as "
              "2026-01-02T03:04:05Z"}};
    expect_errors(ts, "'2026-01-02T03:04:05'", "t", e3, 1);
    const tl_want_err e4[] = {{"t",
                               "invalid timestamp \"0001-01-01T00:00:00+00:01\": must be "
                               "between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z"}};
    expect_errors(ts, "'0001-01-01T00:00:00+00:01'", "t", e4, 1);
    const tl_want_err e5[] = {{"t", "invalid timestamp \"2026-01-02T03:04:05.1234567891Z\": at "
                                    "most 9 fractional digits are allowed"}};
    expect_errors(ts, "'2026-01-02T03:04:05.1234567891Z'", "t", e5, 1);
    const tl_want_err e6[] = {{"t", "expected a timestamp string, got a number"}};
    expect_errors(ts, "1767322800", "t", e6, 1);
}

TL_TEST(test_duration)
{
    const ProtobufCMessageDescriptor *d = &google__protobuf__duration__descriptor;
    assert_normalises(d, "'1.5s'", "'1.500s'");
    assert_normalises(d, "'0s'", "'0s'");
    assert_normalises(d, "'-0.000000001s'", "'-0.000000001s'");
    assert_normalises(d, "'-3.000010s'", "'-3.000010s'");
    assert_normalises(d, "'315576000000.999999999s'", "'315576000000.999999999s'");

    const tl_want_err e1[] = {{"d", "invalid duration \"5\": must end in s"}};
    expect_errors(d, "'5'", "d", e1, 1);
    const tl_want_err e2[] = {{"d", "invalid duration \"1.1234567891s\": at most 9 fractional "
                                    "digits are allowed"}};
    expect_errors(d, "'1.1234567891s'", "d", e2, 1);
    const tl_want_err e3[] = {{"d", "invalid duration \"315576000001s\": must be between "
                                    "-315576000000s and 315576000000s"}};
    expect_errors(d, "'315576000001s'", "d", e3, 1);
    const tl_want_err e4[] = {{"d", "invalid duration \"1ms\": expected seconds such as \"1.5s\""}};
    expect_errors(d, "'1ms'", "d", e4, 1);
    const tl_want_err e5[] = {{"d", "invalid duration \"s\": expected seconds such as \"1.5s\""}};
    expect_errors(d, "'s'", "d", e5, 1);
}

TL_TEST(test_struct_value_wrappers)
{
    assert_round_trip(&google__protobuf__struct__descriptor,
                      "{'a': {'b': [1, 2.5, 'x', true, false, null, {}, []]}, 'n': null,"
                      " 's': '', 'big': -1e300}");
    assert_round_trip(&google__protobuf__value__descriptor, "null");
    assert_round_trip(&google__protobuf__value__descriptor, "[[], {'k': [null]}]");
    assert_round_trip(&google__protobuf__list_value__descriptor, "[1, 'two', null]");
    assert_round_trip(&google__protobuf__uint32_value__descriptor, "4294967295");
    assert_round_trip(&google__protobuf__int64_value__descriptor, "'-9223372036854775808'");
    assert_round_trip(&google__protobuf__bool_value__descriptor, "false");
    assert_round_trip(&google__protobuf__string_value__descriptor, "''");
    assert_round_trip(&google__protobuf__bytes_value__descriptor, "'3q2+7w=='");
    assert_round_trip(&google__protobuf__double_value__descriptor, "0.5");
    assert_round_trip(&google__protobuf__float_value__descriptor, "-0.25");
    assert_round_trip(&google__protobuf__empty__descriptor, "{}");

    const tl_want_err e1[] = {{"w", "must be between 0 and 4294967295"}};
    expect_errors(&google__protobuf__uint32_value__descriptor, "-1", "w", e1, 1);
    const tl_want_err e2[] = {{"w", "expected a boolean, got null"}};
    expect_errors(&google__protobuf__bool_value__descriptor, "null", "w", e2, 1);
    const tl_want_err e3[] = {{"", "unknown field \"x\""}};
    expect_errors(&google__protobuf__empty__descriptor, "{'x': 1}", "", e3, 1);
    const tl_want_err e4[] = {{"s", "expected an object, got an array"}};
    expect_errors(&google__protobuf__struct__descriptor, "[]", "s", e4, 1);
    const tl_want_err e5[] = {{"w", "must be between -3.40282347e+38 and 3.40282347e+38"}};
    expect_errors(&google__protobuf__float_value__descriptor, "1e39", "w", e5, 1);
}

/* ------------------------------------------------------------------ errors */

TL_TEST(test_unknown_and_wrong_type)
{
    static const one_err_case cases[] = {
        {"{'prot': 1}", "k", "unknown field \"prot\""},
        {"{'child': {'Child': {}}}", "k.child", "unknown field \"Child\""},
        {"{'i32': 'abc'}", "k.i32", "expected a number, got a string"},
        {"{'i64': true}", "k.i64", "expected a number, got a boolean"},
        {"{'db': {}}", "k.db", "expected a number, got an object"},
        {"{'s': 5}", "k.s", "expected a string, got a number"},
        {"{'b': 'true'}", "k.b", "expected a boolean, got a string"},
        {"{'child': []}", "k.child", "expected an object, got an array"},
        {"{'rep_i64': '1'}", "k.rep_i64", "expected an array, got a string"},
        {"{'rep_i64': ['1', null]}", "k.rep_i64[1]", "must not be null"},
        {"{'tags': ['a', 2]}", "k.tags[1]", "expected a string, got a number"},
        {"{'ints': []}", "k.ints", "expected an object, got an array"},
        {"{'by': 5}", "k.by", "expected a base64 string, got a number"},
        {"{'s': 'a\\u0000b'}", "k.s", "must not contain NUL characters"},
        {"{'wrapped': 'x'}", "k.wrapped", "expected a number, got a string"},
        {"{'rep_i64': [], 'repI64': []}", "k",
         "field \"rep_i64\" is given twice, as \"rep_i64\" and \"repI64\""},
        {"[]", "k", "expected an object, got an array"},
    };
    expect_each(cases, sizeof(cases) / sizeof(cases[0]));
}

TL_TEST(test_integer_ranges)
{
    static const one_err_case cases[] = {
        {"{'u32': 4294967296}", "k.u32", "must be between 0 and 4294967295"},
        {"{'u32': -1}", "k.u32", "must be between 0 and 4294967295"},
        {"{'f32': '4294967296'}", "k.f32", "must be between 0 and 4294967295"},
        {"{'i32': 2147483648}", "k.i32", "must be between -2147483648 and 2147483647"},
        {"{'sf32': -2147483649}", "k.sf32", "must be between -2147483648 and 2147483647"},
        {"{'s32': '99999999999'}", "k.s32", "must be between -2147483648 and 2147483647"},
        {"{'u64': '-1'}", "k.u64", "must be between 0 and 18446744073709551615"},
        {"{'f64': '18446744073709551616'}", "k.f64", "must be between 0 and 18446744073709551615"},
        {"{'i64': '9223372036854775808'}", "k.i64",
         "must be between -9223372036854775808 and 9223372036854775807"},
        {"{'sf64': 1e19}", "k.sf64",
         "must be between -9223372036854775808 and 9223372036854775807"},
        {"{'i32': 1.5}", "k.i32", "must be an integer"},
        {"{'u64': '2.5'}", "k.u64", "must be an integer"},
        {"{'i32': ' 1'}", "k.i32", "expected a number, got a string"},
        {"{'opt': 4294967296}", "k.opt", "must be between 0 and 4294967295"},
        {"{'db': '1e400'}", "k.db",
         "must be between -1.7976931348623157e+308 and 1.7976931348623157e+308"},
    };
    expect_each(cases, sizeof(cases) / sizeof(cases[0]));
}

TL_TEST(test_enum_bytes_map_oneof_errors)
{
    static const one_err_case cases[] = {
        {"{'color': 'FOO'}", "k.color", "invalid enum value \"FOO\" for test.Color"},
        {"{'color': 'color_red'}", "k.color", "invalid enum value \"color_red\" for test.Color"},
        {"{'color': 7}", "k.color", "invalid enum value 7 for test.Color"},
        {"{'color': true}", "k.color", "expected a string or a number, got a boolean"},
        {"{'by': '@@@@'}", "k.by", "invalid base64 data"},
        {"{'by': 'YWJjZ'}", "k.by", "invalid base64 data"},
        {"{'by': 'YQ='}", "k.by", "invalid base64 data"},
        {"{'by': 'YW I='}", "k.by", "invalid base64 data"},
        {"{'ints': {'x': '1'}}", "k.ints[\"x\"]", "invalid map key \"x\": expected an integer"},
        {"{'ints': {'3000000000': '1'}}", "k.ints[\"3000000000\"]",
         "invalid map key \"3000000000\": out of range"},
        {"{'ints': {'1': 'y'}}", "k.ints[\"1\"]", "expected a number, got a string"},
        {"{'ints': {'1': null}}", "k.ints[\"1\"]", "must not be null"},
        {"{'flags': {'maybe': 'a'}}", "k.flags[\"maybe\"]",
         "invalid map key \"maybe\": expected true or false"},
        {"{'flags': {'true': 1}}", "k.flags[\"true\"]", "expected a string, got a number"},
        {"{'c_str': 'a', 'c_int': '1'}", "k.c_int",
         "only one of \"c_str\" and \"c_int\" may be set"},
        {"{'c_msg': {}, 'cStr': 'a'}", "k.c_str", "only one of \"c_msg\" and \"c_str\" may be set"},
        /* A key with quotes is escaped in the path. */
        {"{'ints': {'a\\'b': '1'}}", "k.ints[\"a\\\"b\"]",
         "invalid map key \"a\"b\": expected an integer"},
    };
    expect_each(cases, sizeof(cases) / sizeof(cases[0]));
}

TL_TEST(test_all_errors_reported)
{
    /* Decoding goes on past every error, in nested messages, arrays and maps. */
    const tl_want_err want[] = {
        {"spec", "unknown field \"prot\""},
        {"spec.u32", "must be between 0 and 4294967295"},
        {"spec.child.color", "invalid enum value \"FOO\" for test.Color"},
        {"spec.child.c_msg.by", "invalid base64 data"},
        {"spec.child.c_msg", "unknown field \"nope\""},
        {"spec.child.rep_i64[2]", "expected a number, got a boolean"},
        {"spec.ints[\"k\"]", "invalid map key \"k\": expected an integer"},
        {"spec.ints[\"9\"]", "must be between -9223372036854775808 and 9223372036854775807"},
        {"spec.wrapped", "expected a number, got an array"},
        {"spec.c_int", "only one of \"c_str\" and \"c_int\" may be set"},
    };
    expect_errors(&kitchen_descriptor,
                  "{'prot': 1, 'u32': -5, 'i32': 3,"
                  " 'child': {'color': 'FOO', 'c_msg': {'by': '!', 'nope': 0},"
                  "           'rep_i64': ['1', '2', false]},"
                  " 'ints': {'k': '1', '9': '9223372036854775808'},"
                  " 'wrapped': [], 'c_str': 'x', 'c_int': '1'}",
                  "spec", want, sizeof(want) / sizeof(want[0]));
}

TL_TEST(test_partial_decode)
{
    /* The partial message keeps what decoded cleanly; it must still free cleanly. */
    json_t *j = tl_json("{'i32': 7, 'u32': -1, 'child': {'s': 1, 'i32': 2}, 'rep_i64': [null, '3'],"
                        " 'c_msg': {'b': 'no'}, 'ints': {'z': 'q'}}");
    sx_fielderrs errs = {0};
    ProtobufCMessage *m = NULL;
    assert_int_equal(pbjson_decode_partial(&kitchen_descriptor, j, "", &m, &errs), SX_EINVAL);
    assert_non_null(m);
    assert_int_equal(errs.count, 6);
    Kitchen *k = (Kitchen *)m;
    assert_int_equal(k->i32, 7);
    assert_int_equal(k->u32, 0);
    assert_non_null(k->child);
    assert_int_equal(k->child->i32, 2);
    assert_int_equal(k->n_rep_i64, 2);
    assert_int_equal(k->rep_i64[1], 3);
    assert_int_equal(k->choice_case, 25);
    protobuf_c_message_free_unpacked(m, NULL);
    sx_fielderrs_free(&errs);
    json_decref(j);
}

static void visit_count(const ProtobufCMessage *m, const char *path, void *ctx)
{
    (void)m;
    json_array_append_new(ctx, json_string(path));
}

TL_TEST(test_walk_paths)
{
    json_t *j = tl_json("{'child': {'child': {}}, 'c_msg': {}, 'wrapped': '1'}");
    ProtobufCMessage *m = decode_ok(&kitchen_descriptor, j);
    json_t *paths = json_array();
    pbjson_walk(m, "x", visit_count, paths);
    tl_assert_json_is(paths, "['x', 'x.child', 'x.child.child', 'x.wrapped', 'x.c_msg']");
    json_decref(paths);
    json_decref(j);
    protobuf_c_message_free_unpacked(m, NULL);
}

TL_MAIN_GROUP(setup_descriptors, NULL)
