/*
 * clock.c — monotonic milliseconds and RFC 3339 timestamps.
 */
#include "server/base/clock.h"

#include <stdio.h>
#include <time.h>

int64_t sx_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *sx_rfc3339_now(char out[SX_RFC3339_LEN])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, SX_RFC3339_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, SX_RFC3339_LEN - n, ".%03dZ", (int)(ts.tv_nsec / 1000000) % 1000);
    return out;
}
