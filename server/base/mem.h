/*
 * mem.h — allocation wrappers that abort on out-of-memory and never return NULL.
 *
 * Callers never check the result for NULL. Every pointer returned is owned by the
 * caller and released with sx_free (or free). Sizes that overflow abort as well.
 */
#ifndef SX_BASE_MEM_H
#define SX_BASE_MEM_H

#include <stdarg.h>
#include <stddef.h>

#include "server/base/err.h"

void *sx_malloc(size_t n);
void *sx_calloc(size_t count, size_t size);
void *sx_realloc(void *p, size_t n);
/* Copy of s; s must not be NULL. */
char *sx_strdup(const char *s);
/* Copy of the first n bytes of s (stops early at a NUL), always terminated. */
char *sx_strndup(const char *s, size_t n);
/* snprintf into a new string of the right size. */
char *sx_asprintf(const char *fmt, ...) SX_PRINTF(1, 2);
/* vsnprintf into a new string of the right size from alloc(ctx, size), which must not
 * return NULL; the string belongs to whoever owns alloc's memory. */
char *sx_vformat(void *(*alloc)(void *ctx, size_t n), void *ctx, const char *fmt, va_list ap)
    SX_PRINTF(3, 0);
void sx_free(void *p);

#endif
