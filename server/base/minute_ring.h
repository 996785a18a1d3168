/*
 * minute_ring.h — how much a counter grew in each of the last 60 minutes, kept in
 * memory: the replica's own history of a metric (sextant_xds_pushes_total) that it
 * reports with its heartbeat, so that any replica's API can show the fleet's last hour
 * without an external Prometheus.
 *
 * The owner samples the counter's total from time to time; each sample adds what the
 * counter gained since the previous one to the minute (of the wall clock) the sample
 * falls in. A counter gained between two samples across a minute boundary counts in
 * the later minute: the sampling period bounds that slip. Not thread-safe: one owner
 * samples and reads.
 */
#ifndef SX_BASE_MINUTE_RING_H
#define SX_BASE_MINUTE_RING_H

#include <jansson.h>
#include <stdint.h>

#define SX_MINUTE_RING_SLOTS 60

typedef struct sx_minute_ring {
    int64_t minute[SX_MINUTE_RING_SLOTS]; /* minute (epoch seconds / 60) a slot holds */
    double gained[SX_MINUTE_RING_SLOTS];  /* what the counter gained in that minute */
    double last_total;                    /* the counter at the previous sample */
} sx_minute_ring;

/* Records a sample: the counter's total now (a counter starts at 0, as the ring does;
 * a total below the previous one is a reset and counts from 0), at now_s (epoch
 * seconds). */
void sx_minute_ring_sample(sx_minute_ring *r, double total, int64_t now_s);

/* The minutes of the last hour before now_s (inclusive) in which the counter gained,
 * as a new JSON object {"<minute start, epoch seconds>": gained, ...}; minutes with
 * nothing are left out. */
json_t *sx_minute_ring_json(const sx_minute_ring *r, int64_t now_s);

#endif
