/*
 * pbjson.c — proto3 JSON mapping for any protobuf-c message: what both directions share.
 *
 * Both directions walk the ProtobufCFieldDescriptor table of a message and reach each
 * field's storage through its offset and quantifier_offset, exactly as protobuf-c's own
 * pack and unpack do; nothing here knows a message type by name except the well-known
 * types, whose JSON forms are special. A map field is recognised by its shape (a repeated
 * <CamelCaseName>Entry message nested in its parent with key = 1 and value = 2), because
 * protobuf-c keeps no map flag.
 *
 * The encoder is pbjson_encode.c and the decoder pbjson_decode.c; this file holds what
 * both use (descriptor helpers, paths, UTF-8, the calendar) and pbjson_walk.
 */
#include "server/ir/pbjson.h"

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

/* ------------------------------------------------------------------ well-known types */

wkt pbjson_wkt_of(const ProtobufCMessageDescriptor *d)
{
    static const char *const wrappers[] = {
        "DoubleValue", "FloatValue", "Int64Value",  "UInt64Value", "Int32Value",
        "UInt32Value", "BoolValue",  "StringValue", "BytesValue",
    };
    if (strncmp(d->name, "google.protobuf.", 16) != 0)
        return WKT_NONE;
    const char *n = d->name + 16;
    if (strcmp(n, "Timestamp") == 0)
        return WKT_TIMESTAMP;
    if (strcmp(n, "Duration") == 0)
        return WKT_DURATION;
    if (strcmp(n, "Struct") == 0)
        return WKT_STRUCT;
    if (strcmp(n, "Value") == 0)
        return WKT_VALUE;
    if (strcmp(n, "ListValue") == 0)
        return WKT_LIST_VALUE;
    for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
        if (strcmp(n, wrappers[i]) == 0)
            return WKT_WRAPPER;
    return WKT_NONE;
}

bool pbjson_is_null_value_enum(const ProtobufCFieldDescriptor *f)
{
    return f->type == PROTOBUF_C_TYPE_ENUM &&
           strcmp(((const ProtobufCEnumDescriptor *)f->descriptor)->name,
                  "google.protobuf.NullValue") == 0;
}

/* True when JSON null is a value of the field rather than "not set": Value and NullValue. */
bool pbjson_null_is_value(const ProtobufCFieldDescriptor *f)
{
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        return pbjson_wkt_of(f->descriptor) == WKT_VALUE;
    return pbjson_is_null_value_enum(f);
}

/* ------------------------------------------------------------------ descriptor helpers */

const ProtobufCFieldDescriptor *pbjson_field_by_name(const ProtobufCMessageDescriptor *d,
                                                     const char *name)
{
    for (unsigned i = 0; i < d->n_fields; i++)
        if (strcmp(d->fields[i].name, name) == 0)
            return &d->fields[i];
    return NULL;
}

const ProtobufCFieldDescriptor *pbjson_field_by_id(const ProtobufCMessageDescriptor *d, uint32_t id)
{
    for (unsigned i = 0; i < d->n_fields; i++)
        if (d->fields[i].id == id)
            return &d->fields[i];
    return NULL;
}

/* lowerCamelCase JSON name of a field, as protoc computes json_name; false if too long. */
static bool json_name(const char *name, char *out, size_t outlen)
{
    size_t n = 0;
    bool upper = false;
    for (const char *p = name; *p; p++) {
        if (*p == '_') {
            upper = true;
            continue;
        }
        if (n + 1 >= outlen)
            return false;
        out[n++] = upper ? (char)toupper((unsigned char)*p) : *p;
        upper = false;
    }
    out[n] = '\0';
    return true;
}

/* Index of the field a JSON key names (proto name or lowerCamelCase name), or -1. */
int pbjson_find_field(const ProtobufCMessageDescriptor *d, const char *key)
{
    for (unsigned i = 0; i < d->n_fields; i++)
        if (strcmp(d->fields[i].name, key) == 0)
            return (int)i;
    char camel[256];
    for (unsigned i = 0; i < d->n_fields; i++)
        if (json_name(d->fields[i].name, camel, sizeof(camel)) && strcmp(camel, key) == 0)
            return (int)i;
    return -1;
}

/* A map field is a repeated message named <CamelCaseFieldName>Entry, nested in the
 * message that holds the field, with exactly the fields key = 1 and value = 2. */
bool pbjson_is_map_field(const ProtobufCMessageDescriptor *parent,
                         const ProtobufCFieldDescriptor *f)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return false;
    const ProtobufCMessageDescriptor *e = f->descriptor;
    if (e->n_fields != 2 || e->fields[0].id != 1 || e->fields[1].id != 2 ||
        strcmp(e->fields[0].name, "key") != 0 || strcmp(e->fields[1].name, "value") != 0)
        return false;
    char want[300];
    size_t n = 0;
    bool upper = true;
    for (const char *p = f->name; *p && n + 6 < sizeof(want); p++) {
        if (*p == '_') {
            upper = true;
            continue;
        }
        want[n++] = upper ? (char)toupper((unsigned char)*p) : *p;
        upper = false;
    }
    memcpy(want + n, "Entry", 6);
    size_t plen = strlen(parent->name);
    return strcmp(e->short_name, want) == 0 && strncmp(e->name, parent->name, plen) == 0 &&
           e->name[plen] == '.' && strcmp(e->name + plen + 1, want) == 0;
}

pbjson_int pbjson_int_kind(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return PBJSON_I32;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return PBJSON_U32;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return PBJSON_I64;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return PBJSON_U64;
    default:
        return PBJSON_NOT_INT;
    }
}

size_t pbjson_elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default: {
        pbjson_int k = pbjson_int_kind(t);
        return k == PBJSON_I32 || k == PBJSON_U32 ? 4 : k == PBJSON_NOT_INT ? 0 : 8;
    }
    }
}

ProtobufCMessage *pbjson_new_message(const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = sx_malloc(d->sizeof_message);
    protobuf_c_message_init(d, m);
    return m;
}

/* Whether a singular field holds a value that proto3 would write (not its default). */
bool pbjson_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return CMEMBER(uint32_t, m, f->quantifier_offset) == f->id;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return CMEMBER(size_t, m, f->quantifier_offset) > 0;
    if (f->label == PROTOBUF_C_LABEL_REQUIRED)
        return true;
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
        if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)
            return CMEMBER(const void *, m, f->offset) != NULL;
        return CMEMBER(protobuf_c_boolean, m, f->quantifier_offset) != 0;
    }
    const void *p = (const char *)m + f->offset;
    switch (f->type) {
    case PROTOBUF_C_TYPE_FLOAT:
        return *(const float *)p != 0;
    case PROTOBUF_C_TYPE_DOUBLE:
        return *(const double *)p != 0;
    case PROTOBUF_C_TYPE_BOOL:
        return *(const protobuf_c_boolean *)p != 0;
    case PROTOBUF_C_TYPE_STRING:
        return *(char *const *)p != NULL && (*(char *const *)p)[0] != '\0';
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)p)->len > 0;
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(ProtobufCMessage *const *)p != NULL;
    default: /* the integers and enums: 4 or 8 bytes */
        return pbjson_elem_size(f->type) == 8 ? *(const uint64_t *)p != 0
                                              : *(const uint32_t *)p != 0;
    }
}

/* Whether the field has explicit presence, so that "unset" is not a default to emit. */
bool pbjson_has_presence(const ProtobufCFieldDescriptor *f)
{
    return (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) || f->label == PROTOBUF_C_LABEL_OPTIONAL;
}

/* ------------------------------------------------------------------ paths */

void pbjson_path_field(sx_buf *path, const char *name)
{
    if (path->len)
        sx_buf_putc(path, '.');
    sx_buf_puts(path, name);
}

void pbjson_path_index(sx_buf *path, size_t index)
{
    sx_buf_put_index(path, index);
}

void pbjson_path_key(sx_buf *path, const char *key)
{
    sx_buf_puts(path, "[\"");
    for (const char *p = key; *p; p++) {
        if (*p == '"' || *p == '\\')
            sx_buf_putc(path, '\\');
        sx_buf_putc(path, *p);
    }
    sx_buf_puts(path, "\"]");
}

void pbjson_path_truncate(sx_buf *path, size_t len)
{
    path->len = len;
    if (path->data)
        path->data[len] = '\0';
}

/* ------------------------------------------------------------------ UTF-8, base64 */

bool pbjson_utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* A JSON string of s, with any invalid UTF-8 byte replaced by U+FFFD. */

/* ------------------------------------------------------------------ time */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
int64_t pbjson_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void pbjson_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

bool pbjson_is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* ------------------------------------------------------------------ walking */

static void walk(const ProtobufCMessage *m, sx_buf *path, pbjson_visit_fn fn, void *ctx)
{
    fn(m, sx_buf_cstr(path), ctx);
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (pbjson_wkt_of(d) != WKT_NONE)
        return;
    size_t base = path->len;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE || !pbjson_field_present(m, f))
            continue;
        pbjson_path_field(path, f->name);
        size_t fbase = path->len;
        if (f->label != PROTOBUF_C_LABEL_REPEATED) {
            walk(CMEMBER(ProtobufCMessage *, m, f->offset), path, fn, ctx);
        } else {
            size_t n = CMEMBER(size_t, m, f->quantifier_offset);
            ProtobufCMessage *const *arr = CMEMBER(ProtobufCMessage **, m, f->offset);
            bool map = pbjson_is_map_field(d, f);
            const ProtobufCFieldDescriptor *kf = map ? pbjson_field_by_id(f->descriptor, 1) : NULL;
            const ProtobufCFieldDescriptor *vf = map ? pbjson_field_by_id(f->descriptor, 2) : NULL;
            for (size_t k = 0; k < n; k++) {
                if (arr[k] == NULL)
                    continue;
                if (!map) {
                    pbjson_path_index(path, k);
                    walk(arr[k], path, fn, ctx);
                } else if (vf->type == PROTOBUF_C_TYPE_MESSAGE) {
                    ProtobufCMessage *v = CMEMBER(ProtobufCMessage *, arr[k], vf->offset);
                    if (v) {
                        char *key = pbjson_map_key_string(kf, (const char *)arr[k] + kf->offset);
                        pbjson_path_key(path, key);
                        sx_free(key);
                        walk(v, path, fn, ctx);
                    }
                }
                pbjson_path_truncate(path, fbase);
            }
        }
        pbjson_path_truncate(path, base);
    }
}

void pbjson_walk(const ProtobufCMessage *msg, const char *path_prefix, pbjson_visit_fn fn,
                 void *ctx)
{
    sx_buf path = {0};
    sx_buf_puts(&path, path_prefix ? path_prefix : "");
    walk(msg, &path, fn, ctx);
    sx_buf_free(&path);
}
