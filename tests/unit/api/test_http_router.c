/*
 * test_http_router.c — how the HTTP server (api/http.c) splits and decodes a request's
 * path, over real sockets: the path is split at the slashes the client sent and each
 * segment decoded after, so a parameter holds a slash sent as %2F (the group "shop/web"
 * of /g/shop%2Fweb/rollback) while an unencoded slash still separates segments; a
 * literal segment does not match its encoded form with a slash in it; a '%' without two
 * hex digits stays as sent; UTF-8 decodes; a segment that decodes to a control
 * character (%00 above all, which would cut the value short) or to bytes that are not
 * UTF-8 is refused with a 400 in the usual error shape before any handler runs; query
 * arguments and http_req_path stay decoded as before.
 */
#include "tests/lib/testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/http.h"
#include "server/base/buf.h"
#include "server/base/metrics.h"
#include "server/config.h"

static int port;
static atomic_int handled; /* handler calls, to show that refused paths reach none */

/* Answers with what the router gave the handler. */
static void echo(http_request *r, void *ud)
{
    (void)ud;
    atomic_fetch_add(&handled, 1);
    const char *q = http_req_query(r, "q");
    const char *g = http_req_param(r, "group");
    http_respond_json(r, 200,
                      json_pack("{s:s,s:s?,s:s,s:s?}", "route", http_req_route(r), "group", g,
                                "path", http_req_path(r), "q", q));
}

/* One request over a new connection: the status, and the body parsed into *body (NULL
 * when it is not JSON). */
static int get(const char *path, json_t **body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    char req[1024];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
                     path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    sx_buf b = {0};
    char buf[4096];
    ssize_t got;
    while ((got = read(fd, buf, sizeof(buf))) > 0)
        sx_buf_append(&b, buf, (size_t)got);
    close(fd);
    const char *text = sx_buf_cstr(&b);
    int status = 0;
    assert_int_equal(sscanf(text, "HTTP/1.1 %d", &status), 1);
    const char *start = strstr(text, "\r\n\r\n");
    *body = start ? json_loads(start + 4, 0, NULL) : NULL;
    sx_buf_free(&b);
    return status;
}

static const char *str(json_t *j, const char *key)
{
    return json_string_value(json_object_get(j, key));
}

/* get() of a path that must route to pattern with group (NULL: none). */
static void routes_to(const char *path, const char *pattern, const char *group)
{
    json_t *j = NULL;
    int status = get(path, &j);
    if (status != 200)
        print_message("%s: status %d\n", path, status);
    assert_int_equal(status, 200);
    assert_non_null(j);
    assert_string_equal(str(j, "route"), pattern);
    if (group)
        assert_string_equal(str(j, "group"), group);
    else
        assert_null(str(j, "group"));
    json_decref(j);
}

/* get() of a path that must be answered status with error code, no handler run. */
static void refused(const char *path, int want, const char *code)
{
    int before = atomic_load(&handled);
    json_t *j = NULL;
    int status = get(path, &j);
    const char *got = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    if (status != want || got == NULL || strcmp(got, code) != 0 || atomic_load(&handled) != before)
        print_message("%s: status %d, code %s\n", path, status, got ? got : "(none)");
    assert_int_equal(status, want);
    assert_non_null(j);
    assert_string_equal(got, code);
    assert_int_equal(atomic_load(&handled), before);
    json_decref(j);
}

TL_TEST(test_router)
{
    sextant_config *cfg = tl_http_config(&port);
    sx_metrics *m = sx_metrics_create();
    http_server *s = http_create(cfg, m, NULL);
    sx_err err;
    assert_int_equal(http_route(s, "POST", "/g/{group}/rollback", echo, NULL, &err), 0);
    assert_int_equal(http_route(s, "GET", "/g/{group}/rollback", echo, NULL, &err), 0);
    assert_int_equal(http_route(s, "GET", "/g/{group}", echo, NULL, &err), 0);
    assert_int_equal(http_route(s, "GET", "/g/{group}/x/{other}", echo, NULL, &err), 0);
    assert_int_equal(http_route(s, "GET", "/lit/a/b", echo, NULL, &err), 0);
    assert_int_equal(http_start(s, &err), 0);

    /* An encoded slash stays inside its segment, in either case of hex. */
    routes_to("/g/shop%2Fweb/rollback", "/g/{group}/rollback", "shop/web");
    routes_to("/g/shop%2fweb", "/g/{group}", "shop/web");
    routes_to("/g/a%2Fb%2Fc/x/y", "/g/{group}/x/{other}", "a/b/c");
    /* An unencoded one separates segments, as always. */
    routes_to("/g/shop/rollback", "/g/{group}/rollback", "shop");
    json_t *j = NULL;
    assert_int_equal(get("/g/shop/web/rollback", &j), 404);
    json_decref(j);
    /* Literal segments match decoded too, but never across an encoded slash. */
    routes_to("/lit/%61/b", "/lit/a/b", NULL);
    assert_int_equal(get("/lit/a%2Fb", &j), 404);
    json_decref(j);
    /* Other escapes decode; a '%' without two hex digits stays as it was sent. */
    routes_to("/g/a%20b", "/g/{group}", "a b");
    routes_to("/g/caf%C3%A9", "/g/{group}", "caf\xc3\xa9");
    routes_to("/g/50%25", "/g/{group}", "50%");
    routes_to("/g/%ZZ%2", "/g/{group}", "%ZZ%2");
    routes_to("/g/%2e%2e", "/g/{group}", "..");

    /* The path as handlers read it is decoded whole; query arguments decode as before. */
    assert_int_equal(get("/g/shop%2Fweb?q=shop%2Fweb%20x", &j), 200);
    assert_string_equal(str(j, "path"), "/g/shop/web");
    assert_string_equal(str(j, "group"), "shop/web");
    assert_string_equal(str(j, "q"), "shop/web x");
    json_decref(j);

    /* Segments that no handler could carry: refused before routing, even where no route
     * would match. */
    static const char *const unfit[] = {"/g/a%00b/rollback", "/g/%0A",      "/g/a%7Fb", "/g/%FF",
                                        "/g/%C0%AF",         "/nowhere/%00"};
    for (size_t i = 0; i < sizeof(unfit) / sizeof(unfit[0]); i++)
        refused(unfit[i], 400, "invalid_argument");
    assert_int_equal(get("/g/a%00b", &j), 400);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
               "malformed path: segment 2"));
    json_decref(j);

    http_destroy(s);
    sx_metrics_destroy(m);
    config_free(cfg);
}

TL_MAIN()
