/*
 * locked.h — one field read under the mutex that guards it: the consistent snapshot a
 * getter of shared state hands out (a count, a flag, a generation).
 */
#ifndef SX_BASE_LOCKED_H
#define SX_BASE_LOCKED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* *field as it is while mu is held (mu is taken and released; it must not be held by
 * the caller). */
size_t sx_locked_size(pthread_mutex_t *mu, const size_t *field);
bool sx_locked_bool(pthread_mutex_t *mu, const bool *field);
uint64_t sx_locked_u64(pthread_mutex_t *mu, const uint64_t *field);

#endif
