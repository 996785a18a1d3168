/*
 * test_pg_link.c — the shared picture of the PostgreSQL server (storage/pg_link.c),
 * what needs no server: libpq's multi-line errors made one line with every host kept,
 * the back-off within its bounds, and watchers called when a connection succeeds after
 * a loss (and only then), never after they were removed.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "storage/pg_link.h"

TL_TEST(test_error_text_keeps_every_host)
{
    char out[512];
    const char *two_hosts =
        "connection to server at \"127.0.0.1\", port 5432 failed: Connection refused\n"
        "\tIs the server running on that host and accepting TCP/IP connections?\n"
        "connection to server at \"127.0.0.1\", port 5433 failed: session is read-only\n";
    assert_string_equal(pg_link_error_text(out, sizeof(out), two_hosts),
                        "connection to server at \"127.0.0.1\", port 5432 failed: Connection "
                        "refused; Is the server running on that host and accepting TCP/IP "
                        "connections?; connection to server at \"127.0.0.1\", port 5433 "
                        "failed: session is read-only");
    assert_string_equal(pg_link_error_text(out, sizeof(out), "one line\n"), "one line");
    assert_string_equal(pg_link_error_text(out, sizeof(out), NULL), "");
    assert_string_equal(pg_link_error_text(out, sizeof(out), "\n\n  \n"), "");
    /* Truncated, never overflowing. */
    assert_string_equal(pg_link_error_text(out, 8, "abcdefghij\nxyz"), "abcdefg");
}

TL_TEST(test_backoff_bounds)
{
    pg_link_options o = {.backoff_min_ms = 50, .backoff_max_ms = 300};
    pg_link *k = pg_link_create(&o);
    int steps[6], ms = 0;
    for (int i = 0; i < 6; i++)
        steps[i] = ms = pg_link_backoff_next(k, ms);
    int want[] = {50, 100, 200, 300, 300, 300};
    assert_memory_equal(steps, want, sizeof(want));
    assert_int_equal(pg_link_backoff_min(k), 50);
    assert_int_equal(pg_link_backoff_max(k), 300);
    pg_link_destroy(k);

    /* Defaults, and a maximum below the minimum raised to it. */
    k = pg_link_create(NULL);
    assert_int_equal(pg_link_backoff_min(k), 50);
    assert_int_equal(pg_link_backoff_max(k), 1000);
    pg_link_destroy(k);
    o = (pg_link_options){.backoff_min_ms = 500, .backoff_max_ms = 100};
    k = pg_link_create(&o);
    assert_int_equal(pg_link_backoff_max(k), 500);
    pg_link_destroy(k);
}

static int calls;
static void on_up(void *ctx)
{
    (void)ctx;
    calls++;
}

TL_TEST(test_watchers_called_when_back)
{
    pg_link *k = pg_link_create(NULL);
    /* A connection object that never connected: PQhost/PQport still answer. */
    PGconn *conn = PQconnectStart("host=127.0.0.1 port=1 dbname=none");
    assert_non_null(conn);
    assert_int_equal(pg_link_watch(k, on_up, NULL), 0);
    calls = 0;
    unsigned long g0 = pg_link_generation(k);
    pg_link_up(k, "pool", conn); /* the first connection: nothing was down */
    assert_int_equal(calls, 0);
    assert_int_equal(pg_link_generation(k), g0);
    pg_link_down(k, "listener");
    pg_link_up(k, "pool", conn); /* another connection is back: every back-off ends */
    assert_int_equal(calls, 1);
    assert_int_equal(pg_link_generation(k), g0 + 1);
    pg_link_up(k, "listener", conn); /* the lost listener back too */
    assert_int_equal(calls, 2);
    pg_link_up(k, "listener", conn); /* nothing was down */
    assert_int_equal(calls, 2);
    pg_link_unwatch(k, on_up, NULL);
    pg_link_down(k, "pool");
    pg_link_up(k, "pool", conn);
    assert_int_equal(calls, 2);
    PQfinish(conn);
    pg_link_destroy(k);
}

TL_MAIN()
