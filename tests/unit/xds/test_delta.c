/*
 * test_delta.c — the incremental ADS protocol: per-resource versions, removals,
 * initial_resource_versions, subscribe/unsubscribe whatever the nonce, wildcards,
 * ACK/NACK and push order (server/xds/delta.c).
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>

#include "server/xds/delta.h"
#include "tests/unit/xds/xds_fixture.h"

typedef struct fx {
    xds_delta d;
    int64_t now;
    xds_response last;
    char sent[512];    /* "name@version8,..." of the last response */
    char removed[512]; /* "name,..." */
} fx;

static int setup(void **state)
{
    fx *f = sx_calloc(1, sizeof(*f));
    xds_state_init(&f->d.st, 7, NULL);
    f->now = 1000;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    xds_response_clear(&f->last);
    xds_delta_free(&f->d);
    sx_free(f);
    return 0;
}

static tr_resources *publish(fx *f, long long version, const char *spec)
{
    tr_resources *r = fx_res(version, spec);
    xds_state_adopt(&f->d.st, r, f->now);
    tr_resources_unref(r);
    return f->d.st.current;
}

static size_t count(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

typedef struct dreq {
    tr_type type;
    const char *nonce;
    bool nack;
    char **sub;
    char **unsub;
    char **inames;
    char **ivers;
} dreq;

static xds_req_kind request(fx *f, dreq q)
{
    xds_delta_request r = {
        .type = q.type,
        .nonce = q.nonce ? q.nonce : "",
        .is_nack = q.nack,
        .subscribe = q.sub,
        .nsubscribe = count(q.sub),
        .unsubscribe = q.unsub,
        .nunsubscribe = count(q.unsub),
        .initial_names = q.inames,
        .initial_versions = q.ivers,
        .ninitial = count(q.inames),
    };
    xds_req_outcome oc;
    f->now += 5;
    xds_delta_on_request(&f->d, &r, f->now, &oc);
    return oc.kind;
}

static bool next(fx *f)
{
    xds_response r;
    f->now += 1;
    if (!xds_delta_next(&f->d, f->now, &r))
        return false;
    xds_response_clear(&f->last);
    f->last = r;
    f->sent[0] = f->removed[0] = '\0';
    for (size_t i = 0; i < r.n; i++) {
        const tr_resource *x = &r.res->items[r.type][r.idx[i]];
        size_t len = strlen(f->sent);
        snprintf(f->sent + len, sizeof(f->sent) - len, "%s%s", i ? "," : "", x->name);
    }
    for (size_t i = 0; i < r.nremoved; i++) {
        size_t len = strlen(f->removed);
        snprintf(f->removed + len, sizeof(f->removed) - len, "%s%s", i ? "," : "", r.removed[i]);
    }
    return true;
}

/* Takes the next response, which must come and be of type t. */
static void next_is(fx *f, tr_type t)
{
    assert_true(next(f));
    assert_int_equal(f->last.type, t);
}

/* Answers the last response with its nonce: an ACK, or a NACK when nack. */
static void answer_last(fx *f, bool nack)
{
    char nonce[XDS_NONCE_LEN];
    memcpy(nonce, f->last.nonce, sizeof(nonce));
    assert_int_equal(request(f, (dreq){.type = f->last.type, .nonce = nonce, .nack = nack}),
                     nack ? XDS_REQ_NACK : XDS_REQ_ACK);
}

static void ack(fx *f)
{
    answer_last(f, false);
}

static void nack(fx *f)
{
    answer_last(f, true);
}

/* Sends q, which must be answered, and ACKs the response. */
static void request_acked(fx *f, dreq q)
{
    request(f, q);
    assert_true(next(f));
    ack(f);
}

/* ------------------------------------------------------------------ tests */

TL_TEST_FX(test_legacy_wildcard_and_versions)
{
    fx *f = *state;
    tr_resources *r = publish(f, 1, "cds:a=1,b=1;eds:a=1");
    assert_int_equal(request(f, (dreq){.type = TR_CDS}), XDS_REQ_SUBSCRIBE);
    next_is(f, TR_CDS);
    assert_string_equal(f->sent, "a,b");
    assert_string_equal(f->removed, "");
    assert_int_equal(f->last.version, 1);
    assert_int_equal(strlen(f->last.nonce), 16);
    /* Per-resource versions are the resources' content hashes. */
    assert_string_equal(f->d.t[TR_CDS].known[0].version, fx_version(r, TR_CDS, "a"));
    ack(f);
    assert_false(next(f));
    assert_int_equal(xds_delta_synced_version(&f->d), 1);
    /* EDS: an empty first request is not a wildcard; it is answered, empty. */
    request(f, (dreq){.type = TR_EDS});
    assert_true(next(f));
    assert_int_equal(f->last.n + f->last.nremoved, 0);
}

TL_TEST_FX(test_only_changes_and_removals)
{
    fx *f = *state;
    publish(f, 1, "cds:a=1,b=1,c=1");
    request_acked(f, (dreq){.type = TR_CDS, .sub = (char *[]){"*", NULL}});
    publish(f, 2, "cds:a=1,b=2,d=1"); /* b changed, c removed, d added */
    assert_true(next(f));
    assert_string_equal(f->sent, "b,d");
    assert_string_equal(f->removed, "c");
    assert_int_equal(f->last.version, 2);
    ack(f);
    publish(f, 3, "cds:a=1,b=2,d=1;eds:a=5"); /* nothing of CDS changed */
    assert_false(next(f));
    assert_int_equal(xds_delta_synced_version(&f->d), 3);
}

TL_TEST_FX(test_initial_resource_versions_honoured)
{
    fx *f = *state;
    tr_resources *r = publish(f, 4, "lds:a=1,b=2");
    /* A reconnecting client holds a at the current version, b at an old one, and c,
     * which no longer exists. */
    char *names[] = {"a", "b", "c", NULL};
    char *vers[] = {(char *)fx_version(r, TR_LDS, "a"), "0000000000000000", "1111111111111111",
                    NULL};
    request(f, (dreq){.type = TR_LDS, .inames = names, .ivers = vers});
    assert_true(next(f));
    assert_string_equal(f->sent, "b");
    assert_string_equal(f->removed, "c");
}

TL_TEST_FX(test_first_request_answered_even_when_up_to_date)
{
    fx *f = *state;
    tr_resources *r = publish(f, 4, "lds:a=1");
    char *names[] = {"a", NULL};
    char *vers[] = {(char *)fx_version(r, TR_LDS, "a"), NULL};
    request(f, (dreq){.type = TR_LDS, .inames = names, .ivers = vers});
    assert_true(next(f));
    assert_int_equal(f->last.n + f->last.nremoved, 0);
    ack(f);
    assert_int_equal(xds_delta_synced_version(&f->d), 4);
}

TL_TEST_FX(test_initial_resource_versions_every_type)
{
    fx *f = *state;
    tr_resources *r = publish(f, 9, "sds:s=1;cds:a=1,b=1;eds:a=1,b=1;lds:l=1;rds:r=1");
    static const char *const held[TR_TYPE_COUNT][3] = {[TR_SDS] = {"s"},
                                                       [TR_CDS] = {"a", "b"},
                                                       [TR_EDS] = {"a", "b"},
                                                       [TR_LDS] = {"l"},
                                                       [TR_RDS] = {"r"}};
    /* A reconnecting client holds everything at the current versions: each type is
     * answered (the first request always is) without a resource or a removal. */
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        char *names[3] = {NULL}, *vers[3] = {NULL};
        for (int i = 0; i < 2 && held[t][i]; i++) {
            names[i] = (char *)held[t][i];
            vers[i] = (char *)fx_version(r, (tr_type)t, held[t][i]);
        }
        bool wildcard = t == TR_CDS || t == TR_LDS;
        request(f, (dreq){.type = (tr_type)t,
                          .sub = wildcard ? NULL : names,
                          .inames = names,
                          .ivers = vers});
    }
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        next_is(f, (tr_type)t);
        assert_int_equal(f->last.n + f->last.nremoved, 0);
        ack(f);
    }
    assert_false(next(f));
    assert_int_equal(xds_delta_synced_version(&f->d), 9);
}

TL_TEST_FX(test_named_missing_then_appearing)
{
    fx *f = *state;
    publish(f, 1, "eds:a=1");
    request(f, (dreq){.type = TR_EDS, .sub = (char *[]){"a", "x", NULL}});
    assert_true(next(f));
    assert_string_equal(f->sent, "a");
    assert_string_equal(f->removed, "x"); /* x does not exist: said at once */
    ack(f);
    publish(f, 2, "eds:a=1,y=1");
    assert_false(next(f)); /* x is not announced again; y is not subscribed */
    publish(f, 3, "eds:a=1,x=1");
    assert_true(next(f));
    assert_string_equal(f->sent, "x");
    ack(f);
    publish(f, 4, "eds:a=1");
    assert_true(next(f));
    assert_string_equal(f->removed, "x");
}

TL_TEST_FX(test_subscriptions_apply_with_stale_nonce)
{
    fx *f = *state;
    publish(f, 1, "rds:a=1,b=1,c=1");
    request(f, (dreq){.type = TR_RDS, .sub = (char *[]){"a", NULL}});
    assert_true(next(f));
    char n1[XDS_NONCE_LEN];
    memcpy(n1, f->last.nonce, sizeof(n1));
    /* While the response awaits its ACK, a request with a stale nonce subscribes to
     * b: the ACK part is stale, the subscription counts. */
    assert_int_equal(
        request(f,
                (dreq){.type = TR_RDS, .nonce = "00000000deadbeef", .sub = (char *[]){"b", NULL}}),
        XDS_REQ_STALE);
    assert_false(next(f)); /* one response awaits its ACK */
    assert_int_equal(request(f, (dreq){.type = TR_RDS, .nonce = n1}), XDS_REQ_ACK);
    assert_true(next(f));
    assert_string_equal(f->sent, "b");
}

TL_TEST_FX(test_unsubscribe_and_resubscribe)
{
    fx *f = *state;
    publish(f, 1, "rds:a=1,b=1");
    request_acked(f, (dreq){.type = TR_RDS, .sub = (char *[]){"a", "b", NULL}});
    /* Unsubscribing needs no answer. */
    request(f, (dreq){.type = TR_RDS, .unsub = (char *[]){"b", NULL}});
    assert_false(next(f));
    publish(f, 2, "rds:a=1,b=2");
    assert_false(next(f)); /* b is no longer of interest */
    /* Subscribing again sends it again, and so does naming a held one again. */
    request(f, (dreq){.type = TR_RDS, .sub = (char *[]){"b", "a", NULL}});
    assert_true(next(f));
    assert_string_equal(f->sent, "a,b");
}

TL_TEST_FX(test_star_and_unsubscribe_under_wildcard)
{
    fx *f = *state;
    publish(f, 1, "cds:a=1,b=1");
    request(f, (dreq){.type = TR_CDS, .sub = (char *[]){"*", "a", "zz", NULL}});
    assert_true(next(f));
    assert_string_equal(f->sent, "a,b");
    assert_string_equal(f->removed, "zz");
    ack(f);
    /* Unsubscribing a name while on the wildcard is answered: with the resource
     * when the wildcard covers it, with its removal when it does not exist. */
    request(f, (dreq){.type = TR_CDS, .unsub = (char *[]){"a", "zz", NULL}});
    assert_true(next(f));
    assert_string_equal(f->sent, "a");
    assert_string_equal(f->removed, "zz");
    ack(f);
    /* Leaving the wildcard: nothing more is sent. */
    request(f, (dreq){.type = TR_CDS, .unsub = (char *[]){"*", NULL}});
    publish(f, 2, "cds:a=2,b=2,c=1");
    assert_false(next(f));
}

TL_TEST_FX(test_legacy_wildcard_survives_named_subscribe)
{
    fx *f = *state;
    publish(f, 1, "lds:a=1,b=1");
    request_acked(f, (dreq){.type = TR_LDS});
    request(f, (dreq){.type = TR_LDS, .sub = (char *[]){"a", NULL}});
    assert_true(next(f)); /* named again: sent again */
    assert_string_equal(f->sent, "a");
    ack(f);
    publish(f, 2, "lds:a=1,b=2,c=1");
    assert_true(next(f));
    assert_string_equal(f->sent, "b,c"); /* still on the wildcard */
}

TL_TEST_FX(test_nack_no_resend)
{
    fx *f = *state;
    publish(f, 1, "cds:a=1");
    request(f, (dreq){.type = TR_CDS});
    next_is(f, TR_CDS);
    nack(f);
    assert_false(next(f));
    assert_int_equal(xds_delta_synced_version(&f->d), 0);
    publish(f, 2, "cds:a=1;eds:a=1"); /* a unchanged: not re-sent */
    assert_false(next(f));
    publish(f, 3, "cds:a=2");
    assert_true(next(f));
    ack(f);
    assert_int_equal(xds_delta_synced_version(&f->d), 3);
}

TL_TEST_FX(test_push_order_and_endpoint_refresh)
{
    fx *f = *state;
    publish(f, 1, "sds:s=1;cds:a=1;eds:a=1;lds:l=1;rds:r=1");
    request(f, (dreq){.type = TR_RDS, .sub = (char *[]){"r", NULL}});
    request(f, (dreq){.type = TR_LDS});
    request(f, (dreq){.type = TR_EDS, .sub = (char *[]){"a", NULL}});
    request(f, (dreq){.type = TR_CDS});
    request(f, (dreq){.type = TR_SDS, .sub = (char *[]){"s", NULL}});
    tr_type want[] = {TR_SDS, TR_CDS, TR_EDS, TR_LDS, TR_RDS};
    for (int i = 0; i < 5; i++) {
        next_is(f, want[i]);
        ack(f);
    }
    /* Cluster a changes, its endpoints do not: they follow it anyway. */
    publish(f, 2, "sds:s=1;cds:a=2;eds:a=1;lds:l=1;rds:r=1");
    next_is(f, TR_CDS);
    next_is(f, TR_EDS);
    assert_string_equal(f->sent, "a");
    assert_false(next(f));
}

TL_TEST_FX(test_coalescing)
{
    fx *f = *state;
    publish(f, 1, "cds:a=1");
    request(f, (dreq){.type = TR_CDS});
    assert_true(next(f));
    tr_resources *r2 = fx_res(2, "cds:a=2");
    tr_resources *r3 = fx_res(3, "cds:a=3");
    assert_int_equal(xds_state_adopt(&f->d.st, r2, f->now), XDS_ADOPT_NEW);
    assert_int_equal(xds_state_adopt(&f->d.st, r3, f->now), XDS_ADOPT_COALESCED);
    assert_int_equal(xds_state_adopt(&f->d.st, r3, f->now), XDS_ADOPT_IGNORED);
    assert_int_equal(xds_state_oldest_unacked_ms(&f->d.st), f->now);
    ack(f);
    assert_true(next(f));
    assert_int_equal(f->last.version, 3);
    /* A rollout may move a stream back: an older version is served when assigned. */
    ack(f);
    assert_int_equal(xds_state_adopt(&f->d.st, r2, f->now), XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_int_equal(f->last.version, 2);
    tr_resources_unref(r2);
    tr_resources_unref(r3);
}

/* A cluster gone from the snapshot is removed only after the client ACKed the routes
 * of the new snapshot (which may have used it), and never while it NACKs them. */
TL_TEST_FX(test_removed_cluster_outlives_its_routes)
{
    fx *f = *state;
    char *star[] = {"*", NULL};
    char *r[] = {"r", NULL};
    publish(f, 1, "cds:old=1;lds:l=1;rds:r=1");
    request(f, (dreq){.type = TR_CDS, .sub = star});
    request(f, (dreq){.type = TR_LDS, .sub = star});
    request(f, (dreq){.type = TR_RDS, .sub = r});
    for (int i = 0; i < 3; i++) {
        assert_true(next(f));
        ack(f);
    }
    assert_int_equal(xds_delta_synced_version(&f->d), 1);
    publish(f, 2, "cds:new=1;lds:l=2;rds:r=2");
    next_is(f, TR_CDS);
    assert_string_equal(f->sent, "new");
    assert_string_equal(f->removed, ""); /* "old" is still routed to */
    ack(f);
    assert_true(next(f)); /* LDS */
    ack(f);
    next_is(f, TR_RDS);
    /* NACKed routes: the client runs the old ones, so "old" stays. */
    nack(f);
    assert_false(next(f));
    assert_int_equal(xds_delta_synced_version(&f->d), 0);
    publish(f, 3, "cds:new=1;lds:l=2;rds:r=3");
    next_is(f, TR_RDS);
    ack(f);
    next_is(f, TR_CDS);
    assert_string_equal(f->sent, "");
    assert_string_equal(f->removed, "old");
    ack(f);
    assert_int_equal(xds_delta_synced_version(&f->d), 3);
}

TL_MAIN()
