/*
 * subs.h — what one xDS stream subscribed to for one resource type: a set of names
 * and the wildcard, with the rules of Envoy's xDS protocol for both variants.
 *
 * The wildcard rules (xds_protocol.rst, "How the client specifies what resources to
 * return"): "*" among the names subscribes to every resource of the type; for
 * Listener and Cluster, a client that has never named a resource of the type is on
 * the legacy wildcard; once it has named one ("*" or any other), an empty list means
 * it wants nothing. For the other types an empty list always means nothing.
 *
 * The set is plain data owned by the stream state that embeds it; nothing here is
 * thread-safe (the stream's lock covers it). A zero-initialised xds_subs is an empty,
 * never-requested subscription that keeps its own copy of each name; setting pool
 * (before the first name is added) makes it share the names of that table instead,
 * which is what a server with thousands of streams on the same names does.
 */
#ifndef SX_XDS_SUBS_H
#define SX_XDS_SUBS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/xds/names.h"

typedef struct xds_subs {
    const char **names; /* sorted (strcmp), unique, never "*"; owned, or references
                           into pool */
    xds_names *pool;    /* interns the names, or NULL (private copies); kept by clear */
    size_t count;       /* names in use */
    size_t cap;         /* slots allocated */
    bool wildcard;      /* subscribed to every resource of the type */
    bool explicit_ever; /* some request named a resource ("*" included) */
    bool requested;     /* at least one request for the type was seen */
} xds_subs;

/* Frees (or releases) the names and resets s to the zero state, keeping its pool. */
void xds_subs_clear(xds_subs *s);

/* Whether name is one of the explicit names (not considering the wildcard). */
bool xds_subs_has(const xds_subs *s, const char *name);

/* Whether a resource called name is of interest: the wildcard, or an explicit name. */
bool xds_subs_wants(const xds_subs *s, const char *name);

/* Adds an explicit name (copied or interned); "*" turns the wildcard on instead. Returns true
 * when something changed. */
bool xds_subs_add(xds_subs *s, const char *name);

/* Removes an explicit name; "*" turns the wildcard off instead. Returns true when
 * something changed. */
bool xds_subs_remove(xds_subs *s, const char *name);

/* A state-of-the-world request's resource_names replaces the subscription, following
 * the wildcard rules above; legacy_wildcard says whether the type has the legacy
 * empty-list wildcard (Listener, Cluster). Duplicates are ignored. Marks s requested.
 * Returns true when the subscription (wildcard or names) changed, and also for the
 * first request of the type. */
bool xds_subs_set_sotw(xds_subs *s, bool legacy_wildcard, char *const *names, size_t n);

#endif
