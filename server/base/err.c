/*
 * err.c — error codes, the error struct, and the one table that maps codes to
 * HTTP and gRPC statuses.
 *
 * The struct holds fixed-size buffers so that setting an error never allocates and
 * never fails; long messages are truncated, which is acceptable for human text.
 */
#include "server/base/err.h"

#include <stdio.h>
#include <string.h>

static const struct {
    int code;
    const char *name;
    int http;
    int grpc; /* grpc_status_code */
} code_table[] = {
    {SX_OK, "ok", 200, 0},
    {SX_EINVAL, "invalid_argument", 400, 3},
    {SX_ENOTFOUND, "not_found", 404, 5},
    {SX_ECONFLICT, "conflict", 409, 6},
    {SX_EPRECONDITION, "precondition_failed", 412, 9},
    {SX_EVALIDATION, "validation_failed", 422, 3},
    {SX_ETOOLARGE, "payload_too_large", 413, 8},
    {SX_EUNAUTH, "unauthenticated", 401, 16},
    {SX_EFORBIDDEN, "permission_denied", 403, 7},
    {SX_ERATELIMIT, "rate_limited", 429, 8},
    {SX_EUNAVAILABLE, "unavailable", 503, 14},
    {SX_ETIMEOUT, "timeout", 504, 4},
    {SX_EIO, "io_error", 500, 13},
    {SX_EINTERNAL, "internal", 500, 13},
    {SX_EUNSUPPORTED, "unsupported", 415, 12},
    {SX_EMANAGED, "managed_by_kubernetes", 409, 9},
    {SX_EKEYREUSED, "idempotency_key_reused", 422, 9},
};

static int find(int code)
{
    for (size_t i = 0; i < sizeof(code_table) / sizeof(code_table[0]); i++)
        if (code_table[i].code == code)
            return (int)i;
    return -1;
}

void sx_err_clear(sx_err *err)
{
    if (err == NULL)
        return;
    err->code = SX_OK;
    err->message[0] = '\0';
    err->detail[0] = '\0';
    err->hint[0] = '\0';
    err->sqlstate[0] = '\0';
}

int sx_err_vset(sx_err *err, int code, const char *fmt, va_list ap)
{
    if (err == NULL)
        return code;
    sx_err_clear(err);
    err->code = code;
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    return code;
}

int sx_err_set(sx_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sx_err_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

/* Formats the calling function's variable arguments after fmt into the char array buf
 * (truncated to fit). A macro: only the function that takes the ... can va_start it. */
#define FORMAT_VARARGS(buf, fmt)                                                                   \
    do {                                                                                           \
        va_list ap_;                                                                               \
        va_start(ap_, fmt);                                                                        \
        vsnprintf((buf), sizeof(buf), (fmt), ap_);                                                 \
        va_end(ap_);                                                                               \
    } while (0)

void sx_err_detail(sx_err *err, const char *fmt, ...)
{
    if (err != NULL)
        FORMAT_VARARGS(err->detail, fmt);
}

void sx_err_hint(sx_err *err, const char *fmt, ...)
{
    if (err != NULL)
        FORMAT_VARARGS(err->hint, fmt);
}

void sx_err_prefix(sx_err *err, const char *fmt, ...)
{
    if (err == NULL)
        return;
    char prefix[SX_ERR_MESSAGE_MAX];
    char old[SX_ERR_MESSAGE_MAX];
    FORMAT_VARARGS(prefix, fmt);
    memcpy(old, err->message, sizeof(old));
    /* Both parts fit the buffer alone; together they are truncated on purpose. */
    size_t plen = strnlen(prefix, sizeof(prefix) - 1);
    memcpy(err->message, prefix, plen);
    snprintf(err->message + plen, sizeof(err->message) - plen, ": %s", old);
}

const char *sx_code_name(int code)
{
    int i = find(code);
    return i < 0 ? "unknown" : code_table[i].name;
}

int sx_code_http_status(int code)
{
    int i = find(code);
    return i < 0 ? 500 : code_table[i].http;
}

int sx_code_grpc_status(int code)
{
    int i = find(code);
    return i < 0 ? 2 : code_table[i].grpc;
}
