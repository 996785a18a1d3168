/*
 * pg_listener.c — LISTEN/NOTIFY on a dedicated PostgreSQL connection, dispatched to
 * subscribers by one thread that reconnects and asks them to resynchronise.
 *
 * Design: the thread owns the connection outright (only it touches the PGconn), so
 * libpq needs no locking; the mutex guards the subscriber list, the flags other
 * threads read, and the generation counters subscribe uses to wait for its LISTEN.
 * Everything the thread waits on — connecting, running LISTEN, idling for
 * notifications, backing off — is a poll() on the connection's socket plus the read
 * end of a wake-up pipe, so stop (and a new subscription) is noticed at once; this is
 * why connecting uses PQconnectStartParams/PQconnectPoll rather than the blocking
 * PQconnectdbParams, and statements use PQsendQuery rather than PQexec.
 *
 * "Connected" means more than an open socket: it is set only once every subscribed
 * channel is being listened to, which is what readiness and subscribe's guarantee
 * need. After a lost connection the order is: reconnect, LISTEN every channel, mark
 * connected, then call every on_resync (see pg_listener.h for why, and for the
 * choice not to resync after the first connection).
 */
#include "storage/pg_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/locked.h"

#define COMPONENT       "pg_listener"
#define CHANNEL_MAX_LEN 63 /* NAMEDATALEN - 1: longer identifiers are truncated */

typedef struct sub {
    char *channel; /* owned */
    pg_listener_notify_fn on_notify;
    pg_listener_resync_fn on_resync; /* NULL allowed */
    void *ctx;
} sub;

/* Outcome of a wait or of a step that waits. */
enum { STEP_OK = 0, STEP_FAILED = -1, STEP_STOPPED = -2 };

struct pg_listener {
    pthread_mutex_t mu;      /* guards the fields marked (mu) */
    pthread_cond_t cv;       /* signalled when connected or ack_gen change (mu) */
    pthread_mutex_t stop_mu; /* serialises pg_listener_stop */
    char *url;               /* owned connection string; never logged */
    char *app;               /* owned application_name */
    int connect_timeout_ms;  /* per host of a connection attempt */
    int nhosts;              /* hosts the URL names (a multi-host URL is tried in turn) */
    pg_link *link;           /* shared picture of the server; owned when own_link */
    bool own_link;
    int wake[2]; /* wake-up pipe: [0] polled by the thread, [1] written to */

    sub *subs;              /* (mu) subscriptions in order; grows, never shrinks */
    size_t nsubs, cap_subs; /* (mu) */
    unsigned long sub_gen;  /* (mu) bumped by every subscribe */
    unsigned long ack_gen;  /* (mu) the sub_gen whose channels are all listened to */
    bool started;           /* (mu) start succeeded once */
    bool stopping;          /* (mu) the thread must exit */
    bool joined;            /* (stop_mu) the thread has been joined */
    bool connected;         /* (mu) connection up and every channel listened to */
    pthread_t thread;       /* valid when started */

    /* Owned by the thread alone. */
    PGconn *conn;    /* NULL while disconnected */
    char **listened; /* channels LISTENed on conn (owned strings) */
    size_t nlistened, cap_listened;
    sub *scratch; /* copy of the subscribers being called back */
    size_t cap_scratch;
    char last_notice[256]; /* last server message, e.g. why the backend was killed */

    sx_metric *m_connected;  /* sextant_db_listener_connected */
    sx_metric *m_reconnects; /* sextant_db_listener_reconnects_total */
    sx_metric *m_notifies;   /* sextant_db_notifications_total{channel} */
};

/* libpq's message in one line, every line of it kept (one per host of a multi-host
 * URL). */
static void first_line(char *dst, size_t n, const char *src)
{
    pg_link_error_text(dst, n, src);
}

static bool is_stopping(pg_listener *l)
{
    return sx_locked_bool(&l->mu, &l->stopping);
}

static void wake(pg_listener *l)
{
    char b = 1;
    /* A full pipe already guarantees a wake-up, so EAGAIN is fine. */
    while (write(l->wake[1], &b, 1) < 0 && errno == EINTR) {
    }
}

static void drain(pg_listener *l)
{
    char buf[64];
    while (read(l->wake[0], buf, sizeof(buf)) > 0) {
    }
}

/*
 * Waits until fd has one of events, the pipe is written to, or timeout_ms passes
 * (-1: forever; fd < 0: only the pipe). Returns STEP_STOPPED when stop was asked,
 * STEP_OK when fd is ready (also on error or hang-up, for libpq to report), and
 * STEP_FAILED on timeout. A subscribe wake-up is drained and *woken set, if given.
 */
static int wait_io(pg_listener *l, int fd, short events, long long timeout_ms, bool *woken)
{
    long long deadline = timeout_ms < 0 ? -1 : sx_monotonic_ms() + timeout_ms;
    for (;;) {
        struct pollfd p[2] = {{l->wake[0], POLLIN, 0}, {fd, events, 0}};
        int t = -1;
        if (deadline >= 0) {
            long long left = deadline - sx_monotonic_ms();
            t = left < 0 ? 0 : (int)left;
        }
        int n = poll(p, fd >= 0 ? 2 : 1, t);
        if (n < 0 && errno == EINTR)
            continue;
        if (p[0].revents) {
            drain(l);
            if (is_stopping(l))
                return STEP_STOPPED;
            if (woken)
                *woken = true;
        }
        if (fd >= 0 && p[1].revents)
            return STEP_OK;
        if (n < 0 && fd >= 0)
            return STEP_OK; /* let libpq run into the error and report it */
        if (n <= 0 || (deadline >= 0 && sx_monotonic_ms() >= deadline))
            return STEP_FAILED;
        if (woken && *woken)
            return STEP_FAILED; /* let the caller look at the new subscription */
    }
}

/* Keeps the server's messages (the FATAL of a terminated backend, warnings) out of
 * stderr's raw text and remembers the last one to say why a connection dropped. */
static void on_notice(void *arg, const PGresult *res)
{
    pg_listener *l = arg;
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    if (msg == NULL)
        return;
    snprintf(l->last_notice, sizeof(l->last_notice), "%s", msg);
    /* A FATAL is the server saying why it closes the connection; the drop itself is
     * logged with it, so it is not logged twice. */
    bool loud = sev && strcmp(sev, "WARNING") == 0;
    sx_log(loud ? SX_LOG_WARN : SX_LOG_DEBUG, COMPONENT, "postgresql %s: %s", sev ? sev : "notice",
           msg);
}

/* Opens the connection without blocking past a stop request. */
static int connect_conn(pg_listener *l, char *why, size_t whylen)
{
    /* keepalives first so the URL may override them; the URL (dbname, expanded)
     * before application_name so ours wins and the test can find us. */
    const char *keys[] = {
        "keepalives", "keepalives_idle",  "keepalives_interval", "keepalives_count",
        "dbname",     "application_name", "client_encoding",     NULL};
    const char *vals[] = {"1", "30", "10", "3", l->url, l->app, "UTF8", NULL};
    PGconn *c = PQconnectStartParams(keys, vals, 1);
    if (c == NULL) {
        snprintf(why, whylen, "out of memory");
        return STEP_FAILED;
    }
    PostgresPollingStatusType st =
        PQstatus(c) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
    /* libpq tries a multi-host URL's hosts in turn, each with connect_timeout (as the
     * pool's blocking connect does): the whole attempt gets it once per host. */
    long long deadline = sx_monotonic_ms() + (long long)l->connect_timeout_ms * l->nhosts;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED) {
            first_line(why, whylen, PQerrorMessage(c));
            PQfinish(c);
            return STEP_FAILED;
        }
        if (PQsocket(c) < 0) {
            st = PQconnectPoll(c);
            continue;
        }
        short ev = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
        bool woken = false;
        int rc = wait_io(l, PQsocket(c), ev, deadline - sx_monotonic_ms(), &woken);
        if (rc == STEP_STOPPED) {
            PQfinish(c);
            return STEP_STOPPED;
        }
        if (rc == STEP_FAILED && woken && sx_monotonic_ms() < deadline)
            continue; /* a subscription arrived; it is picked up once connected */
        if (rc == STEP_FAILED) {
            snprintf(why, whylen, "timeout expired after %lld ms",
                     (long long)l->connect_timeout_ms * l->nhosts);
            PQfinish(c);
            return STEP_FAILED;
        }
        st = PQconnectPoll(c);
    }
    PQsetNoticeReceiver(c, on_notice, l);
    l->conn = c;
    pg_link_up(l->link, "listener", c);
    return STEP_OK;
}

/* Runs one utility statement on the thread's connection. */
static int run_cmd(pg_listener *l, const char *sql, char *why, size_t whylen)
{
    if (!PQsendQuery(l->conn, sql)) {
        first_line(why, whylen, PQerrorMessage(l->conn));
        return STEP_FAILED;
    }
    while (PQisBusy(l->conn)) {
        int rc = wait_io(l, PQsocket(l->conn), POLLIN, -1, NULL);
        if (rc == STEP_STOPPED)
            return rc;
        if (!PQconsumeInput(l->conn)) {
            first_line(why, whylen, PQerrorMessage(l->conn));
            return STEP_FAILED;
        }
    }
    int rc = STEP_OK;
    PGresult *r;
    while ((r = PQgetResult(l->conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == STEP_OK) {
            const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
            first_line(why, whylen, m ? m : PQerrorMessage(l->conn));
            rc = STEP_FAILED;
        }
        PQclear(r);
    }
    return rc;
}

static bool listened(pg_listener *l, const char *channel)
{
    for (size_t i = 0; i < l->nlistened; i++)
        if (strcmp(l->listened[i], channel) == 0)
            return true;
    return false;
}

static void forget_listened(pg_listener *l)
{
    for (size_t i = 0; i < l->nlistened; i++)
        sx_free(l->listened[i]);
    l->nlistened = 0;
}

static int listen_one(pg_listener *l, const char *channel, char *why, size_t whylen)
{
    char *quoted = PQescapeIdentifier(l->conn, channel, strlen(channel));
    if (quoted == NULL) {
        first_line(why, whylen, PQerrorMessage(l->conn));
        return STEP_FAILED;
    }
    char *sql = sx_asprintf("LISTEN %s", quoted);
    PQfreemem(quoted);
    int rc = run_cmd(l, sql, why, whylen);
    sx_free(sql);
    if (rc == STEP_OK) {
        if (l->nlistened == l->cap_listened) {
            l->cap_listened = l->cap_listened ? l->cap_listened * 2 : 8;
            l->listened = sx_realloc(l->listened, l->cap_listened * sizeof(*l->listened));
        }
        l->listened[l->nlistened++] = sx_strdup(channel);
    }
    return rc;
}

/*
 * Issues LISTEN for every subscribed channel not yet listened to on this connection,
 * until no subscription is pending, then marks the listener connected and
 * acknowledges the subscriptions.
 */
static int sync_listens(pg_listener *l, char *why, size_t whylen)
{
    for (;;) {
        pthread_mutex_lock(&l->mu);
        unsigned long gen = l->sub_gen;
        char *todo = NULL;
        for (size_t i = 0; i < l->nsubs && todo == NULL; i++)
            if (!listened(l, l->subs[i].channel))
                todo = sx_strdup(l->subs[i].channel);
        if (todo == NULL) {
            l->ack_gen = gen;
            l->connected = true;
            if (l->m_connected) /* under mu, so whoever sees connected sees the gauge */
                sx_metric_set(l->m_connected, NULL, 1);
            pthread_cond_broadcast(&l->cv);
            pthread_mutex_unlock(&l->mu);
            return STEP_OK;
        }
        pthread_mutex_unlock(&l->mu);
        int rc = listen_one(l, todo, why, whylen);
        sx_free(todo);
        if (rc != STEP_OK)
            return rc;
    }
}

/* Copies the subscribers matching channel (NULL: those with on_resync) into scratch,
 * so the callbacks run without the mutex; returns how many. */
static size_t collect(pg_listener *l, const char *channel)
{
    pthread_mutex_lock(&l->mu);
    if (l->cap_scratch < l->nsubs) {
        l->cap_scratch = l->nsubs;
        l->scratch = sx_realloc(l->scratch, l->cap_scratch * sizeof(*l->scratch));
    }
    size_t n = 0;
    for (size_t i = 0; i < l->nsubs; i++) {
        const sub *s = &l->subs[i];
        if (channel ? strcmp(s->channel, channel) == 0 : s->on_resync != NULL)
            l->scratch[n++] = *s; /* channel strings live until destroy */
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

static void dispatch(pg_listener *l)
{
    PGnotify *n;
    while ((n = PQnotifies(l->conn)) != NULL) {
        if (l->m_notifies) {
            const char *labels[] = {n->relname};
            sx_metric_inc(l->m_notifies, labels);
        }
        size_t k = collect(l, n->relname);
        for (size_t i = 0; i < k; i++)
            l->scratch[i].on_notify(l->scratch[i].ctx, n->relname, n->extra ? n->extra : "");
        PQfreemem(n);
    }
}

static void resync_all(pg_listener *l)
{
    size_t k = collect(l, NULL);
    for (size_t i = 0; i < k; i++)
        l->scratch[i].on_resync(l->scratch[i].ctx);
}

static void drop_conn(pg_listener *l)
{
    if (l->conn) {
        PQfinish(l->conn);
        l->conn = NULL;
    }
    forget_listened(l);
    pthread_mutex_lock(&l->mu);
    l->connected = false;
    if (l->m_connected)
        sx_metric_set(l->m_connected, NULL, 0);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Serves one open connection until it fails (STEP_FAILED, why set) or stop. */
static int serve(pg_listener *l, char *why, size_t whylen)
{
    for (;;) {
        dispatch(l); /* running LISTEN may have queued notifications already */
        bool woken = false;
        int rc = wait_io(l, PQsocket(l->conn), POLLIN, -1, &woken);
        if (rc == STEP_STOPPED)
            return rc;
        if (woken) {
            rc = sync_listens(l, why, whylen);
            if (rc != STEP_OK)
                return rc;
        }
        if (!PQconsumeInput(l->conn) || PQstatus(l->conn) != CONNECTION_OK) {
            char line[400];
            first_line(line, sizeof(line), PQerrorMessage(l->conn));
            if (l->last_notice[0])
                snprintf(why, whylen, "%s (%s)", line, l->last_notice);
            else
                snprintf(why, whylen, "%s", line[0] ? line : "connection lost");
            return STEP_FAILED;
        }
    }
}

static void *thread_main(void *arg)
{
    pg_listener *l = arg;
    bool ever_connected = false;
    bool outage_logged = false;
    int backoff_ms = 0;
    long long retry_at = 0;
    unsigned long gen = pg_link_generation(l->link);
    char why[512];
    for (;;) {
        long long wait = retry_at - sx_monotonic_ms();
        if (wait > 0) {
            bool woken = false;
            if (wait_io(l, -1, 0, wait, &woken) == STEP_STOPPED)
                break;
            /* Another connection reached the server: the back-off is over. */
            unsigned long now_gen = pg_link_generation(l->link);
            if (now_gen != gen) {
                gen = now_gen;
                retry_at = 0;
                backoff_ms = 0;
            }
            continue;
        }
        l->last_notice[0] = '\0';
        int rc = connect_conn(l, why, sizeof(why));
        if (rc == STEP_OK)
            rc = sync_listens(l, why, sizeof(why));
        if (rc == STEP_STOPPED)
            break;
        if (rc == STEP_FAILED) {
            drop_conn(l);
            pg_link_down(l->link, "listener");
            gen = pg_link_generation(l->link);
            backoff_ms = pg_link_backoff_next(l->link, backoff_ms);
            retry_at = sx_monotonic_ms() + backoff_ms;
            if (!outage_logged) {
                outage_logged = true;
                SX_WARN(COMPONENT, "database listener could not connect to postgresql: %s", why);
            } else {
                SX_DEBUG(COMPONENT, "database listener still disconnected: %s", why);
            }
            continue;
        }
        backoff_ms = 0;
        outage_logged = false;
        if (ever_connected) {
            if (l->m_reconnects)
                sx_metric_inc(l->m_reconnects, NULL);
            SX_INFO(COMPONENT, "database listener reconnected, resynchronising subscribers");
            resync_all(l);
        } else {
            SX_INFO(COMPONENT, "database listener connected");
        }
        ever_connected = true;

        rc = serve(l, why, sizeof(why));
        if (rc == STEP_STOPPED)
            break;
        drop_conn(l);
        pg_link_down(l->link, "listener");
        gen = pg_link_generation(l->link);
        outage_logged = true;
        SX_WARN(COMPONENT, "database listener lost its connection: %s", why);
        backoff_ms = pg_link_backoff_min(l->link);
        retry_at = sx_monotonic_ms() + backoff_ms;
    }
    drop_conn(l);
    return NULL;
}

/* The link's watcher: a connection reached the server; a back-off in progress ends
 * (thread_main looks at the generation when woken). */
static void on_link_up(void *ctx)
{
    wake(ctx);
}

/* How many hosts url names (its "host" or "hostaddr" list); 1 when it cannot tell. */
static int count_hosts(const char *url)
{
    PQconninfoOption *opts = PQconninfoParse(url, NULL);
    int n = 1;
    for (PQconninfoOption *o = opts; o && o->keyword; o++) {
        if ((strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0) && o->val) {
            int k = 1;
            for (const char *c = o->val; *c; c++)
                k += *c == ',';
            if (k > n)
                n = k;
        }
    }
    PQconninfoFree(opts);
    return n;
}

/* ------------------------------------------------------------------ public */

int pg_listener_create(const pg_listener_options *opt, pg_listener **out, sx_err *err)
{
    *out = NULL;
    if (opt->url == NULL || opt->url[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "database url is empty");
    pg_listener *l = sx_calloc(1, sizeof(*l));
    if (pipe2(l->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        int e = errno;
        sx_free(l);
        return sx_err_set(err, SX_EINTERNAL, "could not create the listener's wake-up pipe: %s",
                          strerror(e));
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->stop_mu, NULL);
    sx_cond_init_monotonic(&l->cv);
    l->url = sx_strdup(opt->url);
    l->app = sx_strdup(opt->application_name ? opt->application_name : "sextant-listener");
    l->connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 5000;
    l->nhosts = count_hosts(opt->url);
    l->link = pg_link_given_or_own(opt->link, opt->metrics, &l->own_link);
    if (pg_link_watch(l->link, on_link_up, l) != 0)
        SX_WARN(COMPONENT, "too many watchers of the database link: the listener waits out "
                           "its back-off");
    if (opt->metrics) {
        l->m_connected =
            sx_metrics_gauge(opt->metrics, "sextant_db_listener_connected",
                             "Whether the LISTEN/NOTIFY connection is up and listening", NULL);
        l->m_reconnects =
            sx_metrics_counter(opt->metrics, "sextant_db_listener_reconnects_total",
                               "Times the LISTEN/NOTIFY connection was re-established", NULL);
        l->m_notifies = sx_metrics_counter(opt->metrics, "sextant_db_notifications_total",
                                           "Notifications received by channel", "channel");
        sx_metric_set(l->m_connected, NULL, 0);
    }
    *out = l;
    return 0;
}

int pg_listener_subscribe(pg_listener *l, const char *channel, pg_listener_notify_fn on_notify,
                          pg_listener_resync_fn on_resync, void *ctx, sx_err *err)
{
    if (on_notify == NULL)
        return sx_err_set(err, SX_EINVAL, "subscription needs a notification callback");
    size_t len = channel ? strlen(channel) : 0;
    if (len == 0 || len > CHANNEL_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "channel name must be 1 to %d bytes long",
                          CHANNEL_MAX_LEN);
    pthread_mutex_lock(&l->mu);
    if (l->nsubs == l->cap_subs) {
        l->cap_subs = l->cap_subs ? l->cap_subs * 2 : 8;
        l->subs = sx_realloc(l->subs, l->cap_subs * sizeof(*l->subs));
    }
    l->subs[l->nsubs++] = (sub){sx_strdup(channel), on_notify, on_resync, ctx};
    unsigned long gen = ++l->sub_gen;
    bool on_thread = l->started && pthread_equal(pthread_self(), l->thread);
    pthread_mutex_unlock(&l->mu);
    wake(l);
    if (on_thread)
        return 0; /* the thread picks it up after this callback returns */
    pthread_mutex_lock(&l->mu);
    while (l->connected && !l->stopping && l->ack_gen < gen)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

int pg_listener_start(pg_listener *l, sx_err *err)
{
    pthread_mutex_lock(&l->mu);
    if (l->started) {
        pthread_mutex_unlock(&l->mu);
        return sx_err_set(err, SX_EINVAL, "listener already started");
    }
    int rc = pthread_create(&l->thread, NULL, thread_main, l);
    if (rc != 0) {
        pthread_mutex_unlock(&l->mu);
        return sx_err_set(err, SX_EINTERNAL, "could not start the listener thread: %s",
                          strerror(rc));
    }
    l->started = true;
    pthread_mutex_unlock(&l->mu);
    return 0;
}

void pg_listener_stop(pg_listener *l)
{
    pthread_mutex_lock(&l->stop_mu);
    pthread_mutex_lock(&l->mu);
    bool started = l->started;
    l->stopping = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (started && !l->joined) {
        wake(l);
        pthread_join(l->thread, NULL);
        l->joined = true;
    }
    pthread_mutex_unlock(&l->stop_mu);
}

void pg_listener_destroy(pg_listener *l)
{
    if (l == NULL)
        return;
    pg_listener_stop(l);
    pg_link_unwatch(l->link, on_link_up, l);
    if (l->own_link)
        pg_link_destroy(l->link);
    for (size_t i = 0; i < l->nsubs; i++)
        sx_free(l->subs[i].channel);
    sx_free(l->subs);
    forget_listened(l);
    sx_free(l->listened);
    sx_free(l->scratch);
    close(l->wake[0]);
    close(l->wake[1]);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->stop_mu);
    pthread_cond_destroy(&l->cv);
    sx_free(l->url);
    sx_free(l->app);
    sx_free(l);
}

bool pg_listener_connected(pg_listener *l)
{
    return sx_locked_bool(&l->mu, &l->connected);
}

bool pg_listener_wait_connected(pg_listener *l, int timeout_ms)
{
    struct timespec ts = sx_deadline_in(timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (!l->connected && !l->stopping) {
        if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
            break;
    }
    bool c = l->connected;
    pthread_mutex_unlock(&l->mu);
    return c;
}

int pg_notify(pg_conn *c, const char *channel, const char *payload, sx_err *err)
{
    if (channel == NULL || channel[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "notification channel is empty");
    const char *params[] = {channel, payload ? payload : ""};
    int rc = pg_exec(c, "SELECT pg_notify($1, $2)", 2, params, NULL, err);
    if (rc)
        sx_err_prefix(err, "could not notify channel \"%s\"", channel);
    return rc;
}
