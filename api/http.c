/*
 * http.c — libmicrohttpd server with a router, JSON errors, request ids and access logs.
 *
 * A request begins in libmicrohttpd's URI callback, which creates its state with the
 * path as the client sent it (the router splits that one, see dispatch). Then
 * libmicrohttpd calls the access handler several times per request: once when the
 * headers are in (we make the request id, refuse ambiguous framing — see
 * framing_problem — and a declared body over the limit right away), once per body chunk (we append
 * to a buffer, or count and drop once over the limit), and once more when the body is complete (we
 * route and run the handler, which queues the response). The completion callback runs
 * once per request whatever happened; it writes the access log line, updates the
 * metrics and frees the request, arena included. The route table is built before the
 * daemon starts and is read-only afterwards.
 */
#include "api/http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "server/base/buf.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/num.h"
#include "server/base/utf8.h"

/* ------------------------------------------------------------------ helpers */

static double elapsed_s(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* 32 hex digits from the kernel's CSPRNG; r only makes the fallback unique. */
static void new_request_id(char out[REQUEST_ID_MAX + 1], const void *r)
{
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        /* No getrandom (very old kernel): time and address are unique enough for an id. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t a = (uint64_t)ts.tv_sec ^ ((uint64_t)ts.tv_nsec << 32), b = (uint64_t)(uintptr_t)r;
        memcpy(rnd, &a, 8);
        memcpy(rnd + 8, &b, 8);
    }
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(out + i * 2, 3, "%02x", rnd[i]);
}

/* Bounded label values for the method, so junk methods cannot grow the metrics. */
static const char *method_label(const char *m)
{
    static const char *known[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(m, known[i]) == 0)
            return known[i];
    return "OTHER";
}

/* ------------------------------------------------------------------ routing */

static bool valid_segment(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '{' || s[i] == '}' || s[i] == '?' || s[i] == '#')
            return false;
    return true;
}

int http_route(http_server *s, const char *method, const char *pattern, http_handler_fn fn,
               void *ud, sx_err *err)
{
    if (s->daemon)
        return sx_err_set(err, SX_EINVAL, "cannot add route %s %s: the server is running", method,
                          pattern);
    if (fn == NULL || method == NULL || strlen(method) == 0 || strlen(method) >= 16)
        return sx_err_set(err, SX_EINVAL, "invalid route %s %s", method ? method : "(null)",
                          pattern ? pattern : "(null)");
    if (pattern == NULL || pattern[0] != '/')
        return sx_err_set(err, SX_EINVAL, "route pattern %s must start with /",
                          pattern ? pattern : "(null)");
    route rt;
    memset(&rt, 0, sizeof(rt));
    snprintf(rt.method, sizeof(rt.method), "%s", method);
    const char *p = pattern + 1;
    size_t nparams = 0;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (rt.nseg == MAX_SEGS)
            goto bad;
        bool param = n >= 3 && p[0] == '{' && p[n - 1] == '}';
        if (param ? !valid_segment(p + 1, n - 2) : !valid_segment(p, n))
            goto bad;
        if (param && ++nparams > MAX_PARAMS)
            goto bad;
        rt.is_param[rt.nseg] = param;
        rt.segs[rt.nseg] = param ? sx_strndup(p + 1, n - 2) : sx_strndup(p, n);
        rt.nliteral += param ? 0 : 1;
        rt.nseg++;
        if (slash == NULL)
            break;
        p = slash + 1;
        if (*p == '\0')
            goto bad; /* trailing slash */
    }
    for (size_t i = 0; i < s->nroutes; i++) {
        route *o = &s->routes[i];
        if (strcmp(o->method, rt.method) != 0 || o->nseg != rt.nseg)
            continue;
        bool same = true;
        for (size_t k = 0; k < rt.nseg && same; k++)
            same = o->is_param[k] == rt.is_param[k] &&
                   (rt.is_param[k] || strcmp(o->segs[k], rt.segs[k]) == 0);
        if (same) {
            for (size_t k = 0; k < rt.nseg; k++)
                sx_free(rt.segs[k]);
            return sx_err_set(err, SX_ECONFLICT, "route %s %s is already registered", method,
                              pattern);
        }
    }
    rt.pattern = sx_strdup(pattern);
    rt.fn = fn;
    rt.ud = ud;
    s->routes = sx_realloc(s->routes, (s->nroutes + 1) * sizeof(route));
    s->routes[s->nroutes++] = rt;
    return 0;
bad:
    for (size_t k = 0; k < rt.nseg; k++)
        sx_free(rt.segs[k]);
    return sx_err_set(err, SX_EINVAL, "malformed route pattern %s", pattern);
}

static bool route_matches(const route *rt, char **segs, size_t nseg)
{
    if (rt->nseg != nseg)
        return false;
    for (size_t i = 0; i < nseg; i++) {
        if (rt->is_param[i] ? segs[i][0] == '\0' : strcmp(rt->segs[i], segs[i]) != 0)
            return false;
    }
    return true;
}

static bool method_accepts(const route *rt, const char *m)
{
    return strcmp(rt->method, m) == 0 || (strcmp(m, "HEAD") == 0 && strcmp(rt->method, "GET") == 0);
}

void http_respond_no_route(http_request *r)
{
    r->route = "unmatched";
    sx_err err;
    sx_err_set(&err, SX_ENOTFOUND, "no route for %s %.300s", r->method, r->path);
    http_respond_err(r, &err, NULL);
}

void http_set_fallback(http_server *s, const char *route, http_handler_fn fn, void *ud)
{
    s->fallback = fn;
    s->fallback_ud = ud;
    s->fallback_route = route ? route : "fallback";
}

/* Percent-decodes the segment s in place, as libmicrohttpd decodes a path: "%XX" is the
 * byte XX, a '%' not followed by two hex digits stays as it is. Returns false when the
 * result is not UTF-8 text without control characters (an encoded NUL above all, which
 * would cut the value short): no handler, log line or JSON answer could carry it. */
bool http_decode_segment(char *s)
{
    char *out = s;
    for (const char *p = s; *p; p++) {
        int hi, lo;
        if (p[0] == '%' && (hi = sx_hex_digit(p[1])) >= 0 && (lo = sx_hex_digit(p[2])) >= 0) {
            *out = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *out = *p;
        }
        unsigned char c = (unsigned char)*out++;
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    *out = '\0';
    return sx_utf8_valid(s);
}

/*
 * Routes r. The path is split at the slashes the client sent, before any segment is
 * decoded, so that a parameter may hold an encoded slash: POST
 * /api/v1/groups/shop%2Fweb/rollback names the group "shop/web" (libmicrohttpd's own
 * path, r->path, is decoded whole and would make that five segments).
 */
static void dispatch(http_request *r)
{
    http_server *s = r->srv;
    char *segs[MAX_SEGS + 1];
    size_t nseg = 0;
    bool too_deep = false;
    const char *path = r->raw_path ? r->raw_path : r->path;
    char *copy = sx_arena_strdup(r->arena, path[0] == '/' ? path + 1 : path);
    if (*copy) {
        for (char *p = copy;;) {
            if (nseg == MAX_SEGS) {
                too_deep = true;
                break;
            }
            segs[nseg++] = p;
            char *slash = strchr(p, '/');
            if (slash == NULL)
                break;
            *slash = '\0';
            p = slash + 1;
        }
    }
    for (size_t i = 0; r->raw_path && i < nseg; i++) {
        if (!http_decode_segment(segs[i])) {
            sx_err err;
            sx_err_set(&err, SX_EINVAL,
                       "malformed path: segment %zu does not decode to UTF-8 text without "
                       "control characters",
                       i + 1);
            sx_err_hint(&err, "Percent-encode the UTF-8 bytes of printable characters only "
                              "(not %%00 to %%1F or %%7F).");
            if (s->on_refusal)
                s->on_refusal(r, 400, err.message, s->on_refusal_ud);
            http_respond_err(r, &err, NULL);
            return;
        }
    }

    const route *best = NULL;
    sx_buf allow = {0};
    for (size_t i = 0; i < s->nroutes && !too_deep; i++) {
        const route *rt = &s->routes[i];
        if ((r->admin && !rt->builtin) || !route_matches(rt, segs, nseg))
            continue;
        if (method_accepts(rt, r->method) && (best == NULL || rt->nliteral > best->nliteral))
            best = rt;
        char tag[24];
        snprintf(tag, sizeof(tag), "%s, ", rt->method);
        if (strstr(sx_buf_cstr(&allow), tag) == NULL)
            sx_buf_puts(&allow, tag);
        if (strcmp(rt->method, "GET") == 0 && strstr(sx_buf_cstr(&allow), "HEAD, ") == NULL)
            sx_buf_puts(&allow, "HEAD, ");
        if (r->route == NULL || strcmp(r->route, "unmatched") == 0)
            r->route = rt->pattern;
    }

    if (best) {
        r->route = best->pattern;
        for (size_t i = 0; i < nseg; i++) {
            if (best->is_param[i] && r->nparams < MAX_PARAMS) {
                r->param_names[r->nparams] = best->segs[i];
                r->param_values[r->nparams] = segs[i];
                r->nparams++;
            }
        }
        best->fn(r, best->ud);
        if (!r->responded) {
            SX_ERROR("http", "bug: handler for %s %s returned without answering", best->method,
                     best->pattern);
            sx_err err;
            sx_err_set(&err, SX_EINTERNAL, "the handler did not answer");
            http_respond_err(r, &err, NULL);
        }
    } else if (allow.len) {
        allow.data[allow.len - 2] = '\0'; /* drop the last ", " */
        http_req_set_header(r, "Allow", allow.data);
        char msg[512];
        snprintf(msg, sizeof(msg), "method %s is not allowed on %s", r->method, r->path);
        http_respond_problem_raw(r, 405, "method_not_allowed", msg, NULL);
    } else if (s->fallback && !r->admin) {
        r->route = s->fallback_route;
        s->fallback(r, s->fallback_ud);
        if (!r->responded) {
            sx_err err;
            sx_err_set(&err, SX_EINTERNAL, "the fallback handler did not answer");
            http_respond_err(r, &err, NULL);
        }
    } else {
        http_respond_no_route(r);
    }
    sx_buf_free(&allow);
}

/* ------------------------------------------------------------------ built-in routes */

static void handle_healthz(http_request *r, void *ud)
{
    (void)ud;
    http_req_set_header(r, "Cache-Control", "no-store");
    http_respond_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* The start of a readiness answer (never cached): true when it is given already, as a
 * server without a supervisor is ready. */
static bool readiness_answered(http_request *r, const http_server *s)
{
    http_req_set_header(r, "Cache-Control", "no-store");
    if (s->sup != NULL)
        return false;
    http_respond_json(r, 200, json_pack("{s:s}", "status", "ready"));
    return true;
}

/* {"status": "ready" or "not_ready", "components": comps} (comps taken). */
static json_t *readiness_json(bool gate, json_t *comps)
{
    return json_pack("{s:s,s:o}", "status", gate ? "ready" : "not_ready", "components", comps);
}

static void handle_readyz(http_request *r, void *ud)
{
    http_server *s = ud;
    if (readiness_answered(r, s))
        return;
    bool gate = sup_ready(s->sup);
    json_t *comps = sup_readiness_json(s->sup);
    const char *k;
    json_t *v;
    json_object_foreach(comps, k, v)
    {
        if (!json_is_true(v))
            gate = false;
    }
    json_t *body = readiness_json(gate, comps);
    json_t *notices = sup_notices_json(s->sup); /* seen by operators, never a failure */
    if (notices)
        json_object_set_new(body, "notices", notices);
    http_respond_json(r, gate ? 200 : 503, body);
}

/* GET /readyz/xds: the xDS side alone (snapshots loaded, gRPC serving), for the load
 * balancer's gRPC pool; a replica without its database still serves its proxies. */
static void handle_readyz_xds(http_request *r, void *ud)
{
    http_server *s = ud;
    if (readiness_answered(r, s))
        return;
    json_t *comps = NULL;
    bool gate = sup_ready_xds(s->sup, &comps);
    http_respond_json(r, gate ? 200 : 503, readiness_json(gate, comps));
}

static void handle_metrics(http_request *r, void *ud)
{
    http_server *s = ud;
    if (s->sup)
        (void)sup_ready(s->sup); /* refreshes sextant_ready and the per-component gauges */
    sx_buf out = {0};
    sx_metrics_render(s->metrics, &out);
    http_req_set_header(r, "Cache-Control", "no-store");
    http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", sx_buf_cstr(&out), out.len);
    sx_buf_free(&out);
}

/* ------------------------------------------------------------------ libmicrohttpd glue */

static http_request *request_new(http_server *s, struct MHD_Connection *conn)
{
    http_request *r = sx_calloc(1, sizeof(*r));
    clock_gettime(CLOCK_MONOTONIC, &r->start);
    r->srv = s;
    r->conn = conn;
    r->arena = sx_arena_create();
    r->route = "unmatched";
    return r;
}

/* libmicrohttpd's URI callback, the one place that sees the path as the client sent it,
 * before it is decoded: the request starts here, with its raw path. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    http_request *r = request_new(cls, conn);
    http_guard_request_line(conn);
    r->admin = http_guard_is_admin(conn);
    if (uri)
        r->raw_path = sx_arena_strndup(r->arena, uri, strcspn(uri, "?"));
    return r;
}

/* The rest of the request, once its headers are in: method, decoded path, request id.
 * The id is always the server's, so that no client can make its request share an id with
 * another's change in the audit trail; the client's own is kept beside it. Method, path
 * and the client's id go into logs and audit rows, so ill-formed UTF-8 in them becomes
 * U+FFFD here. */
static void request_begin(http_request *r, const char *url, const char *method)
{
    r->method = sx_utf8_sanitize_in(r->arena, sx_arena_strdup(r->arena, method));
    r->path = sx_utf8_sanitize_in(r->arena, sx_arena_strdup(r->arena, url ? url : ""));
    new_request_id(r->id, r);
    const char *given = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
    if (given && given[0])
        r->client_id = sx_utf8_sanitize_in(
            r->arena, sx_arena_strndup(r->arena, given, strnlen(given, REQUEST_ID_MAX)));
}

/* What framing_problem counts among the request's headers. */
typedef struct header_counts {
    int content_length, transfer_encoding, host;
    bool bad_length;     /* a Content-Length that is not 1*DIGIT */
    bool bad_name;       /* a header name that is not a token (whitespace before the colon) */
    const char *last_te; /* the last Transfer-Encoding header's value */
} header_counts;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    header_counts *hc = cls;
    if (key == NULL)
        return MHD_YES;
    /* RFC 9110 section 5.6.2: a field name is a token; "Content-Length : 5" must not pass
     * as a header of another name while a proxy in front reads it as the length. */
    if (key[0] == '\0' ||
        strspn(key, "!#$%&'*+-.^_`|~0123456789"
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(key))
        hc->bad_name = true;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        hc->content_length++;
        if (value == NULL || value[0] == '\0' || strspn(value, "0123456789") != strlen(value))
            hc->bad_length = true;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        hc->transfer_encoding++;
        hc->last_te = value ? value : "";
    } else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        hc->host++;
    }
    return MHD_YES;
}

/* Whether the last coding of a Transfer-Encoding value is "chunked". */
static bool ends_chunked(const char *te)
{
    const char *last = strrchr(te, ',');
    last = last ? last + 1 : te;
    while (*last == ' ' || *last == '\t')
        last++;
    size_t n = strlen(last);
    while (n && (last[n - 1] == ' ' || last[n - 1] == '\t'))
        n--;
    return n == 7 && strncasecmp(last, "chunked", 7) == 0;
}

/*
 * Why the request's framing is refused, or NULL when it is sound (RFC 9112 sections 3.2
 * and 6): a proxy in front may read an ambiguous request differently from us, and a
 * request it does not see could hide in the body ("request smuggling"). Refused: a
 * header name that is not a token (whitespace before its colon), more than one
 * Content-Length or one that is not a number, Content-Length together with
 * Transfer-Encoding, a Transfer-Encoding whose last coding is not chunked or that comes
 * with HTTP/1.0, and an HTTP/1.1 request without exactly one Host.
 */
static const char *framing_problem(struct MHD_Connection *conn, const char *version)
{
    header_counts hc = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &hc);
    bool http11 = version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
    if (hc.bad_name)
        return "a header name with whitespace or another character a token may not hold";
    if (hc.content_length > 1)
        return "more than one Content-Length header";
    if (hc.bad_length)
        return "the Content-Length header is not a number";
    if (hc.transfer_encoding && hc.content_length)
        return "both Content-Length and Transfer-Encoding";
    if (hc.transfer_encoding && !http11)
        return "Transfer-Encoding in a request older than HTTP/1.1";
    if (hc.transfer_encoding && !ends_chunked(hc.last_te))
        return "the last transfer coding is not chunked";
    if (http11 && hc.host != 1)
        return hc.host ? "more than one Host header" : "an HTTP/1.1 request without a Host header";
    return NULL;
}

/* Refuses a request whose framing is ambiguous and closes the connection: what follows
 * on it cannot be trusted to be the next request. */
static void respond_bad_framing(http_request *r, const char *why)
{
    sx_err err;
    sx_err_set(&err, SX_EINVAL, "malformed request: %s", why);
    sx_err_hint(&err, "Send one Content-Length or Transfer-Encoding: chunked, not both, and "
                      "one Host header.");
    http_req_set_header(r, "Connection", "close");
    http_respond_err(r, &err, NULL);
}

void http_set_refusal_hook(http_server *s, http_refusal_fn fn, void *ud)
{
    s->on_refusal = fn;
    s->on_refusal_ud = ud;
}

static void respond_too_large(http_request *r)
{
    sx_err err;
    sx_err_set(&err, SX_ETOOLARGE, "request body is larger than %lld bytes",
               (long long)r->srv->cfg->http.max_body_bytes);
    if (r->srv->on_refusal)
        r->srv->on_refusal(r, 413, err.message, r->srv->on_refusal_ud);
    http_req_set_header(r, "Connection", "close");
    http_respond_err(r, &err, NULL);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    http_server *s = cls;
    http_request *r = *con_cls;
    size_t limit = (size_t)s->cfg->http.max_body_bytes;

    if (r == NULL || r->method == NULL) {
        if (r == NULL) /* the URI callback always makes one; a safety net */
            *con_cls = r = request_new(s, conn);
        http_guard_headers_in(conn);
        request_begin(r, url, method);
        const char *why = framing_problem(conn, version);
        if (why) {
            respond_bad_framing(r, why);
            return MHD_YES;
        }
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (*end == '\0' && n > limit) {
                r->too_large = true;
                respond_too_large(r);
            }
        }
        return MHD_YES;
    }
    if (r->responded) {
        *upload_data_size = 0; /* answered early (413): drain and drop */
        return MHD_YES;
    }
    if (*upload_data_size) {
        r->body_seen += *upload_data_size;
        if (r->body_seen > limit)
            r->too_large = true;
        else
            sx_buf_append(&r->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->too_large)
        respond_too_large(r);
    else
        dispatch(r);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    http_request *r = *con_cls;
    http_guard_request_done(conn);
    if (r == NULL)
        return;
    *con_cls = NULL;
    if (r->method == NULL) {
        /* Never reached the access handler (libmicrohttpd refused the request itself,
         * or the client left before its headers were in): nothing to log. */
        sx_arena_destroy(r->arena);
        sx_free(r);
        return;
    }
    if (r->stream) {
        r->bytes_out = http_stream_bytes(r->stream);
        http_stream_release(r->stream);
    }
    double secs = elapsed_s(&r->start);
    char status[16];
    snprintf(status, sizeof(status), "%d", r->status);
    const char *lv[] = {method_label(r->method), r->route, status};
    sx_metric_inc(s->m_requests, lv);
    const char *dv[] = {r->route};
    sx_metric_observe(s->m_duration, dv, secs);

    json_t *f = json_pack("{s:s,s:s,s:s,s:i,s:f,s:s,s:I,s:I}", "method", r->method, "path", r->path,
                          "route", r->route, "status", r->status, "duration_ms",
                          (double)(long long)(secs * 1e6) / 1e3, "request_id", r->id, "bytes_in",
                          (json_int_t)r->body_seen, "bytes_out", (json_int_t)r->bytes_out);
    if (r->client_id)
        json_object_set_new(f, "client_request_id", json_string(r->client_id));
    const char *remote = http_req_remote_ip(r);
    if (remote[0])
        json_object_set_new(f, "remote", json_string(remote));
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        json_object_set_new(f, "terminated",
                            json_string(toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT ? "client_abort"
                                        : toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "timeout"
                                        : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "shutdown"
                                                                                        : "error"));
    sx_log_fields(SX_LOG_INFO, "http", f, "%s %s %d", r->method, r->path, r->status);

    sx_buf_free(&r->body);
    sx_arena_destroy(r->arena);
    sx_free(r);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    http_server *s = cls;
    char msg[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
        msg[--n] = '\0';
    pthread_mutex_lock(&s->err_mu);
    snprintf(s->last_mhd_error, sizeof(s->last_mhd_error), "%s", msg);
    pthread_mutex_unlock(&s->err_mu);
    /* Most of these are about one connection (a client that went away mid-request):
     * logged at most once a minute per message, so a flood cannot flood the log. */
    uint64_t suppressed;
    if (http_guard_mhd_log(s->guard, fmt, &suppressed))
        sx_log_fields(SX_LOG_WARN, "http", json_pack("{s:I}", "suppressed", (json_int_t)suppressed),
                      "libmicrohttpd: %s", msg);
}

/* ------------------------------------------------------------------ lifecycle */

http_server *http_create(const sextant_config *cfg, sx_metrics *metrics, sup_supervisor *sup)
{
    static const double bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    http_server *s = sx_calloc(1, sizeof(*s));
    s->cfg = cfg;
    s->metrics = metrics;
    s->sup = sup;
    pthread_mutex_init(&s->err_mu, NULL);
    pthread_mutex_init(&s->streams_mu, NULL);
    s->m_requests = sx_metrics_counter(metrics, "sextant_http_requests_total",
                                       "HTTP requests answered, by method, route and status",
                                       "method,route,status");
    s->m_duration = sx_metrics_histogram(metrics, "sextant_http_request_duration_seconds",
                                         "Time from request headers to completed response", "route",
                                         bounds, sizeof(bounds) / sizeof(bounds[0]));
    sx_err err;
    if (http_route(s, "GET", "/healthz", handle_healthz, s, &err) != 0 ||
        http_route(s, "GET", "/readyz", handle_readyz, s, &err) != 0 ||
        http_route(s, "GET", "/readyz/xds", handle_readyz_xds, s, &err) != 0 ||
        http_route(s, "GET", "/metrics", handle_metrics, s, &err) != 0) {
        SX_ERROR("http", "bug: built-in route: %s", err.message);
        abort();
    }
    for (size_t i = 0; i < s->nroutes; i++)
        s->routes[i].builtin = true;
    s->guard = http_guard_create(s);
    return s;
}

/* The socket address of l (the key named key) into *ss. */
static int resolve_listen(const config_listen *l, const char *key, struct sockaddr_storage *ss,
                          sx_err *err)
{
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", l->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    int gai = getaddrinfo(l->host, portstr, &hints, &res);
    if (gai != 0 || res == NULL)
        return sx_err_set(err, SX_EIO, "could not resolve %s host %s: %s", key, l->host,
                          gai_strerror(gai));
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/*
 * The admin listener (http.admin_listen): plain HTTP on one thread of its own, with its
 * own connection limits, serving the built-in routes only (dispatch), so that probes
 * and scrapers are answered while the API port is flooded or full.
 */
static int start_admin(http_server *s, sx_err *err)
{
    const config_listen *l = &s->cfg->http.admin_listen;
    if (l->text == NULL)
        return 0;
    struct sockaddr_storage ss;
    if (resolve_listen(l, "http.admin_listen", &ss, err) != 0)
        return SX_EIO;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                         MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem guard_opts[HTTP_GUARD_NOPTS];
    http_guard_options(s->guard, true, guard_opts);
    pthread_mutex_lock(&s->err_mu);
    s->last_mhd_error[0] = '\0';
    pthread_mutex_unlock(&s->err_mu);
    s->admin_daemon = MHD_start_daemon(
        flags, (uint16_t)l->port, http_guard_accept_policy(), http_guard_listener(s->guard, true),
        on_access, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, s, MHD_OPTION_ARRAY, guard_opts, MHD_OPTION_END);
    if (s->admin_daemon == NULL) {
        pthread_mutex_lock(&s->err_mu);
        sx_err_set(err, SX_EIO, "could not listen on %s (http.admin_listen): %s", l->text,
                   s->last_mhd_error[0] ? s->last_mhd_error : "libmicrohttpd refused to start");
        pthread_mutex_unlock(&s->err_mu);
        return SX_EIO;
    }
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(s->admin_daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->admin_port = di ? di->port : l->port;
    sx_log_fields(SX_LOG_INFO, "http",
                  json_pack("{s:s,s:i}", "listen", l->text, "port", s->admin_port),
                  "admin listener (health, readiness, metrics) on %s", l->text);
    return 0;
}

static void stop_admin(http_server *s)
{
    if (s->admin_daemon == NULL)
        return;
    MHD_stop_daemon(s->admin_daemon);
    s->admin_daemon = NULL;
    s->admin_port = 0;
}

static void http_stop_daemons(http_server *s);

int http_start(http_server *s, sx_err *err)
{
    if (s->daemon)
        return 0;
    const config_listen *l = &s->cfg->http.listen;
    struct sockaddr_storage ss;
    if (resolve_listen(l, "http.listen", &ss, err) != 0)
        return SX_EIO;

    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;

    struct MHD_OptionItem tls_opts[2] = {{MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL}};
    int trc = http_tls_option(s, &tls_opts[0], err);
    if (trc != 0)
        return trc;
    if (tls_opts[0].option != MHD_OPTION_END)
        flags |= MHD_USE_TLS;

    pthread_mutex_lock(&s->err_mu);
    s->last_mhd_error[0] = '\0';
    pthread_mutex_unlock(&s->err_mu);
    pthread_mutex_lock(&s->streams_mu);
    s->streams_ended = false;
    pthread_mutex_unlock(&s->streams_mu);
    /* Connection limits, the idle timeout and the header deadline (api/http_conn.c). */
    int grc = http_guard_start(s->guard, err);
    if (grc != 0) {
        http_tls_stopped(s);
        return grc;
    }
    struct MHD_OptionItem guard_opts[HTTP_GUARD_NOPTS];
    http_guard_options(s->guard, false, guard_opts);
    /* The logger must come first, or libmicrohttpd prints what precedes it itself. */
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)l->port, http_guard_accept_policy(), http_guard_listener(s->guard, false),
        on_access, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned int)s->cfg->http.threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_ARRAY, guard_opts, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    if (s->daemon == NULL) {
        http_guard_stop(s->guard);
        http_tls_stopped(s);
        pthread_mutex_lock(&s->err_mu);
        sx_err_set(err, SX_EIO, "could not listen on %s (http.listen): %s", l->text,
                   s->last_mhd_error[0] ? s->last_mhd_error : "libmicrohttpd refused to start");
        pthread_mutex_unlock(&s->err_mu);
        return SX_EIO;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : l->port;
    int arc = start_admin(s, err);
    if (arc != 0) {
        http_stop_daemons(s);
        return arc;
    }
    atomic_store(&s->running, true);
    sx_log_fields(SX_LOG_INFO, "http",
                  json_pack("{s:s,s:i,s:b,s:I}", "listen", l->text, "port", s->port, "tls",
                            (flags & MHD_USE_TLS) != 0, "threads",
                            (json_int_t)s->cfg->http.threads),
                  "http server listening on %s", l->text);
    return 0;
}

/* Stops the daemons and the guard's reaper, frees the TLS material. */
static void http_stop_daemons(http_server *s)
{
    stop_admin(s);
    MHD_socket fd = MHD_quiesce_daemon(s->daemon);
    http_streams_end(s); /* libmicrohttpd must not be stopped with a suspended connection */
    MHD_stop_daemon(s->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd); /* quiesce hands the listening socket to us */
    http_guard_stop(s->guard);
    s->daemon = NULL;
    s->port = 0;
    http_tls_stopped(s);
}

void http_stop(http_server *s)
{
    if (s->daemon == NULL)
        return;
    atomic_store(&s->running, false);
    http_stop_daemons(s);
    SX_INFO("http", "http server stopped");
}

bool http_running(http_server *s)
{
    return atomic_load(&s->running);
}

int http_bound_port(http_server *s)
{
    return s->port;
}

void http_destroy(http_server *s)
{
    if (s == NULL)
        return;
    http_stop(s);
    for (size_t i = 0; i < s->nroutes; i++) {
        for (size_t k = 0; k < s->routes[i].nseg; k++)
            sx_free(s->routes[i].segs[k]);
        sx_free(s->routes[i].pattern);
    }
    sx_free(s->routes);
    http_guard_destroy(s->guard);
    pthread_mutex_destroy(&s->err_mu);
    pthread_mutex_destroy(&s->streams_mu);
    sx_free(s);
}

static int sup_start(void *ctx, sx_err *err)
{
    return http_start(ctx, err);
}

static void sup_stop(void *ctx)
{
    http_stop(ctx);
}

static bool sup_is_ready(void *ctx)
{
    return http_running(ctx);
}

const sup_ops http_sup_ops = {
    .start = sup_start,
    .stop = sup_stop,
    .ready = sup_is_ready,
};
