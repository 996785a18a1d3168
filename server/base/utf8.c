/*
 * utf8.c — the UTF-8 well-formedness check (see utf8.h), after RFC 3629's table of
 * well-formed byte sequences: the lead byte says how many continuation bytes follow, and
 * the code point they make must need that many (no overlong form), must not be a
 * surrogate and must not pass U+10FFFF.
 */
#include "server/base/utf8.h"

#include <stddef.h>

bool sx_utf8_valid(const char *s)
{
    if (s == NULL)
        return false;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t n = c < 0x80             ? 0
                   : (c & 0xE0) == 0xC0 ? 1
                   : (c & 0xF0) == 0xE0 ? 2
                   : (c & 0xF8) == 0xF0 ? 3
                                        : 9;
        if (n == 9 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4))
            return false;
        unsigned cp = n ? c & (0x3F >> n) : c;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        p += n + 1;
    }
    return true;
}
