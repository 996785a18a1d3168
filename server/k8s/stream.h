/*
 * stream.h — the parser of a Kubernetes watch stream: newline-delimited JSON arriving in
 * chunks of any size, as libcurl's write callback hands them over.
 *
 * Each complete line is parsed with jansson and handed to a callback; a line split over
 * chunks is kept until its newline arrives. A watch stream is unbounded, but one line is
 * one event, so a cap on a line's size bounds the memory a stream can take: a line longer
 * than the cap is an error as soon as it passes the cap, without waiting for its end.
 * Empty lines are skipped. After an error the stream stays failed: every later feed
 * returns the same code, so the caller ends the connection.
 */
#ifndef SX_K8S_STREAM_H
#define SX_K8S_STREAM_H

#include <stddef.h>
#include <jansson.h>

#include "server/base/buf.h"
#include "server/base/err.h"

/* Called once per line with its value (borrowed: json_incref what you keep). Returns 0
 * to go on, or a negative SX_E* code (with err set) that ends the stream. */
typedef int (*k8s_stream_fn)(void *ctx, json_t *value, sx_err *err);

typedef struct k8s_stream {
    sx_buf partial;   /* the start of a line whose newline has not arrived */
    size_t max_line;  /* the cap on one line, newline excluded */
    k8s_stream_fn fn; /* borrowed */
    void *ctx;
    size_t lines; /* lines handed to fn */
    int failed;   /* 0, or the code of the error that ended the stream */
} k8s_stream;

/* Prepares s (its memory is the caller's) to call fn(ctx, ...) per line, with lines of
 * at most max_line bytes. Release with k8s_stream_free. */
void k8s_stream_init(k8s_stream *s, size_t max_line, k8s_stream_fn fn, void *ctx);

/*
 * Feeds n bytes. Returns 0, or the stream's error (err set on the call that failed):
 * SX_ETOOLARGE for a line over max_line, SX_EINVAL for a line that is not JSON, or what
 * fn returned.
 */
int k8s_stream_feed(k8s_stream *s, const void *data, size_t n, sx_err *err) SX_MUSTCHECK;

/* The stream ended: a last line without its newline is parsed as if it had one. Returns
 * as k8s_stream_feed. */
int k8s_stream_end(k8s_stream *s, sx_err *err) SX_MUSTCHECK;

/* Forgets the partial line and any error, for a new connection; keeps fn and the cap. */
void k8s_stream_reset(k8s_stream *s);

/* Frees the buffer; s may be initialised again. */
void k8s_stream_free(k8s_stream *s);

#endif
