/*
 * gw_fixture.h — Kubernetes object fixtures for the Gateway API translator tests: YAML
 * files of one or more documents (as kubectl applies them) read into jansson objects,
 * and an input holding them by kind.
 *
 * Scalars follow YAML 1.2's core schema as Kubernetes reads it: a plain null, ~ or
 * empty value is null, true/false are booleans, plain integers are integers, anything
 * quoted or else is a string. Fixtures live in tests/k8s/fixtures/ (found through
 * SEXTANT_SOURCE_DIR, which ctest sets), so the end-to-end tests can apply the same
 * files to an API server.
 */
#ifndef SX_TESTS_GW_FIXTURE_H
#define SX_TESTS_GW_FIXTURE_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "server/ir/ir.h"
#include "server/k8s/gw.h"
#include "server/validate/validate.h"
#include "tests/lib/testlib.h"

/* 2027-01-01T00:00:00Z: the translation's time (the fixture certificates are valid then,
 * but for the expired one). */
#define FX_NOW        1798761600LL
#define FX_NOW_TEXT   "2027-01-01T00:00:00Z"
#define FX_CONTROLLER "sextant.dev/gateway-controller"
#define FX_NS         "gateway-conformance-infra"

static inline json_t *fx_node(yaml_document_t *doc, yaml_node_t *n);

static inline json_t *fx_scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(v, len);
    if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0)
        return json_null();
    if (strcmp(v, "true") == 0)
        return json_true();
    if (strcmp(v, "false") == 0)
        return json_false();
    size_t i = v[0] == '-' ? 1 : 0;
    bool digits = i < len;
    for (size_t k = i; k < len; k++)
        digits = digits && isdigit((unsigned char)v[k]);
    if (digits && len < 19)
        return json_integer(strtoll(v, NULL, 10));
    return json_stringn(v, len);
}

static inline json_t *fx_node(yaml_document_t *doc, yaml_node_t *n)
{
    if (n == NULL)
        return json_null();
    if (n->type == YAML_SCALAR_NODE)
        return fx_scalar(n);
    if (n->type == YAML_SEQUENCE_NODE) {
        json_t *a = json_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++)
            json_array_append_new(a, fx_node(doc, yaml_document_get_node(doc, *it)));
        return a;
    }
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k == NULL || k->type != YAML_SCALAR_NODE)
            fail_msg("fixture: a mapping key is not a scalar");
        json_object_set_new(o, (const char *)k->data.scalar.value,
                            fx_node(doc, yaml_document_get_node(doc, p->value)));
    }
    return o;
}

/* Every document of tests/k8s/fixtures/<name> appended to objects. */
static inline void fx_load(const char *name, json_t *objects)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/k8s/fixtures/%s", tl_env("SEXTANT_SOURCE_DIR"), name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("fixture %s: cannot open", path);
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc))
            fail_msg("fixture %s: %s at line %zu", path, parser.problem ? parser.problem : "?",
                     parser.problem_mark.line + 1);
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root == NULL) {
            yaml_document_delete(&doc);
            break;
        }
        json_t *o = fx_node(&doc, root);
        if (json_is_object(o))
            json_array_append_new(objects, o);
        else
            json_decref(o);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
}

/* The gw_kind of a Kubernetes kind name, or GW_KIND_COUNT. */
static inline gw_kind fx_kind(const char *kind)
{
    for (int k = 0; k < GW_KIND_COUNT; k++)
        if (kind && strcmp(gw_kind_name((gw_kind)k), kind) == 0)
            return (gw_kind)k;
    return GW_KIND_COUNT;
}

/* An input over objects (borrowed; they must outlive it), grouped by kind in the
 * order given. Free with fx_input_free. */
typedef struct fx_input {
    gw_input in;
    const json_t **items[GW_KIND_COUNT];
} fx_input;

static inline void fx_input_init(fx_input *x, const json_t *objects, int64_t now)
{
    memset(x, 0, sizeof *x);
    x->in.now = now;
    size_t n = json_array_size(objects);
    for (int k = 0; k < GW_KIND_COUNT; k++)
        x->items[k] = calloc(n + 1, sizeof *x->items[k]);
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(objects, i);
        gw_kind k = fx_kind(json_string_value(json_object_get(o, "kind")));
        if (k == GW_KIND_COUNT)
            continue;
        x->items[k][x->in.objects[k].count++] = o;
    }
    for (int k = 0; k < GW_KIND_COUNT; k++)
        x->in.objects[k].items = x->items[k];
}

static inline void fx_input_free(fx_input *x)
{
    for (int k = 0; k < GW_KIND_COUNT; k++)
        free(x->items[k]);
}

/* ---------------------------------------------------------------- scenarios */

/* One translation of base.yaml plus the named fixtures. */
typedef struct fx_run {
    json_t *objects;
    fx_input x;
    gw_output out;
} fx_run;

/* Loads base.yaml and the fixtures (a NULL-terminated list), translates at FX_NOW with
 * opts (NULL: defaults, with the address 192.0.2.10) and checks it succeeded. */
static inline void fx_translate(fx_run *r, const char *const *files, const gw_options *opts)
{
    memset(r, 0, sizeof *r);
    r->objects = json_array();
    fx_load("base.yaml", r->objects);
    for (size_t i = 0; files && files[i]; i++)
        fx_load(files[i], r->objects);
    fx_input_init(&r->x, r->objects, FX_NOW);
    static const char *const addrs[] = {"192.0.2.10"};
    if (opts)
        r->x.in.options = *opts;
    else
        r->x.in.options = (gw_options){.gateway_addresses = addrs, .n_gateway_addresses = 1};
    sx_err err;
    sx_err_clear(&err);
    int rc = gw_translate(&r->x.in, &r->out, &err);
    if (rc != 0)
        tl_fail_err("gw_translate", rc, &err);
}

static inline void fx_run_free(fx_run *r)
{
    gw_output_free(&r->out);
    fx_input_free(&r->x);
    json_decref(r->objects);
}

/* The output of Gateway ns/name; fails the test when there is none. */
static inline const gw_gateway_out *fx_gateway(const fx_run *r, const char *ns, const char *name)
{
    for (size_t i = 0; i < r->out.n_gateways; i++)
        if (strcmp(r->out.gateways[i].ns, ns) == 0 && strcmp(r->out.gateways[i].name, name) == 0)
            return &r->out.gateways[i];
    fail_msg("no output for Gateway %s/%s", ns, name);
    return NULL;
}

static inline void fx_expect_valid(const json_t *spec);

/* fx_gateway, failing the test unless its spec is valid (fx_expect_valid). */
static inline const gw_gateway_out *fx_valid_gateway(const fx_run *r, const char *ns,
                                                     const char *name)
{
    const gw_gateway_out *g = fx_gateway(r, ns, name);
    fx_expect_valid(g->spec);
    return g;
}

/* The status written for the object, or NULL. */
static inline const gw_status_out *fx_status_entry(const fx_run *r, gw_kind kind, const char *ns,
                                                   const char *name)
{
    for (size_t i = 0; i < r->out.n_statuses; i++) {
        const gw_status_out *s = &r->out.statuses[i];
        if (s->kind == kind && strcmp(s->name, name) == 0 &&
            ((ns == NULL && s->ns == NULL) || (ns && s->ns && strcmp(s->ns, ns) == 0)))
            return s;
    }
    return NULL;
}

static inline const json_t *fx_status(const fx_run *r, gw_kind kind, const char *ns,
                                      const char *name)
{
    const gw_status_out *s = fx_status_entry(r, kind, ns, name);
    if (s == NULL)
        fail_msg("no status for %s %s/%s", gw_kind_name(kind), ns ? ns : "", name);
    return s->status;
}

/* The element of array whose member key is value; fails when there is none. */
static inline const json_t *fx_find(const json_t *array, const char *key, const char *value)
{
    size_t i;
    const json_t *e;
    json_array_foreach(array, i, e)
    {
        const char *v = json_string_value(json_object_get(e, key));
        if (v && strcmp(v, value) == 0)
            return e;
    }
    char *dump = json_dumps(array, JSON_INDENT(1));
    print_message("%s\n", dump ? dump : "(null)");
    free(dump);
    fail_msg("no element with %s \"%s\"", key, value);
    return NULL;
}

/* The element of spec's list (such as "http_routes") named name; fails the test when there
 * is none. */
static inline const json_t *fx_named(const json_t *spec, const char *list, const char *name)
{
    return fx_find(json_object_get(spec, list), "name", name);
}

/* Asserts condition type of conds has status ("True"/"False") and reason, observed at
 * generation; returns it. */
static inline const json_t *fx_cond(const json_t *conds, const char *type, const char *status,
                                    const char *reason, json_int_t generation)
{
    const json_t *c = fx_find(conds, "type", type);
    const char *s = json_string_value(json_object_get(c, "status"));
    const char *why = json_string_value(json_object_get(c, "reason"));
    if (strcmp(s, status) != 0 || strcmp(why, reason) != 0)
        fail_msg("condition %s is %s/%s (%s), not %s/%s", type, s, why,
                 json_string_value(json_object_get(c, "message")), status, reason);
    assert_int_equal(json_integer_value(json_object_get(c, "observedGeneration")), generation);
    assert_non_null(json_string_value(json_object_get(c, "lastTransitionTime")));
    return c;
}

/* Our entry of a route status for Gateway ns/name (and sectionName, or NULL). */
static inline const json_t *fx_parent(const json_t *status, const char *ns, const char *name,
                                      const char *section)
{
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(status, "parents"), i, p)
    {
        const json_t *ref = json_object_get(p, "parentRef");
        const char *sn = json_string_value(json_object_get(ref, "sectionName"));
        if (strcmp(json_string_value(json_object_get(p, "controllerName")), FX_CONTROLLER) == 0 &&
            strcmp(json_string_value(json_object_get(ref, "namespace")), ns) == 0 &&
            strcmp(json_string_value(json_object_get(ref, "name")), name) == 0 &&
            ((section == NULL && sn == NULL) || (section && sn && strcmp(section, sn) == 0)))
            return p;
    }
    fail_msg("no parent entry for Gateway %s/%s", ns, name);
    return NULL;
}

/* A listener's status entry of a Gateway status. */
static inline const json_t *fx_listener(const json_t *gw_status, const char *name)
{
    return fx_find(json_object_get(gw_status, "listeners"), "name", name);
}

/* Asserts spec decodes as the IR and passes Sextant's validation at FX_NOW, as the
 * REST API would check it. */
static inline void fx_expect_valid(const json_t *spec)
{
    assert_non_null(spec);
    ir_snapshot *ir = NULL;
    sx_fielderrs errs = {0};
    if (ir_snapshot_from_json(spec, "spec", &ir, &errs) != 0) {
        for (size_t i = 0; i < errs.count; i++)
            print_message("%s: %s\n", errs.items[i].path, errs.items[i].message);
        fail_msg("the spec does not decode as the IR");
    }
    ir_snapshot_free(ir);
    sx_fielderrs_free(&errs);
    val_result res;
    val_limits none = {0};
    int rc = val_run(spec, NULL, 0, &none, FX_NOW, &res);
    if (rc != 0) {
        json_t *j = val_result_to_json(&res);
        char *dump = json_dumps(j, JSON_INDENT(1));
        print_message("%s\n", dump);
        free(dump);
        json_decref(j);
    }
    val_result_free(&res);
    assert_int_equal(rc, 0);
}

#endif
