/*
 * denials.h — xDS clients refused for their credentials, recorded in aggregate: one
 * log line per client address and interval, one audit row per address and interval
 * carrying how many refusals it stands for.
 *
 * A refused client can retry as fast as it likes; neither the log nor the audit log may
 * grow at that pace. So the first refusal of an address in an interval
 * (xds.auth_failure_interval) is logged at once, and the rest of the interval only
 * counted; when the interval is over, xds_denials_flush hands one row per address to
 * the audit writer: action "proxy.connect", result "denied", the address as source_ip,
 * as actor the first identity the address's clients authenticated as ("anonymous" when
 * none did), and in details the count, the count per reason, and the first few node
 * ids claimed and identities presented. Every refusal is also counted in
 * sextant_xds_auth_failures_total{reason} by the caller. Memory is bounded: past
 * MAX_SOURCES addresses, further ones are counted under one row without an address.
 *
 * Thread-safe (one mutex). The audit writer is called without it held.
 */
#ifndef SX_XDS_DENIALS_H
#define SX_XDS_DENIALS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/err.h"
#include "storage/repo_audit.h"

typedef struct xds_denials xds_denials;

/* Writes one audit row (row borrowed); returns 0 or a project error code with err. */
typedef int (*xds_denials_audit_fn)(void *ctx, const audit_new *row, sx_err *err);

/* interval_ms: xds.auth_failure_interval; audit NULL: rows are not written (logged
 * only). Never NULL. */
xds_denials *xds_denials_create(int64_t interval_ms, xds_denials_audit_fn audit, void *ctx);
/* NULL allowed; what was not flushed is dropped. */
void xds_denials_destroy(xds_denials *d);

/* Records one refusal from source (an IP address, "" when unknown) of a client
 * authenticated as who (NULL: as nobody) claiming node_id, for reason (a
 * sextant_xds_auth_failures_total label), with msg the client was told, at now_ms
 * (monotonic). Logs it when it is its address's first of the interval. */
void xds_denials_note(xds_denials *d, const char *source, const char *who, const char *reason,
                      const char *node_id, const char *protocol, const char *msg, int64_t now_ms);

/* Writes the rows of every address whose interval is over at now_ms (all of them when
 * all is true, at shutdown). A row that cannot be written is logged. */
void xds_denials_flush(xds_denials *d, int64_t now_ms, bool all);

#endif
