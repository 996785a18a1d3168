/*
 * test_writer.c — the snapshot writer against a real PostgreSQL and Redis: a snapshot
 * is in Redis before the COMMIT that NOTIFYs it, so a replica hearing the NOTIFY reads
 * it from the cache (proved with a repository whose PostgreSQL is unreachable); and a
 * transaction that fails after putting its snapshot in Redis leaves nothing a reader
 * takes for the snapshot that next gets the same version number, even when its entry
 * survives and the next writer's SET is lost to a Redis outage. The IR stored is the
 * composed snapshot, member for member, and its checksum that of its content.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/buf.h"
#include "server/snapshot/store.h"
#include "server/snapshot/writer.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

typedef struct fx {
    tl_store s;
    pg_pool *dead_pool; /* PostgreSQL that does not answer */
    snap_repo *only;    /* the same cache over dead_pool: answers from Redis or not at all */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    tl_store_open(&f->s, 4);
    char dead[128];
    snprintf(dead, sizeof(dead), "postgresql://sextant@127.0.0.1:%d/none?connect_timeout=2",
             tl_free_port());
    f->dead_pool = tl_pool(dead, 1);
    f->only = snap_repo_create(f->dead_pool, f->s.cache);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    snap_repo_destroy(f->only);
    pg_pool_destroy(f->dead_pool);
    tl_store_close(&f->s);
    free(f);
    return 0;
}

/* One transaction body: writes spec as the snapshot of "edge", checks what the cache
 * holds before the commit, then fails when asked to. */
typedef struct body {
    fx *f;
    const char *spec;
    bool fail;
    snap_record *rec;
    bool cached_before_commit; /* the cache-only repository had it inside the transaction */
} body;

static int write_body(pg_conn *c, snap_writer *w, void *arg, sx_err *err)
{
    body *b = arg;
    json_t *spec = json_loads(b->spec, 0, NULL);
    assert_non_null(spec);
    snap_compose_input in = {"default", "web", spec, NULL};
    snap_source src = {"00000000-0000-0000-0000-000000000001", 1};
    snap_write sw = {"edge", &in, 1, &src, 1, "test", "alice", NULL};
    sx_fielderrs verrs = {0};
    int rc = snap_writer_write(w, c, &sw, &verrs, &b->rec, err);
    json_decref(spec);
    sx_fielderrs_free(&verrs);
    if (rc)
        return rc;
    assert_non_null(b->rec);
    snap_record *got = NULL;
    sx_err e2;
    b->cached_before_commit = snap_repo_get_announced(b->f->only, "edge", b->rec->version,
                                                      b->rec->id, b->f->s.a, &got, &e2) == 0 &&
                              strcmp(got->checksum, b->rec->checksum) == 0;
    if (b->fail)
        return sx_err_set(err, SX_EINTERNAL, "the test makes this transaction fail");
    return 0;
}

/* A replica's NOTIFY handler, reading only from Redis. */
typedef struct hearer {
    fx *f;
    atomic_int heard;      /* notifications received */
    atomic_int from_cache; /* ... whose snapshot the cache-only repository answered */
    long long id;
    char checksum[80];
} hearer;

static void on_snapshot(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    hearer *h = ctx;
    json_t *j = json_loads(payload, 0, NULL);
    const char *group = json_string_value(json_object_get(j, "group"));
    long long version = json_integer_value(json_object_get(j, "version"));
    long long id = json_integer_value(json_object_get(j, "id"));
    sx_arena *a = sx_arena_create();
    snap_record *got = NULL;
    sx_err err;
    if (group && snap_repo_get_announced(h->f->only, group, version, id, a, &got, &err) == 0) {
        h->id = got->id;
        snprintf(h->checksum, sizeof(h->checksum), "%s", got->checksum);
        atomic_fetch_add(&h->from_cache, 1);
    }
    sx_arena_destroy(a);
    json_decref(j);
    atomic_fetch_add(&h->heard, 1);
}

TL_TEST_FX(test_notify_finds_snapshot_in_redis)
{
    fx *f = *state;
    hearer h = {.f = f};
    pg_listener *l = NULL;
    pg_listener_options lo = {.url = f->s.url};
    assert_int_equal(pg_listener_create(&lo, &l, NULL), 0);
    sx_err err;
    assert_int_equal(pg_listener_subscribe(l, SNAP_NOTIFY_CHANNEL, on_snapshot, NULL, &h, &err), 0);
    assert_int_equal(pg_listener_start(l, &err), 0);
    assert_true(pg_listener_wait_connected(l, 10000));

    body b = {.f = f, .spec = "{\"extensions\": {\"a\": 1}}"};
    assert_int_equal(snap_writer_tx(f->s.pool, f->s.snaps, f->s.a, write_body, &b, &err), 0);
    assert_true(b.cached_before_commit);

    for (int i = 0; i < 500 && atomic_load(&h.heard) == 0; i++)
        tl_sleep_ms(10);
    assert_int_equal(atomic_load(&h.heard), 1);
    assert_int_equal(atomic_load(&h.from_cache), 1);
    assert_int_equal(h.id, b.rec->id);
    assert_string_equal(h.checksum, b.rec->checksum);

    /* Settled: the version key serves every other reader from the cache too. */
    snap_record *got = NULL;
    assert_int_equal(snap_repo_get(f->only, "edge", b.rec->version, 0, f->s.a, &got, &err), 0);
    assert_int_equal(got->id, b.rec->id);
    assert_int_equal(got->encoded_len, b.rec->encoded_len);
    assert_memory_equal(got->encoded, b.rec->encoded, got->encoded_len);
    pg_listener_destroy(l);
}

TL_TEST_FX(test_failed_transaction_leaves_no_stale_entry)
{
    fx *f = *state;
    sx_err err;
    /* A: written and cached inside a transaction that then fails. */
    body a = {.f = f, .spec = "{\"extensions\": {\"stale\": true}}", .fail = true};
    assert_int_equal(snap_writer_tx(f->s.pool, f->s.snaps, f->s.a, write_body, &a, &err),
                     SX_EINTERNAL);
    assert_true(a.cached_before_commit);
    /* The failed transaction deleted its entry; put it back, as if that deletion had been
     * lost to a Redis outage: the worst case. */
    snap_repo_cache_stage(f->s.snaps, a.rec);

    /* B: the next writer, while this replica's Redis is unreachable (its SET is lost). */
    char dead[128];
    snprintf(dead, sizeof(dead), "redis://127.0.0.1:%d", tl_free_port());
    redis_cache *down = tl_cache(dead, f->s.prefix);
    snap_repo *no_cache = snap_repo_create(f->s.pool, down);
    body b = {.f = f, .spec = "{\"extensions\": {\"fresh\": true}}"};
    assert_int_equal(snap_writer_tx(f->s.pool, no_cache, f->s.a, write_body, &b, &err), 0);
    assert_false(b.cached_before_commit);
    assert_int_equal(b.rec->version, a.rec->version); /* the number was given back */
    assert_true(b.rec->id != a.rec->id);
    assert_string_not_equal(b.rec->checksum, a.rec->checksum);

    /* Told about B (its NOTIFY names its id), a replica never takes A's entry. */
    snap_record *got = NULL;
    assert_int_equal(
        snap_repo_get_announced(f->only, "edge", b.rec->version, b.rec->id, f->s.a, &got, &err),
        SX_EUNAVAILABLE);
    assert_int_equal(
        snap_repo_get_announced(f->s.snaps, "edge", b.rec->version, b.rec->id, f->s.a, &got, &err),
        0);
    assert_string_equal(got->checksum, b.rec->checksum);
    assert_memory_equal(got->encoded, b.rec->encoded, b.rec->encoded_len);
    /* Readers by version never see it either: version keys hold committed rows only. */
    assert_int_equal(snap_repo_get(f->s.snaps, "edge", b.rec->version, 0, f->s.a, &got, &err), 0);
    assert_int_equal(got->id, b.rec->id);
    assert_string_equal(got->checksum, b.rec->checksum);
    assert_int_equal(snap_repo_get(f->only, "edge", b.rec->version, 0, f->s.a, &got, &err), 0);
    assert_int_equal(got->id, b.rec->id);

    snap_repo_destroy(no_cache);
    redis_cache_destroy(down);
}

/* Writes spec, reads the IR back from PostgreSQL and checks it against spec. */
static void check_stored_ir(fx *f, const char *spec)
{
    sx_err err;
    body b = {.f = f, .spec = spec};
    assert_int_equal(snap_writer_tx(f->s.pool, f->s.snaps, f->s.a, write_body, &b, &err), 0);
    snap_record *got = NULL;
    assert_int_equal(
        snap_repo_get(f->s.snaps, "edge", b.rec->version, SNAP_REPO_WITH_IR, f->s.a, &got, &err),
        0);
    assert_non_null(got->ir);
    json_t *want = json_loads(spec, 0, NULL);
    char id[64];
    snprintf(id, sizeof(id), "edge:%lld", b.rec->version);
    assert_string_equal(json_string_value(json_object_get(got->ir, "id")), id);
    assert_non_null(json_string_value(json_object_get(got->ir, "generated_at")));
    /* The checksum is that of the content alone: the spec as given. */
    char sum[SX_SHA256_HEX_LEN + 1];
    snap_writer_checksum(want, sum);
    assert_string_equal(got->checksum, sum);
    snap_writer_checksum(got->ir, sum);
    assert_string_equal(got->checksum, sum);
    json_object_set(want, "id", json_object_get(got->ir, "id"));
    json_object_set(want, "generated_at", json_object_get(got->ir, "generated_at"));
    assert_true(json_equal(want, got->ir));
    json_decref(want);
}

TL_TEST_FX(test_stored_ir_is_the_composed_snapshot)
{
    fx *f = *state;
    check_stored_ir(f, "{}");
    check_stored_ir(
        f, "{\"extensions\": {\"z\": [1, 2.5, -3e-7, true, null], \"a\": \"\u00e9\\\"\\n\\u0001/\","
           " \"m\": {\"b\": {}, \"a\": []}}}");
    check_stored_ir(f, "{\"backends\": [{\"name\": \"web\", \"namespace\": \"default\","
                       " \"endpoints\": [{\"address\": \"10.0.0.1\", \"port\": 8080}]}]}");
}

/* The first of sql's one-row answer on f's database, as text (a static buffer). */
static const char *query_text(fx *f, const char *sql, const char *param)
{
    static char out[64];
    pg_conn *c = NULL;
    sx_err err;
    PGresult *r = NULL;
    assert_int_equal(pg_acquire(f->s.pool, &c, &err), 0);
    assert_int_equal(pg_exec(c, sql, 1, &param, &r, &err), 0);
    assert_int_equal(PQntuples(r), 1);
    snprintf(out, sizeof(out), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    pg_release(f->s.pool, c);
    return out;
}

/* A large snapshot is stored whole, compressed with LZ4 when PostgreSQL offers it. */
TL_TEST_FX(test_large_snapshot_is_stored_whole)
{
    fx *f = *state;
    sx_buf spec = {0};
    sx_buf_puts(&spec, "{\"backends\": [{\"name\": \"web\", \"namespace\": \"default\","
                       " \"endpoints\": [");
    for (int i = 0; i < 40000; i++)
        sx_buf_printf(&spec, "%s{\"address\": \"10.%d.%d.%d\", \"port\": %d}", i ? ", " : "",
                      i >> 16, (i >> 8) & 255, i & 255, 1024 + i % 50000);
    sx_buf_puts(&spec, "]}]}");
    assert_true(spec.len > (1u << 20));
    check_stored_ir(f, spec.data);
    sx_buf_free(&spec);
    bool lz4 = strcmp(query_text(f,
                                 "SELECT count(*) FROM pg_settings WHERE name = $1"
                                 " AND 'lz4' = ANY (enumvals)",
                                 "default_toast_compression"),
                      "1") == 0;
    const char *method = query_text(f,
                                    "SELECT pg_column_compression(ir) FROM snapshots"
                                    " WHERE group_name = $1 ORDER BY version DESC LIMIT 1",
                                    "edge");
    assert_string_equal(method, lz4 ? "lz4" : "pglz");
}

TL_MAIN()
