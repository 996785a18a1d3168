/*
 * leader.h — the one place that decides whether this replica does leader-only work
 * (the Kubernetes watch path's writes and status, and whatever else must run on one
 * replica at a time): a PostgreSQL session-level advisory lock held on a connection of
 * its own (storage/pg_lock.h).
 *
 * A thread tries to take the lock every retry_ms while it does not hold it; while it
 * does, it checks the session every check_ms. The moment a check fails (the database
 * went away, the connection was cut, a failover happened) this replica stops leading,
 * closes the session and tells its subscribers, before the server frees the lock for
 * another replica (lease_ms: the lock session's lease, see pg_lock.h; check_ms must be
 * at most half of it). A session the server ends itself (its side of the connection
 * was cut, pg_terminate_backend, a restart) frees the lock at once instead: so a
 * replica that takes the lock waits check_ms and one check's deadline (lease_ms / 3)
 * before it leads, time in which the last leader's next check fails. A replica that is
 * killed frees the lock at once (its connections close), and another leads within
 * retry_ms + check_ms + lease_ms / 3. The order rests on the replicas' threads keeping
 * their timing, so leader-only work must still stay safe when repeated: writes are
 * idempotent or serialised in the database. Every gain of the lock starts a new term
 * (1, 2, ...): work started under one term is stale once leader_term() returns another.
 *
 * The log says "this replica leads" before the flag turns on and "this replica stops
 * leading" / "gives the lead up" after it turns off, so the log bounds each term.
 *
 * Subscribers are told on the leader thread, in subscription order, after the flag
 * changed; a subscriber must not block for long. A disabled leader (no URL) never
 * leads. The component is always ready: standbys serve too.
 *
 * Thread safety: leader_is_leader and leader_term from any thread; leader_subscribe
 * before the component starts.
 */
#ifndef SX_SERVER_LEADER_H
#define SX_SERVER_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/metrics.h"
#include "server/supervisor.h"

typedef struct leader leader;

typedef struct leader_options {
    const char *url;        /* the database; NULL or "": this replica never leads */
    const char *lock_name;  /* NULL = "sextant/leader" */
    const char *replica;    /* this replica's id, for logs and pg_stat_activity */
    int retry_ms;           /* between attempts to take the lock; 0 = 2000 (leader.retry) */
    int lease_ms;           /* the lock session's lease (pg_lock.h); 0 = 10000 (leader.lease) */
    int check_ms;           /* between checks of a held session; 0 = 1000 (leader.check) */
    int connect_timeout_ms; /* 0 = 5000 */
    sx_metrics *metrics;    /* sextant_leader, sextant_leader_transitions_total; may be NULL */
    sup_supervisor *sup;    /* its sleeps end at shutdown; required */
} leader_options;

/* Called with leading true when this replica took the lock (term: the new term), false
 * when it lost it or is stopping (term: the term that ended). */
typedef void (*leader_change_fn)(void *ctx, bool leading, uint64_t term);

/* A leader_change_fn whose ctx is an sx_wake (server/base/clock.h): raises it (not
 * stopping) when the lead is gained, so that a leader-only loop starts at once. */
void leader_wake_on_lead(void *wake, bool leading, uint64_t term);

/* A stopped leader (options copied). Never NULL; free with leader_destroy. */
leader *leader_create(const leader_options *opt);

/* Adds a subscriber (at most 8). Before the component starts. */
void leader_subscribe(leader *l, leader_change_fn fn, void *ctx);

/* Whether this replica leads now. */
bool leader_is_leader(const leader *l);

/* The current term while leading, else 0. */
uint64_t leader_term(const leader *l);

/* The component "leader", for sup_register with sup_thread_ops. Stopping it gives the
 * lock up (subscribers hear leading false first). */
sup_thread *leader_component(leader *l);

/* Frees the leader; its thread must have stopped. NULL allowed. */
void leader_destroy(leader *l);

#endif
