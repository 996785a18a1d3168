/*
 * pbjson_encode.c — protobuf-c message to proto3 JSON, driven by descriptors.
 *
 * Walks a message's field descriptors in order and writes each set field (every field
 * with PBJSON_EMIT_DEFAULTS) under its .proto name; the well-known types get their
 * special forms. Encoding never fails: invalid UTF-8 becomes U+FFFD and values no JSON
 * form can carry are written as best they can be, for the decoder to report.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/mem.h"

#include "server/ir/pbjson_internal.h"

/* Appends s (n bytes) to b with any invalid UTF-8 byte replaced by U+FFFD. */
static void append_lossy(sx_buf *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t len = 1;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0xC0 && c < 0xF8)
            len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + len <= n && pbjson_utf8_valid((const unsigned char *)s + i, len))
            sx_buf_append(b, s + i, len);
        else {
            sx_buf_puts(b, "\xEF\xBF\xBD");
            len = 1;
        }
        i += len;
    }
}

/* A JSON string of s, with any invalid UTF-8 byte replaced by U+FFFD. */
static json_t *json_string_lossy(const char *s)
{
    if (s == NULL)
        return json_string("");
    size_t n = strlen(s);
    if (pbjson_utf8_valid((const unsigned char *)s, n))
        return json_stringn(s, n);
    sx_buf b = {0};
    append_lossy(&b, s, n);
    json_t *j = json_stringn(b.data, b.len);
    sx_buf_free(&b);
    return j;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static json_t *base64_encode(const ProtobufCBinaryData *bd)
{
    size_t n = bd->len, outlen = (n + 2) / 3 * 4;
    char *out = sx_malloc(outlen + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)bd->data[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)bd->data[i + 1] << 8;
        if (i + 2 < n)
            v |= bd->data[i + 2];
        out[o++] = B64[(v >> 18) & 63];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? B64[v & 63] : '=';
    }
    json_t *j = json_stringn(out, o);
    sx_free(out);
    return j;
}

/* Appends "", ".123", ".123456" or ".123456789" for nanos in [0, 1e9). */
static void put_fraction(sx_buf *b, uint32_t nanos)
{
    if (nanos == 0)
        return;
    if (nanos % 1000000 == 0)
        sx_buf_printf(b, ".%03u", nanos / 1000000);
    else if (nanos % 1000 == 0)
        sx_buf_printf(b, ".%06u", nanos / 1000);
    else
        sx_buf_printf(b, ".%09u", nanos);
}

static json_t *timestamp_encode(int64_t seconds, int32_t nanos)
{
    /* Normalise nanos into [0, 1e9) so that a sloppy sender still gets a valid string;
     * absurd seconds are clamped first so that the arithmetic cannot overflow. */
    if (seconds > INT64_MAX / 2)
        seconds = INT64_MAX / 2;
    if (seconds < INT64_MIN / 2)
        seconds = INT64_MIN / 2;
    seconds += nanos / 1000000000;
    nanos %= 1000000000;
    if (nanos < 0) {
        nanos += 1000000000;
        seconds--;
    }
    int64_t days = seconds / 86400, rem = seconds % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    unsigned mo, d;
    pbjson_civil_from_days(days, &y, &mo, &d);
    sx_buf b = {0};
    sx_buf_printf(&b, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u", y, mo, d, (unsigned)(rem / 3600),
                  (unsigned)(rem / 60 % 60), (unsigned)(rem % 60));
    put_fraction(&b, (uint32_t)nanos);
    sx_buf_putc(&b, 'Z');
    json_t *j = json_stringn(b.data, b.len);
    sx_buf_free(&b);
    return j;
}

static json_t *duration_encode(int64_t seconds, int32_t nanos)
{
    bool neg = seconds < 0 || nanos < 0;
    uint64_t us = seconds < 0 ? (uint64_t)0 - (uint64_t)seconds : (uint64_t)seconds;
    uint32_t un = nanos < 0 ? (uint32_t)0 - (uint32_t)nanos : (uint32_t)nanos;
    us += un / 1000000000;
    un %= 1000000000;
    sx_buf b = {0};
    sx_buf_printf(&b, "%s%" PRIu64, neg ? "-" : "", us);
    put_fraction(&b, un);
    sx_buf_putc(&b, 's');
    json_t *j = json_stringn(b.data, b.len);
    sx_buf_free(&b);
    return j;
}

/* ------------------------------------------------------------------ encoding */

static json_t *encode_message(const ProtobufCMessage *m, unsigned flags);

static json_t *encode_double(double d)
{
    if (isnan(d))
        return json_string("NaN");
    if (isinf(d))
        return json_string(d > 0 ? "Infinity" : "-Infinity");
    /* Integral values print as integers, as other proto3 JSON encoders do, so that a
     * document written with "burst": 2 comes back unchanged. */
    if (d == trunc(d) && fabs(d) < 9007199254740992.0 && !(d == 0 && signbit(d)))
        return json_integer((json_int_t)d);
    return json_real(d);
}

static json_t *encode_enum(const ProtobufCFieldDescriptor *f, int32_t v)
{
    if (pbjson_is_null_value_enum(f))
        return json_null();
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    for (unsigned i = 0; i < ed->n_values; i++)
        if (ed->values[i].value == v)
            return json_string(ed->values[i].name);
    return json_integer(v);
}

/* Encodes the value stored at p (one element for repeated fields). */
static json_t *encode_single(const ProtobufCFieldDescriptor *f, const void *p, unsigned flags)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_FLOAT:
        return encode_double(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return encode_double(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM:
        return encode_enum(f, *(const int32_t *)p);
    case PROTOBUF_C_TYPE_STRING:
        return json_string_lossy(*(char *const *)p);
    case PROTOBUF_C_TYPE_BYTES:
        return base64_encode(p);
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        return sub ? encode_message(sub, flags) : json_null();
    }
    default: {
        /* 32-bit integers are JSON numbers, 64-bit ones strings (the map key's text). */
        pbjson_int k = pbjson_int_kind(f->type);
        if (k == PBJSON_I32)
            return json_integer(*(const int32_t *)p);
        if (k == PBJSON_U32)
            return json_integer(*(const uint32_t *)p);
        char *text = pbjson_map_key_string(f, p);
        json_t *j = k == PBJSON_NOT_INT ? json_null() : json_string(text);
        sx_free(text);
        return j;
    }
    }
}

/* The JSON object key of a map entry's key field. */
char *pbjson_map_key_string(const ProtobufCFieldDescriptor *kf, const void *p)
{
    switch (kf->type) {
    case PROTOBUF_C_TYPE_STRING:
        return sx_strdup(*(char *const *)p ? *(char *const *)p : "");
    case PROTOBUF_C_TYPE_BOOL:
        return sx_strdup(*(const protobuf_c_boolean *)p ? "true" : "false");
    default:
        break;
    }
    switch (pbjson_int_kind(kf->type)) {
    case PBJSON_I32:
        return sx_asprintf("%" PRId32, *(const int32_t *)p);
    case PBJSON_U32:
        return sx_asprintf("%" PRIu32, *(const uint32_t *)p);
    case PBJSON_I64:
        return sx_asprintf("%" PRId64, *(const int64_t *)p);
    case PBJSON_U64:
        return sx_asprintf("%" PRIu64, *(const uint64_t *)p);
    case PBJSON_NOT_INT:
        break;
    }
    return sx_strdup("");
}

static json_t *encode_map(const ProtobufCFieldDescriptor *f, const ProtobufCMessage *m,
                          unsigned flags)
{
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &ed->fields[0], *vf = &ed->fields[1];
    size_t n = CMEMBER(size_t, m, f->quantifier_offset);
    ProtobufCMessage *const *arr = CMEMBER(ProtobufCMessage **, m, f->offset);
    json_t *obj = json_object();
    for (size_t i = 0; i < n; i++) {
        const ProtobufCMessage *e = arr[i];
        if (e == NULL)
            continue;
        char *key = pbjson_map_key_string(kf, (const char *)e + kf->offset);
        const void *vp = (const char *)e + vf->offset;
        json_t *v;
        if (vf->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage *const *)vp == NULL)
            v = pbjson_null_is_value(vf) ? json_null() : json_object();
        else
            v = encode_single(vf, vp, flags);
        /* An object key must be UTF-8 as well: bad bytes become U+FFFD, like in values
         * (keys that differ only there collapse into one, the last one kept). */
        size_t klen = strlen(key);
        if (pbjson_utf8_valid((const unsigned char *)key, klen)) {
            json_object_setn_new(obj, key, klen, v);
        } else {
            sx_buf fixed = {0};
            append_lossy(&fixed, key, klen);
            json_object_setn_new(obj, fixed.data, fixed.len, v);
            sx_buf_free(&fixed);
        }
        sx_free(key);
    }
    return obj;
}

static json_t *encode_field(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                            unsigned flags)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (pbjson_is_map_field(m->descriptor, f))
            return encode_map(f, m, flags);
        size_t n = CMEMBER(size_t, m, f->quantifier_offset);
        const char *arr = CMEMBER(const char *, m, f->offset);
        size_t es = pbjson_elem_size(f->type);
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, encode_single(f, arr + i * es, flags));
        return a;
    }
    return encode_single(f, (const char *)m + f->offset, flags);
}

static json_t *encode_wkt(const ProtobufCMessage *m, wkt kind, unsigned flags)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    switch (kind) {
    case WKT_TIMESTAMP:
    case WKT_DURATION: {
        int64_t s = CMEMBER(int64_t, m, pbjson_field_by_name(d, "seconds")->offset);
        int32_t n = CMEMBER(int32_t, m, pbjson_field_by_name(d, "nanos")->offset);
        return kind == WKT_TIMESTAMP ? timestamp_encode(s, n) : duration_encode(s, n);
    }
    case WKT_STRUCT:
        return encode_map(pbjson_field_by_name(d, "fields"), m, flags);
    case WKT_LIST_VALUE:
        return encode_field(m, pbjson_field_by_name(d, "values"), flags);
    case WKT_WRAPPER:
        return encode_field(m, pbjson_field_by_name(d, "value"), flags);
    case WKT_VALUE:
        for (unsigned i = 0; i < d->n_fields; i++)
            if (pbjson_field_present(m, &d->fields[i]))
                return encode_field(m, &d->fields[i], flags);
        return json_null();
    case WKT_NONE:
        break;
    }
    return json_null();
}

static json_t *encode_message(const ProtobufCMessage *m, unsigned flags)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    wkt kind = pbjson_wkt_of(d);
    if (kind != WKT_NONE)
        return encode_wkt(m, kind, flags);
    json_t *obj = json_object();
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (!pbjson_field_present(m, f) &&
            (!(flags & PBJSON_EMIT_DEFAULTS) || pbjson_has_presence(f)))
            continue;
        json_object_set_new(obj, f->name, encode_field(m, f, flags));
    }
    return obj;
}

json_t *pbjson_encode(const ProtobufCMessage *msg, unsigned flags)
{
    return encode_message(msg, flags);
}
