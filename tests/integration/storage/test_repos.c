/*
 * test_repos.c — the repositories against a real PostgreSQL and Redis: each stores
 * and returns what it was given; optimistic concurrency and compare-and-set refuse
 * stale writers; snapshot versions are gap-free under concurrent writers; snapshot
 * reads fill the Redis cache, keep working from PostgreSQL while Redis is down, and
 * use the cache again once it is back.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "server/base/arena.h"
#include "server/base/hash.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_audit.h"
#include "storage/repo_configs.h"
#include "storage/repo_deployments.h"
#include "storage/repo_events.h"
#include "storage/repo_nodes.h"
#include "storage/repo_snapshots.h"

/* One test's store (private database, pool, cache with a private key prefix, snapshot
 * repository, arena) and a connection of its pool. */
typedef struct fx {
    tl_store s;
    pg_conn *c; /* one connection held for the test's single-threaded calls */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    tl_store_open(&f->s, 6);
    assert_int_equal(pg_acquire(f->s.pool, &f->c, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pg_release(f->s.pool, f->c);
    tl_store_close(&f->s);
    free(f);
    return 0;
}

static json_t *js(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    return j;
}

/* ----------------------------------------------------------------- configs */

static cfg_record *create_config(fx *f, const char *ns, const char *name, const char *group,
                                 const char *spec_text)
{
    json_t *spec = js(spec_text);
    const char *groups[] = {group};
    cfg_new in = {.ns = ns,
                  .name = name,
                  .groups = groups,
                  .group_count = 1,
                  .spec = spec,
                  .author = "alice",
                  .message = "created"};
    cfg_record *cfg;
    TL_OK(cfg_repo_create(f->c, &in, f->s.a, &cfg, &e_));
    json_decref(spec);
    return cfg;
}

typedef struct writer {
    pg_pool *pool;
    const char *id;
    int rc;
} writer;

static void *write_version(void *p)
{
    writer *w = p;
    pg_conn *c;
    if ((w->rc = pg_acquire(w->pool, &c, NULL)) != 0)
        return NULL; /* no cmocka assertions outside the test's thread */
    sx_arena *a = sx_arena_create();
    json_t *spec = json_pack("{s:s}", "by", "racer");
    cfg_change ch = {.spec = spec, .author = "racer"};
    w->rc = cfg_repo_add_version(c, w->id, 2, &ch, a, NULL, NULL);
    json_decref(spec);
    sx_arena_destroy(a);
    pg_release(w->pool, c);
    return NULL;
}

TL_TEST_FX(test_configs_round_trip)
{
    fx *f = *state;
    json_t *spec = js("{\"listeners\": [{\"name\": \"http\", \"port\": 8080}], \"b\": 1.5}");
    const char *groups[] = {"internal", "edge", "edge"};
    cfg_new in = {.ns = "default",
                  .name = "web",
                  .groups = groups,
                  .group_count = 3,
                  .spec = spec,
                  .author = "alice",
                  .message = "first"};
    cfg_record *cfg;
    TL_OK(cfg_repo_create(f->c, &in, f->s.a, &cfg, &e_));
    assert_int_equal(cfg->latest_version, 1);
    assert_int_equal(cfg->live_version, 1);
    assert_null(cfg->deleted_at);
    assert_int_equal(cfg->group_count, 2); /* sorted, duplicates dropped */
    assert_string_equal(cfg->groups[0], "edge");
    assert_string_equal(cfg->groups[1], "internal");

    /* Get by id and by name give the same config. */
    cfg_record *got;
    TL_OK(cfg_repo_get(f->c, cfg->id, false, f->s.a, &got, &e_));
    assert_string_equal(got->name, "web");
    assert_string_equal(got->ns, "default");
    assert_string_equal(got->created_by, "alice");
    assert_string_equal(got->created_at, cfg->created_at);
    TL_OK(cfg_repo_get_by_name(f->c, "default", "web", f->s.a, &got, &e_));
    assert_string_equal(got->id, cfg->id);

    /* Version 1 holds the spec and the sha256 of its canonical JSON. */
    cfg_version *v1;
    TL_OK(cfg_repo_get_version(f->c, cfg->id, 1, f->s.a, &v1, &e_));
    assert_true(json_equal(v1->spec, spec));
    char want[SX_SHA256_HEX_LEN + 1];
    char *canon = json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT);
    sx_sha256_hex(canon, strlen(canon), want);
    free(canon);
    assert_string_equal(v1->checksum, want);
    char again[SX_SHA256_HEX_LEN + 1];
    cfg_repo_checksum(v1->spec, again); /* stable through a JSONB round trip */
    assert_string_equal(again, want);
    assert_string_equal(v1->author, "alice");
    assert_string_equal(v1->message, "first");
    assert_false(v1->draft);

    /* Same name again: conflict. */
    sx_err err;
    cfg_record *dup;
    assert_int_equal(cfg_repo_create(f->c, &in, f->s.a, &dup, &err), SX_ECONFLICT);
    assert_string_equal(err.message, "config default/web already exists");

    /* Add a version with the right expected version, then with a stale one. */
    json_t *spec2 = js("{\"listeners\": [], \"b\": 2}");
    cfg_change ch = {.spec = spec2, .author = "bob", .message = "second"};
    cfg_version *v2;
    TL_OK(cfg_repo_add_version(f->c, cfg->id, 1, &ch, f->s.a, &v2, &e_));
    assert_int_equal(v2->version, 2);
    assert_string_equal(v2->author, "bob");
    cfg_version *stale;
    assert_int_equal(cfg_repo_add_version(f->c, cfg->id, 1, &ch, f->s.a, &stale, &err),
                     SX_EPRECONDITION);
    assert_non_null(strstr(err.message, "latest version is 2, not 1"));
    assert_int_equal(cfg_repo_get_version(f->c, cfg->id, 3, f->s.a, &stale, &err), SX_ENOTFOUND);

    /* Two writers holding the same expected version: exactly one wins. */
    writer w[2] = {{f->s.pool, cfg->id, 0}, {f->s.pool, cfg->id, 0}};
    tl_race(write_version, w, sizeof(w[0]), 2);
    assert_true((w[0].rc == 0 && w[1].rc == SX_EPRECONDITION) ||
                (w[1].rc == 0 && w[0].rc == SX_EPRECONDITION));
    TL_OK(cfg_repo_get(f->c, cfg->id, false, f->s.a, &got, &e_));
    assert_int_equal(got->latest_version, 3);

    /* A draft moves latest_version but not live_version; a rollback records its source. */
    cfg_change draft = {.spec = spec, .author = "bob", .draft = true};
    cfg_version *v4;
    TL_OK(cfg_repo_add_version(f->c, cfg->id, 3, &draft, f->s.a, &v4, &e_));
    assert_true(v4->draft);
    TL_OK(cfg_repo_get(f->c, cfg->id, false, f->s.a, &got, &e_));
    assert_int_equal(got->latest_version, 4);
    assert_int_equal(got->live_version, 3);
    cfg_change rollback = {.spec = v1->spec, .author = "carol", .source_version = 1};
    cfg_version *v5;
    TL_OK(cfg_repo_add_version(f->c, cfg->id, 4, &rollback, f->s.a, &v5, &e_));
    assert_int_equal(v5->source_version, 1);
    assert_string_equal(v5->checksum, v1->checksum);

    /* Versions list newest first, in pages. */
    cfg_version_list vl;
    TL_OK(cfg_repo_list_versions(f->c, cfg->id, 2, NULL, f->s.a, &vl, &e_));
    assert_int_equal(vl.count, 2);
    assert_int_equal(vl.items[0].version, 5);
    assert_int_equal(vl.items[1].version, 4);
    assert_null(vl.items[0].spec);
    assert_non_null(vl.next_cursor);
    TL_OK(cfg_repo_list_versions(f->c, cfg->id, 2, vl.next_cursor, f->s.a, &vl, &e_));
    assert_int_equal(vl.count, 2);
    assert_int_equal(vl.items[0].version, 3);
    TL_OK(cfg_repo_list_versions(f->c, cfg->id, 2, vl.next_cursor, f->s.a, &vl, &e_));
    assert_int_equal(vl.count, 1);
    assert_int_equal(vl.items[0].version, 1);
    assert_null(vl.next_cursor);
    assert_int_equal(cfg_repo_list_versions(f->c, cfg->id, 2, "not-a-cursor!", f->s.a, &vl, &err),
                     SX_EINVAL);
    assert_string_equal(err.message, "invalid cursor");

    /* Listing: pages by namespace/name, filtered by group. */
    create_config(f, "default", "api", "edge", "{\"a\": 1}");
    create_config(f, "other", "web", "internal", "{\"a\": 2}");
    cfg_filter filter = {.limit = 2};
    cfg_list cl;
    TL_OK(cfg_repo_list(f->c, &filter, f->s.a, &cl, &e_));
    assert_int_equal(cl.count, 2);
    assert_string_equal(cl.items[0].name, "api");
    assert_string_equal(cl.items[1].name, "web");
    assert_string_equal(cl.items[1].ns, "default");
    filter.cursor = cl.next_cursor;
    TL_OK(cfg_repo_list(f->c, &filter, f->s.a, &cl, &e_));
    assert_int_equal(cl.count, 1);
    assert_string_equal(cl.items[0].ns, "other");
    assert_null(cl.next_cursor);
    cfg_filter by_group = {.group = "edge"};
    TL_OK(cfg_repo_list(f->c, &by_group, f->s.a, &cl, &e_));
    assert_int_equal(cl.count, 2);

    /* The live versions of a group, in merge order. */
    cfg_version *live;
    size_t nlive;
    TL_OK(cfg_repo_live_for_group(f->c, "edge", f->s.a, &live, &nlive, &e_));
    assert_int_equal(nlive, 2);
    assert_int_equal(live[1].version, 5);
    assert_true(json_equal(live[1].spec, spec));

    /* Renaming onto a taken name is a conflict. */
    cfg_change rename = {.spec = spec, .author = "bob", .name = "api"};
    assert_int_equal(cfg_repo_add_version(f->c, cfg->id, 5, &rename, f->s.a, NULL, &err),
                     SX_ECONFLICT);

    /* Soft delete: stale refused; then gone from reads, history kept, name reusable. */
    assert_int_equal(cfg_repo_delete(f->c, cfg->id, 4, &err), SX_EPRECONDITION);
    TL_OK(cfg_repo_delete(f->c, cfg->id, 5, &e_));
    assert_int_equal(cfg_repo_get(f->c, cfg->id, false, f->s.a, &got, &err), SX_ENOTFOUND);
    assert_int_equal(cfg_repo_delete(f->c, cfg->id, -1, &err), SX_ENOTFOUND);
    TL_OK(cfg_repo_get(f->c, cfg->id, true, f->s.a, &got, &e_));
    assert_non_null(got->deleted_at);
    TL_OK(cfg_repo_get_version(f->c, cfg->id, 2, f->s.a, &v2, &e_));
    assert_true(json_equal(v2->spec, spec2));
    assert_int_equal(cfg_repo_add_version(f->c, cfg->id, 5, &ch, f->s.a, NULL, &err), SX_ENOTFOUND);
    cfg_record *again_web = create_config(f, "default", "web", "edge", "{}");
    assert_string_not_equal(again_web->id, cfg->id);

    /* Bad input is refused with the field's name. */
    assert_int_equal(cfg_repo_get(f->c, "nope", false, f->s.a, &got, &err), SX_EINVAL);
    cfg_new bad = in;
    bad.name = "";
    assert_int_equal(cfg_repo_create(f->c, &bad, f->s.a, &dup, &err), SX_EINVAL);
    assert_string_equal(err.message, "name is required");
    json_t *arr = json_array();
    bad = in;
    bad.spec = arr;
    assert_int_equal(cfg_repo_create(f->c, &bad, f->s.a, &dup, &err), SX_EINVAL);
    json_decref(arr);
    json_decref(spec);
    json_decref(spec2);
}

/* A config's source and source_ref: stored, read back by every read, filtered on,
 * required together, kept by a REST change and replaced by a managed one. */
TL_TEST_FX(test_config_source)
{
    fx *f = *state;
    cfg_record *rest = create_config(f, "default", "api", "edge", "{\"a\": 1}");
    assert_int_equal(rest->source, CFG_SOURCE_REST);
    assert_null(rest->source_ref);

    json_t *spec = js("{\"b\": 1}");
    const char *groups[] = {"default/web"};
    cfg_new in = {.ns = "default",
                  .name = "web",
                  .groups = groups,
                  .group_count = 1,
                  .spec = spec,
                  .author = "kubernetes",
                  .source = CFG_SOURCE_KUBERNETES,
                  .source_ref = "Gateway default/web"};
    cfg_record *k8s;
    TL_OK(cfg_repo_create(f->c, &in, f->s.a, &k8s, &e_));
    assert_int_equal(k8s->source, CFG_SOURCE_KUBERNETES);
    assert_string_equal(k8s->source_ref, "Gateway default/web");
    cfg_record *got;
    TL_OK(cfg_repo_get(f->c, k8s->id, false, f->s.a, &got, &e_));
    assert_int_equal(got->source, CFG_SOURCE_KUBERNETES);
    assert_string_equal(got->source_ref, "Gateway default/web");
    TL_OK(cfg_repo_lock(f->c, k8s->id, f->s.a, &got, &e_));
    assert_string_equal(got->source_ref, "Gateway default/web");

    /* A new version may rename what it is translated from; REST configs keep none. */
    cfg_change ch = {.spec = spec, .author = "kubernetes", .source_ref = "Gateway default/web2"};
    TL_OK(cfg_repo_add_version(f->c, k8s->id, 1, &ch, f->s.a, NULL, &e_));
    cfg_change plain = {.spec = spec, .author = "kubernetes"};
    TL_OK(cfg_repo_add_version(f->c, k8s->id, 2, &plain, f->s.a, NULL, &e_));
    TL_OK(cfg_repo_get_by_name(f->c, "default", "web", f->s.a, &got, &e_));
    assert_string_equal(got->source_ref, "Gateway default/web2");
    TL_OK(cfg_repo_add_version(f->c, rest->id, 1, &ch, f->s.a, NULL, &e_));
    TL_OK(cfg_repo_get(f->c, rest->id, false, f->s.a, &got, &e_));
    assert_int_equal(got->source, CFG_SOURCE_REST);
    assert_null(got->source_ref);

    /* The list filters on the source; an unknown one is refused. */
    cfg_filter only = {.source = "kubernetes"};
    cfg_list cl;
    TL_OK(cfg_repo_list(f->c, &only, f->s.a, &cl, &e_));
    assert_int_equal(cl.count, 1);
    assert_string_equal(cl.items[0].id, k8s->id);
    assert_string_equal(cl.items[0].source_ref, "Gateway default/web2");
    only.source = "rest";
    TL_OK(cfg_repo_list(f->c, &only, f->s.a, &cl, &e_));
    assert_int_equal(cl.count, 1);
    assert_string_equal(cl.items[0].id, rest->id);
    sx_err err;
    only.source = "helm";
    assert_int_equal(cfg_repo_list(f->c, &only, f->s.a, &cl, &err), SX_EINVAL);
    assert_string_equal(err.message, "unknown config source \"helm\"");

    /* A managed config names its object; a REST config names none. */
    cfg_new bad = in;
    bad.name = "other";
    bad.source_ref = NULL;
    assert_int_equal(cfg_repo_create(f->c, &bad, f->s.a, &got, &err), SX_EINVAL);
    assert_string_equal(err.message, "source_ref is required for a kubernetes config");
    bad.source = CFG_SOURCE_REST;
    bad.source_ref = "Gateway default/other";
    assert_int_equal(cfg_repo_create(f->c, &bad, f->s.a, &got, &err), SX_EINVAL);
    /* ... and the database holds the same rule. */
    assert_int_equal(pg_exec(f->c,
                             "UPDATE configs SET source_ref = NULL WHERE source = 'kubernetes'", 0,
                             NULL, NULL, &err),
                     SX_EINVAL);
    assert_int_equal(pg_exec(f->c, "UPDATE configs SET source = 'helm' WHERE source = 'rest'", 0,
                             NULL, NULL, &err),
                     SX_EINVAL);
    json_decref(spec);
}

/* Two transactions locking one config name: the second waits for the first to end. */
typedef struct name_locker {
    pg_pool *pool;
    pthread_barrier_t *locked;
    int rc;
} name_locker;

static int lock_name_tx(pg_conn *c, void *p, sx_err *err)
{
    (void)p;
    return cfg_repo_lock_name(c, "default", "web", err);
}

static void *lock_second(void *p)
{
    name_locker *l = p;
    pthread_barrier_wait(l->locked);
    l->rc = pg_tx(l->pool, lock_name_tx, NULL, NULL);
    return NULL;
}

static int hold_name_tx(pg_conn *c, void *p, sx_err *err)
{
    name_locker *l = p;
    int rc = cfg_repo_lock_name(c, "default", "web", err);
    if (rc)
        return rc;
    pthread_barrier_wait(l->locked);
    /* The other transaction waits on the name until this one ends: pg_locks shows its
     * request not granted (polled: it may not have asked yet). */
    long long deadline = tl_now_ms() + 10000;
    int waiting = 0;
    while (waiting == 0 && tl_now_ms() < deadline) {
        PGresult *r;
        if ((rc = pg_exec(c,
                          "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                          " AND NOT granted AND database = (SELECT oid FROM pg_database"
                          "                                 WHERE datname = current_database())",
                          0, NULL, &r, err)) != 0)
            return rc;
        waiting = atoi(PQgetvalue(r, 0, 0));
        PQclear(r);
        if (waiting == 0)
            tl_sleep_ms(10);
    }
    return waiting == 1 ? 0 : sx_err_set(err, SX_EINTERNAL, "no transaction waited on the name");
}

TL_TEST_FX(test_config_name_lock)
{
    fx *f = *state;
    pthread_barrier_t locked;
    pthread_barrier_init(&locked, NULL, 2);
    name_locker l = {f->s.pool, &locked, -1};
    pthread_t t;
    pthread_create(&t, NULL, lock_second, &l);
    TL_OK(pg_tx(f->s.pool, hold_name_tx, &l, &e_));
    pthread_join(t, NULL);
    pthread_barrier_destroy(&locked);
    assert_int_equal(l.rc, 0); /* it got the lock once the first transaction ended */
    sx_err err;
    assert_int_equal(cfg_repo_lock_name(f->c, "", "web", &err), SX_EINVAL);
}

/* --------------------------------------------------------------- snapshots */

typedef struct ins_ctx {
    const snap_new *in;
    sx_arena *a;
    snap_record *out;
} ins_ctx;

static int insert_tx(pg_conn *c, void *p, sx_err *err)
{
    ins_ctx *x = p;
    return snap_repo_insert(c, x->in, x->a, &x->out, err);
}

/* Inserts a snapshot of group in its own transaction and caches it after commit. */
static snap_record *insert_snapshot(fx *f, snap_repo *repo, const char *group, int seed,
                                    const char *config_id)
{
    unsigned char bytes[700];
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (unsigned char)((i * 7 + (size_t)seed) & 0xff); /* zeros and high bytes */
    json_t *ir = json_pack("{s:i, s:[{s:s, s:i}]}", "seed", seed, "listeners", "name", "http",
                           "port", 8000 + seed);
    snap_source src[] = {{(char *)config_id, seed}};
    snap_new in = {.group = group,
                   .ir = ir,
                   .encoded = bytes,
                   .encoded_len = sizeof(bytes),
                   .sources = src,
                   .source_count = config_id ? 1 : 0,
                   .reason = "config change",
                   .created_by = "alice"};
    ins_ctx x = {&in, f->s.a, NULL};
    TL_OK(pg_tx(f->s.pool, insert_tx, &x, &e_));
    json_decref(ir);
    snap_repo_cache_put(repo, x.out);
    return x.out;
}

static void assert_same_snapshot(const snap_record *a, const snap_record *b)
{
    assert_int_equal(a->id, b->id);
    assert_string_equal(a->group, b->group);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->encoded_len, b->encoded_len);
    assert_memory_equal(a->encoded, b->encoded, a->encoded_len);
    assert_string_equal(a->checksum, b->checksum);
    assert_int_equal(a->source_count, b->source_count);
    for (size_t i = 0; i < a->source_count; i++) {
        assert_string_equal(a->sources[i].config_id, b->sources[i].config_id);
        assert_int_equal(a->sources[i].version, b->sources[i].version);
    }
    assert_string_equal(a->reason, b->reason);
    assert_string_equal(a->created_by, b->created_by);
    assert_string_equal(a->created_at, b->created_at);
}

TL_TEST_FX(test_snapshots_round_trip)
{
    fx *f = *state;
    cfg_record *cfg = create_config(f, "default", "web", "edge", "{}");
    snap_record *s[3];
    for (int i = 0; i < 3; i++) {
        s[i] = insert_snapshot(f, f->s.snaps, "edge", i + 1, cfg->id);
        assert_int_equal(s[i]->version, i + 1);
    }
    insert_snapshot(f, f->s.snaps, "internal", 9, NULL);

    /* The default checksum is the sha256 of the canonical IR. */
    char want[SX_SHA256_HEX_LEN + 1];
    char *canon = json_dumps(s[2]->ir, JSON_SORT_KEYS | JSON_COMPACT);
    sx_sha256_hex(canon, strlen(canon), want);
    free(canon);
    assert_string_equal(s[2]->checksum, want);

    /* Latest and by version equal what was stored, bytes included. */
    snap_record *got;
    TL_OK(snap_repo_get_latest(f->s.snaps, "edge", 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s[2]);
    for (int i = 0; i < 3; i++) {
        TL_OK(snap_repo_get(f->s.snaps, "edge", i + 1, 0, f->s.a, &got, &e_));
        assert_same_snapshot(got, s[i]);
        assert_null(got->ir);
        TL_OK(snap_repo_get(f->s.snaps, "edge", i + 1, SNAP_REPO_WITH_IR, f->s.a, &got, &e_));
        assert_same_snapshot(got, s[i]);
        assert_true(json_equal(got->ir, s[i]->ir));
    }
    TL_OK(snap_repo_get_latest(f->s.snaps, "edge", SNAP_REPO_WITH_IR, f->s.a, &got, &e_));
    assert_same_snapshot(got, s[2]);
    assert_true(json_equal(got->ir, s[2]->ir));
    TL_OK(snap_repo_get_by_id(f->s.snaps, s[1]->id, f->s.a, &got, &e_));
    assert_same_snapshot(got, s[1]);
    assert_true(json_equal(got->ir, s[1]->ir));

    sx_err err;
    assert_int_equal(snap_repo_get(f->s.snaps, "edge", 4, 0, f->s.a, &got, &err), SX_ENOTFOUND);
    assert_string_equal(err.message, "snapshot 4 of group edge does not exist");
    assert_int_equal(snap_repo_get_latest(f->s.snaps, "nowhere", 0, f->s.a, &got, &err),
                     SX_ENOTFOUND);

    /* Versions of a group, newest first, in pages; groups with their latest. */
    snap_list sl;
    TL_OK(snap_repo_list_versions(f->s.snaps, "edge", 2, NULL, f->s.a, &sl, &e_));
    assert_int_equal(sl.count, 2);
    assert_int_equal(sl.items[0].version, 3);
    assert_int_equal(sl.items[1].version, 2);
    assert_int_equal(sl.items[0].encoded_len, 700);
    assert_null(sl.items[0].encoded);
    TL_OK(snap_repo_list_versions(f->s.snaps, "edge", 2, sl.next_cursor, f->s.a, &sl, &e_));
    assert_int_equal(sl.count, 1);
    assert_int_equal(sl.items[0].version, 1);
    assert_null(sl.next_cursor);
    snap_group_list gl;
    TL_OK(snap_repo_list_groups(f->s.snaps, 1, NULL, f->s.a, &gl, &e_));
    assert_int_equal(gl.count, 1);
    assert_string_equal(gl.items[0].name, "edge");
    assert_int_equal(gl.items[0].latest_version, 3);
    TL_OK(snap_repo_list_groups(f->s.snaps, 1, gl.next_cursor, f->s.a, &gl, &e_));
    assert_int_equal(gl.count, 1);
    assert_string_equal(gl.items[0].name, "internal");
    assert_int_equal(gl.items[0].latest_version, 1);

    /* Start-up load: every group's latest. */
    snap_record *all;
    size_t n;
    TL_OK(snap_repo_load_latest_all(f->s.snaps, f->s.a, &all, &n, &e_));
    assert_int_equal(n, 2);
    assert_same_snapshot(&all[0], s[2]);
    assert_string_equal(all[1].group, "internal");
    assert_int_equal(all[1].version, 1);

    /* Bad input changes nothing. */
    snap_new bad = {.group = "edge", .created_by = "alice"};
    assert_int_equal(snap_repo_insert(f->c, &bad, f->s.a, &got, &err), SX_EINVAL);
    TL_OK(snap_repo_get_latest(f->s.snaps, "edge", 0, f->s.a, &got, &e_));
    assert_int_equal(got->version, 3);
}

typedef struct racer {
    fx *f;
    long long versions[25];
    int failures;
} racer;

static void *insert_many(void *p)
{
    racer *r = p;
    sx_arena *a = sx_arena_create();
    json_t *ir = json_pack("{s:s}", "k", "v");
    unsigned char byte = 0x42;
    snap_new in = {
        .group = "edge", .ir = ir, .encoded = &byte, .encoded_len = 1, .created_by = "racer"};
    for (int i = 0; i < 25; i++) {
        ins_ctx x = {&in, a, NULL};
        if (pg_tx(r->f->s.pool, insert_tx, &x, NULL) != 0) {
            r->failures++;
            continue;
        }
        r->versions[i] = x.out->version;
    }
    json_decref(ir);
    sx_arena_destroy(a);
    return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

TL_TEST_FX(test_snapshots_concurrent_versions)
{
    fx *f = *state;
    racer r[2] = {{.f = f}, {.f = f}};
    tl_race(insert_many, r, sizeof(r[0]), 2);
    assert_int_equal(r[0].failures + r[1].failures, 0);
    long long all[50];
    memcpy(all, r[0].versions, sizeof(r[0].versions));
    memcpy(all + 25, r[1].versions, sizeof(r[1].versions));
    qsort(all, 50, sizeof(long long), cmp_ll);
    for (int i = 0; i < 50; i++)
        assert_int_equal(all[i], i + 1); /* unique and without gaps */
    /* Within one writer, versions only go up. */
    for (int w = 0; w < 2; w++)
        for (int i = 1; i < 25; i++)
            assert_true(r[w].versions[i] > r[w].versions[i - 1]);
    snap_record *got;
    TL_OK(snap_repo_get_latest(f->s.snaps, "edge", 0, f->s.a, &got, &e_));
    assert_int_equal(got->version, 50);
}

/* ------------------------------------------------------------ snapshot cache */

/* The raw value of prefix+key in Redis, or NULL (caller frees). */
static char *redis_raw(const char *url, const char *prefix, const char *key, size_t *len)
{
    redisContext *r = tl_redis_connect(url);
    redisReply *rep = redisCommand(r, "GET %s%s", prefix, key);
    char *v = NULL;
    if (rep && rep->type == REDIS_REPLY_STRING) {
        v = malloc(rep->len + 1);
        memcpy(v, rep->str, rep->len);
        v[rep->len] = '\0';
        if (len)
            *len = rep->len;
    }
    freeReplyObject(rep);
    redisFree(r);
    return v;
}

static void redis_del(const char *url, const char *prefix, const char *key)
{
    redisContext *r = tl_redis_connect(url);
    freeReplyObject(redisCommand(r, "DEL %s%s", prefix, key));
    redisFree(r);
}

/* A snapshot repo whose PostgreSQL is unreachable: it can only answer from cache. */
static snap_repo *cache_only_repo(redis_cache *cache, pg_pool **pool)
{
    char url[128];
    snprintf(url, sizeof(url), "postgresql://sextant@127.0.0.1:%d/none?connect_timeout=2",
             tl_free_port());
    *pool = tl_pool(url, 1);
    return snap_repo_create(*pool, cache);
}

TL_TEST_FX(test_snapshot_reads_fill_cache)
{
    fx *f = *state;
    const char *rurl = tl_env("SEXTANT_TEST_REDIS_URL");
    snap_record *s1 = insert_snapshot(f, f->s.snaps, "edge", 1, NULL);
    /* Written to Redis after commit: version key and latest key. */
    size_t len = 0;
    char *raw = redis_raw(rurl, f->s.prefix, "snapshot:edge:1", &len);
    assert_non_null(raw);
    assert_true(len > s1->encoded_len);
    assert_memory_equal(raw + len - s1->encoded_len, s1->encoded, s1->encoded_len);
    free(raw);
    raw = redis_raw(rurl, f->s.prefix, "snapshot:edge:latest", NULL);
    assert_string_equal(raw, "1");
    free(raw);

    /* A read after the keys are gone refills them from PostgreSQL. */
    redis_del(rurl, f->s.prefix, "snapshot:edge:1");
    redis_del(rurl, f->s.prefix, "snapshot:edge:latest");
    snap_record *got;
    TL_OK(snap_repo_get(f->s.snaps, "edge", 1, 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s1);
    raw = redis_raw(rurl, f->s.prefix, "snapshot:edge:1", NULL);
    assert_non_null(raw);
    free(raw);
    TL_OK(snap_repo_get_latest(f->s.snaps, "edge", 0, f->s.a, &got, &e_));
    raw = redis_raw(rurl, f->s.prefix, "snapshot:edge:latest", NULL);
    assert_string_equal(raw, "1");
    free(raw);

    /* The cache really serves reads: a repo without PostgreSQL still answers. */
    pg_pool *dead;
    snap_repo *only = cache_only_repo(f->s.cache, &dead);
    TL_OK(snap_repo_get(only, "edge", 1, 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s1);
    TL_OK(snap_repo_get_latest(only, "edge", 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s1);
    sx_err err;
    assert_int_equal(snap_repo_get(only, "edge", 2, 0, f->s.a, &got, &err), SX_EUNAVAILABLE);
    snap_repo_destroy(only);
    pg_pool_destroy(dead);

    /* A malformed cache entry is ignored and replaced. */
    redisContext *r = tl_redis_connect(rurl);
    freeReplyObject(redisCommand(r, "SET %ssnapshot:edge:1 garbage", f->s.prefix));
    redisFree(r);
    TL_OK(snap_repo_get(f->s.snaps, "edge", 1, 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s1);
    raw = redis_raw(rurl, f->s.prefix, "snapshot:edge:1", NULL);
    assert_non_null(raw);
    assert_memory_equal(raw, "SXS1\n", 5);
    free(raw);
}

TL_TEST_FX(test_snapshot_reads_survive_redis_outage)
{
    fx *f = *state;
    tl_redis redis = {0};
    tl_redis_start(&redis);
    redis_cache *cache = tl_cache(redis.url, f->s.prefix);
    snap_repo *repo = snap_repo_create(f->s.pool, cache);
    snap_record *s1 = insert_snapshot(f, repo, "edge", 1, NULL);
    snap_record *s2 = insert_snapshot(f, repo, "edge", 2, NULL);
    char *raw = redis_raw(redis.url, f->s.prefix, "snapshot:edge:2", NULL);
    assert_non_null(raw);
    free(raw);

    /* Redis goes away: reads come from PostgreSQL, writes still succeed. */
    tl_redis_stop(&redis);
    snap_record *got;
    for (int round = 0; round < 3; round++) {
        TL_OK(snap_repo_get(repo, "edge", 1, 0, f->s.a, &got, &e_));
        assert_same_snapshot(got, s1);
        TL_OK(snap_repo_get(repo, "edge", 2, 0, f->s.a, &got, &e_));
        assert_same_snapshot(got, s2);
    }
    snap_record *s3 = insert_snapshot(f, repo, "edge", 3, NULL); /* cache put skipped */
    TL_OK(snap_repo_get_latest(repo, "edge", 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s3);
    snap_record *all;
    size_t n;
    TL_OK(snap_repo_load_latest_all(repo, f->s.a, &all, &n, &e_));
    assert_int_equal(n, 1);
    assert_same_snapshot(&all[0], s3);

    /* Redis is back (empty): a read fills the cache again once the cache reconnects. */
    tl_redis_start(&redis);
    bool filled = false;
    long long deadline = tl_now_ms() + 10000;
    while (!filled && tl_now_ms() < deadline) {
        TL_OK(snap_repo_get(repo, "edge", 3, 0, f->s.a, &got, &e_));
        assert_same_snapshot(got, s3);
        raw = redis_raw(redis.url, f->s.prefix, "snapshot:edge:3", NULL);
        filled = raw != NULL;
        free(raw);
        if (!filled)
            tl_sleep_ms(100);
    }
    assert_true(filled);
    /* ... and used: a repo without PostgreSQL reads it. */
    pg_pool *dead;
    snap_repo *only = cache_only_repo(cache, &dead);
    TL_OK(snap_repo_get(only, "edge", 3, 0, f->s.a, &got, &e_));
    assert_same_snapshot(got, s3);
    snap_repo_destroy(only);
    pg_pool_destroy(dead);

    snap_repo_destroy(repo);
    redis_cache_destroy(cache);
    tl_redis_stop(&redis);
}

/* ------------------------------------------------------------------- nodes */

static void upsert(fx *f, const char *id, const char *group, const char *replica)
{
    json_t *labels = json_pack("{s:s}", "zone", "a");
    json_t *meta = json_pack("{s:s}", "build", "1.30.1");
    node_hello h = {.node_id = id,
                    .group = group,
                    .ns = "prod",
                    .labels = labels,
                    .metadata = meta,
                    .client = "envoy/1.30.1",
                    .replica_id = replica};
    TL_OK(node_repo_upsert(f->c, &h, &e_));
    json_decref(labels);
    json_decref(meta);
}

/* A node silent past the threshold while marked connected (its replica gone) is marked
 * disconnected once, after it was marked stale; activity on its stream makes it connected again,
 * but activity reported late for a node whose stream really ended does not. */
TL_TEST_FX(test_nodes_lost)
{
    fx *f = *state;
    upsert(f, "quiet", "edge", "r1");
    upsert(f, "gone", "edge", "r1");
    upsert(f, "busy", "edge", "r1");
    TL_OK(pg_exec(f->c,
                  "UPDATE proxy_nodes SET last_seen = now() - interval '10 minutes'"
                  " WHERE node_id IN ('quiet', 'gone')",
                  0, NULL, NULL, &e_));
    bool changed = false;
    node_stale_list lost;
    /* Not stale yet: a node is reported stale before it is reported lost. */
    TL_OK(node_repo_mark_lost(f->c, 300000, 100, f->s.a, &lost, &e_));
    assert_int_equal(lost.count, 0);
    node_stale_list stale;
    TL_OK(node_repo_mark_stale(f->c, 60000, 100, f->s.a, &stale, &e_));
    assert_int_equal(stale.count, 2);
    TL_OK(node_repo_mark_lost(f->c, 300000, 100, f->s.a, &lost, &e_));
    assert_int_equal(lost.count, 2); /* busy was seen just now */
    bool first_gone = strcmp(lost.items[0].node_id, "gone") == 0;
    assert_string_equal(lost.items[first_gone ? 0 : 1].node_id, "gone");
    assert_string_equal(lost.items[first_gone ? 1 : 0].node_id, "quiet");
    assert_string_equal(lost.items[0].group, "edge");
    TL_OK(node_repo_mark_lost(f->c, 300000, 100, f->s.a, &lost, &e_));
    assert_int_equal(lost.count, 0); /* once */
    node_record *n;
    TL_OK(node_repo_get(f->c, "quiet", f->s.a, &n, &e_));
    assert_false(n->connected);
    assert_string_equal(n->disconnect_reason, "no_activity");

    /* "quiet" turns out to be alive (its replica was only slow); "busy" really ended. */
    TL_OK(node_repo_mark_disconnected(f->c, "busy", "r1", "client_disconnect", &changed, &e_));
    assert_true(changed);
    const char *ids[] = {"quiet", "busy"};
    TL_OK(node_repo_touch(f->c, ids, 2, NULL, &e_));
    TL_OK(node_repo_get(f->c, "quiet", f->s.a, &n, &e_));
    assert_true(n->connected);
    assert_null(n->disconnect_reason);
    TL_OK(node_repo_get(f->c, "busy", f->s.a, &n, &e_));
    assert_false(n->connected);
    assert_string_equal(n->disconnect_reason, "client_disconnect");
}

TL_TEST_FX(test_nodes)
{
    fx *f = *state;
    upsert(f, "n1", "edge", "r1");
    upsert(f, "n2", "edge", "r1");
    upsert(f, "n3", "internal", "r1");

    node_record *n;
    TL_OK(node_repo_get(f->c, "n1", f->s.a, &n, &e_));
    assert_string_equal(n->group, "edge");
    assert_string_equal(n->ns, "prod");
    assert_string_equal(n->client, "envoy/1.30.1");
    assert_string_equal(n->replica_id, "r1");
    assert_true(n->connected);
    assert_string_equal(json_string_value(json_object_get(n->labels, "zone")), "a");
    assert_string_equal(json_string_value(json_object_get(n->metadata, "build")), "1.30.1");
    assert_int_equal(n->acked_version, 0);
    assert_null(n->acked_at);
    assert_int_equal(n->nack_count, 0);

    const char *ids[] = {"n1", "n2", "ghost"};
    int updated = -1;
    TL_OK(node_repo_touch(f->c, ids, 3, &updated, &e_));
    assert_int_equal(updated, 2);

    TL_OK(node_repo_record_ack(f->c, "n1", 3, &e_));
    TL_OK(node_repo_record_nack(f->c, "n2", 4, "route r1: unknown cluster", &e_));
    TL_OK(node_repo_record_nack(f->c, "n2", 4, "route r1: unknown cluster again", &e_));
    sx_err err;
    assert_int_equal(node_repo_record_ack(f->c, "ghost", 3, &err), SX_ENOTFOUND);
    assert_string_equal(err.message, "node ghost does not exist");
    TL_OK(node_repo_get(f->c, "n1", f->s.a, &n, &e_));
    assert_int_equal(n->acked_version, 3);
    assert_non_null(n->acked_at);
    TL_OK(node_repo_get(f->c, "n2", f->s.a, &n, &e_));
    assert_int_equal(n->last_nack_version, 4);
    assert_string_equal(n->last_nack_error, "route r1: unknown cluster again");
    assert_int_equal(n->nack_count, 2);
    assert_non_null(n->last_nack_at);

    /* List by group, in pages. */
    node_filter nf = {.group = "edge", .connected = -1, .limit = 1};
    node_list nl;
    TL_OK(node_repo_list(f->c, &nf, f->s.a, &nl, &e_));
    assert_int_equal(nl.count, 1);
    assert_string_equal(nl.items[0].node_id, "n1");
    assert_int_equal(nl.items[0].acked_version, 3);
    nf.cursor = nl.next_cursor;
    TL_OK(node_repo_list(f->c, &nf, f->s.a, &nl, &e_));
    assert_int_equal(nl.count, 1);
    assert_string_equal(nl.items[0].node_id, "n2");
    assert_null(nl.next_cursor);

    /* Only the holding replica marks a node disconnected. */
    bool changed = true;
    TL_OK(node_repo_mark_disconnected(f->c, "n1", "r2", "client_disconnect", &changed, &e_));
    assert_false(changed);
    TL_OK(node_repo_mark_disconnected(f->c, "n1", "r1", "client_disconnect", &changed, &e_));
    assert_true(changed);
    node_filter down = {.connected = 0};
    TL_OK(node_repo_list(f->c, &down, f->s.a, &nl, &e_));
    assert_int_equal(nl.count, 1);
    assert_string_equal(nl.items[0].node_id, "n1");

    /* Reconnecting elsewhere keeps its status; a replica's nodes go down together. */
    upsert(f, "n1", "edge", "r2");
    TL_OK(node_repo_get(f->c, "n1", f->s.a, &n, &e_));
    assert_true(n->connected);
    assert_string_equal(n->replica_id, "r2");
    assert_int_equal(n->acked_version, 3);
    int count = 0;
    TL_OK(node_repo_disconnect_replica(f->c, "r1", &count, &e_));
    assert_int_equal(count, 2);
    node_filter up = {.connected = 1};
    TL_OK(node_repo_list(f->c, &up, f->s.a, &nl, &e_));
    assert_int_equal(nl.count, 1);
    assert_string_equal(nl.items[0].node_id, "n1");

    /* Assignments. */
    const char *wave[] = {"n1", "n2"};
    TL_OK(node_repo_assign(f->c, wave, 2, 5, NULL, &updated, &e_));
    assert_int_equal(updated, 2);
    TL_OK(node_repo_get(f->c, "n2", f->s.a, &n, &e_));
    assert_int_equal(n->desired_version, 5);

    node_hello bad = {.node_id = "n9", .group = "", .replica_id = "r1"};
    assert_int_equal(node_repo_upsert(f->c, &bad, &err), SX_EINVAL);
    assert_string_equal(err.message, "group is required");
}

/* ------------------------------------------------------------- deployments */

TL_TEST_FX(test_deployments)
{
    fx *f = *state;
    cfg_record *cfg = create_config(f, "default", "web", "edge", "{}");
    const char *w0[] = {"n1"}, *w1[] = {"n2", "n3"}, *w2[] = {"n4", "n5", "n6"};
    json_t *target = json_pack("{s:i}", "edge", 7);
    deploy_wave_new waves[] = {{w0, 1, target, NULL}, {w1, 2, target, NULL}, {w2, 3, target, NULL}};
    json_t *selector = json_pack("{s:[s]}", "groups", "edge");
    json_t *strategy = json_pack("{s:s, s:i}", "type", "rolling", "wave_size", 2);
    deploy_new in = {.config_id = cfg->id,
                     .config_version = 1,
                     .selector = selector,
                     .strategy = strategy,
                     .nack_threshold = -1,
                     .nack_min_sample = -1,
                     .created_by = "alice",
                     .reason = "roll out v1",
                     .waves = waves,
                     .wave_count = 3};
    deploy_record *d;
    TL_OK(deploy_repo_create(f->c, &in, f->s.a, &d, &e_));
    assert_int_equal(d->state, DEPLOY_PENDING);
    assert_int_equal(d->wave_count, 3);
    assert_int_equal(d->current_wave, -1);
    assert_true(d->nack_threshold > 0.0499 && d->nack_threshold < 0.0501);
    assert_int_equal(d->nack_min_sample, 10);
    assert_int_equal(d->wave_timeout_ms, 600000);
    assert_true(json_equal(d->selector, selector));
    assert_true(json_equal(d->strategy, strategy));
    assert_int_equal(d->waves[2].index, 2);
    assert_int_equal(d->waves[2].node_count, 3);
    assert_string_equal(d->waves[2].node_ids[2], "n6");
    assert_true(json_equal(d->waves[1].target_snapshots, target));
    assert_null(d->started_at);

    /* Compare-and-set on the state: right expectation moves it, a stale one does not. */
    sx_err err;
    TL_OK(deploy_repo_set_state(f->c, d->id, DEPLOY_PENDING, DEPLOY_IN_PROGRESS, NULL, &e_));
    assert_int_equal(
        deploy_repo_set_state(f->c, d->id, DEPLOY_PENDING, DEPLOY_PAUSED, "pause", &err),
        SX_EPRECONDITION);
    assert_non_null(strstr(err.message, "is in_progress, not pending"));
    TL_OK(deploy_repo_set_current_wave(f->c, d->id, DEPLOY_IN_PROGRESS, 0, &e_));

    /* Waves: counters, state and errors; a stale wave expectation is refused. */
    deploy_wave_update u = DEPLOY_WAVE_UPDATE_INIT;
    u.expected_state = DEPLOY_WAVE_PENDING;
    u.state = DEPLOY_WAVE_IN_PROGRESS;
    TL_OK(deploy_repo_update_wave(f->c, d->id, 0, &u, &e_));
    assert_int_equal(deploy_repo_update_wave(f->c, d->id, 0, &u, &err), SX_EPRECONDITION);
    json_t *nack = json_pack("{s:s, s:i, s:s}", "node_id", "n1", "version", 7, "error", "bad");
    deploy_wave_update counts = DEPLOY_WAVE_UPDATE_INIT;
    counts.acks = 0;
    counts.nacks = 1;
    counts.append_error = nack;
    TL_OK(deploy_repo_update_wave(f->c, d->id, 0, &counts, &e_));
    assert_int_equal(deploy_repo_update_wave(f->c, d->id, 9, &counts, &err), SX_ENOTFOUND);

    deploy_record *got;
    TL_OK(deploy_repo_get(f->c, d->id, f->s.a, &got, &e_));
    assert_int_equal(got->state, DEPLOY_IN_PROGRESS);
    assert_non_null(got->started_at);
    assert_int_equal(got->current_wave, 0);
    assert_int_equal(got->waves[0].state, DEPLOY_WAVE_IN_PROGRESS);
    assert_non_null(got->waves[0].started_at);
    assert_int_equal(got->waves[0].nacks, 1);
    assert_int_equal(json_array_size(got->waves[0].errors), 1);
    assert_true(json_equal(json_array_get(got->waves[0].errors, 0), nack));
    assert_int_equal(got->waves[1].state, DEPLOY_WAVE_PENDING);

    /* Lease: one driver at a time; the holder renews. */
    bool claimed = false;
    TL_OK(deploy_repo_claim(f->c, d->id, "r1", 30000, &claimed, &e_));
    assert_true(claimed);
    TL_OK(deploy_repo_claim(f->c, d->id, "r2", 30000, &claimed, &e_));
    assert_false(claimed);
    TL_OK(deploy_repo_claim(f->c, d->id, "r1", 30000, &claimed, &e_));
    assert_true(claimed);

    /* List by state. */
    deploy_filter active = {.state_mask = 1u << DEPLOY_IN_PROGRESS};
    deploy_list dl;
    TL_OK(deploy_repo_list(f->c, &active, f->s.a, &dl, &e_));
    assert_int_equal(dl.count, 1);
    assert_string_equal(dl.items[0].id, d->id);
    deploy_filter pending = {.state_mask = 1u << DEPLOY_PENDING};
    TL_OK(deploy_repo_list(f->c, &pending, f->s.a, &dl, &e_));
    assert_int_equal(dl.count, 0);

    /* Final state: finished_at set, nothing left to drive. */
    TL_OK(
        deploy_repo_set_state(f->c, d->id, DEPLOY_IN_PROGRESS, DEPLOY_COMPLETED, "all acked", &e_));
    TL_OK(deploy_repo_get(f->c, d->id, f->s.a, &got, &e_));
    assert_non_null(got->finished_at);
    assert_string_equal(got->state_reason, "all acked");
    TL_OK(deploy_repo_claim(f->c, d->id, "r1", 30000, &claimed, &e_));
    assert_false(claimed);

    in.config_version = 9;
    assert_int_equal(deploy_repo_create(f->c, &in, f->s.a, &got, &err), SX_ENOTFOUND);
    json_decref(target);
    json_decref(selector);
    json_decref(strategy);
    json_decref(nack);
}

/* ------------------------------------------------------------------- audit */

TL_TEST_FX(test_audit)
{
    fx *f = *state;
    const struct {
        const char *actor, *action, *type, *id, *result;
    } rows[] = {
        {"alice", "config.create", "config", "c1", AUDIT_SUCCESS},
        {"bob", "config.update", "config", "c1", AUDIT_SUCCESS},
        {"mallory", "config.delete", "config", "c1", AUDIT_DENIED},
        {"alice", "deployment.pause", "deployment", "d1", AUDIT_SUCCESS},
        {"alice", "config.rollback", "config", "c2", AUDIT_FAILED},
    };
    long long ids[5];
    for (int i = 0; i < 5; i++) {
        json_t *details = json_pack("{s:i}", "seq", i);
        audit_new in = {.actor = rows[i].actor,
                        .actor_role = "operator",
                        .action = rows[i].action,
                        .resource_type = rows[i].type,
                        .resource_id = rows[i].id,
                        .result = rows[i].result,
                        .status_code = 200,
                        .request_id = "req-1",
                        .source_ip = i == 2 ? "2001:db8::7" : "10.0.0.7",
                        .details = details};
        TL_OK(audit_repo_append(f->c, &in, &ids[i], &e_));
        json_decref(details);
        if (i)
            assert_true(ids[i] > ids[i - 1]);
    }

    audit_list al;
    TL_OK(audit_repo_list(f->c, NULL, f->s.a, &al, &e_));
    assert_int_equal(al.count, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(al.items[i].id, ids[4 - i]); /* newest first */
    audit_entry *e = &al.items[2];
    assert_string_equal(e->actor, "mallory");
    assert_string_equal(e->result, "denied");
    assert_string_equal(e->source_ip, "2001:db8::7");
    assert_string_equal(e->request_id, "req-1");
    assert_string_equal(e->actor_role, "operator");
    assert_int_equal(e->status_code, 200);
    assert_int_equal(json_integer_value(json_object_get(e->details, "seq")), 2);
    assert_non_null(e->at);

    audit_filter by_actor = {.actor = "alice"};
    TL_OK(audit_repo_list(f->c, &by_actor, f->s.a, &al, &e_));
    assert_int_equal(al.count, 3);
    assert_string_equal(al.items[0].action, "config.rollback");
    audit_filter by_res = {.resource_type = "config", .resource_id = "c1"};
    TL_OK(audit_repo_list(f->c, &by_res, f->s.a, &al, &e_));
    assert_int_equal(al.count, 3);
    audit_filter denied = {.result = AUDIT_DENIED};
    TL_OK(audit_repo_list(f->c, &denied, f->s.a, &al, &e_));
    assert_int_equal(al.count, 1);
    assert_string_equal(al.items[0].actor, "mallory");
    audit_filter by_action = {.action = "deployment.pause"};
    TL_OK(audit_repo_list(f->c, &by_action, f->s.a, &al, &e_));
    assert_int_equal(al.count, 1);
    audit_filter future = {.since = "2999-01-01T00:00:00Z"};
    TL_OK(audit_repo_list(f->c, &future, f->s.a, &al, &e_));
    assert_int_equal(al.count, 0);
    audit_filter past = {.since = "2000-01-01T00:00:00Z", .until = "2999-01-01T00:00:00Z"};
    TL_OK(audit_repo_list(f->c, &past, f->s.a, &al, &e_));
    assert_int_equal(al.count, 5);

    /* Paging: 2 + 2 + 1, no overlap, newest first throughout. */
    audit_filter page = {.limit = 2};
    long long seen[5];
    size_t total = 0;
    for (int p = 0; p < 3; p++) {
        TL_OK(audit_repo_list(f->c, &page, f->s.a, &al, &e_));
        for (size_t i = 0; i < al.count; i++)
            seen[total++] = al.items[i].id;
        page.cursor = al.next_cursor;
        assert_true(p == 2 ? al.next_cursor == NULL : al.next_cursor != NULL);
    }
    assert_int_equal(total, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(seen[i], ids[4 - i]);

    sx_err err;
    audit_new bad = {.actor = "a", .action = "x", .resource_type = "t", .result = "maybe"};
    assert_int_equal(audit_repo_append(f->c, &bad, NULL, &err), SX_EINVAL);
    bad.result = AUDIT_SUCCESS;
    bad.source_ip = "not-an-ip";
    assert_int_equal(audit_repo_append(f->c, &bad, NULL, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "source_ip"));
    audit_filter bad_time = {.since = "yesterday-ish"};
    assert_int_equal(audit_repo_list(f->c, &bad_time, f->s.a, &al, &err), SX_EINVAL);
    TL_OK(audit_repo_list(f->c, NULL, f->s.a, &al, &e_));
    assert_int_equal(al.count, 5); /* nothing was written by the refused calls */
}

/* ----------------------------------------------------------------- cursors */

/* The JSON text inside a cursor: base64url without padding, decoded here by hand so
 * that the check does not lean on the code under test. NULL for a malformed one. */
static char *cursor_text(fx *f, const char *cursor)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert_non_null(cursor);
    size_t len = strlen(cursor);
    char *out = sx_arena_alloc(f->s.a, len + 1);
    size_t n = 0;
    unsigned bits = 0;
    int have = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = strchr(abc, cursor[i]);
        if (p == NULL)
            return NULL;
        bits = (bits << 6) | (unsigned)(p - abc);
        have += 6;
        if (have >= 8) {
            have -= 8;
            out[n++] = (char)((bits >> have) & 0xff);
        }
    }
    out[n] = '\0';
    return out;
}

static void assert_cursor(fx *f, const char *cursor, const char *want)
{
    char *got = cursor_text(f, cursor);
    assert_non_null(got);
    assert_string_equal(got, want);
}

/* Clients keep cursors across upgrades: every list's next_cursor is base64url of the
 * compact JSON array of the last row's sort key, and a cursor written that way by hand
 * continues the list; a key of the wrong kind is an invalid cursor. */
TL_TEST_FX(test_cursor_wire_format)
{
    fx *f = *state;
    sx_err err;
    char want[512];

    cfg_record *api = create_config(f, "default", "api", "edge", "{}");
    cfg_record *web = create_config(f, "default", "web", "edge", "{}");
    create_config(f, "other", "web", "internal", "{}");
    cfg_filter cf = {.limit = 2};
    cfg_list cl;
    TL_OK(cfg_repo_list(f->c, &cf, f->s.a, &cl, &e_));
    snprintf(want, sizeof(want), "[\"default\",\"web\",\"%s\"]", web->id);
    assert_cursor(f, cl.next_cursor, want);
    cf.cursor = "WyJkZWZhdWx0Iiwid2ViIiwibm9wZSJd"; /* ["default","web","nope"] */
    assert_int_equal(cfg_repo_list(f->c, &cf, f->s.a, &cl, &err), SX_EINVAL);
    assert_string_equal(err.message, "invalid cursor");
    cf.cursor = "WzFd"; /* [1]: one element, three wanted */
    assert_int_equal(cfg_repo_list(f->c, &cf, f->s.a, &cl, &err), SX_EINVAL);

    for (int v = 1; v < 3; v++) {
        json_t *spec = json_pack("{s:i}", "v", v);
        cfg_change ch = {.spec = spec, .author = "bob"};
        TL_OK(cfg_repo_add_version(f->c, api->id, v, &ch, f->s.a, NULL, &e_));
        json_decref(spec);
    }
    cfg_version_list vl;
    TL_OK(cfg_repo_list_versions(f->c, api->id, 1, NULL, f->s.a, &vl, &e_));
    assert_cursor(f, vl.next_cursor, "[3]");
    TL_OK(cfg_repo_list_versions(f->c, api->id, 5, "WzJd", f->s.a, &vl, &e_)); /* [2] */
    assert_int_equal(vl.count, 1);
    assert_int_equal(vl.items[0].version, 1);
    assert_null(vl.next_cursor);
    assert_int_equal(cfg_repo_list_versions(f->c, api->id, 1, "WyJ4Il0", f->s.a, &vl, &err),
                     SX_EINVAL); /* ["x"] */

    insert_snapshot(f, f->s.snaps, "edge", 1, api->id);
    snap_record *s2 = insert_snapshot(f, f->s.snaps, "edge", 2, api->id);
    insert_snapshot(f, f->s.snaps, "internal", 3, NULL);
    snap_group_list gl;
    TL_OK(snap_repo_list_groups(f->s.snaps, 1, NULL, f->s.a, &gl, &e_));
    assert_cursor(f, gl.next_cursor, "[\"edge\"]");
    TL_OK(snap_repo_list_groups(f->s.snaps, 1, "WyJ4Il0", f->s.a, &gl, &e_)); /* after "x" */
    assert_int_equal(gl.count, 0);
    assert_null(gl.next_cursor);
    assert_int_equal(snap_repo_list_groups(f->s.snaps, 1, "WzFd", f->s.a, &gl, &err), SX_EINVAL);
    snap_list sl;
    TL_OK(snap_repo_list_versions(f->s.snaps, "edge", 1, NULL, f->s.a, &sl, &e_));
    assert_cursor(f, sl.next_cursor, "[2]");
    TL_OK(snap_repo_list_versions(f->s.snaps, "edge", 1, "WzJd", f->s.a, &sl, &e_));
    assert_int_equal(sl.items[0].version, 1);
    assert_null(sl.next_cursor);
    TL_OK(snap_repo_list_all(f->s.snaps, 2, NULL, f->s.a, &sl, &e_));
    assert_int_equal(sl.items[1].id, s2->id);
    snprintf(want, sizeof(want), "[%lld]", s2->id);
    assert_cursor(f, sl.next_cursor, want);
    assert_int_equal(snap_repo_list_all(f->s.snaps, 2, "WyJ4Il0", f->s.a, &sl, &err), SX_EINVAL);

    upsert(f, "n1", "edge", "r1");
    upsert(f, "n2", "edge", "r1");
    node_filter nf = {.connected = -1, .limit = 1};
    node_list nl;
    TL_OK(node_repo_list(f->c, &nf, f->s.a, &nl, &e_));
    assert_cursor(f, nl.next_cursor, "[\"n1\"]");
    nf.cursor = "WzFd";
    assert_int_equal(node_repo_list(f->c, &nf, f->s.a, &nl, &err), SX_EINVAL);

    deploy_new dn = {.config_id = api->id,
                     .config_version = 1,
                     .nack_threshold = -1,
                     .nack_min_sample = -1,
                     .created_by = "alice"};
    deploy_record *d1, *d2;
    TL_OK(deploy_repo_create(f->c, &dn, f->s.a, &d1, &e_));
    TL_OK(deploy_repo_create(f->c, &dn, f->s.a, &d2, &e_));
    deploy_filter df = {.limit = 1};
    deploy_list dl;
    TL_OK(deploy_repo_list(f->c, &df, f->s.a, &dl, &e_));
    snprintf(want, sizeof(want), "[\"%s\",\"%s\"]", dl.items[0].created_at, dl.items[0].id);
    assert_cursor(f, dl.next_cursor, want);
    df.cursor = dl.next_cursor;
    TL_OK(deploy_repo_list(f->c, &df, f->s.a, &dl, &e_));
    assert_int_equal(dl.count, 1);
    assert_null(dl.next_cursor);
    df.cursor = "WyJ4Il0";
    assert_int_equal(deploy_repo_list(f->c, &df, f->s.a, &dl, &err), SX_EINVAL);

    long long aid[2];
    for (int i = 0; i < 2; i++) {
        audit_new an = {.actor = "alice",
                        .action = "config.update",
                        .resource_type = "config",
                        .result = AUDIT_SUCCESS};
        TL_OK(audit_repo_append(f->c, &an, &aid[i], &e_));
    }
    audit_filter af = {.limit = 1};
    audit_list al;
    TL_OK(audit_repo_list(f->c, &af, f->s.a, &al, &e_));
    snprintf(want, sizeof(want), "[%lld]", aid[1]);
    assert_cursor(f, al.next_cursor, want);
    af.cursor = "WyJ4Il0";
    assert_int_equal(audit_repo_list(f->c, &af, f->s.a, &al, &err), SX_EINVAL);

    long long eid[2];
    for (int i = 0; i < 2; i++) {
        event_new en = {.type = "config_rejected", .node_id = "n1", .group = "edge"};
        TL_OK(event_repo_insert(f->c, &en, &eid[i], &e_));
    }
    event_page ep;
    TL_OK(event_repo_list_node(f->c, "n1", "config_rejected", 1, NULL, f->s.a, &ep, &e_));
    snprintf(want, sizeof(want), "[%lld]", eid[1]);
    assert_cursor(f, ep.next_cursor, want);
    TL_OK(event_repo_list_node(f->c, "n1", "config_rejected", 1, ep.next_cursor, f->s.a, &ep, &e_));
    assert_int_equal(ep.count, 1);
    assert_int_equal(ep.items[0].id, eid[0]);
    assert_null(ep.next_cursor);
    assert_int_equal(
        event_repo_list_node(f->c, "n1", "config_rejected", 1, "WyJ4Il0", f->s.a, &ep, &err),
        SX_EINVAL);
}

TL_MAIN()
