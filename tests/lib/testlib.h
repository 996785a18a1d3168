/*
 * testlib.h — helpers shared by the C tests: the environment tests/run.sh sets up, a
 * private database per test, a private Redis a test may stop and start.
 *
 * The runner exports SEXTANT_TEST_DATABASE_URL (a superuser URL of the test
 * PostgreSQL), SEXTANT_TEST_REDIS_URL (the shared test Redis) and
 * SEXTANT_TEST_REDIS_SERVER (path of redis-server). Missing variables fail the
 * test: a test that silently skips cannot fail.
 */
#ifndef SX_TESTS_TESTLIB_H
#define SX_TESTS_TESTLIB_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <sys/types.h>
#include <cmocka.h>

/* Value of an environment variable the runner must set; fails the test when absent. */
const char *tl_env(const char *name);

/* Creates a new empty database on the test server and returns its URL (caller frees
 * with free). Each call gives a distinct name, so tests can run in parallel. */
char *tl_db_create(void);
/* Drops a database created by tl_db_create (terminating its sessions); frees url. */
void tl_db_drop(char *url);

/* A loopback TCP port nothing listens on now. */
int tl_free_port(void);

/* A Redis server owned by one test. */
typedef struct tl_redis {
    int port;
    pid_t pid; /* 0 when stopped */
    char dir[256];
    char url[64]; /* redis://127.0.0.1:PORT */
} tl_redis;

/* Starts redis-server on a free port (or r->port when already set, for a restart)
 * and waits until it answers. */
void tl_redis_start(tl_redis *r);
/* Stops it (SIGTERM, wait); keeps the port so a later start reuses it. */
void tl_redis_stop(tl_redis *r);

/* Milliseconds since an arbitrary fixed point (monotonic). */
long long tl_now_ms(void);
void tl_sleep_ms(int ms);

#endif
