/*
 * ads.h — what a stream does with each request it receives (ADS state of the world,
 * ADS Delta, gateway.control.v1 StreamConfiguration).
 */
#ifndef SX_XDS_ADS_H
#define SX_XDS_ADS_H

#include <stddef.h>
#include <stdint.h>

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "server/xds/call.h"

/* Handles one request message (data, len: the serialized request of the stream's
 * protocol) on a locked call that is not closing. A request that cannot be decoded or
 * names an unusable node ends the stream. Returns the older stream of the same node that
 * this one superseded (a reference; the caller ends it after unlocking c), or NULL. */
xds_call *xds_ads_on_message(xds_call *c, const uint8_t *data, size_t len);

/* The DeltaDiscoveryRequest req of type t, answering nonce (NULL: req's response_nonce),
 * handed to the Delta stream d at now_ms; *out gets the outcome. */
void xds_ads_delta_request(xds_delta *d,
                           const Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *req,
                           tr_type t, const char *nonce, int64_t now_ms, xds_req_outcome *out);

#endif
