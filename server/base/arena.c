/*
 * arena.c — bump allocator in chained blocks with a cleanup list.
 *
 * Small allocations come from 8 KiB blocks; an allocation bigger than a quarter block
 * gets a block of its own so one large body does not waste the rest of a block.
 */
#include "server/base/arena.h"

#include <stdarg.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"

#define BLOCK_SIZE 8192

typedef struct block {
    struct block *next;
    size_t used;
    size_t size;
    alignas(max_align_t) unsigned char data[];
} block;

typedef struct cleanup {
    struct cleanup *next;
    sx_cleanup_fn fn;
    void *p;
} cleanup;

struct sx_arena {
    block *blocks;     /* newest first; the head is the one we bump from */
    cleanup *cleanups; /* newest first, so destroy runs them in reverse order */
};

sx_arena *sx_arena_create(void)
{
    return sx_calloc(1, sizeof(sx_arena));
}

void sx_arena_destroy(sx_arena *a)
{
    if (a == NULL)
        return;
    for (cleanup *c = a->cleanups; c;) {
        cleanup *next = c->next;
        c->fn(c->p);
        sx_free(c);
        c = next;
    }
    for (block *b = a->blocks; b;) {
        block *next = b->next;
        sx_free(b);
        b = next;
    }
    sx_free(a);
}

static block *new_block(size_t size)
{
    block *b = sx_malloc(sizeof(block) + size);
    b->next = NULL;
    b->used = 0;
    b->size = size;
    return b;
}

void *sx_arena_alloc(sx_arena *a, size_t n)
{
    const size_t align = alignof(max_align_t);
    n = (n + align - 1) & ~(align - 1);
    if (n == 0)
        n = align;
    if (n > BLOCK_SIZE / 4) {
        block *b = new_block(n);
        b->used = n;
        /* Keep the bump block at the head: insert the big one behind it. */
        if (a->blocks) {
            b->next = a->blocks->next;
            a->blocks->next = b;
        } else {
            a->blocks = b;
        }
        memset(b->data, 0, n);
        return b->data;
    }
    block *h = a->blocks;
    if (h == NULL || h->size - h->used < n) {
        h = new_block(BLOCK_SIZE);
        h->next = a->blocks;
        a->blocks = h;
    }
    void *p = h->data + h->used;
    h->used += n;
    memset(p, 0, n);
    return p;
}

char *sx_arena_strndup(sx_arena *a, const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = sx_arena_alloc(a, len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *sx_arena_strdup(sx_arena *a, const char *s)
{
    return sx_arena_strndup(a, s, strlen(s));
}

static void *arena_alloc(void *a, size_t n)
{
    return sx_arena_alloc(a, n);
}

char *sx_arena_printf(sx_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = sx_vformat(arena_alloc, a, fmt, ap);
    va_end(ap);
    return p;
}

void *sx_arena_defer(sx_arena *a, sx_cleanup_fn fn, void *p)
{
    if (p == NULL)
        return NULL;
    cleanup *c = sx_malloc(sizeof(cleanup));
    c->fn = fn;
    c->p = p;
    c->next = a->cleanups;
    a->cleanups = c;
    return p;
}
