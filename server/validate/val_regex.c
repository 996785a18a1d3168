/*
 * val_regex.c — does a regular expression compile for Envoy's RE2 engine?
 *
 * Envoy and gRPC clients compile route regexes with RE2 (google_re2), and a NACK is the
 * price of one that does not compile. There is no RE2 (nor PCRE2) C API on the build
 * machines, so this is an APPROXIMATION of RE2's parser in two steps:
 *   1. A walk over the pattern in RE2's syntax that refuses what RE2 refuses and POSIX
 *      would take: backreferences (\1..\9), lookahead and lookbehind ((?= (?! (?<= (?<!),
 *      atomic groups and other (?…) forms RE2 lacks, possessive and doubled repetition
 *      operators (a*+, a**, a{2}{3}), repetition counts above 1000, a repetition with
 *      nothing to repeat, unbalanced parentheses, unknown escapes and classes. On the
 *      way it rewrites RE2-only syntax into its POSIX equivalent ((?:…) → (…), \d →
 *      [0-9], non-greedy a*? → a*, (?i) dropped, a literal "{" escaped, …).
 *   2. POSIX regcomp(REG_EXTENDED) on the rewritten pattern, which catches the rest
 *      (bad ranges, unknown [:class:] names, a trailing backslash, …).
 * What can still differ: escapes inside bracket expressions are reduced to a literal
 * character, so a few malformed classes ([a-\d]) pass here and fail in RE2; Unicode
 * classes (\pL) are taken on trust; RE2's program-size limit is not checked.
 */
#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/validate/val_internal.h"

/* What the last item written was, for the repetition rules. */
typedef enum last_kind {
    L_NONE,   /* start, "(", "|", "^", "$", an assertion: nothing to repeat */
    L_ATOM,   /* something a repetition operator may follow */
    L_REPEAT, /* a repetition operator */
    L_LAZY,   /* a repetition operator made non-greedy with "?" */
} last_kind;

static bool fail(char *why, size_t n, const char *fmt, ...) SX_PRINTF(3, 4);

static bool fail(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

/* Parses "{n}", "{n,}" or "{n,m}" at s; returns its length or 0 when it is not one (RE2
 * then takes "{" literally). */
static size_t repeat_braces(const char *s, long *lo, long *hi)
{
    const char *p = s + 1;
    if (!isdigit((unsigned char)*p))
        return 0;
    long a = 0, b;
    for (; isdigit((unsigned char)*p); p++)
        a = a > 100000 ? a : a * 10 + (*p - '0');
    b = a;
    if (*p == ',') {
        p++;
        if (isdigit((unsigned char)*p)) {
            b = 0;
            for (; isdigit((unsigned char)*p); p++)
                b = b > 100000 ? b : b * 10 + (*p - '0');
        } else {
            b = -1;
        }
    }
    if (*p != '}')
        return 0;
    *lo = a;
    *hi = b;
    return (size_t)(p - s) + 1;
}

static bool hex_run(const char **pp, int max)
{
    const char *p = *pp;
    int k = 0;
    while (k < max && isxdigit((unsigned char)p[k]))
        k++;
    *pp = p + k;
    return k > 0;
}

/* Skips the argument of \x (hh or {h…}) or \p / \P (a letter or {Name}) after *pp;
 * false when malformed. */
static bool escape_arg(const char **pp, char kind)
{
    const char *p = *pp;
    if (*p == '{') {
        const char *end = strchr(p, '}');
        if (end == NULL || end == p + 1)
            return false;
        if (kind == 'x') {
            for (const char *q = p + 1; q < end; q++)
                if (!isxdigit((unsigned char)*q))
                    return false;
        }
        *pp = end + 1;
        return true;
    }
    if (kind == 'x') {
        const char *q = p;
        if (!hex_run(&q, 2) || q - p != 2)
            return false;
        *pp = q;
        return true;
    }
    if (!isalpha((unsigned char)*p))
        return false;
    *pp = p + 1;
    return true;
}

/* RE2's named character classes. */
static bool known_class(const char *name, size_t len)
{
    static const char *const names[] = {"alnum", "alpha", "ascii", "blank",  "cntrl",
                                        "digit", "graph", "lower", "print",  "punct",
                                        "space", "upper", "word",  "xdigit", NULL};
    if (len > 0 && name[0] == '^') {
        name++;
        len--;
    }
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == len && strncmp(name, names[i], len) == 0)
            return true;
    return false;
}

/* The POSIX bracket expression a Perl class escape (\d, \S, ...) stands for, or NULL. */
static const char *perl_class(char e)
{
    static const struct {
        char e;
        const char *posix;
    } classes[] = {
        {'d', "[0-9]"},        {'D', "[^0-9]"},       {'s', "[[:space:]]"},
        {'S', "[^[:space:]]"}, {'w', "[[:alnum:]_]"}, {'W', "[^[:alnum:]_]"},
    };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (classes[i].e == e)
            return classes[i].posix;
    return NULL;
}

/* A bracket expression at *pp ("[" already seen at (*pp)[-1]), rewritten into out. */
static bool bracket(const char **pp, sx_buf *out, char *why, size_t n)
{
    const char *p = *pp;
    sx_buf_putc(out, '[');
    if (*p == '^')
        sx_buf_putc(out, *p++);
    if (*p == ']') /* a "]" first is a literal in both syntaxes */
        sx_buf_putc(out, *p++);
    for (;;) {
        char ch = *p;
        if (ch == '\0')
            return fail(why, n, "missing closing ]");
        if (ch == ']') {
            p++;
            break;
        }
        if (ch == '[' && p[1] == ':') {
            const char *end = strstr(p + 2, ":]");
            if (end == NULL)
                return fail(why, n, "missing closing ]");
            size_t len = (size_t)(end - (p + 2));
            if (!known_class(p + 2, len))
                return fail(why, n, "invalid character class [:%.*s:]", (int)(len < 32 ? len : 32),
                            p + 2);
            if (p[2] == '^' || (len == 4 && strncmp(p + 2, "word", 4) == 0) ||
                (len == 5 && strncmp(p + 2, "ascii", 5) == 0))
                sx_buf_puts(out, "a"); /* no POSIX spelling; any member will do */
            else
                sx_buf_append(out, p, len + 4);
            p = end + 2;
            continue;
        }
        if (ch == '\\') {
            char e = p[1];
            if (e == '\0')
                return fail(why, n, "trailing backslash");
            p += 2;
            if (e == 'x' || e == 'p' || e == 'P') {
                if (!escape_arg(&p, e))
                    return fail(why, n, "invalid escape sequence \\%s", e == 'x' ? "x" : "p");
            } else if (isalnum((unsigned char)e) && !strchr("afnrtvdDsSwW01234567", e)) {
                char s[2] = {e, '\0'};
                return fail(why, n, "invalid escape sequence \\%s", s);
            }
            /* The escaped character stands for itself or for a class; a plain letter
             * keeps ranges such as [\x00-\x1f] well-formed for regcomp. */
            sx_buf_putc(out, 'a');
            continue;
        }
        if (ch == '[') {
            /* "[." and "[=" start POSIX collating elements; RE2 reads a literal "[". */
            sx_buf_putc(out, 'a');
            p++;
            continue;
        }
        sx_buf_putc(out, ch);
        p++;
    }
    sx_buf_putc(out, ']');
    *pp = p;
    return true;
}

static const char *gfail(char *why, size_t n, const char *fmt, ...) SX_PRINTF(3, 4);

static const char *gfail(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return NULL;
}

/* "(?" forms at p (pointing after "(?"). Writes the POSIX replacement and returns the
 * new position, or NULL with why set. *opens is set when a group was opened. */
static const char *group(const char *p, sx_buf *out, bool *opens, char *why, size_t n)
{
    *opens = false;
    if (*p == '=' || *p == '!')
        return gfail(why, n, "lookahead %s is not supported by RE2", *p == '=' ? "(?=" : "(?!");
    if (p[0] == '<' && (p[1] == '=' || p[1] == '!'))
        return gfail(why, n, "lookbehind %s is not supported by RE2",
                     p[1] == '=' ? "(?<=" : "(?<!");
    if (*p == ':') {
        sx_buf_putc(out, '(');
        *opens = true;
        return p + 1;
    }
    if (*p == 'P' || *p == '<') {
        const char *q = *p == 'P' ? p + 1 : p;
        if (*q != '<')
            return gfail(why, n, "invalid named group");
        const char *name = q + 1, *end = name;
        while (isalnum((unsigned char)*end) || *end == '_')
            end++;
        if (end == name || *end != '>')
            return gfail(why, n, "invalid named group");
        sx_buf_putc(out, '(');
        *opens = true;
        return end + 1;
    }
    /* Flags: (?flags) or (?flags:re), flags from i, m, s, U with an optional "-". */
    const char *q = p;
    bool neg = false, any = false;
    for (; *q && *q != ')' && *q != ':'; q++) {
        if (*q == '-' && !neg) {
            neg = true;
            continue;
        }
        if (!strchr("imsU", *q)) {
            char s[3] = {'?', *q, '\0'};
            return gfail(why, n, "group syntax (%s is not supported by RE2", s);
        }
        any = true;
    }
    if (*q == '\0')
        return gfail(why, n, "missing closing )");
    if (!any)
        return gfail(why, n, "invalid flag group");
    if (*q == ':') {
        sx_buf_putc(out, '(');
        *opens = true;
    }
    return q + 1;
}

bool val_regex_check(const char *re, char *why, size_t n)
{
    sx_buf out = {0};
    last_kind last = L_NONE;
    int depth = 0;
    bool ok = true;
    const char *p = re;
    while (ok && *p) {
        char ch = *p;
        switch (ch) {
        case '\\': {
            char e = p[1];
            if (e == '\0') {
                ok = fail(why, n, "trailing backslash");
                break;
            }
            p += 2;
            if (e >= '1' && e <= '7' && *p >= '0' && *p <= '7') {
                /* Octal: \12 is a character; RE2 reads one or two more digits. */
                p += p[1] >= '0' && p[1] <= '7' ? 2 : 1;
                sx_buf_putc(&out, '.');
                last = L_ATOM;
                break;
            }
            if (e >= '1' && e <= '9') {
                char s[2] = {e, '\0'};
                ok = fail(why, n, "backreference \\%s is not supported by RE2", s);
                break;
            }
            last = L_ATOM;
            const char *cls = perl_class(e);
            if (cls) {
                sx_buf_puts(&out, cls);
                break;
            }
            switch (e) {
            case 'b':
            case 'B':
            case 'A':
            case 'z':
                last = L_NONE; /* assertions: nothing to repeat */
                break;
            case 'x':
            case 'p':
            case 'P':
                if (!escape_arg(&p, e))
                    ok = fail(why, n, "invalid escape sequence \\%s", e == 'x' ? "x" : "p");
                sx_buf_putc(&out, '.');
                break;
            case 'Q': {
                /* Literal text up to \E. */
                const char *end = strstr(p, "\\E");
                size_t len = end ? (size_t)(end - p) : strlen(p);
                for (size_t i = 0; i < len; i++) {
                    if (strchr(".[]{}()*+?^$|\\", p[i]))
                        sx_buf_putc(&out, '\\');
                    sx_buf_putc(&out, p[i]);
                }
                p += len + (end ? 2 : 0);
                if (len == 0)
                    last = L_NONE;
                break;
            }
            case 'E':
                last = L_NONE;
                break;
            default:
                if (isalnum((unsigned char)e) && !strchr("afnrtvC0", e)) {
                    char s[2] = {e, '\0'};
                    ok = fail(why, n, "invalid escape sequence \\%s", s);
                } else if (isalnum((unsigned char)e)) {
                    if (e == '0')
                        while (*p >= '0' && *p <= '7')
                            p++;
                    sx_buf_putc(&out, '.'); /* one character */
                } else if (strchr(".[]{}()*+?^$|\\", e)) {
                    sx_buf_putc(&out, '\\');
                    sx_buf_putc(&out, e);
                } else {
                    /* Other punctuation stands for itself; GNU gives some of it a
                     * meaning after a backslash (\< \>), so drop the backslash. */
                    sx_buf_putc(&out, e);
                }
            }
            break;
        }
        case '[':
            p++;
            ok = bracket(&p, &out, why, n);
            last = L_ATOM;
            break;
        case '(': {
            p++;
            bool opens = true;
            if (*p == '?') {
                const char *q = group(p + 1, &out, &opens, why, n);
                if (q == NULL) {
                    ok = false;
                    break;
                }
                p = q;
            } else {
                sx_buf_putc(&out, '(');
            }
            if (opens)
                depth++;
            last = L_NONE;
            break;
        }
        case ')':
            if (depth == 0) {
                ok = fail(why, n, "unexpected ): parentheses are not balanced");
                break;
            }
            depth--;
            sx_buf_putc(&out, ')');
            p++;
            last = L_ATOM;
            break;
        case '*':
        case '+':
        case '?':
        case '{': {
            long lo = 0, hi = 0;
            size_t len = ch == '{' ? repeat_braces(p, &lo, &hi) : 1;
            if (len == 0) {
                /* Not a repetition: RE2 reads "{" as a literal. */
                sx_buf_puts(&out, "\\{");
                p++;
                last = L_ATOM;
                break;
            }
            char op[16];
            snprintf(op, sizeof op, "%.*s", (int)(len < 15 ? len : 15), p);
            if (last == L_REPEAT && ch == '?') {
                last = L_LAZY; /* non-greedy: POSIX has no such thing; drop it */
                p++;
                break;
            }
            if (last == L_REPEAT || last == L_LAZY) {
                ok = fail(why, n,
                          "bad repetition operator %s (RE2 has no possessive or repeated "
                          "repetition)",
                          op);
                break;
            }
            if (last == L_NONE) {
                ok = fail(why, n, "missing argument to repetition operator %s", op);
                break;
            }
            if (ch == '{' && (lo > 1000 || hi > 1000)) {
                ok = fail(why, n, "bad repetition operator %s: RE2 counts go up to 1000", op);
                break;
            }
            if (ch == '{' && hi >= 0 && hi < lo) {
                ok = fail(why, n, "bad repetition operator %s: the maximum is below the minimum",
                          op);
                break;
            }
            sx_buf_append(&out, p, len);
            p += len;
            last = L_REPEAT;
            break;
        }
        case '}':
            sx_buf_puts(&out, "\\}");
            p++;
            last = L_ATOM;
            break;
        case '|':
        case '^':
        case '$':
            sx_buf_putc(&out, ch);
            p++;
            last = L_NONE;
            break;
        default:
            sx_buf_putc(&out, ch);
            p++;
            last = L_ATOM;
        }
    }
    if (ok && depth > 0)
        ok = fail(why, n, "missing closing ): parentheses are not balanced");
    if (ok) {
        regex_t rx;
        int rc = regcomp(&rx, sx_buf_cstr(&out), REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &rx, msg, sizeof msg);
            if (msg[0])
                msg[0] = (char)tolower((unsigned char)msg[0]);
            ok = fail(why, n, "%s", msg);
        } else {
            regfree(&rx);
        }
    }
    sx_buf_free(&out);
    return ok;
}
