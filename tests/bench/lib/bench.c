/*
 * bench.c — the clock, allocation and command-line numbers of the benchmark clients.
 */
#include "tests/bench/lib/bench.h"

#include <errno.h> /* program_invocation_short_name (GNU) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void *bench_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
        abort();
    }
    return p;
}

long bench_parse_num(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: %s wants a number from %ld to %ld, not \"%s\"\n",
                program_invocation_short_name, opt, min, max, s);
        exit(2);
    }
    return v;
}
