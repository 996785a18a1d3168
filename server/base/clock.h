/*
 * clock.h — time as the rest of the code needs it: monotonic milliseconds for
 * deadlines and back-off, the condition variables threads wait on, the back-off steps
 * themselves, and RFC 3339 UTC text for logs, IR and APIs.
 */
#ifndef SX_BASE_CLOCK_H
#define SX_BASE_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* "2026-11-21T02:04:34.123Z" and its terminator fit in this many bytes. */
#define SX_RFC3339_LEN 32

/* Milliseconds on the monotonic clock (for intervals only). */
int64_t sx_monotonic_ms(void);
/* Microseconds on the monotonic clock (for short intervals: timings). */
int64_t sx_monotonic_us(void);
/* Initialises *cv so that its timed waits run on the monotonic clock (pair it
 * with sx_deadline_in). cv must not be NULL; destroy it with pthread_cond_destroy. */
void sx_cond_init_monotonic(pthread_cond_t *cv);
/* The monotonic instant ms milliseconds from now (a negative ms counts as 0),
 * as pthread_cond_timedwait takes it on a condition from sx_cond_init_monotonic. */
struct timespec sx_deadline_in(int64_t ms);
/* Sets *flag under mu and wakes every thread waiting on cv for it (to stop a worker,
 * say). */
void sx_cond_raise(pthread_mutex_t *mu, pthread_cond_t *cv, bool *flag);
/* What a worker thread waits on between two passes: mu guards woken (something to do
 * now) and stopping; cv, on the monotonic clock, is broadcast when either is raised. */
typedef struct sx_wake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool woken, stopping;
} sx_wake;
void sx_wake_init(sx_wake *w);
void sx_wake_destroy(sx_wake *w);
/* Raises stopping when stop, else woken, and wakes the worker. */
void sx_wake_raise(sx_wake *w, bool stop);
/* The worker's wait (mu not held): until woken or stopping is raised or the monotonic
 * deadline until. Once woken, with gap not NULL, it waits on until the gap deadline as
 * well (a stop still ends it at once). Clears woken; returns false when stopping. */
bool sx_wake_wait(sx_wake *w, const struct timespec *until, const struct timespec *gap);
/* The next delay of a doubling back-off: min_ms after none (ms == 0), else twice ms, at
 * most max_ms. */
int sx_backoff_next(int ms, int min_ms, int max_ms);
/* The current UTC time with milliseconds, as RFC 3339, into out. Returns out. */
char *sx_rfc3339_now(char out[SX_RFC3339_LEN]);

#endif
