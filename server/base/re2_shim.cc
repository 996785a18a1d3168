/*
 * re2_shim.cc — sx_re2_check: a pattern compiled with RE2 exactly as Envoy compiles a
 * RegexMatcher's google_re2 (default options, errors not logged), then its program size
 * compared with Envoy's limit. RE2's memory budget (max_mem) is sized from the limit, so a
 * pattern whose program would be far larger (nested counted repeats) stops compiling early
 * instead of being built in full: one check costs time linear in the pattern and memory
 * bounded by the limit. Nothing thrown crosses the C interface.
 */
#include "server/base/re2_shim.h"

#include <re2/re2.h>

#include <cstdarg>
#include <cstdio>
#include <new>
#include <string>

namespace
{

/* RE2 derives its instruction budget from max_mem (two thirds of it for the forward
 * program, a few dozen bytes per instruction at most). This gives it room for twice the
 * limit plus a margin: a program within the limit always compiles and its size decides,
 * one far over it stops compiling once the budget is spent (ErrorPatternTooLarge). */
long long max_mem_for(int limit)
{
    long long ninst = 2LL * limit + 1024;
    return (ninst * 4 * 8 + 4096) * 3 / 2;
}

int say(char *why, size_t n, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

int say(char *why, size_t n, int rc, const char *fmt, ...)
{
    if (why != nullptr && n > 0) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* What RE2's message leaves implicit, for the errors a pattern written for PCRE or
 * POSIX engines most often gets. */
const char *hint(const RE2 &re)
{
    const std::string &arg = re.error_arg();
    switch (re.error_code()) {
    case RE2::ErrorBadEscape:
        if (arg.size() == 2 && arg[1] >= '1' && arg[1] <= '9')
            return " (RE2 has no backreferences)";
        return "";
    case RE2::ErrorBadPerlOp:
        if (arg.rfind("(?=", 0) == 0 || arg.rfind("(?!", 0) == 0)
            return " (RE2 has no lookahead)";
        if (arg.rfind("(?<", 0) == 0)
            return " (RE2 has no lookbehind; a named group is (?P<name>re))";
        return "";
    case RE2::ErrorRepeatSize:
        return " (RE2 allows counts up to 1000, nested counts multiplied)";
    default:
        return "";
    }
}

} // namespace

extern "C" int sx_re2_check(const char *pattern, int max_program_size, char *why, size_t n)
{
    if (pattern == nullptr)
        return say(why, n, -1, "missing pattern");
    int limit = max_program_size <= 0 ? SX_RE2_DEFAULT_MAX_PROGRAM_SIZE : max_program_size;
    if (limit > SX_RE2_MAX_PROGRAM_SIZE_LIMIT)
        limit = SX_RE2_MAX_PROGRAM_SIZE_LIMIT;
    try {
        RE2::Options opt;
        opt.set_log_errors(false);
        opt.set_max_mem(max_mem_for(limit));
        RE2 re(pattern, opt);
        if (re.error_code() == RE2::ErrorPatternTooLarge)
            return say(why, n, -1,
                       "RE2 program size is over the limit of %d (Envoy's "
                       "re2.max_program_size.error_level)",
                       limit);
        if (!re.ok())
            return say(why, n, -1, "%s%s", re.error().c_str(), hint(re));
        int size = re.ProgramSize();
        if (size > limit)
            return say(why, n, -1,
                       "RE2 program size %d is over the limit of %d (Envoy's "
                       "re2.max_program_size.error_level)",
                       size, limit);
        return 0;
    } catch (const std::bad_alloc &) {
        return say(why, n, -1, "out of memory compiling the pattern");
    } catch (...) {
        return say(why, n, -1, "the pattern could not be compiled");
    }
}
