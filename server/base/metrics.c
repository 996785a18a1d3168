/*
 * metrics.c — Prometheus registry.
 *
 * Families are kept in registration order, series within a family in creation order;
 * a family count is small (tens) and series counts are bounded by label cardinality,
 * so linear lookups under one registry mutex are cheaper than anything cleverer.
 */
#include "server/base/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"

#define MAX_LABELS 8

typedef enum { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM } kind;

typedef struct series {
    struct series *next;
    char *values[MAX_LABELS];
    double value;    /* counter or gauge */
    double sum;      /* histogram */
    double *buckets; /* histogram: cumulative counts per bound, plus +Inf at [nbounds] */
} series;

struct sx_metric {
    struct sx_metric *next;
    sx_metrics *reg;
    kind kind;
    char *name;
    char *help;
    size_t nlabels;
    char *labels[MAX_LABELS];
    double *bounds;
    size_t nbounds;
    series *series;
    series *series_tail;
};

struct sx_metrics {
    pthread_mutex_t mu;
    sx_metric *head;
    sx_metric *tail;
};

sx_metrics *sx_metrics_create(void)
{
    sx_metrics *r = sx_calloc(1, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void free_series(sx_metric *m, series *s)
{
    for (size_t i = 0; i < m->nlabels; i++)
        sx_free(s->values[i]);
    sx_free(s->buckets);
    sx_free(s);
}

void sx_metrics_destroy(sx_metrics *r)
{
    if (r == NULL)
        return;
    for (sx_metric *m = r->head; m;) {
        sx_metric *next = m->next;
        for (series *s = m->series; s;) {
            series *sn = s->next;
            free_series(m, s);
            s = sn;
        }
        for (size_t i = 0; i < m->nlabels; i++)
            sx_free(m->labels[i]);
        sx_free(m->bounds);
        sx_free(m->name);
        sx_free(m->help);
        sx_free(m);
        m = next;
    }
    pthread_mutex_destroy(&r->mu);
    sx_free(r);
}

static sx_metric *reg(sx_metrics *r, kind k, const char *name, const char *help, const char *labels,
                      const double *bounds, size_t nbounds)
{
    pthread_mutex_lock(&r->mu);
    for (sx_metric *m = r->head; m; m = m->next) {
        if (strcmp(m->name, name) == 0) {
            pthread_mutex_unlock(&r->mu);
            return m;
        }
    }
    sx_metric *m = sx_calloc(1, sizeof(*m));
    m->reg = r;
    m->kind = k;
    m->name = sx_strdup(name);
    m->help = sx_strdup(help);
    if (labels && *labels) {
        const char *p = labels;
        while (*p && m->nlabels < MAX_LABELS) {
            const char *c = strchr(p, ',');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            m->labels[m->nlabels++] = sx_strndup(p, n);
            p = c ? c + 1 : p + n;
        }
    }
    if (nbounds) {
        m->bounds = sx_malloc(nbounds * sizeof(double));
        memcpy(m->bounds, bounds, nbounds * sizeof(double));
        m->nbounds = nbounds;
    }
    if (r->tail)
        r->tail->next = m;
    else
        r->head = m;
    r->tail = m;
    pthread_mutex_unlock(&r->mu);
    return m;
}

sx_metric *sx_metrics_counter(sx_metrics *r, const char *name, const char *help, const char *labels)
{
    return reg(r, KIND_COUNTER, name, help, labels, NULL, 0);
}

sx_metric *sx_metrics_gauge(sx_metrics *r, const char *name, const char *help, const char *labels)
{
    return reg(r, KIND_GAUGE, name, help, labels, NULL, 0);
}

sx_metric *sx_metrics_histogram(sx_metrics *r, const char *name, const char *help,
                                const char *labels, const double *bounds, size_t nbounds)
{
    return reg(r, KIND_HISTOGRAM, name, help, labels, bounds, nbounds);
}

/* Finds or creates the series; call with the registry mutex held. */
static series *find_series(sx_metric *m, const char *const *values, int create)
{
    for (series *s = m->series; s; s = s->next) {
        size_t i = 0;
        for (; i < m->nlabels; i++)
            if (strcmp(s->values[i], values && values[i] ? values[i] : "") != 0)
                break;
        if (i == m->nlabels)
            return s;
    }
    if (!create)
        return NULL;
    series *s = sx_calloc(1, sizeof(*s));
    for (size_t i = 0; i < m->nlabels; i++)
        s->values[i] = sx_strdup(values && values[i] ? values[i] : "");
    if (m->kind == KIND_HISTOGRAM)
        s->buckets = sx_calloc(m->nbounds + 1, sizeof(double));
    if (m->series_tail)
        m->series_tail->next = s;
    else
        m->series = s;
    m->series_tail = s;
    return s;
}

void sx_metric_add(sx_metric *m, const char *const *label_values, double v)
{
    pthread_mutex_lock(&m->reg->mu);
    find_series(m, label_values, 1)->value += v;
    pthread_mutex_unlock(&m->reg->mu);
}

void sx_metric_inc(sx_metric *m, const char *const *label_values)
{
    sx_metric_add(m, label_values, 1);
}

void sx_metric_set(sx_metric *m, const char *const *label_values, double v)
{
    pthread_mutex_lock(&m->reg->mu);
    find_series(m, label_values, 1)->value = v;
    pthread_mutex_unlock(&m->reg->mu);
}

void sx_metric_set_all(sx_metric *m, size_t n, const char *const *const *label_values,
                       const double *values)
{
    pthread_mutex_lock(&m->reg->mu);
    for (series *s = m->series; s;) {
        series *next = s->next;
        free_series(m, s);
        s = next;
    }
    m->series = m->series_tail = NULL;
    for (size_t i = 0; i < n; i++)
        find_series(m, label_values[i], 1)->value = values[i];
    pthread_mutex_unlock(&m->reg->mu);
}

void sx_metric_observe(sx_metric *m, const char *const *label_values, double v)
{
    pthread_mutex_lock(&m->reg->mu);
    series *s = find_series(m, label_values, 1);
    for (size_t i = 0; i < m->nbounds; i++)
        if (v <= m->bounds[i])
            s->buckets[i] += 1;
    s->buckets[m->nbounds] += 1;
    s->sum += v;
    pthread_mutex_unlock(&m->reg->mu);
}

double sx_metric_value(sx_metric *m, const char *const *label_values)
{
    pthread_mutex_lock(&m->reg->mu);
    series *s = find_series(m, label_values, 0);
    double v = s ? s->value : 0;
    pthread_mutex_unlock(&m->reg->mu);
    return v;
}

double sx_metrics_total(sx_metrics *r, const char *name)
{
    double v = 0;
    pthread_mutex_lock(&r->mu);
    for (sx_metric *m = r->head; m; m = m->next)
        if (strcmp(m->name, name) == 0 && m->kind != KIND_HISTOGRAM)
            for (series *s = m->series; s; s = s->next)
                v += s->value;
    pthread_mutex_unlock(&r->mu);
    return v;
}

static void put_escaped(sx_buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            sx_buf_putc(out, '\\'), sx_buf_putc(out, *s);
        else if (*s == '\n')
            sx_buf_puts(out, "\\n");
        else
            sx_buf_putc(out, *s);
    }
}

static void put_number(sx_buf *out, double v)
{
    if (isinf(v))
        sx_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == (double)(long long)v && fabs(v) < 1e15)
        sx_buf_printf(out, "%lld", (long long)v);
    else
        sx_buf_printf(out, "%.17g", v);
}

/* Writes {a="x",b="y"[,le="..."]}; nothing when there are no labels at all. */
static void put_labels(sx_buf *out, sx_metric *m, series *s, const char *le)
{
    if (m->nlabels == 0 && le == NULL)
        return;
    sx_buf_putc(out, '{');
    for (size_t i = 0; i < m->nlabels; i++) {
        sx_buf_printf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
        put_escaped(out, s->values[i]);
        sx_buf_putc(out, '"');
    }
    if (le)
        sx_buf_printf(out, "%sle=\"%s\"", m->nlabels ? "," : "", le);
    sx_buf_putc(out, '}');
}

void sx_metrics_render(sx_metrics *r, sx_buf *out)
{
    static const char *type_names[] = {"counter", "gauge", "histogram"};
    pthread_mutex_lock(&r->mu);
    for (sx_metric *m = r->head; m; m = m->next) {
        sx_buf_printf(out, "# HELP %s ", m->name);
        put_escaped(out, m->help);
        sx_buf_printf(out, "\n# TYPE %s %s\n", m->name, type_names[m->kind]);
        if (m->series == NULL && m->nlabels == 0 && m->kind != KIND_HISTOGRAM) {
            sx_buf_printf(out, "%s 0\n", m->name);
            continue;
        }
        for (series *s = m->series; s; s = s->next) {
            if (m->kind != KIND_HISTOGRAM) {
                sx_buf_puts(out, m->name);
                put_labels(out, m, s, NULL);
                sx_buf_putc(out, ' ');
                put_number(out, s->value);
                sx_buf_putc(out, '\n');
                continue;
            }
            for (size_t i = 0; i <= m->nbounds; i++) {
                char le[64];
                if (i == m->nbounds)
                    snprintf(le, sizeof(le), "+Inf");
                else
                    snprintf(le, sizeof(le), "%g", m->bounds[i]);
                sx_buf_printf(out, "%s_bucket", m->name);
                put_labels(out, m, s, le);
                sx_buf_putc(out, ' ');
                put_number(out, s->buckets[i]);
                sx_buf_putc(out, '\n');
            }
            sx_buf_printf(out, "%s_sum", m->name);
            put_labels(out, m, s, NULL);
            sx_buf_putc(out, ' ');
            put_number(out, s->sum);
            sx_buf_printf(out, "\n%s_count", m->name);
            put_labels(out, m, s, NULL);
            sx_buf_putc(out, ' ');
            put_number(out, s->buckets[m->nbounds]);
            sx_buf_putc(out, '\n');
        }
    }
    pthread_mutex_unlock(&r->mu);
}
