/*
 * pbjson_internal.h — what the proto3 JSON encoder and decoder share: reaching a field's
 * storage through its descriptor, recognising well-known types and map fields, paths,
 * UTF-8 and the calendar. Only server/ir/pbjson*.c include it.
 */
#ifndef SX_IR_PBJSON_INTERNAL_H
#define SX_IR_PBJSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/ir/pbjson.h"

#define MEMBER(type, msg, off)  (*(type *)((char *)(msg) + (off)))
#define CMEMBER(type, msg, off) (*(type const *)((const char *)(msg) + (off)))

/* User input quoted in an error message is cut to this many bytes. */
#define QUOTE_MAX 64

/* Timestamp range of the proto3 JSON mapping: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z. */
#define TS_MIN_SECONDS INT64_C(-62135596800)
#define TS_MAX_SECONDS INT64_C(253402300799)
/* Duration range: about +-10,000 years. */
#define DUR_MAX_SECONDS INT64_C(315576000000)

typedef enum wkt {
    WKT_NONE,
    WKT_TIMESTAMP,
    WKT_DURATION,
    WKT_STRUCT,
    WKT_VALUE,
    WKT_LIST_VALUE,
    WKT_WRAPPER,
} wkt;

/* The well-known type d is, or WKT_NONE. */
wkt pbjson_wkt_of(const ProtobufCMessageDescriptor *d);
/* Whether f is a google.protobuf.NullValue enum field. */
bool pbjson_is_null_value_enum(const ProtobufCFieldDescriptor *f);
/* Whether JSON null is a value of f (google.protobuf.Value, NullValue) rather than "unset". */
bool pbjson_null_is_value(const ProtobufCFieldDescriptor *f);
/* The field of d named name (the .proto name), or NULL. */
const ProtobufCFieldDescriptor *pbjson_field_by_name(const ProtobufCMessageDescriptor *d,
                                                     const char *name);
/* The field of d with number id, or NULL. */
const ProtobufCFieldDescriptor *pbjson_field_by_id(const ProtobufCMessageDescriptor *d,
                                                   uint32_t id);
/* The index in d of the field a JSON key names (.proto name or lowerCamelCase), or -1. */
int pbjson_find_field(const ProtobufCMessageDescriptor *d, const char *key);
/* Whether f of parent is a map field (protobuf-c keeps no flag: recognised by shape). */
bool pbjson_is_map_field(const ProtobufCMessageDescriptor *parent,
                         const ProtobufCFieldDescriptor *f);
/* The integer field types by how they are stored: signedness and width. */
typedef enum pbjson_int {
    PBJSON_NOT_INT, /* not one of the eight integer types (enums are not) */
    PBJSON_I32,     /* int32, sint32, sfixed32 */
    PBJSON_U32,     /* uint32, fixed32 */
    PBJSON_I64,     /* int64, sint64, sfixed64 */
    PBJSON_U64,     /* uint64, fixed64 */
} pbjson_int;

/* How an integer field of type t is stored, or PBJSON_NOT_INT. */
pbjson_int pbjson_int_kind(ProtobufCType t);

/* The storage size of one element of type t. */
size_t pbjson_elem_size(ProtobufCType t);
/* A new message of type d with its defaults, from the system allocator (aborts on OOM). */
ProtobufCMessage *pbjson_new_message(const ProtobufCMessageDescriptor *d);
/* Whether f is set in m (proto3: not at its default, or present for optional/oneof). */
bool pbjson_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);
/* Whether f tracks presence (optional, oneof member or message). */
bool pbjson_has_presence(const ProtobufCFieldDescriptor *f);
/* Whether s[0..n) is valid UTF-8. */
bool pbjson_utf8_valid(const unsigned char *s, size_t n);
/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t pbjson_days_from_civil(int64_t y, unsigned m, unsigned d);
void pbjson_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);
bool pbjson_is_leap(int64_t y);
/* A map entry's key (field kf, storage at p) as its JSON object key: a new string
 * (sx_free). */
char *pbjson_map_key_string(const ProtobufCFieldDescriptor *kf, const void *p);

#endif
