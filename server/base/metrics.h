/*
 * metrics.h — a Prometheus metrics registry: counters, gauges and histograms with
 * labels, rendered in the text exposition format.
 *
 * The registry is created by the server and handed to components; families are
 * registered once at start-up and then updated from any thread. Registering the same
 * name twice returns the existing family. Label values are given as an array whose
 * length is the number of label names the family was registered with.
 */
#ifndef SX_BASE_METRICS_H
#define SX_BASE_METRICS_H

#include <stddef.h>

#include "server/base/buf.h"

typedef struct sx_metrics sx_metrics;
typedef struct sx_metric sx_metric;

/* New empty registry; never NULL. */
sx_metrics *sx_metrics_create(void);
/* Frees the registry and every family in it; NULL allowed. */
void sx_metrics_destroy(sx_metrics *r);

/* Registers a family. labels is a comma-separated list of label names ("state,reason")
 * or NULL for none. The family is owned by the registry. Never NULL. */
sx_metric *sx_metrics_counter(sx_metrics *r, const char *name, const char *help,
                              const char *labels);
sx_metric *sx_metrics_gauge(sx_metrics *r, const char *name, const char *help, const char *labels);
/* bounds: ascending upper bounds of the buckets (+Inf is implicit). */
sx_metric *sx_metrics_histogram(sx_metrics *r, const char *name, const char *help,
                                const char *labels, const double *bounds, size_t nbounds);

/* Updates the series named by label_values (NULL when the family has no labels). */
void sx_metric_add(sx_metric *m, const char *const *label_values, double v);
void sx_metric_inc(sx_metric *m, const char *const *label_values);
void sx_metric_set(sx_metric *m, const char *const *label_values, double v);
void sx_metric_observe(sx_metric *m, const char *const *label_values, double v);
/* Replaces every series of gauge m with n series: label_values[i] (one array per
 * series, as for sx_metric_set) set to values[i]; series not named are dropped. One
 * step under the registry lock, so a render sees the old set or the new one. */
void sx_metric_set_all(sx_metric *m, size_t n, const char *const *const *label_values,
                       const double *values);
/* Current value of a counter or gauge series (0 if absent); for tests and health. */
double sx_metric_value(sx_metric *m, const char *const *label_values);
/* Sum of every series of the counter or gauge family name (0 if no such family): e.g.
 * all pushes whatever their type. */
double sx_metrics_total(sx_metrics *r, const char *name);

/* Appends the whole registry in Prometheus text format 0.0.4 to out. */
void sx_metrics_render(sx_metrics *r, sx_buf *out);

#endif
