/*
 * handlers_events.h — what the live events handler (handlers_events.c) parses, apart
 * from the request it came in, so it can be checked on its own (tests/fuzz). The route
 * itself is registered through handlers_routes.h.
 */
#ifndef SX_API_HANDLERS_EVENTS_H
#define SX_API_HANDLERS_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

/* ?types=a,b (q; NULL or "" for every type) as a mask of events_type_index bits, 0 for
 * every type. False when an entry is not an event type, with the message naming it and
 * the types in why (n_why bytes). Entries are trimmed of spaces. */
bool api_events_parse_types(const char *q, unsigned *mask, char *why, size_t n_why);

#endif
