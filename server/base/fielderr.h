/*
 * fielderr.h — a list of path-precise validation errors, reported all at once.
 *
 * Validators add every problem they find ("spec.backends[2].endpoints[0].port",
 * "must be between 1 and 65535") instead of stopping at the first, so that an
 * operator fixes a document in one round trip. The REST API renders the list as
 * the "details" array of its error body.
 */
#ifndef SX_BASE_FIELDERR_H
#define SX_BASE_FIELDERR_H

#include <stddef.h>
#include <jansson.h>

#include "server/base/err.h"

typedef struct sx_fielderr {
    char *path;    /* "spec.listeners[0].port"; "" for the document itself */
    char *message; /* "must be between 1 and 65535"; lowercase, no period */
} sx_fielderr;

typedef struct sx_fielderrs {
    sx_fielderr *items; /* owned */
    size_t count;
    size_t cap;
} sx_fielderrs;

/* A zero-initialised sx_fielderrs is valid and empty. */
void sx_fielderrs_add(sx_fielderrs *l, const char *path, const char *fmt, ...) SX_PRINTF(3, 4);
/* JSON array [{"path":..,"message":..}, ...]; new reference owned by the caller. */
json_t *sx_fielderrs_to_json(const sx_fielderrs *l);
/* Joins the list as "path: message; path: message" into a new string (caller frees). */
char *sx_fielderrs_join(const sx_fielderrs *l);
/* Frees the items and leaves l empty. */
void sx_fielderrs_free(sx_fielderrs *l);

#endif
