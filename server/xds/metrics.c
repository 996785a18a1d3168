/*
 * metrics.c — registration of the xDS families (see metrics.h).
 */
#include "server/xds/metrics.h"

#include <stddef.h>
#include <string.h>

/* Push → ACK is milliseconds on a healthy fleet and seconds under load. */
static const double ack_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                    0.25,  0.5,    1,     2.5,  5,     10,   30};
/* Building a snapshot: sub-millisecond for a few resources, seconds for 100k endpoints. */
static const double build_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,    0.25,  0.5,    1,     2.5,  5,     10};

const char *const xds_limit_names[XDS_LIMIT_COUNT] = {"node_id",        "node_metadata",
                                                      "resource_names", "resource_name_length",
                                                      "streams",        "malformed_request"};

void xds_metrics_init(xds_metrics *m, sx_metrics *r)
{
    memset(m, 0, sizeof(*m));
    if (r == NULL)
        return;
    m->streams = sx_metrics_gauge(r, "sextant_xds_streams", "Connected xDS streams by protocol.",
                                  "protocol");
    m->pushes = sx_metrics_counter(r, "sextant_xds_pushes_total",
                                   "xDS responses sent, by resource type.", "type");
    m->requests = sx_metrics_counter(
        r, "sextant_xds_requests_total",
        "xDS requests received (state of the world, Delta and gateway.control.v1), by type.",
        "type");
    m->acks =
        sx_metrics_counter(r, "sextant_xds_acks_total", "xDS responses ACKed, by type.", "type");
    m->nacks =
        sx_metrics_counter(r, "sextant_xds_nacks_total", "xDS responses NACKed, by type.", "type");
    m->push_ack_seconds =
        sx_metrics_histogram(r, "sextant_xds_push_ack_seconds",
                             "Time from a change becoming known to the client's ACK or NACK of it.",
                             "type", ack_bounds, sizeof(ack_bounds) / sizeof(ack_bounds[0]));
    m->build_seconds =
        sx_metrics_histogram(r, "sextant_xds_build_seconds",
                             "Time to decode a snapshot and build and encode its xDS resources.",
                             NULL, build_bounds, sizeof(build_bounds) / sizeof(build_bounds[0]));
    m->build_failures =
        sx_metrics_counter(r, "sextant_xds_build_failures_total",
                           "Snapshot versions whose xDS resources could not be built.", NULL);
    m->coalesced = sx_metrics_counter(
        r, "sextant_xds_snapshot_fanout_coalesced_total",
        "Snapshots not yet sent to a stream that were replaced by a newer one.", NULL);
    m->terminations = sx_metrics_counter(r, "sextant_xds_stream_terminations_total",
                                         "xDS streams ended, by reason.", "reason");
    m->report_rejections =
        sx_metrics_counter(r, "sextant_xds_status_report_rejections_total",
                           "Data plane status reports refused, by reason.", "reason");
    m->limit_refusals =
        sx_metrics_counter(r, "sextant_xds_limit_refusals_total",
                           "xDS streams ended for input past a limit, by limit.", "limit");
    m->auth_failures = sx_metrics_counter(
        r, "sextant_xds_auth_failures_total",
        "xDS streams and status reports refused for their credentials, by reason.", "reason");
}

void xds_metrics_inc(sx_metric *f, const char *label)
{
    xds_metrics_add(f, label, 1);
}

void xds_metrics_add(sx_metric *f, const char *label, double v)
{
    if (f)
        sx_metric_add(f, label ? (const char *[]){label} : NULL, v);
}

void xds_metrics_set(sx_metric *f, const char *label, double v)
{
    if (f)
        sx_metric_set(f, label ? (const char *[]){label} : NULL, v);
}

void xds_metrics_observe(sx_metric *f, const char *label, double v)
{
    if (f)
        sx_metric_observe(f, label ? (const char *[]){label} : NULL, v);
}
