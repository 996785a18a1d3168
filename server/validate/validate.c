/*
 * validate.c — the validation pipeline: decodes the config and its peers (or takes
 * them decoded, once for the whole change: val_decode), runs every stage in order, and
 * hands back every problem found.
 *
 * Each stage lives in its own val_*.c file and adds problems through val_add; a stage
 * never stops at the first problem and later stages run even when earlier ones failed,
 * on whatever part of the document decoded (see val_internal.h), so one round trip
 * returns everything. The translator check (val_translate.c) runs last, because it
 * must know what the other stages already said to avoid repeating it, but it belongs
 * to the semantic stage; the result is therefore put back in stage order at the end,
 * keeping the order of problems within a stage.
 */
#include "server/validate/validate.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/fielderr.h"
#include "server/base/mem.h"
#include "server/ir/pbjson.h"
#include "server/validate/val_internal.h"

static const char *const STAGE_NAMES[VAL_STAGE_COUNT] = {
    [VAL_SCHEMA] = "schema",     [VAL_SEMANTIC] = "semantic", [VAL_DEPENDENCY] = "dependency",
    [VAL_SECURITY] = "security", [VAL_QUOTA] = "quota",       [VAL_CONFLICT] = "conflict",
    [VAL_TRAPS] = "traps",
};

const char *val_stage_name(val_stage s)
{
    return (unsigned)s < VAL_STAGE_COUNT ? STAGE_NAMES[s] : "unknown";
}

/* ---------------------------------------------------------------- problems */

static void add(val_ctx *c, val_stage stage, const char *path, const char *with, const char *plane,
                const char *fmt, va_list ap)
{
    char msg[SX_ERR_MESSAGE_MAX];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n >= (int)sizeof msg) {
        /* Cut at a character boundary: the message goes into JSON, which needs UTF-8. */
        size_t len = strlen(msg);
        while (len > 0 && ((unsigned char)msg[len - 1] & 0xC0) == 0x80)
            len--;
        if (len > 0 && ((unsigned char)msg[len - 1] & 0x80))
            len--;
        msg[len] = '\0';
    }
    /* The same problem found twice (two routes to one broken backend ref, say) is
     * listed once; a value the codec could not decode is not judged again. */
    if (val_has(c, path, msg))
        return;
    for (size_t i = 0; stage == VAL_SCHEMA && i < c->out->count; i++)
        if (c->out->items[i].stage == VAL_SCHEMA && strcmp(c->out->items[i].path, path) == 0)
            return;
    val_result *r = c->out;
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->items = sx_realloc(r->items, r->cap * sizeof *r->items);
    }
    r->items[r->count++] = (val_problem){
        .stage = stage,
        .path = sx_strdup(path),
        .message = sx_strdup(msg),
        .conflict_with = with ? sx_strdup(with) : NULL,
        .data_plane = plane ? sx_strdup(plane) : NULL,
    };
}

void val_add(val_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(c, c->stage, path, NULL, NULL, fmt, ap);
    va_end(ap);
}

void val_add_plane(val_ctx *c, const char *path, const char *plane, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(c, c->stage, path, NULL, plane, fmt, ap);
    va_end(ap);
}

void val_add_conflict(val_ctx *c, const char *path, const char *with, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(c, VAL_CONFLICT, path, with, NULL, fmt, ap);
    va_end(ap);
}

const char *val_path(char buf[VAL_PATH_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, VAL_PATH_MAX, fmt, ap);
    va_end(ap);
    return buf;
}

bool val_has(const val_ctx *c, const char *path, const char *message)
{
    for (size_t i = 0; i < c->out->count; i++)
        if (strcmp(c->out->items[i].path, path) == 0 &&
            strcmp(c->out->items[i].message, message) == 0)
            return true;
    return false;
}

const char *val_doc_label(const val_ctx *c, size_t doc, char *buf, size_t n)
{
    if (doc == 0)
        snprintf(buf, n, "this config");
    else
        snprintf(buf, n, "config %s", c->docs[doc].ref);
    return buf;
}

/* ---------------------------------------------------------------- documents */

void val_decode(const json_t *spec, bool peer, val_decoded *out)
{
    memset(out, 0, sizeof *out);
    ProtobufCMessage *m = NULL;
    if (peer) {
        sx_fielderrs errs = {0};
        int rc = pbjson_decode_partial(&gateway__control__v1__config_snapshot__descriptor, spec,
                                       NULL, &m, &errs);
        out->clean = rc == 0 && errs.count == 0;
        /* The range rules too: a peer the translator check merges must be whole. */
        if (out->clean)
            out->clean = ir_snapshot_check((const ir_snapshot *)m, NULL, &errs) == 0;
        sx_fielderrs_free(&errs);
    } else {
        ir_snapshot *ir = NULL;
        if (ir_snapshot_from_json(spec, "spec", &ir, &out->errs) == 0) {
            out->ir = ir;
            out->clean = true;
            return;
        }
        /* Again, keeping what decoded, so that the later stages see as much as they can. */
        sx_fielderrs errs = {0};
        int rc = pbjson_decode_partial(&gateway__control__v1__config_snapshot__descriptor, spec,
                                       "spec", &m, &errs);
        (void)rc;
        sx_fielderrs_free(&errs);
    }
    out->ir = (ir_snapshot *)m;
    if (out->ir == NULL) {
        out->ir = sx_malloc(sizeof *out->ir);
        gateway__control__v1__config_snapshot__init(out->ir);
        out->clean = false;
    }
}

void val_decoded_free(val_decoded *d)
{
    if (d == NULL)
        return;
    ir_snapshot_free(d->ir);
    sx_fielderrs_free(&d->errs);
    memset(d, 0, sizeof *d);
}

/* Takes the document's decoded form (borrowed: *own is false) or decodes it here. */
static void take_doc(val_doc *d, const val_decoded *given, const json_t *spec, bool peer,
                     val_decoded *local, bool *own)
{
    *own = given == NULL;
    if (given == NULL) {
        val_decode(spec, peer, local);
        given = local;
    }
    d->ir = given->ir;
    d->clean = given->clean;
}

/* The config: the schema stage's base. Its codec errors are schema problems. */
static void decode_config(val_ctx *c, const json_t *spec, const val_decoded *given, bool *own)
{
    val_decoded local;
    take_doc(&c->docs[0], given, spec, false, &local, own);
    const sx_fielderrs *errs = given ? &given->errs : &local.errs;
    for (size_t i = 0; i < errs->count; i++)
        val_add(c, errs->items[i].path[0] ? errs->items[i].path : "spec", "%s",
                errs->items[i].message);
    if (*own)
        sx_fielderrs_free(&local.errs);
}

static void decode_peer(val_doc *d, bool *own)
{
    val_decoded local;
    take_doc(d, d->peer->decoded, d->peer->spec, true, &local, own);
    d->ref =
        sx_asprintf("%s/%s (%s)", VAL_S(d->peer->ns), VAL_S(d->peer->name), VAL_S(d->peer->id));
}

static void ensure_ir(val_doc *d)
{
    if (d->ir == NULL) {
        d->ir = sx_malloc(sizeof *d->ir);
        gateway__control__v1__config_snapshot__init(d->ir);
        d->clean = false;
    }
}

static void free_docs(val_ctx *c, const bool *own)
{
    for (size_t i = 0; i < c->ndocs; i++) {
        if (own[i])
            ir_snapshot_free(c->docs[i].ir);
        sx_free(c->docs[i].ref);
    }
    sx_free(c->docs);
}

/* Puts the problems in stage order, keeping their order within a stage. */
static void order_by_stage(val_result *r)
{
    if (r->count < 2)
        return;
    val_problem *v = sx_malloc(r->count * sizeof *v);
    size_t k = 0;
    for (int s = 0; s < VAL_STAGE_COUNT; s++)
        for (size_t i = 0; i < r->count; i++)
            if ((int)r->items[i].stage == s)
                v[k++] = r->items[i];
    sx_free(r->items);
    r->items = v;
    r->cap = r->count;
}

/* ---------------------------------------------------------------- the pipeline */

/* The checks in the order they run, each with the stage its problems belong to. The
 * translation check runs last, as it reports only what no other check said, but its
 * problems are semantic ones. */
static const struct {
    val_stage stage;
    void (*run)(val_ctx *c);
    const char *name; /* the label of sextant_validation_duration_seconds{stage} */
} STAGES[] = {
    {VAL_SCHEMA, val_schema, "schema"},
    {VAL_SEMANTIC, val_semantic, "semantic"},
    {VAL_DEPENDENCY, val_dependency, "dependency"},
    {VAL_SECURITY, val_security, "security"},
    {VAL_QUOTA, val_quota, "quota"},
    {VAL_CONFLICT, val_conflict, "conflict"},
    {VAL_TRAPS, val_traps, "traps"},
    {VAL_SEMANTIC, val_planes_check, "data_planes"},
    {VAL_SEMANTIC, val_translate_check, "translate"},
};

/* Checks take microseconds for a small config, seconds for thousands of routes. */
static const double STAGE_BOUNDS[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
static _Atomic(sx_metric *) m_stage_seconds;

void val_metrics(sx_metrics *r)
{
    atomic_store(&m_stage_seconds,
                 r ? sx_metrics_histogram(r, "sextant_validation_duration_seconds",
                                          "Time each check of the validation pipeline takes, by "
                                          "check (schema, semantic, dependency, security, quota, "
                                          "conflict, traps, data_planes, translate).",
                                          "stage", STAGE_BOUNDS,
                                          sizeof STAGE_BOUNDS / sizeof STAGE_BOUNDS[0])
                   : NULL);
}

int val_run(const json_t *spec, const val_peer *peers, size_t npeers, const val_limits *limits,
            long long now_unix, val_result *out)
{
    return val_run_decoded(spec, NULL, peers, npeers, limits, now_unix, out);
}

int val_run_decoded(const json_t *spec, const val_decoded *decoded, const val_peer *peers,
                    size_t npeers, const val_limits *limits, long long now_unix, val_result *out)
{
    memset(out, 0, sizeof *out);
    val_ctx c = {.ndocs = npeers + 1, .now = now_unix, .out = out};
    if (limits)
        c.limits = *limits;
    c.docs = sx_calloc(c.ndocs, sizeof *c.docs);
    bool *own = sx_calloc(c.ndocs, sizeof *own);

    c.stage = VAL_SCHEMA;
    decode_config(&c, spec, decoded, &own[0]);
    ensure_ir(&c.docs[0]);
    for (size_t i = 0; i < npeers; i++) {
        c.docs[i + 1].peer = &peers[i];
        decode_peer(&c.docs[i + 1], &own[i + 1]);
        ensure_ir(&c.docs[i + 1]);
    }
    val_names_build(&c);

    sx_metric *timed = atomic_load(&m_stage_seconds);
    for (size_t i = 0; i < sizeof STAGES / sizeof STAGES[0]; i++) {
        c.stage = STAGES[i].stage;
        int64_t t0 = timed ? sx_monotonic_us() : 0;
        STAGES[i].run(&c);
        if (timed)
            sx_metric_observe(timed, (const char *[]){STAGES[i].name},
                              (double)(sx_monotonic_us() - t0) / 1e6);
    }
    order_by_stage(out);

    val_names_free(&c);
    free_docs(&c, own);
    sx_free(own);

    if (out->count == 0)
        return 0;
    for (size_t i = 0; i < out->count; i++)
        if (out->items[i].stage != VAL_CONFLICT)
            return SX_EVALIDATION;
    return SX_ECONFLICT;
}

json_t *val_result_to_json(const val_result *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const val_problem *p = &r->items[i];
        json_t *o = json_object();
        json_object_set_new(o, "stage", json_string(val_stage_name(p->stage)));
        json_object_set_new(o, "path", json_string(p->path));
        json_object_set_new(o, "message", json_string(p->message));
        if (p->conflict_with)
            json_object_set_new(o, "conflict_with", json_string(p->conflict_with));
        if (p->data_plane)
            json_object_set_new(o, "data_plane", json_string(p->data_plane));
        json_array_append_new(a, o);
    }
    return a;
}

void val_result_free(val_result *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->count; i++) {
        sx_free(r->items[i].path);
        sx_free(r->items[i].message);
        sx_free(r->items[i].conflict_with);
        sx_free(r->items[i].data_plane);
    }
    sx_free(r->items);
    memset(r, 0, sizeof *r);
}

val_limits val_limits_from_config(const sextant_config *c)
{
    val_limits l = {
        .config_listeners = c->limits.config.max_listeners,
        .config_routes = c->limits.config.max_routes,
        .config_backends = c->limits.config.max_backends,
        .config_endpoints = c->limits.config.max_endpoints,
        .group_listeners = c->limits.group.max_listeners,
        .group_routes = c->limits.group.max_routes,
        .group_backends = c->limits.group.max_backends,
        .group_endpoints = c->limits.group.max_endpoints,
        .tls_on_privileged_ports = c->validation.tls_on_privileged_ports,
        .refuse_private_endpoints = c->validation.refuse_private_endpoints,
        .regex_max_program_size = c->validation.regex_max_program_size,
        .default_planes = c->groups.default_planes,
    };
    return l;
}
