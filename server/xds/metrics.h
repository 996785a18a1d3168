/*
 * metrics.h — the xDS serving engine's Prometheus families, registered once.
 *
 *   sextant_xds_streams{protocol}                    gauge: streams past their first valid
 *                                                    request (ads-sotw, ads-delta, control-v1)
 *   sextant_xds_pushes_total{type}                   counter: responses sent (sds, cds, eds,
 *                                                    lds, rds; "snapshot" for control-v1)
 *   sextant_xds_acks_total{type}                     counter: responses ACKed
 *   sextant_xds_nacks_total{type}                    counter: responses NACKed
 *   sextant_xds_push_ack_seconds{type}               histogram: from the change becoming
 *                                                    known (snapshot published, or request
 *                                                    received) to the client's ACK/NACK
 *   sextant_xds_build_seconds                        histogram: decoding a snapshot,
 *                                                    building its Envoy resources and their
 *                                                    shared wire bytes, once per version
 *   sextant_xds_build_failures_total                 counter: versions whose Envoy resources
 *                                                    could not be built (last good kept)
 *   sextant_xds_snapshot_fanout_coalesced_total      counter: a stream's unsent snapshot
 *                                                    replaced by a newer one
 *   sextant_xds_stream_terminations_total{reason}    counter: streams ended, by reason
 *   sextant_xds_status_report_rejections_total{reason} counter: status reports refused
 *   sextant_xds_limit_refusals_total{limit}          counter: streams ended for input past a
 *                                                    limit (xds_limit_names)
 *   sextant_xds_auth_failures_total{reason}          counter: streams and reports refused for
 *                                                    their credentials (identity.h reasons)
 *
 * Every pointer is NULL when the engine runs without a registry (unit tests); the
 * xds_metrics_* helpers then do nothing.
 */
#ifndef SX_XDS_METRICS_H
#define SX_XDS_METRICS_H

#include "server/base/metrics.h"

typedef struct xds_metrics {
    sx_metric *streams;
    sx_metric *pushes;
    sx_metric *requests; /* sextant_xds_requests_total{type} */
    sx_metric *acks;
    sx_metric *nacks;
    sx_metric *push_ack_seconds;
    sx_metric *build_seconds;
    sx_metric *build_failures;
    sx_metric *coalesced;
    sx_metric *terminations;
    sx_metric *report_rejections;
    sx_metric *limit_refusals;
    sx_metric *auth_failures;
} xds_metrics;

/* Registers every family in r (NULL: leaves m all NULL). */
/* The limit labels of sextant_xds_limit_refusals_total: node_id, node_metadata,
 * resource_names, resource_name_length, streams, malformed_request. */
#define XDS_LIMIT_COUNT 6
extern const char *const xds_limit_names[XDS_LIMIT_COUNT];

void xds_metrics_init(xds_metrics *m, sx_metrics *r);

/* Null-safe updates: label is the single label value (NULL for unlabelled families). */
void xds_metrics_inc(sx_metric *f, const char *label);
void xds_metrics_add(sx_metric *f, const char *label, double v);
void xds_metrics_set(sx_metric *f, const char *label, double v);
void xds_metrics_observe(sx_metric *f, const char *label, double v);

#endif
