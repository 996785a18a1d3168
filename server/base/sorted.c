/*
 * sorted.c — lower bound of a string key in an array of records.
 */
#include "server/base/sorted.h"

#include <string.h>

size_t sx_sorted_first(const void *base, size_t n, size_t size, size_t offset, const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *s;
        memcpy(&s, (const char *)base + mid * size + offset, sizeof s);
        if (strcmp(s, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
