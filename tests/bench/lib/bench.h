/*
 * bench.h — small things every benchmark client needs: a monotonic clock in
 * nanoseconds (the time stamps the drivers compare), an allocation that aborts and
 * the numbers of the command line.
 */
#ifndef SX_TESTS_BENCH_H
#define SX_TESTS_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_now_ns(void);

/* malloc(n) (at least one byte); prints "<program>: out of memory" and aborts when
 * there is none, so it never returns NULL. */
void *bench_xmalloc(size_t n);

/* The whole number s given to option opt, from min to max; otherwise prints
 * "<program>: OPT wants a number from MIN to MAX, not "S"" and exits 2. */
long bench_parse_num(const char *opt, const char *s, long min, long max);

#endif
