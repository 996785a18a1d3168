/*
 * minute_ring.c — a counter's growth per minute over the last hour (see minute_ring.h).
 *
 * Design: slot = minute modulo 60; a slot whose stored minute is not the sampled one
 * is from an hour or more ago and starts again at 0.
 */
#include "server/base/minute_ring.h"

#include <stdio.h>

static int64_t minute_of(int64_t s)
{
    return s >= 0 ? s / 60 : (s - 59) / 60;
}

void sx_minute_ring_sample(sx_minute_ring *r, double total, int64_t now_s)
{
    double gained = total >= r->last_total ? total - r->last_total : total;
    r->last_total = total;
    if (gained <= 0)
        return;
    int64_t m = minute_of(now_s);
    int i = (int)(((m % SX_MINUTE_RING_SLOTS) + SX_MINUTE_RING_SLOTS) % SX_MINUTE_RING_SLOTS);
    if (r->minute[i] != m) {
        r->minute[i] = m;
        r->gained[i] = 0;
    }
    r->gained[i] += gained;
}

json_t *sx_minute_ring_json(const sx_minute_ring *r, int64_t now_s)
{
    json_t *o = json_object();
    int64_t now_m = minute_of(now_s);
    for (int i = 0; i < SX_MINUTE_RING_SLOTS; i++) {
        int64_t m = r->minute[i];
        if (r->gained[i] <= 0 || m > now_m || m <= now_m - SX_MINUTE_RING_SLOTS)
            continue;
        char key[24];
        snprintf(key, sizeof(key), "%lld", (long long)(m * 60));
        json_object_set_new(o, key, json_integer((json_int_t)r->gained[i]));
    }
    return o;
}
