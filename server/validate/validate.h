/*
 * validate.h — the validation pipeline a config passes before it is saved.
 *
 * Stages, in order, each reporting every problem it finds with a path into the spec:
 *   schema      types, required fields, ranges, enums, hostnames, durations, regexes
 *               that compile (the JSON codec plus the checks it cannot do)
 *   semantic    every backend_ref names a backend; ports unique per address; no
 *               duplicate names
 *   dependency  referenced secrets exist, in this config or another of the same group
 *   security    certificates parse, are not expired, the key matches the certificate;
 *               policies from config (TLS on privileged ports, private endpoint IPs)
 *   quota       listeners/routes/backends/endpoints per config and per group
 *   conflict    another config of the same group claims the same listener address:port
 *               or the same hostname + path match (the problem names that config)
 *   traps       what real xDS clients accept and then fail on: localities without
 *               weight, backends with no endpoints in a route's path, virtual hosts that
 *               cannot match their listener, routes without an action
 * Later stages run even when earlier ones failed, as far as their input allows, so one
 * round trip returns every problem.
 */
#ifndef SX_VALIDATE_VALIDATE_H
#define SX_VALIDATE_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/ir/ir.h"

typedef enum val_stage {
    VAL_SCHEMA,
    VAL_SEMANTIC,
    VAL_DEPENDENCY,
    VAL_SECURITY,
    VAL_QUOTA,
    VAL_CONFLICT,
    VAL_TRAPS,
    VAL_STAGE_COUNT,
} val_stage;

/* "schema", "semantic", ... */
const char *val_stage_name(val_stage s);

/* Times every check of the pipeline into sextant_validation_duration_seconds{stage},
 * registered in r; NULL stops timing (before r is destroyed). Process-wide: call at
 * start and at the end. */
void val_metrics(sx_metrics *r);

typedef struct val_problem {
    val_stage stage;
    char *path;          /* "spec.backends[2].endpoints[0].port" */
    char *message;       /* lowercase, no trailing period */
    char *conflict_with; /* conflict stage: "namespace/name (id)" of the other config; else NULL */
    char *data_plane;    /* a feature a data plane cannot take: "envoy" or "grpc"; else NULL */
} val_problem;

typedef struct val_result {
    val_problem *items; /* owned */
    size_t count;
    size_t cap;
} val_result;

/* A document decoded once for a whole change (val_decode), read by the pipeline and then
 * by composition, which merges clean ones without decoding them again. */
typedef struct val_decoded {
    ir_snapshot *ir;   /* owned; never NULL after val_decode; partial when !clean */
    bool clean;        /* decoded and range-checked without a problem */
    sx_fielderrs errs; /* a config's codec problems, paths from "spec" (the schema stage's) */
} val_decoded;

/* Decodes spec once. A config (peer false) as the schema stage reads it: its problems in
 * errs, and as much of it as decodes in ir. A peer (peer true): as far as it goes, its
 * own problems dropped (they are not this config's). Free with val_decoded_free. */
void val_decode(const json_t *spec, bool peer, val_decoded *out);
void val_decoded_free(val_decoded *d);

/* Another live config of one of the same groups, as the pipeline sees it. */
typedef struct val_peer {
    const char *id;
    const char *ns;
    const char *name;
    const json_t *spec;
    const val_decoded *decoded; /* spec decoded by val_decode(spec, true); NULL: val_run
                                   decodes it */
} val_peer;

/* ---------------------------------------------------------------- data planes (val_planes.c) */

/* The kinds of data plane a proxy group serves, as bits: Envoy proxies, proxyless gRPC
 * clients (both over ADS, fed by the Envoy translator) and gateway.control.v1 clients. */
#define VAL_PLANE_ENVOY   1u
#define VAL_PLANE_GRPC    2u
#define VAL_PLANE_CONTROL 4u
#define VAL_PLANES_ALL    (VAL_PLANE_ENVOY | VAL_PLANE_GRPC | VAL_PLANE_CONTROL)
#define VAL_PLANES_ADS    (VAL_PLANE_ENVOY | VAL_PLANE_GRPC)

/* One group a config applies to and the data planes it serves (0: the default). */
typedef struct val_group_planes {
    const char *group;
    unsigned planes;
} val_group_planes;

/* "envoy", "grpc", "control" for one bit; "unknown" otherwise. */
const char *val_plane_name(unsigned plane);
/* The set names[0..n) names: 0, or -1 with the reason in why (unknown or repeated name,
 * or none at all). */
int val_planes_parse(const char *const *names, size_t n, unsigned *out, char *why, size_t whyn);
/* Likewise for "envoy, grpc" (the configuration key's form). */
int val_planes_parse_csv(const char *csv, unsigned *out, char *why, size_t whyn);
/* JSON array of the names in planes, in the order envoy, grpc, control; new reference. */
json_t *val_planes_json(unsigned planes);

/* A change of the data planes of group: appends to out (paths "spec.…", data_plane set)
 * what the config spec holds that planes cannot take; SX_EVALIDATION when it added
 * any, else 0. */
int val_planes_refusals(const json_t *spec, const char *group, unsigned planes, val_result *out);
/* Whether the n configs of a group, merged as composition merges them, translate for
 * the ADS data planes: 0, or the translator's SX_EVALIDATION and err. */
int val_planes_translate(const json_t *const *specs, size_t n, const char *group, sx_err *err);

typedef struct val_limits {
    long long config_listeners, config_routes, config_backends, config_endpoints;
    long long group_listeners, group_routes, group_backends, group_endpoints;
    bool tls_on_privileged_ports;
    bool refuse_private_endpoints;
    long long regex_max_program_size; /* RE2 program size limit of a regex; 0: Envoy's 100 */
    unsigned default_planes;          /* data planes of a group that chose none; 0: all */
    const val_group_planes *groups;   /* the config's groups and their data planes (borrowed);
                                         none: one group of default_planes */
    size_t ngroups;
} val_limits;

/*
 * Runs every stage on spec (a config's IR JSON; paths start at "spec"). peers are the
 * other live configs sharing a group with it (the config itself excluded). now_unix is
 * the time certificates are checked against. Fills out (free with val_result_free).
 * Returns 0 when nothing was found, SX_ECONFLICT when the only problems are conflicts,
 * SX_EVALIDATION otherwise.
 */
int val_run(const json_t *spec, const val_peer *peers, size_t npeers, const val_limits *limits,
            long long now_unix, val_result *out);
/* val_run on a config already decoded: decoded is val_decode(spec, false) (borrowed;
 * NULL: decoded here); its problems become schema problems. */
int val_run_decoded(const json_t *spec, const val_decoded *decoded, const val_peer *peers,
                    size_t npeers, const val_limits *limits, long long now_unix, val_result *out);

/* Checks a regular expression with RE2, the engine of Envoy and gRPC (val_regex.c): it
 * must compile to a program of at most max_program_size instructions (<= 0: Envoy's
 * default, 100). The check the schema stage makes, for producers of IR that must refuse a
 * pattern before it reaches validation (the Gateway API translator). Returns true when it
 * is acceptable; else false with the reason in why (n bytes). Linear in the pattern's
 * length, memory bounded by the limit. */
bool val_regex_check(const char *re, long long max_program_size, char *why, size_t n);

/* ---------------------------------------------------------------- proxy group names */

/* The longest proxy group name, in bytes. */
#define VAL_GROUP_NAME_MAX 253

/* Why name cannot name a proxy group (a lowercase phrase such as "must not be empty"),
 * or NULL when it can (val_groups.c). A group name is 1 to 253 bytes of ASCII letters,
 * digits and the characters - _ . : / and is neither "." nor "..": "edge",
 * "eu-west-1.canary", "shop/web" (the default group of the Kubernetes Gateway shop/web;
 * in a URL path its "/" is sent as %2F). */
const char *val_group_name_problem(const char *name);

/* Checks every entry of groups (n of them) with val_group_name_problem. Returns 0, or
 * SX_EVALIDATION with a schema-stage problem at "groups[i]" added to out (NULL allowed)
 * for each bad name and err saying how many (its detail names the first). */
int val_check_groups(const char *const *groups, size_t n, val_result *out, sx_err *err);

/* One group named by a request: 0, or SX_EINVAL "invalid proxy group name: <why>". */
int val_check_group_name(const char *group, sx_err *err);

/* The limits and policies of a configuration (limits.*, validation.*). */
val_limits val_limits_from_config(const sextant_config *cfg);

/* JSON array of {"stage","path","message"[,"conflict_with"]}; new reference. */
json_t *val_result_to_json(const val_result *r);
void val_result_free(val_result *r);

#endif
