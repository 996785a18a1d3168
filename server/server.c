/*
 * server.c — creates and frees the runtime of the one server struct.
 *
 * Creation order is dependency order: the registry first (everything registers metrics
 * in it), then the supervisor that reports on it. The components are main.c's to create
 * and free; destruction only checks that it did.
 */
#include "server/server.h"

#include <time.h>

#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/apply_events.h"
#include "server/validate/validate.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "0.0.0-dev"
#endif

int sx_server_create(sextant_config *cfg, struct sx_server **out, sx_err *err)
{
    (void)err; /* nothing here can fail yet; the signature leaves room for it */
    struct sx_server *srv = sx_calloc(1, sizeof(*srv));
    srv->config = cfg;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    srv->start_time = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;

    srv->metrics = sx_metrics_create();
    const char *version[] = {SEXTANT_VERSION};
    sx_metric_set(sx_metrics_gauge(srv->metrics, "sextant_build_info",
                                   "Always 1; the labels say which build is running", "version"),
                  version, 1);
    sx_metric_set(sx_metrics_gauge(srv->metrics, "sextant_start_time_seconds",
                                   "Process start time, seconds since the Unix epoch", NULL),
                  NULL, srv->start_time);

    apply_events_metrics(srv->metrics);
    val_metrics(srv->metrics);

    srv->sup = sup_create(srv->metrics, cfg->shutdown.timeout_ms);
    *out = srv;
    return 0;
}

void sx_server_destroy(struct sx_server *srv)
{
    if (srv == NULL)
        return;
    if (srv->db || srv->cache || srv->listener || srv->snapshots || srv->http || srv->xds)
        SX_WARN("server", "components were not freed before sx_server_destroy");
    sup_destroy(srv->sup);
    apply_events_metrics(NULL);
    val_metrics(NULL);
    sx_metrics_destroy(srv->metrics);
    config_free(srv->config);
    sx_free(srv);
}
