/*
 * test_static.c — the web UI's file serving rules (api/static.c): which request paths
 * may name a file below the UI's root (no traversal, no dot files, no control
 * characters) and the content type of each kind of file the build writes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/static.h"
#include "tests/lib/testlib.h"

/* Paths of the UI's files that a request may name. */
static const char *safe_paths[] = {"/index.html",
                                   "/assets/index-De2ppmdQ.js",
                                   "/favicon.svg",
                                   "/configs/9b2f6c1e-0d4e-4c3f-9a7b-1f2e3d4c5b6a/history",
                                   "/proxies/envoy-1.example.com",
                                   "/a..b",
                                   "/x/y.z..w"};

TL_TEST(test_plain_paths_are_safe)
{
    for (size_t i = 0; i < sizeof(safe_paths) / sizeof(safe_paths[0]); i++) {
        if (!static_ui_path_safe(safe_paths[i]))
            fail_msg("%s should be safe", safe_paths[i]);
    }
}

TL_TEST(test_traversal_and_hidden_files_are_refused)
{
    const char *bad[] = {
        "/../etc/passwd",
        "/assets/../../etc/passwd",
        "/..",
        "/.",
        "/./index.html",
        "/.git/config",
        "/assets/.env",
        "//index.html",
        "/assets//x.js",
        "/assets/",
        "/",
        "index.html",
        "/a\\..\\b",
        "/a\x01b",
        "/a\x7f",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (static_ui_path_safe(bad[i]))
            fail_msg("\"%s\" should be refused", bad[i]);
    }
    assert_false(static_ui_path_safe(NULL));
}

TL_TEST(test_content_types)
{
    static const struct {
        const char *name, *type;
    } cases[] = {
        {"/index.html", "text/html; charset=utf-8"},
        {"/assets/index-De2ppmdQ.js", "text/javascript; charset=utf-8"},
        {"/assets/index-De2ppmdQ.css", "text/css; charset=utf-8"},
        {"/favicon.svg", "image/svg+xml"},
        {"/assets/x.JSON", "application/json"},
        {"/assets/font.woff2", "font/woff2"},
        {"/assets/map.js.map", "application/json"},
        {"/robots.txt", "text/plain; charset=utf-8"},
        {"/assets/blob.bin", "application/octet-stream"},
        {"/noextension", "application/octet-stream"},
        {"/dir.d/noextension", "application/octet-stream"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(static_ui_content_type(cases[i].name), cases[i].type);
}

TL_MAIN()
