/*
 * config.c — loads and validates the daemon's configuration (YAML file + SEXTANT_* env).
 *
 * The keys are one table (config_keys.c) and the file is read by config_yaml.c; this is
 * the loader. It collects raw text in passes: the file's scalars, then the environment's
 * values (which win). Then every key's text, or its default, goes through the parser of
 * its kind; because defaults take the same path, no default can be one the loader would
 * refuse. Cross-key rules (TLS pairs, JWT keys) run last. Every problem is added to the
 * caller's sx_fielderrs and loading goes on, so an operator fixes a file in one round trip.
 */
#include "server/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "server/base/mem.h"
#include "server/base/num.h"
#include "server/config_internal.h"
#include "server/validate/validate.h"

#define MAX_DURATION_MS (365 * MS_DAY)
#define HS256_MIN_BYTES 32
#define SMALL_FILE_MAX  (1024 * 1024)

/* Opens path for reading when it is a regular file, filling *st. Returns the descriptor,
 * or -1 with the reason in why. */
static int open_regular(const char *path, struct stat *st, char *why, size_t whylen)
{
    char qp[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "cannot read %s: %s", config_quote(path, qp, sizeof(qp)),
                 strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(why, whylen, "%s is not a regular file", config_quote(path, qp, sizeof(qp)));
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads a whole regular file of at most max bytes into a new NUL-terminated string.
 * Returns NULL with the reason in why. */
static char *read_small_file(const char *path, size_t max, size_t *len_out, char *why,
                             size_t whylen)
{
    char qp[128];
    struct stat st;
    int fd = open_regular(path, &st, why, whylen);
    if (fd < 0)
        return NULL;
    if ((size_t)st.st_size > max) {
        snprintf(why, whylen, "%s is larger than %zu bytes", config_quote(path, qp, sizeof(qp)),
                 max);
        close(fd);
        return NULL;
    }
    char *data = sx_malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, data + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, whylen, "cannot read %s: %s", config_quote(path, qp, sizeof(qp)),
                     r < 0 ? strerror(errno) : "file shrank while being read");
            sx_free(data);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    data[got] = '\0';
    close(fd);
    if (len_out)
        *len_out = got;
    return data;
}

/* Checks that path names a regular file this process can open for reading. */
static int check_readable_file(const char *path, char *why, size_t whylen)
{
    struct stat st;
    int fd = open_regular(path, &st, why, whylen);
    if (fd < 0)
        return SX_EIO;
    close(fd);
    return 0;
}

/* ------------------------------------------------------------------ error reporting */

/* The label an error about key i carries: the key, or "SEXTANT_X (key)" from the env. */
static const char *key_label(const loader *L, size_t i, char *out, size_t n)
{
    if (L->raw[i].src == SRC_ENV)
        snprintf(out, n, "%s (%s)", L->env[i], config_keys[i].path);
    else
        snprintf(out, n, "%s", config_keys[i].path);
    return out;
}

void config_bad(loader *L, size_t i, const char *fmt, ...) SX_PRINTF(3, 4);
void config_bad(loader *L, size_t i, const char *fmt, ...)
{
    char label[160], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    L->raw[i].failed = true;
    sx_fielderrs_add(L->errs, key_label(L, i, label, sizeof(label)), "%s", msg);
}

/* ------------------------------------------------------------------ value parsers */

int config_parse_duration(const char *s, int64_t *out_ms, char *why, size_t whylen)
{
    static const char *expect = "expected a number with a unit (ms, s, m, h), such as \"500ms\" "
                                "or \"1m30s\"";
    if (s == NULL || *s == '\0') {
        snprintf(why, whylen, "%s", expect);
        return SX_EINVAL;
    }
    if (strcmp(s, "0") == 0) {
        *out_ms = 0;
        return 0;
    }
    int64_t total = 0;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p)) {
            snprintf(why, whylen, "%s", expect);
            return SX_EINVAL;
        }
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            v = v * 10 + (*p++ - '0');
            if (v > MAX_DURATION_MS) {
                snprintf(why, whylen, "too large");
                return SX_EINVAL;
            }
        }
        int64_t mult;
        if (strncmp(p, "ms", 2) == 0) {
            mult = 1;
            p += 2;
        } else if (*p == 's') {
            mult = 1000;
            p++;
        } else if (*p == 'm') {
            mult = MS_MINUTE;
            p++;
        } else if (*p == 'h') {
            mult = MS_HOUR;
            p++;
        } else if (*p == '\0') {
            snprintf(why, whylen, "missing a unit (ms, s, m or h)");
            return SX_EINVAL;
        } else {
            snprintf(why, whylen, "unknown unit: use ms, s, m or h");
            return SX_EINVAL;
        }
        if (v > MAX_DURATION_MS / mult || total + v * mult > MAX_DURATION_MS) {
            snprintf(why, whylen, "too large");
            return SX_EINVAL;
        }
        total += v * mult;
    }
    *out_ms = total;
    return 0;
}

const char *config_format_duration(int64_t ms, char *out, size_t outlen)
{
    if (outlen == 0)
        return out;
    if (ms <= 0) {
        snprintf(out, outlen, "%s", ms == 0 ? "0s" : "invalid");
        return out;
    }
    int64_t h = ms / MS_HOUR, m = ms % MS_HOUR / MS_MINUTE, s = ms % MS_MINUTE / 1000,
            r = ms % 1000;
    size_t j = 0;
    out[0] = '\0';
    if (h && j < outlen)
        j += (size_t)snprintf(out + j, outlen - j, "%lldh", (long long)h);
    if (m && j < outlen)
        j += (size_t)snprintf(out + j, outlen - j, "%lldm", (long long)m);
    if (s && j < outlen)
        j += (size_t)snprintf(out + j, outlen - j, "%llds", (long long)s);
    if (r && j < outlen)
        snprintf(out + j, outlen - j, "%lldms", (long long)r);
    return out;
}

static bool valid_hostname(const char *h)
{
    size_t n = strlen(h), label = 0;
    if (n == 0 || n > 253)
        return false;
    for (const char *p = h; *p; p++) {
        if (*p == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
            return false;
        if (*p == '-' && label == 0)
            return false;
        if (++label > 63)
            return false;
    }
    return label > 0;
}

/* Splits "host:port" / "[v6]:port" / "host" (port optional when allow_no_port) into a
 * host copy and port. Returns 0 or SX_EINVAL with why. */
static int split_hostport(const char *s, size_t n, bool allow_no_port, int default_port,
                          char **host_out, int *port_out, char *why, size_t whylen)
{
    char q[160];
    const char *host, *port = NULL;
    size_t hlen, plen = 0;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL) {
            snprintf(why, whylen, "missing \"]\" after the IPv6 address");
            return SX_EINVAL;
        }
        host = s + 1;
        hlen = (size_t)(close - host);
        const char *rest = close + 1;
        size_t rlen = n - (size_t)(rest - s);
        if (rlen > 0) {
            if (rest[0] != ':') {
                snprintf(why, whylen, "expected \":port\" after \"]\"");
                return SX_EINVAL;
            }
            port = rest + 1;
            plen = rlen - 1;
        }
        char tmp[INET6_ADDRSTRLEN + 8];
        struct in6_addr a6;
        snprintf(tmp, sizeof(tmp), "%.*s", (int)(hlen < sizeof(tmp) ? hlen : 0), host);
        if (hlen == 0 || hlen >= sizeof(tmp) || inet_pton(AF_INET6, tmp, &a6) != 1) {
            char h[160];
            snprintf(h, sizeof(h), "%.*s", (int)hlen, host);
            snprintf(why, whylen, "invalid IPv6 address %s", config_quote(h, q, sizeof(q)));
            return SX_EINVAL;
        }
    } else {
        const char *colon = memchr(s, ':', n);
        host = s;
        hlen = colon ? (size_t)(colon - s) : n;
        if (colon) {
            if (memchr(colon + 1, ':', n - hlen - 1)) {
                snprintf(why, whylen, "an IPv6 address must be in brackets, such as [::1]:8080");
                return SX_EINVAL;
            }
            port = colon + 1;
            plen = n - hlen - 1;
        }
        char h[300];
        snprintf(h, sizeof(h), "%.*s", (int)hlen, host);
        if (hlen == 0) {
            snprintf(why, whylen, "missing host (use 0.0.0.0 or [::] for every interface)");
            return SX_EINVAL;
        }
        bool numeric = strspn(h, "0123456789.") == hlen;
        struct in_addr a4;
        if (numeric ? inet_pton(AF_INET, h, &a4) != 1 : !valid_hostname(h)) {
            snprintf(why, whylen, "invalid host %s", config_quote(h, q, sizeof(q)));
            return SX_EINVAL;
        }
    }
    int p = default_port;
    if (port == NULL) {
        if (!allow_no_port) {
            snprintf(why, whylen,
                     "missing port: expected host:port, such as 127.0.0.1:8080 or "
                     "[::1]:8080");
            return SX_EINVAL;
        }
    } else {
        p = (int)sx_parse_digits(port, plen, 5, 1, 65535);
        if (p < 0) {
            char ps[64];
            snprintf(ps, sizeof(ps), "%.*s", (int)(plen < 40 ? plen : 40), port);
            snprintf(why, whylen, "invalid port %s: must be between 1 and 65535",
                     config_quote(ps, q, sizeof(q)));
            return SX_EINVAL;
        }
    }
    *host_out = sx_strndup(host, hlen);
    *port_out = p;
    return 0;
}

int config_parse_listen(const char *s, config_listen *out, char *why, size_t whylen)
{
    char *host = NULL;
    int port = 0;
    if (split_hostport(s, strlen(s), false, 0, &host, &port, why, whylen) != 0)
        return SX_EINVAL;
    out->text = sx_strdup(s);
    out->host = host;
    out->port = port;
    return 0;
}

void config_listen_clear(config_listen *l)
{
    sx_free(l->text);
    sx_free(l->host);
    l->text = l->host = NULL;
    l->port = 0;
}

/* Percent-decodes s[0..n) into a new string; NULL on a malformed escape or a NUL byte. */
static char *pct_decode(const char *s, size_t n)
{
    char *out = sx_malloc(n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        int hi = i + 1 < n ? sx_hex_digit((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? sx_hex_digit((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            sx_free(out);
            return NULL;
        }
        out[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[j] = '\0';
    return out;
}

/* Parses redis://[[user]:password@]host[:port][/db] into cfg->redis. */
static int parse_redis_url(const char *url, sextant_config *cfg, char *why, size_t whylen)
{
    char q[160];
    if (strncmp(url, "rediss://", 9) == 0) {
        snprintf(why, whylen, "TLS (rediss://) is not supported: use redis://");
        return SX_EINVAL;
    }
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(why, whylen, "the scheme must be redis://, such as redis://127.0.0.1:6379/0");
        return SX_EINVAL;
    }
    const char *auth = url + 8;
    if (strpbrk(auth, "?#")) {
        snprintf(why, whylen, "query parameters and fragments are not supported");
        return SX_EINVAL;
    }
    const char *slash = strchr(auth, '/');
    size_t alen = slash ? (size_t)(slash - auth) : strlen(auth);
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@')
            at = auth + i;
    char *user = NULL, *pass = NULL;
    const char *hp = auth;
    size_t hplen = alen;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        size_t ulen = colon ? (size_t)(colon - auth) : (size_t)(at - auth);
        user = ulen ? pct_decode(auth, ulen) : NULL;
        if (colon)
            pass = pct_decode(colon + 1, (size_t)(at - colon - 1));
        if ((ulen && user == NULL) || (colon && pass == NULL)) {
            sx_free(user);
            sx_free(pass);
            snprintf(why, whylen, "malformed percent-escape in the user or password");
            return SX_EINVAL;
        }
        if (pass && *pass == '\0') {
            sx_free(pass);
            pass = NULL;
        }
        hp = at + 1;
        hplen = alen - (size_t)(hp - auth);
    }
    char *host = NULL;
    int port = 0;
    if (hplen == 0) {
        snprintf(why, whylen, "missing host");
        goto fail;
    }
    if (split_hostport(hp, hplen, true, 6379, &host, &port, why, whylen) != 0)
        goto fail;
    long db = 0;
    if (slash && slash[1]) {
        char *end;
        errno = 0;
        db = strtol(slash + 1, &end, 10);
        if (!isdigit((unsigned char)slash[1]) || *end || errno || db > INT_MAX) {
            snprintf(why, whylen, "invalid database number %s: expected an integer from 0",
                     config_quote(slash + 1, q, sizeof(q)));
            sx_free(host);
            goto fail;
        }
    }
    cfg->redis.host = host;
    cfg->redis.port = port;
    cfg->redis.db = (int)db;
    cfg->redis.username = user;
    cfg->redis.password = pass;
    return 0;
fail:
    sx_free(user);
    sx_free(pass);
    return SX_EINVAL;
}

static int parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return SX_EINVAL;
}

/* Parses text for key i into its field; reports problems through config_bad(). */
static void parse_value(loader *L, size_t i, const char *text)
{
    const key_def *k = &config_keys[i];
    sextant_config *cfg = L->cfg;
    void *f = config_key_field(cfg, i);
    char why[512], q[200], dur_a[32], dur_b[32];

    switch (k->kind) {
    case K_DBURL: {
        if (*text == '\0' && k->def != NULL)
            return; /* optional: unset means "as database.url" */
        if (*text == '\0') {
            config_bad(L, i, "must not be empty");
            return;
        }
        char *pqerr = NULL;
        PQconninfoOption *opts = PQconninfoParse(text, &pqerr);
        if (opts == NULL) {
            char red[512];
            sx_redact_url(text, red, sizeof(red));
            char *msg = pqerr ? pqerr : "out of memory";
            size_t ml = strlen(msg);
            while (ml && (msg[ml - 1] == '\n' || msg[ml - 1] == ' '))
                msg[--ml] = '\0';
            config_bad(L, i, "invalid connection string %s: %s", config_quote(red, q, sizeof(q)),
                       msg);
            PQfreemem(pqerr);
            return;
        }
        PQconninfoFree(opts);
        *(char **)f = sx_strdup(text);
        return;
    }
    case K_REDISURL:
        if (*text && parse_redis_url(text, cfg, why, sizeof(why)) != 0) {
            char red[512];
            sx_redact_url(text, red, sizeof(red));
            config_bad(L, i, "invalid URL %s: %s", config_quote(red, q, sizeof(q)), why);
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    case K_INT: {
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (*text == '\0' || isspace((unsigned char)*text) || *end || errno) {
            config_bad(L, i, "expected an integer, got %s", config_quote(text, q, sizeof(q)));
            return;
        }
        if (v < k->min || v > k->max) {
            config_bad(L, i, "must be between %lld and %lld, got %lld", (long long)k->min,
                       (long long)k->max, v);
            return;
        }
        *(int64_t *)f = v;
        return;
    }
    case K_DURATION: {
        int64_t ms;
        if (config_parse_duration(text, &ms, why, sizeof(why)) != 0) {
            config_bad(L, i, "invalid duration %s: %s", config_quote(text, q, sizeof(q)), why);
            return;
        }
        if (ms < k->min || ms > k->max) {
            config_bad(L, i, "must be between %s and %s, got %s",
                       config_format_duration(k->min, dur_a, sizeof(dur_a)),
                       config_format_duration(k->max, dur_b, sizeof(dur_b)),
                       config_quote(text, q, sizeof(q)));
            return;
        }
        *(int64_t *)f = ms;
        return;
    }
    case K_BOOL:
        if (parse_bool(text, (bool *)f) != 0)
            config_bad(L, i, "expected true or false, got %s", config_quote(text, q, sizeof(q)));
        return;
    case K_LISTEN:
        if (*text == '\0' && k->def == NULL)
            return; /* an optional listener: "" means none */
        if (config_parse_listen(text, (config_listen *)f, why, sizeof(why)) != 0)
            config_bad(L, i, "%s", why);
        return;
    case K_LEVEL:
        if (sx_log_parse_level(text, (sx_log_level *)f) != 0)
            config_bad(L, i, "expected one of debug, info, warn, error, got %s",
                       config_quote(text, q, sizeof(q)));
        return;
    case K_FILE:
        if (*text == '\0')
            return;
        if (check_readable_file(text, why, sizeof(why)) != 0) {
            config_bad(L, i, "%s", why);
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    case K_SECRET:
    case K_TEXT:
        if (*text)
            *(char **)f = sx_strdup(text);
        return;
    case K_PREFIX: {
        size_t n = strlen(text);
        bool ok = n <= 64;
        for (const char *p = text; ok && *p; p++)
            ok = isgraph((unsigned char)*p) != 0;
        if (!ok) {
            config_bad(L, i, "must be at most 64 printable bytes without spaces, got %s",
                       config_quote(text, q, sizeof(q)));
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    }
    case K_ADDRESSES:
        if (config_parse_addresses(text, (config_addresses *)f, why, sizeof(why)) != 0)
            config_bad(L, i, "%s", why);
        return;
    case K_WEBHOOKS:
        if (config_parse_webhooks(text, (config_webhooks *)f, why, sizeof(why)) != 0)
            config_bad(L, i, "%s", why);
        return;
    case K_REPLICA: {
        size_t n = strlen(text);
        bool ok = n >= 1 && n <= 128;
        for (const char *p = text; ok && *p; p++)
            ok = isalnum((unsigned char)*p) || strchr("._:-", *p) != NULL;
        if (!ok) {
            config_bad(L, i, "must be 1 to 128 characters from A-Z a-z 0-9 . _ : -, got %s",
                       config_quote(text, q, sizeof(q)));
            return;
        }
        *(char **)f = sx_strdup(text);
        return;
    }
    }
}

/* ------------------------------------------------------------------ environment */

static void load_env(loader *L, char **envp)
{
    for (char **e = envp; e && *e; e++) {
        if (strncmp(*e, "SEXTANT_", 8) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (eq == NULL)
            continue;
        size_t nlen = (size_t)(eq - *e);
        int idx = -1;
        for (size_t i = 0; i < config_nkeys && idx < 0; i++)
            if (strlen(L->env[i]) == nlen && strncmp(L->env[i], *e, nlen) == 0)
                idx = (int)i;
        if (idx < 0) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(nlen < 100 ? nlen : 100), *e);
            size_t best = 3;
            const char *sug = NULL;
            for (size_t i = 0; i < config_nkeys; i++) {
                size_t d = config_levenshtein(L->env[i], name);
                if (d < best) {
                    best = d;
                    sug = L->env[i];
                }
            }
            if (sug)
                sx_fielderrs_add(&L->cfg->warnings, name,
                                 "not a configuration variable, ignored (did you mean %s?)", sug);
            else
                sx_fielderrs_add(&L->cfg->warnings, name, "not a configuration variable, ignored");
            continue;
        }
        raw_value *r = &L->raw[idx];
        sx_free(r->text);
        r->text = sx_strdup(eq + 1);
        r->src = SRC_ENV;
        /* A type error in the file is still reported; the value itself is overridden. */
    }
}

/* ------------------------------------------------------------------ cross-key rules */

static const char *set_str(const sextant_config *cfg, const char *path)
{
    int i = config_key_find(path);
    return i < 0 ? NULL : *(char *const *)config_key_cfield(cfg, (size_t)i);
}

static bool key_failed(const loader *L, const char *path)
{
    int i = config_key_find(path);
    return i >= 0 && L->raw[i].failed;
}

static void check_tls(loader *L, const char *prefix, bool has_ca)
{
    char cert[64], key[64], ca[64];
    snprintf(cert, sizeof(cert), "%s.cert_file", prefix);
    snprintf(key, sizeof(key), "%s.key_file", prefix);
    snprintf(ca, sizeof(ca), "%s.client_ca_file", prefix);
    bool c = set_str(L->cfg, cert) || key_failed(L, cert);
    bool k = set_str(L->cfg, key) || key_failed(L, key);
    if (c && !k)
        config_bad(L, (size_t)config_key_find(key), "required when %s is set", cert);
    if (k && !c)
        config_bad(L, (size_t)config_key_find(cert), "required when %s is set", key);
    if (has_ca && set_str(L->cfg, ca) && !(c && k))
        config_bad(L, (size_t)config_key_find(ca),
                   "requires %s and %s (mutual TLS needs a server certificate)", cert, key);
}

/* Reads a PEM key file of key i and parses it with parse (PEM_read_bio_PUBKEY or
 * PEM_read_bio_PrivateKey); reports and returns NULL unless it holds an RSA key. On
 * success *pem_out is the file's text (owned by the caller). */
static EVP_PKEY *load_rsa_pem(loader *L, size_t i, const char *path, bool private_key,
                              char **pem_out)
{
    char why[512], q[200];
    size_t len;
    *pem_out = NULL;
    char *pem = read_small_file(path, SMALL_FILE_MAX, &len, why, sizeof(why));
    if (pem == NULL) {
        config_bad(L, i, "%s", why);
        return NULL;
    }
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *pk = NULL;
    if (bio)
        pk = private_key ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)
                         : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    if (pk == NULL) {
        config_bad(L, i, "%s does not hold a PEM %s (\"-----BEGIN %s-----\")",
                   config_quote(path, q, sizeof(q)), private_key ? "private key" : "public key",
                   private_key ? "PRIVATE KEY" : "PUBLIC KEY");
    } else if (EVP_PKEY_base_id(pk) != EVP_PKEY_RSA) {
        config_bad(L, i, "%s holds a %s key that is not RSA", config_quote(path, q, sizeof(q)),
                   private_key ? "private" : "public");
        EVP_PKEY_free(pk);
        pk = NULL;
    }
    if (pk == NULL) {
        explicit_bzero(pem, len);
        sx_free(pem);
        return NULL;
    }
    *pem_out = pem;
    return pk;
}

/* The JWT keys: one HS256 secret at most (inline or from a file, long enough), RSA
 * keys that parse, and a private key that belongs to the public key when both are set. */
static void check_auth(loader *L)
{
    sextant_config *cfg = L->cfg;
    size_t i_secret = (size_t)config_key_find("auth.hs256_secret");
    size_t i_file = (size_t)config_key_find("auth.hs256_secret_file");
    size_t i_pub = (size_t)config_key_find("auth.rs256_public_key_file");
    size_t i_priv = (size_t)config_key_find("auth.rs256_private_key_file");
    char why[512];

    if (cfg->auth.hs256_secret && cfg->auth.hs256_secret_file) {
        config_bad(L, i_file, "cannot be combined with auth.hs256_secret: set only one");
    } else if (cfg->auth.hs256_secret_file) {
        size_t len;
        char *s = read_small_file(cfg->auth.hs256_secret_file, 64 * 1024, &len, why, sizeof(why));
        if (s == NULL) {
            config_bad(L, i_file, "%s", why);
        } else {
            if (len && s[len - 1] == '\n')
                s[--len] = '\0';
            if (len && s[len - 1] == '\r')
                s[--len] = '\0';
            if (strlen(s) != len) {
                config_bad(L, i_file, "the secret contains a NUL byte");
                sx_free(s);
            } else if (len < HS256_MIN_BYTES) {
                config_bad(L, i_file, "the secret must be at least %d bytes long, got %zu",
                           HS256_MIN_BYTES, len);
                explicit_bzero(s, len);
                sx_free(s);
            } else {
                cfg->auth.hs256_secret = s;
            }
        }
    } else if (cfg->auth.hs256_secret && strlen(cfg->auth.hs256_secret) < HS256_MIN_BYTES) {
        config_bad(L, i_secret, "must be at least %d bytes long, got %zu", HS256_MIN_BYTES,
                   strlen(cfg->auth.hs256_secret));
        sx_free(cfg->auth.hs256_secret);
        cfg->auth.hs256_secret = NULL;
    }

    EVP_PKEY *pub = NULL, *priv = NULL;
    if (cfg->auth.rs256_public_key_file)
        pub = load_rsa_pem(L, i_pub, cfg->auth.rs256_public_key_file, false,
                           &cfg->auth.rs256_public_key_pem);
    if (cfg->auth.rs256_private_key_file)
        priv = load_rsa_pem(L, i_priv, cfg->auth.rs256_private_key_file, true,
                            &cfg->auth.rs256_private_key_pem);
    if (pub && priv && EVP_PKEY_eq(pub, priv) != 1)
        config_bad(
            L, i_priv,
            "does not belong to the public key in auth.rs256_public_key_file: tokens it signs "
            "would be refused");
    EVP_PKEY_free(pub);
    EVP_PKEY_free(priv);
    ERR_clear_error();
}

static bool wildcard_host(const char *h)
{
    return strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0;
}

/* Whether two listen addresses would take the same port. */
static bool same_port(const config_listen *a, const config_listen *b)
{
    return a->host && b->host && a->port == b->port &&
           (strcmp(a->host, b->host) == 0 || wildcard_host(a->host) || wildcard_host(b->host));
}

static void check_listeners(loader *L)
{
    const config_listen *h = &L->cfg->http.listen, *g = &L->cfg->grpc.listen;
    const config_listen *a = &L->cfg->http.admin_listen;
    if (same_port(h, g))
        config_bad(L, (size_t)config_key_find("grpc.listen"),
                   "must not use the same port as http.listen (%s)", h->text);
    if (same_port(a, h) || same_port(a, g))
        config_bad(L, (size_t)config_key_find("http.admin_listen"),
                   "must not use the same port as %s (%s)",
                   same_port(a, h) ? "http.listen" : "grpc.listen",
                   same_port(a, h) ? h->text : g->text);
}

/* Nodes that name no cluster need a group to land in. */
static void check_xds(loader *L)
{
    const char *g = L->cfg->xds.default_group;
    if (g != NULL && *g == '\0')
        config_bad(L, (size_t)config_key_find("xds.default_group"), "must not be empty");
}

/* Reports key, whose duration got_ms breaks rule against another key's duration
 * other_ms: "<rule> (<other>), got <got>". */
static void bad_against(loader *L, const char *key, const char *rule, int64_t other_ms,
                        int64_t got_ms)
{
    char o[32], g[32];
    config_bad(L, (size_t)config_key_find(key), "%s (%s), got %s", rule,
               config_format_duration(other_ms, o, sizeof(o)),
               config_format_duration(got_ms, g, sizeof(g)));
}

/* A reconnect back-off's bounds: the minimum may not exceed the maximum. */
static void check_backoff(loader *L, const char *section, int64_t min_ms, int64_t max_ms)
{
    char lo[64], hi[64], rule[96];
    snprintf(lo, sizeof(lo), "%s.reconnect_backoff_min", section);
    snprintf(hi, sizeof(hi), "%s.reconnect_backoff_max", section);
    if (key_failed(L, lo) || key_failed(L, hi) || min_ms <= max_ms)
        return;
    snprintf(rule, sizeof(rule), "must not exceed %s", hi);
    bad_against(L, lo, rule, max_ms, min_ms);
}

/* Stale must come before disconnected, or no node could ever be stale. */
static void check_fleet(loader *L)
{
    if (key_failed(L, "fleet.stale_after") || key_failed(L, "fleet.disconnected_after"))
        return;
    const sextant_config *c = L->cfg;
    if (c->fleet.disconnected_after_ms > c->fleet.stale_after_ms)
        return;
    bad_against(L, "fleet.stale_after", "must be less than fleet.disconnected_after",
                c->fleet.disconnected_after_ms, c->fleet.stale_after_ms);
    bad_against(L, "fleet.disconnected_after", "must be greater than fleet.stale_after",
                c->fleet.stale_after_ms, c->fleet.disconnected_after_ms);
}

/* A leader cut off from the database must find out (one check interval, then one
 * check's deadline of a third of the lease: storage/pg_lock.h) before the server ends
 * its session and frees the lock for another replica (the lease). */
static void check_leader(loader *L)
{
    if (key_failed(L, "leader.check") || key_failed(L, "leader.lease"))
        return;
    const sextant_config *c = L->cfg;
    if (c->leader.check_ms * 2 <= c->leader.lease_ms)
        return;
    bad_against(L, "leader.check", "must be at most half of leader.lease", c->leader.lease_ms,
                c->leader.check_ms);
}

/* ------------------------------------------------------------------ load / free */

static void default_replica_id(char *out, size_t n)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
        snprintf(host, sizeof(host), "sextant");
    host[sizeof(host) - 1] = '\0';
    for (char *p = host; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            *p = '-';
    char pid[32];
    snprintf(pid, sizeof(pid), "-%ld", (long)getpid());
    size_t room = n > strlen(pid) + 1 ? n - strlen(pid) - 1 : 0;
    snprintf(out, n, "%.*s%s", (int)(room < 100 ? room : 100), host, pid);
}

int config_load(const char *path_or_null, char **envp, sextant_config **out, sx_fielderrs *errs)
{
    *out = NULL;
    size_t errs_before = errs->count;
    loader L = {0};
    L.cfg = sx_calloc(1, sizeof(sextant_config));
    L.errs = errs;
    L.file = path_or_null;
    L.raw = sx_calloc(config_nkeys, sizeof(*L.raw));
    L.env = sx_calloc(config_nkeys, sizeof(*L.env));
    for (size_t i = 0; i < config_nkeys; i++)
        config_env_name(config_keys[i].path, L.env[i], sizeof(L.env[i]));
    if (path_or_null) {
        L.cfg->source_file = sx_strdup(path_or_null);
        config_yaml_read(&L, path_or_null);
    }
    load_env(&L, envp);

    for (size_t i = 0; i < config_nkeys; i++) {
        raw_value *r = &L.raw[i];
        if (r->failed && r->src != SRC_ENV)
            continue; /* its file entry was malformed; already reported */
        if (r->text) {
            parse_value(&L, i, r->text);
            continue;
        }
        if (config_keys[i].kind == K_DBURL && config_keys[i].def == NULL) {
            config_bad(&L, i, "required: set it in the configuration file or in %s", L.env[i]);
        } else if (config_keys[i].kind == K_REPLICA) {
            char id[160];
            default_replica_id(id, sizeof(id));
            r->src = SRC_DEFAULT;
            parse_value(&L, i, id);
        } else if (config_keys[i].def) {
            r->src = SRC_DEFAULT;
            parse_value(&L, i, config_keys[i].def);
        }
    }
    check_tls(&L, "http.tls", false);
    check_tls(&L, "grpc.tls", true);
    check_auth(&L);
    check_listeners(&L);
    check_xds(&L);
    check_fleet(&L);
    check_leader(&L);
    check_backoff(&L, "database", L.cfg->database.reconnect_backoff_min_ms,
                  L.cfg->database.reconnect_backoff_max_ms);
    check_backoff(&L, "redis", L.cfg->redis.reconnect_backoff_min_ms,
                  L.cfg->redis.reconnect_backoff_max_ms);
    config_check_k8s(&L);
    config_check_alerts(&L);
    int i_planes = config_key_find("groups.default_data_planes");
    char why[160];
    if (i_planes >= 0 && !L.raw[i_planes].failed &&
        val_planes_parse_csv(L.cfg->groups.default_data_planes, &L.cfg->groups.default_planes, why,
                             sizeof why) != 0)
        config_bad(&L, (size_t)i_planes, "%s", why);

    for (size_t i = 0; i < config_nkeys; i++)
        sx_free(L.raw[i].text);
    sx_free(L.raw);
    sx_free(L.env);
    for (size_t s = 0; s < L.nsections; s++)
        sx_free(L.sections[s]);
    sx_free(L.sections);

    if (errs->count > errs_before) {
        config_free(L.cfg);
        return SX_EINVAL;
    }
    *out = L.cfg;
    return 0;
}

void config_free(sextant_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < config_nkeys; i++) {
        switch (config_keys[i].kind) {
        case K_DBURL:
        case K_REDISURL:
        case K_FILE:
        case K_SECRET:
        case K_TEXT:
        case K_PREFIX:
        case K_REPLICA:
            sx_free(*(char **)config_key_field(cfg, i));
            break;
        case K_LISTEN:
            config_listen_clear((config_listen *)config_key_field(cfg, i));
            break;
        case K_ADDRESSES:
            config_addresses_clear((config_addresses *)config_key_field(cfg, i));
            break;
        case K_WEBHOOKS:
            config_webhooks_clear((config_webhooks *)config_key_field(cfg, i));
            break;
        default:
            break;
        }
    }
    sx_free(cfg->redis.host);
    sx_free(cfg->redis.username);
    sx_free(cfg->redis.password);
    sx_free(cfg->auth.rs256_public_key_pem);
    if (cfg->auth.rs256_private_key_pem) {
        explicit_bzero(cfg->auth.rs256_private_key_pem, strlen(cfg->auth.rs256_private_key_pem));
        sx_free(cfg->auth.rs256_private_key_pem);
    }
    sx_free(cfg->source_file);
    sx_fielderrs_free(&cfg->warnings);
    sx_free(cfg);
}
