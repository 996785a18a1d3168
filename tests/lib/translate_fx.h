/*
 * translate_fx.h — the fixture of the translator's tests: an IR written as for tl_json
 * translated into Envoy resources, and those resources decoded back from their bytes as
 * a proxy reads them (a listener, its HTTP connection manager, the message in an Any,
 * the per-route config of an HTTP filter).
 */
#ifndef SX_TESTS_TRANSLATE_FX_H
#define SX_TESTS_TRANSLATE_FX_H

#include "tests/lib/testlib.h"

#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "server/translate/resources.h"

typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager Hcm;

/* Translates the IR ir_text (JSON as for tl_json, which the IR must accept) for group
 * "edge" at version 1 into *out; returns what tr_resources_build returns, err filled. */
int tl_translate(const char *ir_text, tr_resources **out, sx_err *err);
/* tl_translate that must succeed: fails the test with the error otherwise. */
tr_resources *tl_translated(const char *ir_text);

/* The message inside an Any of descriptor d, after checking its type URL; the caller
 * frees it with protobuf_c_message_free_unpacked. */
ProtobufCMessage *tl_unpack_any(const Google__Protobuf__Any *any,
                                const ProtobufCMessageDescriptor *d);
/* Listener name of r, decoded (it must be there); the caller frees it with
 * envoy__config__listener__v3__listener__free_unpacked. */
Envoy__Config__Listener__V3__Listener *tl_listener(const tr_resources *r, const char *name);
/* The HTTP connection manager of listener name (the first filter of its first chain);
 * the caller frees it with protobuf_c_message_free_unpacked. */
Hcm *tl_hcm_of(const tr_resources *r, const char *listener);
/* The HTTP filter ahead of the router in listener's connection manager, which must hold
 * those two only: checks it is `filter` and optional, and returns its config decoded as
 * d; the caller frees it with protobuf_c_message_free_unpacked. */
ProtobufCMessage *tl_http_filter_before_router(const tr_resources *r, const char *listener,
                                               const char *filter,
                                               const ProtobufCMessageDescriptor *d);
/* Route configuration name of r, decoded (it must be there); the caller frees it with
 * envoy__config__route__v3__route_configuration__free_unpacked. */
Envoy__Config__Route__V3__RouteConfiguration *tl_route_config(const tr_resources *r,
                                                              const char *name);
/* The per-route config of HTTP filter `filter` that route carries as its only one, in an
 * optional FilterConfig, decoded as d; the caller frees it. */
ProtobufCMessage *tl_route_filter(const Envoy__Config__Route__V3__Route *route, const char *filter,
                                  const ProtobufCMessageDescriptor *d);

#endif
