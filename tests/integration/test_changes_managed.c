/*
 * test_changes_managed.c — the write entry of the Kubernetes source (server/changes.h:
 * changes_put_managed, changes_delete_managed) against a real PostgreSQL and Redis:
 * a Gateway's spec becomes a config of source kubernetes with a live version and a
 * snapshot of its group, NOTIFYd, audited with actor kubernetes; the same spec again
 * writes nothing at all (no version, audit row, snapshot or NOTIFY); a changed one a
 * new live version; an invalid or conflicting one its problems and nothing else, the
 * group keeping its last good snapshot; the REST API's changes of a managed config are
 * refused naming the Gateway (its rollback is not); an operator's rollback or rollout of
 * an older version holds across repeated identical translations until the Gateway's
 * translation changes, which is then written live; the source never takes over a
 * config the REST API wrote; two writers of one new config queue; a deleted Gateway's
 * config is deleted by the same source, once.
 */
#include "tests/lib/testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/arena.h"
#include "server/changes.h"
#include "server/config.h"
#include "server/server.h"
#include "server/snapshot/store.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_configs.h"
#include "storage/repo_snapshots.h"

#define GROUP "default/web"
#define REF   "Gateway default/web"

/* A NOTIFY of SNAP_NOTIFY_CHANNEL heard, or the marker the test sends after it. */
typedef struct heard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int snapshots; /* notifications naming a snapshot */
    int markers;   /* the test's own markers */
} heard;

typedef struct fx {
    tl_store s; /* its pool, cache and snapshot repository are the server's */
    struct sx_server *srv;
    pg_conn *c; /* for the test's own SQL */
    pg_listener *listener;
    heard h;
} fx;

static void on_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    heard *h = ctx;
    pthread_mutex_lock(&h->mu);
    if (strncmp(payload, "marker", 6) == 0)
        h->markers++;
    else
        h->snapshots++;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    tl_store_open(&f->s, 4);
    char dburl[600];
    snprintf(dburl, sizeof(dburl), "SEXTANT_DATABASE_URL=%s", f->s.url);
    char *env[] = {dburl, NULL};
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    assert_int_equal(config_load(NULL, env, &cfg, &errs), 0);
    sx_fielderrs_free(&errs);
    TL_OK(sx_server_create(cfg, &f->srv, &e_));
    f->srv->db = f->s.pool;
    f->srv->cache = f->s.cache;
    f->srv->snap_repo = f->s.snaps;
    TL_OK(pg_acquire(f->srv->db, &f->c, &e_));

    pthread_mutex_init(&f->h.mu, NULL);
    pthread_cond_init(&f->h.cv, NULL);
    pg_listener_options lo = {.url = f->s.url};
    TL_OK(pg_listener_create(&lo, &f->listener, &e_));
    TL_OK(pg_listener_subscribe(f->listener, SNAP_NOTIFY_CHANNEL, on_notify, NULL, &f->h, &e_));
    TL_OK(pg_listener_start(f->listener, &e_));
    assert_true(pg_listener_wait_connected(f->listener, 10000));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pg_listener_destroy(f->listener);
    pg_release(f->srv->db, f->c);
    f->srv->snap_repo = NULL;
    f->srv->cache = NULL;
    f->srv->db = NULL;
    sx_server_destroy(f->srv);
    pthread_cond_destroy(&f->h.cv);
    pthread_mutex_destroy(&f->h.mu);
    tl_store_close(&f->s);
    free(f);
    return 0;
}

/* One number from SQL. */
static long long q(fx *f, const char *sql)
{
    PGresult *r = NULL;
    TL_OK(pg_exec(f->c, sql, 0, NULL, &r, &e_));
    assert_int_equal(PQntuples(r), 1);
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* One text from SQL, in the arena ("" for NULL). */
static const char *qs(fx *f, const char *sql)
{
    PGresult *r = NULL;
    TL_OK(pg_exec(f->c, sql, 0, NULL, &r, &e_));
    assert_int_equal(PQntuples(r), 1);
    const char *v = sx_arena_strdup(f->s.a, PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/*
 * The snapshot notifications committed since the last call, counted exactly: a marker
 * NOTIFY is committed after everything the test did, and PostgreSQL delivers
 * notifications in commit order, so once the marker is heard every earlier one has been.
 */
static int notifications_since_last(fx *f)
{
    static int marker_no;
    char payload[32];
    snprintf(payload, sizeof(payload), "marker-%d", ++marker_no);
    pthread_mutex_lock(&f->h.mu);
    int want = f->h.markers + 1;
    pthread_mutex_unlock(&f->h.mu);
    TL_OK(pg_notify(f->c, SNAP_NOTIFY_CHANNEL, payload, &e_));
    pthread_mutex_lock(&f->h.mu);
    long long deadline = tl_now_ms() + 10000;
    while (f->h.markers < want && tl_now_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&f->h.cv, &f->h.mu, &ts);
    }
    assert_int_equal(f->h.markers, want);
    int n = f->h.snapshots;
    f->h.snapshots = 0;
    pthread_mutex_unlock(&f->h.mu);
    return n;
}

/* A valid spec: an HTTP listener on 0.0.0.0:port for host, its route and its backend at
 * endpoint:8080 (names derived from host, so specs of one group need distinct hosts). */
static json_t *spec(int port, const char *host, const char *endpoint)
{
    char slug[64], text[2048];
    snprintf(slug, sizeof(slug), "%s", host);
    for (char *p = slug; *p; p++)
        if (*p == '.')
            *p = '-';
    snprintf(text, sizeof(text),
             "{\"listeners\": [{\"name\": \"l-%s\", \"address\": \"0.0.0.0\", \"port\": %d,"
             "  \"protocol\": \"LISTENER_PROTOCOL_HTTP\", \"hostnames\": [\"%s\"],"
             "  \"attached_routes\": [\"r-%s\"]}],"
             " \"http_routes\": [{\"name\": \"r-%s\", \"namespace\": \"default\","
             "  \"hostnames\": [\"%s\"], \"rules\": [{\"name\": \"all\","
             "  \"matches\": [{\"path\": \"/\", \"path_type\": \"PathPrefix\"}],"
             "  \"backend_refs\": [{\"name\": \"b-%s\", \"namespace\": \"default\","
             "  \"port\": 8080}]}]}],"
             " \"backends\": [{\"name\": \"b-%s\", \"namespace\": \"default\","
             "  \"protocol\": \"http\", \"connect_timeout\": \"1s\","
             "  \"endpoints\": [{\"address\": \"%s\", \"port\": 8080, \"healthy\": true}]}]}",
             slug, port, host, slug, slug, host, slug, slug, endpoint);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (j == NULL)
        print_message("bad spec fixture: %s\n", je.text);
    assert_non_null(j);
    return j;
}

/* changes_put_managed of ns/name in groups with spec s; returns its code, fills out. */
static int put(fx *f, const char *ns, const char *name, const char *const *groups, size_t ngroups,
               json_t *s, apply_result *out, val_result *problems, sx_fielderrs *verrs, sx_err *err)
{
    changes_managed m = {ns, name, groups, ngroups, s, REF, "translated"};
    int rc = changes_put_managed(f->srv, &m, f->s.a, out, problems, verrs, err);
    json_decref(s);
    return rc;
}

/* put that must succeed. */
static apply_result put_ok(fx *f, json_t *s)
{
    const char *groups[] = {GROUP};
    apply_result out;
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    sx_err err;
    sx_err_clear(&err);
    int rc = put(f, "default", "web", groups, 1, s, &out, &problems, &verrs, &err);
    for (size_t i = 0; i < problems.count; i++)
        print_message("problem %s: %s\n", problems.items[i].path, problems.items[i].message);
    for (size_t i = 0; i < verrs.count; i++)
        print_message("error %s: %s\n", verrs.items[i].path, verrs.items[i].message);
    if (rc)
        tl_fail_err("changes_put_managed", rc, &err);
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
    return out;
}

static long long snapshot_version(fx *f)
{
    return q(f, "SELECT current_snapshot_version FROM proxy_groups WHERE name = '" GROUP "'");
}

TL_TEST_FX(test_put_create_same_change)
{
    fx *f = *state;
    apply_result r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_true(r.created);
    assert_true(r.changed);
    assert_int_equal(r.version, 1);
    assert_int_equal(r.snapshot_count, 1);
    assert_string_equal(r.snapshots[0].group, GROUP);
    assert_int_equal(r.snapshots[0].version, 1);
    assert_int_equal(notifications_since_last(f), 1);

    /* The config: source kubernetes, its Gateway, a live version 1 by kubernetes. */
    assert_string_equal(qs(f, "SELECT source || ' ' || source_ref || ' ' || live_version"
                              " FROM configs WHERE namespace = 'default' AND name = 'web'"),
                        "kubernetes " REF " 1");
    assert_string_equal(
        qs(f, "SELECT author || '/' || message || '/' || draft FROM config_versions"),
        "kubernetes/translated/false");
    /* The group's snapshot was built from it and is current. */
    assert_int_equal(snapshot_version(f), 1);
    assert_int_equal(q(f, "SELECT (source_versions->0->>'version')::int FROM snapshots"
                          " WHERE group_name = '" GROUP "' AND version = 1"),
                     1);
    assert_int_equal(q(f, "SELECT jsonb_array_length(ir->'listeners') FROM snapshots"
                          " WHERE group_name = '" GROUP "' AND version = 1"),
                     1);
    /* One audit row, by kubernetes, naming the Gateway. */
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log WHERE actor = 'kubernetes'"
                          " AND action = 'config.sync' AND result = 'success'"
                          " AND details->>'source' = 'kubernetes'"
                          " AND details->>'source_ref' = '" REF "'"
                          " AND (details->>'created')::boolean"),
                     1);

    /* The same translation again: nothing at all is written. */
    r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_false(r.changed);
    assert_false(r.created);
    assert_int_equal(r.version, 1);
    assert_int_equal(r.snapshot_count, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM config_versions"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM snapshots"), 1);
    assert_int_equal(notifications_since_last(f), 0);

    /* A changed translation: version 2, live, a new snapshot. */
    r = put_ok(f, spec(8080, "web.example", "10.0.0.2"));
    assert_true(r.changed);
    assert_false(r.created);
    assert_int_equal(r.version, 2);
    assert_int_equal(r.before_version, 1);
    assert_int_equal(r.snapshot_count, 1);
    assert_int_equal(r.snapshots[0].version, 2);
    assert_int_equal(notifications_since_last(f), 1);
    assert_int_equal(q(f, "SELECT live_version FROM configs"), 2);
    assert_int_equal(snapshot_version(f), 2);
    assert_string_equal(qs(f, "SELECT ir->'backends'->0->'endpoints'->0->>'address' FROM snapshots"
                              " WHERE group_name = '" GROUP "' AND version = 2"),
                        "10.0.0.2");
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log WHERE actor = 'kubernetes'"), 2);

    /* The same spec in one more group is a change too: version 3, both groups written. */
    const char *two[] = {GROUP, "default/web-canary"};
    apply_result r3;
    sx_fielderrs verrs = {0};
    TL_OK(put(f, "default", "web", two, 2, spec(8080, "web.example", "10.0.0.2"), &r3, NULL, &verrs,
              &e_));
    sx_fielderrs_free(&verrs);
    assert_true(r3.changed);
    assert_int_equal(r3.version, 3);
    assert_int_equal(r3.snapshot_count, 1); /* GROUP's content did not change */
    assert_string_equal(r3.snapshots[0].group, "default/web-canary");
    assert_int_equal(notifications_since_last(f), 1);
}

TL_TEST_FX(test_put_invalid_writes_nothing)
{
    fx *f = *state;
    const char *groups[] = {GROUP};
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    apply_result out;
    sx_err err;

    /* Invalid before there is any config: no config is created. */
    json_t *bad = spec(70000, "web.example", "10.0.0.1");
    assert_int_equal(put(f, "default", "web", groups, 1, bad, &out, &problems, &verrs, &err),
                     SX_EVALIDATION);
    assert_true(problems.count > 0);
    json_t *pj = changes_problems_json(&problems, &verrs, "compose");
    char *text = json_dumps(pj, JSON_COMPACT);
    assert_non_null(strstr(text, "spec.listeners[0].port"));
    free(text);
    json_decref(pj);
    assert_int_equal(q(f, "SELECT count(*) FROM configs"), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 0);
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);

    /* Invalid after a good version: the good one stays live, its snapshot current. */
    put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_int_equal(notifications_since_last(f), 1);
    assert_int_equal(put(f, "default", "web", groups, 1, spec(70000, "web.example", "10.0.0.1"),
                         &out, &problems, &verrs, &err),
                     SX_EVALIDATION);
    assert_true(problems.count > 0);
    assert_int_equal(q(f, "SELECT count(*) FROM config_versions"), 1);
    assert_int_equal(q(f, "SELECT live_version FROM configs"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 1);
    assert_int_equal(snapshot_version(f), 1);
    assert_int_equal(notifications_since_last(f), 0);
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);

    /* A spec that claims the port another config of the group listens on: a conflict,
     * and the other config is named. */
    const char *g2[] = {GROUP};
    assert_int_equal(put(f, "default", "api", g2, 1, spec(8080, "api.example", "10.0.0.9"), &out,
                         &problems, &verrs, &err),
                     SX_ECONFLICT);
    assert_int_equal(problems.count, 1);
    assert_string_equal(problems.items[0].path, "spec.listeners[0].port");
    assert_non_null(problems.items[0].conflict_with);
    assert_non_null(strstr(problems.items[0].conflict_with, "default/web"));
    assert_int_equal(q(f, "SELECT count(*) FROM configs"), 1);
    assert_int_equal(notifications_since_last(f), 0);
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);

    /* Missing fields. */
    changes_managed m = {"default", "web", groups, 1, NULL, REF, NULL};
    assert_int_equal(changes_put_managed(f->srv, &m, f->s.a, &out, NULL, &verrs, &err), SX_EINVAL);
    json_t *s = spec(8080, "web.example", "10.0.0.1");
    m.spec = s;
    m.source_ref = NULL;
    assert_int_equal(changes_put_managed(f->srv, &m, f->s.a, &out, NULL, &verrs, &err), SX_EINVAL);
    assert_string_equal(err.message, "a managed config needs a source_ref");
    json_decref(s);
}

/* A change as the REST API makes it (source rest), on config id. */
static int rest_change(fx *f, apply_op op, const char *id, json_t *s, bool draft, int rollback_to,
                       apply_result *out, sx_err *err)
{
    apply_request req = {
        .op = op,
        .ns = op == APPLY_UPSERT ? "default" : NULL,
        .name = op == APPLY_UPSERT ? "web" : NULL,
        .groups = op == APPLY_UPSERT ? (const char *const[]){GROUP} : NULL,
        .group_count = op == APPLY_UPSERT ? 1 : 0,
        .config_id = id,
        .spec = s,
        .draft = draft,
        .rollback_to = rollback_to,
        .author = "alice",
        .action = "config.update",
    };
    sx_fielderrs verrs = {0};
    int rc = changes_apply(f->srv, &req, f->s.a, out, &verrs, err);
    sx_fielderrs_free(&verrs);
    json_decref(s);
    return rc;
}

TL_TEST_FX(test_ownership)
{
    fx *f = *state;
    apply_result r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    put_ok(f, spec(8080, "web.example", "10.0.0.2"));
    const char *id = r.config_id;
    assert_int_equal(notifications_since_last(f), 2);
    apply_result out;
    sx_err err;

    /* Every REST change of it is refused, naming the Gateway, and changes nothing. */
    struct {
        apply_op op;
        bool draft;
    } refused[] = {
        {APPLY_UPDATE, false}, {APPLY_UPDATE, true}, {APPLY_DELETE, false}, {APPLY_UPSERT, false}};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        json_t *s = refused[i].op == APPLY_DELETE ? NULL : spec(8080, "web.example", "10.0.0.3");
        assert_int_equal(rest_change(f, refused[i].op, id, s, refused[i].draft, 0, &out, &err),
                         SX_EMANAGED);
        assert_string_equal(err.message, "config default/web is managed by Kubernetes "
                                         "(Gateway default/web); change the Gateway instead");
    }
    assert_int_equal(q(f, "SELECT latest_version FROM configs WHERE deleted_at IS NULL"), 2);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 2);
    assert_int_equal(notifications_since_last(f), 0);

    /* A rollback works as on any config: version 3 copies version 1, live, served. */
    TL_OK(rest_change(f, APPLY_ROLLBACK, id, NULL, false, 1, &out, &e_));
    assert_true(out.changed);
    assert_int_equal(out.version, 3);
    assert_int_equal(notifications_since_last(f), 1);
    assert_string_equal(qs(f, "SELECT source || '/' || live_version FROM configs"), "kubernetes/3");
    assert_string_equal(qs(f, "SELECT author || '/' || source_version FROM config_versions"
                              " WHERE version = 3"),
                        "alice/1");
    assert_string_equal(qs(f, "SELECT ir->'backends'->0->'endpoints'->0->>'address' FROM snapshots"
                              " WHERE group_name = '" GROUP "' ORDER BY version DESC LIMIT 1"),
                        "10.0.0.1");
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log WHERE actor = 'alice'"
                          " AND details->>'source_ref' = '" REF "'"),
                     1);
    /* The rollback holds: the source's translation of the unchanged Gateway (version 2's
     * spec, its own last one) is compared with what the source wrote last, not with what
     * is live, so however often it comes (every settle, resync, restart) it writes
     * nothing and version 3 stays live and served. */
    long long audits = q(f, "SELECT count(*) FROM audit_log");
    for (int i = 0; i < 3; i++) {
        r = put_ok(f, spec(8080, "web.example", "10.0.0.2"));
        assert_false(r.changed);
        assert_int_equal(r.version, 3);
        assert_int_equal(r.snapshot_count, 0);
    }
    assert_string_equal(qs(f, "SELECT latest_version || '/' || live_version FROM configs"), "3/3");
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), audits);
    assert_int_equal(notifications_since_last(f), 0);
    assert_string_equal(qs(f, "SELECT ir->'backends'->0->'endpoints'->0->>'address' FROM snapshots"
                              " WHERE group_name = '" GROUP "' ORDER BY version DESC LIMIT 1"),
                        "10.0.0.1");

    /* The Gateway changes: its new translation is written and live at once (version 4),
     * replacing the rollback. */
    r = put_ok(f, spec(8080, "web.example", "10.0.0.3"));
    assert_true(r.changed);
    assert_int_equal(r.version, 4);
    assert_int_equal(r.snapshot_count, 1);
    assert_int_equal(notifications_since_last(f), 1);
    assert_string_equal(qs(f, "SELECT author || '/' || live_version FROM config_versions v"
                              " JOIN configs c ON c.id = v.config_id WHERE v.version = 4"),
                        "kubernetes/4");
    assert_string_equal(qs(f, "SELECT ir->'backends'->0->'endpoints'->0->>'address' FROM snapshots"
                              " WHERE group_name = '" GROUP "' ORDER BY version DESC LIMIT 1"),
                        "10.0.0.3");

    /* A rollout's promotion makes an older version live without writing one (as
     * apply_promote does): it holds the same way. */
    TL_OK(cfg_repo_set_live(f->c, id, 2, &e_));
    r = put_ok(f, spec(8080, "web.example", "10.0.0.3"));
    assert_false(r.changed);
    assert_int_equal(r.version, 2);
    assert_string_equal(qs(f, "SELECT latest_version || '/' || live_version FROM configs"), "4/2");

    /* A rollback made by a user who happens to be called "kubernetes" is still a
     * rollback (it copies a version), not the source's own translation: version 5 copies
     * version 1, and the unchanged translation (version 4's) still writes nothing. */
    apply_request rb = {.op = APPLY_ROLLBACK,
                        .config_id = id,
                        .rollback_to = 1,
                        .author = CHANGES_KUBERNETES_ACTOR,
                        .action = "config.rollback"};
    sx_fielderrs rb_errs = {0};
    TL_OK(changes_apply(f->srv, &rb, f->s.a, &out, &rb_errs, &e_));
    sx_fielderrs_free(&rb_errs);
    assert_int_equal(out.version, 5);
    r = put_ok(f, spec(8080, "web.example", "10.0.0.3"));
    assert_false(r.changed);
    assert_int_equal(r.version, 5);

    /* The Gateway changed back to what is live (version 1's spec): a change of the
     * translation, so it is written (version 6, by the source) even though the snapshot
     * content stays the same; from then on that is the source's last translation. */
    notifications_since_last(f);
    r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_true(r.changed);
    assert_int_equal(r.version, 6);
    assert_int_equal(r.snapshot_count, 0);
    assert_int_equal(notifications_since_last(f), 0);
    r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_false(r.changed);
    assert_int_equal(r.version, 6);

    /* The source never takes over a config the REST API wrote. */
    apply_request create = {
        .op = APPLY_CREATE,
        .ns = "team",
        .name = "api",
        .groups = (const char *const[]){"edge"},
        .group_count = 1,
        .spec = spec(9090, "api.example", "10.0.0.5"),
        .author = "alice",
        .action = "config.create",
    };
    sx_fielderrs verrs = {0};
    TL_OK(changes_apply(f->srv, &create, f->s.a, &out, &verrs, &e_));
    json_decref((json_t *)create.spec);
    audits = q(f, "SELECT count(*) FROM audit_log");
    const char *edge[] = {"edge"};
    assert_int_equal(put(f, "team", "api", edge, 1, spec(9090, "api.example", "10.0.0.6"), &out,
                         NULL, &verrs, &err),
                     SX_ECONFLICT);
    assert_string_equal(err.message, "config team/api exists and is not managed by kubernetes");
    assert_int_equal(
        changes_delete_managed(f->srv, "team", "api", NULL, f->s.a, &out, &verrs, &err),
        SX_ECONFLICT);
    assert_string_equal(qs(f, "SELECT source || '/' || latest_version || '/' ||"
                              " (deleted_at IS NULL) FROM configs WHERE name = 'api'"),
                        "rest/1/true");
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), audits);
    sx_fielderrs_free(&verrs);
}

TL_TEST_FX(test_delete_managed)
{
    fx *f = *state;
    apply_result r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_int_equal(notifications_since_last(f), 1);
    sx_fielderrs verrs = {0};
    apply_result out;
    TL_OK(changes_delete_managed(f->srv, "default", "web", "Gateway default/web was deleted",
                                 f->s.a, &out, &verrs, &e_));
    assert_true(out.changed);
    assert_string_equal(out.config_id, r.config_id);
    assert_int_equal(notifications_since_last(f), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM configs WHERE deleted_at IS NOT NULL"), 1);
    /* The group is recomposed without it: its snapshot is empty now. */
    assert_int_equal(snapshot_version(f), 2);
    assert_int_equal(q(f, "SELECT count(*) FROM snapshots WHERE group_name = '" GROUP "'"
                          " AND version = 2 AND coalesce(jsonb_array_length(ir->'listeners'), 0)"
                          " = 0"),
                     1);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log WHERE actor = 'kubernetes'"
                          " AND action = 'config.delete'"
                          " AND details->>'message' = 'Gateway default/web was deleted'"),
                     1);

    /* Gone already: nothing to do, nothing written. */
    TL_OK(changes_delete_managed(f->srv, "default", "web", NULL, f->s.a, &out, &verrs, &e_));
    assert_false(out.changed);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 2);
    assert_int_equal(notifications_since_last(f), 0);

    /* The Gateway comes back: a new config of that name. */
    r = put_ok(f, spec(8080, "web.example", "10.0.0.1"));
    assert_true(r.created);
    assert_int_equal(q(f, "SELECT count(*) FROM configs"), 2);
    sx_fielderrs_free(&verrs);
}

typedef struct racer {
    fx *f;
    pthread_barrier_t *start;
    int rc;
    bool created, changed;
} racer;

static void *race_put(void *p)
{
    racer *x = p;
    sx_arena *a = sx_arena_create();
    json_t *s = spec(8080, "web.example", "10.0.0.1");
    const char *groups[] = {GROUP};
    changes_managed m = {"default", "web", groups, 1, s, REF, NULL};
    apply_result out;
    sx_fielderrs verrs = {0};
    pthread_barrier_wait(x->start);
    x->rc = changes_put_managed(x->f->srv, &m, a, &out, NULL, &verrs, NULL);
    x->created = out.created;
    x->changed = out.changed;
    sx_fielderrs_free(&verrs);
    json_decref(s);
    sx_arena_destroy(a);
    return NULL;
}

/* Two writers of one new config at once (two replicas translating the same Gateway):
 * one creates it, the other finds it unchanged. */
TL_TEST_FX(test_concurrent_puts)
{
    fx *f = *state;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    racer x[2] = {{f, &start, -1, false, false}, {f, &start, -1, false, false}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, race_put, &x[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    assert_int_equal(x[0].rc, 0);
    assert_int_equal(x[1].rc, 0);
    assert_true(x[0].created != x[1].created);
    assert_true(x[0].changed != x[1].changed);
    assert_int_equal(q(f, "SELECT count(*) FROM config_versions"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM audit_log"), 1);
    assert_int_equal(notifications_since_last(f), 1);
}

TL_MAIN()
