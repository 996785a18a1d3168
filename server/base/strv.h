/*
 * strv.h — small sets of strings held as arrays (proxy groups of a config, of a
 * deployment): membership, equality as sets, and a sorted union.
 */
#ifndef SX_BASE_STRV_H
#define SX_BASE_STRV_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/arena.h"

/* Whether s is one of v[0..n). */
bool sx_strv_has(const char *const *v, size_t n, const char *s);

/* Whether a[0..na) and b[0..nb) hold the same strings, whatever their order and repeats. */
bool sx_strv_same_set(const char *const *a, size_t na, const char *const *b, size_t nb);

/* The union of a[0..na) and b[0..nb) (b may be NULL with nb 0), each string once, sorted,
 * into *out (allocated in arena; the strings are borrowed); returns how many. */
size_t sx_strv_union(sx_arena *arena, const char *const *a, size_t na, const char *const *b,
                     size_t nb, const char ***out);

#endif
