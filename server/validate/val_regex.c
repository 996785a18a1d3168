/*
 * val_regex.c — does a regular expression compile for the data plane? Envoy and gRPC
 * clients compile route regexes with RE2 and NACK one that does not compile or whose
 * program is larger than Envoy's re2.max_program_size.error_level (100 by default); the
 * check here is that very compilation (server/base/re2_shim.h), with the limit of
 * validation.regex_max_program_size. RE2 refuses what POSIX engines take (backreferences,
 * lookaround, nested counts whose product is over 1000) and works in time linear in the
 * pattern, with memory bounded by the limit.
 */
#include <limits.h>

#include "server/base/re2_shim.h"
#include "server/validate/validate.h"

bool val_regex_check(const char *re, long long max_program_size, char *why, size_t n)
{
    int limit = max_program_size <= 0        ? SX_RE2_DEFAULT_MAX_PROGRAM_SIZE
                : max_program_size > INT_MAX ? INT_MAX
                                             : (int)max_program_size;
    return sx_re2_check(re, limit, why, n) == 0;
}
