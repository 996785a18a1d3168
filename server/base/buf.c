/*
 * buf.c — growable byte buffer.
 *
 * Capacity doubles so that n appends cost O(n) copies in total.
 */
#include "server/base/buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"

void sx_buf_reserve(sx_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = sx_realloc(b->data, cap);
    b->cap = cap;
}

void sx_buf_append(sx_buf *b, const void *p, size_t n)
{
    sx_buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sx_buf_puts(sx_buf *b, const char *s)
{
    sx_buf_append(b, s, strlen(s));
}

void sx_buf_putc(sx_buf *b, char c)
{
    sx_buf_append(b, &c, 1);
}

void sx_buf_printf(sx_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        sx_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

const char *sx_buf_cstr(const sx_buf *b)
{
    return b->data ? b->data : "";
}

void sx_buf_reset(sx_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *sx_buf_steal(sx_buf *b)
{
    char *p = b->data ? b->data : sx_strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void sx_buf_free(sx_buf *b)
{
    sx_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int sx_buf_read_file(sx_buf *b, const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    char chunk[8192];
    size_t n;
    while (b->len <= max && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sx_buf_append(b, chunk, n);
    bool failed = ferror(f) != 0;
    fclose(f);
    return failed ? 1 : 0;
}

void sx_buf_put_index(sx_buf *b, size_t index)
{
    char text[24];
    size_t n = sizeof text;
    text[--n] = ']';
    do
        text[--n] = (char)('0' + index % 10);
    while ((index /= 10) > 0);
    text[--n] = '[';
    sx_buf_append(b, text + n, sizeof text - n);
}
