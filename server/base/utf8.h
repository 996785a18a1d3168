/*
 * utf8.h — whether bytes are well-formed UTF-8, the one encoding that PostgreSQL text,
 * JSON and the API's error messages accept: names and ids that come from outside (a
 * node's id, a path segment of a request) are checked here before they travel on.
 */
#ifndef SX_BASE_UTF8_H
#define SX_BASE_UTF8_H

#include <stdbool.h>

#include "server/base/arena.h"

/* Whether the NUL-terminated s is well-formed UTF-8: no overlong forms, no surrogates,
 * no code point past U+10FFFF. NULL is not. */
bool sx_utf8_valid(const char *s);

/* A copy of the NUL-terminated s (sx_malloc, the caller frees; NULL for NULL) in which
 * every ill-formed part is replaced by U+FFFD, one per maximal ill-formed subpart as
 * Unicode recommends: overlong forms, surrogates, code points past U+10FFFF, stray
 * continuation bytes and sequences cut short. Well-formed text is kept as it is. */
char *sx_utf8_sanitize(const char *s);

/* s itself when it is well-formed UTF-8, else the sanitized copy of it in a (NULL for
 * NULL): for request paths, header values and other outside text on their way into JSON,
 * which refuses ill-formed strings. */
const char *sx_utf8_sanitize_in(sx_arena *a, const char *s);

#endif
