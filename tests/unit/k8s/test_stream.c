/*
 * test_stream.c — the watch-stream parser: the same events come out whatever the chunk
 * sizes the bytes arrive in, a line over the cap fails as soon as it passes the cap, bad
 * JSON and a callback's refusal end the stream, and a last line without its newline is
 * parsed at the end.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/buf.h"
#include "server/base/mem.h"
#include "server/k8s/stream.h"

typedef struct collect {
    json_t *events; /* array of what the callback received */
    int refuse_at;  /* refuse the n-th event (1-based), 0: never */
} collect;

static int on_line(void *ctx, json_t *v, sx_err *err)
{
    collect *c = ctx;
    json_array_append(c->events, v);
    if (c->refuse_at && (int)json_array_size(c->events) == c->refuse_at)
        return sx_err_set(err, SX_ECONFLICT, "refused");
    return 0;
}

/* A watch stream of three events, the second long (escapes and two-byte UTF-8 that a
 * chunk may cut in half), with a blank line and a CRLF. */
static char *sample(json_t **want)
{
    const char *t1 = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"HTTPRoute\",\"metadata\":"
                     "{\"name\":\"a\",\"namespace\":\"n\",\"resourceVersion\":\"10\"}}}";
    const char *t3 = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
                     "{\"resourceVersion\":\"12\"}}}";
    sx_buf t2 = {0};
    sx_buf_puts(&t2, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Service\",\"metadata\":"
                     "{\"name\":\"b\",\"namespace\":\"n\"},\"spec\":{\"note\":\"");
    for (int i = 0; i < 300; i++)
        sx_buf_puts(&t2, "x\\u00e9\xc3\xa9");
    sx_buf_puts(&t2, "\"}}}");
    *want = json_array();
    json_array_append_new(*want, json_loads(t1, 0, NULL));
    json_array_append_new(*want, json_loads(t2.data, 0, NULL));
    json_array_append_new(*want, json_loads(t3, 0, NULL));
    for (size_t i = 0; i < 3; i++)
        assert_non_null(json_array_get(*want, i));
    sx_buf b = {0};
    sx_buf_printf(&b, "%s\n\n%s\r\n%s\n", t1, t2.data, t3);
    sx_buf_free(&t2);
    return sx_buf_steal(&b);
}

TL_TEST(test_any_chunk_size)
{
    json_t *want;
    char *text = sample(&want);
    size_t len = strlen(text);
    assert_true(len > 2000);
    for (size_t chunk = 1; chunk <= len; chunk++) {
        collect c = {.events = json_array()};
        k8s_stream s;
        k8s_stream_init(&s, 64 * 1024, on_line, &c);
        for (size_t off = 0; off < len; off += chunk) {
            size_t n = len - off < chunk ? len - off : chunk;
            TL_OK(k8s_stream_feed(&s, text + off, n, &e_));
        }
        TL_OK(k8s_stream_end(&s, &e_));
        if (!json_equal(c.events, want)) {
            fail_msg("chunks of %zu bytes gave other events", chunk);
        }
        assert_int_equal(s.lines, 3);
        k8s_stream_free(&s);
        json_decref(c.events);
    }
    json_decref(want);
    sx_free(text);
}

TL_TEST(test_line_over_cap)
{
    /* Lines of exactly the cap pass; one byte more fails before its newline arrives. */
    const size_t cap = 100;
    sx_buf ok = {0};
    sx_buf_puts(&ok, "{\"k\":\"");
    while (ok.len < cap - 2)
        sx_buf_putc(&ok, 'a');
    sx_buf_puts(&ok, "\"}");
    assert_int_equal(ok.len, cap);
    for (size_t chunk = 1; chunk <= 2 * cap + 2; chunk++) {
        collect c = {.events = json_array()};
        k8s_stream s;
        k8s_stream_init(&s, cap, on_line, &c);
        sx_buf in = {0};
        sx_buf_printf(&in, "%s\n%s", ok.data, ok.data);
        sx_buf_puts(&in, "aaa"); /* the second line grows past the cap ... */
        size_t fail_at = 0;
        int rc = 0;
        sx_err e;
        for (size_t off = 0; off < in.len && rc == 0; off += chunk) {
            size_t n = in.len - off < chunk ? in.len - off : chunk;
            rc = k8s_stream_feed(&s, in.data + off, n, &e);
            fail_at = off + n;
        }
        /* ... and fails without a newline ever coming. */
        assert_int_equal(rc, SX_ETOOLARGE);
        assert_true(fail_at > cap + 1 + cap);
        assert_non_null(strstr(e.message, "larger than 100 bytes"));
        assert_int_equal(json_array_size(c.events), 1);
        /* The stream stays failed. */
        assert_int_equal(k8s_stream_feed(&s, "\n{}\n", 4, &e), SX_ETOOLARGE);
        assert_int_equal(k8s_stream_end(&s, &e), SX_ETOOLARGE);
        assert_int_equal(json_array_size(c.events), 1);
        /* A reset (a new connection) works again. */
        k8s_stream_reset(&s);
        TL_OK(k8s_stream_feed(&s, "{\"again\":1}\n", 12, &e_));
        assert_int_equal(json_array_size(c.events), 2);
        sx_buf_free(&in);
        k8s_stream_free(&s);
        json_decref(c.events);
    }
    sx_buf_free(&ok);
}

TL_TEST(test_bad_json_and_refusal)
{
    collect c = {.events = json_array()};
    k8s_stream s;
    k8s_stream_init(&s, 1024, on_line, &c);
    sx_err e;
    assert_int_equal(k8s_stream_feed(&s, "{\"a\":1}\n{\"a\":\n", 15, &e), SX_EINVAL);
    assert_non_null(strstr(e.message, "watch event 2 is not JSON"));
    assert_int_equal(json_array_size(c.events), 1);
    k8s_stream_free(&s);
    json_decref(c.events);

    c = (collect){.events = json_array(), .refuse_at = 2};
    k8s_stream_init(&s, 1024, on_line, &c);
    assert_int_equal(k8s_stream_feed(&s, "{}\n{}\n{}\n", 9, &e), SX_ECONFLICT);
    assert_string_equal(e.message, "refused");
    assert_int_equal(json_array_size(c.events), 2);
    k8s_stream_free(&s);
    json_decref(c.events);
}

TL_TEST(test_last_line_without_newline)
{
    collect c = {.events = json_array()};
    k8s_stream s;
    k8s_stream_init(&s, 1024, on_line, &c);
    TL_OK(k8s_stream_feed(&s, "{\"n\":1}\n{\"n\"", 12, &e_));
    TL_OK(k8s_stream_feed(&s, ":2}", 3, &e_));
    assert_int_equal(json_array_size(c.events), 1);
    TL_OK(k8s_stream_end(&s, &e_));
    json_t *want = tl_json("[{'n':1},{'n':2}]");
    tl_assert_json_equal(c.events, want);
    /* Nothing left: ending again adds nothing. */
    TL_OK(k8s_stream_end(&s, &e_));
    assert_int_equal(json_array_size(c.events), 2);
    json_decref(want);
    k8s_stream_free(&s);
    json_decref(c.events);
}

TL_MAIN()
