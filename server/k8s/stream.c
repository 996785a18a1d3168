/*
 * stream.c — the newline-delimited JSON parser of watch streams (see stream.h).
 *
 * Design: a line that lies whole inside one chunk is parsed in place, without a copy;
 * only the head of a line cut by a chunk boundary is buffered, and the buffer never grows
 * past the cap, so a hostile or broken server cannot make the process hold more than one
 * line's cap per stream.
 */
#include "server/k8s/stream.h"

#include <stdbool.h>
#include <string.h>

void k8s_stream_init(k8s_stream *s, size_t max_line, k8s_stream_fn fn, void *ctx)
{
    memset(s, 0, sizeof(*s));
    s->max_line = max_line;
    s->fn = fn;
    s->ctx = ctx;
}

/* Empties the partial line; a buffer grown by a large event is given back. */
static void release_partial(k8s_stream *s)
{
    if (s->partial.cap > 64 * 1024)
        sx_buf_free(&s->partial);
    else
        sx_buf_reset(&s->partial);
}

static int fail(k8s_stream *s, int code)
{
    s->failed = code;
    release_partial(s);
    return code;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

/* Parses one whole line and hands it over. */
static int line(k8s_stream *s, const char *p, size_t n, sx_err *err)
{
    if (blank(p, n))
        return 0;
    json_error_t je;
    json_t *v = json_loadb(p, n, 0, &je);
    if (v == NULL) {
        sx_err_set(err, SX_EINVAL, "watch event %zu is not JSON: %s (column %d)", s->lines + 1,
                   je.text, je.column);
        return fail(s, SX_EINVAL);
    }
    s->lines++;
    int rc = s->fn(s->ctx, v, err);
    json_decref(v);
    return rc != 0 ? fail(s, rc) : 0;
}

static int too_large(k8s_stream *s, sx_err *err)
{
    sx_err_set(err, SX_ETOOLARGE, "watch event %zu is larger than %zu bytes", s->lines + 1,
               s->max_line);
    return fail(s, SX_ETOOLARGE);
}

int k8s_stream_feed(k8s_stream *s, const void *data, size_t n, sx_err *err)
{
    if (s->failed)
        return sx_err_set(err, s->failed, "the watch stream has already failed");
    const char *p = data;
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;
        if (s->partial.len + seg > s->max_line)
            return too_large(s, err);
        if (nl == NULL) {
            sx_buf_append(&s->partial, p, seg);
            return 0;
        }
        int rc;
        if (s->partial.len == 0) {
            rc = line(s, p, seg, err);
        } else {
            sx_buf_append(&s->partial, p, seg);
            rc = line(s, s->partial.data, s->partial.len, err);
            release_partial(s);
        }
        if (rc != 0)
            return rc;
        p += seg + 1;
        n -= seg + 1;
    }
    return 0;
}

int k8s_stream_end(k8s_stream *s, sx_err *err)
{
    if (s->failed)
        return sx_err_set(err, s->failed, "the watch stream has already failed");
    if (s->partial.len == 0)
        return 0;
    int rc = line(s, s->partial.data, s->partial.len, err);
    release_partial(s);
    return rc;
}

void k8s_stream_reset(k8s_stream *s)
{
    release_partial(s);
    s->failed = 0;
}

void k8s_stream_free(k8s_stream *s)
{
    sx_buf_free(&s->partial);
}
