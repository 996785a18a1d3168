/*
 * utf8.h — whether bytes are well-formed UTF-8, the one encoding that PostgreSQL text,
 * JSON and the API's error messages accept: names and ids that come from outside (a
 * node's id, a path segment of a request) are checked here before they travel on.
 */
#ifndef SX_BASE_UTF8_H
#define SX_BASE_UTF8_H

#include <stdbool.h>

/* Whether the NUL-terminated s is well-formed UTF-8: no overlong forms, no surrogates,
 * no code point past U+10FFFF. NULL is not. */
bool sx_utf8_valid(const char *s);

#endif
