/*
 * fuzz_pbjson.c — libFuzzer target for the proto3 JSON codec (server/ir/pbjson*.c).
 *
 * The first byte picks the direction, the rest is the input:
 *   even  JSON text decoded as a message (a ConfigSnapshot, or one of the well-known
 *         types the codec maps specially); what decodes is encoded again, decoded again
 *         and must encode to the same JSON (the round trip of a clean document);
 *   odd   protobuf bytes unpacked as a ConfigSnapshot (untrusted bytes: a replica's
 *         stored snapshot), encoded as JSON (never fails), then decoded partially; when
 *         that JSON decodes cleanly, it must encode to the same JSON again.
 * Every decode also runs the partial decoder and walks what it kept.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "google/protobuf/wrappers.pb-c.h"
#include "server/base/fielderr.h"
#include "server/ir/ir.h"
#include "server/ir/pbjson.h"

static const ProtobufCMessageDescriptor *const DESCS[] = {
    &gateway__control__v1__config_snapshot__descriptor,
    &google__protobuf__timestamp__descriptor,
    &google__protobuf__duration__descriptor,
    &google__protobuf__struct__descriptor,
    &google__protobuf__value__descriptor,
    &google__protobuf__list_value__descriptor,
    &google__protobuf__any__descriptor,
    &google__protobuf__int64_value__descriptor,
    &google__protobuf__uint32_value__descriptor,
    &google__protobuf__double_value__descriptor,
    &google__protobuf__bytes_value__descriptor,
    &google__protobuf__bool_value__descriptor,
};
#define NDESCS (sizeof(DESCS) / sizeof(DESCS[0]))

/* json_equal, except that numbers compare by value: protobuf-c does not pack a double
 * field at -0.0 (it equals the default 0), so the binary form turns -0.0 into 0, which
 * the JSON form writes as an integer. */
static bool same_json(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_json(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (w == NULL || !same_json(v, w))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

static void visit(const ProtobufCMessage *msg, const char *path, void *ctx)
{
    (void)msg;
    *(size_t *)ctx += strlen(path);
}

static void partial(const ProtobufCMessageDescriptor *d, const json_t *j)
{
    sx_fielderrs errs = {0};
    ProtobufCMessage *m = NULL;
    (void)pbjson_decode_partial(d, j, "spec", &m, &errs);
    if (m) {
        size_t sum = 0;
        pbjson_walk(m, "spec", visit, &sum);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    sx_fielderrs_free(&errs);
}

static void from_json(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len)
{
    json_t *j = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    if (j == NULL)
        return;
    sx_fielderrs errs = {0};
    ProtobufCMessage *m = NULL;
    if (pbjson_decode(d, j, NULL, &m, &errs) == 0) {
        if (errs.count)
            abort(); /* success with problems reported */
        json_t *e1 = pbjson_encode(m, 0);
        ProtobufCMessage *m2 = NULL;
        if (pbjson_decode(d, e1, NULL, &m2, &errs) != 0)
            abort(); /* what the codec wrote, it must read back */
        json_t *e2 = pbjson_encode(m2, 0);
        if (!json_equal(e1, e2))
            abort(); /* the round trip changed the document */
        /* A packed message unpacks to the same JSON. */
        size_t n = protobuf_c_message_get_packed_size(m2);
        uint8_t *buf = malloc(n ? n : 1);
        protobuf_c_message_pack(m2, buf);
        ProtobufCMessage *m3 = protobuf_c_message_unpack(d, NULL, n, buf);
        if (m3 == NULL)
            abort();
        json_t *e3 = pbjson_encode(m3, PBJSON_EMIT_DEFAULTS);
        json_t *e2d = pbjson_encode(m2, PBJSON_EMIT_DEFAULTS);
        if (!same_json(e3, e2d))
            abort();
        json_decref(e3);
        json_decref(e2d);
        protobuf_c_message_free_unpacked(m3, NULL);
        free(buf);
        json_decref(e2);
        json_decref(e1);
        protobuf_c_message_free_unpacked(m2, NULL);
        protobuf_c_message_free_unpacked(m, NULL);
    } else if (m != NULL) {
        abort(); /* failure must leave *out NULL */
    }
    sx_fielderrs_free(&errs);
    partial(d, j);
    json_decref(j);
}

static void from_bytes(const uint8_t *data, size_t len)
{
    ir_snapshot *s = NULL;
    if (ir_snapshot_unpack(data, len, &s, NULL) != 0)
        return;
    json_t *j = pbjson_encode(&s->base, 0);
    char *text = json_dumps(j, JSON_COMPACT);
    if (text == NULL)
        abort(); /* the encoder must write valid JSON (UTF-8 strings) */
    free(text);
    partial(&gateway__control__v1__config_snapshot__descriptor, j);
    /* What decodes again must encode to the same JSON: the codec's two halves agree on
     * every value the binary form can carry. */
    sx_fielderrs errs = {0};
    ProtobufCMessage *m2 = NULL;
    if (pbjson_decode(&gateway__control__v1__config_snapshot__descriptor, j, NULL, &m2, &errs) ==
        0) {
        json_t *e2 = pbjson_encode(m2, 0);
        if (!json_equal(j, e2))
            abort();
        json_decref(e2);
        protobuf_c_message_free_unpacked(m2, NULL);
    }
    sx_fielderrs_free(&errs);
    json_t *jd = pbjson_encode(&s->base, PBJSON_EMIT_DEFAULTS);
    partial(&gateway__control__v1__config_snapshot__descriptor, jd);
    json_decref(jd);
    json_decref(j);
    ir_snapshot_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    if (sel & 1)
        from_bytes(data + 1, size - 1);
    else
        from_json(DESCS[(sel >> 1) % NDESCS], data + 1, size - 1);
    return 0;
}
