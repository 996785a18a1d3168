/*
 * test_repo_idem.c — the stored answers of idempotency keys against a real PostgreSQL
 * (storage/repo_idem.c): a key claimed and answered in one transaction is found by the
 * next claim and by a lookup, per subject; a claim rolled back leaves the key free; a
 * claim that waits on a transaction holding the key sees that transaction's answer once
 * it commits; a key older than the TTL is unused for lookups and claims and is deleted
 * by the prune, which keeps the young ones; malformed keys are refused.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/hash.h"
#include "storage/pg_pool.h"
#include "storage/repo_idem.h"

#define DAY_MS (24LL * 3600 * 1000)

typedef tl_sessions fx;

static const char *hash_of(const char *text, char out[SX_SHA256_HEX_LEN + 1])
{
    sx_sha256_hex(text, strlen(text), out);
    return out;
}

/* Claims subject's key, which must be free, in a new transaction on c left open. */
static void claim_free_key(pg_conn *c, sx_arena *a, const char *subject, const char *key,
                           const char *hash)
{
    idem_record *rec = NULL;
    TL_OK(pg_begin(c, &e_));
    TL_OK(idem_repo_claim(c, subject, key, hash, DAY_MS, a, &rec, &e_));
    assert_null(rec);
}

/* Claims and answers subject's key in one committed transaction on c. */
static void store(pg_conn *c, sx_arena *a, const char *subject, const char *key, const char *hash,
                  int status, const char *body)
{
    claim_free_key(c, a, subject, key, hash);
    TL_OK(idem_repo_answer(c, subject, key, status, body, &e_));
    TL_OK(pg_commit(c, &e_));
}

TL_TEST_SESSIONS(test_claim_answer_lookup)
{
    fx *f = *state;
    char h1[65], h2[65];
    hash_of("POST\n/api/v1/configs\n{}", h1);
    hash_of("POST\n/api/v1/configs\n{\"x\":1}", h2);
    store(f->c, f->a, "alice", "k-1", h1, 201, "{\"id\":\"a\"}");

    idem_record *rec = NULL;
    TL_OK(idem_repo_get(f->c, "alice", "k-1", DAY_MS, f->a, &rec, &e_));
    assert_non_null(rec);
    assert_int_equal(rec->status, 201);
    assert_string_equal(rec->response, "{\"id\":\"a\"}");
    assert_string_equal(rec->request_hash, h1);

    /* A second claim finds the answer, whatever the request: comparing is the caller's. */
    TL_OK(pg_begin(f->c, &e_));
    TL_OK(idem_repo_claim(f->c, "alice", "k-1", h2, DAY_MS, f->a, &rec, &e_));
    assert_non_null(rec);
    assert_string_equal(rec->request_hash, h1);
    assert_int_equal(rec->status, 201);
    pg_rollback(f->c);

    /* Keys are per subject. */
    TL_OK(idem_repo_get(f->c, "bob", "k-1", DAY_MS, f->a, &rec, &e_));
    assert_null(rec);
    store(f->c, f->a, "bob", "k-1", h2, 200, "{}");
    TL_OK(idem_repo_get(f->c, "alice", "k-1", DAY_MS, f->a, &rec, &e_));
    assert_string_equal(rec->request_hash, h1);

    /* An answer needs a claim of this transaction. */
    sx_err err;
    TL_OK(pg_begin(f->c, &e_));
    assert_int_equal(idem_repo_answer(f->c, "carol", "k-1", 200, "{}", &err), SX_ENOTFOUND);
    pg_rollback(f->c);
}

TL_TEST_SESSIONS(test_rolled_back_claim_frees_the_key)
{
    fx *f = *state;
    char h[65];
    claim_free_key(f->w, f->a, "alice", "k-rb", hash_of("PUT\n/x\n", h));
    /* Uncommitted: invisible to a lookup, which does not wait. */
    idem_record *rec = NULL;
    TL_OK(idem_repo_get(f->c, "alice", "k-rb", DAY_MS, f->a, &rec, &e_));
    assert_null(rec);
    pg_rollback(f->w);
    store(f->c, f->a, "alice", "k-rb", h, 200, "{\"second\":true}");
}

typedef struct waiter {
    fx *f;
    const char *hash;
    idem_record *rec;
    sx_arena *a;
    int rc; /* the claim's (asserted by the test's thread) */
} waiter;

static void *claim_waiting(void *arg)
{
    waiter *wt = arg;
    pg_conn *c;
    wt->rc = pg_acquire(wt->f->pool, &c, NULL);
    if (wt->rc)
        return NULL;
    if ((wt->rc = pg_begin(c, NULL)) == 0)
        wt->rc = idem_repo_claim(c, "alice", "k-race", wt->hash, DAY_MS, wt->a, &wt->rec, NULL);
    pg_rollback(c);
    pg_release(wt->f->pool, c);
    return NULL;
}

/* Whether a session of this database waits on a lock in a claim. */
static bool claim_is_waiting(fx *f)
{
    PGresult *r = NULL;
    bool waiting =
        pg_exec(f->c,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO idempotency_keys%'",
                0, NULL, &r, NULL) == 0 &&
        strcmp(pg_get(r, 0, 0), "1") == 0;
    PQclear(r);
    return waiting;
}

TL_TEST_SESSIONS(test_claim_waits_for_the_holder)
{
    fx *f = *state;
    char h[65];
    claim_free_key(f->w, f->a, "alice", "k-race", hash_of("POST\n/race\n{}", h));

    waiter wt = {f, h, NULL, sx_arena_create(), -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, claim_waiting, &wt), 0);
    /* The second claim blocks on the key until the first transaction ends. */
    long long deadline = tl_now_ms() + 20000;
    while (!claim_is_waiting(f) && tl_now_ms() < deadline)
        tl_sleep_ms(20);
    assert_true(claim_is_waiting(f));
    TL_OK(idem_repo_answer(f->w, "alice", "k-race", 201, "{\"first\":true}", &e_));
    TL_OK(pg_commit(f->w, &e_));
    pthread_join(t, NULL);
    assert_int_equal(wt.rc, 0);
    assert_non_null(wt.rec);
    assert_int_equal(wt.rec->status, 201);
    assert_string_equal(wt.rec->response, "{\"first\":true}");
    sx_arena_destroy(wt.a);
}

static void age(fx *f, const char *key, const char *interval)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "UPDATE idempotency_keys SET created_at = now() - interval '%s' WHERE key = '%s'",
             interval, key);
    TL_OK(pg_exec(f->c, sql, 0, NULL, NULL, &e_));
}

TL_TEST_SESSIONS(test_expiry)
{
    fx *f = *state;
    char h1[65], h2[65];
    store(f->c, f->a, "alice", "k-old", hash_of("a", h1), 200, "{\"old\":true}");
    store(f->c, f->a, "alice", "k-older", h1, 200, "{}");
    store(f->c, f->a, "alice", "k-young", h1, 200, "{}");
    age(f, "k-old", "25 hours");
    age(f, "k-older", "3 days");
    age(f, "k-young", "23 hours");

    idem_record *rec = NULL;
    TL_OK(idem_repo_get(f->c, "alice", "k-old", DAY_MS, f->a, &rec, &e_));
    assert_null(rec);
    TL_OK(idem_repo_get(f->c, "alice", "k-young", DAY_MS, f->a, &rec, &e_));
    assert_non_null(rec);

    /* An expired key is claimed anew, by another request. */
    store(f->c, f->a, "alice", "k-old", hash_of("b", h2), 201, "{\"new\":true}");
    TL_OK(idem_repo_get(f->c, "alice", "k-old", DAY_MS, f->a, &rec, &e_));
    assert_string_equal(rec->request_hash, h2);
    assert_string_equal(rec->response, "{\"new\":true}");

    long long deleted = -1;
    TL_OK(idem_repo_prune(f->c, DAY_MS, &deleted, &e_));
    assert_int_equal(deleted, 1); /* k-older; k-old was renewed, k-young is young */
    TL_OK(idem_repo_get(f->c, "alice", "k-young", DAY_MS, f->a, &rec, &e_));
    assert_non_null(rec);
    TL_OK(idem_repo_get(f->c, "alice", "k-older", 30 * DAY_MS, f->a, &rec, &e_));
    assert_null(rec);
    sx_err err;
    assert_int_equal(idem_repo_prune(f->c, -1, NULL, &err), SX_EINVAL);
}

TL_TEST_SESSIONS(test_bad_input)
{
    fx *f = *state;
    char k255[256], k256[257], h[65];
    memset(k255, 'k', 255);
    k255[255] = '\0';
    memset(k256, 'k', 256);
    k256[256] = '\0';
    assert_true(idem_repo_key_valid(k255));
    assert_true(idem_repo_key_valid("a b~!"));
    assert_false(idem_repo_key_valid(k256));
    assert_false(idem_repo_key_valid(""));
    assert_false(idem_repo_key_valid(NULL));
    assert_false(idem_repo_key_valid("a\tb"));
    assert_false(idem_repo_key_valid("cl\xc3\xa9"));
    hash_of("x", h);
    idem_record *rec = NULL;
    sx_err err;
    TL_OK(pg_begin(f->c, &e_));
    assert_int_equal(idem_repo_claim(f->c, "alice", k256, h, DAY_MS, f->a, &rec, &err), SX_EINVAL);
    assert_int_equal(idem_repo_claim(f->c, "", "k", h, DAY_MS, f->a, &rec, &err), SX_EINVAL);
    assert_int_equal(idem_repo_claim(f->c, "alice", "k", "abc", DAY_MS, f->a, &rec, &err),
                     SX_EINVAL);
    pg_rollback(f->c);
    store(f->c, f->a, "alice", k255, h, 200, "{}");
}

TL_MAIN()
