/*
 * datastore.c — the component "database": the database watcher (see datastore.h).
 *
 * The thread does the waiting so that start() never blocks; it sleeps with sup_sleep, so
 * shutdown wakes it at once.
 */
#include "server/datastore.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "server/base/log.h"
#include "server/base/mem.h"
#include "storage/migrate.h"

#define WATCH_INTERVAL_MS 5000

struct datastore {
    pg_pool *pool;       /* borrowed */
    pg_link *link;       /* borrowed: the back-off's bounds */
    sup_supervisor *sup; /* borrowed */
    sup_thread thread;   /* the watcher */
    atomic_bool ready;   /* the watcher's verdict */
};

/* Whether the database answers with no migration pending; why not in err. */
static bool database_usable(datastore *d, sx_err *err)
{
    int pending = 0;
    int rc = pg_pool_ping(d->pool, err);
    if (rc == 0 && (rc = migrate_status(d->pool, &pending, err)) == 0 && pending > 0) {
        rc = sx_err_set(err, SX_EUNAVAILABLE, "%d migration%s pending", pending,
                        pending == 1 ? " is" : "s are");
        sx_err_hint(err, "Run `sextant migrate`.");
    }
    return rc == 0;
}

static void *watch(void *arg)
{
    datastore *d = arg;
    int backoff = pg_link_backoff_min(d->link);
    char last[SX_ERR_MESSAGE_MAX] = "";
    for (;;) {
        sx_err err;
        sx_err_clear(&err);
        bool ok = database_usable(d, &err);
        bool was = atomic_exchange(&d->ready, ok);
        if (ok && !was) {
            sx_log(SX_LOG_INFO, "storage", "database ready");
            last[0] = '\0';
        } else if (!ok && strcmp(last, err.message) != 0) {
            /* One line per distinct problem, not one per retry. */
            sx_log_err(SX_LOG_WARN, "storage", &err);
            snprintf(last, sizeof(last), "%s", err.message);
        }
        int wait = ok ? WATCH_INTERVAL_MS : backoff;
        backoff = ok ? pg_link_backoff_min(d->link) : pg_link_backoff_next(d->link, backoff);
        if (!sup_sleep(d->sup, wait))
            return NULL;
    }
}

datastore *datastore_create(pg_pool *pool, pg_link *link, sup_supervisor *sup)
{
    datastore *d = sx_calloc(1, sizeof(*d));
    d->pool = pool;
    d->link = link;
    d->sup = sup;
    d->thread = (sup_thread){
        .run = watch, .ready = datastore_ready, .ctx = d, .what = "the database watcher"};
    atomic_init(&d->ready, false);
    return d;
}

void datastore_destroy(datastore *d)
{
    sx_free(d);
}

bool datastore_ready(void *ctx)
{
    datastore *d = ctx;
    return atomic_load(&d->ready);
}

sup_thread *datastore_component(datastore *d)
{
    return &d->thread;
}
