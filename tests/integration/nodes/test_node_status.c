/*
 * test_node_status.c — node events reach proxy_nodes / node_status through the
 * debounced queue: identities on connect, ACK after the debounce window (one a deployment
 * waits for at once), NACK and disconnect at once, bounded memory with counted drops,
 * nothing lost at shutdown; the live events of what a flush writes, in its transaction
 * (server/events.h), also for many ACKs, connects and stream ends written with a
 * statement for all of them.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/arena.h"
#include "server/base/metrics.h"
#include "server/nodes/status.h"
#include "storage/pg_pool.h"
#include "storage/repo_common.h"
#include "storage/repo_events.h"
#include "storage/repo_nodes.h"

typedef struct fixture {
    char *url;
    pg_pool *pool;
    sx_metrics *metrics;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->url = tl_db_create_migrated();
    f->pool = tl_pool(f->url, 4);
    f->metrics = sx_metrics_create();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pg_pool_destroy(f->pool);
    sx_metrics_destroy(f->metrics);
    tl_db_drop(f->url);
    free(f);
    return 0;
}

/* Reads a node; returns false when it is not in the database yet. */
static bool get_node(fixture *f, const char *id, sx_arena *a, node_record **out)
{
    pg_conn *c;
    sx_err err;
    assert_int_equal(pg_acquire(f->pool, &c, &err), 0);
    int rc = node_repo_get(c, id, a, out, &err);
    pg_release(f->pool, c);
    return rc == 0;
}

static json_t *parse(const char *s)
{
    json_error_t e;
    return json_loads(s, 0, &e);
}

/* A queue of replica on the fixture's pool with a long debounce window (only critical
 * events may be written early), at most max_pending nodes with routine updates (0: the
 * default) and the fixture's metrics when with_metrics. */
static node_status_queue *open_queue(fixture *f, const char *replica, int max_pending,
                                     bool with_metrics)
{
    node_status_options o = {.pool = f->pool,
                             .replica_id = replica,
                             .flush_interval_ms = 60000,
                             .max_pending = max_pending,
                             .metrics = with_metrics ? f->metrics : NULL};
    node_status_queue *q = NULL;
    sx_err err;
    assert_int_equal(node_status_create(&o, &q, &err), 0);
    return q;
}

TL_TEST_FX(test_events_reach_the_database)
{
    fixture *f = *state;
    node_status_queue *q = open_queue(f, "replica-a", 0, true);
    sx_err err;

    json_t *labels = parse("{\"tier\":\"edge\"}");
    json_t *locality = parse("{\"region\":\"eu\",\"zone\":\"eu-1a\"}");
    node_identity id = {.node_id = "envoy-1",
                        .group = "edge",
                        .protocol = "ads-sotw",
                        .user_agent = "envoy 1.30.1",
                        .labels = labels,
                        .locality = locality};
    node_status_connected(q, &id);
    json_decref(labels);
    json_decref(locality);

    /* A connect is critical: it is written well before the 60 s window. */
    sx_arena *a = sx_arena_create();
    node_record *n = NULL;
    long long deadline = tl_now_ms() + 5000;
    while (!get_node(f, "envoy-1", a, &n) && tl_now_ms() < deadline)
        tl_sleep_ms(20);
    assert_non_null(n);
    assert_string_equal(n->group, "edge");
    assert_true(n->connected);
    assert_string_equal(n->replica_id, "replica-a");
    assert_string_equal(n->client, "envoy 1.30.1");
    assert_string_equal(n->protocol, "ads-sotw");
    assert_string_equal(json_string_value(json_object_get(n->locality, "zone")), "eu-1a");
    assert_string_equal(json_string_value(json_object_get(n->labels, "tier")), "edge");

    /* An ACK waits for the window (or an explicit flush). */
    node_status_desired(q, "envoy-1", 7);
    node_status_ack(q, "envoy-1", 7);
    tl_sleep_ms(300);
    assert_true(get_node(f, "envoy-1", a, &n));
    assert_int_equal(n->acked_version, 0);
    assert_int_equal(node_status_flush(q, &err), 0);
    assert_true(get_node(f, "envoy-1", a, &n));
    assert_int_equal(n->acked_version, 7);
    assert_int_equal(n->sent_version, 7);

    /* A health report is kept with its time of observation. */
    node_status_report(q, "envoy-1", false, "7", "draining listeners", "2026-11-21T01:02:03Z");
    assert_int_equal(node_status_flush(q, &err), 0);
    assert_true(get_node(f, "envoy-1", a, &n));
    assert_true(n->reported);
    assert_false(n->report_ready);
    assert_string_equal(n->report_version, "7");
    assert_string_equal(n->report_message, "draining listeners");
    assert_string_equal(n->reported_at, "2026-11-21T01:02:03.000000Z");

    /* A NACK is critical: written without a flush, error kept, counted. */
    node_status_nack(q, "envoy-1", 8, "cluster edge/api: unknown lb policy");
    deadline = tl_now_ms() + 5000;
    while (tl_now_ms() < deadline) {
        assert_true(get_node(f, "envoy-1", a, &n));
        if (n->nack_count == 1)
            break;
        tl_sleep_ms(20);
    }
    assert_int_equal(n->nack_count, 1);
    assert_int_equal(n->last_nack_version, 8);
    assert_string_equal(n->last_nack_error, "cluster edge/api: unknown lb policy");
    assert_int_equal(n->acked_version, 7); /* the last good version stays */

    /* An ACK a deployment waits for is critical: written well before the window. */
    node_status_ack_awaited(q, "envoy-1", 9);
    deadline = tl_now_ms() + 5000;
    while (get_node(f, "envoy-1", a, &n) && n->acked_version != 9 && tl_now_ms() < deadline)
        tl_sleep_ms(20);
    assert_int_equal(n->acked_version, 9);

    /* A disconnect is critical too, with its reason. */
    node_status_disconnected(q, "envoy-1", 0, "superseded");
    deadline = tl_now_ms() + 5000;
    while (tl_now_ms() < deadline) {
        assert_true(get_node(f, "envoy-1", a, &n));
        if (!n->connected)
            break;
        tl_sleep_ms(20);
    }
    assert_false(n->connected);
    assert_string_equal(n->disconnect_reason, "superseded");

    /* What is pending at shutdown is written by destroy. */
    node_identity id2 = {.node_id = "grpc-1", .group = "edge", .protocol = "ads-sotw"};
    node_status_connected(q, &id2);
    node_status_ack(q, "grpc-1", 3);
    node_status_destroy(q);
    assert_true(get_node(f, "grpc-1", a, &n));
    assert_int_equal(n->acked_version, 3);
    sx_arena_destroy(a);
}

/* The events table as "type:node:version/error/reason|..." in stream order. */
static char *events_of(fixture *f, sx_arena *a)
{
    pg_conn *c;
    sx_err err;
    assert_int_equal(pg_acquire(f->pool, &c, &err), 0);
    event_list l;
    event_pos zero = {0, 0};
    assert_int_equal(event_repo_list_after(c, &zero, 0, NULL, 100, a, &l, &err), 0);
    pg_release(f->pool, c);
    char *out = sx_arena_strdup(a, "");
    for (size_t i = 0; i < l.count; i++) {
        const event_record *e = &l.items[i];
        json_t *v = json_object_get(e->data, "version");
        const char *why = json_string_value(json_object_get(e->data, "error"));
        if (why == NULL)
            why = json_string_value(json_object_get(e->data, "reason"));
        out = sx_arena_printf(a, "%s%s%s:%s:%s%s", out, i ? "|" : "", e->type, e->node_id,
                              v ? sx_arena_printf(a, "%lld", (long long)json_integer_value(v)) : "",
                              why ? why : "");
        assert_string_equal(e->replica_id, "replica-e");
        assert_string_equal(e->group, "edge");
    }
    return out;
}

/* events_of once it equals want, within 10 s: events are read back only once every
 * older transaction of the cluster has ended, and other tests share the cluster. */
static void expect_events(fixture *f, sx_arena *a, const char *want)
{
    const char *got = events_of(f, a);
    for (long long until = tl_now_ms() + 10000; strcmp(got, want) != 0 && tl_now_ms() < until;) {
        tl_sleep_ms(50);
        got = events_of(f, a);
    }
    assert_string_equal(got, want);
}

TL_TEST_FX(test_flush_writes_events)
{
    fixture *f = *state;
    node_status_queue *q = open_queue(f, "replica-e", 0, false);
    sx_err err;
    node_identity id = {.node_id = "n1",
                        .group = "edge",
                        .protocol = "ads-delta",
                        .user_agent = "grpc-node-js 1.14.0"};
    node_status_connected(q, &id);
    node_status_ack(q, "n1", 3);
    assert_int_equal(node_status_flush(q, &err), 0);
    node_status_ack(q, "n1", 3); /* the same version again: no second event */
    node_status_seen(q, "n1");
    assert_int_equal(node_status_flush(q, &err), 0);
    node_status_nack(q, "n1", 4, "route r1: unknown cluster \xff");
    assert_int_equal(node_status_flush(q, &err), 0);
    node_status_ack(q, "n1", 2); /* a rollback moves it back: a change */
    node_status_disconnected(q, "n1", 0, "client_disconnect");
    node_status_ack(q, "ghost", 1); /* never connected: neither status nor event */
    assert_int_equal(node_status_flush(q, &err), 0);
    /* A disconnect this replica no longer holds writes no event. */
    node_status_disconnected(q, "n1", 0, "client_disconnect");
    assert_int_equal(node_status_flush(q, &err), 0);

    sx_arena *a = sx_arena_create();
    expect_events(f, a,
                  "proxy_connected:n1:|config_applied:n1:3|"
                  "config_rejected:n1:4route r1: unknown cluster ?|config_applied:n1:2|"
                  "proxy_disconnected:n1:client_disconnect");
    pg_conn *c;
    assert_int_equal(pg_acquire(f->pool, &c, &err), 0);
    event_list l;
    event_pos zero = {0, 0};
    assert_int_equal(event_repo_list_after(c, &zero, 0, NULL, 1, a, &l, &err), 0);
    pg_release(f->pool, c);
    json_t *d = l.items[0].data;
    assert_string_equal(json_string_value(json_object_get(d, "protocol")), "ads-delta");
    assert_string_equal(json_string_value(json_object_get(d, "client")), "grpc-node-js 1.14.0");
    assert_string_equal(json_string_value(json_object_get(d, "replica")), "replica-e");
    sx_arena_destroy(a);
    node_status_destroy(q);
}

/* A flush of many nodes' versions sent and ACKs (written a statement for all of them)
 * records each node's own versions, and one config_applied per ACK that changed a
 * node's acked version, in the order of nothing but the nodes (one each). */
TL_TEST_FX(test_flush_writes_many_acks)
{
    fixture *f = *state;
    node_status_queue *q = open_queue(f, "replica-e", 0, false);
    sx_err err;
    enum { N = 300 };
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof(ids[i]), "m%03d", i);
        node_identity id = {.node_id = ids[i], .group = "edge", .protocol = "ads-sotw"};
        node_status_connected(q, &id);
        node_status_desired(q, ids[i], 5);
        if (i < 10)
            node_status_ack(q, ids[i], 4); /* already at 4 before the batch below */
    }
    assert_int_equal(node_status_flush(q, &err), 0);
    for (int i = 0; i < N; i++) {
        node_status_desired(q, ids[i], 10 + i % 3);
        node_status_ack(q, ids[i], i < 5 ? 4 : 10 + i % 3); /* m000..m004: no change */
    }
    node_status_ack(q, "ghost", 1); /* never connected: neither status nor event */
    assert_int_equal(node_status_flush(q, &err), 0);

    sx_arena *a = sx_arena_create();
    for (int i = 0; i < N; i++) {
        node_record *n = NULL;
        assert_true(get_node(f, ids[i], a, &n));
        assert_int_equal(n->sent_version, 10 + i % 3);
        assert_int_equal(n->acked_version, i < 5 ? 4 : 10 + i % 3);
    }
    assert_false(get_node(f, "ghost", a, &(node_record *){NULL}));
    /* Events: N connects, 10 ACKs of 4, then N - 5 ACKs of the second batch. */
    pg_conn *c;
    assert_int_equal(pg_acquire(f->pool, &c, &err), 0);
    long long applied = 0, distinct = 0, wrong = 0;
    assert_int_equal(repo_query_i64(c,
                                    "SELECT count(*) FROM events WHERE type = 'config_applied'"
                                    " AND (data->>'version')::bigint >= 10",
                                    0, NULL, &applied, &err),
                     0);
    assert_int_equal(
        repo_query_i64(c,
                       "SELECT count(DISTINCT node_id) FROM events"
                       " WHERE type = 'config_applied' AND (data->>'version')::bigint >= 10",
                       0, NULL, &distinct, &err),
        0);
    assert_int_equal(
        repo_query_i64(c,
                       "SELECT count(*) FROM events e JOIN node_status s USING (node_id)"
                       " WHERE e.type = 'config_applied'"
                       "   AND (e.data->>'version')::bigint >= 10"
                       "   AND ((e.data->>'version')::bigint <> s.acked_snapshot_version"
                       "     OR e.group_name <> 'edge' OR e.data->>'group' <> 'edge')",
                       0, NULL, &wrong, &err),
        0);
    pg_release(f->pool, c);
    assert_int_equal(applied, N - 5);
    assert_int_equal(distinct, N - 5);
    assert_int_equal(wrong, 0);
    sx_arena_destroy(a);
    node_status_destroy(q);
}

TL_TEST_FX(test_bounded_queue_counts_drops)
{
    fixture *f = *state;
    node_status_queue *q = open_queue(f, "replica-b", 2, true);
    sx_metric *dropped =
        sx_metrics_counter(f->metrics, "sextant_node_status_dropped_total", "", NULL);
    double before = sx_metric_value(dropped, NULL);
    char id[32];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "n%d", i);
        node_status_seen(q, id); /* routine: bounded by max_pending */
    }
    assert_true(sx_metric_value(dropped, NULL) - before == 3);
    /* Events for a node already pending merge and are never dropped. */
    node_status_ack(q, "n0", 1);
    assert_true(sx_metric_value(dropped, NULL) - before == 3);
    node_status_destroy(q);
}

/* Connects node_id on q as a stream of generation gen whose client says ua. */
static void connect_gen(node_status_queue *q, const char *node_id, long long gen, const char *ua)
{
    node_identity id = {.node_id = node_id,
                        .group = "edge",
                        .protocol = "ads-sotw",
                        .user_agent = ua,
                        .stream_gen = gen};
    node_status_connected(q, &id);
}

static void flush(node_status_queue *q)
{
    sx_err err;
    assert_int_equal(node_status_flush(q, &err), 0);
}

/* The node as the API shows it: connected on replica with the client of its stream. */
static void expect_connected(fixture *f, const char *node_id, const char *replica, const char *ua)
{
    sx_arena *a = sx_arena_create();
    node_record *n = NULL;
    assert_true(get_node(f, node_id, a, &n));
    assert_true(n->connected);
    assert_string_equal(n->state, "connected");
    assert_null(n->disconnect_reason);
    assert_string_equal(n->replica_id, replica);
    assert_string_equal(n->client, ua);
    sx_arena_destroy(a);
}

/* One event of a scenario, on queue q: a stream's start (text: its client) or end
 * (text: the reason), or a flush. A zeroed step ends the list. */
typedef struct step {
    enum { STEPS_END, START, END, FLUSH } op;
    int q;
    long long gen;
    const char *text;
} step;

/* Events of one node played in order; then the node must be connected with the client
 * "envoy second" of its newer stream. */
typedef struct scenario {
    const char *node;
    step steps[7];
} scenario;

/* Plays the n scenarios on queues qs; the node of each must then be on replica. */
static void play(fixture *f, node_status_queue *const *qs, const scenario *sc, size_t n,
                 const char *replica)
{
    for (size_t i = 0; i < n; i++) {
        for (const step *s = sc[i].steps; s->op != STEPS_END; s++) {
            if (s->op == START)
                connect_gen(qs[s->q], sc[i].node, s->gen, s->text);
            else if (s->op == END)
                node_status_disconnected(qs[s->q], sc[i].node, s->gen, s->text);
            else
                flush(qs[s->q]);
        }
        expect_connected(f, sc[i].node, replica, "envoy second");
    }
}

#define FIRST(q)                                                                                   \
    {                                                                                              \
        START, q, 100, "envoy first"                                                               \
    }
#define SECOND(q)                                                                                  \
    {                                                                                              \
        START, q, 200, "envoy second"                                                              \
    }
#define ENDED(q, why)                                                                              \
    {                                                                                              \
        END, q, 100, why                                                                           \
    }
#define FLUSHED(q)                                                                                 \
    {                                                                                              \
        FLUSH, q, 0, NULL                                                                          \
    }

/* A second stream of a node supersedes the first: the first one's end (reason
 * superseded) arrives after the second one's start, and must not mark the node
 * disconnected, whether both are in one flush or in separate ones, and whatever order
 * the queue receives them in. */
TL_TEST_FX(test_superseded_stream_end_changes_nothing)
{
    fixture *f = *state;
    node_status_queue *q = open_queue(f, "replica-s", 0, false);
    static const scenario cases[] = {
        /* Separate flushes, in the order one replica produces them. */
        {"sep", {FIRST(0), FLUSHED(0), SECOND(0), FLUSHED(0), ENDED(0, "superseded"), FLUSHED(0)}},
        /* Everything in one debounce window. */
        {"win", {FIRST(0), SECOND(0), ENDED(0, "superseded"), FLUSHED(0)}},
        /* Out of order: the old stream's end first, then its late connect, after the new
         * stream's connect was written. */
        {"ooo", {ENDED(0, "superseded"), SECOND(0), FIRST(0), FLUSHED(0)}},
        {"ooo", {FIRST(0), FLUSHED(0), ENDED(0, "superseded"), FLUSHED(0)}},
    };
    play(f, &q, cases, sizeof(cases) / sizeof(cases[0]), "replica-s");

    /* The end of the newest stream still disconnects it. */
    node_status_disconnected(q, "ooo", 200, "client_disconnect");
    flush(q);
    sx_arena *a = sx_arena_create();
    node_record *n = NULL;
    assert_true(get_node(f, "ooo", a, &n));
    assert_false(n->connected);
    assert_string_equal(n->state, "disconnected");
    assert_string_equal(n->disconnect_reason, "client_disconnect");
    sx_arena_destroy(a);
    node_status_destroy(q);
}

/* A node that moved to another replica: the two replicas' flushers write the same row,
 * in either order; the newer stream wins. */
TL_TEST_FX(test_newest_stream_wins_across_replicas)
{
    fixture *f = *state;
    node_status_queue *q[] = {open_queue(f, "replica-1", 0, false),
                              open_queue(f, "replica-2", 0, false)};
    static const scenario cases[] = {
        /* The new replica writes first; the old one's connect and end come late. */
        {"moved", {SECOND(1), FLUSHED(1), FIRST(0), FLUSHED(0)}},
        {"moved", {ENDED(0, "superseded"), FLUSHED(0)}},
        /* The old replica writes first. */
        {"moved2",
         {FIRST(0), FLUSHED(0), SECOND(1), FLUSHED(1), ENDED(0, "client_disconnect"), FLUSHED(0)}},
        /* A replica whose clock is ahead: once the old stream's end is written, the new
         * stream's start is taken although its generation is lower. */
        {"skew",
         {{START, 0, 900, "envoy first"},
          {END, 0, 900, "client_disconnect"},
          FLUSHED(0),
          SECOND(1),
          FLUSHED(1)}},
    };
    play(f, q, cases, sizeof(cases) / sizeof(cases[0]), "replica-2");
    node_status_destroy(q[0]);
    node_status_destroy(q[1]);
}

/* count(*) of a query without parameters. */
static long long count_of(fixture *f, const char *sql)
{
    pg_conn *c;
    sx_err err;
    long long n = -1;
    assert_int_equal(pg_acquire(f->pool, &c, &err), 0);
    assert_int_equal(repo_query_i64(c, sql, 0, NULL, &n, &err), 0);
    pg_release(f->pool, c);
    return n;
}

/* A reconnect storm: many nodes move from one replica to another, each replica writing
 * its nodes' connects and stream ends a statement for all of them. Every node is
 * recorded on the new replica with one proxy_connected, except those the old replica
 * holds on a newer stream; the old replica's late ends of the moved streams change
 * nothing, and its ends of the streams it still holds disconnect those nodes, with one
 * proxy_disconnected each. */
TL_TEST_FX(test_flush_writes_many_moves)
{
    fixture *f = *state;
    node_status_queue *q[] = {open_queue(f, "replica-1", 0, false),
                              open_queue(f, "replica-2", 0, false)};
    enum { N = 200, KEPT = 7 };
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof(ids[i]), "mv%03d", i);
        connect_gen(q[0], ids[i], i < KEPT ? 300 : 100, "envoy first");
    }
    flush(q[0]);
    for (int i = 0; i < N; i++)
        connect_gen(q[1], ids[i], 200, "envoy second");
    flush(q[1]);
    for (int i = 0; i < N; i++)
        node_status_disconnected(q[0], ids[i], 100, "superseded");
    flush(q[0]);
    for (int i = KEPT; i < N; i++)
        expect_connected(f, ids[i], "replica-2", "envoy second");
    for (int i = 0; i < KEPT; i++)
        expect_connected(f, ids[i], "replica-1", "envoy first");
    for (int i = 0; i < KEPT; i++)
        node_status_disconnected(q[0], ids[i], 300, "client_disconnect");
    flush(q[0]);

    assert_int_equal(count_of(f, "SELECT count(*) FROM proxy_nodes"
                                 " WHERE node_id LIKE 'mv%' AND connected"
                                 "   AND replica_id = 'replica-2' AND stream_gen = 200"),
                     N - KEPT);
    assert_int_equal(count_of(f, "SELECT count(*) FROM proxy_nodes"
                                 " WHERE node_id LIKE 'mv%' AND NOT connected"
                                 "   AND replica_id = 'replica-1'"
                                 "   AND disconnect_reason = 'client_disconnect'"),
                     KEPT);
    assert_int_equal(count_of(f, "SELECT count(*) FROM node_status WHERE node_id LIKE 'mv%'"), N);
    /* One proxy_connected per node and replica that recorded it, one proxy_disconnected
     * per kept node; each with the node's group and the replica that wrote it. */
    assert_int_equal(count_of(f, "SELECT count(DISTINCT node_id) FROM events"
                                 " WHERE type = 'proxy_connected' AND replica_id = 'replica-1'"
                                 "   AND node_id LIKE 'mv%' AND group_name = 'edge'"
                                 "   AND data->>'replica' = 'replica-1'"),
                     N);
    assert_int_equal(count_of(f, "SELECT count(*) FROM events"
                                 " WHERE type = 'proxy_connected' AND node_id LIKE 'mv%'"),
                     N + N - KEPT);
    assert_int_equal(count_of(f, "SELECT count(*) FROM events"
                                 " WHERE type = 'proxy_connected' AND replica_id = 'replica-2'"
                                 "   AND node_id >= 'mv007' AND node_id LIKE 'mv%'"
                                 "   AND data->>'client' = 'envoy second'"),
                     N - KEPT);
    assert_int_equal(count_of(f, "SELECT count(*) FROM events"
                                 " WHERE type = 'proxy_disconnected' AND node_id LIKE 'mv%'"),
                     KEPT);
    assert_int_equal(count_of(f, "SELECT count(*) FROM events"
                                 " WHERE type = 'proxy_disconnected' AND replica_id = 'replica-1'"
                                 "   AND node_id < 'mv007' AND node_id LIKE 'mv%'"
                                 "   AND group_name = 'edge'"
                                 "   AND data->>'reason' = 'client_disconnect'"),
                     KEPT);
    node_status_destroy(q[0]);
    node_status_destroy(q[1]);
}

TL_MAIN()
