/*
 * strategy.c — wave plans and rollout policy from request JSON (see strategy.h).
 */
#include "server/rollout/strategy.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"

static const char *const kind_names[] = {"all_at_once", "rolling", "canary", "blue_green"};

static bool known_key(const char *key, const char *const *allowed)
{
    for (size_t i = 0; allowed[i]; i++)
        if (strcmp(key, allowed[i]) == 0)
            return true;
    return false;
}

/* A percentage in (0, 100]; adds a problem otherwise. */
static bool percent(const json_t *o, const char *key, double *out, sx_fielderrs *errs)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL) {
        sx_fielderrs_add(errs, key, "is required");
        return false;
    }
    if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 100) {
        sx_fielderrs_add(errs, key, "must be a number above 0 and at most 100");
        return false;
    }
    *out = json_number_value(v);
    return true;
}

static bool duration(const json_t *o, const char *key, long long *out, sx_fielderrs *errs)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL)
        return true;
    char why[160];
    int64_t ms = 0;
    if (!json_is_string(v) ||
        config_parse_duration(json_string_value(v), &ms, why, sizeof(why)) != 0) {
        sx_fielderrs_add(errs, key, "must be a duration such as \"30s\" or \"2m\"");
        return false;
    }
    if (ms > 24LL * 3600 * 1000) {
        sx_fielderrs_add(errs, key, "must be at most 24h");
        return false;
    }
    *out = ms;
    return true;
}

/* The green selector: an object with "node_ids" (non-empty strings) and/or "labels" (an
 * object of strings), at least one of them non-empty. */
static void parse_green(const json_t *g, sx_fielderrs *errs)
{
    if (g == NULL) {
        sx_fielderrs_add(errs, "green", "is required: the nodes that take the new version first");
        return;
    }
    if (!json_is_object(g)) {
        sx_fielderrs_add(errs, "green", "must be an object with \"node_ids\" and/or \"labels\"");
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)g, key, v)
    {
        if (strcmp(key, "node_ids") != 0 && strcmp(key, "labels") != 0)
            sx_fielderrs_add(errs, "green", "%s is not a green selector field (node_ids, labels)",
                             key);
    }
    const json_t *ids = json_object_get(g, "node_ids"), *labels = json_object_get(g, "labels");
    if (ids && !json_is_array(ids)) {
        sx_fielderrs_add(errs, "green.node_ids", "must be an array of node ids");
    } else if (ids) {
        size_t i;
        json_array_foreach(ids, i, v)
        {
            if (!json_is_string(v) || json_string_length(v) == 0) {
                char path[64];
                snprintf(path, sizeof(path), "green.node_ids[%zu]", i);
                sx_fielderrs_add(errs, path, "must be a non-empty string");
            }
        }
    }
    if (labels) {
        bool ok = json_is_object(labels);
        json_object_foreach((json_t *)labels, key, v) ok = ok && json_is_string(v);
        if (!ok)
            sx_fielderrs_add(errs, "green.labels", "must be an object of strings");
    }
    if (json_array_size(ids) == 0 && json_object_size(labels) == 0)
        sx_fielderrs_add(errs, "green",
                         "must pick nodes: give a non-empty \"node_ids\" or \"labels\"");
}

static void parse_blue_green(const json_t *j, rollout_strategy *out, sx_fielderrs *errs)
{
    size_t before = errs->count;
    parse_green(json_object_get(j, "green"), errs);
    if (errs->count == before)
        out->green = json_object_get(j, "green");
    out->promote_timeout_ms = ROLLOUT_PROMOTE_TIMEOUT_DEFAULT_MS;
    const json_t *t = json_object_get(j, "promote_timeout");
    if (duration(j, "promote_timeout", &out->promote_timeout_ms, errs) && t &&
        out->promote_timeout_ms < 1000)
        sx_fielderrs_add(errs, "promote_timeout", "must be at least 1s");
    const json_t *on = json_object_get(j, "on_timeout");
    const char *ons = json_string_value(on);
    if (on == NULL || (ons && strcmp(ons, "rollback") == 0))
        out->on_timeout = ROLLOUT_TIMEOUT_ROLLBACK;
    else if (ons && strcmp(ons, "promote") == 0)
        out->on_timeout = ROLLOUT_TIMEOUT_PROMOTE;
    else
        sx_fielderrs_add(errs, "on_timeout", "must be \"rollback\" or \"promote\"");
}

size_t rollout_strategy_parse(const json_t *j, rollout_strategy *out, sx_fielderrs *in_errs)
{
    memset(out, 0, sizeof(*out));
    sx_fielderrs errs = {0};
    if (j == NULL || json_is_null(j)) {
        out->kind = ROLLOUT_ALL_AT_ONCE;
        return 0;
    }
    if (!json_is_object(j)) {
        sx_fielderrs_add(in_errs, "strategy", "must be an object with a \"type\"");
        return 1;
    }
    const char *type = json_string_value(json_object_get(j, "type"));
    int kind = -1;
    for (int i = 0; type && i < 4; i++)
        if (strcmp(type, kind_names[i]) == 0)
            kind = i;
    if (kind < 0) {
        sx_fielderrs_add(in_errs, "strategy.type",
                         "must be \"all_at_once\", \"rolling\", \"canary\" or \"blue_green\"");
        return 1;
    }
    out->kind = (rollout_kind)kind;
    static const char *const all_keys[] = {"type", NULL};
    static const char *const rolling_keys[] = {"type", "wave_size", "wave_percent", "pause", NULL};
    static const char *const canary_keys[] = {"type", "initial_percent", "increment_percent",
                                              "interval", NULL};
    static const char *const blue_green_keys[] = {"type", "green", "promote_timeout", "on_timeout",
                                                  NULL};
    const char *const *allowed = kind == ROLLOUT_ROLLING      ? rolling_keys
                                 : kind == ROLLOUT_CANARY     ? canary_keys
                                 : kind == ROLLOUT_BLUE_GREEN ? blue_green_keys
                                                              : all_keys;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)j, key, v)
    {
        if (!known_key(key, allowed))
            sx_fielderrs_add(&errs, key, "is not a parameter of the %s strategy", type);
    }
    if (kind == ROLLOUT_ROLLING) {
        const json_t *size = json_object_get(j, "wave_size");
        const json_t *pct = json_object_get(j, "wave_percent");
        if ((size == NULL) == (pct == NULL))
            sx_fielderrs_add(&errs, "wave_size", "give exactly one of wave_size and wave_percent");
        else if (size && (!json_is_integer(size) || json_integer_value(size) < 1 ||
                          json_integer_value(size) > 1000000))
            sx_fielderrs_add(&errs, "wave_size", "must be an integer from 1 to 1000000");
        else if (size)
            out->wave_size = (long long)json_integer_value(size);
        else
            percent(j, "wave_percent", &out->wave_percent, &errs);
        duration(j, "pause", &out->pause_ms, &errs);
    } else if (kind == ROLLOUT_CANARY) {
        percent(j, "initial_percent", &out->initial_percent, &errs);
        percent(j, "increment_percent", &out->increment_percent, &errs);
        duration(j, "interval", &out->pause_ms, &errs);
    } else if (kind == ROLLOUT_BLUE_GREEN) {
        parse_blue_green(j, out, &errs);
    }
    size_t n = errs.count;
    for (size_t i = 0; i < errs.count; i++) {
        char path[300];
        snprintf(path, sizeof(path), "strategy.%s", errs.items[i].path);
        sx_fielderrs_add(in_errs, path, "%s", errs.items[i].message);
    }
    sx_fielderrs_free(&errs);
    return n;
}

json_t *rollout_strategy_json(const rollout_strategy *s)
{
    char d[32];
    config_format_duration(s->pause_ms, d, sizeof(d));
    switch (s->kind) {
    case ROLLOUT_ROLLING:
        if (s->wave_size > 0)
            return json_pack("{s:s,s:I,s:s}", "type", "rolling", "wave_size",
                             (json_int_t)s->wave_size, "pause", d);
        return json_pack("{s:s,s:f,s:s}", "type", "rolling", "wave_percent", s->wave_percent,
                         "pause", d);
    case ROLLOUT_CANARY:
        return json_pack("{s:s,s:f,s:f,s:s}", "type", "canary", "initial_percent",
                         s->initial_percent, "increment_percent", s->increment_percent, "interval",
                         d);
    case ROLLOUT_BLUE_GREEN: {
        char t[32];
        config_format_duration(s->promote_timeout_ms, t, sizeof(t));
        return json_pack("{s:s,s:o,s:s,s:s}", "type", "blue_green", "green",
                         s->green ? json_deep_copy(s->green) : json_object(), "promote_timeout", t,
                         "on_timeout",
                         s->on_timeout == ROLLOUT_TIMEOUT_PROMOTE ? "promote" : "rollback");
    }
    default:
        return json_pack("{s:s}", "type", "all_at_once");
    }
}

bool rollout_strategy_is_blue_green(const json_t *stored)
{
    const char *t = json_string_value(json_object_get(stored, "type"));
    return t && strcmp(t, "blue_green") == 0;
}

long long rollout_strategy_promote_timeout_ms(const json_t *stored)
{
    const json_t *v = json_object_get(stored, "promote_timeout");
    int64_t ms = 0;
    char why[64];
    if (!json_is_string(v) || config_parse_duration(json_string_value(v), &ms, why, sizeof(why)))
        return ROLLOUT_PROMOTE_TIMEOUT_DEFAULT_MS;
    return ms;
}

rollout_on_timeout rollout_strategy_on_timeout(const json_t *stored)
{
    const char *v = json_string_value(json_object_get(stored, "on_timeout"));
    return v && strcmp(v, "promote") == 0 ? ROLLOUT_TIMEOUT_PROMOTE : ROLLOUT_TIMEOUT_ROLLBACK;
}

long long rollout_strategy_pause_ms(const json_t *stored)
{
    const json_t *v = json_object_get(stored, "pause");
    if (v == NULL)
        v = json_object_get(stored, "interval");
    int64_t ms = 0;
    char why[64];
    if (!json_is_string(v) || config_parse_duration(json_string_value(v), &ms, why, sizeof(why)))
        return 0;
    return ms;
}

/* ceil(n * pct / 100), at least 1. Percentages are rounded to 1e-9 first so that 10%
 * of 10 is 1, not 2. */
static size_t share(size_t n, double pct)
{
    double x = (double)n * pct / 100.0;
    double r = floor(x * 1e9 + 0.5) / 1e9;
    size_t k = (size_t)ceil(r);
    return k < 1 ? 1 : k;
}

size_t rollout_wave_sizes(const rollout_strategy *s, size_t n, size_t **sizes)
{
    *sizes = NULL;
    if (n == 0)
        return 0;
    size_t *v = calloc(n, sizeof(*v));
    if (v == NULL)
        abort();
    size_t count = 0, done = 0;
    switch (s->kind) {
    case ROLLOUT_ROLLING: {
        size_t step = s->wave_size > 0 ? (size_t)s->wave_size : share(n, s->wave_percent);
        while (done < n) {
            size_t k = n - done < step ? n - done : step;
            v[count++] = k;
            done += k;
        }
        break;
    }
    case ROLLOUT_CANARY: {
        double pct = s->initial_percent;
        while (done < n) {
            size_t upto = pct >= 100 ? n : share(n, pct);
            if (upto > n)
                upto = n;
            if (upto > done) {
                v[count++] = upto - done;
                done = upto;
            }
            pct += s->increment_percent;
        }
        break;
    }
    case ROLLOUT_BLUE_GREEN:
        if (s->green_count > 0 && s->green_count < n) {
            v[count++] = s->green_count;
            v[count++] = n - s->green_count;
        } else {
            v[count++] = n;
        }
        break;
    default:
        v[count++] = n;
        break;
    }
    *sizes = v;
    return count;
}

size_t rollout_policy_parse(const json_t *req, rollout_policy *p, sx_fielderrs *errs)
{
    size_t before = errs->count;
    const json_t *v;
    if ((v = json_object_get(req, "nack_threshold")) != NULL) {
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
            sx_fielderrs_add(errs, "nack_threshold", "must be a number from 0 to 1 (0.05 = 5%%)");
        else
            p->nack_threshold = json_number_value(v);
    }
    if ((v = json_object_get(req, "nack_min_sample")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
            sx_fielderrs_add(errs, "nack_min_sample", "must be an integer from 0 to 1000000");
        else
            p->nack_min_sample = (long long)json_integer_value(v);
    }
    if ((v = json_object_get(req, "health_failures")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
            sx_fielderrs_add(errs, "health_failures", "must be an integer from 1 to 1000000");
        else
            p->health_failures = (long long)json_integer_value(v);
    }
    if ((v = json_object_get(req, "promote")) != NULL) {
        if (!json_is_boolean(v))
            sx_fielderrs_add(errs, "promote", "must be true or false");
        else
            p->promote = json_is_true(v);
    }
    if ((v = json_object_get(req, "wave_timeout")) != NULL) {
        int64_t ms = 0;
        char why[160];
        if (!json_is_string(v) ||
            config_parse_duration(json_string_value(v), &ms, why, sizeof(why)) != 0 || ms < 1000 ||
            ms > 24LL * 3600 * 1000)
            sx_fielderrs_add(errs, "wave_timeout",
                             "must be a duration from 1s to 24h, such as "
                             "\"10m\"");
        else
            p->wave_timeout_ms = ms;
    }
    return errs->count - before;
}
