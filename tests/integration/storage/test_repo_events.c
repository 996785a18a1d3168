/*
 * test_repo_events.c — the live events table against a real PostgreSQL
 * (storage/repo_events.c, and server/events.c's events_emit on top of it):
 * events come back in stream order with their fields; an event whose transaction is
 * still open holds back every event that sorts after it (pending), and one whose
 * transaction took an older id than a committed one is still streamed, in transaction
 * order, so a reader moving forward never skips it; head, position (also of a pruned
 * id) and prune; emit refuses unknown types and NOTIFYs once per transaction.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/events.h"
#include "storage/pg_pool.h"
#include "storage/repo_events.h"

typedef struct fx {
    tl_sessions s;   /* s.c the reader's connection, s.w a second writer */
    PGconn *other;   /* a session in another database, closed by teardown */
    char *other_url; /* that database, dropped by teardown */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    tl_sessions_open(&f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->other)
        PQfinish(f->other);
    if (f->other_url)
        tl_db_drop(f->other_url);
    tl_sessions_close(&f->s);
    free(f);
    return 0;
}

static long long insert(pg_conn *c, const char *type, const char *node)
{
    event_new in = {.type = type, .replica_id = "r1", .node_id = node};
    long long id = 0;
    TL_OK(event_repo_insert(c, &in, &id, &e_));
    assert_true(id > 0);
    return id;
}

/* The ids of every settled event after pos, comma-separated, into out; *pending too. */
static const char *ids_after(fx *f, event_pos pos, long long min_id, char *out, size_t n,
                             bool *pending)
{
    event_list l;
    TL_OK(event_repo_list_after(f->s.c, &pos, min_id, NULL, 1000, f->s.a, &l, &e_));
    out[0] = '\0';
    for (size_t i = 0; i < l.count; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%lld", i ? "," : "", l.items[i].id);
    }
    if (pending)
        *pending = l.pending;
    return out;
}

/* event_repo_list_after once nothing is pending (within 10 s): other tests' transactions
 * in the same cluster may hold committed events back for a moment. */
static void list_settled(fx *f, const event_pos *after, int limit, event_list *l)
{
    TL_OK(event_repo_list_after(f->s.c, after, 0, NULL, limit, f->s.a, l, &e_));
    for (long long until = tl_now_ms() + 10000; l->pending && tl_now_ms() < until;) {
        tl_sleep_ms(20);
        TL_OK(event_repo_list_after(f->s.c, after, 0, NULL, limit, f->s.a, l, &e_));
    }
}

/* Waits until every committed event is settled. A transaction of this database that
 * started elsewhere (autovacuum's analyze writes statistics) or one whose database could
 * not be told any more holds the settled horizon back for a moment, so a test asserts
 * what an open transaction of its own holds back only while that transaction is open,
 * and reads committed events only once they have settled. */
static void settle(fx *f)
{
    event_pos zero = {0, 0};
    event_list l;
    list_settled(f, &zero, 1000, &l);
    assert_false(l.pending);
}

static void exec(pg_conn *c, const char *sql)
{
    TL_OK(pg_exec(c, sql, 0, NULL, NULL, &e_));
}

TL_TEST_FX(test_round_trip)
{
    fx *f = *state;
    json_t *data = json_pack("{s:I,s:s}", "version", (json_int_t)4, "error", "bad route");
    event_new in = {.type = "config_rejected",
                    .replica_id = "r1",
                    .node_id = "n1",
                    .group = "edge",
                    .data = data};
    long long id;
    TL_OK(event_repo_insert(f->s.c, &in, &id, &e_));
    json_decref(data);
    event_new dep = {.type = "wave_started",
                     .deployment_id = "3F1D2C44-5B6E-4F70-8A91-B2C3D4E5F607",
                     .notify_channel = "sextant_events"};
    long long id2;
    TL_OK(event_repo_insert(f->s.c, &dep, &id2, &e_));
    assert_true(id2 > id);

    event_pos zero = {0, 0};
    event_list l;
    list_settled(f, &zero, 10, &l);
    assert_int_equal(l.count, 2);
    assert_false(l.more);
    assert_false(l.pending);
    const event_record *e = &l.items[0];
    assert_int_equal(e->id, id);
    assert_int_equal(e->pos.id, id);
    assert_true(e->pos.txid > 0);
    assert_string_equal(e->type, "config_rejected");
    assert_string_equal(e->replica_id, "r1");
    assert_string_equal(e->node_id, "n1");
    assert_string_equal(e->group, "edge");
    assert_null(e->deployment_id);
    assert_int_equal(e->at[strlen(e->at) - 1], 'Z');
    assert_int_equal(json_integer_value(json_object_get(e->data, "version")), 4);
    assert_string_equal(json_string_value(json_object_get(e->data, "error")), "bad route");
    assert_string_equal(l.items[1].deployment_id, "3f1d2c44-5b6e-4f70-8a91-b2c3d4e5f607");
    assert_null(l.items[1].node_id);
    assert_int_equal(json_object_size(l.items[1].data), 0);

    /* Pages: limit 1 says more; the next page starts after the first. */
    list_settled(f, &zero, 1, &l);
    assert_int_equal(l.count, 1);
    assert_true(l.more);
    event_pos p1 = l.items[0].pos;
    list_settled(f, &p1, 1, &l);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].id, id2);

    /* Bad input writes nothing. */
    sx_err err;
    event_new bad = {.type = "wave_started", .deployment_id = "not-a-uuid"};
    assert_int_equal(event_repo_insert(f->s.c, &bad, NULL, &err), SX_EINVAL);
    json_t *arr = json_array();
    event_new bad2 = {.type = "wave_started", .data = arr};
    assert_int_equal(event_repo_insert(f->s.c, &bad2, NULL, &err), SX_EINVAL);
    json_decref(arr);
    event_new bad3 = {.type = "not_a_type"};
    assert_int_equal(event_repo_insert(f->s.c, &bad3, NULL, &err), SX_EINVAL); /* the CHECK */
    assert_int_equal(event_repo_list_after(f->s.c, &zero, 0, NULL, 0, f->s.a, &l, &err), SX_EINVAL);
    list_settled(f, &zero, 10, &l);
    assert_int_equal(l.count, 2);
}

/* An open transaction's event holds back what sorts after it; committed, it comes
 * first. */
TL_TEST_FX(test_open_transaction_holds_back)
{
    fx *f = *state;
    event_pos head;
    TL_OK(event_repo_head(f->s.c, &head, &e_));
    assert_int_equal(head.id, 0);
    long long a = insert(f->s.c, "proxy_connected", "a");
    settle(f);
    TL_OK(event_repo_head(f->s.c, &head, &e_));
    assert_int_equal(head.id, a);

    TL_OK(pg_begin(f->s.w, &e_));
    long long b = insert(f->s.w, "proxy_connected", "b"); /* not committed */
    long long c = insert(f->s.c, "proxy_connected", "c"); /* committed, newer transaction */
    assert_true(c > b);
    char ids[256];
    bool pending;
    ids_after(f, (event_pos){0, 0}, 0, ids, sizeof(ids), &pending);
    /* a is settled; c is not (b's transaction is older and open). */
    char want[64];
    snprintf(want, sizeof(want), "%lld", a);
    assert_string_equal(ids, want);
    assert_true(pending);
    TL_OK(event_repo_head(f->s.c, &head, &e_));
    assert_int_equal(head.id, a); /* the head does not pass the open transaction */

    TL_OK(pg_commit(f->s.w, &e_));
    settle(f);
    ids_after(f, head, 0, ids, sizeof(ids), &pending);
    snprintf(want, sizeof(want), "%lld,%lld", b, c);
    assert_string_equal(ids, want);
    assert_false(pending);
}

/* A write transaction left open in another database of the same cluster (another
 * tenant, another test) holds nothing back: it can never insert into this events table. */
TL_TEST_FX(test_other_database_holds_nothing_back)
{
    fx *f = *state;
    f->other_url = tl_db_create();
    PGconn *other = f->other = PQconnectdb(f->other_url);
    assert_int_equal(PQstatus(other), CONNECTION_OK);
    PGresult *r = PQexec(other, "BEGIN");
    PQclear(r);
    r = PQexec(other, "SELECT pg_current_xact_id()"); /* an xid, older than a's */
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);

    long long a = insert(f->s.c, "proxy_connected", "a");
    event_pos head;
    TL_OK(event_repo_head(f->s.c, &head, &e_));
    for (long long until = tl_now_ms() + 10000; head.id != a && tl_now_ms() < until;) {
        tl_sleep_ms(20);
        TL_OK(event_repo_head(f->s.c, &head, &e_));
    }
    assert_int_equal(head.id, a);
    char ids[256], want[64];
    bool pending = true;
    ids_after(f, (event_pos){0, 0}, 0, ids, sizeof(ids), &pending);
    snprintf(want, sizeof(want), "%lld", a);
    assert_string_equal(ids, want);
    assert_false(pending);
    bool found = false;
    event_pos pos;
    TL_OK(event_repo_position(f->s.c, 0, &pos, &found, &e_));
    ids_after(f, pos, 0, ids, sizeof(ids), NULL);
    assert_string_equal(ids, want);

    PQclear(PQexec(other, "COMMIT"));
}

/* A transaction that took its id after another committed, but started (got its
 * transaction id) before it, is streamed before it: a reader that had moved past the
 * other one by id would have lost it. */
TL_TEST_FX(test_stream_order_is_transaction_order)
{
    fx *f = *state;
    TL_OK(pg_begin(f->s.w, &e_));
    exec(f->s.w, "SELECT pg_current_xact_id()"); /* the old transaction's id, taken now */
    long long newer = insert(f->s.c, "proxy_connected", "newer");
    char ids[256];
    bool pending;
    ids_after(f, (event_pos){0, 0}, 0, ids, sizeof(ids), &pending);
    assert_string_equal(ids, ""); /* held back behind the open transaction */
    assert_true(pending);
    long long older = insert(f->s.w, "proxy_connected", "older");
    assert_true(older > newer);
    TL_OK(pg_commit(f->s.w, &e_));
    settle(f);
    ids_after(f, (event_pos){0, 0}, 0, ids, sizeof(ids), &pending);
    char want[64];
    snprintf(want, sizeof(want), "%lld,%lld", older, newer);
    assert_string_equal(ids, want);

    /* Resuming after the first streamed event gives the second, though its id is lower. */
    event_pos pos;
    bool found;
    TL_OK(event_repo_position(f->s.c, older, &pos, &found, &e_));
    assert_true(found);
    ids_after(f, pos, 0, ids, sizeof(ids), NULL);
    snprintf(want, sizeof(want), "%lld", newer);
    assert_string_equal(ids, want);
    TL_OK(event_repo_position(f->s.c, newer, &pos, &found, &e_));
    ids_after(f, pos, 0, ids, sizeof(ids), NULL);
    assert_string_equal(ids, "");

    /* upto bounds a page, inclusive. */
    event_pos zero = {0, 0}, upto;
    TL_OK(event_repo_position(f->s.c, older, &upto, &found, &e_));
    event_list l;
    TL_OK(event_repo_list_after(f->s.c, &zero, 0, &upto, 10, f->s.a, &l, &e_));
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].id, older);
    assert_false(l.pending);
}

TL_TEST_FX(test_position_prune)
{
    fx *f = *state;
    long long a = insert(f->s.c, "proxy_connected", "a");
    long long b = insert(f->s.c, "proxy_stale", "b");
    long long c = insert(f->s.c, "proxy_disconnected", "c");
    char sql[128];
    snprintf(sql, sizeof(sql), "DELETE FROM events WHERE id = %lld", b);
    exec(f->s.c, sql);
    settle(f);

    /* A pruned id: before every event with a greater id, which min_id keeps to. */
    event_pos pos;
    bool found = true;
    TL_OK(event_repo_position(f->s.c, b, &pos, &found, &e_));
    assert_false(found);
    char ids[256], want[64];
    ids_after(f, pos, b, ids, sizeof(ids), NULL);
    snprintf(want, sizeof(want), "%lld", c);
    assert_string_equal(ids, want);
    /* An id past every event: the head. */
    event_pos head;
    TL_OK(event_repo_head(f->s.c, &head, &e_));
    TL_OK(event_repo_position(f->s.c, c + 1000, &pos, &found, &e_));
    assert_false(found);
    assert_int_equal(pos.id, head.id);
    assert_true(pos.txid == head.txid);
    /* 0: everything retained. */
    TL_OK(event_repo_position(f->s.c, 0, &pos, &found, &e_));
    ids_after(f, pos, 0, ids, sizeof(ids), NULL);
    snprintf(want, sizeof(want), "%lld,%lld", a, c);
    assert_string_equal(ids, want);
    sx_err err;
    assert_int_equal(event_repo_position(f->s.c, -1, &pos, &found, &err), SX_EINVAL);

    /* Prune by age. */
    snprintf(sql, sizeof(sql), "UPDATE events SET at = now() - interval '2 days' WHERE id = %lld",
             a);
    exec(f->s.c, sql);
    long long deleted = -1;
    TL_OK(event_repo_prune(f->s.c, 24LL * 3600 * 1000, &deleted, &e_));
    assert_int_equal(deleted, 1);
    TL_OK(event_repo_position(f->s.c, 0, &pos, &found, &e_));
    ids_after(f, pos, 0, ids, sizeof(ids), NULL);
    snprintf(want, sizeof(want), "%lld", c);
    assert_string_equal(ids, want);
}

TL_TEST_FX(test_emit)
{
    fx *f = *state;
    /* The NOTIFY arrives on a session listening on the channel, after the commit. */
    PGconn *l = PQconnectdb(f->s.url);
    assert_int_equal(PQstatus(l), CONNECTION_OK);
    PQclear(PQexec(l, "LISTEN " EVENTS_NOTIFY_CHANNEL));

    json_t *data = json_pack("{s:I}", "version", (json_int_t)7);
    sx_event e = {.type = EVENT_CONFIG_APPLIED, .node_id = "n1", .group = "edge", .data = data};
    TL_OK(pg_begin(f->s.c, &e_));
    TL_OK(events_emit(f->s.c, "r9", &e, &e_));
    TL_OK(events_emit(f->s.c, "r9", &e, &e_));
    PQconsumeInput(l);
    assert_null(PQnotifies(l)); /* not before the commit */
    TL_OK(pg_commit(f->s.c, &e_));
    json_decref(data);
    PGnotify *n = NULL;
    for (int i = 0; i < 100 && n == NULL; i++) {
        PQconsumeInput(l);
        n = PQnotifies(l);
        if (n == NULL)
            tl_sleep_ms(20);
    }
    assert_non_null(n);
    assert_string_equal(n->relname, EVENTS_NOTIFY_CHANNEL);
    assert_string_equal(n->extra, ""); /* readers look for new rows; no id to carry */
    PQfreemem(n);
    tl_sleep_ms(100);
    PQconsumeInput(l);
    assert_null(PQnotifies(l)); /* two events, one transaction: one notification */
    event_pos zero = {0, 0};
    event_list list;
    list_settled(f, &zero, 10, &list);
    assert_int_equal(list.count, 2);
    assert_string_equal(list.items[0].replica_id, "r9");
    assert_string_equal(list.items[0].type, "config_applied");

    /* A rolled back emit leaves nothing and notifies nothing. */
    TL_OK(pg_begin(f->s.c, &e_));
    sx_event e2 = {.type = EVENT_PROXY_STALE, .node_id = "n2"};
    TL_OK(events_emit(f->s.c, "r9", &e2, &e_));
    pg_rollback(f->s.c);
    tl_sleep_ms(100);
    PQconsumeInput(l);
    assert_null(PQnotifies(l));
    TL_OK(event_repo_list_after(f->s.c, &zero, 0, NULL, 10, f->s.a, &list, &e_));
    assert_int_equal(list.count, 2);

    sx_err err;
    sx_event bad = {.type = "config_aplied"};
    assert_int_equal(events_emit(f->s.c, "r9", &bad, &err), SX_EINVAL);
    assert_non_null(strstr(err.message, "config_aplied"));
    PQfinish(l);

    /* The type table. */
    assert_int_equal(events_type_index("deployment_started"), EVENTS_NTYPES - 3);
    assert_int_equal(events_type_index("alert_resolved"), EVENTS_NTYPES - 1);
    assert_int_equal(events_type_index("nope"), -1);
    assert_null(events_type_name(EVENTS_NTYPES));
    assert_string_equal(events_type_resource("rollback_completed"), "deployments");
    assert_string_equal(events_type_resource("config_rejected"), "proxies");
    assert_string_equal(events_type_resource("config_created"), "configs");
    assert_string_equal(events_type_resource("snapshot_generated"), "snapshots");
    assert_string_equal(events_type_resource("deployment_started"), "deployments");
    assert_null(events_type_resource("nope"));
}

TL_MAIN()
