/*
 * names.h — resource names shared by every stream of a server: a refcounted string
 * table (interning), so that 10,000 streams subscribed to the same 100 names keep one
 * copy of each name and a pointer per subscription instead of a copy each.
 *
 * A name is interned with xds_names_intern, which returns a pointer to the table's
 * copy holding one reference; xds_names_release gives that reference back and the copy
 * is freed with its last reference. Equal names interned in the same table are the
 * same pointer. The interned text is immutable and stays valid while the caller holds
 * its reference.
 *
 * Thread-safe: one mutex guards the table; it is taken only when a subscription
 * changes (never while pushing), and the _many variants take it once for a batch.
 */
#ifndef SX_XDS_NAMES_H
#define SX_XDS_NAMES_H

#include <stddef.h>

typedef struct xds_names xds_names;

/* A new empty table. Never NULL (aborts on out-of-memory). */
xds_names *xds_names_create(void);
/* Frees the table. Every reference should have been released; names still
 * referenced are freed as well (their pointers dangle). NULL allowed. */
void xds_names_destroy(xds_names *t);

/* The table's copy of name with one more reference. Never NULL. */
const char *xds_names_intern(xds_names *t, const char *name);
/* Interns n names at once: out[i] is the table's copy of in[i] (one reference each).
 * in and out may be the same array. */
void xds_names_intern_many(xds_names *t, const char *const *in, size_t n, const char **out);

/* Releases a reference obtained from t; NULL allowed. */
void xds_names_release(xds_names *t, const char *name);
/* Releases n references at once (NULL entries are skipped). */
void xds_names_release_many(xds_names *t, const char *const *names, size_t n);

/* How many distinct names the table holds (for tests and metrics). */
size_t xds_names_count(xds_names *t);

#endif
