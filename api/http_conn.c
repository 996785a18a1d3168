/*
 * http_conn.c — the connection guard of the HTTP server: connection limits, the request
 * header deadline, the reaper thread, and refusals counted and logged without flooding.
 *
 * libmicrohttpd offers a total connection limit, a per-address limit and an idle timeout,
 * but an idle timeout is reset by every byte, so a client trickling one byte a second
 * holds its connection for ever, and libmicrohttpd's own refusals are neither counted
 * nor told apart. So the guard keeps its own picture of every open connection: a record
 * made when libmicrohttpd reports the connection started and dropped when it reports it
 * closed (both on the connection's worker thread, before its socket is closed), filed
 * under its listener and counted per client address.
 *
 * Limits. The accept policy callback refuses a connection over the listener's total or
 * its address's limit before libmicrohttpd sets anything up (libmicrohttpd closes the
 * socket). The callback and the start of the connection run one after the other on the
 * thread that accepted it, but several threads accept at once, so the start checks the
 * counts again under the lock and refuses an excess by shutting the socket down: the
 * counts are exact, never above a limit. libmicrohttpd's own limit is set above ours
 * as a backstop only.
 *
 * Deadlines. A connection is in one of three phases (conn_phase), changed by the request
 * callbacks of http.c: waiting for a request's headers (from its start, or from the
 * request line of a later request on a kept-alive connection: libmicrohttpd's URI
 * callback), busy (headers in, until the request completes) or idle between requests.
 * The first and the last have a deadline that no byte extends: http.header_timeout for
 * the headers, http.idle_timeout + http.header_timeout for an idle kept-alive
 * connection (a truly idle one is closed earlier by libmicrohttpd's idle timeout, set
 * to http.idle_timeout, so only a trickled request line meets this one). The reaper
 * thread closes a connection past its deadline with shutdown(2), from outside the
 * worker that owns it: the worker then sees the end of the stream and closes the
 * connection the usual way. shutdown never closes the descriptor, and a record leaves
 * the list under the same lock before libmicrohttpd closes the socket, so the reaper
 * never touches a descriptor that was reused.
 *
 * The reaper also waits, in an epoll set of its own, for the peer of a parked streamed
 * answer (http_stream.c) to hang up, which libmicrohttpd cannot see while the
 * connection is suspended, and fires the timed wakes of streams.
 *
 * Refusals are counted in sextant_http_connections_refused_total{reason} and logged at
 * most once per client address and reason per REFUSAL_LOG_INTERVAL_MS, the later line
 * saying how many were not logged; libmicrohttpd's own complaints (one per aborted
 * connection) are logged at most once per message per interval the same way.
 */
#include "api/http_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"

#define ADDR_BUCKETS            1024
#define REFUSAL_LOG_INTERVAL_MS (60 * 1000LL)
#define REFUSAL_LOG_MAX         4096 /* addresses remembered for the log; the rest: one line */
#define MHD_LOG_KINDS           32   /* distinct libmicrohttpd messages throttled */
#define REAPER_TICK_MS          200  /* deadline precision */
#define ADMIN_MAX_CONNECTIONS   64   /* the admin listener: probes and scrapers only */

typedef enum refusal {
    REFUSE_CONNECTION_LIMIT, /* the listener holds its total */
    REFUSE_ADDRESS_LIMIT,    /* the client's address holds its share */
    REFUSE_HEADER_TIMEOUT,   /* the request headers did not arrive in time */
    NREFUSALS
} refusal;

static const char *const refusal_names[NREFUSALS] = {"connection_limit", "address_limit",
                                                     "header_timeout"};

/*
 * The phases of a connection, changed in set_phase only. Every record, whatever its
 * phase, is on its listener's conns list from the start of the connection to its close.
 */
typedef enum conn_phase {
    CONN_HEADERS, /* waiting for a request's headers; deadline: header timeout */
    CONN_BUSY,    /* headers in: the request runs and is answered; no deadline */
    CONN_IDLE,    /* kept alive between requests; deadline: idle + header timeouts */
} conn_phase;

typedef struct addr_count {
    struct in6_addr addr; /* v4 as v4-mapped v6 */
    size_t n;             /* open connections from addr */
    struct addr_count *next;
} addr_count;

typedef struct http_listener http_listener;

typedef struct http_conn {
    sx_link link; /* in lis->conns */
    http_listener *lis;
    int fd;
    struct in6_addr addr;
    bool counted; /* false: refused at its start, in no count */
    bool shut;    /* the reaper shut it down */
    conn_phase phase;
    int64_t deadline_ms; /* monotonic; for CONN_HEADERS and CONN_IDLE */
} http_conn;

struct http_listener {
    http_guard *g;
    bool admin;
    const char *name; /* "api", "admin": the gauge's label */
    size_t max_total, max_per_addr;
    pthread_mutex_t mu; /* guards everything below */
    sx_list conns;
    size_t nconns;
    addr_count *buckets[ADDR_BUCKETS];
};

typedef struct refusal_log {
    struct in6_addr addr;
    refusal why;
    int64_t last_ms;     /* when the last line for it was written */
    uint64_t suppressed; /* refusals since that line */
    struct refusal_log *next;
} refusal_log;

typedef struct mhd_log_kind {
    const char *fmt; /* libmicrohttpd's format string: a static string */
    int64_t last_ms;
    uint64_t suppressed;
} mhd_log_kind;

struct http_guard {
    http_server *srv;
    http_listener api, admin;
    int64_t header_ms, idle_ms;
    sx_metric *m_refused; /* sextant_http_connections_refused_total{reason} */
    sx_metric *m_open;    /* sextant_http_connections{listener} */
    int epfd;             /* the reaper's: parked streams' sockets and the stop event */
    int stopfd;           /* eventfd: the reaper stops */
    pthread_t reaper;
    bool running;
    pthread_mutex_t log_mu;          /* guards the two logs below */
    refusal_log *logs[ADDR_BUCKETS]; /* by addr_hash */
    size_t nlogs;
    uint64_t overflow; /* refusals from addresses beyond REFUSAL_LOG_MAX, unlogged */
    int64_t overflow_ms;
    mhd_log_kind kinds[MHD_LOG_KINDS];
};

/* ------------------------------------------------------------------ addresses */

/* The client address of sa as v6 (v4 mapped); false for another family. */
static bool addr_of(const struct sockaddr *sa, struct in6_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET) {
        out->s6_addr[10] = out->s6_addr[11] = 0xff;
        memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        *out = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return true;
    }
    return false;
}

static void addr_text(const struct in6_addr *a, char out[INET6_ADDRSTRLEN])
{
    if (IN6_IS_ADDR_V4MAPPED(a))
        inet_ntop(AF_INET, &a->s6_addr[12], out, INET6_ADDRSTRLEN);
    else
        inet_ntop(AF_INET6, a, out, INET6_ADDRSTRLEN);
}

static size_t addr_hash(const struct in6_addr *a)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < 16; i++)
        h = (h ^ a->s6_addr[i]) * 1099511628211ULL;
    return (size_t)(h % ADDR_BUCKETS);
}

/* The count of a in lis; created at 0 when create, else NULL when absent. Call with mu. */
static addr_count *addr_find(http_listener *lis, const struct in6_addr *a, bool create)
{
    addr_count **b = &lis->buckets[addr_hash(a)];
    for (addr_count *c = *b; c; c = c->next)
        if (memcmp(&c->addr, a, sizeof(*a)) == 0)
            return c;
    if (!create)
        return NULL;
    addr_count *c = sx_calloc(1, sizeof(*c));
    c->addr = *a;
    c->next = *b;
    *b = c;
    return c;
}

/* Drops one connection of a from lis's counts. Call with mu. */
static void addr_release(http_listener *lis, const struct in6_addr *a)
{
    addr_count **p = &lis->buckets[addr_hash(a)];
    for (; *p; p = &(*p)->next) {
        if (memcmp(&(*p)->addr, a, sizeof(*a)) != 0)
            continue;
        if (--(*p)->n == 0) {
            addr_count *dead = *p;
            *p = dead->next;
            sx_free(dead);
        }
        return;
    }
}

/* Why lis refuses one more connection from a, or -1 when it takes it. Call with mu. */
static int over_limit(http_listener *lis, const struct in6_addr *a)
{
    if (lis->nconns >= lis->max_total)
        return REFUSE_CONNECTION_LIMIT;
    addr_count *c = addr_find(lis, a, false);
    if (c && c->n >= lis->max_per_addr)
        return REFUSE_ADDRESS_LIMIT;
    return -1;
}

/* ------------------------------------------------------------------ refusals */

/* Counts a refusal and logs it unless its address and reason were logged within the
 * interval (then the next line says how many were not). */
static void refused(http_guard *g, const struct in6_addr *a, refusal why)
{
    const char *lv[] = {refusal_names[why]};
    sx_metric_inc(g->m_refused, lv);
    int64_t now = sx_monotonic_ms();
    pthread_mutex_lock(&g->log_mu);
    refusal_log **bucket = &g->logs[addr_hash(a)];
    refusal_log *e = *bucket;
    while (e && !(e->why == why && memcmp(&e->addr, a, sizeof(*a)) == 0))
        e = e->next;
    bool log_now = false;
    if (e) {
        e->suppressed++;
    } else if (g->nlogs < REFUSAL_LOG_MAX) {
        e = sx_calloc(1, sizeof(*e));
        e->addr = *a;
        e->why = why;
        e->last_ms = now;
        e->next = *bucket;
        *bucket = e;
        g->nlogs++;
        log_now = true;
    } else {
        g->overflow++;
    }
    pthread_mutex_unlock(&g->log_mu);
    if (log_now) {
        char ip[INET6_ADDRSTRLEN];
        addr_text(a, ip);
        sx_log_fields(
            SX_LOG_WARN, "http",
            json_pack("{s:s,s:s,s:i}", "remote", ip, "reason", refusal_names[why], "refused", 1),
            "closing connections from %s: %s (logged at most once a minute per "
            "address and reason; sextant_http_connections_refused_total counts all)",
            ip, refusal_names[why]);
    }
}

/* The reaper's round of one bucket of the refusal log: a line for each address refused
 * again since its last line an interval ago; addresses quiet for an interval are
 * forgotten. Call with log_mu. */
static void flush_bucket(http_guard *g, refusal_log **p, int64_t now)
{
    while (*p) {
        refusal_log *e = *p;
        if (now - e->last_ms < REFUSAL_LOG_INTERVAL_MS) {
            p = &e->next;
            continue;
        }
        if (e->suppressed == 0) {
            *p = e->next;
            g->nlogs--;
            sx_free(e);
            continue;
        }
        char ip[INET6_ADDRSTRLEN];
        addr_text(&e->addr, ip);
        sx_log_fields(SX_LOG_WARN, "http",
                      json_pack("{s:s,s:s,s:I}", "remote", ip, "reason", refusal_names[e->why],
                                "refused", (json_int_t)e->suppressed),
                      "closed %llu more connections from %s in the last minute: %s",
                      (unsigned long long)e->suppressed, ip, refusal_names[e->why]);
        e->suppressed = 0;
        e->last_ms = now;
        p = &e->next;
    }
}

/* The reaper's round of the refusal log. */
static void flush_refusal_log(http_guard *g, int64_t now)
{
    pthread_mutex_lock(&g->log_mu);
    for (size_t b = 0; b < ADDR_BUCKETS; b++)
        flush_bucket(g, &g->logs[b], now);
    if (g->overflow && now - g->overflow_ms >= REFUSAL_LOG_INTERVAL_MS) {
        sx_log_fields(SX_LOG_WARN, "http", json_pack("{s:I}", "refused", (json_int_t)g->overflow),
                      "closed %llu connections from too many addresses to name each",
                      (unsigned long long)g->overflow);
        g->overflow = 0;
        g->overflow_ms = now;
    }
    pthread_mutex_unlock(&g->log_mu);
}

bool http_guard_mhd_log(http_guard *g, const char *fmt, uint64_t *suppressed)
{
    int64_t now = sx_monotonic_ms();
    bool ok = true;
    *suppressed = 0;
    pthread_mutex_lock(&g->log_mu);
    mhd_log_kind *k = NULL, *oldest = &g->kinds[0];
    for (size_t i = 0; i < MHD_LOG_KINDS && k == NULL; i++) {
        if (g->kinds[i].fmt == fmt)
            k = &g->kinds[i];
        else if (g->kinds[i].last_ms < oldest->last_ms)
            oldest = &g->kinds[i];
    }
    if (k == NULL) {
        k = oldest;
        k->fmt = fmt;
        k->suppressed = 0;
        k->last_ms = now;
    } else if (now - k->last_ms < REFUSAL_LOG_INTERVAL_MS) {
        k->suppressed++;
        ok = false;
    } else {
        *suppressed = k->suppressed;
        k->suppressed = 0;
        k->last_ms = now;
    }
    pthread_mutex_unlock(&g->log_mu);
    return ok;
}

/* ------------------------------------------------------------------ connections */

static http_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The one place a connection changes phase. */
static void set_phase(http_conn *c, conn_phase p)
{
    http_listener *lis = c->lis;
    int64_t now = sx_monotonic_ms();
    pthread_mutex_lock(&lis->mu);
    c->phase = p;
    c->deadline_ms = p == CONN_HEADERS ? now + lis->g->header_ms
                     : p == CONN_IDLE  ? now + lis->g->idle_ms + lis->g->header_ms
                                       : 0;
    pthread_mutex_unlock(&lis->mu);
}

void http_guard_request_line(struct MHD_Connection *mc)
{
    http_conn *c = conn_of(mc);
    /* The first request's deadline runs from the connection's start; a later one's from
     * its request line. */
    if (c && c->phase == CONN_IDLE)
        set_phase(c, CONN_HEADERS);
}

void http_guard_headers_in(struct MHD_Connection *mc)
{
    http_conn *c = conn_of(mc);
    if (c)
        set_phase(c, CONN_BUSY);
}

void http_guard_request_done(struct MHD_Connection *mc)
{
    http_conn *c = conn_of(mc);
    if (c)
        set_phase(c, CONN_IDLE);
}

bool http_guard_is_admin(struct MHD_Connection *mc)
{
    http_conn *c = conn_of(mc);
    return c && c->lis->admin;
}

static void update_open_gauge(http_listener *lis)
{
    const char *lv[] = {lis->name};
    sx_metric_set(lis->g->m_open, lv, (double)lis->nconns);
}

/* libmicrohttpd's accept policy: refuses over a limit before anything is set up. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
    http_listener *lis = cls;
    (void)len;
    struct in6_addr a;
    if (!addr_of(sa, &a))
        return MHD_YES;
    pthread_mutex_lock(&lis->mu);
    int why = over_limit(lis, &a);
    pthread_mutex_unlock(&lis->mu);
    if (why < 0)
        return MHD_YES;
    refused(lis->g, &a, (refusal)why);
    return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http_listener *lis = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        http_conn *c = sx_calloc(1, sizeof(*c));
        c->lis = lis;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = ci ? ci->connect_fd : -1;
        ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        bool known = addr_of(ci ? ci->client_addr : NULL, &c->addr);
        c->phase = CONN_HEADERS;
        c->deadline_ms = sx_monotonic_ms() + lis->g->header_ms;
        pthread_mutex_lock(&lis->mu);
        int why = known ? over_limit(lis, &c->addr) : -1;
        if (why < 0) {
            c->counted = true;
            if (known)
                addr_find(lis, &c->addr, true)->n++;
            lis->nconns++;
            update_open_gauge(lis);
        } else if (c->fd >= 0) {
            /* Over a limit after all (another thread took the last place since the
             * accept policy looked): the worker sees the end and closes it. */
            c->shut = true;
            shutdown(c->fd, SHUT_RDWR);
        }
        sx_list_push_front(&lis->conns, &c->link);
        pthread_mutex_unlock(&lis->mu);
        if (why >= 0)
            refused(lis->g, &c->addr, (refusal)why);
        *socket_context = c;
        return;
    }
    http_conn *c = *socket_context;
    if (c == NULL)
        return;
    *socket_context = NULL;
    pthread_mutex_lock(&lis->mu);
    sx_list_remove(&lis->conns, &c->link);
    if (c->counted) {
        if (!IN6_IS_ADDR_UNSPECIFIED(&c->addr))
            addr_release(lis, &c->addr);
        lis->nconns--;
        update_open_gauge(lis);
    }
    pthread_mutex_unlock(&lis->mu);
    sx_free(c);
}

/* Shuts down the connections of lis past their deadline. */
static void reap_listener(http_listener *lis, int64_t now)
{
    struct in6_addr late[64];
    size_t nlate = 0;
    pthread_mutex_lock(&lis->mu);
    for (sx_link *l = lis->conns.head; l; l = l->next) {
        http_conn *c = SX_CONTAINER(l, http_conn, link);
        if (c->shut || c->phase == CONN_BUSY || c->deadline_ms > now || c->fd < 0)
            continue;
        c->shut = true;
        shutdown(c->fd, SHUT_RDWR);
        if (nlate < sizeof(late) / sizeof(late[0]))
            late[nlate++] = c->addr;
        else
            refused(lis->g, &c->addr, REFUSE_HEADER_TIMEOUT); /* rare: a big round */
    }
    pthread_mutex_unlock(&lis->mu);
    for (size_t i = 0; i < nlate; i++)
        refused(lis->g, &late[i], REFUSE_HEADER_TIMEOUT);
}

/* ------------------------------------------------------------------ the reaper */

static void *reaper_main(void *arg)
{
    http_guard *g = arg;
    struct epoll_event ev[64];
    for (;;) {
        int n = epoll_wait(g->epfd, ev, 64, REAPER_TICK_MS);
        bool stop = false;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u64 == 0)
                stop = true;
            else
                http_streams_hangup(g->srv, ev[i].data.u64);
        }
        if (stop)
            break;
        int64_t now = sx_monotonic_ms();
        reap_listener(&g->api, now);
        reap_listener(&g->admin, now);
        http_streams_tick(g->srv, now);
        flush_refusal_log(g, now);
    }
    return NULL;
}

void http_guard_watch(http_guard *g, int fd, uint64_t id)
{
    if (g == NULL || fd < 0 || g->epfd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.u64 = id};
    if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
        (void)epoll_ctl(g->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void http_guard_unwatch(http_guard *g, int fd)
{
    if (g == NULL || fd < 0 || g->epfd < 0)
        return;
    (void)epoll_ctl(g->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* ------------------------------------------------------------------ lifecycle */

static void listener_init(http_listener *lis, http_guard *g, bool admin)
{
    lis->g = g;
    lis->admin = admin;
    lis->name = admin ? "admin" : "api";
    pthread_mutex_init(&lis->mu, NULL);
}

static void listener_clear(http_listener *lis)
{
    for (size_t i = 0; i < ADDR_BUCKETS; i++) {
        while (lis->buckets[i]) {
            addr_count *c = lis->buckets[i];
            lis->buckets[i] = c->next;
            sx_free(c);
        }
    }
}

http_guard *http_guard_create(http_server *s)
{
    http_guard *g = sx_calloc(1, sizeof(*g));
    g->srv = s;
    g->epfd = g->stopfd = -1;
    listener_init(&g->api, g, false);
    listener_init(&g->admin, g, true);
    pthread_mutex_init(&g->log_mu, NULL);
    g->m_refused = sx_metrics_counter(s->metrics, "sextant_http_connections_refused_total",
                                      "HTTP connections closed by a limit: connection_limit, "
                                      "address_limit, header_timeout",
                                      "reason");
    g->m_open = sx_metrics_gauge(s->metrics, "sextant_http_connections",
                                 "Open HTTP connections, by listener (api, admin)", "listener");
    for (int i = 0; i < NREFUSALS; i++) {
        const char *lv[] = {refusal_names[i]};
        sx_metric_add(g->m_refused, lv, 0); /* every reason shows, at 0 */
    }
    update_open_gauge(&g->api);
    return g;
}

void http_guard_destroy(http_guard *g)
{
    if (g == NULL)
        return;
    http_guard_stop(g);
    listener_clear(&g->api);
    listener_clear(&g->admin);
    for (size_t b = 0; b < ADDR_BUCKETS; b++) {
        while (g->logs[b]) {
            refusal_log *e = g->logs[b];
            g->logs[b] = e->next;
            sx_free(e);
        }
    }
    pthread_mutex_destroy(&g->api.mu);
    pthread_mutex_destroy(&g->admin.mu);
    pthread_mutex_destroy(&g->log_mu);
    sx_free(g);
}

int http_guard_start(http_guard *g, sx_err *err)
{
    if (g->running)
        return 0;
    const sextant_config *cfg = g->srv->cfg;
    g->header_ms = cfg->http.header_timeout_ms > 0 ? cfg->http.header_timeout_ms : 10000;
    g->idle_ms = cfg->http.idle_timeout_ms > 0 ? cfg->http.idle_timeout_ms : 60000;
    g->api.max_total = cfg->http.max_connections > 0 ? (size_t)cfg->http.max_connections : 4096;
    g->api.max_per_addr = cfg->http.max_connections_per_address > 0
                              ? (size_t)cfg->http.max_connections_per_address
                              : g->api.max_total;
    g->admin.max_total = g->admin.max_per_addr = ADMIN_MAX_CONNECTIONS;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)g->api.max_total + ADMIN_MAX_CONNECTIONS + 256 > rl.rlim_cur)
        sx_log_fields(SX_LOG_WARN, "http",
                      json_pack("{s:I,s:I}", "max_connections", (json_int_t)g->api.max_total,
                                "open_files_limit", (json_int_t)rl.rlim_cur),
                      "http.max_connections (%zu) is close to the open-files limit (%llu): "
                      "connections past the limit fail before they can be refused cleanly; "
                      "raise the limit (ulimit -n, LimitNOFILE=) or lower http.max_connections",
                      g->api.max_total, (unsigned long long)rl.rlim_cur);
    g->epfd = epoll_create1(EPOLL_CLOEXEC);
    g->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (g->epfd < 0 || g->stopfd < 0 || epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->stopfd, &ev) != 0 ||
        pthread_create(&g->reaper, NULL, reaper_main, g) != 0) {
        int e = errno;
        if (g->epfd >= 0)
            close(g->epfd);
        if (g->stopfd >= 0)
            close(g->stopfd);
        g->epfd = g->stopfd = -1;
        return sx_err_set(err, SX_EIO, "could not start the http connection reaper: %s",
                          strerror(e));
    }
    g->running = true;
    return 0;
}

void http_guard_stop(http_guard *g)
{
    if (!g->running)
        return;
    uint64_t one = 1;
    if (write(g->stopfd, &one, sizeof(one)) != (ssize_t)sizeof(one))
        SX_WARN("http", "could not wake the connection reaper: %s", strerror(errno));
    pthread_join(g->reaper, NULL);
    close(g->epfd);
    close(g->stopfd);
    g->epfd = g->stopfd = -1;
    g->running = false;
}

size_t http_guard_options(http_guard *g, bool admin, struct MHD_OptionItem *opts)
{
    http_listener *lis = admin ? &g->admin : &g->api;
    /* libmicrohttpd's own limit is a backstop above ours: connections being refused
     * still count in it for a moment. */
    size_t backstop = lis->max_total + lis->max_total / 4 + 64;
    unsigned idle_s = (unsigned)((g->idle_ms + 999) / 1000);
    size_t n = 0;
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)backstop, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)idle_s, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, lis};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return n;
}

MHD_AcceptPolicyCallback http_guard_accept_policy(void)
{
    return on_accept;
}

void *http_guard_listener(http_guard *g, bool admin)
{
    return admin ? &g->admin : &g->api;
}
