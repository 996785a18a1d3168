/*
 * fuzz_k8s_stream.c — libFuzzer target for the Kubernetes watch-stream parser
 * (server/k8s/stream.c).
 *
 * Byte 0 sets the line cap (16..4111 bytes) and byte 1 the chunk sizes; the rest is the
 * stream. It is fed once whole and once in chunks of varying size, as libcurl may hand
 * it over: both must deliver the same values in the same order and end with the same
 * code, and no line longer than the cap may be delivered.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/base/buf.h"
#include "server/base/err.h"
#include "server/k8s/stream.h"

typedef struct seen {
    sx_buf out; /* every value, compact JSON, one per line */
    size_t n;
} seen;

static int on_value(void *ctx, json_t *v, sx_err *err)
{
    (void)err;
    seen *s = ctx;
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (text == NULL)
        abort();
    sx_buf_puts(&s->out, text);
    sx_buf_putc(&s->out, '\n');
    free(text);
    s->n++;
    return 0;
}

static int run(const uint8_t *data, size_t size, size_t cap, uint8_t chunking, seen *s)
{
    k8s_stream st;
    k8s_stream_init(&st, cap, on_value, s);
    sx_err err;
    sx_err_clear(&err);
    int rc = 0;
    size_t at = 0, step = 0;
    while (at < size && rc == 0) {
        size_t n = chunking == 0 ? size : 1 + ((chunking * (step + 1) * 7) % 61);
        step++;
        if (n > size - at)
            n = size - at;
        rc = k8s_stream_feed(&st, data + at, n, &err);
        at += n;
    }
    if (rc == 0)
        rc = k8s_stream_end(&st, &err);
    if (rc != 0 && err.message[0] == '\0')
        abort();
    k8s_stream_free(&st);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t cap = 16 + (size_t)data[0] * 16;
    uint8_t chunking = data[1] ? data[1] : 1;
    seen whole = {0}, chunked = {0};
    int rc1 = run(data + 2, size - 2, cap, 0, &whole);
    int rc2 = run(data + 2, size - 2, cap, chunking, &chunked);
    if (rc1 != rc2 || whole.n != chunked.n || whole.out.len != chunked.out.len ||
        (whole.out.len && memcmp(whole.out.data, chunked.out.data, whole.out.len) != 0))
        abort();
    sx_buf_free(&whole.out);
    sx_buf_free(&chunked.out);
    return 0;
}
