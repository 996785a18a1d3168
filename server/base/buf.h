/*
 * buf.h — a growable, length-carrying byte buffer (always NUL-terminated).
 *
 * A zero-initialised sx_buf is valid and empty. The buffer owns its bytes; release
 * them with sx_buf_free, or take them with sx_buf_steal.
 */
#ifndef SX_BASE_BUF_H
#define SX_BASE_BUF_H

#include <stddef.h>

#include "server/base/err.h"

typedef struct sx_buf {
    char *data; /* NULL until the first append; then always NUL-terminated */
    size_t len; /* bytes used, not counting the terminator */
    size_t cap; /* bytes allocated */
} sx_buf;

void sx_buf_reserve(sx_buf *b, size_t extra);
void sx_buf_append(sx_buf *b, const void *p, size_t n);
void sx_buf_puts(sx_buf *b, const char *s);
void sx_buf_putc(sx_buf *b, char c);
/* Appends "[index]" (a path's array index), without the cost of a printf. */
void sx_buf_put_index(sx_buf *b, size_t index);
void sx_buf_printf(sx_buf *b, const char *fmt, ...) SX_PRINTF(2, 3);
/* The contents as a C string ("" when empty); valid until the next change. */
const char *sx_buf_cstr(const sx_buf *b);
void sx_buf_reset(sx_buf *b);
/* Returns the bytes (caller frees; never NULL) and leaves b empty. */
char *sx_buf_steal(sx_buf *b);
void sx_buf_free(sx_buf *b);
/* Reads the file at path into b (empty), stopping once more than max bytes are in, so
 * that b->len > max tells a file larger than max (SIZE_MAX: no limit). Returns 0; -1
 * when the file cannot be opened (errno says why); 1 when reading it fails. b keeps
 * what was read either way. */
int sx_buf_read_file(sx_buf *b, const char *path, size_t max);

#endif
