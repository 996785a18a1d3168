/*
 * test_sotw.c — the state-of-the-world ADS protocol, request by request: nonces,
 * versions, ACK/NACK, stale requests, subscriptions and wildcards, full state for
 * LDS/CDS, push order and coalescing (server/xds/sotw.c).
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>

#include "server/xds/sotw.h"
#include "tests/unit/xds/xds_fixture.h"

#define SPEC_V1 "sds:s=1;cds:a=1,b=1;eds:a=1,b=1;lds:l=1,m=1;rds:r=1"

typedef struct fx {
    xds_sotw s;
    xds_names *pool; /* NULL: the stream keeps private copies of its names */
    int64_t now;
    char names[512]; /* names of the last response, comma-separated */
    xds_response last;
} fx;

/* Whether the tests run with the names interned in a shared table, as the server does. */
static bool interned;

static int setup(void **state)
{
    fx *f = sx_calloc(1, sizeof(*f));
    xds_state_init(&f->s.st, 42, NULL);
    f->now = 1000;
    if (interned) {
        f->pool = xds_names_create();
        for (int t = 0; t < TR_TYPE_COUNT; t++)
            f->s.st.subs[t].pool = f->pool;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    xds_response_clear(&f->last);
    xds_sotw_free(&f->s);
    if (f->pool) {
        /* Every name the stream interned was released with it. */
        assert_int_equal(xds_names_count(f->pool), 0);
        xds_names_destroy(f->pool);
    }
    sx_free(f);
    return 0;
}

static void publish(fx *f, long long version, const char *spec, xds_adopt want)
{
    tr_resources *r = fx_res(version, spec);
    assert_int_equal(xds_state_adopt(&f->s.st, r, f->now), want);
    tr_resources_unref(r);
}

/* Sends a request; names is a NULL-terminated list (NULL for none). */
static xds_req_kind request(fx *f, tr_type t, const char *nonce, bool nack, char **names)
{
    size_t n = 0;
    while (names && names[n])
        n++;
    xds_sotw_request r = {
        .type = t, .nonce = nonce, .names = names, .name_count = n, .is_nack = nack};
    xds_req_outcome oc;
    f->now += 5;
    xds_sotw_on_request(&f->s, &r, f->now, &oc);
    return oc.kind;
}

/* The next response, or false (f->last then keeps the previous one); its resource
 * names go into f->names. */
static bool next(fx *f)
{
    xds_response r;
    f->now += 1;
    if (!xds_sotw_next(&f->s, f->now, &r))
        return false;
    xds_response_clear(&f->last);
    f->last = r;
    f->names[0] = '\0';
    for (size_t i = 0; i < f->last.n; i++) {
        size_t len = strlen(f->names);
        snprintf(f->names + len, sizeof(f->names) - len, "%s%s", i ? "," : "",
                 f->last.res->items[f->last.type][f->last.idx[i]].name);
    }
    return true;
}

/* Takes the next response, which must come and be of type t. */
static void next_is(fx *f, tr_type t)
{
    assert_true(next(f));
    assert_int_equal(f->last.type, t);
}

/* ACKs the last response, the request naming names (NULL for none). */
static void ack_names(fx *f, char **names)
{
    char nonce[XDS_NONCE_LEN];
    memcpy(nonce, f->last.nonce, sizeof(nonce));
    assert_int_equal(request(f, f->last.type, nonce, false, names), XDS_REQ_ACK);
}

/* ACKs the last response with no names. */
static void ack(fx *f)
{
    ack_names(f, NULL);
}

/* Answers the last response with a request of type t carrying its nonce (a NACK when
 * nack) at time when, and returns the outcome. */
static xds_req_outcome answer_last(fx *f, tr_type t, bool nack, int64_t when)
{
    char nonce[XDS_NONCE_LEN];
    memcpy(nonce, f->last.nonce, sizeof(nonce));
    xds_sotw_request r = {.type = t, .nonce = nonce, .is_nack = nack};
    xds_req_outcome oc;
    xds_sotw_on_request(&f->s, &r, when, &oc);
    return oc;
}

/* Subscribes type t to names (NULL for none) with a first request, which is answered,
 * and ACKs that response with the same names. */
static void subscribe_acked(fx *f, tr_type t, char **names)
{
    request(f, t, "", false, names);
    assert_true(next(f));
    ack_names(f, names);
}

/* ------------------------------------------------------------------ nonces, versions */

TL_TEST_FX(test_fresh_nonce_and_version_per_response)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    assert_int_equal(request(f, TR_CDS, "", false, NULL), XDS_REQ_SUBSCRIBE);
    next_is(f, TR_CDS);
    assert_int_equal(f->last.version, 1);
    assert_string_equal(f->names, "a,b");
    char first[XDS_NONCE_LEN];
    memcpy(first, f->last.nonce, sizeof(first));
    assert_int_equal(strlen(first), 16);
    ack(f);

    publish(f, 2, "cds:a=2,b=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_int_equal(f->last.version, 2);
    assert_string_not_equal(f->last.nonce, first);
    /* Another stream starts from another seed: its nonces differ too. */
    xds_sotw other;
    memset(&other, 0, sizeof(other));
    xds_state_init(&other.st, 43, NULL);
    tr_resources *r = fx_res(2, "cds:a=2,b=1");
    xds_state_adopt(&other.st, r, 0);
    tr_resources_unref(r);
    xds_sotw_request q = {.type = TR_CDS, .nonce = ""};
    xds_req_outcome oc;
    xds_sotw_on_request(&other, &q, 0, &oc);
    xds_response o;
    assert_true(xds_sotw_next(&other, 0, &o));
    assert_string_not_equal(o.nonce, first);
    xds_response_clear(&o);
    xds_sotw_free(&other);
}

TL_TEST_FX(test_ack_never_resends)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    subscribe_acked(f, TR_LDS, NULL);
    assert_false(next(f));
    /* A repeated ACK (same nonce, same names) changes nothing either. */
    assert_int_equal(request(f, TR_LDS, f->last.nonce, false, NULL), XDS_REQ_SUBSCRIBE);
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 1);
}

TL_TEST_FX(test_nack_keeps_last_good)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    subscribe_acked(f, TR_CDS, NULL);
    publish(f, 2, "cds:a=bad,b=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    xds_req_outcome oc = answer_last(f, TR_CDS, true, f->now);
    assert_int_equal(oc.kind, XDS_REQ_NACK);
    assert_int_equal(oc.version, 2);
    /* Nothing is re-sent: the client keeps version 1. */
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 0);
    /* A version that does not touch clusters does not re-send the rejected ones. */
    publish(f, 3, "cds:a=bad,b=1;eds:a=1", XDS_ADOPT_NEW);
    assert_false(next(f));
    /* A fix is sent as usual and its ACK brings the stream in step. */
    publish(f, 4, "cds:a=3,b=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_int_equal(f->last.version, 4);
    ack(f);
    assert_int_equal(xds_sotw_synced_version(&f->s), 4);
}

TL_TEST_FX(test_stale_nonce_ignored)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *a[] = {"a", NULL};
    subscribe_acked(f, TR_EDS, a);
    char old[XDS_NONCE_LEN];
    memcpy(old, f->last.nonce, sizeof(old));
    publish(f, 2, "eds:a=2,b=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    /* A request carrying the older nonce is stale: its names are not applied and it
     * is not answered. */
    char *ab[] = {"a", "b", NULL};
    assert_int_equal(request(f, TR_EDS, old, false, ab), XDS_REQ_STALE);
    assert_false(next(f));
    /* So is one with a nonce this stream never sent... once the type has a response. */
    assert_int_equal(request(f, TR_EDS, "0123456789abcdef", false, ab), XDS_REQ_STALE);
    /* The ACK of the latest response is processed, with its names. */
    ack_names(f, ab);
    assert_true(next(f));
    assert_string_equal(f->names, "b");
}

TL_TEST_FX(test_empty_nonce_always_answered)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *l[] = {"l", NULL};
    subscribe_acked(f, TR_LDS, l);
    assert_false(next(f));
    /* The client starts the type over (it reconnected carrying version "1" from
     * another replica): answered although nothing changed. */
    assert_int_equal(request(f, TR_LDS, "", false, l), XDS_REQ_SUBSCRIBE);
    assert_true(next(f));
    assert_string_equal(f->names, "l");
    /* A nonce this stream never sent for the type also starts it over. */
    request(f, TR_RDS, "feedfacefeedface", false, (char *[]){"r", NULL});
    next_is(f, TR_RDS);
    assert_string_equal(f->names, "r");
}

/* ------------------------------------------------------------------ subscriptions */

TL_TEST_FX(test_legacy_wildcard_lds_cds_only)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    request(f, TR_LDS, "", false, NULL);
    assert_true(next(f));
    assert_string_equal(f->names, "l,m");
    /* For EDS an empty list is nothing, but the first request is still answered. */
    request(f, TR_EDS, "", false, NULL);
    next_is(f, TR_EDS);
    assert_int_equal(f->last.n, 0);
}

TL_TEST_FX(test_empty_after_names_unsubscribes)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *a[] = {"a", NULL};
    request(f, TR_CDS, "", false, a);
    assert_true(next(f));
    assert_string_equal(f->names, "a");
    /* [] after a list: unsubscribe from everything (not a wildcard). CDS is full
     * state, so the answer is an empty response, which deletes "a". */
    ack_names(f, NULL);
    assert_true(next(f));
    assert_int_equal(f->last.n, 0);
    ack(f);
    publish(f, 2, "cds:a=2,b=2", XDS_ADOPT_NEW);
    assert_false(next(f));
}

TL_TEST_FX(test_star_wildcard_and_back_to_names)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *star[] = {"*", NULL};
    request(f, TR_CDS, "", false, star);
    assert_true(next(f));
    assert_string_equal(f->names, "a,b");
    char *star_a[] = {"*", "a", NULL};
    ack_names(f, star_a);
    assert_true(next(f)); /* the subscription changed: full state again */
    assert_string_equal(f->names, "a,b");
    char *only_a[] = {"a", NULL};
    ack_names(f, only_a);
    assert_true(next(f));
    assert_string_equal(f->names, "a");
    /* A wildcard subscription to a type with no wildcard semantics also works: "*". */
    request(f, TR_EDS, "", false, star);
    assert_true(next(f));
    assert_string_equal(f->names, "a,b");
}

TL_TEST_FX(test_names_sent_when_they_appear)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *r2[] = {"r2", NULL};
    request(f, TR_RDS, "", false, r2);
    assert_true(next(f)); /* answered (first request), without the missing name */
    assert_int_equal(f->last.n, 0);
    ack_names(f, r2);
    assert_false(next(f));
    publish(f, 2, "rds:r=1,r2=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_string_equal(f->names, "r2");
    assert_int_equal(f->last.version, 2);
}

TL_TEST_FX(test_newly_requested_names_resent)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *ab[] = {"a", "b", NULL}, *a[] = {"a", NULL};
    request(f, TR_EDS, "", false, ab);
    assert_true(next(f));
    assert_string_equal(f->names, "a,b");
    ack_names(f, a); /* drops b: nothing to send */
    assert_false(next(f));
    request(f, TR_EDS, f->last.nonce, false, ab); /* b again: sent again */
    assert_true(next(f));
    assert_string_equal(f->names, "b");
}

/* ------------------------------------------------------------------ content */

TL_TEST_FX(test_lds_cds_full_state_absence_deletes)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    subscribe_acked(f, TR_CDS, NULL);
    publish(f, 2, "cds:a=1,b=2", XDS_ADOPT_NEW); /* only b changed */
    assert_true(next(f));
    assert_string_equal(f->names, "a,b"); /* every cluster, not just b */
    ack(f);
    publish(f, 3, "cds:b=2", XDS_ADOPT_NEW); /* a deleted, b unchanged */
    assert_true(next(f));
    assert_string_equal(f->names, "b"); /* a's absence deletes it */
    assert_int_equal(f->last.version, 3);
}

/* ACKs the last response, repeating the RDS subscription to "r" for RDS. */
static void ack_r(fx *f)
{
    char *rds[] = {"r", NULL};
    if (f->last.type == TR_RDS)
        ack_names(f, rds);
    else
        ack(f);
}

/* Subscribes CDS, LDS and RDS ("r") at v1 and ACKs each response. */
static void routes_at_v1(fx *f, const char *spec)
{
    char *rds[] = {"r", NULL};
    publish(f, 1, spec, XDS_ADOPT_NEW);
    request(f, TR_CDS, "", false, NULL);
    request(f, TR_LDS, "", false, NULL);
    request(f, TR_RDS, "", false, rds);
    for (int i = 0; i < 3; i++) {
        assert_true(next(f));
        ack_r(f);
    }
    assert_int_equal(xds_sotw_synced_version(&f->s), 1);
}

/* A cluster the new routes no longer use is deleted only after the client ACKed them:
 * until then the CDS response still carries it, so no route points at a missing one. */
TL_TEST_FX(test_removed_cluster_outlives_its_routes)
{
    fx *f = *state;
    routes_at_v1(f, "cds:old=1;lds:l=1;rds:r=1");
    publish(f, 2, "cds:new=1;lds:l=2;rds:r=2", XDS_ADOPT_NEW); /* r moves from old to new */
    next_is(f, TR_CDS);
    assert_string_equal(f->names, "new");
    assert_int_equal(f->last.nkept, 1);
    assert_string_equal(f->last.kept[0].name, "old");
    ack_r(f);
    next_is(f, TR_LDS);
    ack_r(f);
    next_is(f, TR_RDS);
    assert_int_equal(xds_sotw_synced_version(&f->s), 0); /* not in step yet */
    ack_r(f);
    /* Routes accepted: the last CDS response drops the old cluster. */
    next_is(f, TR_CDS);
    assert_string_equal(f->names, "new");
    assert_int_equal(f->last.nkept, 0);
    assert_int_equal(f->last.version, 2);
    ack_r(f);
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 2);
}

/* A client that NACKs the new routes keeps running the old ones: their cluster stays. */
TL_TEST_FX(test_nacked_routes_keep_their_cluster)
{
    fx *f = *state;
    routes_at_v1(f, "cds:old=1;lds:l=1;rds:r=1");
    publish(f, 2, "cds:new=1;lds:l=2;rds:r=2", XDS_ADOPT_NEW);
    for (int i = 0; i < 2; i++) { /* CDS (old kept), LDS */
        assert_true(next(f));
        ack_r(f);
    }
    next_is(f, TR_RDS);
    char nonce[XDS_NONCE_LEN];
    memcpy(nonce, f->last.nonce, sizeof(nonce));
    char *rds[] = {"r", NULL};
    assert_int_equal(request(f, TR_RDS, nonce, true, rds), XDS_REQ_NACK);
    assert_false(next(f)); /* no CDS response deleting "old" */
    assert_int_equal(f->s.nkept, 1);
    /* The next snapshot is accepted; then "old" goes. */
    publish(f, 3, "cds:new=1;lds:l=2;rds:r=3", XDS_ADOPT_NEW);
    next_is(f, TR_RDS);
    ack_r(f);
    next_is(f, TR_CDS);
    assert_int_equal(f->last.nkept, 0);
    assert_string_equal(f->names, "new");
}

TL_TEST_FX(test_eds_rds_only_requested_existing_changed)
{
    fx *f = *state;
    publish(f, 1, "eds:a=1,b=1,c=1", XDS_ADOPT_NEW);
    char *names[] = {"a", "b", "zz", NULL};
    request(f, TR_EDS, "", false, names);
    assert_true(next(f));
    assert_string_equal(f->names, "a,b"); /* requested and existing; not c, not zz */
    ack_names(f, names);
    publish(f, 2, "eds:a=2,b=1,c=2", XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_string_equal(f->names, "a"); /* only what changed */
    ack_names(f, names);
    publish(f, 3, "eds:a=2,c=3", XDS_ADOPT_NEW); /* b deleted: EDS has no deletion */
    assert_false(next(f));
}

/* Endpoint changes after a NACKed EDS response: the next change of another cluster
 * carries that one alone (the rejected one is not re-sent: it would be rejected again),
 * and the rejected cluster is sent again once it changes — also back to what the client
 * still runs, since the server cannot know that the client kept it. */
TL_TEST_FX(test_eds_subset_after_nack)
{
    fx *f = *state;
    publish(f, 1, "eds:a=1,b=1,c=1", XDS_ADOPT_NEW);
    char *names[] = {"a", "b", "c", NULL};
    request(f, TR_EDS, "", false, names);
    assert_true(next(f));
    ack_names(f, names);
    publish(f, 2, "eds:a=bad,b=1,c=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_string_equal(f->names, "a");
    char nonce[XDS_NONCE_LEN];
    memcpy(nonce, f->last.nonce, sizeof(nonce));
    assert_int_equal(request(f, TR_EDS, nonce, true, names), XDS_REQ_NACK);
    assert_false(next(f));
    publish(f, 3, "eds:a=bad,b=2,c=1", XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_string_equal(f->names, "b");
    ack_names(f, names);
    publish(f, 4, "eds:a=1,b=2,c=1", XDS_ADOPT_NEW); /* a back to what it was */
    assert_true(next(f));
    assert_string_equal(f->names, "a");
    ack_names(f, names);
    assert_int_equal(xds_sotw_synced_version(&f->s), 4);
}

TL_TEST_FX(test_push_order_make_before_break)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    /* Subscribed in the "wrong" order on purpose. */
    char *r[] = {"r", NULL}, *ab[] = {"a", "b", NULL}, *s[] = {"s", NULL};
    request(f, TR_RDS, "", false, r);
    request(f, TR_LDS, "", false, NULL);
    request(f, TR_EDS, "", false, ab);
    request(f, TR_CDS, "", false, NULL);
    request(f, TR_SDS, "", false, s);
    tr_type want[] = {TR_SDS, TR_CDS, TR_EDS, TR_LDS, TR_RDS};
    for (int i = 0; i < 5; i++) {
        next_is(f, want[i]);
    }
    assert_false(next(f));
    /* ACK each (in any order), then a change to every type goes out in order again. */
    const xds_push *push = f->s.st.push;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        char nonce[XDS_NONCE_LEN];
        xds_nonce_format(push[t].sent_nonce, nonce);
        char **names = t == TR_RDS ? r : t == TR_EDS ? ab : t == TR_SDS ? s : NULL;
        assert_int_equal(request(f, (tr_type)t, nonce, false, names), XDS_REQ_ACK);
    }
    publish(f, 2, "sds:s=2;cds:a=2,b=1;eds:a=2,b=1;lds:l=2,m=1;rds:r=2", XDS_ADOPT_NEW);
    for (int i = 0; i < 5; i++) {
        next_is(f, want[i]);
        assert_int_equal(f->last.version, 2);
    }
}

TL_TEST_FX(test_changed_cluster_resends_its_endpoints)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *ab[] = {"a", "b", NULL};
    subscribe_acked(f, TR_CDS, NULL);
    subscribe_acked(f, TR_EDS, ab);
    /* Cluster a changes, its endpoints do not: Envoy still needs them to finish
     * warming the updated cluster. */
    publish(f, 2, "sds:s=1;cds:a=2,b=1;eds:a=1,b=1", XDS_ADOPT_NEW);
    next_is(f, TR_CDS);
    next_is(f, TR_EDS);
    assert_string_equal(f->names, "a");
}

TL_TEST_FX(test_unchanged_types_not_sent_and_synced)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    char *ab[] = {"a", "b", NULL};
    subscribe_acked(f, TR_CDS, NULL);
    subscribe_acked(f, TR_EDS, ab);
    assert_int_equal(xds_sotw_synced_version(&f->s), 1);
    publish(f, 2, "sds:s=1;cds:a=1,b=1;eds:a=1,b=9;lds:l=1,m=1;rds:r=1", XDS_ADOPT_NEW);
    assert_int_equal(xds_sotw_synced_version(&f->s), 0);
    next_is(f, TR_EDS); /* CDS did not change: not sent */
    assert_string_equal(f->names, "b");
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 0); /* EDS awaits its ACK */
    ack_names(f, ab);
    assert_int_equal(xds_sotw_synced_version(&f->s), 2);
    /* A snapshot changing nothing this stream watches brings it in step at once. */
    publish(f, 3, "sds:s=1;cds:a=1,b=1;eds:a=1,b=9;lds:l=5", XDS_ADOPT_NEW);
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 3);
}

/* ------------------------------------------------------------------ reconnects */

/* A first request of type t carrying version_info (names: NULL-terminated, or NULL). */
static void request_holding(fx *f, tr_type t, const char *version_info, char **names)
{
    size_t n = 0;
    while (names && names[n])
        n++;
    xds_sotw_request r = {
        .type = t, .nonce = "", .version_info = version_info, .names = names, .name_count = n};
    xds_req_outcome oc;
    f->now += 5;
    xds_sotw_on_request(&f->s, &r, f->now, &oc);
    assert_int_equal(oc.kind, XDS_REQ_SUBSCRIBE);
}

TL_TEST_FX(test_reconnect_holding_current_version_not_resent)
{
    fx *f = *state;
    publish(f, 7, SPEC_V1, XDS_ADOPT_NEW);
    /* A proxy that ACKed v7 of every type on a replica that died opens a stream here. */
    request_holding(f, TR_SDS, "7", (char *[]){"s", NULL});
    request_holding(f, TR_CDS, "7", NULL);
    request_holding(f, TR_EDS, "7", (char *[]){"a", "b", NULL});
    request_holding(f, TR_LDS, "7", NULL);
    request_holding(f, TR_RDS, "7", (char *[]){"r", NULL});
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 7);
    /* Something changes: only what changed is sent, as to any stream. */
    publish(f, 8, "sds:s=1;cds:a=1,b=1;eds:a=1,b=2;lds:l=1,m=1;rds:r=1", XDS_ADOPT_NEW);
    next_is(f, TR_EDS);
    assert_string_equal(f->names, "b");
    assert_int_equal(f->last.version, 8);
    ack_names(f, (char *[]){"a", "b", NULL});
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 8);
}

TL_TEST_FX(test_reconnect_holding_other_version_resent)
{
    fx *f = *state;
    publish(f, 7, SPEC_V1, XDS_ADOPT_NEW);
    /* An older version, one from elsewhere, and none: each type is sent in full. */
    request_holding(f, TR_CDS, "6", NULL);
    request_holding(f, TR_LDS, "x7", NULL);
    request_holding(f, TR_RDS, "", (char *[]){"r", NULL});
    next_is(f, TR_CDS);
    assert_string_equal(f->names, "a,b");
    next_is(f, TR_LDS);
    assert_string_equal(f->names, "l,m");
    next_is(f, TR_RDS);
    assert_string_equal(f->names, "r");
}

TL_TEST_FX(test_claim_checked_against_the_snapshot_served)
{
    fx *f = *state;
    /* The request comes before the stream has a snapshot (a replica starting): the
     * claim waits for it. */
    request_holding(f, TR_LDS, "7", NULL);
    request_holding(f, TR_CDS, "7", NULL);
    assert_false(next(f));
    publish(f, 7, SPEC_V1, XDS_ADOPT_NEW);
    assert_false(next(f));
    assert_int_equal(xds_sotw_synced_version(&f->s), 7);
}

TL_TEST_FX(test_claim_dropped_when_names_change)
{
    fx *f = *state;
    publish(f, 7, SPEC_V1, XDS_ADOPT_NEW);
    /* No snapshot evaluated the claim yet when the names change: the new names were
     * never part of what the client said it holds. */
    request_holding(f, TR_EDS, "7", (char *[]){"a", NULL});
    request_holding(f, TR_EDS, "7", (char *[]){"a", "b", NULL});
    next_is(f, TR_EDS);
    assert_string_equal(f->names, "a,b");
}

/* ------------------------------------------------------------------ flow */

TL_TEST_FX(test_one_unacked_per_type_and_coalescing)
{
    fx *f = *state;
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    request(f, TR_CDS, "", false, NULL);
    assert_true(next(f));
    char n1[XDS_NONCE_LEN];
    memcpy(n1, f->last.nonce, sizeof(n1));
    assert_int_equal(xds_state_oldest_unacked_ms(&f->s.st), f->now);
    /* While v1 awaits its ACK, v2 and v3 arrive: v3 replaces the unsent v2. */
    publish(f, 2, "cds:a=2,b=1", XDS_ADOPT_NEW);
    assert_false(next(f));
    publish(f, 3, "cds:a=3,b=1", XDS_ADOPT_COALESCED);
    assert_false(next(f));
    publish(f, 3, "cds:a=3,b=1", XDS_ADOPT_IGNORED); /* the same version again */
    assert_int_equal(request(f, TR_CDS, n1, false, NULL), XDS_REQ_ACK);
    assert_int_equal(xds_state_oldest_unacked_ms(&f->s.st), 0);
    assert_true(next(f));
    assert_int_equal(f->last.version, 3);
    /* The ACK of v3 reports the latency from its publication. */
    xds_req_outcome oc = answer_last(f, TR_CDS, false, f->now + 100);
    assert_int_equal(oc.kind, XDS_REQ_ACK);
    assert_int_equal(oc.version, 3);
    assert_true(oc.latency_ms >= 100);
}

TL_TEST_FX(test_nothing_before_a_snapshot)
{
    fx *f = *state;
    request(f, TR_LDS, "", false, NULL);
    assert_false(next(f)); /* no snapshot for the group yet: wait */
    publish(f, 1, SPEC_V1, XDS_ADOPT_NEW);
    assert_true(next(f));
    assert_string_equal(f->names, "l,m");
}

/* Every test runs twice: with names private to each stream, then interned. */
int main(void)
{
    int failed = tl_run("private names", NULL, NULL);
    interned = true;
    return failed + tl_run("interned names", NULL, NULL);
}
