/*
 * fuzz_util.h — what the fuzz targets of the REST API's parsers share: the input as a
 * C string, and the round trip every id a parser accepts must make.
 */
#ifndef SX_TESTS_FUZZ_UTIL_H
#define SX_TESTS_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers_common.h"
#include "server/base/mem.h"

/* The size bytes of data and a terminating NUL, in a new string (sx_free it). */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
    char *s = sx_malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* When api_parse_at_least takes v as an id: it is not negative, prints back as v without
 * its leading zeros, and api_parse_positive takes it exactly when it is above 0. */
static inline void fz_id_value(const char *v)
{
    long long id = -1;
    if (!api_parse_at_least(v, 0, &id))
        return;
    if (id < 0)
        abort();
    const char *digits = v;
    while (digits[0] == '0' && digits[1] != '\0')
        digits++;
    char back[32];
    snprintf(back, sizeof(back), "%lld", id);
    if (strcmp(back, digits) != 0)
        abort();
    long long pos;
    if (api_parse_positive(v, &pos) != (id > 0))
        abort();
}

#endif
