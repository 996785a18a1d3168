/*
 * log.h — structured logging: one JSON object per line on standard error.
 *
 * Every line has "ts" (RFC 3339, UTC, milliseconds), "level", "component", "msg",
 * and the replica id once set; callers may add fields. Lines are written with one
 * write(2) so lines from different threads never interleave. Never pass secrets:
 * use sx_redact_url for connection strings.
 */
#ifndef SX_BASE_LOG_H
#define SX_BASE_LOG_H

#include <stddef.h>
#include <jansson.h>

#include "server/base/err.h"

typedef enum sx_log_level {
    SX_LOG_DEBUG = 0,
    SX_LOG_INFO = 1,
    SX_LOG_WARN = 2,
    SX_LOG_ERROR = 3,
} sx_log_level;

/* Sets the minimum level and the replica id added to every line (copied; NULL to
 * leave unchanged). Call once at start-up before threads exist. */
void sx_log_configure(sx_log_level min_level, const char *replica_id);
/* Redirects output to fd (default 2); for tests. */
void sx_log_set_fd(int fd);
/* Parses "debug", "info", "warn", "error"; returns 0 or SX_EINVAL. */
int sx_log_parse_level(const char *s, sx_log_level *out) SX_MUSTCHECK;

void sx_log(sx_log_level level, const char *component, const char *fmt, ...) SX_PRINTF(3, 4);
/* Like sx_log with extra fields; takes ownership of fields (a JSON object, NULL allowed). */
void sx_log_fields(sx_log_level level, const char *component, json_t *fields, const char *fmt, ...)
    SX_PRINTF(4, 5);
/* Logs an sx_err at the given level with its code, detail, hint and sqlstate as fields. */
void sx_log_err(sx_log_level level, const char *component, const sx_err *err);

/* Copies url into out with any password replaced by "***" (URL userinfo or a
 * "password=" keyword). Returns out. */
const char *sx_redact_url(const char *url, char *out, size_t outlen);

#define SX_DEBUG(comp, ...) sx_log(SX_LOG_DEBUG, comp, __VA_ARGS__)
#define SX_INFO(comp, ...)  sx_log(SX_LOG_INFO, comp, __VA_ARGS__)
#define SX_WARN(comp, ...)  sx_log(SX_LOG_WARN, comp, __VA_ARGS__)
#define SX_ERROR(comp, ...) sx_log(SX_LOG_ERROR, comp, __VA_ARGS__)

#endif
