/*
 * strategy.h — how a deployment splits its nodes into waves, and the rollout policy a
 * request may override (NACK threshold, minimum sample, wave timeout, health failures).
 *
 * Strategies, as the REST API takes them in "strategy":
 *   {"type": "all_at_once"}                                one wave
 *   {"type": "rolling", "wave_size": 5, "pause": "30s"}    waves of 5 nodes (the last may
 *   {"type": "rolling", "wave_percent": 25, "pause": "30s"} be smaller), or of 25% each
 *   {"type": "canary", "initial_percent": 10, "increment_percent": 20, "interval": "1m"}
 *                          10% of the nodes, then 20% more per wave until all are in
 *   {"type": "blue_green", "green": {"node_ids": [...], "labels": {...}},
 *    "promote_timeout": "30m", "on_timeout": "rollback"}
 *                          two waves: the nodes "green" picks (among the selected ones)
 *                          take the new snapshot while the rest (blue) keep theirs; once
 *                          green has ACKed the deployment holds until an operator promotes
 *                          it (POST .../promote) or promote_timeout passes, then every blue
 *                          node switches at once. on_timeout: "rollback" (default) or
 *                          "promote". promote_timeout defaults to 1h.
 * Percentages round up, so every wave has at least one node; pause/interval is the wait
 * after a wave completed before the next starts. Pure functions: no I/O.
 */
#ifndef SX_ROLLOUT_STRATEGY_H
#define SX_ROLLOUT_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/fielderr.h"

typedef enum rollout_kind {
    ROLLOUT_ALL_AT_ONCE = 0,
    ROLLOUT_ROLLING = 1,
    ROLLOUT_CANARY = 2,
    ROLLOUT_BLUE_GREEN = 3,
} rollout_kind;

/* Blue-green: what happens when nobody promotes within promote_timeout. */
typedef enum rollout_on_timeout {
    ROLLOUT_TIMEOUT_ROLLBACK = 0,
    ROLLOUT_TIMEOUT_PROMOTE = 1,
} rollout_on_timeout;

/* Blue-green: how long the deployment holds for an operator when not told. */
#define ROLLOUT_PROMOTE_TIMEOUT_DEFAULT_MS (3600LL * 1000)

typedef struct rollout_strategy {
    rollout_kind kind;
    long long wave_size;      /* rolling: nodes per wave; 0 = wave_percent */
    double wave_percent;      /* rolling: percent of the nodes per wave */
    double initial_percent;   /* canary: first wave */
    double increment_percent; /* canary: each later wave */
    long long pause_ms;       /* wait after a wave completed (pause / interval) */
    /* blue_green: the green selector (borrowed from the parsed JSON: {"node_ids": [...],
     * "labels": {...}}), the hold and what its end does; green_count is the number of
     * green nodes among the planned ones, set by the planner before rollout_wave_sizes. */
    const json_t *green;
    long long promote_timeout_ms;
    rollout_on_timeout on_timeout;
    size_t green_count;
} rollout_strategy;

/* Parses j ("strategy" of a request; NULL = all at once) into *out. Every problem is
 * added to errs with a path under "strategy"; returns the number of problems. */
size_t rollout_strategy_parse(const json_t *j, rollout_strategy *out, sx_fielderrs *errs);

/* The strategy as stored and returned: {"type", ...its parameters, "pause"/"interval"}. */
json_t *rollout_strategy_json(const rollout_strategy *s);

/* Reads the "pause" (rolling) or "interval" (canary) of a stored strategy, in ms. */
long long rollout_strategy_pause_ms(const json_t *stored);

/* Whether a stored strategy is blue_green. */
bool rollout_strategy_is_blue_green(const json_t *stored);
/* Reads "promote_timeout" (ms; the default when absent) and "on_timeout" of a stored
 * blue_green strategy. */
long long rollout_strategy_promote_timeout_ms(const json_t *stored);
rollout_on_timeout rollout_strategy_on_timeout(const json_t *stored);

/* The wave sizes for n nodes (n > 0): a new array in *sizes (free with free()); returns
 * the number of waves. Sizes add up to n; none is 0. blue_green: green_count nodes, then
 * the rest (one wave when either is 0: the planner refuses that). */
size_t rollout_wave_sizes(const rollout_strategy *s, size_t n, size_t **sizes);

/* Policy overrides of a request, defaults from the configuration. */
typedef struct rollout_policy {
    double nack_threshold; /* 0..1 */
    long long nack_min_sample;
    long long wave_timeout_ms;
    long long health_failures;
    bool promote;
} rollout_policy;

/* Reads "nack_threshold" (0..1), "nack_min_sample", "wave_timeout" (duration text),
 * "health_failures" and "promote" from the request body req into *p, which holds the
 * defaults on entry. Problems go to errs; returns their number. */
size_t rollout_policy_parse(const json_t *req, rollout_policy *p, sx_fielderrs *errs);

#endif
