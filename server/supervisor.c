/*
 * supervisor.c — component lifecycle, the readiness gate and signal-driven shutdown.
 *
 * The supervisor owns a fixed array of components (fixed once sup_start_all runs) and
 * one mutex that guards every component's state and readiness flag plus the "stopping"
 * flag. Readiness probes are called without the mutex held, so a probe may take its own
 * locks or call back into the supervisor. Stopping runs each stop() on a detached
 * stopper thread so that the main thread can give up on a component that hangs; the
 * stopper and the supervisor share a small reference-counted job, so an abandoned
 * stopper never touches freed supervisor memory.
 */
#include "server/supervisor.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/locked.h"

#define MIN_STOP_GRACE_MS 100

typedef struct sup_component {
    char *name;
    sup_ops ops;
    void *ctx;
    sup_state state; /* changed only by change_state(), under sup->mu */
    bool ready_flag; /* set by sup_set_ready, under sup->mu */
    bool xds_gate;   /* part of the xDS gate (sup_gate_xds); fixed once sealed */
} sup_component;

#define SUP_MAX_NOTICES 8

struct sup_supervisor {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* broadcast when shutdown begins, for sup_sleep */
    sup_component *comps;
    size_t ncomps;
    bool sealed;   /* sup_start_all has begun: the component array is fixed from here on */
    bool started;  /* sup_start_all succeeded */
    bool stopping; /* shutdown has begun */
    bool last_gate;
    int64_t shutdown_timeout_ms;
    sx_metric *m_ready;           /* sextant_ready */
    sx_metric *m_component_ready; /* sextant_component_ready{component} */
    struct {
        char *key, *text;
    } notices[SUP_MAX_NOTICES]; /* sup_set_notice; key NULL when the slot is free */
    void (*on_sighup)(void *ctx);
    void *on_sighup_ctx;
};

/* One stop() call in flight, shared by the supervisor and its stopper thread. */
typedef struct stop_job {
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    bool done;
    int refs; /* 2 while both sides hold it; the last to let go frees it */
    void (*stop)(void *ctx);
    void *ctx;
} stop_job;

static const char *state_names[] = {"registered", "starting", "running",  "failed",
                                    "stopping",   "stopped",  "abandoned"};

const char *sup_state_name(sup_state s)
{
    return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

/* The one place a component changes state. Call with sup->mu held. */
static void change_state(sup_supervisor *sup, sup_component *c, sup_state to)
{
    (void)sup;
    sx_log_level lvl = to == SUP_FAILED || to == SUP_ABANDONED ? SX_LOG_ERROR : SX_LOG_DEBUG;
    sx_log_fields(lvl, "supervisor",
                  json_pack("{s:s,s:s,s:s}", "component_name", c->name, "from",
                            sup_state_name(c->state), "to", sup_state_name(to)),
                  "component %s: %s -> %s", c->name, sup_state_name(c->state), sup_state_name(to));
    c->state = to;
    if (to != SUP_RUNNING)
        c->ready_flag = false;
}

/* The signals the main thread waits for and every other thread blocks. */
static void daemon_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

int sup_block_signals(sx_err *err)
{
    sigset_t set;
    daemon_signals(&set);
    int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not block SIGINT, SIGTERM and SIGHUP: %s",
                          strerror(rc));
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, &sa, NULL) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not ignore SIGPIPE: %s", strerror(errno));
    return 0;
}

sup_supervisor *sup_create(sx_metrics *metrics, int64_t shutdown_timeout_ms)
{
    sup_supervisor *sup = sx_calloc(1, sizeof(*sup));
    pthread_mutex_init(&sup->mu, NULL);
    sx_cond_init_monotonic(&sup->wake);
    sup->shutdown_timeout_ms = shutdown_timeout_ms > 0 ? shutdown_timeout_ms : 1;
    if (metrics) {
        sup->m_ready =
            sx_metrics_gauge(metrics, "sextant_ready",
                             "1 when every component is ready and /readyz answers 200", NULL);
        sup->m_component_ready = sx_metrics_gauge(
            metrics, "sextant_component_ready", "1 when the component reports ready", "component");
        sx_metric_set(sup->m_ready, NULL, 0);
    }
    return sup;
}

void sup_destroy(sup_supervisor *sup)
{
    if (sup == NULL)
        return;
    for (size_t i = 0; i < SUP_MAX_NOTICES; i++) {
        sx_free(sup->notices[i].key);
        sx_free(sup->notices[i].text);
    }
    for (size_t i = 0; i < sup->ncomps; i++)
        sx_free(sup->comps[i].name);
    sx_free(sup->comps);
    pthread_cond_destroy(&sup->wake);
    pthread_mutex_destroy(&sup->mu);
    sx_free(sup);
}

int sup_register(sup_supervisor *sup, const char *name, const sup_ops *ops, void *ctx, sx_err *err)
{
    pthread_mutex_lock(&sup->mu);
    int rc = 0;
    if (sup->sealed || sup->stopping) {
        rc = sx_err_set(err, SX_EINVAL, "cannot register component %s after start-up", name);
        goto out;
    }
    for (size_t i = 0; i < sup->ncomps; i++) {
        if (strcmp(sup->comps[i].name, name) == 0) {
            rc = sx_err_set(err, SX_ECONFLICT, "component %s is already registered", name);
            goto out;
        }
    }
    sup->comps = sx_realloc(sup->comps, (sup->ncomps + 1) * sizeof(sup_component));
    sup_component *c = &sup->comps[sup->ncomps++];
    memset(c, 0, sizeof(*c));
    c->name = sx_strdup(name);
    if (ops)
        c->ops = *ops;
    c->ctx = ctx;
    c->state = SUP_REGISTERED;
    if (sup->m_component_ready) {
        const char *lv[] = {c->name};
        sx_metric_set(sup->m_component_ready, lv, 0);
    }
out:
    pthread_mutex_unlock(&sup->mu);
    return rc;
}

int sup_start_all(sup_supervisor *sup, sx_err *err)
{
    /* Readiness probes on other threads read the array without the mutex from now on. */
    pthread_mutex_lock(&sup->mu);
    sup->sealed = true;
    pthread_mutex_unlock(&sup->mu);
    for (size_t i = 0; i < sup->ncomps; i++) {
        sup_component *c = &sup->comps[i];
        pthread_mutex_lock(&sup->mu);
        bool stopping = sup->stopping;
        if (!stopping)
            change_state(sup, c, SUP_STARTING);
        pthread_mutex_unlock(&sup->mu);
        if (stopping)
            return sx_err_set(err, SX_EUNAVAILABLE, "shutdown began during start-up");

        sx_err local;
        sx_err_clear(&local);
        int rc = c->ops.start ? c->ops.start(c->ctx, &local) : 0;

        pthread_mutex_lock(&sup->mu);
        change_state(sup, c, rc == 0 ? SUP_RUNNING : SUP_FAILED);
        pthread_mutex_unlock(&sup->mu);
        if (rc != 0) {
            if (local.code == SX_OK)
                sx_err_set(&local, rc, "start failed");
            sx_err_prefix(&local, "could not start %s", c->name);
            if (err)
                *err = local;
            return rc;
        }
    }
    pthread_mutex_lock(&sup->mu);
    sup->started = true;
    pthread_mutex_unlock(&sup->mu);
    return 0;
}

void sup_set_ready(sup_supervisor *sup, const char *name, bool ready)
{
    pthread_mutex_lock(&sup->mu);
    sup_component *c = NULL;
    for (size_t i = 0; i < sup->ncomps && c == NULL; i++)
        if (strcmp(sup->comps[i].name, name) == 0)
            c = &sup->comps[i];
    if (c == NULL) {
        pthread_mutex_unlock(&sup->mu);
        SX_ERROR("supervisor", "sup_set_ready for unknown component %s", name);
        return;
    }
    bool changed = c->ready_flag != ready;
    /* Only a running component can be ready; a late report from a stopping one is moot. */
    if (c->state == SUP_RUNNING || c->state == SUP_STARTING)
        c->ready_flag = ready;
    else
        changed = false;
    pthread_mutex_unlock(&sup->mu);
    if (changed)
        sx_log_fields(ready ? SX_LOG_INFO : SX_LOG_WARN, "supervisor",
                      json_pack("{s:s,s:b}", "component_name", name, "ready", ready),
                      "component %s is %s", name, ready ? "ready" : "not ready");
}

/* Evaluates every component's readiness into out[] (sup->ncomps entries). Returns the
 * gate. Probes run without the mutex. */
static bool evaluate(sup_supervisor *sup, bool *out)
{
    pthread_mutex_lock(&sup->mu);
    size_t n = sup->ncomps;
    bool gate = sup->started && !sup->stopping;
    sup_state *states = sx_malloc((n ? n : 1) * sizeof(sup_state));
    for (size_t i = 0; i < n; i++) {
        states[i] = sup->comps[i].state;
        out[i] = sup->comps[i].ready_flag;
    }
    pthread_mutex_unlock(&sup->mu);

    for (size_t i = 0; i < n; i++) {
        sup_component *c = &sup->comps[i]; /* the array is fixed once started */
        if (states[i] != SUP_RUNNING)
            out[i] = false;
        else if (c->ops.ready)
            out[i] = c->ops.ready(c->ctx);
        if (!out[i])
            gate = false;
        if (sup->m_component_ready) {
            const char *lv[] = {c->name};
            sx_metric_set(sup->m_component_ready, lv, out[i] ? 1 : 0);
        }
    }
    sx_free(states);
    return gate;
}

bool sup_ready(sup_supervisor *sup)
{
    bool *r = sx_malloc((sup->ncomps ? sup->ncomps : 1) * sizeof(bool));
    bool gate = evaluate(sup, r);
    sx_free(r);
    if (sup->m_ready)
        sx_metric_set(sup->m_ready, NULL, gate ? 1 : 0);
    pthread_mutex_lock(&sup->mu);
    bool changed = gate != sup->last_gate;
    sup->last_gate = gate;
    pthread_mutex_unlock(&sup->mu);
    if (changed)
        SX_INFO("supervisor", "readiness gate is %s", gate ? "open" : "closed");
    return gate;
}

int sup_gate_xds(sup_supervisor *sup, const char *name, sx_err *err)
{
    pthread_mutex_lock(&sup->mu);
    int rc = SX_EINVAL;
    if (sup->sealed) {
        sx_err_set(err, rc, "the xDS gate is fixed once the components start");
    } else {
        rc = SX_ENOTFOUND;
        for (size_t i = 0; i < sup->ncomps && rc != 0; i++)
            if (strcmp(sup->comps[i].name, name) == 0) {
                sup->comps[i].xds_gate = true;
                rc = 0;
            }
        if (rc != 0)
            sx_err_set(err, rc, "no component %s for the xDS gate", name);
    }
    pthread_mutex_unlock(&sup->mu);
    return rc;
}

bool sup_ready_xds(sup_supervisor *sup, json_t **components)
{
    bool *r = sx_malloc((sup->ncomps ? sup->ncomps : 1) * sizeof(bool));
    evaluate(sup, r);
    pthread_mutex_lock(&sup->mu);
    bool gate = sup->started && !sup->stopping;
    pthread_mutex_unlock(&sup->mu);
    json_t *o = components ? json_object() : NULL;
    bool any = false;
    for (size_t i = 0; i < sup->ncomps; i++) {
        if (!sup->comps[i].xds_gate) /* fixed since sealed: read without the mutex */
            continue;
        any = true;
        if (!r[i])
            gate = false;
        if (o)
            json_object_set_new(o, sup->comps[i].name, json_boolean(r[i]));
    }
    sx_free(r);
    if (components)
        *components = o;
    return gate && any;
}

json_t *sup_readiness_json(sup_supervisor *sup)
{
    bool *r = sx_malloc((sup->ncomps ? sup->ncomps : 1) * sizeof(bool));
    evaluate(sup, r);
    json_t *o = json_object();
    for (size_t i = 0; i < sup->ncomps; i++)
        json_object_set_new(o, sup->comps[i].name, json_boolean(r[i]));
    sx_free(r);
    return o;
}

size_t sup_count(sup_supervisor *sup)
{
    return sup->ncomps;
}

sup_state sup_component_state(sup_supervisor *sup, size_t i)
{
    pthread_mutex_lock(&sup->mu);
    sup_state s = i < sup->ncomps ? sup->comps[i].state : SUP_FAILED;
    pthread_mutex_unlock(&sup->mu);
    return s;
}

bool sup_sleep(sup_supervisor *sup, int64_t ms)
{
    struct timespec dl = sx_deadline_in(ms > 0 ? ms : 0);
    pthread_mutex_lock(&sup->mu);
    int rc = 0;
    while (!sup->stopping && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&sup->wake, &sup->mu, &dl);
    bool full = !sup->stopping;
    pthread_mutex_unlock(&sup->mu);
    return full;
}

bool sup_stopping(sup_supervisor *sup)
{
    return sx_locked_bool(&sup->mu, &sup->stopping);
}

bool sup_wait_next(sup_supervisor *sup, sx_wake *w, int64_t ms)
{
    struct timespec until = sx_deadline_in(ms);
    return sx_wake_wait(w, &until, NULL) && !sup_stopping(sup);
}

/* Marks shutdown as begun and wakes sleepers; returns whether it already had begun. */
static bool begin_shutdown(sup_supervisor *sup)
{
    pthread_mutex_lock(&sup->mu);
    bool was = sup->stopping;
    sup->stopping = true;
    pthread_cond_broadcast(&sup->wake);
    pthread_mutex_unlock(&sup->mu);
    if (sup->m_ready)
        sx_metric_set(sup->m_ready, NULL, 0);
    return was;
}

int sup_wait_for_signal(sup_supervisor *sup)
{
    sigset_t set;
    daemon_signals(&set);
    for (;;) {
        int sig = 0;
        int rc = sigwait(&set, &sig);
        if (rc == 0 && sig == SIGHUP) {
            SX_INFO("supervisor", "received SIGHUP");
            if (sup->on_sighup)
                sup->on_sighup(sup->on_sighup_ctx);
            continue;
        }
        if (rc == 0)
            return sig;
        if (rc != EINTR) {
            SX_ERROR("supervisor", "sigwait failed: %s", strerror(rc));
            return SIGTERM;
        }
    }
}

void sup_request_shutdown(sup_supervisor *sup, const char *why)
{
    SX_ERROR("supervisor", "shutdown requested: %s", why ? why : "no reason given");
    begin_shutdown(sup);
    kill(getpid(), SIGTERM);
}

static void job_release(stop_job *j)
{
    pthread_mutex_lock(&j->mu);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) {
        pthread_cond_destroy(&j->done_cv);
        pthread_mutex_destroy(&j->mu);
        sx_free(j);
    }
}

static void *stopper_main(void *arg)
{
    stop_job *j = arg;
    j->stop(j->ctx);
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_signal(&j->done_cv);
    pthread_mutex_unlock(&j->mu);
    job_release(j);
    return NULL;
}

/* Runs c's stop() on a stopper thread and waits until deadline (absolute, ms on the
 * monotonic clock). Returns true when it finished in time. */
static bool stop_one(sup_component *c, int64_t deadline)
{
    if (c->ops.stop == NULL)
        return true;
    stop_job *j = sx_calloc(1, sizeof(*j));
    pthread_mutex_init(&j->mu, NULL);
    sx_cond_init_monotonic(&j->done_cv);
    j->refs = 2;
    j->stop = c->ops.stop;
    j->ctx = c->ctx;

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = pthread_create(&t, &attr, stopper_main, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        SX_WARN("supervisor", "could not start a stopper thread for %s (%s); stopping inline",
                c->name, strerror(rc));
        j->refs = 1;
        j->stop(j->ctx);
        job_release(j);
        return true;
    }

    int64_t wait = deadline - sx_monotonic_ms();
    if (wait < MIN_STOP_GRACE_MS)
        wait = MIN_STOP_GRACE_MS;
    struct timespec dl = sx_deadline_in(wait);
    pthread_mutex_lock(&j->mu);
    int w = 0;
    while (!j->done && w != ETIMEDOUT)
        w = pthread_cond_timedwait(&j->done_cv, &j->mu, &dl);
    bool done = j->done;
    pthread_mutex_unlock(&j->mu);
    job_release(j);
    return done;
}

int sup_stop_all(sup_supervisor *sup)
{
    begin_shutdown(sup);
    int64_t start = sx_monotonic_ms();
    int64_t deadline = start + sup->shutdown_timeout_ms;
    int rc = 0;
    for (size_t k = sup->ncomps; k-- > 0;) {
        sup_component *c = &sup->comps[k];
        pthread_mutex_lock(&sup->mu);
        bool running = c->state == SUP_RUNNING;
        if (running)
            change_state(sup, c, SUP_STOPPING);
        pthread_mutex_unlock(&sup->mu);
        if (!running)
            continue;
        int64_t t0 = sx_monotonic_ms();
        bool done = stop_one(c, deadline);
        pthread_mutex_lock(&sup->mu);
        change_state(sup, c, done ? SUP_STOPPED : SUP_ABANDONED);
        pthread_mutex_unlock(&sup->mu);
        if (done) {
            sx_log_fields(SX_LOG_INFO, "supervisor",
                          json_pack("{s:s,s:I}", "component_name", c->name, "duration_ms",
                                    (json_int_t)(sx_monotonic_ms() - t0)),
                          "stopped %s", c->name);
        } else {
            sx_log_fields(SX_LOG_ERROR, "supervisor",
                          json_pack("{s:s,s:I}", "component_name", c->name, "timeout_ms",
                                    (json_int_t)sup->shutdown_timeout_ms),
                          "component %s did not stop within the shutdown timeout; abandoned",
                          c->name);
            rc = SX_ETIMEOUT;
        }
    }
    return rc;
}

static int thread_start(void *ctx, sx_err *err)
{
    sup_thread *t = ctx;
    if (pthread_create(&t->thread, NULL, t->run, t->ctx) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not start %s thread", t->what);
    t->started = true;
    return 0;
}

static void thread_stop(void *ctx)
{
    sup_thread *t = ctx;
    if (t->stop_wake)
        sx_wake_raise(t->stop_wake, true);
    if (t->wake)
        t->wake(t->ctx);
    if (t->started)
        pthread_join(t->thread, NULL);
    t->started = false;
}

static bool thread_ready(void *ctx)
{
    sup_thread *t = ctx;
    return t->ready == NULL || t->ready(t->ctx);
}

const sup_ops sup_thread_ops = {thread_start, thread_stop, thread_ready};

void sup_set_notice(sup_supervisor *sup, const char *key, const char *text)
{
    pthread_mutex_lock(&sup->mu);
    size_t slot = SUP_MAX_NOTICES;
    for (size_t i = 0; i < SUP_MAX_NOTICES; i++) {
        if (sup->notices[i].key && strcmp(sup->notices[i].key, key) == 0) {
            slot = i;
            break;
        }
        if (sup->notices[i].key == NULL && slot == SUP_MAX_NOTICES)
            slot = i;
    }
    if (slot < SUP_MAX_NOTICES) {
        sx_free(sup->notices[slot].text);
        sup->notices[slot].text = text ? sx_strdup(text) : NULL;
        if (text == NULL) {
            sx_free(sup->notices[slot].key);
            sup->notices[slot].key = NULL;
        } else if (sup->notices[slot].key == NULL) {
            sup->notices[slot].key = sx_strdup(key);
        }
    }
    pthread_mutex_unlock(&sup->mu);
}

json_t *sup_notices_json(sup_supervisor *sup)
{
    json_t *o = NULL;
    pthread_mutex_lock(&sup->mu);
    for (size_t i = 0; i < SUP_MAX_NOTICES; i++) {
        if (sup->notices[i].key == NULL)
            continue;
        if (o == NULL)
            o = json_object();
        json_object_set_new(o, sup->notices[i].key, json_string(sup->notices[i].text));
    }
    pthread_mutex_unlock(&sup->mu);
    return o;
}

void sup_on_sighup(sup_supervisor *sup, void (*fn)(void *ctx), void *ctx)
{
    sup->on_sighup = fn;
    sup->on_sighup_ctx = ctx;
}
