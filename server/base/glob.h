/*
 * glob.h — the one pattern language of names in rules and policies: `*` matches any run
 * of characters (none included), every other character itself. RBAC rules (resource
 * types, ids, actions, group scopes) and xDS client rules (node ids, groups) use it.
 */
#ifndef SX_BASE_GLOB_H
#define SX_BASE_GLOB_H

#include <stdbool.h>

/* Whether the NUL-terminated pattern matches all of the NUL-terminated s. */
bool sx_glob_match(const char *pattern, const char *s);

#endif
