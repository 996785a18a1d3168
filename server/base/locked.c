/*
 * locked.c — reads of one field under its mutex.
 */
#include "server/base/locked.h"

#include <string.h>

/* Copies size bytes of field into out while holding mu. */
static void read_locked(pthread_mutex_t *mu, void *out, const void *field, size_t size)
{
    pthread_mutex_lock(mu);
    memcpy(out, field, size);
    pthread_mutex_unlock(mu);
}

size_t sx_locked_size(pthread_mutex_t *mu, const size_t *field)
{
    size_t v;
    read_locked(mu, &v, field, sizeof v);
    return v;
}

bool sx_locked_bool(pthread_mutex_t *mu, const bool *field)
{
    bool v;
    read_locked(mu, &v, field, sizeof v);
    return v;
}

uint64_t sx_locked_u64(pthread_mutex_t *mu, const uint64_t *field)
{
    uint64_t v;
    read_locked(mu, &v, field, sizeof v);
    return v;
}
