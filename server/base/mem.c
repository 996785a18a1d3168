/*
 * mem.c — allocation wrappers that abort on out-of-memory.
 *
 * A control plane that cannot allocate cannot make progress safely; dying loudly and
 * letting the supervisor (systemd, Kubernetes) restart us is better than half-handled
 * NULLs spread through every caller.
 */
#include "server/base/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(size_t n)
{
    char msg[128];
    int len = snprintf(msg, sizeof(msg),
                       "{\"level\":\"fatal\",\"msg\":\"out of memory allocating %zu bytes\"}\n", n);
    if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0) {
        /* nothing more we can do */
    }
    abort();
}

void *sx_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        oom(n);
    return p;
}

void *sx_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL)
        oom(count * size);
    return p;
}

void *sx_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        oom(n);
    return q;
}

char *sx_strdup(const char *s)
{
    size_t n = strlen(s);
    char *p = sx_malloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

char *sx_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = sx_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *sx_vformat(void *(*alloc)(void *ctx, size_t n), void *ctx, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *p = alloc(ctx, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

static void *heap_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return sx_malloc(n);
}

char *sx_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = sx_vformat(heap_alloc, NULL, fmt, ap);
    va_end(ap);
    return p;
}

void sx_free(void *p)
{
    free(p);
}
