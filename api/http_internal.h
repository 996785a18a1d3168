/*
 * http_internal.h — what the files of the HTTP server share and nothing else sees: the
 * server and request structs, and the few functions that cross between the router and
 * libmicrohttpd glue (http.c), the request and response helpers (http_request.c) and
 * the streamed answers (http_stream.c). Only api/http*.c include it.
 */
#ifndef SX_API_HTTP_INTERNAL_H
#define SX_API_HTTP_INTERNAL_H

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <microhttpd.h>

#include "api/http.h"
#include "server/base/buf.h"
#include "server/base/list.h"

#define MAX_SEGS         16
#define MAX_PARAMS       8
#define MAX_RESP_HEADERS 16
#define REQUEST_ID_MAX   128

typedef struct route {
    char method[16];
    char *pattern;
    size_t nseg;
    char *segs[MAX_SEGS]; /* literal text, or the parameter name when is_param */
    bool is_param[MAX_SEGS];
    size_t nliteral; /* literal segments; more literals win over parameters */
    http_handler_fn fn;
    void *ud;
    bool builtin; /* health, readiness, metrics: also served on the admin listener */
} route;

struct http_server {
    const sextant_config *cfg; /* borrowed */
    sx_metrics *metrics;       /* borrowed */
    sup_supervisor *sup;       /* borrowed, may be NULL */
    route *routes;             /* fixed once the daemon runs */
    size_t nroutes;
    struct MHD_Daemon *daemon; /* NULL when stopped; touched by start/stop only */
    atomic_bool running;       /* mirrors daemon != NULL for readiness probes */
    int port;                  /* bound port while running */
    /* The certificate of HTTPS (http_set_certs); borrowed; NULL: plain HTTP. */
    struct certs *certs;
    sx_metric *m_requests; /* sextant_http_requests_total{method,route,status} */
    sx_metric *m_duration; /* sextant_http_request_duration_seconds{route} */
    pthread_mutex_t err_mu;
    char last_mhd_error[256];   /* the latest libmicrohttpd complaint, for start errors */
    http_refusal_fn on_refusal; /* see http_set_refusal_hook; NULL when none */
    void *on_refusal_ud;
    http_handler_fn fallback; /* see http_set_fallback; NULL: the JSON 404 */
    void *fallback_ud;
    const char *fallback_route; /* static label of fallback requests in logs and metrics */
    pthread_mutex_t streams_mu; /* guards streams and streams_ended */
    sx_list streams;            /* open streamed responses (http_respond_stream) */
    bool streams_ended;         /* http_stop ended them: new ones end at once */

    struct http_guard *guard;        /* limits, deadlines, the reaper (http_conn.c); owned */
    struct MHD_Daemon *admin_daemon; /* http.admin_listen's; NULL when none or stopped */
    int admin_port;                  /* its bound port while running, else 0 */
};

typedef struct resp_header {
    char *name;
    char *value;
} resp_header;

struct http_request {
    http_server *srv;
    struct MHD_Connection *conn;
    sx_arena *arena;      /* everything below that is a pointer lives here */
    const char *method;   /* NULL until the access handler first sees the request */
    const char *path;     /* decoded by libmicrohttpd, query string cut off, ill-formed
                             UTF-8 replaced by U+FFFD (it goes into logs and audit rows) */
    const char *raw_path; /* as the client sent it (percent-encoded, without the query
                             string): what the router splits; NULL when unknown */
    const char *route;    /* matched pattern, or "unmatched" */
    char id[REQUEST_ID_MAX + 1];
    const char *client_id; /* the client's X-Request-Id, capped and sanitized; NULL if none */
    struct timespec start;
    sx_buf body;
    size_t body_seen; /* bytes received, including dropped ones */
    bool too_large;
    bool responded;
    int status;
    size_t bytes_out;
    size_t nparams;
    const char *param_names[MAX_PARAMS];
    const char *param_values[MAX_PARAMS];
    size_t nheaders;
    resp_header headers[MAX_RESP_HEADERS];
    char remote_ip[INET6_ADDRSTRLEN]; /* filled on first http_req_remote_ip; "" before */
    void *app_data;                   /* http_req_set_app_data; not owned */
    struct http_stream *stream;       /* the streamed answer's state (one reference), or NULL */
    /* The filter of its JSON answers (http_req_set_json_filter); NULL: none. */
    json_t *(*json_filter)(json_t *body);
    bool admin; /* came in on the admin listener: built-in routes only */
};

/* ---- http.c */

/* Percent-decodes one path segment in place (the router's step after splitting the path
 * at the slashes the client sent); false when it does not decode to UTF-8 text without
 * control characters. Also driven by tests/fuzz. */
bool http_decode_segment(char *s);

/* ---- http_request.c */

/* Marks r answered with status; false (logged as a bug) when it already was. */
bool http_resp_begin(http_request *r, int status);
/* Adds Content-Type (when not NULL), X-Request-Id, X-Content-Type-Options and the
 * headers set with http_req_set_header to resp. */
void http_resp_add_headers(http_request *r, struct MHD_Response *resp, const char *content_type);
/* The error shape on the wire with an explicit status and code name: the one writer of
 * error bodies, used by http_respond_err and for the 405 no sx_code has. Takes details
 * (NULL: []). */
void http_respond_problem_raw(http_request *r, int status, const char *code_name,
                              const char *message, json_t *details);

/* ---- http_tls.c */

/* The libmicrohttpd option that serves s->certs at each handshake in *opt, or
 * MHD_OPTION_END when s has no TLS. Returns 0, SX_EUNSUPPORTED (no TLS in
 * libmicrohttpd) or SX_EINVAL (another HTTPS server runs). */
int http_tls_option(http_server *s, struct MHD_OptionItem *opt, sx_err *err);
/* After the daemon stopped: frees the option's hold. */
void http_tls_stopped(http_server *s);

/* ---- http_stream.c */

/* Drops the request's reference to its stream (on_completed). */
void http_stream_release(http_stream *st);
/* Body bytes the stream handed to libmicrohttpd so far. */
size_t http_stream_bytes(http_stream *st);
/* Ends every open stream and makes new ones end at once (http_stop). */
void http_streams_end(http_server *s);
/* The reaper: the peer of the parked stream with this id hung up: end it now. */
void http_streams_hangup(http_server *s, uint64_t id);
/* The reaper: fires the timed wakes (http_stream_wake_at) due at now_ms. */
void http_streams_tick(http_server *s, int64_t now_ms);

/* ---- http_conn.c: the connection guard (see there) */

typedef struct http_guard http_guard;
/* Never NULL; registers its metrics. Limits are read from cfg at http_guard_start. */
http_guard *http_guard_create(http_server *s);
/* Stops the reaper if it runs; NULL allowed. */
void http_guard_destroy(http_guard *g);
/* Starts the reaper thread; before the daemons start. SX_EIO when it cannot. */
int http_guard_start(http_guard *g, sx_err *err) SX_MUSTCHECK;
/* Stops and joins the reaper; after the daemons stopped. Idempotent. */
void http_guard_stop(http_guard *g);
/* The libmicrohttpd options of a listener's daemon (the API's or, admin, the admin
 * listener's): connection limit, idle timeout, connection notifications. Fills opts
 * (HTTP_GUARD_NOPTS items, the last MHD_OPTION_END) for MHD_OPTION_ARRAY. */
#define HTTP_GUARD_NOPTS 4
size_t http_guard_options(http_guard *g, bool admin, struct MHD_OptionItem *opts);
/* The accept policy callback and its closure for MHD_start_daemon. */
MHD_AcceptPolicyCallback http_guard_accept_policy(void);
void *http_guard_listener(http_guard *g, bool admin);
/* The request callbacks tell the guard where a connection is: its request line came
 * (libmicrohttpd's URI callback), its headers are in (first access call), its request
 * completed. Any of them on the connection's worker thread. */
void http_guard_request_line(struct MHD_Connection *c);
void http_guard_headers_in(struct MHD_Connection *c);
void http_guard_request_done(struct MHD_Connection *c);
/* True when c came in on the admin listener. */
bool http_guard_is_admin(struct MHD_Connection *c);
/* Whether a libmicrohttpd message with this format may be logged now (at most once a
 * minute per message); *suppressed: how many were not since it last was. */
bool http_guard_mhd_log(http_guard *g, const char *fmt, uint64_t *suppressed);
/* Watches fd (a parked stream's socket) for its peer hanging up, reported to
 * http_streams_hangup with id (never 0); unwatch before the stream is resumed. */
void http_guard_watch(http_guard *g, int fd, uint64_t id);
void http_guard_unwatch(http_guard *g, int fd);

#endif
