/*
 * http.h — the HTTP server: libmicrohttpd, a small router, JSON responses and errors,
 * request ids, body limits, access logs and request metrics (http.c: the daemon and
 * the router; http_request.c: the request and the answers; http_stream.c: streamed
 * answers).
 *
 * Routes are registered before http_start and never change afterwards, so handlers run
 * on libmicrohttpd's worker threads without locking the table. A handler receives an
 * http_request and answers it exactly once with one of the http_respond_* calls; a
 * handler that returns without answering gets a 500, and a second answer is dropped and
 * logged as a bug. Everything a handler allocates for the request can come from the
 * request's arena, freed when the response is done.
 *
 * Built-in routes: GET /healthz, GET /readyz (from the supervisor's gate), GET /readyz/xds
 * (its xDS gate: sup_ready_xds), GET /metrics. They are also the only routes of the
 * admin listener (http.admin_listen), when one is configured.
 *
 * Connections are guarded (api/http_conn.c): at most http.max_connections open, of
 * them at most http.max_connections_per_address from one client address, request
 * headers in within http.header_timeout whatever trickles in, and none silent for
 * longer than http.idle_timeout; refusals are counted in
 * sextant_http_connections_refused_total{reason} and logged once a minute per address.
 * Unknown paths get a JSON 404 (or go to the fallback handler, the web UI's files, when
 * one is set), a known path with another method a JSON 405 with Allow.
 * Errors always have the shape {"error":{"code":..., "message":..., "details":[...]}}.
 */
#ifndef SX_API_HTTP_H
#define SX_API_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/supervisor.h"

typedef struct http_server http_server;
typedef struct http_request http_request;

/* A route handler; runs on a worker thread and must answer req exactly once. */
typedef void (*http_handler_fn)(http_request *req, void *ud);

/* Creates a stopped server for cfg->http (borrowed; must outlive the server) with the
 * built-in routes. metrics (borrowed) receives the request metrics and is rendered at
 * /metrics; sup (borrowed, NULL allowed: /readyz is then always 200) answers /readyz.
 * Never NULL. */
http_server *http_create(const sextant_config *cfg, sx_metrics *metrics, sup_supervisor *sup);

/* Stops the server if it runs and frees it; NULL allowed. */
void http_destroy(http_server *s);

/* Adds a route. method is an upper-case HTTP method ("GET"; GET routes also answer
 * HEAD). pattern is an absolute path whose segments are literals or "{name}", which
 * matches one non-empty segment readable with http_req_param. A request's path is split
 * at the slashes it was sent with and each segment is then percent-decoded, so a
 * parameter may hold a "/" sent as %2F; a segment that does not decode to UTF-8 text
 * without control characters is refused with 400 before any route runs. Literal routes win over
 * parameter routes with the same shape; otherwise the first registered wins. Returns 0,
 * SX_EINVAL for a malformed pattern or after http_start, SX_ECONFLICT for a duplicate. */
int http_route(http_server *s, const char *method, const char *pattern, http_handler_fn fn,
               void *ud, sx_err *err) SX_MUSTCHECK;

/* Called for a request the server refuses before any route sees it (a body over
 * http.max_body_bytes, status 413; a path that does not decode to UTF-8 text, status
 * 400), just before the refusal is sent, so the REST layer can audit it. Set before http_start;
 * NULL clears it. */
typedef void (*http_refusal_fn)(http_request *req, int status, const char *reason, void *ud);
void http_set_refusal_hook(http_server *s, http_refusal_fn fn, void *ud);

/* Sets the handler of requests whose path no route has (any method), instead of the JSON
 * 404: the web UI's files (api/static.h). route is a static string that stands for the
 * route of such requests in the access log and the metrics ("ui"). The handler answers
 * exactly once, like a route's; http_respond_no_route gives it the usual 404. Set before
 * http_start; fn NULL restores the JSON 404. */
void http_set_fallback(http_server *s, const char *route, http_handler_fn fn, void *ud);

/* Serves HTTPS with the certificate of c's listener CERTS_HTTP (server/certs.h;
 * borrowed, must outlive the server), asked for at every TLS handshake so that a
 * reloaded certificate reaches new connections. NULL or a listener without TLS: plain
 * HTTP. Before http_start. */
struct certs;
void http_set_certs(http_server *s, struct certs *c);

/* Binds cfg->http.listen and starts the worker threads. Returns 0, or SX_EIO (address
 * in use, TLS material rejected) with the reason in err. */
int http_start(http_server *s, sx_err *err) SX_MUSTCHECK;

/* Stops accepting, closes connections and joins the workers; idempotent. */
void http_stop(http_server *s);

/* True between a successful http_start and http_stop. */
bool http_running(http_server *s);

/* The bound port (useful when it was chosen by the system), 0 when not running. */
int http_bound_port(http_server *s);

/* Supervisor callbacks for the server as a component; ctx is the http_server. */
extern const sup_ops http_sup_ops;

/* ---- inside a handler: the request (all strings valid until the response is done) */

const char *http_req_method(const http_request *r);
/* The path, percent-decoded whole (the router splits the path before decoding it). */
const char *http_req_path(const http_request *r);
/* The matched route pattern ("/api/v1/configs/{id}"). */
const char *http_req_route(const http_request *r);
/* The status the request was answered with; 0 while it is not answered yet. */
int http_req_status(const http_request *r);
/* The request id, always made by the server (32 hex digits) and sent back in
 * X-Request-Id. */
const char *http_req_id(const http_request *r);
/* The X-Request-Id the client sent, cut to 128 bytes and with ill-formed UTF-8 replaced
 * by U+FFFD; NULL when none. Logged and audited beside the server's id, never instead. */
const char *http_req_client_id(const http_request *r);
/* The value of a {name} segment, NULL when the route has none such. */
const char *http_req_param(const http_request *r, const char *name);
/* A request header (case-insensitive name) or query argument; NULL when absent.
 * Ill-formed UTF-8 in the value is replaced by U+FFFD. */
const char *http_req_header(http_request *r, const char *name);
const char *http_req_query(http_request *r, const char *name);
/* The request body (NUL-terminated; "" with *len 0 when none). len may be NULL. */
const char *http_req_body(const http_request *r, size_t *len);
/* Memory that lives until the response is done. */
sx_arena *http_req_arena(http_request *r);
/* The client's IP address as text ("192.0.2.7", "2001:db8::1"; a v4-mapped v6 peer is
 * shown as v4): the TCP peer, never a forwarded-for header. "" when unknown. */
const char *http_req_remote_ip(http_request *r);
/* One pointer a request pipeline attaches to the request for its handler (api/rest.c
 * stores the authenticated principal there). Not owned: whoever sets it keeps it alive
 * until the response is done, typically in the request's arena. NULL until set. */
void http_req_set_app_data(http_request *r, void *data);
void *http_req_app_data(const http_request *r);
/* A function every JSON answer of the request (http_respond_json) passes through before
 * it is sent, e.g. to redact what the caller may not read: it takes the body's reference
 * and returns the body to send (the same or another); NULL: none. */
void http_req_set_json_filter(http_request *r, json_t *(*filter)(json_t *body));
/* Adds a response header (copied) to the answer sent next. */
void http_req_set_header(http_request *r, const char *name, const char *value);

/* ---- answering (exactly once per request) */

/* Sends body[0..len) with the status and content type (copied). */
void http_respond(http_request *r, int status, const char *content_type, const void *body,
                  size_t len);
/* Sends a JSON document; takes ownership of body. */
void http_respond_json(http_request *r, int status, json_t *body);
/* The one sender of errors: the error shape {"error": {"code", "message", "details"}}
 * with err's status (sx_code_http_status; SX_OK counts as SX_EINTERNAL), its code's name
 * and its message (the code's name when empty). details is taken over; NULL gives
 * http_err_details(err). A 503 carries Retry-After: 1; a 5xx is logged. */
void http_respond_err(http_request *r, const sx_err *err, json_t *details);
/* err's detail and hint as a details array of {"path": "", "message": ...}; new
 * reference. */
json_t *http_err_details(const sx_err *err);
/* The JSON 404 of a path no route has ("no route for GET /x"). */
void http_respond_no_route(http_request *r);

/* ---- streamed answers (server-sent events): a body of unknown length, produced piece
 * by piece, that holds no thread while it waits */

typedef struct http_stream http_stream;

/* Copies at most max bytes of the body into buf and returns how many. 0 means nothing
 * is ready: the connection is parked (no thread held, nothing polled) until
 * http_stream_wake. HTTP_STREAM_END (any negative value) ends the body. Runs on a
 * worker thread, one call at a time per stream, and must not block. */
#define HTTP_STREAM_END (-1L)
typedef long (*http_stream_read_fn)(void *ctx, char *buf, size_t max);
/* The stream is over (body ended, client gone, or the server stopping): called exactly
 * once, on any thread, after the last read; ctx may be freed. The http_stream handle is
 * invalid once it returns. */
typedef void (*http_stream_done_fn)(void *ctx);

/* Answers with status, content_type (copied) and the headers set so far, and a body
 * read from read (chunked on HTTP/1.1). Returns the handle for http_stream_wake, or NULL
 * when the answer could not be queued, in which case done(ctx) has already run. When
 * http_stop begins, every open stream's body ends (read is not called again), and a
 * stream answered after that ends at once, so shutdown never waits on a client. */
http_stream *http_respond_stream(http_request *r, int status, const char *content_type,
                                 http_stream_read_fn read, http_stream_done_fn done, void *ctx);

/* read may have something now: resumes the parked stream, or makes a read that is
 * running ask again instead of parking. Any thread, any number of times, until done
 * has returned. */
void http_stream_wake(http_stream *s);

/* Wakes the stream (as http_stream_wake) once the monotonic clock (sx_monotonic_ms)
 * reaches monotonic_ms, within a fraction of a second, so that read can end the body at
 * a deadline even when the producer has nothing. Replaces an earlier one. Same rules as
 * http_stream_wake. A client that hangs up while its stream is parked is noticed at
 * once: the connection is closed and done runs without another read. */
void http_stream_wake_at(http_stream *s, int64_t monotonic_ms);

#endif
