/*
 * num.h — decimal numbers in text that is not NUL-terminated where they end (ports in
 * URLs and listen addresses, database numbers, entity tags), hexadecimal digits, and the
 * three-way comparison of numbers that sort functions return.
 */
#ifndef SX_BASE_NUM_H
#define SX_BASE_NUM_H

#include <stddef.h>

/* The number written in s[0..n) with decimal digits only, at most max_digits (1 to 18)
 * of them, when it lies in [lo, hi] (lo >= 0); -1 otherwise. */
long long sx_parse_digits(const char *s, size_t n, size_t max_digits, long long lo, long long hi);

/* The value of the hexadecimal digit c (0-9, a-f or A-F), or -1 when c is not one. */
int sx_hex_digit(int c);

/* -1, 0 or 1 as a is less than, equal to or greater than b (numbers of one type; each
 * is evaluated twice). */
#define SX_CMP(a, b) (((a) > (b)) - ((a) < (b)))

#endif
