/*
 * pbjson.c — proto3 JSON mapping for any protobuf-c message, driven by descriptors.
 *
 * Both directions walk the ProtobufCFieldDescriptor table of a message and reach each
 * field's storage through its offset and quantifier_offset, exactly as protobuf-c's own
 * pack and unpack do; nothing here knows a message type by name except the well-known
 * types, whose JSON forms are special. A map field is recognised by its shape (a repeated
 * <CamelCaseName>Entry message nested in its parent with key = 1 and value = 2), because
 * protobuf-c keeps no map flag.
 *
 * The decoder builds messages with the system allocator (through sx_malloc/sx_strdup,
 * which abort on out-of-memory) and keeps every message freeable by
 * protobuf_c_message_free_unpacked(msg, NULL) at every step, so an error anywhere only
 * means "free the whole tree". It never stops at the first error: each problem is added
 * to the caller's sx_fielderrs with the path of the offending value, and the value is
 * left at its default.
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

#define MEMBER(type, msg, off)  (*(type *)((char *)(msg) + (off)))
#define CMEMBER(type, msg, off) (*(type const *)((const char *)(msg) + (off)))

/* User input quoted in an error message is cut to this many bytes. */
#define QUOTE_MAX 64

/* Timestamp range of the proto3 JSON mapping: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z. */
#define TS_MIN_SECONDS INT64_C(-62135596800)
#define TS_MAX_SECONDS INT64_C(253402300799)
/* Duration range: about +-10,000 years. */
#define DUR_MAX_SECONDS INT64_C(315576000000)

/* ------------------------------------------------------------------ well-known types */

typedef enum wkt {
    WKT_NONE,
    WKT_TIMESTAMP,
    WKT_DURATION,
    WKT_STRUCT,
    WKT_VALUE,
    WKT_LIST_VALUE,
    WKT_WRAPPER,
} wkt;

static wkt wkt_of(const ProtobufCMessageDescriptor *d)
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

static bool is_null_value_enum(const ProtobufCFieldDescriptor *f)
{
    return f->type == PROTOBUF_C_TYPE_ENUM &&
           strcmp(((const ProtobufCEnumDescriptor *)f->descriptor)->name,
                  "google.protobuf.NullValue") == 0;
}

/* True when JSON null is a value of the field rather than "not set": Value and NullValue. */
static bool null_is_value(const ProtobufCFieldDescriptor *f)
{
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        return wkt_of(f->descriptor) == WKT_VALUE;
    return is_null_value_enum(f);
}

/* ------------------------------------------------------------------ descriptor helpers */

static const ProtobufCFieldDescriptor *field_by_name(const ProtobufCMessageDescriptor *d,
                                                     const char *name)
{
    for (unsigned i = 0; i < d->n_fields; i++)
        if (strcmp(d->fields[i].name, name) == 0)
            return &d->fields[i];
    return NULL;
}

static const ProtobufCFieldDescriptor *field_by_id(const ProtobufCMessageDescriptor *d, uint32_t id)
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
static int find_field(const ProtobufCMessageDescriptor *d, const char *key)
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
static bool is_map_field(const ProtobufCMessageDescriptor *parent,
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

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
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
    }
    return 0;
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = sx_malloc(d->sizeof_message);
    protobuf_c_message_init(d, m);
    return m;
}

/* Whether a singular field holds a value that proto3 would write (not its default). */
static bool field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
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
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return *(const uint32_t *)p != 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return *(const uint64_t *)p != 0;
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
    }
    return false;
}

/* Whether the field has explicit presence, so that "unset" is not a default to emit. */
static bool has_presence(const ProtobufCFieldDescriptor *f)
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
    sx_buf_printf(path, "[%zu]", index);
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

static void path_truncate(sx_buf *path, size_t len)
{
    path->len = len;
    if (path->data)
        path->data[len] = '\0';
}

/* ------------------------------------------------------------------ UTF-8, base64 */

static bool utf8_valid(const unsigned char *s, size_t n)
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
static json_t *json_string_lossy(const char *s)
{
    if (s == NULL)
        return json_string("");
    size_t n = strlen(s);
    if (utf8_valid((const unsigned char *)s, n))
        return json_stringn(s, n);
    sx_buf b = {0};
    size_t i = 0;
    while (i < n) {
        size_t len = 1;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0xC0 && c < 0xF8)
            len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + len <= n && utf8_valid((const unsigned char *)s + i, len))
            sx_buf_append(&b, s + i, len);
        else {
            sx_buf_puts(&b, "\xEF\xBF\xBD");
            len = 1;
        }
        i += len;
    }
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

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Decodes standard or URL-safe base64, padded or not. False on bad input. */
static bool base64_decode(const char *s, size_t n, ProtobufCBinaryData *out)
{
    size_t pad = 0;
    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1 || (pad && (n + pad) % 4 != 0))
        return false;
    uint8_t *data = n ? sx_malloc(n / 4 * 3 + 3) : NULL;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(s[i]);
        if (v < 0) {
            sx_free(data);
            return false;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            data[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    out->len = o;
    out->data = data;
    return true;
}

/* ------------------------------------------------------------------ time */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
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

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
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
    civil_from_days(days, &y, &mo, &d);
    sx_buf b = {0};
    sx_buf_printf(&b, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u", y, mo, d, (unsigned)(rem / 3600),
                  (unsigned)(rem / 60 % 60), (unsigned)(rem % 60));
    put_fraction(&b, (uint32_t)nanos);
    sx_buf_putc(&b, 'Z');
    json_t *j = json_stringn(b.data, b.len);
    sx_buf_free(&b);
    return j;
}

/* Reads exactly n digits at *p; false if any is not a digit. */
static bool digits(const char **p, int n, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return false;
        v = v * 10 + (unsigned)((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Reads ".f{1,9}" at *p if present into nanos; NULL or the reason it is bad. */
static const char *fraction(const char **p, int32_t *nanos)
{
    *nanos = 0;
    if (**p != '.')
        return NULL;
    (*p)++;
    int n = 0;
    int32_t v = 0;
    while (isdigit((unsigned char)**p)) {
        if (++n > 9)
            return "at most 9 fractional digits are allowed";
        v = v * 10 + (**p - '0');
        (*p)++;
    }
    if (n == 0)
        return "expected digits after the decimal point";
    while (n++ < 9)
        v *= 10;
    *nanos = v;
    return NULL;
}

/* Parses an RFC 3339 timestamp; NULL on success or the reason it is invalid. */
static const char *timestamp_parse(const char *s, int64_t *seconds, int32_t *nanos)
{
    static const char syntax[] = "expected RFC 3339 format such as 2026-01-02T03:04:05Z";
    const char *p = s;
    unsigned y, mo, d, h, mi, se, oh = 0, om = 0;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't') || !(p++, digits(&p, 2, &h)) ||
        *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &se))
        return syntax;
    const char *why = fraction(&p, nanos);
    if (why)
        return why;
    int sign = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '-' ? -1 : 1;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
            return syntax;
    } else {
        return syntax;
    }
    if (*p != '\0')
        return syntax;
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)) || h > 23 ||
        mi > 59 || se > 59 || oh > 23 || om > 59)
        return "date/time field value out of range";
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    t -= sign * (int64_t)(oh * 3600 + om * 60);
    if (t < TS_MIN_SECONDS || t > TS_MAX_SECONDS)
        return "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z";
    *seconds = t;
    return NULL;
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

/* Parses "-1.5s"; NULL on success or the reason it is invalid. */
static const char *duration_parse(const char *s, int64_t *seconds, int32_t *nanos)
{
    size_t n = strlen(s);
    if (n == 0 || s[n - 1] != 's')
        return "must end in s";
    const char *p = s;
    bool neg = *p == '-';
    if (neg)
        p++;
    if (!isdigit((unsigned char)*p))
        return "expected seconds such as \"1.5s\"";
    uint64_t v = 0;
    while (isdigit((unsigned char)*p)) {
        if (v > (uint64_t)DUR_MAX_SECONDS)
            return "must be between -315576000000s and 315576000000s";
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    const char *why = fraction(&p, nanos);
    if (why)
        return why;
    if (*p != 's' || p[1] != '\0')
        return "expected seconds such as \"1.5s\"";
    if (v > (uint64_t)DUR_MAX_SECONDS)
        return "must be between -315576000000s and 315576000000s";
    *seconds = neg ? -(int64_t)v : (int64_t)v;
    if (neg)
        *nanos = -*nanos;
    return NULL;
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
    if (is_null_value_enum(f))
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
    char num[32];
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(num, sizeof(num), "%" PRId64, *(const int64_t *)p);
        return json_string(num);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(num, sizeof(num), "%" PRIu64, *(const uint64_t *)p);
        return json_string(num);
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
    }
    return json_null();
}

/* The JSON object key of a map entry's key field. */
static char *map_key_string(const ProtobufCFieldDescriptor *kf, const void *p)
{
    switch (kf->type) {
    case PROTOBUF_C_TYPE_STRING:
        return sx_strdup(*(char *const *)p ? *(char *const *)p : "");
    case PROTOBUF_C_TYPE_BOOL:
        return sx_strdup(*(const protobuf_c_boolean *)p ? "true" : "false");
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return sx_asprintf("%" PRId32, *(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return sx_asprintf("%" PRIu32, *(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return sx_asprintf("%" PRId64, *(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return sx_asprintf("%" PRIu64, *(const uint64_t *)p);
    default:
        return sx_strdup("");
    }
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
        char *key = map_key_string(kf, (const char *)e + kf->offset);
        const void *vp = (const char *)e + vf->offset;
        json_t *v;
        if (vf->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage *const *)vp == NULL)
            v = null_is_value(vf) ? json_null() : json_object();
        else
            v = encode_single(vf, vp, flags);
        /* Keys that are not valid UTF-8 cannot be object keys; they are dropped. */
        if (utf8_valid((const unsigned char *)key, strlen(key)))
            json_object_set_new(obj, key, v);
        else
            json_decref(v);
        sx_free(key);
    }
    return obj;
}

static json_t *encode_field(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                            unsigned flags)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (is_map_field(m->descriptor, f))
            return encode_map(f, m, flags);
        size_t n = CMEMBER(size_t, m, f->quantifier_offset);
        const char *arr = CMEMBER(const char *, m, f->offset);
        size_t es = elem_size(f->type);
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
        int64_t s = CMEMBER(int64_t, m, field_by_name(d, "seconds")->offset);
        int32_t n = CMEMBER(int32_t, m, field_by_name(d, "nanos")->offset);
        return kind == WKT_TIMESTAMP ? timestamp_encode(s, n) : duration_encode(s, n);
    }
    case WKT_STRUCT:
        return encode_map(field_by_name(d, "fields"), m, flags);
    case WKT_LIST_VALUE:
        return encode_field(m, field_by_name(d, "values"), flags);
    case WKT_WRAPPER:
        return encode_field(m, field_by_name(d, "value"), flags);
    case WKT_VALUE:
        for (unsigned i = 0; i < d->n_fields; i++)
            if (field_present(m, &d->fields[i]))
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
    wkt kind = wkt_of(d);
    if (kind != WKT_NONE)
        return encode_wkt(m, kind, flags);
    json_t *obj = json_object();
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (!field_present(m, f) && (!(flags & PBJSON_EMIT_DEFAULTS) || has_presence(f)))
            continue;
        json_object_set_new(obj, f->name, encode_field(m, f, flags));
    }
    return obj;
}

json_t *pbjson_encode(const ProtobufCMessage *msg, unsigned flags)
{
    return encode_message(msg, flags);
}

/* ------------------------------------------------------------------ decoding */

typedef struct dctx {
    sx_fielderrs *errs;
    sx_buf path; /* location of the value being decoded */
} dctx;

static void fail(dctx *c, const char *fmt, ...) SX_PRINTF(2, 3);
static void fail(dctx *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sx_fielderrs_add(c->errs, sx_buf_cstr(&c->path), "%s", msg);
}

static const char *jtype(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a value";
}

typedef enum numres { NUM_OK, NUM_SYNTAX, NUM_RANGE, NUM_FRACTION } numres;

/* Whether s looks like a JSON number (or "-0"), so that strtod accepts no other forms. */
static bool numeric_syntax(const char *s)
{
    if (*s == '-')
        s++;
    if (!isdigit((unsigned char)*s) && *s != '.')
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && !strchr(".eE+-", *s))
            return false;
    return true;
}

static bool all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* A double from a numeric string in the JSON number form; false on bad syntax. */
static bool parse_double_str(const char *s, double *out, bool *overflow)
{
    *overflow = false;
    if (!numeric_syntax(s))
        return false;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end != '\0')
        return false;
    if (errno == ERANGE && isinf(d))
        *overflow = true;
    *out = d;
    return true;
}

/* An integral double into [min, max]; NUM_FRACTION if it has a fractional part. */
static numres double_to_i64(double d, int64_t min, int64_t max, int64_t *out)
{
    if (!isfinite(d))
        return NUM_RANGE;
    if (d != trunc(d))
        return NUM_FRACTION;
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return NUM_RANGE;
    int64_t v = (int64_t)d;
    if (v < min || v > max)
        return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

static numres double_to_u64(double d, uint64_t max, uint64_t *out)
{
    if (!isfinite(d))
        return NUM_RANGE;
    if (d != trunc(d))
        return NUM_FRACTION;
    if (d < 0 || d >= 18446744073709551616.0)
        return NUM_RANGE;
    uint64_t v = (uint64_t)d;
    if (v > max)
        return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

static numres str_to_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    const char *digs = *s == '-' ? s + 1 : s;
    if (all_digits(digs)) {
        errno = 0;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (errno == ERANGE || v < min || v > max)
            return NUM_RANGE;
        *out = v;
        return NUM_OK;
    }
    double d;
    bool overflow;
    if (!parse_double_str(s, &d, &overflow))
        return NUM_SYNTAX;
    return double_to_i64(d, min, max, out);
}

static numres str_to_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (*s == '-' && all_digits(s + 1)) {
        for (const char *p = s + 1; *p; p++)
            if (*p != '0')
                return NUM_RANGE;
        *out = 0;
        return NUM_OK;
    }
    if (all_digits(s)) {
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno == ERANGE || v > max)
            return NUM_RANGE;
        *out = v;
        return NUM_OK;
    }
    double d;
    bool overflow;
    if (!parse_double_str(s, &d, &overflow))
        return NUM_SYNTAX;
    return double_to_u64(d, max, out);
}

static void fail_num(dctx *c, numres r, const json_t *j, bool is_signed, int64_t min, uint64_t max)
{
    if (r == NUM_SYNTAX)
        fail(c, "expected a number, got %s", jtype(j));
    else if (r == NUM_FRACTION)
        fail(c, "must be an integer");
    else if (is_signed)
        fail(c, "must be between %" PRId64 " and %" PRIu64, min, max);
    else
        fail(c, "must be between 0 and %" PRIu64, max);
}

static bool decode_i64(dctx *c, const json_t *j, int64_t min, int64_t max, int64_t *out)
{
    numres r;
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        r = v < min || v > max ? NUM_RANGE : NUM_OK;
        if (r == NUM_OK)
            *out = v;
    } else if (json_is_real(j)) {
        r = double_to_i64(json_real_value(j), min, max, out);
    } else if (json_is_string(j)) {
        r = str_to_i64(json_string_value(j), min, max, out);
    } else {
        r = NUM_SYNTAX;
    }
    if (r != NUM_OK)
        fail_num(c, r, j, true, min, (uint64_t)max);
    return r == NUM_OK;
}

static bool decode_u64(dctx *c, const json_t *j, uint64_t max, uint64_t *out)
{
    numres r;
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        r = v < 0 || (uint64_t)v > max ? NUM_RANGE : NUM_OK;
        if (r == NUM_OK)
            *out = (uint64_t)v;
    } else if (json_is_real(j)) {
        r = double_to_u64(json_real_value(j), max, out);
    } else if (json_is_string(j)) {
        r = str_to_u64(json_string_value(j), max, out);
    } else {
        r = NUM_SYNTAX;
    }
    if (r != NUM_OK)
        fail_num(c, r, j, false, 0, max);
    return r == NUM_OK;
}

static bool decode_double(dctx *c, const json_t *j, bool is_float, double *out)
{
    double d;
    if (json_is_integer(j)) {
        d = (double)json_integer_value(j);
    } else if (json_is_real(j)) {
        d = json_real_value(j);
    } else if (json_is_string(j)) {
        const char *s = json_string_value(j);
        bool overflow = false;
        if (strcmp(s, "NaN") == 0)
            d = NAN;
        else if (strcmp(s, "Infinity") == 0)
            d = INFINITY;
        else if (strcmp(s, "-Infinity") == 0)
            d = -INFINITY;
        else if (!parse_double_str(s, &d, &overflow)) {
            fail(c, "expected a number, got a string");
            return false;
        }
        if (overflow) {
            fail(c, "must be between -1.7976931348623157e+308 and 1.7976931348623157e+308");
            return false;
        }
    } else {
        fail(c, "expected a number, got %s", jtype(j));
        return false;
    }
    if (is_float && isfinite(d) && fabs(d) > FLT_MAX) {
        fail(c, "must be between -3.40282347e+38 and 3.40282347e+38");
        return false;
    }
    *out = d;
    return true;
}

static bool decode_enum(dctx *c, const ProtobufCFieldDescriptor *f, const json_t *j, int32_t *out)
{
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    if (json_is_null(j) && is_null_value_enum(f)) {
        *out = 0;
        return true;
    }
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        for (unsigned i = 0; i < ed->n_values; i++)
            if (strcmp(ed->values[i].name, s) == 0) {
                *out = ed->values[i].value;
                return true;
            }
        fail(c, "invalid enum value \"%.*s\" for %s", QUOTE_MAX, s, ed->name);
        return false;
    }
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        for (unsigned i = 0; i < ed->n_values; i++)
            if (ed->values[i].value == v) {
                *out = (int32_t)v;
                return true;
            }
        fail(c, "invalid enum value %" JSON_INTEGER_FORMAT " for %s", v, ed->name);
        return false;
    }
    fail(c, "expected a string or a number, got %s", jtype(j));
    return false;
}

/* A copy of a JSON string if it can be a protobuf string, else NULL with an error. */
static char *decode_string(dctx *c, const json_t *j)
{
    if (!json_is_string(j)) {
        fail(c, "expected a string, got %s", jtype(j));
        return NULL;
    }
    const char *s = json_string_value(j);
    size_t n = json_string_length(j);
    if (strlen(s) != n) {
        fail(c, "must not contain NUL characters");
        return NULL;
    }
    if (!utf8_valid((const unsigned char *)s, n)) {
        fail(c, "must be valid UTF-8");
        return NULL;
    }
    return sx_strndup(s, n);
}

static void decode_message(dctx *c, const ProtobufCMessageDescriptor *d, const json_t *j,
                           ProtobufCMessage *m);

/* Decodes j into the storage of one value of f at p. Returns false when it added an
 * error; p then keeps its previous (default) content, except that a message is always
 * allocated so that the errors inside it are all found. */
static bool decode_single(dctx *c, const ProtobufCFieldDescriptor *f, const json_t *j, void *p)
{
    int64_t i;
    uint64_t u;
    double d;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if (!decode_i64(c, j, INT32_MIN, INT32_MAX, &i))
            return false;
        *(int32_t *)p = (int32_t)i;
        return true;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (!decode_u64(c, j, UINT32_MAX, &u))
            return false;
        *(uint32_t *)p = (uint32_t)u;
        return true;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if (!decode_i64(c, j, INT64_MIN, INT64_MAX, &i))
            return false;
        *(int64_t *)p = i;
        return true;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (!decode_u64(c, j, UINT64_MAX, &u))
            return false;
        *(uint64_t *)p = u;
        return true;
    case PROTOBUF_C_TYPE_FLOAT:
        if (!decode_double(c, j, true, &d))
            return false;
        *(float *)p = (float)d;
        return true;
    case PROTOBUF_C_TYPE_DOUBLE:
        if (!decode_double(c, j, false, &d))
            return false;
        *(double *)p = d;
        return true;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(j)) {
            fail(c, "expected a boolean, got %s", jtype(j));
            return false;
        }
        *(protobuf_c_boolean *)p = json_is_true(j);
        return true;
    case PROTOBUF_C_TYPE_ENUM:
        return decode_enum(c, f, j, (int32_t *)p);
    case PROTOBUF_C_TYPE_STRING: {
        char *s = decode_string(c, j);
        if (s == NULL)
            return false;
        *(char **)p = s;
        return true;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        if (!json_is_string(j)) {
            fail(c, "expected a base64 string, got %s", jtype(j));
            return false;
        }
        if (!base64_decode(json_string_value(j), json_string_length(j), (ProtobufCBinaryData *)p)) {
            fail(c, "invalid base64 data");
            return false;
        }
        return true;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        ProtobufCMessage **sp = p;
        if (*sp == NULL)
            *sp = new_message(f->descriptor);
        size_t before = c->errs->count;
        decode_message(c, f->descriptor, j, *sp);
        return c->errs->count == before;
    }
    }
    return false;
}

/* Parses a JSON object key into the key field of a map entry. */
static void decode_map_key(dctx *c, const ProtobufCFieldDescriptor *kf, const char *key, void *p)
{
    int64_t i = 0;
    uint64_t u = 0;
    numres r = NUM_OK;
    switch (kf->type) {
    case PROTOBUF_C_TYPE_STRING:
        if (!utf8_valid((const unsigned char *)key, strlen(key)))
            fail(c, "invalid map key: must be valid UTF-8");
        else
            *(char **)p = sx_strdup(key);
        return;
    case PROTOBUF_C_TYPE_BOOL:
        if (strcmp(key, "true") == 0 || strcmp(key, "false") == 0)
            *(protobuf_c_boolean *)p = key[0] == 't';
        else
            fail(c, "invalid map key \"%.*s\": expected true or false", QUOTE_MAX, key);
        return;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        r = str_to_i64(key, INT32_MIN, INT32_MAX, &i);
        if (r == NUM_OK)
            *(int32_t *)p = (int32_t)i;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        r = str_to_i64(key, INT64_MIN, INT64_MAX, &i);
        if (r == NUM_OK)
            *(int64_t *)p = i;
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        r = str_to_u64(key, UINT32_MAX, &u);
        if (r == NUM_OK)
            *(uint32_t *)p = (uint32_t)u;
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        r = str_to_u64(key, UINT64_MAX, &u);
        if (r == NUM_OK)
            *(uint64_t *)p = u;
        break;
    default:
        fail(c, "map key type is not supported");
        return;
    }
    if (r == NUM_SYNTAX || r == NUM_FRACTION)
        fail(c, "invalid map key \"%.*s\": expected an integer", QUOTE_MAX, key);
    else if (r == NUM_RANGE)
        fail(c, "invalid map key \"%.*s\": out of range", QUOTE_MAX, key);
}

static void decode_map(dctx *c, const ProtobufCFieldDescriptor *f, const json_t *j,
                       ProtobufCMessage *m)
{
    if (!json_is_object(j)) {
        fail(c, "expected an object, got %s", jtype(j));
        return;
    }
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = field_by_id(ed, 1), *vf = field_by_id(ed, 2);
    size_t n = json_object_size(j);
    if (n == 0)
        return;
    ProtobufCMessage **arr = sx_calloc(n, sizeof(*arr));
    MEMBER(ProtobufCMessage **, m, f->offset) = arr;
    MEMBER(size_t, m, f->quantifier_offset) = n;
    size_t i = 0, base = c->path.len;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val)
    {
        ProtobufCMessage *e = new_message(ed);
        arr[i++] = e;
        pbjson_path_key(&c->path, key);
        decode_map_key(c, kf, key, (char *)e + kf->offset);
        if (json_is_null(val) && !null_is_value(vf))
            fail(c, "must not be null");
        else
            decode_single(c, vf, val, (char *)e + vf->offset);
        path_truncate(&c->path, base);
    }
}

static void decode_repeated(dctx *c, const ProtobufCFieldDescriptor *f, const json_t *j,
                            ProtobufCMessage *m)
{
    if (!json_is_array(j)) {
        fail(c, "expected an array, got %s", jtype(j));
        return;
    }
    size_t n = json_array_size(j);
    if (n == 0)
        return;
    size_t es = elem_size(f->type);
    char *arr = sx_calloc(n, es);
    MEMBER(void *, m, f->offset) = arr;
    MEMBER(size_t, m, f->quantifier_offset) = n;
    size_t base = c->path.len;
    for (size_t i = 0; i < n; i++) {
        const json_t *el = json_array_get(j, i);
        pbjson_path_index(&c->path, i);
        if (json_is_null(el) && !null_is_value(f))
            fail(c, "must not be null");
        else
            decode_single(c, f, el, arr + i * es);
        path_truncate(&c->path, base);
    }
}

/* Decodes a field whose JSON value is not null (or null that is a value). */
static void decode_field(dctx *c, const ProtobufCMessageDescriptor *d,
                         const ProtobufCFieldDescriptor *f, const json_t *j, ProtobufCMessage *m)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (is_map_field(d, f))
            decode_map(c, f, j, m);
        else
            decode_repeated(c, f, j, m);
        return;
    }
    bool ok = decode_single(c, f, j, (char *)m + f->offset);
    /* A message member is allocated even when its content failed, and must be reachable
     * through the oneof case so that freeing the tree frees it. */
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        if (ok || f->type == PROTOBUF_C_TYPE_MESSAGE)
            MEMBER(uint32_t, m, f->quantifier_offset) = f->id;
    } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
               f->type != PROTOBUF_C_TYPE_MESSAGE && ok) {
        MEMBER(protobuf_c_boolean, m, f->quantifier_offset) = 1;
    }
}

static void decode_value(dctx *c, const ProtobufCMessageDescriptor *d, const json_t *j,
                         ProtobufCMessage *m)
{
    const char *name;
    switch (json_typeof(j)) {
    case JSON_NULL:
        name = "null_value";
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        name = "number_value";
        break;
    case JSON_STRING:
        name = "string_value";
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        name = "bool_value";
        break;
    case JSON_OBJECT:
        name = "struct_value";
        break;
    case JSON_ARRAY:
    default:
        name = "list_value";
        break;
    }
    const ProtobufCFieldDescriptor *f = field_by_name(d, name);
    bool ok = decode_single(c, f, j, (char *)m + f->offset);
    if (ok || f->type == PROTOBUF_C_TYPE_MESSAGE)
        MEMBER(uint32_t, m, f->quantifier_offset) = f->id;
}

static void decode_time(dctx *c, const ProtobufCMessageDescriptor *d, const json_t *j,
                        ProtobufCMessage *m, bool is_timestamp)
{
    const char *what = is_timestamp ? "timestamp" : "duration";
    if (!json_is_string(j)) {
        fail(c, "expected a %s string, got %s", what, jtype(j));
        return;
    }
    const char *s = json_string_value(j);
    int64_t seconds = 0;
    int32_t nanos = 0;
    const char *why =
        is_timestamp ? timestamp_parse(s, &seconds, &nanos) : duration_parse(s, &seconds, &nanos);
    if (why) {
        fail(c, "invalid %s \"%.*s\": %s", what, QUOTE_MAX, s, why);
        return;
    }
    MEMBER(int64_t, m, field_by_name(d, "seconds")->offset) = seconds;
    MEMBER(int32_t, m, field_by_name(d, "nanos")->offset) = nanos;
}

static void decode_message(dctx *c, const ProtobufCMessageDescriptor *d, const json_t *j,
                           ProtobufCMessage *m)
{
    switch (wkt_of(d)) {
    case WKT_TIMESTAMP:
        decode_time(c, d, j, m, true);
        return;
    case WKT_DURATION:
        decode_time(c, d, j, m, false);
        return;
    case WKT_STRUCT:
        decode_map(c, field_by_name(d, "fields"), j, m);
        return;
    case WKT_LIST_VALUE:
        decode_repeated(c, field_by_name(d, "values"), j, m);
        return;
    case WKT_VALUE:
        decode_value(c, d, j, m);
        return;
    case WKT_WRAPPER:
        decode_field(c, d, field_by_name(d, "value"), j, m);
        return;
    case WKT_NONE:
        break;
    }
    if (!json_is_object(j)) {
        fail(c, "expected an object, got %s", jtype(j));
        return;
    }
    const char **seen = sx_calloc(d->n_fields, sizeof(*seen));
    size_t base = c->path.len;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val)
    {
        int idx = find_field(d, key);
        if (idx < 0) {
            fail(c, "unknown field \"%.*s\"", QUOTE_MAX, key);
            continue;
        }
        const ProtobufCFieldDescriptor *f = &d->fields[idx];
        if (seen[idx]) {
            fail(c, "field \"%s\" is given twice, as \"%s\" and \"%s\"", f->name, seen[idx], key);
            continue;
        }
        seen[idx] = key;
        if (json_is_null(val) && !null_is_value(f))
            continue;
        pbjson_path_field(&c->path, f->name);
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t cur = MEMBER(uint32_t, m, f->quantifier_offset);
            if (cur != 0 && cur != f->id) {
                const char *other = "?";
                for (unsigned k = 0; k < d->n_fields; k++)
                    if (d->fields[k].id == cur)
                        other = d->fields[k].name;
                fail(c, "only one of \"%s\" and \"%s\" may be set", other, f->name);
                path_truncate(&c->path, base);
                continue;
            }
        }
        decode_field(c, d, f, val, m);
        path_truncate(&c->path, base);
    }
    sx_free(seen);
}

static int decode(const ProtobufCMessageDescriptor *desc, const json_t *json,
                  const char *path_prefix, ProtobufCMessage **out, sx_fielderrs *errs,
                  bool keep_partial)
{
    dctx c = {.errs = errs};
    sx_buf_puts(&c.path, path_prefix ? path_prefix : "");
    size_t before = errs->count;
    ProtobufCMessage *m = new_message(desc);
    if (json == NULL)
        fail(&c, "expected a JSON value");
    else
        decode_message(&c, desc, json, m);
    sx_buf_free(&c.path);
    int rc = errs->count == before ? 0 : SX_EINVAL;
    if (rc != 0 && !keep_partial) {
        protobuf_c_message_free_unpacked(m, NULL);
        m = NULL;
    }
    *out = m;
    return rc;
}

int pbjson_decode(const ProtobufCMessageDescriptor *desc, const json_t *json,
                  const char *path_prefix, ProtobufCMessage **out, sx_fielderrs *errs)
{
    return decode(desc, json, path_prefix, out, errs, false);
}

int pbjson_decode_partial(const ProtobufCMessageDescriptor *desc, const json_t *json,
                          const char *path_prefix, ProtobufCMessage **out, sx_fielderrs *errs)
{
    return decode(desc, json, path_prefix, out, errs, true);
}

/* ------------------------------------------------------------------ walking */

static void walk(const ProtobufCMessage *m, sx_buf *path, pbjson_visit_fn fn, void *ctx)
{
    fn(m, sx_buf_cstr(path), ctx);
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (wkt_of(d) != WKT_NONE)
        return;
    size_t base = path->len;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE || !field_present(m, f))
            continue;
        pbjson_path_field(path, f->name);
        size_t fbase = path->len;
        if (f->label != PROTOBUF_C_LABEL_REPEATED) {
            walk(CMEMBER(ProtobufCMessage *, m, f->offset), path, fn, ctx);
        } else {
            size_t n = CMEMBER(size_t, m, f->quantifier_offset);
            ProtobufCMessage *const *arr = CMEMBER(ProtobufCMessage **, m, f->offset);
            bool map = is_map_field(d, f);
            const ProtobufCFieldDescriptor *kf = map ? field_by_id(f->descriptor, 1) : NULL;
            const ProtobufCFieldDescriptor *vf = map ? field_by_id(f->descriptor, 2) : NULL;
            for (size_t k = 0; k < n; k++) {
                if (arr[k] == NULL)
                    continue;
                if (!map) {
                    pbjson_path_index(path, k);
                    walk(arr[k], path, fn, ctx);
                } else if (vf->type == PROTOBUF_C_TYPE_MESSAGE) {
                    ProtobufCMessage *v = CMEMBER(ProtobufCMessage *, arr[k], vf->offset);
                    if (v) {
                        char *key = map_key_string(kf, (const char *)arr[k] + kf->offset);
                        pbjson_path_key(path, key);
                        sx_free(key);
                        walk(v, path, fn, ctx);
                    }
                }
                path_truncate(path, fbase);
            }
        }
        path_truncate(path, base);
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
