/*
 * http_stream.c — streamed answers (server-sent events): a body of unknown length,
 * produced piece by piece, that holds no thread while it waits (see http.h).
 */
#include <stdlib.h>

#include "api/http_internal.h"
#include "server/base/log.h"
#include "server/base/mem.h"

/* ------------------------------------------------------------------ streamed responses */

/*
 * A streamed body is a libmicrohttpd callback response. When the producer has nothing,
 * the reader suspends the connection (no thread is held, nothing polls) and
 * http_stream_wake resumes it. libmicrohttpd drops a resume that arrives before the
 * suspend, so both happen under the stream's mutex: the reader parks only when no wake
 * came since it last asked the producer, and a wake resumes only a parked stream. It is
 * an API violation to stop the daemon with a suspended connection, so http_stop first
 * ends every open stream (end_streams). The state has two references, the response's
 * (dropped when libmicrohttpd frees it, after done ran) and the request's (dropped by
 * on_completed, which reads the byte count), because the two go in either order.
 *
 * libmicrohttpd does not watch a suspended connection's socket, so a client that hangs
 * up while its stream is parked would only be noticed at the next write (the next
 * keep-alive). So a parked stream's socket is watched by the connection guard's reaper
 * (http_conn.c) for the peer's hang-up, which resumes the stream marked gone: its body
 * ends with an error, libmicrohttpd closes the connection at once and done runs. The
 * socket leaves the reaper's set before the connection is resumed, so it is never
 * watched while libmicrohttpd may close it; the reaper names streams by a serial id,
 * never by a pointer that may be stale. The reaper also fires timed wakes
 * (http_stream_wake_at).
 */
struct http_stream {
    pthread_mutex_t mu;
    http_server *srv;
    struct MHD_Connection *conn;
    http_stream_read_fn read;
    http_stream_done_fn done;
    void *ctx;
    bool parked; /* the connection is suspended until a wake */
    bool woken;  /* a wake came while read was running: ask again instead of parking */
    bool ending; /* http_stop: the body ends at the next read */
    bool gone;   /* the peer hung up while parked: the connection is closed */
    int refs;
    uint64_t id;         /* serial, never 0: how the reaper names the stream */
    int fd;              /* the connection's socket, -1 when unknown */
    int64_t wake_at_ms;  /* monotonic; a wake is due then (0: none); guarded by mu */
    atomic_size_t bytes; /* body bytes handed to libmicrohttpd */
    sx_link link;        /* in srv->streams */
};

void http_stream_release(http_stream *st)
{
    pthread_mutex_lock(&st->mu);
    bool last = --st->refs == 0;
    pthread_mutex_unlock(&st->mu);
    if (last) {
        pthread_mutex_destroy(&st->mu);
        sx_free(st);
    }
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_stream *st = cls;
    for (;;) {
        pthread_mutex_lock(&st->mu);
        bool ending = st->ending, gone = st->gone;
        st->woken = false;
        pthread_mutex_unlock(&st->mu);
        if (gone)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (ending)
            return MHD_CONTENT_READER_END_OF_STREAM;
        long n = st->read(st->ctx, buf, max);
        if (n < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (n > 0) {
            atomic_fetch_add(&st->bytes, (size_t)n);
            return (ssize_t)n;
        }
        pthread_mutex_lock(&st->mu);
        if (!st->woken && !st->ending) {
            st->parked = true;
            http_guard_watch(st->srv->guard, st->fd, st->id);
            MHD_suspend_connection(st->conn);
            pthread_mutex_unlock(&st->mu);
            return 0;
        }
        pthread_mutex_unlock(&st->mu);
    }
}

/* libmicrohttpd frees the response: the stream is over. */
static void stream_free(void *cls)
{
    http_stream *st = cls;
    http_server *s = st->srv;
    pthread_mutex_lock(&s->streams_mu);
    sx_list_remove(&s->streams, &st->link);
    pthread_mutex_unlock(&s->streams_mu);
    st->done(st->ctx);
    http_stream_release(st);
}

/* Resumes a parked stream; call with st->mu held. */
static void stream_resume_locked(http_stream *st)
{
    if (st->parked) {
        st->parked = false;
        http_guard_unwatch(st->srv->guard, st->fd);
        MHD_resume_connection(st->conn);
    } else {
        st->woken = true;
    }
}

void http_stream_wake(http_stream *st)
{
    pthread_mutex_lock(&st->mu);
    stream_resume_locked(st);
    pthread_mutex_unlock(&st->mu);
}

void http_streams_end(http_server *s)
{
    pthread_mutex_lock(&s->streams_mu);
    s->streams_ended = true;
    for (sx_link *l = s->streams.head; l; l = l->next) {
        http_stream *st = SX_CONTAINER(l, http_stream, link);
        pthread_mutex_lock(&st->mu);
        st->ending = true;
        stream_resume_locked(st);
        pthread_mutex_unlock(&st->mu);
    }
    pthread_mutex_unlock(&s->streams_mu);
}

void http_streams_hangup(http_server *s, uint64_t id)
{
    pthread_mutex_lock(&s->streams_mu);
    for (sx_link *l = s->streams.head; l; l = l->next) {
        http_stream *st = SX_CONTAINER(l, http_stream, link);
        if (st->id != id)
            continue;
        pthread_mutex_lock(&st->mu);
        if (st->parked) {
            st->gone = true;
            stream_resume_locked(st);
        }
        pthread_mutex_unlock(&st->mu);
        break;
    }
    pthread_mutex_unlock(&s->streams_mu);
}

void http_streams_tick(http_server *s, int64_t now_ms)
{
    pthread_mutex_lock(&s->streams_mu);
    for (sx_link *l = s->streams.head; l; l = l->next) {
        http_stream *st = SX_CONTAINER(l, http_stream, link);
        pthread_mutex_lock(&st->mu);
        if (st->wake_at_ms && st->wake_at_ms <= now_ms) {
            st->wake_at_ms = 0;
            stream_resume_locked(st);
        }
        pthread_mutex_unlock(&st->mu);
    }
    pthread_mutex_unlock(&s->streams_mu);
}

void http_stream_wake_at(http_stream *st, int64_t monotonic_ms)
{
    pthread_mutex_lock(&st->mu);
    st->wake_at_ms = monotonic_ms > 0 ? monotonic_ms : 1;
    pthread_mutex_unlock(&st->mu);
}

http_stream *http_respond_stream(http_request *r, int status, const char *content_type,
                                 http_stream_read_fn read, http_stream_done_fn done, void *ctx)
{
    if (!http_resp_begin(r, status)) {
        done(ctx);
        return NULL;
    }
    http_stream *st = sx_calloc(1, sizeof(*st));
    pthread_mutex_init(&st->mu, NULL);
    st->srv = r->srv;
    st->conn = r->conn;
    st->read = read;
    st->done = done;
    st->ctx = ctx;
    st->refs = 2;
    static atomic_uint_fast64_t serial = 1;
    st->id = atomic_fetch_add(&serial, 1);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    st->fd = ci ? ci->connect_fd : -1;
    atomic_init(&st->bytes, 0);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, stream_reader, st, stream_free);
    if (resp == NULL) {
        SX_ERROR("http", "could not create a streamed response for request %s", r->id);
        r->status = 500;
        pthread_mutex_destroy(&st->mu);
        sx_free(st);
        done(ctx);
        return NULL;
    }
    r->stream = st;
    pthread_mutex_lock(&r->srv->streams_mu);
    st->ending = r->srv->streams_ended;
    sx_list_push_front(&r->srv->streams, &st->link);
    pthread_mutex_unlock(&r->srv->streams_mu);
    http_resp_add_headers(r, resp, content_type);
    bool queued = MHD_queue_response(r->conn, (unsigned int)status, resp) == MHD_YES;
    if (!queued) {
        SX_ERROR("http", "could not queue the streamed response to request %s", r->id);
        r->status = 500;
    }
    MHD_destroy_response(resp); /* not queued: this frees it, and done runs */
    return queued ? st : NULL;
}

size_t http_stream_bytes(http_stream *st)
{
    return atomic_load(&st->bytes);
}
