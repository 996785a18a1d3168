/*
 * test_http_stream.c — streamed responses of the HTTP server (api/http.c,
 * http_respond_stream) over real sockets: a stream with nothing to send parks without
 * its read function being called again (no busy loop), a wake from another thread
 * resumes it, a wake that comes while it is being read is not lost, the body ends when
 * read says so, and http_stop ends every parked stream promptly (libmicrohttpd must
 * not be stopped with a suspended connection) with done called once per stream.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
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
#include "tests/lib/testlib.h"

#define NSTREAMS 24

/* One stream's producer: text waiting to be read, and what happened to it. */
typedef struct producer {
    pthread_mutex_t mu;
    sx_buf pending;
    bool end;
    atomic_int reads;
    atomic_int dones;
    _Atomic(http_stream *) hs;
} producer;

static producer prods[NSTREAMS];
static atomic_int nprods;

static long prod_read(void *ctx, char *buf, size_t max)
{
    producer *p = ctx;
    atomic_fetch_add(&p->reads, 1);
    pthread_mutex_lock(&p->mu);
    long n = 0;
    if (p->pending.len) {
        n = (long)(p->pending.len < max ? p->pending.len : max);
        memcpy(buf, p->pending.data, (size_t)n);
        memmove(p->pending.data, p->pending.data + n, p->pending.len - (size_t)n);
        p->pending.len -= (size_t)n;
    } else if (p->end) {
        n = HTTP_STREAM_END;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void prod_done(void *ctx)
{
    producer *p = ctx;
    atomic_fetch_add(&p->dones, 1);
}

static void handle_stream(http_request *r, void *ud)
{
    (void)ud;
    int i = atomic_fetch_add(&nprods, 1);
    assert_true(i < NSTREAMS);
    producer *p = &prods[i];
    http_stream *hs = http_respond_stream(r, 200, "text/plain", prod_read, prod_done, p);
    assert_non_null(hs);
    atomic_store(&p->hs, hs);
}

static void push(producer *p, const char *text, bool end)
{
    pthread_mutex_lock(&p->mu);
    if (text)
        sx_buf_puts(&p->pending, text);
    p->end = end;
    pthread_mutex_unlock(&p->mu);
    http_stream_wake(atomic_load(&p->hs));
}

static int port;

static int client_open(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    static const char req[] = "GET /stream HTTP/1.1\r\nHost: test\r\n\r\n";
    assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    return fd;
}

/* Reads from fd into b until text appears in it (true) or ms pass or the peer closes. */
static bool client_wait(int fd, sx_buf *b, const char *text, int ms)
{
    long long end = tl_now_ms() + ms;
    while (strstr(sx_buf_cstr(b), text) == NULL) {
        long long left = end - tl_now_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return strstr(sx_buf_cstr(b), text) != NULL;
        sx_buf_append(b, buf, (size_t)n);
    }
    return true;
}

static void wait_streams(int n)
{
    for (long long end = tl_now_ms() + 5000; tl_now_ms() < end; tl_sleep_ms(5)) {
        int ready = 0;
        for (int i = 0; i < atomic_load(&nprods); i++)
            ready += atomic_load(&prods[i].hs) != NULL;
        if (ready >= n)
            return;
    }
    fail_msg("%d streams were not answered", n);
}

TL_TEST(test_park_wake_end_stop)
{
    for (int i = 0; i < NSTREAMS; i++)
        pthread_mutex_init(&prods[i].mu, NULL);
    sextant_config *cfg = tl_http_config(&port);
    sx_metrics *m = sx_metrics_create();
    http_server *s = http_create(cfg, m, NULL);
    sx_err err;
    assert_int_equal(http_route(s, "GET", "/stream", handle_stream, NULL, &err), 0);
    assert_int_equal(http_start(s, &err), 0);

    /* One stream: headers, then nothing; it parks instead of being read in a loop. */
    int fd = client_open();
    sx_buf got = {0};
    assert_true(client_wait(fd, &got, "\r\n\r\n", 2000));
    wait_streams(1);
    producer *p = &prods[0];
    tl_sleep_ms(300);
    int reads = atomic_load(&p->reads);
    tl_sleep_ms(300);
    assert_int_equal(atomic_load(&p->reads), reads); /* parked: not read while idle */
    assert_true(reads <= 3);

    /* Woken from this thread: the text arrives; parked again, woken again. */
    push(p, "hello-1\n", false);
    assert_true(client_wait(fd, &got, "hello-1", 2000));
    tl_sleep_ms(100);
    push(p, "hello-2\n", false);
    assert_true(client_wait(fd, &got, "hello-2", 2000));
    /* Many wakes in a row: all text arrives, in order. */
    for (int i = 0; i < 200; i++) {
        char t[32];
        snprintf(t, sizeof(t), "burst-%03d\n", i);
        push(p, t, false);
    }
    assert_true(client_wait(fd, &got, "burst-199", 3000));
    assert_true(strstr(sx_buf_cstr(&got), "burst-000") < strstr(sx_buf_cstr(&got), "burst-199"));

    /* The producer ends the body: the chunked terminator, and done once. */
    push(p, "bye\n", true);
    assert_true(client_wait(fd, &got, "0\r\n\r\n", 2000));
    for (long long end = tl_now_ms() + 2000; atomic_load(&p->dones) == 0 && tl_now_ms() < end;)
        tl_sleep_ms(5);
    assert_int_equal(atomic_load(&p->dones), 1);
    close(fd);
    sx_buf_free(&got);

    /* Parked streams when the server stops: each body ends, done runs once each. */
    int fds[NSTREAMS - 1];
    int n = NSTREAMS - 1;
    for (int i = 0; i < n; i++)
        fds[i] = client_open();
    wait_streams(NSTREAMS);
    tl_sleep_ms(100);
    long long t0 = tl_now_ms();
    http_stop(s);
    long long took = tl_now_ms() - t0;
    assert_true(took < 2000);
    for (int i = 1; i < NSTREAMS; i++)
        assert_int_equal(atomic_load(&prods[i].dones), 1);
    for (int i = 0; i < n; i++) {
        sx_buf b = {0};
        client_wait(fds[i], &b, "\r\n0\r\n\r\n", 1000); /* ended, or at least closed */
        close(fds[i]);
        sx_buf_free(&b);
    }
    assert_int_equal(atomic_load(&p->dones), 1);

    http_destroy(s);
    sx_metrics_destroy(m);
    config_free(cfg);
    for (int i = 0; i < NSTREAMS; i++) {
        sx_buf_free(&prods[i].pending);
        pthread_mutex_destroy(&prods[i].mu);
    }
}

TL_MAIN()
