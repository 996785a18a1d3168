/*
 * num.c — decimal number parsing and hexadecimal digits (see num.h). At most 18 digits
 * always fit a long long, so the value is built without overflow checks.
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

int sx_hex_digit(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}
