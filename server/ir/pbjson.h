/*
 * pbjson.h — the proto3 JSON mapping for any protobuf-c message, driven by its descriptor.
 *
 * One generic codec turns any message into JSON and back, reading nothing but the
 * ProtobufCMessageDescriptor tables that protoc-c generates, so no message type needs
 * code of its own. It follows the proto3 JSON mapping: field names as in the .proto
 * (lowerCamelCase accepted on input), enums as value names, 64-bit integers as strings,
 * bytes as base64, maps as objects, and the well-known types Timestamp, Duration,
 * Struct/Value/ListValue, the wrappers and Empty in their special forms.
 * google.protobuf.Any has no type registry here and maps as a plain message
 * ({"type_url": ..., "value": base64}).
 *
 * Decoding reports every problem at once into an sx_fielderrs, each with a path such as
 * `spec.backends[2].endpoints[0].port` or `spec.listeners[0].metadata["key"]`. Paths use
 * the .proto field names even when the input used the lowerCamelCase name.
 */
#ifndef SX_IR_PBJSON_H
#define SX_IR_PBJSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#include "server/base/buf.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"

/* Emit fields at their proto3 default too (0, "", [], {}, null for an unset message);
 * unset oneof members are still omitted. */
#define PBJSON_EMIT_DEFAULTS 1u

/* Encodes msg as a new JSON value owned by the caller (an object for ordinary messages,
 * the special form for well-known types, e.g. a string for a Timestamp). Never NULL; msg
 * must not be NULL. Never fails: strings that are not valid UTF-8 (possible after
 * unpacking untrusted bytes) have the bad bytes replaced by U+FFFD, and values no JSON
 * form can carry (a timestamp outside years 1..9999) are written as best they can be, so
 * that decoding them again reports the problem. */
json_t *pbjson_encode(const ProtobufCMessage *msg, unsigned flags);

/* Decodes json into a new message of type desc. path_prefix (NULL or "" for none) starts
 * every error path. On success returns 0 and *out owns a message freed with
 * protobuf_c_message_free_unpacked(*out, NULL). On failure returns SX_EINVAL, sets *out
 * to NULL and appends every problem found to errs (existing items are kept). desc and
 * errs must not be NULL; json NULL is reported as an error. */
int pbjson_decode(const ProtobufCMessageDescriptor *desc, const json_t *json,
                  const char *path_prefix, ProtobufCMessage **out, sx_fielderrs *errs) SX_MUSTCHECK;

/* Like pbjson_decode, but *out is set even on failure: the message holds every field that
 * decoded cleanly, the others stay at their default (a repeated message element that was
 * null stays NULL). It lets a caller run further checks and report all problems at once;
 * it must not be packed or used as configuration. The caller frees *out either way. */
int pbjson_decode_partial(const ProtobufCMessageDescriptor *desc, const json_t *json,
                          const char *path_prefix, ProtobufCMessage **out,
                          sx_fielderrs *errs) SX_MUSTCHECK;

/* Called for every message of a tree with the path pbjson_decode would report for it. */
typedef void (*pbjson_visit_fn)(const ProtobufCMessage *msg, const char *path, void *ctx);

/* Visits msg and then, depth first in field order, every message it holds (singular,
 * repeated elements and map values). Well-known types are visited but not descended into.
 * NULL elements (possible in a partial message) are skipped. */
void pbjson_walk(const ProtobufCMessage *msg, const char *path_prefix, pbjson_visit_fn fn,
                 void *ctx);

/* Appends to path the form pbjson uses for a field, an array index or a map key:
 * ".name" (no dot when path is empty), "[3]", "[\"key\"]" (quotes and backslashes in the
 * key are escaped). For validators that report paths in the same style. */
void pbjson_path_field(sx_buf *path, const char *name);
void pbjson_path_index(sx_buf *path, size_t index);
void pbjson_path_key(sx_buf *path, const char *key);
/* Cuts path back to len bytes (what it was before a step was appended). */
void pbjson_path_truncate(sx_buf *path, size_t len);

#endif
