/*
 * utf8.c — the UTF-8 well-formedness check (see utf8.h), after RFC 3629's table of
 * well-formed byte sequences: the lead byte says how many continuation bytes follow, and
 * the code point they make must need that many (no overlong form), must not be a
 * surrogate and must not pass U+10FFFF.
 */
#include "server/base/utf8.h"

#include <stddef.h>
#include <string.h>

#include "server/base/mem.h"

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

/* The length of the well-formed sequence at p (1 to 4), or 0 when it is ill-formed, with
 * *bad the bytes of its maximal ill-formed subpart (at least 1). The ranges of the second
 * byte are RFC 3629's: they exclude overlong forms, surrogates and code points past
 * U+10FFFF. */
static size_t seq_len(const unsigned char *p, size_t *bad)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        unsigned b = p[i];
        if (b < lo || b > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return n;
}

char *sx_utf8_sanitize(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t len = strlen(s);
    char *out = sx_malloc(len * 3 + 1); /* each ill-formed byte may grow to three */
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        size_t bad = 0, n = seq_len(p, &bad);
        if (n) {
            memcpy(out + o, p, n);
            o += n;
            p += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            p += bad;
        }
    }
    out[o] = '\0';
    return out;
}

const char *sx_utf8_sanitize_in(sx_arena *a, const char *s)
{
    if (s == NULL || sx_utf8_valid(s))
        return s;
    char *clean = sx_utf8_sanitize(s);
    const char *copy = sx_arena_strdup(a, clean);
    sx_free(clean);
    return copy;
}
