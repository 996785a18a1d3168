/*
 * report.h — gateway.control.v1 status reports: the unary ReportStatus call, and the
 * report a StreamConfiguration request may carry.
 */
#ifndef SX_XDS_REPORT_H
#define SX_XDS_REPORT_H

#include <grpc/grpc.h>

#include "gateway/control/v1/control.pb-c.h"
#include "server/xds/xds_internal.h"

/* One ReportStatus call being answered (report.c). */
typedef struct xds_unary_call xds_unary_call;

/* Checks a status report and records it. stream_node is the node of the stream that
 * carried it (NULL for the unary ReportStatus): a stream may only report for its own
 * node. Returns -1 when accepted, else the xds_reject reason (counted and logged). */
int xds_report_take(xds_server *s, const Gateway__Control__V1__DataplaneStatusReport *rep,
                    const char *stream_node);
/* Answers an accepted ReportStatus call (call, payload and cred are taken over; payload
 * NULL allowed) from a completion-queue thread: PERMISSION_DENIED when cred does not
 * cover the report's node id (identity.h), else OK with StatusAck. Its batch completes
 * with tag XDS_TAG_UNARY, whose object goes to xds_report_done. */
void xds_report_status(xds_server *s, grpc_call *call, grpc_byte_buffer *payload, xds_cred *cred);
/* Frees a ReportStatus call once its batch completed. */
void xds_report_done(xds_unary_call *u);

#endif
