/*
 * glob.c — glob matching of names (glob.h): `*` is the only special character.
 */
#include "server/base/glob.h"

#include <stddef.h>

bool sx_glob_match(const char *pattern, const char *s)
{
    const char *p = pattern, *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}
