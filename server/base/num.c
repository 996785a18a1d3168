/*
 * num.c — decimal number parsing (see num.h). At most 18 digits always fit a long long,
 * so the value is built without overflow checks.
 */
#include "server/base/num.h"

long long sx_parse_digits(const char *s, size_t n, size_t max_digits, long long lo, long long hi)
{
    if (n == 0 || n > max_digits || n > 18)
        return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < lo || v > hi ? -1 : v;
}
