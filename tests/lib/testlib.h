/*
 * testlib.h — helpers shared by the C tests: the environment tests/run.sh sets up, a
 * private database per test, a private Redis a test may stop and start, files, JSON
 * fixtures and the assertions that compare JSON documents and field errors.
 *
 * The runner exports SEXTANT_TEST_DATABASE_URL (a superuser URL of the test
 * PostgreSQL), SEXTANT_TEST_REDIS_URL (the shared test Redis) and
 * SEXTANT_TEST_REDIS_SERVER (path of redis-server). Missing variables fail the
 * test: a test that silently skips cannot fail.
 *
 * A test program defines each test with TL_TEST(test_name) { ... } (or a variant that
 * gives it a fixture: TL_TEST_FX, TL_TEST_SESSIONS, TL_TEST_WITH) and ends with TL_MAIN()
 * or TL_MAIN_GROUP(group_setup, group_teardown), which runs every test it defines in the
 * order they are written; nothing lists them a second time.
 */
#ifndef SX_TESTS_TESTLIB_H
#define SX_TESTS_TESTLIB_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <sys/types.h>
#include <cmocka.h>

#include <jansson.h>

#include "server/base/err.h"
#include "server/base/fielderr.h"

/* Value of an environment variable the runner must set; fails the test when absent. */
const char *tl_env(const char *name);

/* Creates a new empty database on the test server and returns its URL (caller frees
 * with free). Each call gives a distinct name, so tests can run in parallel. */
char *tl_db_create(void);
/* Drops a database created by tl_db_create (terminating its sessions); frees url. */
void tl_db_drop(char *url);
/* tl_db_create, then every migration applied (fails the test when migrating fails). */
char *tl_db_create_migrated(void);

/* A new superuser role that may log in, and url with that role as its user (caller
 * frees with tl_role_drop). Lets a test cut off the connections made with that URL,
 * and only those, as if their server had gone away, while the test's own stay up. */
char *tl_role_create(const char *url);
/* Lets the role of role_url log in again, or stops it from logging in and ends every
 * session it has (returning once they are gone): new connections then fail with "role
 * ... is not permitted to log in". */
void tl_role_allow(const char *role_url, bool allowed);
/* Ends the role's sessions, drops it and frees role_url. */
void tl_role_drop(char *role_url);

/* Fails the test, printing what failed with the code and every part of err. */
void tl_fail_err(const char *what, int rc, const sx_err *err);

/* TL_OK(call): runs a call that fills an sx_err named e_ and fails the test with that
 * error unless it returns 0: TL_OK(repo_get(c, id, &out, &e_)). */
#define TL_OK(call)                                                                                \
    do {                                                                                           \
        sx_err e_;                                                                                 \
        sx_err_clear(&e_);                                                                         \
        int rc_ = (call);                                                                          \
        if (rc_ != 0)                                                                              \
            tl_fail_err(#call, rc_, &e_);                                                          \
    } while (0)

/* Sizes of the buffers tl_tmpdir fills: the folder's name and each file's path. */
#define TL_DIR_MAX  64
#define TL_PATH_MAX 128
/* Makes a new private folder /tmp/sextant-<name>-XXXXXX, its name in dir (TL_DIR_MAX
 * bytes), and sets each of the n paths (TL_PATH_MAX bytes each) to dir/files[i]; -1 when
 * the folder cannot be made (for a setup to return), else 0. */
int tl_tmpdir(char *dir, const char *name, char *const *paths, const char *const *files, size_t n);
/* Removes the folder dir and every file in it (it holds no folders). */
void tl_rmdir(const char *dir);

/* Writes text to path (replacing the file); fails the test when it cannot. */
void tl_write_file(const char *path, const char *text);

/* Parses a JSON value written with single quotes for double quotes (readable in C
 * strings); fails the test on bad JSON. The caller owns the result (json_decref). */
json_t *tl_json(const char *text);
/* Fails the test, printing both documents, unless got and want are equal JSON. */
void tl_assert_json_equal(const json_t *got, const json_t *want);
/* The same against the JSON of want_text, written as for tl_json. */
void tl_assert_json_is(const json_t *got, const char *want_text);
/* Fails the test, naming the string, unless text holds every string of has and none of
 * lacks (NULL-terminated arrays; NULL for none). */
void tl_assert_text(const char *text, const char *const *has, const char *const *lacks);
/* tl_assert_text of j written as compact JSON. */
void tl_assert_json_text(const json_t *j, const char *const *has, const char *const *lacks);

/* One expected field error: its path and its exact message. */
typedef struct tl_want_err {
    const char *path;
    const char *message;
} tl_want_err;
/* Fails the test, printing what came and what was wanted, unless errs holds exactly the
 * n errors of want, in that order. */
void tl_assert_fielderrs(const sx_fielderrs *errs, const tl_want_err *want, size_t n);

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
/* A plain hiredis connection (2 s timeout) to the Redis of a redis://127.0.0.1:PORT
 * url, for looking at what the code under test stored; fails the test when it cannot
 * connect. The caller frees it with redisFree. */
struct redisContext *tl_redis_connect(const char *url);

struct pg_pool;
struct redis_cache;
/* A pool of size connections to url (2 s connect timeout); fails the test when it cannot
 * be created. Free it with pg_pool_destroy. */
struct pg_pool *tl_pool(const char *url, int size);
/* A Redis cache on url (300 ms timeouts) whose keys start with prefix; fails the test
 * when it cannot be created. Free it with redis_cache_destroy. */
struct redis_cache *tl_cache(const char *url, const char *prefix);
/* tl_cache on the shared test Redis with keys private to the database of db_url: the
 * prefix "sxtest:<database name>:", also written to prefix (size bytes). */
struct redis_cache *tl_cache_for_db(const char *db_url, char *prefix, size_t size);

struct sextant_config;
/* Prints every error of errs (index, path, message) as part of the test's output. */
void tl_print_fielderrs(const sx_fielderrs *errs);
/* Whether some error of errs has exactly this path and a message containing msg. */
bool tl_fielderrs_has(const sx_fielderrs *errs, const char *path, const char *msg);
/* How a test loads a configuration: a file of yaml (NULL: none) and the environment env
 * (NULL-terminated), as config_load does. */
typedef int tl_config_loader(const char *yaml, const char **env, struct sextant_config **cfg,
                             sx_fielderrs *errs);
/* The configuration load(yaml, env) gives; prints its errors and fails the test unless it
 * succeeds without any. The caller frees it with config_free. */
struct sextant_config *tl_config_load_ok(tl_config_loader *load, const char *yaml,
                                         const char **env);
/* The end of a configuration load that must be refused (case `name`): unless rc is
 * SX_EINVAL, cfg NULL and errs holds exactly want errors, one of them at path with a
 * message containing msg, prints what came and returns false. Frees cfg and errs. */
bool tl_config_refused(const char *name, int rc, struct sextant_config *cfg, sx_fielderrs *errs,
                       size_t want, const char *path, const char *msg);
/* Fails the test unless `sextant --help`'s text about the configuration holds each of
 * the n strings of want (printing those it lacks). */
void tl_assert_help_has(const char *const *want, size_t n);
/* The configuration from the environment alone: a database URL it does not use and the
 * NULL-terminated settings extra (NULL: none); prints its errors and fails the test
 * unless it loads. Free it with config_free. */
struct sextant_config *tl_env_config(const char *const *extra);
/* The configuration of an HTTP server on a free loopback port (stored in *port) with two
 * threads (and a database URL it does not use), from the environment alone; fails the
 * test when it does not load. Free it with config_free. */
struct sextant_config *tl_http_config(int *port);

struct snap_repo;
struct sx_arena;
/* What the storage tests stand on, one per test: a private migrated database (url), a
 * pool of pool_size connections on it, a cache on the test Redis with keys private to
 * the database (tl_cache_for_db), a snapshot repository over both, and an arena. */
typedef struct tl_store {
    char *url;
    struct pg_pool *pool;
    struct redis_cache *cache;
    struct snap_repo *snaps;
    struct sx_arena *a;
    char prefix[96];
} tl_store;
/* Opens every part of s; fails the test when one cannot be. */
void tl_store_open(tl_store *s, int pool_size);
/* Frees every part of s and drops its database. */
void tl_store_close(tl_store *s);

struct pg_conn;
/* The fixture of the repository tests that need no cache: a private migrated database
 * (url), a pool of 4 connections on it, two sessions taken from the pool (c, and w for a
 * transaction left open beside c) and an arena. */
typedef struct tl_sessions {
    char *url;
    struct pg_pool *pool;
    struct pg_conn *c;
    struct pg_conn *w;
    struct sx_arena *a;
} tl_sessions;
/* Opens every part of s; fails the test when one cannot be. */
void tl_sessions_open(tl_sessions *s);
/* Releases every part of s and drops its database. */
void tl_sessions_close(tl_sessions *s);
/* cmocka setup and teardown of a test whose state is a tl_sessions (allocated here). */
int tl_sessions_setup(void **state);
int tl_sessions_teardown(void **state);

/* Runs fn on each of the n items of args (size bytes apart), each on its own thread, all
 * released together so that they race, and returns once every one has returned. fn
 * must not use cmocka's assertions (they work on the test's thread only). */
void tl_race(void *(*fn)(void *), void *args, size_t size, int n);

/* Milliseconds since an arbitrary fixed point (monotonic). */
long long tl_now_ms(void);
void tl_sleep_ms(int ms);

/* The registry of a test program's tests, which TL_TEST and its variants fill before main
 * runs. tl_register adds test fn, named name and defined at file:line, to be run between
 * setup and teardown (either may be NULL). */
void tl_register(const char *name, CMUnitTestFunction fn, CMFixtureFunction setup,
                 CMFixtureFunction teardown, const char *file, int line);
/* Runs every registered test, in the order of their definitions in the file, as the cmocka
 * group `group` between group_setup and group_teardown (either may be NULL); returns the
 * number that failed. Fails when no test is registered. */
int tl_run(const char *group, CMFixtureFunction group_setup, CMFixtureFunction group_teardown);

/* TL_TEST(name) { body }: defines and registers test `name`, a static void name(void
 * **state) whose state it may use or ignore. TL_TEST_FX runs it between the functions
 * named setup and teardown in the file, TL_TEST_SESSIONS with a tl_sessions as its state,
 * and TL_TEST_WITH between any setup and teardown (either may be NULL). */
#define TL_TEST(name)          TL_TEST_WITH(name, NULL, NULL)
#define TL_TEST_FX(name)       TL_TEST_WITH(name, setup, teardown)
#define TL_TEST_SESSIONS(name) TL_TEST_WITH(name, tl_sessions_setup, tl_sessions_teardown)
#define TL_TEST_WITH(name, setup_fn, teardown_fn)                                                  \
    static void name(__attribute__((unused)) void **state);                                        \
    __attribute__((constructor)) static void tl_register_##name(void)                              \
    {                                                                                              \
        tl_register(#name, name, setup_fn, teardown_fn, __FILE__, __LINE__);                       \
    }                                                                                              \
    static void name(__attribute__((unused)) void **state)

/* TL_MAIN(): the main of a test program, which runs its tests as one group named "tests".
 * TL_MAIN_GROUP does the same between a setup and a teardown of the whole group (either
 * may be NULL). A program whose main must do more calls tl_run itself. */
#define TL_MAIN() TL_MAIN_GROUP(NULL, NULL)
#define TL_MAIN_GROUP(group_setup, group_teardown)                                                 \
    int main(void)                                                                                 \
    {                                                                                              \
        return tl_run("tests", group_setup, group_teardown);                                       \
    }

#endif
