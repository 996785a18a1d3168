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
 * another replica (lease_ms: the lock session's lease, see pg_lock.h). That order holds
 * when the connection is cut or the database is unreachable; a session the server
 * ends itself (pg_terminate_backend, a restart) frees the lock at once, and for up to
 * check_ms two replicas may both believe they lead. Leader-only work must therefore
 * stay safe when repeated: writes are idempotent or serialised in the database. Every gain of
 * the lock starts a new term (1, 2, ...): work started under one term is stale once
 * leader_term() returns another.
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
    int retry_ms;           /* between attempts to take the lock; 0 = 2000 */
    int lease_ms;           /* the lock session's lease (pg_lock.h); 0 = 10000 */
    int check_ms;           /* between checks of a held session; 0 = 1000 */
    int connect_timeout_ms; /* 0 = 5000 */
    sx_metrics *metrics;    /* sextant_leader, sextant_leader_transitions_total; may be NULL */
    sup_supervisor *sup;    /* its sleeps end at shutdown; required */
} leader_options;

/* Called with leading true when this replica took the lock (term: the new term), false
 * when it lost it or is stopping (term: the term that ended). */
typedef void (*leader_change_fn)(void *ctx, bool leading, uint64_t term);

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
