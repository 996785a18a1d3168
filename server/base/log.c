/*
 * log.c — JSON-lines logger.
 *
 * The level and replica id are the only process-wide logging state; they are set
 * once at start-up, before any thread is started, and read-only afterwards.
 */
#include "server/base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/base/clock.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"

static sx_log_level min_level = SX_LOG_INFO;
static char replica[128];
static int out_fd = 2;

static const char *level_names[] = {"debug", "info", "warn", "error"};

void sx_log_configure(sx_log_level level, const char *replica_id)
{
    min_level = level;
    if (replica_id)
        snprintf(replica, sizeof(replica), "%s", replica_id);
}

void sx_log_set_fd(int fd)
{
    out_fd = fd;
}

int sx_log_parse_level(const char *s, sx_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (sx_log_level)i;
            return 0;
        }
    }
    return SX_EINVAL;
}

static void emit(sx_log_level level, const char *component, json_t *fields, const char *fmt,
                 va_list ap)
{
    if (level < min_level) {
        json_decref(fields);
        return;
    }
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);

    char tbuf[SX_RFC3339_LEN];
    sx_rfc3339_now(tbuf);

    json_t *o = json_object();
    json_object_set_new(o, "ts", json_string(tbuf));
    json_object_set_new(o, "level", json_string(level_names[level]));
    json_object_set_new(o, "component", json_string(component ? component : "main"));
    if (replica[0])
        json_object_set_new(o, "replica", json_string(replica));
    /* The message may carry outside text (a path, a proxy's NACK) or be cut inside a
     * character: JSON strings must be UTF-8, so ill-formed parts become U+FFFD. */
    char *clean = sx_utf8_valid(msg) ? NULL : sx_utf8_sanitize(msg);
    json_object_set_new(o, "msg", json_string(clean ? clean : msg));
    sx_free(clean);
    if (fields && json_is_object(fields))
        json_object_update_missing(o, fields);
    json_decref(fields);

    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (line == NULL)
        return;
    size_t n = strlen(line);
    char *withnl = sx_malloc(n + 2);
    memcpy(withnl, line, n);
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    free(line);
    ssize_t w = write(out_fd, withnl, n + 1);
    (void)w; /* a failing log write has nowhere to be reported */
    sx_free(withnl);
}

void sx_log(sx_log_level level, const char *component, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(level, component, NULL, fmt, ap);
    va_end(ap);
}

void sx_log_fields(sx_log_level level, const char *component, json_t *fields, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(level, component, fields, fmt, ap);
    va_end(ap);
}

void sx_log_err(sx_log_level level, const char *component, const sx_err *err)
{
    json_t *f = json_object();
    json_object_set_new(f, "code", json_string(sx_code_name(err->code)));
    if (err->detail[0])
        json_object_set_new(f, "detail", json_string(err->detail));
    if (err->hint[0])
        json_object_set_new(f, "hint", json_string(err->hint));
    if (err->sqlstate[0])
        json_object_set_new(f, "sqlstate", json_string(err->sqlstate));
    sx_log_fields(level, component, f, "%s", err->message);
}

const char *sx_redact_url(const char *url, char *out, size_t outlen)
{
    if (outlen == 0)
        return out;
    if (url == NULL) {
        out[0] = '\0';
        return out;
    }
    snprintf(out, outlen, "%s", url);
    /* scheme://user:password@host */
    char *scheme = strstr(out, "://");
    if (scheme) {
        char *auth = scheme + 3;
        char *at = strchr(auth, '@');
        char *slash = strchr(auth, '/');
        if (at && (slash == NULL || at < slash)) {
            char *colon = memchr(auth, ':', (size_t)(at - auth));
            if (colon) {
                char rest[1024];
                snprintf(rest, sizeof(rest), "%s", at);
                snprintf(colon, outlen - (size_t)(colon - out), ":***%s", rest);
            }
        }
    }
    /* keyword form: password=secret (until space) */
    char *pw = strstr(out, "password=");
    if (pw) {
        char *val = pw + strlen("password=");
        char *end = val;
        while (*end && *end != ' ' && *end != '&')
            end++;
        char rest[1024];
        snprintf(rest, sizeof(rest), "%s", end);
        snprintf(val, outlen - (size_t)(val - out), "***%s", rest);
    }
    return out;
}
