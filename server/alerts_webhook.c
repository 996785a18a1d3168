/*
 * alerts_webhook.c — the webhook worker of the alerts (see alerts_webhook.h).
 *
 * Design: alert_hook_send copies the alert into one pending delivery per webhook on a
 * bounded list under a mutex and wakes the worker; that is all the evaluation ever
 * waits for. The worker takes the delivery that is due first, builds its body (sent_at
 * and attempt change between attempts, so each attempt is signed anew), POSTs it with
 * libcurl outside the lock, and either forgets it (2xx, or retries used up) or puts it
 * back with its next time. One worker, so one slow receiver delays the others by at
 * most alerts.webhook_timeout per attempt. Stopping ends the wait at once; a POST in
 * flight ends within its timeout.
 */
#include "server/alerts_webhook.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/k8s/http.h"

#define COMPONENT "alerts"

/* One delivery of one alert state to one webhook. Owned by the pending list, or by the
 * worker while it posts it. */
typedef struct delivery {
    struct delivery *next;
    size_t target;       /* index into the targets */
    json_t *alert;       /* owned copy */
    char state[16];      /* "firing" or "resolved" */
    char id[48];         /* X-Sextant-Delivery */
    int attempts;        /* made so far */
    struct timespec due; /* monotonic: not before */
} delivery;

struct alert_hook {
    alert_hook_options o;
    char *replica; /* owned copy of o.replica */
    sx_metric *m_deliveries;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* monotonic; signalled on send and stop */
    delivery *pending; /* guarded by mu */
    size_t npending;   /* guarded by mu */
    bool stopping;     /* guarded by mu */
    sup_thread thread;
};

char *alert_hook_sign(const char *secret, const void *body, size_t len,
                      char out[ALERT_HOOK_SIGNATURE_LEN])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), body, len, mac, &n);
    memcpy(out, "sha256=", 7);
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < n && i < 32; i++) {
        out[7 + 2 * i] = hex[mac[i] >> 4];
        out[8 + 2 * i] = hex[mac[i] & 15];
    }
    out[7 + 2 * (n < 32 ? n : 32)] = '\0';
    return out;
}

long long alert_hook_backoff_ms(int retry, long long min_ms, long long max_ms)
{
    if (max_ms < min_ms)
        max_ms = min_ms;
    long long ms = min_ms;
    for (int i = 1; i < retry && ms < max_ms; i++)
        ms *= 2;
    return ms < max_ms ? ms : max_ms;
}

static void count(alert_hook *h, const char *result)
{
    if (h->m_deliveries) {
        const char *l[] = {result};
        sx_metric_inc(h->m_deliveries, l);
    }
}

static void delivery_free(delivery *d)
{
    if (d) {
        json_decref(d->alert);
        sx_free(d);
    }
}

static void *hook_thread(void *arg);

static void hook_wake_stop(void *ctx)
{
    alert_hook *h = ctx;
    sx_cond_raise(&h->mu, &h->cv, &h->stopping);
}

alert_hook *alert_hook_create(const alert_hook_options *o)
{
    alert_hook *h = sx_calloc(1, sizeof(*h));
    h->o = *o;
    h->replica = sx_strdup(o->replica ? o->replica : "");
    h->o.replica = h->replica;
    pthread_mutex_init(&h->mu, NULL);
    sx_cond_init_monotonic(&h->cv);
    if (o->metrics)
        h->m_deliveries = sx_metrics_counter(
            o->metrics, "sextant_alert_webhook_deliveries_total",
            "Alert webhook deliveries by result: delivered (a 2xx answer), retried (an attempt "
            "failed and another follows), failed (retries used up), dropped (queue full).",
            "result");
    h->thread = (sup_thread){
        .run = hook_thread, .wake = hook_wake_stop, .ctx = h, .what = "the alert webhooks"};
    k8s_http_global_init();
    return h;
}

void alert_hook_send(alert_hook *h, const json_t *alert, long long alert_id, const char *state)
{
    if (h == NULL || h->o.targets == NULL || h->o.targets->count == 0)
        return;
    struct timespec now = sx_deadline_in(0);
    for (size_t t = 0; t < h->o.targets->count; t++) {
        delivery *d = sx_calloc(1, sizeof(*d));
        d->target = t;
        d->alert = json_deep_copy(alert);
        snprintf(d->state, sizeof d->state, "%s", state);
        snprintf(d->id, sizeof d->id, "%lld-%s", alert_id, state);
        d->due = now;
        pthread_mutex_lock(&h->mu);
        bool full = h->npending >= ALERT_HOOK_QUEUE_MAX;
        if (!full) {
            delivery **tail = &h->pending;
            while (*tail)
                tail = &(*tail)->next;
            *tail = d;
            h->npending++;
            pthread_cond_broadcast(&h->cv);
        }
        pthread_mutex_unlock(&h->mu);
        if (full) {
            count(h, "dropped");
            sx_log(SX_LOG_WARN, COMPONENT, "alert webhook queue full: dropped delivery %s", d->id);
            delivery_free(d);
        }
    }
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec != b->tv_sec     ? (a->tv_sec < b->tv_sec ? -1 : 1)
           : a->tv_nsec != b->tv_nsec ? (a->tv_nsec < b->tv_nsec ? -1 : 1)
                                      : 0;
}

/* Takes the delivery due first out of the list once it is due; NULL when stopping. */
static delivery *take_due(alert_hook *h)
{
    pthread_mutex_lock(&h->mu);
    delivery *got = NULL;
    while (!h->stopping) {
        delivery **best = NULL;
        for (delivery **p = &h->pending; *p; p = &(*p)->next)
            if (best == NULL || ts_cmp(&(*p)->due, &(*best)->due) < 0)
                best = p;
        struct timespec now = sx_deadline_in(0);
        if (best && ts_cmp(&(*best)->due, &now) <= 0) {
            got = *best;
            *best = got->next;
            got->next = NULL;
            h->npending--;
            break;
        }
        if (best)
            pthread_cond_timedwait(&h->cv, &h->mu, &(*best)->due);
        else
            pthread_cond_wait(&h->cv, &h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return got;
}

/* Puts d back, due after its back-off. */
static void put_back(alert_hook *h, delivery *d, long long wait_ms)
{
    d->due = sx_deadline_in(wait_ms);
    pthread_mutex_lock(&h->mu);
    d->next = h->pending;
    h->pending = d;
    h->npending++;
    pthread_mutex_unlock(&h->mu);
}

/* libcurl's progress callback: a stop aborts a POST in flight. */
static int abort_on_stop(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    alert_hook *h = ctx;
    pthread_mutex_lock(&h->mu);
    bool stop = h->stopping;
    pthread_mutex_unlock(&h->mu);
    return stop ? 1 : 0;
}

static size_t discard_body(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

/* One POST of d; returns the HTTP status, or 0 with a reason in why when there was no
 * answer. */
static long post(alert_hook *h, const delivery *d, char *why, size_t whylen)
{
    const config_webhook *t = &h->o.targets->items[d->target];
    char sent_at[SX_RFC3339_LEN];
    json_t *body =
        json_pack("{s:O,s:s,s:s,s:i,s:s}", "alert", d->alert, "state", d->state, "sent_at",
                  sx_rfc3339_now(sent_at), "attempt", d->attempts + 1, "replica", h->replica);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    size_t len = strlen(text);
    char sig[ALERT_HOOK_SIGNATURE_LEN], hsig[ALERT_HOOK_SIGNATURE_LEN + 32], hid[96];
    alert_hook_sign(t->secret, text, len, sig);
    snprintf(hsig, sizeof hsig, "X-Sextant-Signature: %s", sig);
    snprintf(hid, sizeof hid, "X-Sextant-Delivery: %s", d->id);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, hsig);
    hdr = curl_slist_append(hdr, hid);
    hdr = curl_slist_append(hdr, "Expect:");
    char ua[64];
    snprintf(ua, sizeof ua, "sextant-alerts/1");
    long status = 0;
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *c = curl_easy_init();
    if (c == NULL) {
        snprintf(why, whylen, "could not create an HTTP handle");
    } else {
        curl_easy_setopt(c, CURLOPT_URL, t->url);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(c, CURLOPT_USERAGENT, ua);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)h->o.timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)h->o.timeout_ms);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
        CURLcode rc = curl_easy_perform(c);
        if (rc == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        else
            snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(hdr);
    free(text);
    if (status != 0 && (status < 200 || status > 299))
        snprintf(why, whylen, "answered %ld", status);
    return status;
}

static void *hook_thread(void *arg)
{
    alert_hook *h = arg;
    delivery *d;
    while ((d = take_due(h)) != NULL) {
        char why[CURL_ERROR_SIZE + 32] = "", origin[256];
        long status = post(h, d, why, sizeof why);
        pthread_mutex_lock(&h->mu);
        bool stopping = h->stopping;
        pthread_mutex_unlock(&h->mu);
        if (stopping && (status < 200 || status > 299)) {
            delivery_free(d); /* dropped with the rest at stop (see alerts_webhook.h) */
            break;
        }
        d->attempts++;
        config_webhook_origin(h->o.targets->items[d->target].url, origin, sizeof origin);
        if (status >= 200 && status <= 299) {
            count(h, "delivered");
            sx_log_fields(SX_LOG_DEBUG, COMPONENT,
                          json_pack("{s:s,s:s,s:i}", "delivery", d->id, "webhook", origin,
                                    "attempts", d->attempts),
                          "delivered alert to webhook");
            delivery_free(d);
        } else if (d->attempts <= h->o.retries) {
            count(h, "retried");
            long long wait =
                alert_hook_backoff_ms(d->attempts, h->o.backoff_min_ms, h->o.backoff_max_ms);
            sx_log_fields(SX_LOG_INFO, COMPONENT,
                          json_pack("{s:s,s:s,s:i,s:s,s:I}", "delivery", d->id, "webhook", origin,
                                    "attempt", d->attempts, "error", why, "retry_in_ms",
                                    (json_int_t)wait),
                          "alert webhook failed; retrying");
            put_back(h, d, wait);
        } else {
            count(h, "failed");
            sx_log_fields(SX_LOG_WARN, COMPONENT,
                          json_pack("{s:s,s:s,s:i,s:s}", "delivery", d->id, "webhook", origin,
                                    "attempts", d->attempts, "error", why),
                          "gave up delivering alert to webhook");
            delivery_free(d);
        }
    }
    return NULL;
}

sup_thread *alert_hook_component(alert_hook *h)
{
    return &h->thread;
}

void alert_hook_destroy(alert_hook *h)
{
    if (h == NULL)
        return;
    while (h->pending) {
        delivery *d = h->pending;
        h->pending = d->next;
        delivery_free(d);
    }
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    sx_free(h->replica);
    sx_free(h);
}
