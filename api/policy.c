/*
 * policy.c — the RBAC policy: loading the YAML file (libyaml) and answering
 * "may role do action on resource".
 *
 * The file is loaded with libyaml's document API into a node tree and walked once;
 * every problem is collected with the line of the node it is about, so an operator
 * fixes a policy in one round trip, and a policy with any problem is refused as a whole
 * (a half-loaded policy would grant or deny by accident). The loaded form is a list of
 * roles, each a list of rules (a type pattern, an optional id pattern, the actions), and
 * a check is a linear scan: policies are a handful of rules, and a scan over them costs
 * less than the request's database round trip by orders of magnitude.
 */
#include "api/policy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "server/base/buf.h"
#include "server/base/glob.h"
#include "server/validate/validate.h"
#include "server/base/log.h"
#include "server/base/mem.h"

#define MAX_POLICY_BYTES (1024 * 1024)
#define MAX_NAME_LEN     64
#define MAX_PATTERN_LEN  256

/* The built-in policy. Kept in the file format so that it documents itself and goes
 * through the same loader as any file. */
static const char builtin_yaml[] = "# The built-in RBAC policy of Sextant.\n"
                                   "roles:\n"
                                   "  - name: admin\n"
                                   "    description: everything\n"
                                   "    permissions:\n"
                                   "      - resource: \"*\"\n"
                                   "        actions: [\"*\"]\n"
                                   "      - resource: secrets\n"
                                   "        actions: [read]\n"
                                   "  - name: operator\n"
                                   "    description: reads everything, changes configuration\n"
                                   "    permissions:\n"
                                   "      - resource: \"*\"\n"
                                   "        actions: [read]\n"
                                   "      - resource: configs\n"
                                   "        actions: [create, update, delete, rollback, apply,\n"
                                   "                  validate]\n"
                                   "      - resource: groups\n"
                                   "        actions: [rollback, update]\n"
                                   "      - resource: deployments\n"
                                   "        actions: [\"*\"]\n"
                                   "  - name: viewer\n"
                                   "    description: reads everything\n"
                                   "    permissions:\n"
                                   "      - resource: \"*\"\n"
                                   "        actions: [read]\n";

typedef struct rule {
    char *type_pat; /* pattern for the resource type */
    char *id_pat;   /* pattern for the id; NULL: any id or none */
    char **actions; /* action patterns */
    size_t nactions;
    char **groups; /* group patterns; NULL: any group (not scoped) */
    size_t ngroups;
    char **nss; /* namespace patterns; NULL: any namespace */
    size_t nnss;
    size_t index; /* its position in the role's permissions, for the audit */
} rule;

typedef struct role {
    char *name;
    rule *rules;
    size_t nrules;
} role;

struct policy {
    role *roles;
    size_t nroles;
};

/* ------------------------------------------------------------------ matching */

/* The resource types the REST routes ask about, and what their ids look like. */
typedef enum id_kind { ID_NONE, ID_UUID, ID_INTEGER, ID_GROUP, ID_ANY } id_kind;
static const struct {
    const char *type;
    id_kind id;
    bool scoped; /* its objects belong to groups: a rule may carry groups */
} TYPES[] = {
    {"configs", ID_UUID, true},  {"deployments", ID_UUID, true},   {"snapshots", ID_INTEGER, true},
    {"groups", ID_GROUP, true},  {"proxies", ID_ANY, true},        {"replicas", ID_NONE, false},
    {"events", ID_NONE, false},  {"audit", ID_NONE, false},        {"auth", ID_NONE, false},
    {"openapi", ID_NONE, false}, {POLICY_SECRETS, ID_NONE, false}, {"search", ID_NONE, false},
    {"alerts", ID_NONE, false},
};
#define NTYPES (sizeof(TYPES) / sizeof(TYPES[0]))

static bool type_scoped(const char *type)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (strcmp(TYPES[i].type, type) == 0)
            return TYPES[i].scoped;
    return false;
}

/* True when some pattern of pats (n) matches s. */
static bool any_match(char *const *pats, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (sx_glob_match(pats[i], s))
            return true;
    return false;
}

/* True when ru grants action on type (and id) whatever the object's groups. */
static bool rule_grants(const rule *ru, const char *type, const char *id, const char *action)
{
    bool has_id = id && *id;
    if (strcmp(type, POLICY_SECRETS) == 0 ? strcmp(ru->type_pat, POLICY_SECRETS) != 0
                                          : !sx_glob_match(ru->type_pat, type))
        return false;
    if (ru->id_pat && !(has_id ? sx_glob_match(ru->id_pat, id) : strcmp(ru->id_pat, "*") == 0))
        return false;
    for (size_t k = 0; k < ru->nactions; k++)
        if (sx_glob_match(ru->actions[k], action))
            return true;
    return false;
}

static bool rule_scoped(const rule *ru)
{
    return ru->groups != NULL || ru->nss != NULL;
}

/* True when the object (groups, ns) is inside ru's scope. */
static bool rule_covers(const rule *ru, const policy_object *obj)
{
    for (size_t g = 0; ru->groups && g < obj->ngroups; g++)
        if (!any_match(ru->groups, ru->ngroups, obj->groups[g]))
            return false;
    /* An object without a namespace is outside every namespace-scoped rule. */
    if (ru->nss && (obj->ns == NULL || !any_match(ru->nss, ru->nnss, obj->ns)))
        return false;
    return true;
}

static json_t *strings_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static const role *find_role(const policy *p, const char *name)
{
    for (size_t i = 0; i < p->nroles; i++)
        if (strcmp(p->roles[i].name, name) == 0)
            return &p->roles[i];
    return NULL;
}

bool policy_has_role(const policy *p, const char *role_name)
{
    return role_name && find_role(p, role_name) != NULL;
}

const char *policy_role_names(const policy *p, char *out, size_t outlen)
{
    size_t j = 0;
    if (outlen == 0)
        return out;
    out[0] = '\0';
    for (size_t i = 0; i < p->nroles && j < outlen; i++)
        j += (size_t)snprintf(out + j, outlen - j, "%s%s", i ? ", " : "", p->roles[i].name);
    return out;
}

bool policy_allows(const policy *p, const char *role_name, const char *resource_type,
                   const char *resource_id, const char *action)
{
    if (role_name == NULL || resource_type == NULL || action == NULL)
        return false;
    const role *r = find_role(p, role_name);
    if (r == NULL)
        return false;
    /* A scoped rule counts only for the types whose objects belong to groups: their
     * handlers check each object (policy_allows_object). */
    bool scopable = type_scoped(resource_type);
    for (size_t i = 0; i < r->nrules; i++) {
        const rule *ru = &r->rules[i];
        if ((scopable || !rule_scoped(ru)) && rule_grants(ru, resource_type, resource_id, action))
            return true;
    }
    return false;
}

bool policy_allows_object(const policy *p, const char *role_name, const char *resource_type,
                          const char *resource_id, const char *action, const policy_object *obj,
                          json_t **scope)
{
    if (scope)
        *scope = NULL;
    if (role_name == NULL || resource_type == NULL || action == NULL)
        return false;
    const role *r = find_role(p, role_name);
    if (r == NULL)
        return false;
    const rule *scoped_hit = NULL;
    bool granted = false;
    for (size_t i = 0; i < r->nrules; i++) {
        const rule *ru = &r->rules[i];
        if (!rule_grants(ru, resource_type, resource_id, action))
            continue;
        granted = true;
        if (!rule_scoped(ru))
            return true; /* unscoped: nothing to name */
        if (scoped_hit == NULL && rule_covers(ru, obj))
            scoped_hit = ru;
    }
    if (scope == NULL || !granted)
        return scoped_hit != NULL;
    json_t *s = json_pack("{s:s}", "role", role_name);
    if (scoped_hit) {
        json_object_set_new(s, "permission", json_integer((json_int_t)scoped_hit->index));
        if (scoped_hit->groups)
            json_object_set_new(s, "groups", strings_json(scoped_hit->groups, scoped_hit->ngroups));
        if (scoped_hit->nss)
            json_object_set_new(s, "namespaces", strings_json(scoped_hit->nss, scoped_hit->nnss));
    } else {
        /* Refused: every scope that would have granted the action, and what lies outside. */
        json_t *groups = json_array(), *nss = json_array(), *outside = json_array();
        for (size_t i = 0; i < r->nrules; i++) {
            const rule *ru = &r->rules[i];
            if (!rule_grants(ru, resource_type, resource_id, action))
                continue;
            for (size_t g = 0; g < ru->ngroups; g++)
                json_array_append_new(groups, json_string(ru->groups[g]));
            for (size_t g = 0; g < ru->nnss; g++)
                json_array_append_new(nss, json_string(ru->nss[g]));
            for (size_t g = 0; ru->groups && g < obj->ngroups; g++)
                if (!any_match(ru->groups, ru->ngroups, obj->groups[g]))
                    json_array_append_new(outside, json_string(obj->groups[g]));
            if (ru->nss && obj->ns && !any_match(ru->nss, ru->nnss, obj->ns))
                json_object_set_new(s, "outside_namespace", json_string(obj->ns));
        }
        json_object_set_new(s, "groups", groups);
        json_object_set_new(s, "namespaces", nss);
        json_t *uniq = json_array();
        size_t k, j;
        json_t *v, *w;
        json_array_foreach(outside, k, v)
        {
            bool seen = false;
            json_array_foreach(uniq, j, w) seen = seen || json_equal(v, w);
            if (!seen)
                json_array_append(uniq, v);
        }
        json_decref(outside);
        json_object_set_new(s, "outside", uniq);
    }
    *scope = s;
    return scoped_hit != NULL;
}

/* ------------------------------------------------------------------ freeing */

/* Frees what r holds and zeroes it. */
static void role_clear(role *r)
{
    for (size_t k = 0; k < r->nrules; k++) {
        rule *ru = &r->rules[k];
        sx_free(ru->type_pat);
        sx_free(ru->id_pat);
        for (size_t a = 0; a < ru->nactions; a++)
            sx_free(ru->actions[a]);
        sx_free(ru->actions);
        for (size_t a = 0; a < ru->ngroups; a++)
            sx_free(ru->groups[a]);
        sx_free(ru->groups);
        for (size_t a = 0; a < ru->nnss; a++)
            sx_free(ru->nss[a]);
        sx_free(ru->nss);
    }
    sx_free(r->rules);
    sx_free(r->name);
    memset(r, 0, sizeof(*r));
}

void policy_free(policy *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->nroles; i++)
        role_clear(&p->roles[i]);
    sx_free(p->roles);
    sx_free(p);
}

/* ------------------------------------------------------------------ loading */

typedef struct loader {
    const char *name; /* file name for messages */
    yaml_document_t *doc;
    sx_fielderrs errs; /* every problem, path "NAME:LINE" */
    policy *p;
} loader;

static void problem(loader *L, size_t line, const char *path, const char *fmt, ...) SX_PRINTF(4, 5);
static void problem(loader *L, size_t line, const char *path, const char *fmt, ...)
{
    char msg[512], where[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(where, sizeof(where), "%s:%zu", L->name, line);
    if (path && *path)
        sx_fielderrs_add(&L->errs, where, "%s: %s", path, msg);
    else
        sx_fielderrs_add(&L->errs, where, "%s", msg);
}

static size_t line_of(const yaml_node_t *n)
{
    return n->start_mark.line + 1;
}

static yaml_node_t *node_at(loader *L, int index)
{
    return yaml_document_get_node(L->doc, index);
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "empty";
    }
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_NAME_LEN)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return false;
    return true;
}

/* Resource types and ids: letters, digits and "_.:-", plus "*". */
static bool pattern_part_ok(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr("_.:-*", c) != NULL;
        if (!ok || c == '\0')
            return false;
    }
    return true;
}

static bool action_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_NAME_LEN)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' ||
              *c == '*'))
            return false;
    return true;
}

/* Looks through a mapping's keys: each must be one of allowed (NULL-terminated), and
 * appear once. Reports the others. */
static void check_keys(loader *L, yaml_node_t *map, const char *path, const char *const *allowed)
{
    char expected[128] = "";
    for (size_t i = 0, j = 0; allowed[i] && j < sizeof(expected); i++)
        j +=
            (size_t)snprintf(expected + j, sizeof(expected) - j, "%s%s", i ? ", " : "", allowed[i]);
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = node_at(L, pr->key);
        const char *key = scalar(k);
        if (key == NULL) {
            problem(L, line_of(k), path, "keys must be plain names");
            continue;
        }
        bool known = false;
        for (size_t i = 0; allowed[i]; i++)
            known = known || strcmp(allowed[i], key) == 0;
        char sub[300];
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
        if (!known) {
            if (*path == '\0' && strcmp(key, "users") == 0)
                problem(L, line_of(k), sub,
                        "not supported: a user's role comes from the role claim of the token");
            else
                problem(L, line_of(k), sub, "unknown key (expected %s)", expected);
            continue;
        }
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < pr; q++) {
            const char *other = scalar(node_at(L, q->key));
            if (other && strcmp(other, key) == 0) {
                problem(L, line_of(k), sub, "duplicate key");
                break;
            }
        }
    }
}

/* The value of key in map, or NULL. */
static yaml_node_t *map_get(loader *L, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        const char *k = scalar(node_at(L, pr->key));
        if (k && strcmp(k, key) == 0)
            return node_at(L, pr->value);
    }
    return NULL;
}

/* The value of key in mapping m (at path), with its path written into field (n bytes);
 * NULL, reported as why, when m has no such key. */
static yaml_node_t *required(loader *L, yaml_node_t *m, const char *path, const char *key,
                             char *field, size_t n, const char *why)
{
    snprintf(field, n, "%s.%s", path, key);
    yaml_node_t *v = map_get(L, m, key);
    if (v == NULL)
        problem(L, line_of(m), field, "%s", why);
    return v;
}

static void load_actions(loader *L, yaml_node_t *n, const char *path, rule *ru)
{
    if (n->type != YAML_SEQUENCE_NODE) {
        problem(L, line_of(n), path, "must be a list of action names, got %s", kind_name(n));
        return;
    }
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count == 0)
        problem(L, line_of(n), path, "must name at least one action");
    ru->actions = sx_calloc(count ? count : 1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *a = node_at(L, n->data.sequence.items.start[i]);
        const char *s = scalar(a);
        char sub[300];
        snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (s == NULL) {
            problem(L, line_of(a), sub, "must be an action name, got %s", kind_name(a));
        } else if (!action_ok(s)) {
            problem(L, line_of(a), sub,
                    "invalid action \"%.80s\": use 1-64 of a-z, 0-9, _ and -, or \"*\"", s);
        } else {
            ru->actions[ru->nactions++] = sx_strdup(s);
        }
    }
}

static void load_resource(loader *L, yaml_node_t *n, const char *path, rule *ru)
{
    const char *s = scalar(n);
    if (s == NULL) {
        problem(L, line_of(n), path, "must be a resource pattern, got %s", kind_name(n));
        return;
    }
    const char *slash = strchr(s, '/');
    size_t tlen = slash ? (size_t)(slash - s) : strlen(s);
    if (strlen(s) > MAX_PATTERN_LEN || !pattern_part_ok(s, tlen) ||
        (slash && (strchr(slash + 1, '/') || !pattern_part_ok(slash + 1, strlen(slash + 1))))) {
        problem(L, line_of(n), path,
                "invalid resource pattern \"%.80s\": expected TYPE or TYPE/ID, such as "
                "configs, \"*\" or \"groups/edge-*\"",
                s);
        return;
    }
    ru->type_pat = sx_strndup(s, tlen);
    ru->id_pat = slash ? sx_strdup(slash + 1) : NULL;
}

/* Whether a glob can match some text all of whose characters pass ok and whose length is
 * at most max: its literal characters must pass, and its literal length fit. */
static bool glob_can_match(const char *pat, bool (*ok)(char), size_t max)
{
    size_t lit = 0;
    for (const char *c = pat; *c; c++) {
        if (*c == '*')
            continue;
        if (!ok(*c))
            return false;
        lit++;
    }
    return lit <= max;
}

static bool uuid_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
}

static bool digit_char(char c)
{
    return c >= '0' && c <= '9';
}

static bool any_char(char c)
{
    return c != '\0';
}

/* RFC 1123 labels, the names of Kubernetes namespaces. */
static bool ns_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* Whether a group glob can match a valid group name (server/validate/validate.h): the
 * shortest text it matches (each '*' empty) or, when that is no name ("", "." or ".."),
 * the same with each '*' standing for one letter. */
static bool group_glob_can_match(const char *pat)
{
    char a[MAX_PATTERN_LEN + 1], b[2 * MAX_PATTERN_LEN + 1];
    size_t i = 0, j = 0;
    bool star = false;
    for (const char *c = pat; *c && j + 1 < sizeof(b); c++) {
        if (*c == '*') {
            star = true;
            b[j++] = 'a';
        } else {
            if (i + 1 < sizeof(a))
                a[i++] = *c;
            b[j++] = *c;
        }
    }
    a[i] = b[j] = '\0';
    return val_group_name_problem(a) == NULL || (star && val_group_name_problem(b) == NULL);
}

/* Whether an id pattern can match an id of a resource of kind k. */
static bool id_can_match(id_kind k, const char *pat)
{
    switch (k) {
    case ID_UUID:
        return glob_can_match(pat, uuid_char, 36);
    case ID_INTEGER:
        return glob_can_match(pat, digit_char, 19);
    case ID_GROUP:
        return group_glob_can_match(pat);
    case ID_ANY:
        return glob_can_match(pat, any_char, MAX_PATTERN_LEN);
    case ID_NONE:
        return strcmp(pat, "*") == 0; /* covers the collection, as documented above */
    }
    return false;
}

/* Reads a list of patterns (groups or namespaces) into *out and *n. */
static void load_patterns(loader *L, yaml_node_t *n, const char *path, const char *what,
                          char ***out, size_t *nout)
{
    if (n->type != YAML_SEQUENCE_NODE) {
        problem(L, line_of(n), path, "must be a list of %s patterns, got %s", what, kind_name(n));
        return;
    }
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count == 0)
        problem(L, line_of(n), path,
                "must name at least one %s pattern (leave the key out for every %s)", what, what);
    *out = sx_calloc(count ? count : 1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *a = node_at(L, n->data.sequence.items.start[i]);
        const char *s = scalar(a);
        char sub[300];
        snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (s == NULL || *s == '\0' || strlen(s) > MAX_PATTERN_LEN)
            problem(L, line_of(a), sub, "must be a %s pattern of 1-%d characters", what,
                    MAX_PATTERN_LEN);
        else
            (*out)[(*nout)++] = sx_strdup(s);
    }
}

/* The checks of a loaded rule that need all of it: every pattern must be able to match
 * something, so that a typo does not silently grant less (or, read by a person, seem
 * to grant something it never does). */
static void check_rule(loader *L, const char *role_name, const rule *ru, yaml_node_t *pn,
                       const char *path)
{
    if (ru->type_pat == NULL)
        return;
    bool any_type = false, id_ok = ru->id_pat == NULL, scopable = false, configs = false;
    for (size_t t = 0; t < NTYPES; t++) {
        /* Only a rule naming "secrets" reaches them (see policy_allows). */
        if (strcmp(TYPES[t].type, POLICY_SECRETS) == 0 && strcmp(ru->type_pat, POLICY_SECRETS) != 0)
            continue;
        if (!sx_glob_match(ru->type_pat, TYPES[t].type))
            continue;
        any_type = true;
        id_ok = id_ok || id_can_match(TYPES[t].id, ru->id_pat);
        scopable = scopable || TYPES[t].scoped;
        configs = configs || strcmp(TYPES[t].type, "configs") == 0;
    }
    char field[320];
    snprintf(field, sizeof(field), "%s.resource", path);
    yaml_node_t *res = map_get(L, pn, "resource");
    size_t line = res ? line_of(res) : line_of(pn);
    if (!any_type) {
        problem(L, line, field,
                "role %s: unknown resource \"%s\" (resources: configs, deployments, snapshots, "
                "groups, proxies, replicas, events, audit, auth, openapi, secrets, alerts)",
                role_name, ru->type_pat);
        return;
    }
    if (!id_ok)
        problem(L, line, field,
                "role %s: id pattern \"%s\" can never match an id of %s (configs and "
                "deployments have UUIDs, snapshots integers, groups group names; to scope by "
                "group, use groups:)",
                role_name, ru->id_pat, ru->type_pat);
    yaml_node_t *gn = map_get(L, pn, "groups"), *nn = map_get(L, pn, "namespaces");
    if (ru->groups && !scopable)
        problem(L, gn ? line_of(gn) : line, field,
                "role %s: groups: never applies to %s (only configs, deployments, snapshots, "
                "groups and proxies belong to groups)",
                role_name, ru->type_pat);
    if (ru->nss && !configs)
        problem(L, nn ? line_of(nn) : line, field,
                "role %s: namespaces: never applies to %s (only configs have namespaces)",
                role_name, ru->type_pat);
    for (size_t i = 0; i < ru->ngroups; i++)
        if (!group_glob_can_match(ru->groups[i])) {
            snprintf(field, sizeof(field), "%s.groups[%zu]", path, i);
            problem(L, gn ? line_of(gn) : line, field,
                    "role %s: group pattern \"%.80s\" can never match a group name (names hold "
                    "only ASCII letters, digits and - _ . : /, at most 253 bytes)",
                    role_name, ru->groups[i]);
        }
    for (size_t i = 0; i < ru->nnss; i++)
        if (!glob_can_match(ru->nss[i], ns_char, 63)) {
            snprintf(field, sizeof(field), "%s.namespaces[%zu]", path, i);
            problem(L, nn ? line_of(nn) : line, field,
                    "role %s: namespace pattern \"%.80s\" can never match a namespace (a "
                    "Kubernetes namespace: at most 63 of a-z, 0-9 and -)",
                    role_name, ru->nss[i]);
        }
}

static void load_permissions(loader *L, yaml_node_t *n, const char *path, role *r)
{
    static const char *const keys[] = {"resource",   "actions",     "groups",
                                       "namespaces", "description", NULL};
    if (n->type != YAML_SEQUENCE_NODE) {
        problem(L, line_of(n), path, "must be a list of rules, got %s", kind_name(n));
        return;
    }
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    r->rules = sx_calloc(count ? count : 1, sizeof(rule));
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *pn = node_at(L, n->data.sequence.items.start[i]);
        char sub[256], field[300];
        snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (pn->type != YAML_MAPPING_NODE) {
            problem(L, line_of(pn), sub, "must be a mapping with resource and actions, got %s",
                    kind_name(pn));
            continue;
        }
        check_keys(L, pn, sub, keys);
        rule *ru = &r->rules[r->nrules++];
        ru->index = i;
        yaml_node_t *res = required(L, pn, sub, "resource", field, sizeof(field), "required");
        if (res)
            load_resource(L, res, field, ru);
        yaml_node_t *act = required(L, pn, sub, "actions", field, sizeof(field), "required");
        if (act)
            load_actions(L, act, field, ru);
        yaml_node_t *g = map_get(L, pn, "groups");
        snprintf(field, sizeof(field), "%s.groups", sub);
        if (g)
            load_patterns(L, g, field, "group", &ru->groups, &ru->ngroups);
        yaml_node_t *ns = map_get(L, pn, "namespaces");
        snprintf(field, sizeof(field), "%s.namespaces", sub);
        if (ns)
            load_patterns(L, ns, field, "namespace", &ru->nss, &ru->nnss);
        check_rule(L, r->name ? r->name : "(unnamed)", ru, pn, sub);
    }
}

static void load_roles(loader *L, yaml_node_t *n)
{
    static const char *const keys[] = {"name", "permissions", "description", NULL};
    if (n->type != YAML_SEQUENCE_NODE) {
        problem(L, line_of(n), "roles", "must be a list of roles, got %s", kind_name(n));
        return;
    }
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    L->p->roles = sx_calloc(count ? count : 1, sizeof(role));
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *rn = node_at(L, n->data.sequence.items.start[i]);
        char path[64], field[96];
        snprintf(path, sizeof(path), "roles[%zu]", i);
        if (rn->type != YAML_MAPPING_NODE) {
            problem(L, line_of(rn), path, "must be a mapping with name and permissions, got %s",
                    kind_name(rn));
            continue;
        }
        check_keys(L, rn, path, keys);
        role *r = &L->p->roles[L->p->nroles];
        yaml_node_t *name = map_get(L, rn, "name");
        snprintf(field, sizeof(field), "%s.name", path);
        const char *s = name ? scalar(name) : NULL;
        if (name == NULL) {
            problem(L, line_of(rn), field, "required");
        } else if (s == NULL || !name_ok(s)) {
            problem(L, line_of(name), field,
                    "invalid role name%s%.64s%s: use 1-64 of a-z, 0-9, _ and -", s ? " \"" : "",
                    s ? s : "", s ? "\"" : "");
        } else if (find_role(L->p, s)) {
            problem(L, line_of(name), field, "role \"%s\" is defined twice", s);
        } else {
            r->name = sx_strdup(s);
        }
        yaml_node_t *perms = required(L, rn, path, "permissions", field, sizeof(field),
                                      "required (an empty list grants nothing)");
        if (perms)
            load_permissions(L, perms, field, r);
        if (r->name)
            L->p->nroles++;
        else
            role_clear(r); /* not kept (the load fails anyway); its rules are freed */
    }
}

int policy_parse(const char *text, size_t len, const char *name, policy **out, sx_fielderrs *errs,
                 sx_err *err)
{
    *out = NULL;
    loader L = {.name = name ? name : "policy"};
    L.p = sx_calloc(1, sizeof(policy));
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_doc = false;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        problem(&L, parser.problem_mark.line + 1, NULL, "invalid YAML: %s%s%s",
                parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                parser.context ? parser.context : "");
    } else {
        have_doc = true;
        L.doc = &doc;
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        static const char *const top_keys[] = {"roles", NULL};
        if (root == NULL) {
            problem(&L, 1, NULL, "the policy is empty: it needs a roles list");
        } else if (root->type != YAML_MAPPING_NODE) {
            problem(&L, line_of(root), NULL,
                    "the policy must be a mapping with a roles list, "
                    "got %s",
                    kind_name(root));
        } else {
            check_keys(&L, root, "", top_keys);
            yaml_node_t *roles = map_get(&L, root, "roles");
            if (roles == NULL)
                problem(&L, line_of(root), "roles", "required");
            else
                load_roles(&L, roles);
        }
        if (root != NULL) {
            yaml_document_t next;
            if (yaml_parser_load(&parser, &next)) {
                yaml_node_t *r2 = yaml_document_get_root_node(&next);
                if (r2)
                    problem(&L, line_of(r2), NULL, "only one YAML document is allowed");
                yaml_document_delete(&next);
            } else {
                problem(&L, parser.problem_mark.line + 1, NULL, "invalid YAML: %s",
                        parser.problem ? parser.problem : "syntax error");
            }
        }
    }
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);

    if (L.errs.count > 0) {
        const sx_fielderr *first = &L.errs.items[0];
        sx_err_set(err, SX_EINVAL, "%s: %s%s", first->path, first->message,
                   L.errs.count > 1 ? " (and more)" : "");
        if (L.errs.count > 1) {
            char *all = sx_fielderrs_join(&L.errs);
            sx_err_detail(err, "%zu problems: %s.", L.errs.count, all);
            sx_free(all);
        }
        for (size_t i = 0; errs && i < L.errs.count; i++)
            sx_fielderrs_add(errs, L.errs.items[i].path, "%s", L.errs.items[i].message);
        sx_fielderrs_free(&L.errs);
        policy_free(L.p);
        return SX_EINVAL;
    }
    *out = L.p;
    return 0;
}

int policy_load_file(const char *path, policy **out, sx_fielderrs *errs, sx_err *err)
{
    *out = NULL;
    sx_buf b = {0};
    int rc = sx_buf_read_file(&b, path, MAX_POLICY_BYTES);
    if (rc < 0)
        rc = sx_err_set(err, SX_EIO, "could not read RBAC policy %s: %s", path, strerror(errno));
    else if (rc > 0)
        rc = sx_err_set(err, SX_EIO, "could not read RBAC policy %s: read error", path);
    else if (b.len > MAX_POLICY_BYTES)
        rc = sx_err_set(err, SX_EINVAL, "RBAC policy %s is larger than %d bytes", path,
                        MAX_POLICY_BYTES);
    else
        rc = policy_parse(sx_buf_cstr(&b), b.len, path, out, errs, err);
    sx_buf_free(&b);
    return rc;
}

const char *policy_builtin_yaml(void)
{
    return builtin_yaml;
}

policy *policy_builtin(void)
{
    policy *p = NULL;
    sx_err err;
    if (policy_parse(builtin_yaml, sizeof(builtin_yaml) - 1, "built-in policy", &p, NULL, &err) !=
        0) {
        SX_ERROR("policy", "bug: the built-in policy does not load: %s", err.message);
        abort();
    }
    return p;
}
