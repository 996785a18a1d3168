/*
 * pbjson_decode.c — proto3 JSON to a protobuf-c message, driven by descriptors.
 *
 * The decoder builds messages with the system allocator (through sx_malloc/sx_strdup,
 * which abort on out-of-memory) and keeps every message freeable by
 * protobuf_c_message_free_unpacked(msg, NULL) at every step, so an error anywhere only
 * means "free the whole tree". It never stops at the first error: each problem is added
 * to the caller's sx_fielderrs with the path of the offending value, and the value is
 * left at its default.
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

#include "server/base/b64.h"
#include "server/base/buf.h"
#include "server/base/mem.h"

#include "server/ir/pbjson_internal.h"

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
    size_t o;
    bool clean; /* bits left over past the last byte are ignored */
    if (!sx_b64_decode(s, n, SX_B64_ANY, data, &o, &clean)) {
        sx_free(data);
        return false;
    }
    out->len = o;
    out->data = data;
    return true;
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
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && pbjson_is_leap(y)) ||
        h > 23 || mi > 59 || se > 59 || oh > 23 || om > 59)
        return "date/time field value out of range";
    int64_t t = pbjson_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    t -= sign * (int64_t)(oh * 3600 + om * 60);
    if (t < TS_MIN_SECONDS || t > TS_MAX_SECONDS)
        return "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z";
    *seconds = t;
    return NULL;
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

/* The range of each integer kind: [min, max] for the signed ones, umax for the others. */
static const struct {
    int64_t min, max;
    uint64_t umax;
} int_limits[] = {
    [PBJSON_I32] = {INT32_MIN, INT32_MAX, 0},
    [PBJSON_U32] = {0, 0, UINT32_MAX},
    [PBJSON_I64] = {INT64_MIN, INT64_MAX, 0},
    [PBJSON_U64] = {0, 0, UINT64_MAX},
};

/* Stores i (signed kinds) or u (unsigned kinds) at p, in kind k's width. */
static void int_store(pbjson_int k, void *p, int64_t i, uint64_t u)
{
    switch (k) {
    case PBJSON_I32:
        *(int32_t *)p = (int32_t)i;
        break;
    case PBJSON_U32:
        *(uint32_t *)p = (uint32_t)u;
        break;
    case PBJSON_I64:
        *(int64_t *)p = i;
        break;
    case PBJSON_U64:
        *(uint64_t *)p = u;
        break;
    case PBJSON_NOT_INT:
        break;
    }
}

/* An integer of kind k (see int_limits) from a JSON string: decimal digits, with a "-"
 * for the signed kinds (and "-0" for the unsigned ones), or a number with a fraction or
 * an exponent whose value is whole. Signed kinds go to *i, unsigned ones to *u. */
static numres str_to_int(const char *s, pbjson_int k, int64_t *i, uint64_t *u)
{
    bool is_signed = k == PBJSON_I32 || k == PBJSON_I64;
    int64_t min = int_limits[k].min, max = int_limits[k].max;
    uint64_t umax = int_limits[k].umax;
    if (!is_signed && *s == '-' && all_digits(s + 1)) {
        for (const char *p = s + 1; *p; p++)
            if (*p != '0')
                return NUM_RANGE;
        *u = 0;
        return NUM_OK;
    }
    if (all_digits(is_signed && *s == '-' ? s + 1 : s)) {
        errno = 0;
        char *end;
        if (is_signed) {
            long long v = strtoll(s, &end, 10);
            if (errno == ERANGE || v < min || v > max)
                return NUM_RANGE;
            *i = v;
        } else {
            unsigned long long v = strtoull(s, &end, 10);
            if (errno == ERANGE || v > umax)
                return NUM_RANGE;
            *u = v;
        }
        return NUM_OK;
    }
    double d;
    bool overflow;
    if (!parse_double_str(s, &d, &overflow))
        return NUM_SYNTAX;
    return is_signed ? double_to_i64(d, min, max, i) : double_to_u64(d, umax, u);
}

/* An integer field of kind k from a JSON number or string (see str_to_int). */
static bool decode_int(dctx *c, const json_t *j, pbjson_int k, int64_t *i, uint64_t *u)
{
    bool is_signed = k == PBJSON_I32 || k == PBJSON_I64;
    int64_t min = int_limits[k].min, max = int_limits[k].max;
    uint64_t umax = int_limits[k].umax;
    numres r;
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        if (is_signed)
            r = v < min || v > max ? NUM_RANGE : NUM_OK;
        else
            r = v < 0 || (uint64_t)v > umax ? NUM_RANGE : NUM_OK;
        if (r == NUM_OK && is_signed)
            *i = v;
        else if (r == NUM_OK)
            *u = (uint64_t)v;
    } else if (json_is_real(j)) {
        double d = json_real_value(j);
        r = is_signed ? double_to_i64(d, min, max, i) : double_to_u64(d, umax, u);
    } else if (json_is_string(j)) {
        r = str_to_int(json_string_value(j), k, i, u);
    } else {
        r = NUM_SYNTAX;
    }
    if (r != NUM_OK)
        fail_num(c, r, j, is_signed, is_signed ? min : 0, is_signed ? (uint64_t)max : umax);
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
    if (json_is_null(j) && pbjson_is_null_value_enum(f)) {
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
    if (!pbjson_utf8_valid((const unsigned char *)s, n)) {
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
    int64_t i = 0;
    uint64_t u = 0;
    double d;
    switch (f->type) {
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
            *sp = pbjson_new_message(f->descriptor);
        size_t before = c->errs->count;
        decode_message(c, f->descriptor, j, *sp);
        return c->errs->count == before;
    }
    default: {
        pbjson_int k = pbjson_int_kind(f->type);
        bool ok = k != PBJSON_NOT_INT && decode_int(c, j, k, &i, &u);
        if (ok)
            int_store(k, p, i, u);
        return ok;
    }
    }
}

/* Parses a JSON object key into the key field of a map entry. */
static void decode_map_key(dctx *c, const ProtobufCFieldDescriptor *kf, const char *key, void *p)
{
    int64_t i = 0;
    uint64_t u = 0;
    numres r = NUM_OK;
    switch (kf->type) {
    case PROTOBUF_C_TYPE_STRING:
        if (!pbjson_utf8_valid((const unsigned char *)key, strlen(key)))
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
    default: {
        pbjson_int k = pbjson_int_kind(kf->type);
        if (k == PBJSON_NOT_INT) {
            fail(c, "map key type is not supported");
            return;
        }
        r = str_to_int(key, k, &i, &u);
        if (r == NUM_OK)
            int_store(k, p, i, u);
        break;
    }
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
    const ProtobufCFieldDescriptor *kf = pbjson_field_by_id(ed, 1), *vf = pbjson_field_by_id(ed, 2);
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
        ProtobufCMessage *e = pbjson_new_message(ed);
        arr[i++] = e;
        pbjson_path_key(&c->path, key);
        decode_map_key(c, kf, key, (char *)e + kf->offset);
        if (json_is_null(val) && !pbjson_null_is_value(vf))
            fail(c, "must not be null");
        else
            decode_single(c, vf, val, (char *)e + vf->offset);
        pbjson_path_truncate(&c->path, base);
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
    size_t es = pbjson_elem_size(f->type);
    char *arr = sx_calloc(n, es);
    MEMBER(void *, m, f->offset) = arr;
    MEMBER(size_t, m, f->quantifier_offset) = n;
    size_t base = c->path.len;
    for (size_t i = 0; i < n; i++) {
        const json_t *el = json_array_get(j, i);
        pbjson_path_index(&c->path, i);
        if (json_is_null(el) && !pbjson_null_is_value(f))
            fail(c, "must not be null");
        else
            decode_single(c, f, el, arr + i * es);
        pbjson_path_truncate(&c->path, base);
    }
}

/* Decodes a field whose JSON value is not null (or null that is a value). */
static void decode_field(dctx *c, const ProtobufCMessageDescriptor *d,
                         const ProtobufCFieldDescriptor *f, const json_t *j, ProtobufCMessage *m)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (pbjson_is_map_field(d, f))
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
    const ProtobufCFieldDescriptor *f = pbjson_field_by_name(d, name);
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
    MEMBER(int64_t, m, pbjson_field_by_name(d, "seconds")->offset) = seconds;
    MEMBER(int32_t, m, pbjson_field_by_name(d, "nanos")->offset) = nanos;
}

static void decode_message(dctx *c, const ProtobufCMessageDescriptor *d, const json_t *j,
                           ProtobufCMessage *m)
{
    switch (pbjson_wkt_of(d)) {
    case WKT_TIMESTAMP:
        decode_time(c, d, j, m, true);
        return;
    case WKT_DURATION:
        decode_time(c, d, j, m, false);
        return;
    case WKT_STRUCT:
        decode_map(c, pbjson_field_by_name(d, "fields"), j, m);
        return;
    case WKT_LIST_VALUE:
        decode_repeated(c, pbjson_field_by_name(d, "values"), j, m);
        return;
    case WKT_VALUE:
        decode_value(c, d, j, m);
        return;
    case WKT_WRAPPER:
        decode_field(c, d, pbjson_field_by_name(d, "value"), j, m);
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
        int idx = pbjson_find_field(d, key);
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
        if (json_is_null(val) && !pbjson_null_is_value(f))
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
                pbjson_path_truncate(&c->path, base);
                continue;
            }
        }
        decode_field(c, d, f, val, m);
        pbjson_path_truncate(&c->path, base);
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
    ProtobufCMessage *m = pbjson_new_message(desc);
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
