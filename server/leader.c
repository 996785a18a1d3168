/*
 * leader.c — leadership by PostgreSQL advisory lock: one thread that takes the lock,
 * watches the session that holds it and tells subscribers when leadership changes.
 */
#include "server/leader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "storage/pg_lock.h"

#define COMPONENT "leader"
#define MAX_SUBS  8

struct leader {
    sx_arena *strings; /* holds url, lock_name and replica, set once at creation */
    const char *url, *lock_name, *replica;
    int retry_ms, lease_ms, check_ms, connect_timeout_ms;
    sup_supervisor *sup;
    sx_metric *m_leader, *m_transitions;
    struct {
        leader_change_fn fn;
        void *ctx;
    } subs[MAX_SUBS];
    int nsubs;
    atomic_bool leading;
    atomic_uint_fast64_t term; /* current term while leading, else 0 */
    uint64_t terms;            /* terms begun so far (the thread's) */
    sup_thread thread;
};

static void tell(leader *l, bool leading, uint64_t term)
{
    if (l->m_leader)
        sx_metric_set(l->m_leader, NULL, leading ? 1 : 0);
    if (l->m_transitions) {
        const char *lv[] = {leading ? "gained" : "lost"};
        sx_metric_inc(l->m_transitions, lv);
    }
    for (int i = 0; i < l->nsubs; i++)
        l->subs[i].fn(l->subs[i].ctx, leading, term);
}

/* Leads until the session is lost or shutdown begins; then gives the lead up. */
static void lead(leader *l, pg_lock_session *s)
{
    uint64_t term = ++l->terms;
    /* Said before the flag turns on, and the end said after it turns off, so that the
     * log's lines bound every moment this replica led. */
    SX_INFO(COMPONENT, "this replica leads (term %llu, lock session pid %d)",
            (unsigned long long)term, pg_lock_backend_pid(s));
    atomic_store(&l->term, term);
    atomic_store(&l->leading, true);
    tell(l, true, term);
    sx_err err = {0};
    bool lost = false;
    while (sup_sleep(l->sup, l->check_ms)) {
        if (pg_lock_check(s, &err) != 0) {
            lost = true;
            break;
        }
    }
    atomic_store(&l->leading, false);
    atomic_store(&l->term, 0);
    if (lost)
        SX_WARN(COMPONENT, "this replica stops leading (term %llu): %s", (unsigned long long)term,
                err.message);
    else
        SX_INFO(COMPONENT, "this replica gives the lead up (term %llu): shutting down",
                (unsigned long long)term);
    tell(l, false, term);
}

/* Whether the session that just took the lock may lead: it first waits one check
 * interval and one check's deadline (a third of the lease, pg_lock.h) and checks that
 * it still holds the session. The server frees the lock at once when it ends the
 * session of the last leader itself (the connection was cut on its side, or the
 * session was terminated); that leader finds out at its next check, within this wait,
 * so the two never lead at the same time. False when the session was lost meanwhile
 * or shutdown began. */
static bool settle(leader *l, pg_lock_session *s)
{
    if (!sup_sleep(l->sup, (int64_t)l->check_ms + l->lease_ms / 3))
        return false;
    sx_err err = {0};
    if (pg_lock_check(s, &err) != 0) {
        SX_WARN(COMPONENT, "took the leader lock but lost its session before leading: %s",
                err.message);
        return false;
    }
    return true;
}

static void *run(void *ctx)
{
    leader *l = ctx;
    char app[96];
    snprintf(app, sizeof(app), "sextant-leader %s", l->replica ? l->replica : "");
    pg_lock_options o = {.url = l->url,
                         .application_name = app,
                         .connect_timeout_ms = l->connect_timeout_ms,
                         .lease_ms = l->lease_ms};
    char last[256] = "";
    do {
        sx_err err = {0};
        pg_lock_session *s = NULL;
        bool held = false;
        if (pg_lock_open(&o, &s, &err) == 0 && pg_lock_try(s, l->lock_name, &held, &err) == 0) {
            last[0] = '\0';
            if (held && settle(l, s))
                lead(l, s);
        } else if (strcmp(last, err.message) != 0) {
            /* Said once per distinct reason, not every retry. */
            SX_WARN(COMPONENT, "cannot take part in leader election: %s", err.message);
            snprintf(last, sizeof(last), "%s", err.message);
        }
        /* A standby keeps no session open: it asks again at the next retry, which
         * costs one short connection per retry_ms per standby. */
        pg_lock_close(s);
    } while (!sup_stopping(l->sup) && sup_sleep(l->sup, l->retry_ms));
    return NULL;
}

void leader_wake_on_lead(void *wake, bool leading, uint64_t term)
{
    (void)term;
    if (leading)
        sx_wake_raise(wake, false);
}

leader *leader_create(const leader_options *opt)
{
    leader *l = sx_calloc(1, sizeof(*l));
    l->strings = sx_arena_create();
    l->url = opt->url && opt->url[0] ? sx_arena_strdup(l->strings, opt->url) : NULL;
    l->lock_name = sx_arena_strdup(l->strings, opt->lock_name ? opt->lock_name : "sextant/leader");
    l->replica = opt->replica ? sx_arena_strdup(l->strings, opt->replica) : NULL;
    l->retry_ms = opt->retry_ms > 0 ? opt->retry_ms : 2000;
    l->lease_ms = opt->lease_ms > 0 ? opt->lease_ms : 10000;
    l->check_ms = opt->check_ms > 0 ? opt->check_ms : 1000;
    l->connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 5000;
    l->sup = opt->sup;
    if (opt->metrics) {
        l->m_leader = sx_metrics_gauge(opt->metrics, "sextant_leader",
                                       "1 while this replica holds the leader lock", NULL);
        l->m_transitions =
            sx_metrics_counter(opt->metrics, "sextant_leader_transitions_total",
                               "Times this replica gained or lost the lead", "change");
        sx_metric_set(l->m_leader, NULL, 0);
    }
    atomic_init(&l->leading, false);
    atomic_init(&l->term, 0);
    l->thread = (sup_thread){.run = run, .ctx = l, .what = "the leader election"};
    return l;
}

void leader_subscribe(leader *l, leader_change_fn fn, void *ctx)
{
    if (l->nsubs == MAX_SUBS) {
        SX_ERROR(COMPONENT, "bug: more than %d leadership subscribers", MAX_SUBS);
        return;
    }
    l->subs[l->nsubs].fn = fn;
    l->subs[l->nsubs].ctx = ctx;
    l->nsubs++;
}

bool leader_is_leader(const leader *l)
{
    return l && atomic_load(&((leader *)l)->leading);
}

uint64_t leader_term(const leader *l)
{
    return l ? atomic_load(&((leader *)l)->term) : 0;
}

static void *never(void *ctx)
{
    (void)ctx;
    return NULL;
}

sup_thread *leader_component(leader *l)
{
    if (l->url == NULL)
        l->thread.run = never; /* no database: this replica never leads */
    return &l->thread;
}

void leader_destroy(leader *l)
{
    if (l == NULL)
        return;
    sx_arena_destroy(l->strings);
    sx_free(l);
}
