/*
 * arena.h — per-request memory: allocate freely, free everything once.
 *
 * An arena hands out memory that lives until sx_arena_destroy. Cleanups registered
 * with sx_arena_defer (PQclear for a PGresult, json_decref for a json_t, ...) run in
 * reverse order of registration when the arena is destroyed, so a request handler
 * never has to track each object it touched. Not thread-safe: one arena, one thread.
 */
#ifndef SX_BASE_ARENA_H
#define SX_BASE_ARENA_H

#include <stddef.h>

#include "server/base/err.h"

typedef struct sx_arena sx_arena;
typedef void (*sx_cleanup_fn)(void *p);

/* New empty arena; never NULL. */
sx_arena *sx_arena_create(void);
/* Runs the cleanups (newest first), frees all memory and the arena; NULL allowed. */
void sx_arena_destroy(sx_arena *a);

/* n bytes aligned for any type, zeroed, owned by the arena; never NULL. */
void *sx_arena_alloc(sx_arena *a, size_t n);
char *sx_arena_strdup(sx_arena *a, const char *s);
char *sx_arena_strndup(sx_arena *a, const char *s, size_t n);
char *sx_arena_printf(sx_arena *a, const char *fmt, ...) SX_PRINTF(2, 3);
/* Registers fn(p) to run at destroy; returns p for chaining. p NULL is ignored. */
void *sx_arena_defer(sx_arena *a, sx_cleanup_fn fn, void *p);

#endif
