/*
 * test_repo_revocations.c — revoked tokens against a real PostgreSQL
 * (storage/repo_revocations.c) and the in-memory copy every replica checks
 * (server/revocations.c): a revocation by jti and one by subject are stored and loaded,
 * a subject's latest time wins, bad input stores nothing, and the copy answers as the
 * table says once reloaded (jti, subject at or before its time, no iat).
 */
#include "tests/lib/testlib.h"

#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/revocations.h"
#include "storage/pg_pool.h"
#include "storage/repo_revocations.h"

typedef tl_sessions fx;

static long long rows(fx *f)
{
    PGresult *r = NULL;
    TL_OK(pg_exec(f->c, "SELECT count(*) FROM token_revocations", 0, NULL, &r, &e_));
    long long n = atoll(pg_get(r, 0, 0));
    PQclear(r);
    return n;
}

TL_TEST_SESSIONS(test_bad_input_stores_nothing)
{
    fx *f = *state;
    revoke_added out;
    sx_err err;
    char long_text[REVOKE_MAX_TEXT + 2];
    memset(long_text, 'x', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    assert_int_equal(revoke_repo_add(f->pool, NULL, NULL, NULL, f->a, &out, &err), SX_EINVAL);
    assert_int_equal(revoke_repo_add(f->pool, "j", "u", NULL, f->a, &out, &err), SX_EINVAL);
    assert_int_equal(revoke_repo_add(f->pool, "j", NULL, "2026-01-01T00:00:00Z", f->a, &out, &err),
                     SX_EINVAL);
    assert_int_equal(revoke_repo_add(f->pool, "", NULL, NULL, f->a, &out, &err), SX_EINVAL);
    assert_int_equal(revoke_repo_add(f->pool, NULL, long_text, NULL, f->a, &out, &err), SX_EINVAL);
    assert_int_equal(revoke_repo_add(f->pool, NULL, "u", "not a time", f->a, &out, &err),
                     SX_EINVAL);
    assert_string_equal(err.message, "invalid time \"not a time\"");
    assert_int_equal(rows(f), 0);
}

TL_TEST_SESSIONS(test_stored_loaded_and_checked)
{
    fx *f = *state;
    revoke_added out;
    TL_OK(revoke_repo_add(f->pool, "jti-1", NULL, NULL, f->a, &out, &e_));
    assert_true(out.id > 0);
    assert_null(out.issued_before);
    TL_OK(revoke_repo_add(f->pool, NULL, "bob", "2026-01-01T00:00:10Z", f->a, &out, &e_));
    assert_string_equal(out.issued_before, "2026-01-01T00:00:10.000000Z");
    /* A later cut for the same subject wins; an earlier one changes nothing. */
    TL_OK(revoke_repo_add(f->pool, NULL, "bob", "2026-01-01T00:01:40.5Z", f->a, &out, &e_));
    TL_OK(revoke_repo_add(f->pool, NULL, "bob", "2025-01-01T00:00:00Z", f->a, &out, &e_));
    TL_OK(revoke_repo_add(f->pool, NULL, "carol", NULL, f->a, &out, &e_));
    assert_non_null(out.issued_before); /* now */

    revoke_row *v = NULL;
    size_t n = 0;
    TL_OK(revoke_repo_load(f->pool, f->a, &v, &n, &e_));
    assert_int_equal(n, 3);
    const int64_t cut = 1767225600 + 100; /* 2026-01-01T00:01:40Z, rounded down */
    bool seen_jti = false, seen_bob = false, seen_carol = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i].jti) {
            assert_string_equal(v[i].jti, "jti-1");
            assert_null(v[i].subject);
            seen_jti = true;
        } else if (strcmp(v[i].subject, "bob") == 0) {
            assert_int_equal(v[i].issued_before, cut);
            seen_bob = true;
        } else {
            assert_string_equal(v[i].subject, "carol");
            seen_carol = true;
        }
    }
    assert_true(seen_jti && seen_bob && seen_carol);

    /* The copy a replica checks, loaded from the same rows. */
    revocations *r = NULL;
    TL_OK(revocations_create(f->pool, NULL, &r, &e_));
    assert_false(revocations_check(r, "jti-1", "alice", 1));
    TL_OK(revocations_reload(r, &e_));
    assert_true(revocations_check(r, "jti-1", "alice", 1));
    assert_false(revocations_check(r, "jti-2", "alice", 1));
    assert_false(revocations_check(r, NULL, NULL, -1));
    assert_true(revocations_check(r, NULL, "bob", cut - 1000));
    assert_true(revocations_check(r, NULL, "bob", cut));
    assert_false(revocations_check(r, NULL, "bob", cut + 1));
    assert_true(revocations_check(r, NULL, "bob", -1)); /* no iat */
    assert_false(revocations_check(r, NULL, "bobby", 0));
    assert_true(revocations_check(r, "whatever", "carol", cut));
    revocations_destroy(r);
}

TL_MAIN()
