/*
 * clock.c — monotonic milliseconds, monotonic condition deadlines and RFC 3339
 * timestamps.
 */
#include "server/base/clock.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

int64_t sx_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sx_monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void sx_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

void sx_cond_raise(pthread_mutex_t *mu, pthread_cond_t *cv, bool *flag)
{
    pthread_mutex_lock(mu);
    *flag = true;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
}

void sx_wake_init(sx_wake *w)
{
    pthread_mutex_init(&w->mu, NULL);
    sx_cond_init_monotonic(&w->cv);
    w->woken = w->stopping = false;
}

void sx_wake_destroy(sx_wake *w)
{
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

void sx_wake_raise(sx_wake *w, bool stop)
{
    sx_cond_raise(&w->mu, &w->cv, stop ? &w->stopping : &w->woken);
}

bool sx_wake_wait(sx_wake *w, const struct timespec *until, const struct timespec *gap)
{
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (!w->stopping && !w->woken && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, until);
    rc = 0;
    while (gap && !w->stopping && w->woken && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, gap);
    w->woken = false;
    bool go = !w->stopping;
    pthread_mutex_unlock(&w->mu);
    return go;
}

struct timespec sx_deadline_in(int64_t ms)
{
    if (ms < 0)
        ms = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int sx_backoff_next(int ms, int min_ms, int max_ms)
{
    if (ms == 0)
        return min_ms;
    return ms * 2 > max_ms ? max_ms : ms * 2;
}

char *sx_rfc3339_now(char out[SX_RFC3339_LEN])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, SX_RFC3339_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, SX_RFC3339_LEN - n, ".%03dZ", (int)(ts.tv_nsec / 1000000) % 1000);
    return out;
}
