/*
 * val_translate.c — the last semantic check: the group's merged snapshot (the peers'
 * objects and the config's, concatenated as the composer does) goes through the Envoy
 * translator (tr_resources_build), so that a config that validates also translates.
 *
 * The other stages already say most of what the translator would refuse, more
 * precisely; a translator problem is therefore added only when no problem was reported
 * at its path or below it (and a clash of resource names, which has no object path,
 * only when nothing else was found). The translator reports its problems as one sx_err
 * (the first in the message, all of them in the detail, which is bounded: a long list
 * is cut, and then the cut item is dropped). Its paths ("backends[3].name") are indexes
 * into the merged lists and are mapped back: into "spec.…" for the config's objects;
 * for a peer's object the problem is the config's only when translating the peers
 * alone does not report it (the change broke the peer, e.g. made one of its bare
 * references ambiguous), and it is then reported at "spec" naming that peer.
 *
 * The check runs only when one of the config's groups serves an ADS data plane (envoy
 * or grpc, val_planes.c): gateway.control.v1 data planes receive the IR itself.
 *
 * The check needs whole documents: it is skipped when the config or a peer did not
 * decode cleanly (the schema stage has then failed the config already, or a stored
 * peer is damaged and the references into it were checked by the other stages).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/translate/resources.h"
#include "server/validate/val_internal.h"

enum { L_LISTENERS, L_HTTP, L_GRPC, L_STREAM, L_BACKENDS, L_SECRETS, L_COUNT };

static const char *const LISTS[L_COUNT] = {"listeners",     "http_routes", "grpc_routes",
                                           "stream_routes", "backends",    "secrets"};

static size_t list_count(const ir_snapshot *ir, int l)
{
    switch (l) {
    case L_LISTENERS:
        return ir->n_listeners;
    case L_HTTP:
        return ir->n_http_routes;
    case L_GRPC:
        return ir->n_grpc_routes;
    case L_STREAM:
        return ir->n_stream_routes;
    case L_BACKENDS:
        return ir->n_backends;
    default:
        return ir->n_secrets;
    }
}

/* ---------------------------------------------------------------- merging */

/* The documents translate merges: docs[order[0..n)]. */
typedef struct merge_parts {
    const val_doc *docs;
    const size_t *order;
} merge_parts;

static const ir_snapshot *merge_part(const void *ctx, size_t i)
{
    const merge_parts *mp = ctx;
    return mp->docs[mp->order[i]].ir;
}

/* ---------------------------------------------------------------- translator problems */

typedef struct tr_item {
    char *path;
    char *message;
} tr_item;

typedef struct tr_items {
    tr_item *v;
    size_t n, cap;
} tr_items;

static void items_free(tr_items *t)
{
    for (size_t i = 0; i < t->n; i++) {
        sx_free(t->v[i].path);
        sx_free(t->v[i].message);
    }
    sx_free(t->v);
}

/* Whether s starts a translator path: a list name followed by "[" or ":", or an xDS
 * type name followed by ":". */
static bool path_start(const char *s)
{
    static const char *const heads[] = {"listeners", "http_routes", "grpc_routes", "stream_routes",
                                        "backends",  "secrets",     "sds",         "cds",
                                        "eds",       "lds",         "rds",         NULL};
    for (size_t i = 0; heads[i]; i++) {
        size_t n = strlen(heads[i]);
        if (strncmp(s, heads[i], n) == 0 && (s[n] == '[' || s[n] == ':'))
            return true;
    }
    return false;
}

static void push_item(tr_items *t, const char *s, size_t len)
{
    char *text = sx_strndup(s, len);
    char *sep = strstr(text, ": ");
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->v = sx_realloc(t->v, t->cap * sizeof *t->v);
    }
    if (sep && path_start(text)) {
        t->v[t->n++] = (tr_item){sx_strndup(text, (size_t)(sep - text)), sx_strdup(sep + 2)};
        sx_free(text);
    } else {
        t->v[t->n++] = (tr_item){sx_strdup(""), text};
    }
}

/* The problems of a failed build, from err (see resources.c for the format). */
static void parse(const sx_err *err, tr_items *out)
{
    if (err->detail[0] == '\0') {
        push_item(out, err->message, strlen(err->message));
        return;
    }
    const char *s = strstr(err->detail, ": ");
    if (s == NULL) {
        push_item(out, err->message, strlen(err->message));
        return;
    }
    s += 2;
    size_t len = strlen(s);
    bool cut = strlen(err->detail) >= sizeof err->detail - 1;
    if (!cut && len > 0 && s[len - 1] == '.')
        len--;
    const char *end = s + len;
    const char *start = s;
    for (const char *p = s; p < end; p++) {
        if (p[0] == ';' && p + 1 < end && p[1] == ' ' && path_start(p + 2)) {
            push_item(out, start, (size_t)(p - start));
            start = p + 2;
        }
    }
    if (!cut)
        push_item(out, start, (size_t)(end - start));
    if (out->n == 0)
        push_item(out, err->message, strlen(err->message));
}

/* Translates docs[order[0..n)] merged; false with its problems in out when it fails. */
static bool translate(const val_ctx *c, const size_t *order, size_t n, tr_items *out)
{
    ir_snapshot m;
    merge_parts mp = {c->docs, order};
    ir_snapshot_concat(&m, n, merge_part, &mp); /* borrows the documents' objects */
    tr_resources *res = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = tr_resources_build(&m, "validation", 0, &res, &err);
    tr_resources_unref(res);
    ir_snapshot_unconcat(&m);
    if (rc == 0)
        return true;
    parse(&err, out);
    return false;
}

/* ---------------------------------------------------------------- mapping */

/* Splits "list[N]rest" into the list and N; false for other paths. */
static bool split(const char *path, int *list, size_t *idx, const char **rest)
{
    for (int l = 0; l < L_COUNT; l++) {
        size_t n = strlen(LISTS[l]);
        if (strncmp(path, LISTS[l], n) != 0 || path[n] != '[')
            continue;
        char *end;
        unsigned long long v = strtoull(path + n + 1, &end, 10);
        if (end == path + n + 1 || *end != ']')
            return false;
        *list = l;
        *idx = (size_t)v;
        *rest = end + 1;
        return true;
    }
    return false;
}

/* Whether a problem was reported at path or below it. */
static bool covered(const val_ctx *c, const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < c->out->count; i++) {
        const char *p = c->out->items[i].path;
        if (strncmp(p, path, n) == 0 && (p[n] == '\0' || p[n] == '.' || p[n] == '['))
            return true;
    }
    return false;
}

static bool in_baseline(const tr_items *base, const char *path)
{
    for (size_t i = 0; i < base->n; i++)
        if (strcmp(base->v[i].path, path) == 0)
            return true;
    return false;
}

void val_translate_check(val_ctx *c)
{
    /* Only the ADS data planes receive what the translator makes. */
    if (!(val_ctx_planes(c) & VAL_PLANES_ADS))
        return;
    for (size_t d = 0; d < c->ndocs; d++)
        if (!c->docs[d].clean)
            return;
    /* Peers first, the config last: a clash between the two (a name both use) is then
     * reported by the translator at the config's object, which is where it belongs, and
     * the peers' indexes are the same in the merged lists as in the peers alone. */
    size_t *order = sx_calloc(c->ndocs, sizeof *order);
    for (size_t d = 1; d < c->ndocs; d++)
        order[d - 1] = d;
    order[c->ndocs - 1] = 0;
    tr_items all = {0}, base = {0};
    size_t before = c->out->count;
    if (translate(c, order, c->ndocs, &all)) {
        items_free(&all);
        sx_free(order);
        return;
    }
    bool have_base = false;
    char p[VAL_PATH_MAX * 2];
    for (size_t i = 0; i < all.n; i++) {
        const tr_item *t = &all.v[i];
        int list;
        size_t idx;
        const char *rest;
        if (!split(t->path, &list, &idx, &rest)) {
            /* Not an object's path: a list ("secrets") or a resource type ("lds"). A
             * clash of resource names is the consequence of problems found before, if
             * any (two listeners of one name give two route configurations of one name). */
            snprintf(p, sizeof p, "spec%s%s", strcmp(t->path, "secrets") == 0 ? "." : "",
                     strcmp(t->path, "secrets") == 0 ? t->path : "");
            if (before == 0)
                val_add(c, p, "%s%s%s", t->path, t->path[0] ? ": " : "", t->message);
            continue;
        }
        /* Which document the index falls in, in merge order. */
        size_t k, off = 0;
        for (k = 0; k < c->ndocs; k++) {
            size_t n = list_count(c->docs[order[k]].ir, list);
            if (idx < off + n)
                break;
            off += n;
        }
        if (k == c->ndocs)
            continue; /* cannot happen: the translator indexes the lists it was given */
        size_t d = order[k], local = idx - off;
        if (d == 0) {
            snprintf(p, sizeof p, "spec.%s[%zu]%s", LISTS[list], local, rest);
            if (!covered(c, p))
                val_add(c, p, "%s", t->message);
            continue;
        }
        if (!have_base) {
            (void)translate(c, order, c->ndocs - 1, &base);
            have_base = true;
        }
        if (in_baseline(&base, t->path))
            continue;
        val_add(c, "spec", "merged with this config, config %s does not translate: %s[%zu]%s: %s",
                c->docs[d].ref, LISTS[list], local, rest, t->message);
    }
    items_free(&all);
    items_free(&base);
    sx_free(order);
}
