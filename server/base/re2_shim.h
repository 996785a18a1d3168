/*
 * re2_shim.h — RE2, the regular expression engine Envoy and gRPC compile route regexes
 * with, behind a C interface: does a pattern compile the way a proxy will compile it?
 * Time is linear in the pattern and memory bounded by the program size limit, whatever
 * the pattern.
 */
#ifndef SX_BASE_RE2_SHIM_H
#define SX_BASE_RE2_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Envoy's default limit on a regex's RE2 program size (re2.max_program_size.error_level). */
#define SX_RE2_DEFAULT_MAX_PROGRAM_SIZE 100
/* The largest limit accepted; a larger max_program_size is taken as this one. */
#define SX_RE2_MAX_PROGRAM_SIZE_LIMIT 100000

/* Compiles the NUL-terminated pattern with RE2's default options, as Envoy does. Returns
 * 0 when it compiles to a program of at most max_program_size instructions (<= 0: the
 * default); else -1 with the reason in why (n bytes; a lowercase phrase such as
 * "missing ): (a"), never an exception. */
int sx_re2_check(const char *pattern, int max_program_size, char *why, size_t n);

#ifdef __cplusplus
}
#endif

#endif
