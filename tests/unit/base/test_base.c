/*
 * test_base.c — the bottom layer: error codes and their statuses, buffers, arenas,
 * Prometheus rendering, URL redaction, SHA-256, base64, reading files, decimal numbers,
 * UTF-8 well-formedness.
 */
#include "tests/lib/testlib.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/base/arena.h"
#include "server/base/b64.h"
#include "server/base/buf.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/base/hash.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/num.h"
#include "server/base/metrics.h"
#include "server/base/utf8.h"

TL_TEST(test_err_statuses)
{
    assert_int_equal(sx_code_http_status(SX_ENOTFOUND), 404);
    assert_int_equal(sx_code_http_status(SX_EVALIDATION), 422);
    assert_int_equal(sx_code_http_status(SX_EUNAVAILABLE), 503);
    assert_int_equal(sx_code_http_status(SX_ERATELIMIT), 429);
    assert_int_equal(sx_code_grpc_status(SX_EINVAL), 3);
    assert_int_equal(sx_code_grpc_status(SX_EUNAVAILABLE), 14);
    assert_string_equal(sx_code_name(SX_ECONFLICT), "conflict");
    /* A config another source manages: a conflict with a name of its own. */
    assert_int_equal(sx_code_http_status(SX_EMANAGED), 409);
    assert_int_equal(sx_code_grpc_status(SX_EMANAGED), 9);
    assert_string_equal(sx_code_name(SX_EMANAGED), "managed_by_kubernetes");
    assert_int_equal(sx_code_http_status(SX_EKEYREUSED), 422);
    assert_string_equal(sx_code_name(SX_EKEYREUSED), "idempotency_key_reused");

    sx_err e;
    assert_int_equal(sx_err_set(&e, SX_EINVAL, "bad port %d", 70000), SX_EINVAL);
    sx_err_prefix(&e, "listener %s", "web");
    assert_string_equal(e.message, "listener web: bad port 70000");
    assert_int_equal(e.code, SX_EINVAL);
    /* A NULL err only propagates the code. */
    assert_int_equal(sx_err_set(NULL, SX_EIO, "x"), SX_EIO);
}

TL_TEST(test_buf)
{
    sx_buf b = {0};
    assert_string_equal(sx_buf_cstr(&b), "");
    for (int i = 0; i < 1000; i++)
        sx_buf_printf(&b, "%d,", i);
    assert_true(b.len > 3000);
    assert_memory_equal(b.data, "0,1,2,", 6);
    sx_buf_append(&b, "\0x", 2);
    assert_int_equal(b.data[b.len - 2], '\0');
    char *s = sx_buf_steal(&b);
    assert_null(b.data);
    sx_free(s);
}

/* Makes the file of the mkstemp template path and returns its descriptor; fails the test
 * when it cannot. */
static int temp_file(char *path)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    return fd;
}

TL_TEST(test_buf_read_file)
{
    char path[] = "/tmp/sextant-base-XXXXXX";
    int fd = temp_file(path);
    close(fd);
    tl_write_file(path, "twelve bytes");
    sx_buf b = {0};
    assert_int_equal(sx_buf_read_file(&b, path, SIZE_MAX), 0);
    assert_string_equal(sx_buf_cstr(&b), "twelve bytes");
    sx_buf_free(&b);
    /* Past the limit, more than the limit is read and nothing fails. */
    assert_int_equal(sx_buf_read_file(&b, path, 5), 0);
    assert_true(b.len > 5);
    sx_buf_free(&b);
    unlink(path);
    assert_int_equal(sx_buf_read_file(&b, path, SIZE_MAX), -1);
    assert_int_equal(errno, ENOENT);
    sx_buf_free(&b);
}

TL_TEST(test_base64)
{
    uint8_t out[16];
    size_t len;
    bool clean;
    assert_true(sx_b64_decode("aGn7_w", 6, SX_B64_URL, out, &len, &clean));
    assert_int_equal(len, 4);
    assert_memory_equal(out, "hi\xfb\xff", 4);
    assert_true(clean);
    /* The standard alphabet only where it is allowed. */
    assert_false(sx_b64_decode("aGn7/w", 6, SX_B64_URL, out, &len, &clean));
    assert_true(sx_b64_decode("aGn7/w", 6, SX_B64_ANY, out, &len, &clean));
    assert_memory_equal(out, "hi\xfb\xff", 4);
    /* "aGl" leaves two bits set past the last byte; a lone character is no byte. */
    assert_true(sx_b64_decode("aGl", 3, SX_B64_URL, out, &len, &clean));
    assert_int_equal(len, 2);
    assert_false(clean);
    assert_false(sx_b64_decode("aGk-_", 5, SX_B64_ANY, out, &len, &clean));
    assert_false(sx_b64_decode("aG=k", 4, SX_B64_ANY, out, &len, &clean));

    /* sx_b64_decode_text, base64 as Kubernetes writes it. */
    char text[32];
    size_t tlen = 99;
    /* White space anywhere, padding or none: "hi\xfb\xff" and "hi". */
    assert_true(sx_b64_decode_text(" aGn7\n/w==\n", text, &tlen));
    assert_int_equal(tlen, 4);
    assert_memory_equal(text, "hi\xfb\xff", 5);
    assert_true(sx_b64_decode_text("aGk", text, &tlen));
    assert_int_equal(tlen, 2);
    assert_string_equal(text, "hi");
    assert_true(sx_b64_decode_text("", text, &tlen));
    assert_int_equal(tlen, 0);
    /* The URL alphabet, text after the padding, three "=", a dangling character. */
    tlen = 99;
    assert_false(sx_b64_decode_text("aGn7_w", text, &tlen));
    assert_false(sx_b64_decode_text("aGk=aGk=", text, &tlen));
    assert_false(sx_b64_decode_text("aG===", text, &tlen));
    assert_false(sx_b64_decode_text("aGkxa", text, &tlen));
    assert_int_equal(tlen, 99);
}

TL_TEST(test_parse_digits)
{
    assert_int_equal(sx_parse_digits("6379", 4, 5, 1, 65535), 6379);
    assert_int_equal(sx_parse_digits("00080x", 5, 5, 1, 65535), 80); /* only n bytes count */
    assert_int_equal(sx_parse_digits("000080", 6, 5, 1, 65535), -1); /* too many digits */
    assert_int_equal(sx_parse_digits("65536", 5, 5, 1, 65535), -1);
    assert_int_equal(sx_parse_digits("0", 1, 5, 1, 65535), -1);
    assert_int_equal(sx_parse_digits("0", 1, 5, 0, 9), 0);
    assert_int_equal(sx_parse_digits("", 0, 5, 0, 9), -1);
    assert_int_equal(sx_parse_digits("-1", 2, 5, 0, 9), -1);
    assert_int_equal(sx_parse_digits("1 2", 3, 5, 0, 999), -1);
}

static int cleaned;
static void count_cleanup(void *p)
{
    (void)p;
    cleaned++;
}

TL_TEST(test_arena)
{
    sx_arena *a = sx_arena_create();
    char *big = sx_arena_alloc(a, 100000);
    big[99999] = 'x';
    for (int i = 0; i < 5000; i++) {
        char *s = sx_arena_printf(a, "item-%d", i);
        assert_string_equal(s, i == 4999 ? "item-4999" : s);
    }
    int token;
    sx_arena_defer(a, count_cleanup, &token);
    sx_arena_defer(a, count_cleanup, &token);
    assert_null(sx_arena_defer(a, count_cleanup, NULL));
    cleaned = 0;
    sx_arena_destroy(a);
    assert_int_equal(cleaned, 2);
}

/* Cleanups run newest first, so an object registered after what it points into (a
 * value read out of a query result, say) is released before it. */
static char order[8];
static void record_cleanup(void *p)
{
    size_t n = strlen(order);
    order[n] = *(const char *)p;
    order[n + 1] = '\0';
}

TL_TEST(test_arena_cleanup_order)
{
    sx_arena *a = sx_arena_create();
    static const char first = '1', second = '2', third = '3';
    assert_ptr_equal(sx_arena_defer(a, record_cleanup, (void *)&first), &first);
    sx_arena_defer(a, record_cleanup, (void *)&second);
    sx_arena_defer(a, record_cleanup, (void *)&third);
    order[0] = '\0';
    sx_arena_destroy(a);
    assert_string_equal(order, "321");
}

TL_TEST(test_metrics_render)
{
    sx_metrics *r = sx_metrics_create();
    sx_metric *c = sx_metrics_counter(r, "sx_requests_total", "Requests", "method,code");
    sx_metric *g = sx_metrics_gauge(r, "sx_up", "Up", NULL);
    const double bounds[] = {0.1, 1};
    sx_metric *h = sx_metrics_histogram(r, "sx_latency_seconds", "Latency", NULL, bounds, 2);
    assert_ptr_equal(sx_metrics_counter(r, "sx_requests_total", "again", "method,code"), c);
    sx_metric_inc(c, (const char *[]){"GET", "200"});
    sx_metric_inc(c, (const char *[]){"GET", "200"});
    sx_metric_inc(c, (const char *[]){"POST", "a\"b"});
    sx_metric_set(g, NULL, 1);
    sx_metric_observe(h, NULL, 0.05);
    sx_metric_observe(h, NULL, 0.5);
    sx_metric_observe(h, NULL, 5);
    assert_true(sx_metric_value(c, (const char *[]){"GET", "200"}) == 2);
    sx_buf out = {0};
    sx_metrics_render(r, &out);
    static const char *const want[] = {"# TYPE sx_requests_total counter\n",
                                       "sx_requests_total{method=\"GET\",code=\"200\"} 2\n",
                                       "sx_requests_total{method=\"POST\",code=\"a\\\"b\"} 1\n",
                                       "sx_up 1\n",
                                       "sx_latency_seconds_bucket{le=\"0.1\"} 1\n",
                                       "sx_latency_seconds_bucket{le=\"1\"} 2\n",
                                       "sx_latency_seconds_bucket{le=\"+Inf\"} 3\n",
                                       "sx_latency_seconds_count 3\n",
                                       NULL};
    tl_assert_text(sx_buf_cstr(&out), want, NULL);
    sx_buf_free(&out);
    sx_metrics_destroy(r);
}

TL_TEST(test_redact)
{
    char out[256];
    assert_string_equal(sx_redact_url("postgresql://app:s3cret@db:5432/x", out, sizeof(out)),
                        "postgresql://app:***@db:5432/x");
    assert_string_equal(sx_redact_url("redis://:pw@127.0.0.1:6379/0", out, sizeof(out)),
                        "redis://:***@127.0.0.1:6379/0");
    assert_string_equal(sx_redact_url("host=db password=hunter2 user=x", out, sizeof(out)),
                        "host=db password=*** user=x");
    assert_string_equal(sx_redact_url("postgresql://app@db/x", out, sizeof(out)),
                        "postgresql://app@db/x");
    assert_null(
        strstr(sx_redact_url("postgresql://u:p%40ss@h/d?password=zz", out, sizeof(out)), "zz"));
}

TL_TEST(test_sha256)
{
    char hex[SX_SHA256_HEX_LEN + 1];
    sx_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TL_TEST(test_fielderrs)
{
    sx_fielderrs l = {0};
    for (int i = 0; i < 20; i++)
        sx_fielderrs_add(&l, "spec.listeners[0].port", "must be between %d and %d", 1, 65535);
    sx_fielderrs_add(&l, "", "document is empty");
    assert_int_equal(l.count, 21);
    json_t *j = sx_fielderrs_to_json(&l);
    assert_int_equal(json_array_size(j), 21);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "path")),
                        "spec.listeners[0].port");
    json_decref(j);
    char *joined = sx_fielderrs_join(&l);
    assert_non_null(strstr(joined, "spec.listeners[0].port: must be between 1 and 65535; "));
    sx_free(joined);
    sx_fielderrs_free(&l);
    assert_int_equal(l.count, 0);
}

/* Valid UTF-8: empty, ASCII, and characters of two, three and four bytes up to U+10FFFF. */
static const char *valid_utf8[] = {"",
                                   "edge",
                                   "shop/web",
                                   "caf\xc3\xa9",
                                   "\xe2\x82\xac",
                                   "\xf0\x9f\x98\x80",
                                   "\xed\x9f\xbf",
                                   "\xf4\x8f\xbf\xbf"};

TL_TEST(test_utf8)
{
    for (size_t i = 0; i < sizeof(valid_utf8) / sizeof(valid_utf8[0]); i++)
        assert_true(sx_utf8_valid(valid_utf8[i]));
    const char *bad[] = {
        "\xff",             /* never a UTF-8 byte */
        "\x80",             /* a continuation byte first */
        "caf\xc3",          /* cut short */
        "\xc3\x28",         /* a lead byte without its continuation */
        "\xc0\xaf",         /* overlong "/" */
        "\xe0\x80\xaf",     /* overlong "/" again */
        "\xed\xa0\x80",     /* a surrogate, U+D800 */
        "\xf4\x90\x80\x80", /* past U+10FFFF */
        "\xf5\x80\x80\x80", /* a lead byte past U+10FFFF */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(sx_utf8_valid(bad[i]));
    assert_false(sx_utf8_valid(NULL));
}

/* Ill-formed parts become U+FFFD, one per maximal ill-formed subpart; the rest stays. */
TL_TEST(test_utf8_sanitize)
{
    for (size_t i = 0; i < sizeof(valid_utf8) / sizeof(valid_utf8[0]); i++) {
        char *s = sx_utf8_sanitize(valid_utf8[i]);
        assert_string_equal(s, valid_utf8[i]);
        sx_free(s);
    }
#define FFFD "\xef\xbf\xbd"
    const char *cases[][2] = {
        {"a\xff"
         "b",
         "a" FFFD "b"},                                               /* never a UTF-8 byte */
        {"\x80\x80", FFFD FFFD},                                      /* stray continuation bytes */
        {"caf\xc3", "caf" FFFD},                                      /* cut short at the end */
        {"\xe2\x82(", FFFD "("},                                      /* cut short: one U+FFFD */
        {"\xf0\x9f\x98", FFFD},                                       /* four-byte form cut short */
        {"\xc0\xaf/", FFFD FFFD "/"},                                 /* overlong "/" */
        {"\xe0\x80\xaf", FFFD FFFD FFFD},                             /* overlong three-byte "/" */
        {"x\xed\xa0\x80y", "x" FFFD FFFD FFFD "y"},                   /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},                    /* past U+10FFFF */
        {"\xc3\xa9\xff\xe2\x82\xac", "\xc3\xa9" FFFD "\xe2\x82\xac"}, /* valid kept */
    };
#undef FFFD
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *s = sx_utf8_sanitize(cases[i][0]);
        assert_string_equal(s, cases[i][1]);
        assert_true(sx_utf8_valid(s));
        sx_free(s);
    }
    assert_null(sx_utf8_sanitize(NULL));
    sx_arena *a = sx_arena_create();
    const char *same = "caf\xc3\xa9";
    assert_ptr_equal(sx_utf8_sanitize_in(a, same), same);
    assert_string_equal(sx_utf8_sanitize_in(a, "/api/\xff"), "/api/\xef\xbf\xbd");
    sx_arena_destroy(a);
}

/* A log message with ill-formed UTF-8 (outside text, or a message cut inside a character)
 * is still written, with U+FFFD, and its fields are kept. */
TL_TEST(test_log_ill_formed_utf8)
{
    char path[] = "/tmp/sx-base-logXXXXXX";
    int fd = temp_file(path);
    sx_log_set_fd(fd);
    sx_log_fields(SX_LOG_WARN, "test", json_pack("{s:s}", "route", "/x"), "refused DELETE /a%s",
                  "\xff"
                  "b");
    char longmsg[3000];
    memset(longmsg, 'x', sizeof(longmsg));
    memcpy(longmsg + 2045, "\xe2\x82\xac", 3); /* cut after its first two bytes */
    longmsg[sizeof(longmsg) - 1] = '\0';
    sx_log(SX_LOG_WARN, "test", "%s", longmsg);
    sx_log_set_fd(2);
    sx_buf b = {0};
    assert_int_equal(sx_buf_read_file(&b, path, SIZE_MAX), 0);
    close(fd);
    unlink(path);
    char *nl = strchr(b.data, '\n');
    assert_non_null(nl);
    *nl = '\0';
    json_error_t je;
    json_t *first = json_loads(b.data, 0, &je);
    assert_non_null(first);
    assert_string_equal(json_string_value(json_object_get(first, "msg")),
                        "refused DELETE /a\xef\xbf\xbd"
                        "b");
    assert_string_equal(json_string_value(json_object_get(first, "route")), "/x");
    json_decref(first);
    json_t *second = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, &je);
    assert_non_null(second);
    const char *msg = json_string_value(json_object_get(second, "msg"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "xxx\xef\xbf\xbd"));
    json_decref(second);
    sx_buf_free(&b);
}

TL_MAIN()
