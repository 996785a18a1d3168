/*
 * err.h — the project's error codes and the error struct that carries their detail.
 *
 * Functions that can fail return int: 0 on success or a negative SX_E* code. The
 * human detail goes into a caller-provided sx_err (which may be NULL when the caller
 * only needs the code). Messages follow PostgreSQL's style: the primary message is
 * short, lowercase, without a trailing period, and says why; detail and hint are
 * full sentences. One table maps codes to HTTP statuses and gRPC status codes.
 */
#ifndef SX_BASE_ERR_H
#define SX_BASE_ERR_H

#include <stdarg.h>

#define SX_MUSTCHECK    __attribute__((warn_unused_result))
#define SX_PRINTF(a, b) __attribute__((format(printf, a, b)))

typedef enum sx_code {
    SX_OK = 0,
    SX_EINVAL = -1,        /* bad input: malformed, wrong type, out of range (HTTP 400) */
    SX_ENOTFOUND = -2,     /* the named thing does not exist (404) */
    SX_ECONFLICT = -3,     /* clashes with existing state (409) */
    SX_EPRECONDITION = -4, /* an If-Match or expected version was stale (412) */
    SX_EVALIDATION = -5,   /* well-formed but refused by validation (422) */
    SX_ETOOLARGE = -6,     /* over a size limit (413) */
    SX_EUNAUTH = -7,       /* missing or bad credentials (401) */
    SX_EFORBIDDEN = -8,    /* authenticated but not allowed (403) */
    SX_ERATELIMIT = -9,    /* rate limited (429) */
    SX_EUNAVAILABLE = -10, /* a dependency (database, cache) is unreachable (503) */
    SX_ETIMEOUT = -11,     /* an operation ran out of time (504) */
    SX_EIO = -12,          /* file or socket error (500) */
    SX_EINTERNAL = -13,    /* a bug or an unexpected state (500) */
    SX_EUNSUPPORTED = -14, /* media type or feature not supported (415) */
    SX_EMANAGED = -15,     /* the resource is managed by another source of configuration
                              (Kubernetes) and cannot be changed here (409) */
    SX_EKEYREUSED = -16,   /* an idempotency key was already used for another request (422) */
} sx_code;

#define SX_ERR_MESSAGE_MAX 512
#define SX_ERR_DETAIL_MAX  1024
#define SX_ERR_HINT_MAX    256

typedef struct sx_err {
    int code;                         /* one of sx_code; SX_OK when nothing was set */
    char message[SX_ERR_MESSAGE_MAX]; /* primary message, lowercase, no period */
    char detail[SX_ERR_DETAIL_MAX];   /* optional full sentences, "" when none */
    char hint[SX_ERR_HINT_MAX];       /* optional suggestion, "" when none */
    char sqlstate[6];                 /* SQLSTATE when the error came from libpq, else "" */
} sx_err;

/* Clears err (NULL allowed). */
void sx_err_clear(sx_err *err);

/* Sets code and the primary message of err (NULL allowed) and returns code, so that
 * `return sx_err_set(err, SX_EINVAL, "...")` both records and propagates. */
int sx_err_set(sx_err *err, int code, const char *fmt, ...) SX_PRINTF(3, 4);
int sx_err_vset(sx_err *err, int code, const char *fmt, va_list ap);

/* Sets the detail / hint sentences of err (NULL allowed). */
void sx_err_detail(sx_err *err, const char *fmt, ...) SX_PRINTF(2, 3);
void sx_err_hint(sx_err *err, const char *fmt, ...) SX_PRINTF(2, 3);

/* Prefixes the primary message with "what: " keeping the code, for context on the way up. */
void sx_err_prefix(sx_err *err, const char *fmt, ...) SX_PRINTF(2, 3);

/* Stable lowercase name of a code ("invalid_argument", "not_found", ...). */
const char *sx_code_name(int code);
/* HTTP status for a code (200 for SX_OK). */
int sx_code_http_status(int code);
/* gRPC status code (grpc_status_code values) for a code. */
int sx_code_grpc_status(int code);

#endif
