/*
 * handlers_events.c — GET /api/v1/events: the live events (server/events.h) as
 * server-sent events.
 *
 * The handler checks the query, opens a subscription on this replica's feed
 * (server/events_feed.h) and answers with a streamed body (api/http.h) that reads it:
 * when the subscription has nothing queued the connection is parked, holding no
 * worker thread, and the feed wakes it when an event or a keep-alive is queued. The
 * caller sees the event types its role may read: the deployment events need read on
 * "deployments", the others read on "proxies" (collection-wide rules of the RBAC
 * policy); ?types= narrows that further. Last-Event-ID (or ?since= for clients that
 * cannot set headers) resumes strictly after that event; without it the stream starts
 * at the newest event and replays nothing older.
 *
 * A stream is bound to the token that opened it: it ends when the token expires (plus
 * auth.clock_skew, the leeway the token was accepted with) and in any case after
 * events.max_stream_lifetime plus a random part of up to as long again (as
 * kube-apiserver ends watches), so that clients come back with a fresh token and spread
 * over the replicas. It ends at a frame boundary with a closing comment; a client
 * resuming with Last-Event-ID gets every event after the last one it received. A user
 * holds at most events.max_streams_per_user streams on a replica (429 beyond, with
 * Retry-After); without authentication, each client address counts as a user.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "api/handlers_common.h"
#include "api/handlers_events.h"
#include "api/handlers_routes.h"
#include "server/events.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/events_feed.h"
#include "server/server.h"

#define EVENT_STREAM_TYPE "text/event-stream; charset=utf-8"
/* Retry-After of a refusal over events.max_streams_per_user: a closed stream frees its
 * place at once. */
#define PER_USER_RETRY_AFTER "5"

/* One stream: its subscription and when it must end. Touched by the stream's reads,
 * one at a time, and by done. */
typedef struct sse_stream {
    events_sub *sub;
    int64_t end_ms;  /* monotonic */
    bool token_ends; /* end_ms is the token's expiry, not the lifetime */
    bool finishing;  /* past end_ms: the subscription was told to finish */
    bool said_bye;   /* the closing comment was written */
    char user[128];  /* for the log line */
} sse_stream;

static long stream_read(void *ctx, char *buf, size_t max)
{
    sse_stream *ss = ctx;
    if (!ss->finishing && sx_monotonic_ms() >= ss->end_ms) {
        ss->finishing = true;
        events_sub_finish(ss->sub);
        sx_log_fields(SX_LOG_INFO, "events",
                      json_pack("{s:s,s:s}", "user", ss->user, "reason",
                                ss->token_ends ? "token_expired" : "max_lifetime"),
                      "event stream ended: %s (the client reconnects with Last-Event-ID)",
                      ss->token_ends ? "its token expired" : "it reached its lifetime");
    }
    long n = events_sub_read(ss->sub, buf, max);
    if (n < 0 && ss->finishing && !ss->said_bye) {
        ss->said_bye = true;
        int len = snprintf(buf, max, ": stream closed, %s; reconnect with Last-Event-ID\n\n",
                           ss->token_ends ? "the token expired" : "its lifetime is over");
        if (len > 0 && (size_t)len < max)
            return len;
    }
    return n;
}

static void stream_done(void *ctx)
{
    sse_stream *ss = ctx;
    events_sub_close(ss->sub);
    sx_free(ss);
}

/* When a stream opened now by who must end (monotonic ms): at the token's expiry plus
 * the clock skew, or after the lifetime with its jitter, whichever comes first. */
static int64_t stream_end(const sextant_config *cfg, const rest_principal *who, bool *token_ends)
{
    int64_t now = sx_monotonic_ms();
    int64_t life = cfg->events.max_stream_lifetime_ms > 0 ? cfg->events.max_stream_lifetime_ms
                                                          : 30 * 60 * 1000LL;
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)now * 2654435761u;
    int64_t end = now + life + (int64_t)(rnd % (uint64_t)life);
    *token_ends = false;
    if (who && who->expires > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t wall = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        int64_t left = who->expires * 1000 + cfg->auth.clock_skew_ms - wall;
        if (now + left < end) {
            end = now + (left > 0 ? left : 0);
            *token_ends = true;
        }
    }
    return end;
}

static void stream_wake(void *ctx)
{
    http_stream_wake(ctx);
}

static void bad_query(http_request *req, const char *name, const char *message)
{
    sx_err err;
    sx_err_set(&err, SX_EINVAL, "invalid query parameter %s", name);
    api_refuse(req, NULL, &err, api_details1(name, message));
}

bool api_events_parse_types(const char *q, unsigned *mask, char *why, size_t n_why)
{
    *mask = 0;
    if (q == NULL || q[0] == '\0')
        return true;
    for (const char *p = q; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && *p == ' ')
            p++, n--;
        while (n && p[n - 1] == ' ')
            n--;
        char name[64];
        int i = -1;
        if (n > 0 && n < sizeof(name)) {
            memcpy(name, p, n);
            name[n] = '\0';
            i = events_type_index(name);
        }
        if (i < 0) {
            int len = snprintf(why, n_why, "\"%.*s\" is not an event type; the types are",
                               (int)(n < 64 ? n : 64), p);
            for (int k = 0; k < EVENTS_NTYPES && len > 0 && (size_t)len < n_why; k++)
                len += snprintf(why + len, n_why - (size_t)len, "%s %s", k ? "," : "",
                                events_type_name(k));
            return false;
        }
        *mask |= 1u << i;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return true;
}

/* ?types=a,b as a mask of events_type_index bits (0: every type); 400 for a name that
 * is not an event type. */
static bool types_or_respond(http_request *req, unsigned *mask)
{
    char msg[512];
    if (api_events_parse_types(http_req_query(req, "types"), mask, msg, sizeof(msg)))
        return true;
    bad_query(req, "types", msg);
    return false;
}

/* Last-Event-ID, else ?since=; neither: start at the newest event. 400 for a value that
 * is not an event id. */
static bool resume_or_respond(http_request *req, bool *resume, long long *id)
{
    *resume = false;
    *id = 0;
    const char *h = http_req_header(req, "Last-Event-ID");
    if (h && h[0]) {
        if (!api_parse_at_least(h, 0, id)) {
            sx_err err;
            sx_err_set(&err, SX_EINVAL, "invalid Last-Event-ID header");
            api_refuse(req, NULL, &err,
                       api_details1("Last-Event-ID",
                                    "must be the id of an event (a non-negative integer)"));
            return false;
        }
        *resume = true;
        return true;
    }
    const char *q = http_req_query(req, "since");
    if (q && q[0]) {
        if (!api_parse_at_least(q, 0, id)) {
            bad_query(req, "since", "must be the id of an event (a non-negative integer)");
            return false;
        }
        *resume = true;
    }
    return true;
}

void api_events_stream(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    struct sx_server *srv = rest_server(api);
    events_sub_options o = {0};
    if (!types_or_respond(req, &o.types) || !resume_or_respond(req, &o.resume, &o.last_id))
        return;
    const rest_principal *who = rest_principal_of(req);
    const sextant_config *cfg = srv->config;
    /* Without authentication everyone is "anonymous": each address counts as a user. */
    o.user = cfg->auth.enabled ? who->user
                               : sx_arena_printf(http_req_arena(req), "%s@%s", who->user,
                                                 http_req_remote_ip(req));
    o.proxies = rest_allows(api, who->role, "proxies", "read");
    o.deployments = rest_allows(api, who->role, "deployments", "read");
    http_req_set_header(req, "Cache-Control", "no-store");
    if (strcmp(http_req_method(req), "HEAD") == 0) {
        http_respond(req, 200, EVENT_STREAM_TYPE, "", 0);
        return;
    }
    events_sub *sub = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (srv->events == NULL) {
        sx_err_set(&err, SX_EUNAVAILABLE, "live events are not available on this server");
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    if (events_sub_open(srv->events, &o, &sub, &err) != 0) {
        if (err.code == SX_ERATELIMIT)
            http_req_set_header(req, "Retry-After", PER_USER_RETRY_AFTER);
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    sse_stream *ss = sx_calloc(1, sizeof(*ss));
    ss->sub = sub;
    ss->end_ms = stream_end(cfg, who, &ss->token_ends);
    snprintf(ss->user, sizeof(ss->user), "%s", o.user);
    /* Proxies in front must not buffer the stream. */
    http_req_set_header(req, "X-Accel-Buffering", "no");
    http_stream *hs =
        http_respond_stream(req, 200, EVENT_STREAM_TYPE, stream_read, stream_done, ss);
    if (hs) { /* else the stream is already closed */
        events_sub_set_wake(sub, stream_wake, hs);
        http_stream_wake_at(hs, ss->end_ms);
    }
}
