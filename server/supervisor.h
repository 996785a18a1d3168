/*
 * supervisor.h — starts the daemon's components in order, holds the readiness gate,
 * turns SIGINT/SIGTERM into an orderly shutdown, and stops components in reverse order
 * within a time budget.
 *
 * A component is a name, a context pointer and three callbacks (sup_ops). The contract
 * that makes slow or flaky dependencies natural:
 *
 *   - start() returns as soon as the component is *running*, not when it is *ready*.
 *     Work that takes long or may fail for a while (the database is not up yet, the
 *     snapshots are still loading) goes into a thread that start() creates. That thread
 *     retries with back-off, sleeping with sup_sleep() (which returns false as soon as
 *     shutdown begins), and reports readiness with sup_set_ready() when its work is done,
 *     or sup_set_ready(false) when it loses the dependency again.
 *   - start() failing is fatal: the configuration cannot work (a port is taken, a file is
 *     unreadable). sup_start_all() returns the error and the daemon exits.
 *   - stop() makes the component stop and joins its threads; it may block. It must not
 *     free ctx: ctx stays valid until sup_destroy, because a readiness probe may still
 *     be running on another thread.
 *   - ready() is an optional probe; without it the flag set by sup_set_ready counts.
 *
 * Thread model: sup_register and sup_start_all are called by the main thread before the
 * supervisor is shared; everything else is thread-safe. sup_block_signals must run before
 * any thread exists, so that every thread (gRPC's and libmicrohttpd's included) inherits
 * a mask with SIGINT and SIGTERM blocked, and only the main thread's sigwait sees them.
 */
#ifndef SX_SERVER_SUPERVISOR_H
#define SX_SERVER_SUPERVISOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/base/clock.h"
#include "server/base/err.h"
#include "server/base/metrics.h"

typedef struct sup_supervisor sup_supervisor;

/* A component's callbacks; see the contract above. Any of them may be NULL. */
typedef struct sup_ops {
    int (*start)(void *ctx, sx_err *err); /* 0 once running; an error is fatal */
    void (*stop)(void *ctx);              /* stops and joins; may block; never frees ctx */
    bool (*ready)(void *ctx);             /* cheap, thread-safe; NULL: use sup_set_ready */
} sup_ops;

/* Lifecycle of one component. Every component lives in the supervisor's array from
 * registration to sup_destroy, whatever its state; only change_state() in supervisor.c
 * moves it. */
typedef enum sup_state {
    SUP_REGISTERED, /* registered, start() not yet called */
    SUP_STARTING,   /* start() is running on the main thread */
    SUP_RUNNING,    /* start() returned 0; readiness comes from ready() or sup_set_ready */
    SUP_FAILED,     /* start() returned an error; stop() will not be called */
    SUP_STOPPING,   /* stop() is running on a stopper thread */
    SUP_STOPPED,    /* stop() returned; the component owns no thread any more */
    SUP_ABANDONED,  /* stop() overran the shutdown budget; its thread was left behind and
                       the process must exit without freeing what the component uses */
} sup_state;

/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread
 * created after it) and ignores SIGPIPE. Call first thing in main, before any library starts a
 * thread. Returns 0 or SX_EINTERNAL. */
int sup_block_signals(sx_err *err) SX_MUSTCHECK;

/* New supervisor. metrics (not owned, may be NULL) receives sextant_ready and
 * sextant_component_ready{component}. shutdown_timeout_ms bounds sup_stop_all. Never NULL. */
sup_supervisor *sup_create(sx_metrics *metrics, int64_t shutdown_timeout_ms);

/* Frees the supervisor (not the components' contexts). Only after sup_stop_all returned 0,
 * or when it was never started; NULL allowed. */
void sup_destroy(sup_supervisor *sup);

/* Adds a component (name copied; ops copied; ctx borrowed). Components start in
 * registration order. Returns 0, or SX_ECONFLICT for a duplicate name, or SX_EINVAL
 * once sup_start_all has begun. */
int sup_register(sup_supervisor *sup, const char *name, const sup_ops *ops, void *ctx,
                 sx_err *err) SX_MUSTCHECK;

/* Starts every component in registration order on the calling thread. On the first
 * failure returns its code with err prefixed by the component's name; components already
 * started keep running, so the caller still calls sup_stop_all. */
int sup_start_all(sup_supervisor *sup, sx_err *err) SX_MUSTCHECK;

/* Sets the readiness flag of the named component (for components without a ready()
 * probe). Unknown names are logged and ignored. Any thread. */
void sup_set_ready(sup_supervisor *sup, const char *name, bool ready);

/* The readiness gate: true when sup_start_all succeeded, shutdown has not begun and
 * every component reports ready. Updates the readiness gauges. Any thread. */
bool sup_ready(sup_supervisor *sup);

/* Puts the named component into the xDS gate: the replica can serve its proxies (GET
 * /readyz/xds) when every component in that gate is ready, whatever the others say, so
 * a replica that lost its database but holds its snapshots stays in a load balancer's
 * gRPC pool. Before sup_start_all only. Returns 0, SX_ENOTFOUND for an unknown name or
 * SX_EINVAL once started. */
int sup_gate_xds(sup_supervisor *sup, const char *name, sx_err *err) SX_MUSTCHECK;

/* The xDS gate: true when sup_start_all succeeded, shutdown has not begun, at least one
 * component is in the gate and each of them is ready. *components (NULL allowed) gets
 * {"name": ready} for those components; new reference. Any thread. */
bool sup_ready_xds(sup_supervisor *sup, json_t **components);

/* {"name": ready, ...} for every component in registration order; new reference. */
json_t *sup_readiness_json(sup_supervisor *sup);

/* Sets (text not NULL, copied) or clears (text NULL) the notice called key: something an
 * operator should see on /readyz that does not make the replica unready (a certificate
 * that expires soon). At most 8 notices; any thread. */
void sup_set_notice(sup_supervisor *sup, const char *key, const char *text);

/* {"key": "text", ...} of the notices set now, or NULL when there is none; new
 * reference. Any thread. */
json_t *sup_notices_json(sup_supervisor *sup);

/* Sets the function the main thread runs when SIGHUP arrives in sup_wait_for_signal
 * (reload what can be reloaded); NULL: SIGHUP is logged and ignored. Before
 * sup_start_all. */
void sup_on_sighup(sup_supervisor *sup, void (*fn)(void *ctx), void *ctx);

/* Number of components, and the state of the i-th (registration order); for tests. */
size_t sup_count(sup_supervisor *sup);
sup_state sup_component_state(sup_supervisor *sup, size_t i);
const char *sup_state_name(sup_state s);

/* Sleeps up to ms, waking early when shutdown begins. Returns true when the full time
 * passed, false when the caller should give up because the daemon is stopping. */
bool sup_sleep(sup_supervisor *sup, int64_t ms);

/* True once sup_stop_all (or sup_request_shutdown) has begun shutdown. */
bool sup_stopping(sup_supervisor *sup);

/* A component that is one thread: register it with sup_thread_ops and the sup_thread as
 * ctx. start runs run(ctx) on a new thread; stop raises stop_wake's stopping flag and
 * calls wake(ctx) (each when set, to make run return) and joins the thread; ready is
 * ready(ctx). A thread that only sleeps with sup_sleep needs neither: shutdown ends the
 * sleep. Fill in the fields up to what; the rest is the helper's. */
typedef struct sup_thread {
    void *(*run)(void *ctx);  /* the thread's body */
    sx_wake *stop_wake;       /* what run waits on between passes (sup_wait_next); or NULL */
    void (*wake)(void *ctx);  /* NULL: run returns when sup_sleep or stop_wake does */
    bool (*ready)(void *ctx); /* cheap, thread-safe; NULL: always ready */
    void *ctx;                /* passed to the three */
    const char *what;         /* names it in errors: "the fleet health" thread */
    pthread_t thread;         /* valid while started */
    bool started;
} sup_thread;

/* The callbacks of a sup_thread component (ctx: the sup_thread). start fails with
 * SX_EINTERNAL ("could not start <what> thread"). */
extern const sup_ops sup_thread_ops;

/* The wait of a thread between passes: ms or until w is woken. False when the thread
 * should return: w's stop was raised or shutdown has begun. */
bool sup_wait_next(sup_supervisor *sup, sx_wake *w, int64_t ms);

/* Waits on the main thread until SIGINT or SIGTERM arrives; returns the signal number.
 * A SIGHUP meanwhile runs the sup_on_sighup function and goes on waiting. Requires
 * sup_block_signals. */
int sup_wait_for_signal(sup_supervisor *sup);

/* Asks the process to shut down from any thread (a fatal error in a component): marks
 * shutdown as begun and sends SIGTERM to the process, which sup_wait_for_signal sees. */
void sup_request_shutdown(sup_supervisor *sup, const char *why);

/* Stops every running component in reverse registration order, each on its own stopper
 * thread, within the shutdown budget given to sup_create (each component gets what is
 * left of it, but at least 100 ms). A component that overruns is logged and abandoned.
 * Returns 0 when all stopped, SX_ETIMEOUT when any was abandoned; in that case the caller
 * must exit without sup_destroy or freeing the components' contexts. Call once. */
int sup_stop_all(sup_supervisor *sup) SX_MUSTCHECK;

#endif
