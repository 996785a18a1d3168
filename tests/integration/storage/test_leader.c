/*
 * test_leader.c — leadership on a real PostgreSQL: the advisory lock is held by one
 * session at a time and freed when that session ends; of two replicas exactly one
 * leads; when the leader's session is killed it stops leading before the other takes
 * over with a term of its own; stopping the leader hands the lead over.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/base/clock.h"
#include "server/leader.h"
#include "server/supervisor.h"
#include "storage/pg_lock.h"
#include "storage/pg_pool.h"

/* Every leadership change of both replicas, in the order they happened. */
typedef struct change {
    int replica;
    bool leading;
    uint64_t term;
} change;

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static change changes[64];
static int nchanges;

typedef struct replica {
    int id;
    sup_supervisor *sup;
    leader *l;
    char name[32];
} replica;

static void on_change(void *ctx, bool leading, uint64_t term)
{
    replica *r = ctx;
    pthread_mutex_lock(&log_mu);
    if (nchanges < 64)
        changes[nchanges++] = (change){r->id, leading, term};
    pthread_mutex_unlock(&log_mu);
}

static void replica_start(replica *r, int id, const char *url)
{
    memset(r, 0, sizeof(*r));
    r->id = id;
    snprintf(r->name, sizeof(r->name), "test-replica-%d-%d", (int)getpid(), id);
    r->sup = sup_create(NULL, 5000);
    leader_options o = {.url = url,
                        .lock_name = "sextant/test-leader",
                        .replica = r->name,
                        .retry_ms = 100,
                        .check_ms = 100,
                        .lease_ms = 3000,
                        .sup = r->sup};
    r->l = leader_create(&o);
    leader_subscribe(r->l, on_change, r);
    sx_err err;
    assert_int_equal(sup_register(r->sup, "leader", &sup_thread_ops, leader_component(r->l), &err),
                     0);
    assert_int_equal(sup_start_all(r->sup, &err), 0);
}

static void replica_stop(replica *r)
{
    if (r->sup == NULL)
        return;
    assert_int_equal(sup_stop_all(r->sup), 0);
    sup_destroy(r->sup);
    leader_destroy(r->l);
    r->sup = NULL;
}

static bool wait_leader(replica *rs, int n, int *who, int ms)
{
    for (int64_t end = sx_monotonic_ms() + ms; sx_monotonic_ms() < end; usleep(20000)) {
        for (int i = 0; i < n; i++)
            if (rs[i].sup && leader_is_leader(rs[i].l)) {
                *who = i;
                return true;
            }
    }
    return false;
}

/* Terminates the backend whose application_name is app; returns how many it ended. */
static int terminate(const char *url, const char *app)
{
    pg_pool_options po = {.url = url, .size = 1};
    pg_pool *pool;
    sx_err err;
    assert_int_equal(pg_pool_create(&po, &pool, &err), 0);
    pg_conn *c;
    TL_OK(pg_acquire(pool, &c, &e_));
    const char *params[] = {app};
    PGresult *res;
    TL_OK(pg_exec(c,
                  "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE application_name = $1 AND datname = current_database()",
                  1, params, &res, &e_));
    int n = PQntuples(res);
    PQclear(res);
    pg_release(pool, c);
    pg_pool_destroy(pool);
    return n;
}

TL_TEST(test_lock_is_held_by_one_session)
{
    char *url = tl_db_create();
    pg_lock_options o = {.url = url, .application_name = "test-lock-a", .lease_ms = 3000};
    pg_lock_session *a, *b;
    TL_OK(pg_lock_open(&o, &a, &e_));
    o.application_name = "test-lock-b";
    TL_OK(pg_lock_open(&o, &b, &e_));
    bool held = false;
    TL_OK(pg_lock_try(a, "sextant/x", &held, &e_));
    assert_true(held);
    TL_OK(pg_lock_try(b, "sextant/x", &held, &e_));
    assert_false(held); /* taken by a */
    TL_OK(pg_lock_try(b, "sextant/other", &held, &e_));
    assert_true(held); /* another name is another lock */

    /* a's session dies: its check says so, and the lock is b's to take. */
    assert_int_equal(terminate(url, "test-lock-a"), 1);
    sx_err err;
    int rc = 0;
    for (int i = 0; i < 50 && (rc = pg_lock_check(a, &err)) == 0; i++)
        usleep(20000);
    assert_int_equal(rc, SX_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "lost"));
    TL_OK(pg_lock_try(b, "sextant/x", &held, &e_));
    assert_true(held);
    TL_OK(pg_lock_release(b, "sextant/x", &e_));
    pg_lock_close(a);
    pg_lock_close(b);

    /* No URL, no session. */
    pg_lock_options none = {0};
    pg_lock_session *s;
    assert_int_equal(pg_lock_open(&none, &s, &err), SX_EINVAL);
    assert_null(s);
    tl_db_drop(url);
}

TL_TEST(test_one_leader_and_take_over)
{
    char *url = tl_db_create();
    nchanges = 0;
    replica rs[2];
    replica_start(&rs[0], 0, url);
    replica_start(&rs[1], 1, url);
    int first = -1;
    assert_true(wait_leader(rs, 2, &first, 10000));
    /* A few retry periods later it is still exactly one. */
    usleep(500000);
    assert_true(leader_is_leader(rs[first].l));
    assert_false(leader_is_leader(rs[1 - first].l));
    assert_int_equal(leader_term(rs[first].l), 1);
    assert_int_equal(leader_term(rs[1 - first].l), 0);

    /* The leader's session is killed: it stops leading, the other takes over. */
    char app[96];
    snprintf(app, sizeof(app), "sextant-leader %s", rs[first].name);
    assert_int_equal(terminate(url, app), 1);
    int second;
    for (int64_t end = sx_monotonic_ms() + 10000; sx_monotonic_ms() < end; usleep(20000))
        if (leader_is_leader(rs[1 - first].l) && !leader_is_leader(rs[first].l))
            break;
    assert_true(leader_is_leader(rs[1 - first].l));
    second = 1 - first;

    /* First gained, then first lost, then second gained. A session the server ends
     * itself frees the lock at once, but a replica that takes the lock waits a check
     * interval and a check's deadline before it leads (see leader.h), so the first
     * has stopped by then; and it does not lead again. */
    pthread_mutex_lock(&log_mu);
    change got[64];
    int n = nchanges;
    memcpy(got, changes, sizeof(changes));
    pthread_mutex_unlock(&log_mu);
    assert_true(n >= 3);
    assert_int_equal(got[0].replica, first);
    assert_true(got[0].leading);
    int lost_at = -1, gained_at = -1;
    for (int i = 1; i < n; i++) {
        if (got[i].replica == first && !got[i].leading && lost_at < 0)
            lost_at = i;
        if (got[i].replica == second && got[i].leading && gained_at < 0)
            gained_at = i;
    }
    assert_true(lost_at > 0);
    assert_true(gained_at > lost_at);
    assert_false(leader_is_leader(rs[first].l));
    assert_int_equal(got[gained_at].term, 1); /* the second replica's first term */

    /* Stopping the leader hands the lead to the first replica again, with a new term. */
    replica_stop(&rs[second]);
    int again = -1;
    assert_true(wait_leader(rs, 2, &again, 10000));
    assert_int_equal(again, first);
    assert_int_equal(leader_term(rs[first].l), 2);
    replica_stop(&rs[first]);
    /* Stopping told it last: it gave term 2 up. */
    pthread_mutex_lock(&log_mu);
    change last = changes[nchanges - 1];
    pthread_mutex_unlock(&log_mu);
    assert_int_equal(last.replica, first);
    assert_false(last.leading);
    assert_int_equal(last.term, 2);
    tl_db_drop(url);
}

TL_TEST(test_without_database_never_leads)
{
    replica r;
    replica_start(&r, 0, NULL);
    usleep(200000);
    assert_false(leader_is_leader(r.l));
    assert_int_equal(leader_term(r.l), 0);
    replica_stop(&r);
}

TL_MAIN()
