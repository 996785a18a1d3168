/*
 * denials.c — refusals recorded in aggregate (see denials.h).
 *
 * A small table keyed by action, status, client address and actor: each entry is one
 * open interval (its start, how many refusals, per reason, the first targets and
 * identities). The first refusal of a key opens its entry; the flush (the owner's
 * periodic task, or the thread denials_start runs, once a second) closes the entries
 * whose interval is over, takes them out under the lock and writes their rows after
 * releasing it.
 */
#include "server/denials.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"

#define MAX_LISTED 8 /* targets and identities kept per row */
#define SOURCE_LEN 64
#define TEXT_MAX   256 /* bytes kept of a target or identity the client sent */

typedef struct entry {
    char *action, *resource_type, *actor, *actor_role; /* actor NULL: unauthenticated */
    int status;
    char source[SOURCE_LEN]; /* "" for unknown and for the overflow entries */
    int64_t start_ms;
    int64_t count;
    json_t *reasons; /* {"reason": count} */
    json_t *targets; /* the first MAX_LISTED distinct targets */
    json_t *clients; /* the first MAX_LISTED distinct identities presented */
    struct entry *next;
} entry;

struct denials {
    pthread_mutex_t mu;
    int64_t interval_ms;
    char *targets_name;
    denials_audit_fn audit;
    void *ctx;
    entry *head; /* open intervals */
    size_t n;
    int64_t pending;
    /* the flushing thread of denials_start */
    bool started, stop;
    pthread_cond_t cv;
    pthread_t thread;
};

denials *denials_create(int64_t interval_ms, const char *targets, denials_audit_fn audit, void *ctx)
{
    denials *d = sx_calloc(1, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    d->interval_ms = interval_ms > 0 ? interval_ms : 60000;
    d->targets_name = sx_strdup(targets ? targets : "targets");
    d->audit = audit;
    d->ctx = ctx;
    return d;
}

static void *flusher_main(void *arg)
{
    denials *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        if (d->stop)
            break;
        pthread_mutex_unlock(&d->mu);
        denials_flush(d, sx_monotonic_ms(), false);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int denials_start(denials *d, sx_err *err)
{
    int rc = pthread_create(&d->thread, NULL, flusher_main, d);
    if (rc != 0)
        return sx_err_set(err, SX_EINTERNAL, "cannot start the refusals' flusher: %s",
                          strerror(rc));
    d->started = true;
    return 0;
}

static void entry_free(entry *e)
{
    sx_free(e->action);
    sx_free(e->resource_type);
    sx_free(e->actor);
    sx_free(e->actor_role);
    json_decref(e->reasons);
    json_decref(e->targets);
    json_decref(e->clients);
    sx_free(e);
}

void denials_destroy(denials *d)
{
    if (d == NULL)
        return;
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
    }
    denials_flush(d, 0, true);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    sx_free(d->targets_name);
    sx_free(d);
}

static bool same(const char *a, const char *b)
{
    return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

static entry *find_locked(denials *d, const char *action, int status, const char *source,
                          const char *actor)
{
    for (entry *e = d->head; e; e = e->next)
        if (e->status == status && strcmp(e->source, source) == 0 &&
            strcmp(e->action, action) == 0 && same(e->actor, actor))
            return e;
    return NULL;
}

/* Appends s to the array a unless it holds it or MAX_LISTED strings already. */
static void add_distinct(json_t *a, const char *s)
{
    if (s == NULL || s[0] == '\0' || json_array_size(a) >= MAX_LISTED)
        return;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (strcmp(json_string_value(v), s) == 0)
            return;
    }
    json_array_append_new(a, json_string(s));
}

/* What a client sent, for the audit row: at most TEXT_MAX bytes, valid UTF-8 (a status
 * report's node id is not checked before its credentials are). Caller frees; NULL for
 * NULL. */
static char *client_text(const char *s)
{
    if (s == NULL)
        return NULL;
    char *cut = sx_strndup(s, TEXT_MAX);
    char *out = sx_utf8_sanitize(cut);
    sx_free(cut);
    return out;
}

bool denials_note(denials *d, const denial *in, int64_t now_ms)
{
    char *target = client_text(in->target), *client = client_text(in->client);
    char *actor = client_text(in->actor), *reason = client_text(in->reason);
    char src[SOURCE_LEN];
    snprintf(src, sizeof(src), "%s", in->source ? in->source : "");
    pthread_mutex_lock(&d->mu);
    entry *e = find_locked(d, in->action, in->status_code, src, actor);
    if (e == NULL && d->n >= DENIALS_MAX_KEYS) {
        /* counted in the row of its action and status without an address or actor */
        src[0] = '\0';
        sx_free(actor);
        actor = NULL;
        e = find_locked(d, in->action, in->status_code, src, NULL);
    }
    bool first = e == NULL;
    if (first) {
        e = sx_calloc(1, sizeof(*e));
        e->action = sx_strdup(in->action);
        e->resource_type = sx_strdup(in->resource_type);
        e->actor = actor;
        actor = NULL;
        e->actor_role = sx_strdup(in->actor_role ? in->actor_role : "");
        e->status = in->status_code;
        memcpy(e->source, src, sizeof(src));
        e->start_ms = now_ms;
        e->reasons = json_object();
        e->targets = json_array();
        e->clients = json_array();
        e->next = d->head;
        d->head = e;
        d->n++;
    }
    e->count++;
    d->pending++;
    const char *r = reason ? reason : "";
    json_object_set_new(e->reasons, r,
                        json_integer(json_integer_value(json_object_get(e->reasons, r)) + 1));
    add_distinct(e->targets, target);
    add_distinct(e->clients, client);
    pthread_mutex_unlock(&d->mu);
    sx_free(target);
    sx_free(client);
    sx_free(actor);
    sx_free(reason);
    return first;
}

static void write_row(denials *d, const entry *e)
{
    json_t *details = json_pack("{s:I,s:O,s:O,s:O,s:I}", "count", (json_int_t)e->count, "reasons",
                                e->reasons, d->targets_name, e->targets, "clients", e->clients,
                                "interval_s", (json_int_t)(d->interval_ms / 1000));
    const char *actor = e->actor ? e->actor : json_string_value(json_array_get(e->clients, 0));
    audit_new row = {
        .actor = actor ? actor : "anonymous",
        .actor_role = e->actor_role,
        .action = e->action,
        .resource_type = e->resource_type,
        .resource_id = json_string_value(json_array_get(e->targets, 0)),
        .result = AUDIT_DENIED,
        .status_code = e->status,
        .source_ip = e->source[0] ? e->source : NULL,
        .details = details,
    };
    sx_err err;
    sx_err_clear(&err);
    if (d->audit(d->ctx, &row, &err) != 0) {
        sx_err_prefix(&err, "could not audit %lld refusals (%s, %d) from %s", (long long)e->count,
                      e->action, e->status, e->source[0] ? e->source : "unknown addresses");
        sx_log_err(SX_LOG_ERROR, "audit", &err);
    }
    json_decref(details);
}

void denials_flush(denials *d, int64_t now_ms, bool all)
{
    entry *done = NULL;
    pthread_mutex_lock(&d->mu);
    for (entry **p = &d->head; *p;) {
        entry *e = *p;
        if (all || now_ms - e->start_ms >= d->interval_ms) {
            *p = e->next;
            e->next = done;
            done = e;
            d->n--;
            d->pending -= e->count;
        } else {
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&d->mu);
    for (entry *e = done, *next; e; e = next) {
        next = e->next;
        if (d->audit)
            write_row(d, e);
        entry_free(e);
    }
}

int64_t denials_pending(denials *d)
{
    pthread_mutex_lock(&d->mu);
    int64_t n = d->pending;
    pthread_mutex_unlock(&d->mu);
    return n;
}
