/*
 * config_yaml.c — reads the configuration file (YAML) into the loader's raw values.
 *
 * The file is one YAML document whose mappings nest along the key paths (http.tls.cert_file
 * is http: tls: cert_file:). Only scalars are taken, as text: every value is parsed later
 * by the loader, the same way whether it came from the file, the environment or a
 * default. A list key (K_ADDRESSES) also takes a sequence of scalars, joined with commas
 * into the text its environment variable would hold. Unknown keys (with the closest
 * spelling), duplicate keys, lists where a single value belongs and a second document are
 * reported with their line, and reading goes on.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <stdlib.h>
#include <yaml.h>

#include "server/base/buf.h"
#include "server/base/mem.h"
#include "server/config_internal.h"

static bool yaml_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

static const char *yaml_kind(const yaml_node_t *n)
{
    return n->type == YAML_MAPPING_NODE    ? "mapping"
           : n->type == YAML_SEQUENCE_NODE ? "list"
                                           : "single value";
}

/* A list of mappings of plain values (alerts.webhooks) as the JSON array text its
 * environment variable would hold (a new string), or NULL after reporting what is not
 * one. Values are not quoted in messages: they hold secrets. */
static char *webhooks_json(loader *L, yaml_document_t *doc, yaml_node_t *seq, const char *path)
{
    if (seq->type != YAML_SEQUENCE_NODE) {
        sx_fielderrs_add(L->errs, path, "expected a list of mappings, got a %s (line %zu)",
                         yaml_kind(seq), seq->start_mark.line + 1);
        return NULL;
    }
    json_t *arr = json_array();
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *m = yaml_document_get_node(doc, *it);
        if (m == NULL || m->type != YAML_MAPPING_NODE) {
            sx_fielderrs_add(L->errs, path, "expected a list of mappings (line %zu)",
                             m ? m->start_mark.line + 1 : 0);
            json_decref(arr);
            return NULL;
        }
        json_t *o = json_object();
        json_array_append_new(arr, o);
        for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            yaml_node_t *v = yaml_document_get_node(doc, p->value);
            if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE ||
                v->type != YAML_SCALAR_NODE || yaml_is_null(v)) {
                sx_fielderrs_add(L->errs, path,
                                 "each entry's fields must be single values (line %zu)",
                                 m->start_mark.line + 1);
                json_decref(arr);
                return NULL;
            }
            json_object_set_new(
                o, (const char *)k->data.scalar.value,
                json_stringn((const char *)v->data.scalar.value, v->data.scalar.length));
        }
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    char *out = sx_strdup(text ? text : "[]");
    free(text);
    return out;
}

/* The scalars of sequence seq joined with commas (a new string), or NULL after reporting
 * an item that is not a plain value or holds a comma. */
static char *join_sequence(loader *L, yaml_document_t *doc, yaml_node_t *seq, const char *path)
{
    sx_buf b = {0};
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        if (n == NULL)
            continue;
        const char *v = (const char *)n->data.scalar.value;
        if (n->type != YAML_SCALAR_NODE || yaml_is_null(n) || strlen(v) != n->data.scalar.length ||
            strchr(v, ',')) {
            sx_fielderrs_add(L->errs, path,
                             "expected a list of single values without commas (line %zu)",
                             n->start_mark.line + 1);
            sx_buf_free(&b);
            return NULL;
        }
        if (it > seq->data.sequence.items.start)
            sx_buf_puts(&b, ",");
        sx_buf_puts(&b, v);
    }
    char *text = sx_strdup(sx_buf_cstr(&b));
    sx_buf_free(&b);
    return text;
}

static void walk_mapping(loader *L, yaml_document_t *doc, yaml_node_t *map, const char *prefix)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(doc, pr->value);
        if (k == NULL || v == NULL)
            continue;
        size_t line = k->start_mark.line + 1;
        if (k->type != YAML_SCALAR_NODE) {
            sx_fielderrs_add(L->errs, *prefix ? prefix : L->file,
                             "keys must be plain names, got a %s (line %zu)", yaml_kind(k), line);
            continue;
        }
        const char *name = (const char *)k->data.scalar.value;
        char path[256];
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", name);
        int idx = config_key_find(path);
        if (idx >= 0) {
            raw_value *r = &L->raw[idx];
            if (r->file_seen) {
                sx_fielderrs_add(L->errs, path, "duplicate key (line %zu)", line);
                r->failed = true;
                continue;
            }
            r->file_seen = true;
            if (v->type == YAML_SEQUENCE_NODE && config_keys[idx].kind == K_ADDRESSES) {
                r->text = join_sequence(L, doc, v, path);
                r->failed = r->text == NULL;
                r->src = SRC_FILE;
                r->file_line = line;
                continue;
            }
            if (config_keys[idx].kind == K_WEBHOOKS && !yaml_is_null(v)) {
                r->text = webhooks_json(L, doc, v, path);
                r->failed = r->text == NULL;
                r->src = SRC_FILE;
                r->file_line = line;
                continue;
            }
            if (v->type != YAML_SCALAR_NODE) {
                sx_fielderrs_add(L->errs, path, "expected a single value, got a %s (line %zu)",
                                 yaml_kind(v), line);
                r->failed = true;
                continue;
            }
            if (yaml_is_null(v))
                continue;
            r->text = sx_strndup((const char *)v->data.scalar.value, v->data.scalar.length);
            if (strlen(r->text) != v->data.scalar.length) {
                sx_fielderrs_add(L->errs, path, "value contains a NUL byte (line %zu)", line);
                r->failed = true;
            }
            r->src = SRC_FILE;
            r->file_line = line;
        } else if (config_key_is_section(path)) {
            bool dup = false;
            for (size_t s = 0; s < L->nsections && !dup; s++)
                dup = strcmp(L->sections[s], path) == 0;
            if (dup) {
                sx_fielderrs_add(L->errs, path, "duplicate key (line %zu)", line);
                continue;
            }
            L->sections = sx_realloc(L->sections, (L->nsections + 1) * sizeof(char *));
            L->sections[L->nsections++] = sx_strdup(path);
            if (v->type == YAML_MAPPING_NODE)
                walk_mapping(L, doc, v, path);
            else if (!yaml_is_null(v))
                sx_fielderrs_add(L->errs, path, "expected a mapping of keys, got a %s (line %zu)",
                                 yaml_kind(v), line);
        } else {
            char q[160], sug[64];
            const char *s = config_suggest_key(prefix, name, sug, sizeof(sug));
            if (s)
                sx_fielderrs_add(L->errs, path, "unknown key %s (did you mean \"%s\"?) (line %zu)",
                                 config_quote(name, q, sizeof(q)), s, line);
            else
                sx_fielderrs_add(L->errs, path, "unknown key %s (line %zu)",
                                 config_quote(name, q, sizeof(q)), line);
        }
    }
}

static void yaml_syntax_error(loader *L, const yaml_parser_t *p)
{
    if (p->error == YAML_READER_ERROR) {
        sx_fielderrs_add(L->errs, L->file, "invalid YAML at byte %zu: %s", p->problem_offset,
                         p->problem ? p->problem : "unreadable input");
        return;
    }
    if (p->error == YAML_MEMORY_ERROR) {
        sx_fielderrs_add(L->errs, L->file, "out of memory while parsing YAML");
        return;
    }
    char ctx[256] = "";
    if (p->context)
        snprintf(ctx, sizeof(ctx), " (%s at line %zu, column %zu)", p->context,
                 p->context_mark.line + 1, p->context_mark.column + 1);
    sx_fielderrs_add(L->errs, L->file, "invalid YAML at line %zu, column %zu: %s%s",
                     p->problem_mark.line + 1, p->problem_mark.column + 1,
                     p->problem ? p->problem : "syntax error", ctx);
}

void config_yaml_read(loader *L, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        sx_fielderrs_add(L->errs, path, "could not open the configuration file: %s",
                         strerror(errno));
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        sx_fielderrs_add(L->errs, path, "the configuration file is not a regular file");
        return;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        sx_fielderrs_add(L->errs, path, "could not open the configuration file: %s",
                         strerror(errno));
        return;
    }
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    yaml_document_t doc;
    if (!yaml_parser_load(&p, &doc)) {
        yaml_syntax_error(L, &p);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root && root->type == YAML_MAPPING_NODE)
            walk_mapping(L, &doc, root, "");
        else if (root && !yaml_is_null(root))
            sx_fielderrs_add(L->errs, path, "expected a mapping of keys at the top, got a %s",
                             yaml_kind(root));
        yaml_document_delete(&doc);
        if (root) {
            yaml_document_t more;
            if (!yaml_parser_load(&p, &more)) {
                yaml_syntax_error(L, &p);
            } else {
                if (yaml_document_get_root_node(&more))
                    sx_fielderrs_add(L->errs, path, "expected one YAML document, found more");
                yaml_document_delete(&more);
            }
        }
    }
    yaml_parser_delete(&p);
    fclose(f);
}
