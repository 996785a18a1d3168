/*
 * http_request.c — inside a handler: the request's method, path, parameters, headers,
 * query, body, arena and peer address, and the answers (a body, a JSON document, the
 * error shape).
 *
 * An answer is queued exactly once: http_resp_begin marks the request answered and a
 * second answer is dropped and logged as a bug. Every error body is written by
 * http_respond_problem_raw, reached through http_respond_err from an sx_err, so the
 * shape {"error":{"code","message","details"}} has one writer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/http_internal.h"
#include "server/base/log.h"
#include "server/base/utf8.h"

/* ------------------------------------------------------------------ responses */

void http_resp_add_headers(http_request *r, struct MHD_Response *resp, const char *content_type)
{
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    for (size_t i = 0; i < r->nheaders; i++)
        MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
}

bool http_resp_begin(http_request *r, int status)
{
    if (r->responded) {
        SX_ERROR("http", "bug: second response to %s %s (request %s) dropped", r->method, r->path,
                 r->id);
        return false;
    }
    r->responded = true;
    r->status = status;
    return true;
}

void http_req_set_header(http_request *r, const char *name, const char *value)
{
    if (r->nheaders == MAX_RESP_HEADERS) {
        SX_ERROR("http", "too many response headers; %s dropped", name);
        return;
    }
    r->headers[r->nheaders].name = sx_arena_strdup(r->arena, name);
    r->headers[r->nheaders].value = sx_arena_strdup(r->arena, value);
    r->nheaders++;
}

void http_respond(http_request *r, int status, const char *content_type, const void *body,
                  size_t len)
{
    if (!http_resp_begin(r, status))
        return;
    r->bytes_out = len;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)(len ? body : ""), MHD_RESPMEM_MUST_COPY);
    if (resp == NULL) {
        SX_ERROR("http", "could not create a response for request %s", r->id);
        r->status = 500;
        return;
    }
    http_resp_add_headers(r, resp, content_type);
    if (MHD_queue_response(r->conn, (unsigned int)status, resp) != MHD_YES)
        SX_ERROR("http", "could not queue the response to request %s", r->id);
    MHD_destroy_response(resp);
}

void http_respond_json(http_request *r, int status, json_t *body)
{
    if (body && r->json_filter)
        body = r->json_filter(body);
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (text == NULL) {
        static const char fallback[] = "{\"error\":{\"code\":\"internal\",\"message\":\"could not "
                                       "encode the response\",\"details\":[]}}";
        http_respond(r, 500, "application/json", fallback, sizeof(fallback) - 1);
        return;
    }
    http_respond(r, status, "application/json", text, strlen(text));
    free(text);
}

void http_respond_problem_raw(http_request *r, int status, const char *code_name,
                              const char *message, json_t *details)
{
    json_t *err = json_pack("{s:s,s:s,s:o}", "code", code_name, "message", message, "details",
                            details ? details : json_array());
    http_respond_json(r, status, json_pack("{s:o}", "error", err));
}

json_t *http_err_details(const sx_err *err)
{
    json_t *d = json_array();
    if (err->detail[0])
        json_array_append_new(d, json_pack("{s:s,s:s}", "path", "", "message", err->detail));
    if (err->hint[0])
        json_array_append_new(d, json_pack("{s:s,s:s}", "path", "", "message", err->hint));
    return d;
}

void http_respond_err(http_request *r, const sx_err *err, json_t *details)
{
    int code = err->code == SX_OK ? SX_EINTERNAL : err->code;
    const char *message = err->message[0] ? err->message : sx_code_name(code);
    int status = sx_code_http_status(code);
    if (status == 503)
        http_req_set_header(r, "Retry-After", "1");
    if (status >= 500)
        sx_log_fields(
            SX_LOG_ERROR, "http",
            json_pack("{s:s,s:s,s:i}", "request_id", r->id, "route", r->route, "status", status),
            "%s %s failed: %s", r->method, r->path, message);
    http_respond_problem_raw(r, status, sx_code_name(code), message,
                             details ? details : http_err_details(err));
}

/* ------------------------------------------------------------------ request accessors */

const char *http_req_method(const http_request *r)
{
    return r->method;
}

const char *http_req_path(const http_request *r)
{
    return r->path;
}

const char *http_req_route(const http_request *r)
{
    return r->route;
}

int http_req_status(const http_request *r)
{
    return r->responded ? r->status : 0;
}

const char *http_req_id(const http_request *r)
{
    return r->id;
}

const char *http_req_client_id(const http_request *r)
{
    return r->client_id;
}

const char *http_req_param(const http_request *r, const char *name)
{
    for (size_t i = 0; i < r->nparams; i++)
        if (strcmp(r->param_names[i], name) == 0)
            return r->param_values[i];
    return NULL;
}

/* Header values and query arguments are outside text on their way into SQL text and
 * JSON, which both refuse ill-formed UTF-8: it becomes U+FFFD here. */
const char *http_req_header(http_request *r, const char *name)
{
    return sx_utf8_sanitize_in(r->arena,
                               MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name));
}

const char *http_req_query(http_request *r, const char *name)
{
    return sx_utf8_sanitize_in(r->arena,
                               MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name));
}

const char *http_req_body(const http_request *r, size_t *len)
{
    if (len)
        *len = r->body.len;
    return sx_buf_cstr(&r->body);
}

sx_arena *http_req_arena(http_request *r)
{
    return r->arena;
}

/* The peer address of conn as text into out ("" when unknown). */
static void peer_address(struct MHD_Connection *conn, char out[INET6_ADDRSTRLEN])
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  INET6_ADDRSTRLEN);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        /* A v4 client on a dual-stack socket is shown as the v4 address it is. */
        if (IN6_IS_ADDR_V4MAPPED(a6))
            inet_ntop(AF_INET, &a6->s6_addr[12], out, INET6_ADDRSTRLEN);
        else
            inet_ntop(AF_INET6, a6, out, INET6_ADDRSTRLEN);
    }
}

const char *http_req_remote_ip(http_request *r)
{
    if (r->remote_ip[0] == '\0')
        peer_address(r->conn, r->remote_ip);
    return r->remote_ip;
}

void http_req_set_app_data(http_request *r, void *data)
{
    r->app_data = data;
}

void *http_req_app_data(const http_request *r)
{
    return r->app_data;
}

void http_req_set_json_filter(http_request *r, json_t *(*filter)(json_t *body))
{
    r->json_filter = filter;
}
