/*
 * ir.c — the internal representation (a ConfigSnapshot) in and out of JSON and protobuf.
 *
 * Decoding is pbjson's generic proto3 JSON mapping followed by the value-range rules
 * that protobuf types cannot say (a uint32 port is not a port). The rules live in one
 * table below, keyed by message and field name, and are applied by walking the decoded
 * tree with pbjson_walk so that their error paths look exactly like decoding errors.
 * Decoding uses pbjson_decode_partial so that a document with a type error and a bad
 * port reports both at once; a value that failed to decode is not range-checked again.
 */
#include "server/ir/ir.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/mem.h"
#include "server/ir/pbjson.h"

#define PKG "gateway.control.v1."

typedef enum rule_kind {
    RULE_RANGE,  /* an unsigned integer (or its wrapper) within [min, max] */
    RULE_ONE_OF, /* a string that is "" or one of allowed */
} rule_kind;

typedef struct ir_rule {
    const char *message; /* full message name */
    const char *field;   /* field name; repeated fields are checked element by element */
    rule_kind kind;
    uint64_t min, max;          /* RULE_RANGE */
    const char *const *allowed; /* RULE_ONE_OF: NULL-terminated */
} ir_rule;

static const char *const TLS_VERSIONS[] = {"TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3", NULL};
static const char *const PATH_TYPES[] = {"Exact", "PathPrefix", "RegularExpression", NULL};
static const char *const MATCH_TYPES[] = {"Exact", "RegularExpression", NULL};
static const char *const FILTER_TYPES[] = {"RequestHeaderModifier",
                                           "ResponseHeaderModifier",
                                           "RequestRedirect",
                                           "URLRewrite",
                                           "RequestMirror",
                                           "ExtensionRef",
                                           NULL};
static const char *const PATH_MODIFIERS[] = {"ReplaceFullPath", "ReplacePrefixMatch", NULL};
static const char *const PERSISTENCE_TYPES[] = {"Cookie", "Header", NULL};
static const char *const COOKIE_LIFETIMES[] = {"Permanent", "Session", NULL};
static const char *const HASH_ON[] = {"Header", "Cookie", "SourceIP", "QueryParameter", NULL};
static const char *const REDIRECT_SCHEMES[] = {"http", "https", NULL};

#define RANGE(msg, field, lo, hi)                                                                  \
    {                                                                                              \
        PKG msg, field, RULE_RANGE, lo, hi, NULL                                                   \
    }
#define ONE_OF(msg, field, set)                                                                    \
    {                                                                                              \
        PKG msg, field, RULE_ONE_OF, 0, 0, set                                                     \
    }

/* Every value-range rule of the IR. Keep it the one place such rules are written. */
static const ir_rule RULES[] = {
    RANGE("BackendEndpoint", "port", 1, 65535),
    RANGE("Listener", "port", 0, 65535),
    RANGE("StreamRule", "port", 0, 65535),
    RANGE("BackendRef", "port", 0, 65535),
    RANGE("ParentRef", "port", 0, 65535),
    RANGE("RequestRedirectFilter", "port", 0, 65535),
    RANGE("BackendRef", "weight", 0, 1000000),
    RANGE("HttpRouteRetry", "attempts", 0, 100),
    /* Gateway API HTTPRouteRetryStatusCode: only error statuses can trigger a retry. */
    RANGE("HttpRouteRetry", "codes", 400, 599),
    RANGE("RequestMirrorFilter", "percent", 0, 100),
    ONE_OF("TlsConfig", "min_version", TLS_VERSIONS),
    ONE_OF("TlsConfig", "max_version", TLS_VERSIONS),
    ONE_OF("HttpMatch", "path_type", PATH_TYPES),
    ONE_OF("HeaderMatch", "type", MATCH_TYPES),
    ONE_OF("QueryMatch", "type", MATCH_TYPES),
    ONE_OF("GrpcMatch", "match_type", MATCH_TYPES),
    ONE_OF("Filter", "type", FILTER_TYPES),
    ONE_OF("HttpPathModifier", "type", PATH_MODIFIERS),
    ONE_OF("RequestRedirectFilter", "scheme", REDIRECT_SCHEMES),
    ONE_OF("SessionPersistence", "type", PERSISTENCE_TYPES),
    ONE_OF("SessionPersistence", "cookie_lifetime_type", COOKIE_LIFETIMES),
    ONE_OF("LoadBalancingPolicy", "hash_on", HASH_ON),
};

typedef struct check_ctx {
    sx_fielderrs *errs;
    sx_buf path;
} check_ctx;

static bool already_reported(const sx_fielderrs *errs, const char *path)
{
    for (size_t i = 0; i < errs->count; i++)
        if (strcmp(errs->items[i].path, path) == 0)
            return true;
    return false;
}

static void report(check_ctx *c, const ir_rule *r)
{
    const char *path = sx_buf_cstr(&c->path);
    if (already_reported(c->errs, path))
        return;
    if (r->kind == RULE_RANGE) {
        sx_fielderrs_add(c->errs, path, "must be between %llu and %llu", (unsigned long long)r->min,
                         (unsigned long long)r->max);
        return;
    }
    sx_buf msg = {0};
    sx_buf_puts(&msg, "must be one of ");
    for (size_t i = 0; r->allowed[i]; i++)
        sx_buf_printf(&msg, "%s\"%s\"", i ? ", " : "", r->allowed[i]);
    sx_fielderrs_add(c->errs, path, "%s", sx_buf_cstr(&msg));
    sx_buf_free(&msg);
}

/* Reads an unsigned value at p of a field of type t; false if it has none. */
static bool read_unsigned(const ProtobufCFieldDescriptor *f, const void *p, uint64_t *out)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *out = *(const uint32_t *)p;
        return true;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        *out = *(const uint64_t *)p;
        return true;
    case PROTOBUF_C_TYPE_MESSAGE: {
        /* A UInt32Value / UInt64Value wrapper: unset means "default", nothing to check. */
        const ProtobufCMessage *w = *(ProtobufCMessage *const *)p;
        if (w == NULL)
            return false;
        const ProtobufCFieldDescriptor *vf =
            protobuf_c_message_descriptor_get_field_by_name(w->descriptor, "value");
        return vf && vf->type != PROTOBUF_C_TYPE_MESSAGE &&
               read_unsigned(vf, (const char *)w + vf->offset, out);
    }
    default:
        return false;
    }
}

static bool value_ok(const ir_rule *r, const ProtobufCFieldDescriptor *f, const void *p)
{
    if (r->kind == RULE_RANGE) {
        uint64_t v;
        return !read_unsigned(f, p, &v) || (v >= r->min && v <= r->max);
    }
    const char *s = *(char *const *)p;
    if (s == NULL || s[0] == '\0')
        return true;
    for (size_t i = 0; r->allowed[i]; i++)
        if (strcmp(s, r->allowed[i]) == 0)
            return true;
    return false;
}

static void check_rule(check_ctx *c, const ProtobufCMessage *m, const ir_rule *r)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, r->field);
    if (f == NULL) {
        /* The table names a field the proto does not have: a bug caught by any test. */
        fprintf(stderr, "ir: rule names unknown field %s.%s\n", r->message, r->field);
        abort();
    }
    if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
        *(const uint32_t *)((const char *)m + f->quantifier_offset) != f->id)
        return;
    size_t base = c->path.len;
    pbjson_path_field(&c->path, f->name);
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
        const char *arr = *(char *const *)((const char *)m + f->offset);
        size_t es = f->type == PROTOBUF_C_TYPE_STRING    ? sizeof(char *)
                    : f->type == PROTOBUF_C_TYPE_MESSAGE ? sizeof(void *)
                    : f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_FIXED64 ? 8
                                                                                              : 4;
        size_t fbase = c->path.len;
        for (size_t i = 0; i < n; i++) {
            if (!value_ok(r, f, arr + i * es)) {
                pbjson_path_index(&c->path, i);
                report(c, r);
                c->path.len = fbase;
                c->path.data[fbase] = '\0';
            }
        }
    } else if (!value_ok(r, f, (const char *)m + f->offset)) {
        report(c, r);
    }
    c->path.len = base;
    if (c->path.data)
        c->path.data[base] = '\0';
}

static void visit(const ProtobufCMessage *m, const char *path, void *arg)
{
    check_ctx *c = arg;
    for (size_t i = 0; i < sizeof(RULES) / sizeof(RULES[0]); i++) {
        if (strcmp(RULES[i].message, m->descriptor->name) != 0)
            continue;
        sx_buf_reset(&c->path);
        sx_buf_puts(&c->path, path);
        check_rule(c, m, &RULES[i]);
    }
}

int ir_snapshot_check(const ir_snapshot *snap, const char *path_prefix, sx_fielderrs *errs)
{
    check_ctx c = {.errs = errs};
    size_t before = errs->count;
    pbjson_walk(&snap->base, path_prefix, visit, &c);
    sx_buf_free(&c.path);
    return errs->count == before ? 0 : SX_EINVAL;
}

int ir_snapshot_from_json(const json_t *json, const char *path_prefix, ir_snapshot **out,
                          sx_fielderrs *errs)
{
    ProtobufCMessage *m = NULL;
    size_t before = errs->count;
    int rc = pbjson_decode_partial(&gateway__control__v1__config_snapshot__descriptor, json,
                                   path_prefix, &m, errs);
    /* The rules run on the partial tree too; failures are judged by the count below. */
    (void)rc;
    rc = ir_snapshot_check((const ir_snapshot *)m, path_prefix, errs);
    (void)rc;
    if (errs->count != before) {
        protobuf_c_message_free_unpacked(m, NULL);
        *out = NULL;
        return SX_EINVAL;
    }
    *out = (ir_snapshot *)m;
    return 0;
}

json_t *ir_snapshot_to_json(const ir_snapshot *snap)
{
    return pbjson_encode(&snap->base, 0);
}

uint8_t *ir_snapshot_pack(const ir_snapshot *snap, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(&snap->base);
    uint8_t *buf = sx_malloc(n);
    *len = protobuf_c_message_pack(&snap->base, buf);
    return buf;
}

int ir_snapshot_unpack(const uint8_t *data, size_t len, ir_snapshot **out, sx_err *err)
{
    *out = gateway__control__v1__config_snapshot__unpack(NULL, len, data);
    if (*out == NULL)
        return sx_err_set(err, SX_EINVAL, "invalid protobuf encoding of %s (%zu bytes)",
                          gateway__control__v1__config_snapshot__descriptor.name, len);
    return 0;
}

void ir_snapshot_free(ir_snapshot *snap)
{
    if (snap)
        protobuf_c_message_free_unpacked(&snap->base, NULL);
}

#define CONCAT(field)                                                                              \
    do {                                                                                           \
        size_t total = 0;                                                                          \
        for (size_t i = 0; i < n; i++)                                                             \
            total += part(ctx, i)->n_##field;                                                      \
        out->field = sx_calloc(total ? total : 1, sizeof(*out->field));                            \
        for (size_t i = 0; i < n; i++) {                                                           \
            const ir_snapshot *p = part(ctx, i);                                                   \
            for (size_t j = 0; j < p->n_##field; j++)                                              \
                out->field[out->n_##field++] = p->field[j];                                        \
        }                                                                                          \
    } while (0)

void ir_snapshot_concat(ir_snapshot *out, size_t n, ir_snapshot_part_fn part, const void *ctx)
{
    gateway__control__v1__config_snapshot__init(out);
    CONCAT(listeners);
    CONCAT(http_routes);
    CONCAT(grpc_routes);
    CONCAT(stream_routes);
    CONCAT(backends);
    CONCAT(secrets);
}

#define UNCONCAT(field)                                                                            \
    do {                                                                                           \
        sx_free(m->field);                                                                         \
        m->field = NULL;                                                                           \
        m->n_##field = 0;                                                                          \
    } while (0)

void ir_snapshot_unconcat(ir_snapshot *m)
{
    UNCONCAT(listeners);
    UNCONCAT(http_routes);
    UNCONCAT(grpc_routes);
    UNCONCAT(stream_routes);
    UNCONCAT(backends);
    UNCONCAT(secrets);
}

char *ir_canonical_json(const json_t *json)
{
    char *s =
        json_dumps(json, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    if (s == NULL) {
        /* json_dumps fails only when it cannot allocate. */
        fprintf(stderr, "ir: out of memory writing canonical JSON\n");
        abort();
    }
    return s;
}
