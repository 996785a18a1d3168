/*
 * acks.h — a stream's ACKs and NACKs accounted for: metrics, log lines and node status.
 * Every function takes a locked call (call.h).
 */
#ifndef SX_XDS_ACKS_H
#define SX_XDS_ACKS_H

#include <stddef.h>

#include "server/xds/call.h"

/* Reports the node synced at the version every type of its stream is in step at, when
 * there is one and it was not reported yet. */
void xds_acks_report_synced(xds_call *c);
/* Reports the version the stream adopted as the node's desired one (once per version;
 * version <= 0 is ignored). */
void xds_acks_report_desired(xds_call *c, long long version);
/* Accounts for what a request of type ("cds", ..., "snapshot") turned out to be: an ACK,
 * a NACK (err_code, err_msg: the client's error_detail; err_msg NULL allowed), a stale
 * nonce or a subscription change naming names resources. */
void xds_acks_note(xds_call *c, const char *type, const xds_req_outcome *oc, const char *nonce,
                   size_t names, int err_code, const char *err_msg);

#endif
