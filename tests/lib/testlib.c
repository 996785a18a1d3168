/*
 * testlib.c — shared helpers for the C tests (see testlib.h).
 */
#include "tests/lib/testlib.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "server/base/arena.h"
#include "server/base/buf.h"
#include "server/base/mem.h"
#include "server/config.h"
#include "storage/migrate.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

const char *tl_env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "test environment: %s is not set (run through tests/run.sh)\n", name);
        fail();
    }
    return v;
}

long long tl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tl_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void admin_exec(const char *sql)
{
    PGconn *c = PQconnectdb(tl_env("SEXTANT_TEST_DATABASE_URL"));
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "test database: %s", PQerrorMessage(c));
        PQfinish(c);
        fail();
    }
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "test database: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        fail();
    }
    PQclear(r);
    PQfinish(c);
}

/* A name of prefix that no other test process, nor another call in this one, takes. */
static void unique_name(char *out, size_t n, const char *prefix)
{
    static int counter;
    snprintf(out, n, "%s_%d_%d_%lld", prefix, (int)getpid(), ++counter, tl_now_ms() % 100000);
}

char *tl_role_create(const char *url)
{
    char role[64], sql[160];
    unique_name(role, sizeof(role), "sx_role");
    snprintf(sql, sizeof(sql), "CREATE ROLE %s LOGIN SUPERUSER", role);
    admin_exec(sql);
    /* postgresql://USER@host...: the user is what sits between "://" and '@'. */
    const char *scheme = strstr(url, "://");
    const char *start = scheme ? scheme + 3 : url;
    const char *at = strchr(start, '@');
    if (at == NULL) {
        fprintf(stderr, "test database: no user in the test URL\n");
        fail();
    }
    size_t n = strlen(url) + strlen(role) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(start - url), url, role, at);
    return out;
}

/* The user of a URL made by tl_role_create. */
static void role_of(const char *url, char *out, size_t n)
{
    const char *scheme = strstr(url, "://");
    const char *start = scheme ? scheme + 3 : url;
    size_t len = strcspn(start, "@");
    snprintf(out, n, "%.*s", (int)len, start);
}

void tl_role_allow(const char *role_url, bool allowed)
{
    char role[64], sql[256];
    role_of(role_url, role, sizeof(role));
    snprintf(sql, sizeof(sql), "ALTER ROLE %s %s", role, allowed ? "LOGIN" : "NOLOGIN");
    admin_exec(sql);
    if (allowed)
        return;
    /* Its sessions end, and are gone before this returns, as on a server that died. */
    snprintf(sql, sizeof(sql),
             "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = '%s'",
             role);
    admin_exec(sql);
}

void tl_role_drop(char *role_url)
{
    char role[64], sql[256];
    role_of(role_url, role, sizeof(role));
    snprintf(sql, sizeof(sql),
             "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = '%s'",
             role);
    admin_exec(sql);
    snprintf(sql, sizeof(sql), "DROP ROLE IF EXISTS %s", role);
    admin_exec(sql);
    free(role_url);
}

/* Replaces the database name (the path after the last '/') of a URL. */
static char *url_with_db(const char *url, const char *db)
{
    const char *scheme = strstr(url, "://");
    const char *slash = strchr(scheme ? scheme + 3 : url, '/');
    size_t base = slash ? (size_t)(slash - url) : strlen(url);
    const char *query = slash ? strchr(slash, '?') : NULL;
    size_t n = base + strlen(db) + (query ? strlen(query) : 0) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%.*s/%s%s", (int)base, url, db, query ? query : "");
    return out;
}

char *tl_db_create(void)
{
    char name[64], sql[128];
    unique_name(name, sizeof(name), "sx_test");
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
    admin_exec(sql);
    return url_with_db(tl_env("SEXTANT_TEST_DATABASE_URL"), name);
}

void tl_db_drop(char *url)
{
    const char *slash = strrchr(url, '/');
    char name[64], sql[160];
    snprintf(name, sizeof(name), "%s", slash ? slash + 1 : url);
    char *q = strchr(name, '?');
    if (q)
        *q = '\0';
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    admin_exec(sql);
    free(url);
}

/* Same rules as svc_free_port in tests/lib/services.sh: a port below the ephemeral
 * range, reserved with an atomic mkdir so parallel tests never share one. */
int tl_free_port(void)
{
    const char *dir = "/tmp/sextant-ports";
    mkdir(dir, 0777);
    unsigned seed = (unsigned)getpid() ^ (unsigned)tl_now_ms();
    for (int tries = 0; tries < 500; tries++) {
        int port = 10000 + (int)(rand_r(&seed) % 22768);
        char path[64];
        snprintf(path, sizeof(path), "%s/%d", dir, port);
        if (mkdir(path, 0777) != 0)
            continue;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((uint16_t)port);
        bool free = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
            close(fd);
        if (free)
            return port;
    }
    fprintf(stderr, "no free port found\n");
    fail();
    return 0;
}

void tl_redis_start(tl_redis *r)
{
    if (r->port == 0)
        r->port = tl_free_port();
    if (r->dir[0] == '\0') {
        snprintf(r->dir, sizeof(r->dir), "/tmp/sx_test_redis_XXXXXX");
        if (mkdtemp(r->dir) == NULL)
            fail();
    }
    snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
    char port[16];
    snprintf(port, sizeof(port), "%d", r->port);
    const char *server = tl_env("SEXTANT_TEST_REDIS_SERVER");
    pid_t pid = fork();
    if (pid == 0) {
        execl(server, server, "--port", port, "--bind", "127.0.0.1", "--dir", r->dir, "--save", "",
              "--appendonly", "no", "--logfile", "", "--loglevel", "warning", (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
    for (int i = 0; i < 100; i++) {
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
        if (c && !c->err) {
            redisReply *rep = redisCommand(c, "PING");
            bool ok = rep && rep->type == REDIS_REPLY_STATUS;
            freeReplyObject(rep);
            redisFree(c);
            if (ok)
                return;
        } else if (c) {
            redisFree(c);
        }
        tl_sleep_ms(50);
    }
    fprintf(stderr, "redis on port %d did not start\n", r->port);
    fail();
}

struct redisContext *tl_redis_connect(const char *url)
{
    const char *colon = strrchr(url, ':');
    assert_non_null(colon);
    int port = (int)strtol(colon + 1, NULL, 10);
    struct timeval tv = {2, 0};
    redisContext *r = redisConnectWithTimeout("127.0.0.1", port, tv);
    assert_non_null(r);
    assert_int_equal(r->err, 0);
    return r;
}

void tl_redis_stop(tl_redis *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGTERM);
    int st;
    waitpid(r->pid, &st, 0);
    r->pid = 0;
}

char *tl_db_create_migrated(void)
{
    char *url = tl_db_create();
    sx_err err;
    sx_err_clear(&err);
    int rc = migrate_run(url, NULL, NULL, &err);
    if (rc != 0)
        tl_fail_err("migrate_run", rc, &err);
    return url;
}

void tl_fail_err(const char *what, int rc, const sx_err *err)
{
    fprintf(stderr, "%s failed (%d): %s | %s | %s\n", what, rc, err->message, err->detail,
            err->sqlstate);
    fail();
}

void tl_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

int tl_tmpdir(char *dir, const char *name, char *const *paths, const char *const *files, size_t n)
{
    snprintf(dir, TL_DIR_MAX, "/tmp/sextant-%s-XXXXXX", name);
    if (mkdtemp(dir) == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        snprintf(paths[i], TL_PATH_MAX, "%s/%s", dir, files[i]);
    return 0;
}

void tl_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[512];
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

json_t *tl_json(const char *text)
{
    char *s = sx_strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (j == NULL)
        fail_msg("bad test JSON at line %d column %d: %s", e.line, e.column, e.text);
    sx_free(s);
    return j;
}

void tl_assert_json_equal(const json_t *got, const json_t *want)
{
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        print_error("got:  %s\nwant: %s\n", g, w);
        free(g);
        free(w);
        fail();
    }
}

void tl_assert_json_is(const json_t *got, const char *want_text)
{
    json_t *want = tl_json(want_text);
    tl_assert_json_equal(got, want);
    json_decref(want);
}

void tl_assert_text(const char *text, const char *const *has, const char *const *lacks)
{
    for (size_t i = 0; has && has[i]; i++)
        if (strstr(text, has[i]) == NULL)
            fail_msg("missing \"%s\" in: %s", has[i], text);
    for (size_t i = 0; lacks && lacks[i]; i++)
        if (strstr(text, lacks[i]) != NULL)
            fail_msg("unexpected \"%s\" in: %s", lacks[i], text);
}

void tl_assert_json_text(const json_t *j, const char *const *has, const char *const *lacks)
{
    char *text = json_dumps(j, JSON_COMPACT);
    assert_non_null(text);
    tl_assert_text(text, has, lacks);
    free(text);
}

void tl_assert_fielderrs(const sx_fielderrs *errs, const tl_want_err *want, size_t n)
{
    bool ok = errs->count == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = strcmp(errs->items[i].path, want[i].path) == 0 &&
             strcmp(errs->items[i].message, want[i].message) == 0;
    if (!ok) {
        for (size_t i = 0; i < errs->count; i++)
            print_error("got:  %s: %s\n", errs->items[i].path, errs->items[i].message);
        for (size_t i = 0; i < n; i++)
            print_error("want: %s: %s\n", want[i].path, want[i].message);
        fail();
    }
}

struct pg_pool *tl_pool(const char *url, int size)
{
    pg_pool *p = NULL;
    pg_pool_options opt = {.url = url, .size = size, .connect_timeout_ms = 2000};
    assert_int_equal(pg_pool_create(&opt, &p, NULL), 0);
    return p;
}

struct redis_cache *tl_cache(const char *url, const char *prefix)
{
    redis_cache *c = NULL;
    redis_cache_options opt = {.url = url, .timeout_ms = 300, .key_prefix = prefix};
    assert_int_equal(redis_cache_create(&opt, &c, NULL), 0);
    return c;
}

void tl_print_fielderrs(const sx_fielderrs *errs)
{
    for (size_t i = 0; i < errs->count; i++)
        print_message("    [%zu] %s: %s\n", i, errs->items[i].path, errs->items[i].message);
}

bool tl_fielderrs_has(const sx_fielderrs *errs, const char *path, const char *msg)
{
    for (size_t i = 0; i < errs->count; i++)
        if (strcmp(errs->items[i].path, path) == 0 && strstr(errs->items[i].message, msg))
            return true;
    return false;
}

struct sextant_config *tl_config_load_ok(tl_config_loader *load, const char *yaml, const char **env)
{
    sextant_config *c = NULL;
    sx_fielderrs errs = {0};
    int rc = load(yaml, env, &c, &errs);
    tl_print_fielderrs(&errs);
    assert_int_equal(rc, 0);
    assert_int_equal(errs.count, 0);
    sx_fielderrs_free(&errs);
    return c;
}

bool tl_config_refused(const char *name, int rc, struct sextant_config *cfg, sx_fielderrs *errs,
                       size_t want, const char *path, const char *msg)
{
    bool ok =
        rc == SX_EINVAL && cfg == NULL && errs->count == want && tl_fielderrs_has(errs, path, msg);
    if (!ok) {
        print_message("case \"%s\": rc %d, %zu error(s), wanted %zu with %s: ...%s...\n", name, rc,
                      errs->count, want, path, msg);
        tl_print_fielderrs(errs);
    }
    config_free(cfg);
    sx_fielderrs_free(errs);
    return ok;
}

void tl_assert_help_has(const char *const *want, size_t n)
{
    sx_buf b = {0};
    config_write_help(&b);
    for (size_t i = 0; i < n; i++) {
        if (strstr(sx_buf_cstr(&b), want[i]) == NULL)
            print_message("help lacks %s\n", want[i]);
        assert_non_null(strstr(sx_buf_cstr(&b), want[i]));
    }
    sx_buf_free(&b);
}

struct sextant_config *tl_env_config(const char *const *extra)
{
    char *envv[16];
    size_t n = 0;
    envv[n++] = "SEXTANT_DATABASE_URL=postgresql:///unused";
    for (size_t i = 0; extra && extra[i]; i++) {
        assert_true(n < sizeof envv / sizeof envv[0] - 1);
        envv[n++] = (char *)extra[i];
    }
    envv[n] = NULL;
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    int rc = config_load(NULL, envv, &cfg, &errs);
    tl_print_fielderrs(&errs);
    sx_fielderrs_free(&errs);
    assert_int_equal(rc, 0);
    return cfg;
}

struct sextant_config *tl_http_config(int *port)
{
    *port = tl_free_port();
    char listen[64];
    snprintf(listen, sizeof(listen), "SEXTANT_HTTP_LISTEN=127.0.0.1:%d", *port);
    const char *extra[] = {listen, "SEXTANT_HTTP_THREADS=2", NULL};
    return tl_env_config(extra);
}

struct redis_cache *tl_cache_for_db(const char *db_url, char *prefix, size_t size)
{
    snprintf(prefix, size, "sxtest:%s:", strrchr(db_url, '/') + 1);
    return tl_cache(tl_env("SEXTANT_TEST_REDIS_URL"), prefix);
}

void tl_store_open(tl_store *s, int pool_size)
{
    s->url = tl_db_create_migrated();
    s->pool = tl_pool(s->url, pool_size);
    s->cache = tl_cache_for_db(s->url, s->prefix, sizeof(s->prefix));
    s->snaps = snap_repo_create(s->pool, s->cache);
    s->a = sx_arena_create();
}

void tl_store_close(tl_store *s)
{
    sx_arena_destroy(s->a);
    snap_repo_destroy(s->snaps);
    redis_cache_destroy(s->cache);
    pg_pool_destroy(s->pool);
    tl_db_drop(s->url);
}

void tl_sessions_open(tl_sessions *s)
{
    s->url = tl_db_create_migrated();
    s->pool = tl_pool(s->url, 4);
    assert_int_equal(pg_acquire(s->pool, &s->c, NULL), 0);
    assert_int_equal(pg_acquire(s->pool, &s->w, NULL), 0);
    s->a = sx_arena_create();
}

void tl_sessions_close(tl_sessions *s)
{
    sx_arena_destroy(s->a);
    pg_release(s->pool, s->w);
    pg_release(s->pool, s->c);
    pg_pool_destroy(s->pool);
    tl_db_drop(s->url);
}

int tl_sessions_setup(void **state)
{
    tl_sessions *s = calloc(1, sizeof(*s));
    tl_sessions_open(s);
    *state = s;
    return 0;
}

int tl_sessions_teardown(void **state)
{
    tl_sessions_close(*state);
    free(*state);
    return 0;
}

typedef struct race_slot {
    pthread_barrier_t *start;
    void *(*fn)(void *);
    void *arg;
} race_slot;

static void *race_main(void *p)
{
    race_slot *s = p;
    pthread_barrier_wait(s->start);
    return s->fn(s->arg);
}

void tl_race(void *(*fn)(void *), void *args, size_t size, int n)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    race_slot *slots = calloc((size_t)n, sizeof(*slots));
    pthread_t *threads = calloc((size_t)n, sizeof(*threads));
    assert_non_null(slots);
    assert_non_null(threads);
    for (int i = 0; i < n; i++) {
        slots[i] = (race_slot){&start, fn, (char *)args + (size_t)i * size};
        assert_int_equal(pthread_create(&threads[i], NULL, race_main, &slots[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    free(threads);
    free(slots);
}

typedef struct tl_entry {
    struct CMUnitTest test;
    const char *file;
    int line;
} tl_entry;

static tl_entry *tl_entries;
static size_t tl_entry_count, tl_entry_cap;

void tl_register(const char *name, CMUnitTestFunction fn, CMFixtureFunction setup,
                 CMFixtureFunction teardown, const char *file, int line)
{
    if (tl_entry_count == tl_entry_cap) {
        size_t cap = tl_entry_cap ? tl_entry_cap * 2 : 64;
        tl_entry *grown = realloc(tl_entries, cap * sizeof(*grown));
        if (grown == NULL) {
            fprintf(stderr, "test registry: out of memory registering %s\n", name);
            abort();
        }
        tl_entries = grown;
        tl_entry_cap = cap;
    }
    tl_entries[tl_entry_count++] = (tl_entry){
        .test = {.name = name, .test_func = fn, .setup_func = setup, .teardown_func = teardown},
        .file = file,
        .line = line,
    };
}

/* Constructors run in no promised order: the file and the line give the order written. */
static int tl_entry_cmp(const void *a, const void *b)
{
    const tl_entry *x = a, *y = b;
    int by_file = strcmp(x->file, y->file);
    if (by_file != 0)
        return by_file;
    return (x->line > y->line) - (x->line < y->line);
}

int tl_run(const char *group, CMFixtureFunction group_setup, CMFixtureFunction group_teardown)
{
    if (tl_entry_count == 0) {
        fprintf(stderr, "%s: no test is registered\n", group);
        return 1;
    }
    qsort(tl_entries, tl_entry_count, sizeof(*tl_entries), tl_entry_cmp);
    struct CMUnitTest *tests = calloc(tl_entry_count, sizeof(*tests));
    if (tests == NULL) {
        fprintf(stderr, "%s: out of memory\n", group);
        return 1;
    }
    for (size_t i = 0; i < tl_entry_count; i++)
        tests[i] = tl_entries[i].test;
    int failed = _cmocka_run_group_tests(group, tests, tl_entry_count, group_setup, group_teardown);
    free(tests);
    return failed;
}
