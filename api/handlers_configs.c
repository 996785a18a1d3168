/*
 * handlers_configs.c — /api/v1/configs: create, list, read, replace, delete, versions,
 * diffs between versions, the dry-run validation and the rollback of one config.
 *
 * Every change goes through changes_apply (server/changes.h: apply_config with the
 * validation limits of the daemon), reads through server/catalog.h, so one transaction validates
 * against the other configs of the groups, stores the new version, recomposes the groups'
 * snapshots, audits and NOTIFYs. The handlers only translate HTTP into an apply_request and the
 * outcome back: 201/200 with the config and its ETag (the latest version, "N"), or the error shape
 * with every problem of a refused config in details ({"stage","path","message"}). Refusals are
 * audited here (result "failed"), successes by apply_config inside its transaction. A config
 * the Kubernetes source manages is refused by apply_config itself (409 managed_by_kubernetes,
 * naming its Gateway) for PUT and DELETE; its rollback goes through like any other.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers_routes.h"
#include "api/handlers_common.h"
#include "api/idempotency.h"
#include "server/catalog.h"
#include "server/changes.h"
#include "server/diff.h"
#include "storage/repo_common.h"

static const api_field create_fields[] = {
    {"namespace", API_STRING, false}, {"name", API_STRING, true},     {"groups", API_STRINGS, true},
    {"spec", API_OBJECT, true},       {"message", API_STRING, false}, {"draft", API_BOOL, false},
};

static const api_field put_fields[] = {
    {"namespace", API_STRING, false}, {"name", API_STRING, false},
    {"groups", API_STRINGS, false},   {"spec", API_OBJECT, true},
    {"message", API_STRING, false},   {"draft", API_BOOL, false},
};

static const api_field validate_fields[] = {
    {"id", API_STRING, false},   {"namespace", API_STRING, false},
    {"name", API_STRING, false}, {"groups", API_STRINGS, false},
    {"spec", API_OBJECT, true},  {"message", API_STRING, false},
    {"draft", API_BOOL, false},
};

static const api_field rollback_fields[] = {
    {"version", API_INT, true},
    {"message", API_STRING, false},
};

#define NFIELDS(f) (sizeof(f) / sizeof((f)[0]))

/* The {id} of the route when it can name a config; else 404 (audited when ch). */
static const char *config_id_or_respond(http_request *req, const api_change *ch)
{
    const char *id = http_req_param(req, "id");
    if (repo_is_uuid(id))
        return id;
    sx_err err;
    sx_err_set(&err, SX_ENOTFOUND, "config %.64s does not exist", id ? id : "");
    api_refuse(
        req, ch, &err,
        api_details1("id", "a config id is a UUID such as 9b2f6c1e-0d4e-4c3f-9a7b-1f2e3d4c5b6a"));
    return NULL;
}

/* A write needs the database wired; 503 (audit impossible) otherwise. */
static bool db_or_respond(http_request *req, rest_api *api)
{
    sx_err err;
    if (changes_ready(rest_server(api), &err) == 0)
        return true;
    api_refuse(req, NULL, &err, NULL);
    return false;
}

/* Answers a refused change: a refused config with every problem, anything else as its
 * error says. */
static void respond_refusal(http_request *req, const api_change *ch, int rc, sx_err *err,
                            const val_result *problems, const sx_fielderrs *verrs)
{
    bool config_refused = rc == SX_EVALIDATION || (rc == SX_ECONFLICT && problems->count > 0);
    err->code = rc;
    api_refuse(req, ch, err,
               config_refused ? changes_problems_json(problems, verrs, "compose") : NULL);
}

static json_t *snapshots_json(const apply_result *res)
{
    json_t *a = json_array();
    for (size_t i = 0; i < res->snapshot_count; i++)
        json_array_append_new(a, json_pack("{s:s,s:I}", "group", res->snapshots[i].group, "version",
                                           (json_int_t)res->snapshots[i].version));
    return a;
}

/* The extra fields of a change's answer (rollback: what it returned to); new reference. */
typedef json_t *(*extra_fn)(const apply_result *, const apply_request *);

/* How a config change is answered: its status on success and its extra fields. */
typedef struct change_answer {
    int status;              /* 201 or 200 */
    extra_fn extra;          /* NULL: none */
    const apply_request *ar; /* set by run_change */
} change_answer;

/* The answer of a successful change: the config as it now is (cfg and latest, or what
 * res knows when they are NULL), what the change did, and extra (taken, NULL allowed). */
static json_t *change_body(const apply_result *res, const cfg_record *cfg,
                           const cfg_version *latest, json_t *extra)
{
    json_t *body = cfg && latest ? api_config_json(cfg, latest) : NULL;
    if (body == NULL) /* committed, but the read-back failed: say what is known */
        body = json_pack("{s:s,s:i}", "id", res->config_id, "version", res->latest_version);
    json_object_set_new(body, "changed", json_boolean(res->changed));
    json_object_set_new(body, "snapshots", snapshots_json(res));
    if (extra) {
        json_object_update(body, extra);
        json_decref(extra);
    }
    return body;
}

/* idem_render_fn of a keyed change: result is the apply_result, read back in the
 * change's transaction; ud the change_answer. */
static json_t *render_change(const void *result, void *ud, int *status)
{
    const apply_result *res = result;
    const change_answer *ans = ud;
    *status = ans->status;
    return change_body(res, res->record, res->record_latest,
                       ans->extra ? ans->extra(res, ans->ar) : NULL);
}

/* The headers of a successful change: ETag (its latest version), Location when created. */
static void change_headers(http_request *req, int status, const apply_result *res)
{
    api_set_etag(req, res->latest_version);
    if (status == 201) {
        char loc[128];
        snprintf(loc, sizeof(loc), "/api/v1/configs/%s", res->config_id);
        http_req_set_header(req, "Location", loc);
    }
}

/* Answers a successful change without a key with the config as it now is (read back). */
static void respond_change(http_request *req, rest_api *api, const change_answer *ans,
                           const apply_result *res)
{
    cfg_record *cfg = NULL;
    cfg_version *latest = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (catalog_config(rest_server(api), res->config_id, true, http_req_arena(req), &cfg, &latest,
                       &err) != 0)
        cfg = NULL;
    json_t *body =
        change_body(res, cfg, cfg ? latest : NULL, ans->extra ? ans->extra(res, ans->ar) : NULL);
    change_headers(req, ans->status, res);
    http_respond_json(req, ans->status, body);
}

/* Runs req through apply_config and answers; a keyed change (ar->idem) with the answer
 * stored in its transaction. */
static void run_change(const api_change *ch, apply_request *ar, change_answer *ans)
{
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    sx_err err;
    sx_err_clear(&err);
    ar->author = api_user(ch->req);
    ar->actor_role = api_role(ch->req);
    ar->action = ch->action;
    ar->request_id = http_req_id(ch->req);
    ar->client_request_id = http_req_client_id(ch->req);
    ar->source_ip = rest_source_ip(ch->req);
    ar->problems = &problems;
    ans->ar = ar;
    apply_result res;
    int rc = changes_apply(rest_server(ch->api), ar, http_req_arena(ch->req), &res, &verrs, &err);
    if (rc) {
        respond_refusal(ch->req, ch, rc, &err, &problems, &verrs);
    } else if (ar->idem) {
        if (!ar->idem->replayed)
            change_headers(ch->req, ans->status, &res);
        api_idem_respond(ch->req, ar->idem);
    } else {
        respond_change(ch->req, ch->api, ans, &res);
    }
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
}

/* ------------------------------------------------------------------ collection */

static json_t *config_item(const void *c)
{
    return api_config_json(c, NULL);
}

static json_t *version_item(const void *v)
{
    return api_version_json(v);
}

static policy_object config_scope(const void *item)
{
    const cfg_record *c = item;
    return (policy_object){(const char *const *)c->groups, c->group_count, c->ns};
}

int api_configs_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    const char *source = http_req_query(req, "source");
    cfg_source known;
    if (source && source[0] && cfg_source_parse(source, &known) != 0) {
        page->details = api_details1("source", "must be rest or kubernetes");
        return sx_err_set(err, SX_EINVAL, "invalid source filter");
    }
    cfg_filter f = {
        .ns = http_req_query(req, "namespace"),
        .group = http_req_query(req, "group"),
        .source = source && source[0] ? source : NULL,
        .limit = page->limit,
        .cursor = page->cursor,
    };
    cfg_list list;
    int rc = catalog_configs(rest_server(api), &f, http_req_arena(req), &list, err);
    return API_PAGE_SCOPED(page, rc, list, config_item, req, api, "configs", config_scope);
}

/* The groups of a change: the config's as they are (old, NULL for a create) and as the
 * request sets them (none: unchanged), each once, in the request's arena. */
static policy_object change_object(sx_arena *a, const cfg_record *old, const apply_request *ar)
{
    size_t nold = old ? old->group_count : 0;
    const char **g = sx_arena_alloc(a, (nold + ar->group_count + 1) * sizeof(*g));
    size_t n = 0;
    for (size_t i = 0; i < nold + ar->group_count; i++) {
        const char *x = i < nold ? old->groups[i] : ar->groups[i - nold];
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(g[k], x) == 0;
        if (!seen)
            g[n++] = x;
    }
    return (policy_object){g, n, old ? old->ns : ar->ns};
}

/* The caller's group scope for a config change: every group it touches (for a change of
 * a config, its groups before and after) and its namespace must be in the scope of the
 * role's rule for action, else 403 (audited, naming the scope). When a scoped rule
 * allows it, the change is pinned to the version read here (If-Match, unless the client
 * sent one), so that the groups checked are the groups changed: a concurrent change
 * makes it a 412, never a write outside the scope; and the audit row names the scope. */
static bool config_scope_or_respond(http_request *req, rest_api *api, const api_change *ch,
                                    apply_request *ar, const char *action)
{
    sx_arena *a = http_req_arena(req);
    json_t *scope = NULL;
    policy_object none = {NULL, 0, NULL};
    if (rest_allows_object(api, req, "configs", action, &none, &scope) && scope == NULL)
        return true; /* an unscoped rule allows it */
    json_decref(scope);
    cfg_record *old = NULL;
    if (ar->op != APPLY_CREATE) {
        cfg_version *latest = NULL;
        sx_err err;
        sx_err_clear(&err);
        if (catalog_config(rest_server(api), ar->config_id, false, a, &old, &latest, &err) != 0) {
            api_refuse(req, ch, &err, NULL);
            return false;
        }
        if (ar->if_match == 0)
            ar->if_match = old->latest_version;
    }
    policy_object obj = change_object(a, old, ar);
    char *what = old ? sx_arena_printf(a, "config %s/%s", old->ns, old->name)
                     : sx_arena_printf(a, "config %s/%s", ar->ns, ar->name ? ar->name : "");
    if (!api_scope_or_respond(req, api, ch, "configs", action, &obj, what))
        return false;
    rest_allows_object(api, req, "configs", action, &obj, &scope);
    ar->audit_scope = repo_own_json(a, scope);
    return true;
}

/* A read of config id outside the caller's scope answers 404, as if it did not exist. */
static bool config_readable_or_respond(http_request *req, rest_api *api, const cfg_record *c)
{
    policy_object obj = {(const char *const *)c->groups, c->group_count, c->ns};
    return api_scope_or_respond(req, api, NULL, "configs", "read", &obj,
                                sx_arena_printf(http_req_arena(req), "config %s", c->id));
}

/* Reads config id with its latest version into *cfg and *latest when the caller may read
 * it; false once answered (not found, or out of the caller's scope). */
static bool config_read_or_respond(http_request *req, rest_api *api, const char *id,
                                   cfg_record **cfg, cfg_version **latest)
{
    sx_err err;
    sx_err_clear(&err);
    if (catalog_config(rest_server(api), id, false, http_req_arena(req), cfg, latest, &err)) {
        api_refuse(req, NULL, &err, NULL);
        return false;
    }
    return config_readable_or_respond(req, api, *cfg);
}

/* The config the path names, read, and checked readable by the caller; false once
 * answered. */
static bool config_of_path_or_respond(http_request *req, rest_api *api, cfg_record **cfg,
                                      cfg_version **latest)
{
    const char *id = config_id_or_respond(req, NULL);
    return id != NULL && config_read_or_respond(req, api, id, cfg, latest);
}

/* Reads config id and checks the caller may read it; false once answered. */
static bool config_visible_or_respond(http_request *req, rest_api *api, const char *id)
{
    json_t *scope = NULL;
    policy_object none = {NULL, 0, NULL};
    if (rest_allows_object(api, req, "configs", "read", &none, &scope) && scope == NULL)
        return true;
    json_decref(scope);
    cfg_record *cfg = NULL;
    cfg_version *latest = NULL;
    return config_read_or_respond(req, api, id, &cfg, &latest);
}

/* A config change under way: its audit, how it is answered, the request it makes and
 * the body it came with (NULL when it takes none). */
typedef struct config_change {
    api_change ch;
    change_answer ans;
    apply_request ar;
    json_t *body;
} config_change;

/* Starts change op (audited as action, answered with extra) to the config of the route's
 * {id}, or to a new one for APPLY_CREATE: checks the id, that the database is wired, the
 * idempotency key, If-Match (not for a create) and, when fields is not NULL, the body.
 * Sets cc->ar's op, config_id, if_match and idem. Returns false once answered. */
static bool config_change_begin(config_change *cc, http_request *req, rest_api *api, apply_op op,
                                const char *action, extra_fn extra, const api_field *fields,
                                size_t nfields)
{
    bool create = op == APPLY_CREATE;
    *cc = (config_change){
        .ch = {req, api, action, "config", create ? "" : http_req_param(req, "id")},
        .ans = {create ? 201 : 200, extra, NULL},
        .ar = {.op = op},
    };
    if (!create && (cc->ar.config_id = config_id_or_respond(req, &cc->ch)) == NULL)
        return false;
    return db_or_respond(req, api) &&
           api_idem_or_respond(req, &cc->ch, render_change, &cc->ans, &cc->ar.idem) &&
           (create || api_if_match_or_respond(req, &cc->ch, &cc->ar.if_match)) &&
           (fields == NULL || api_body_or_respond(req, &cc->ch, fields, nfields, &cc->body));
}

/* Reads the fields create_fields and put_fields share from the body into cc->ar. */
static void config_change_read_body(config_change *cc)
{
    json_t *body = cc->body;
    const char **groups;
    cc->ar.group_count = api_strv(cc->ch.req, body, "groups", &groups);
    cc->ar.groups = groups;
    cc->ar.ns = api_str(body, "namespace");
    cc->ar.name = api_str(body, "name");
    cc->ar.spec = json_object_get(body, "spec");
    cc->ar.message = api_str(body, "message");
    cc->ar.draft = json_is_true(json_object_get(body, "draft"));
}

void api_configs_create(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    config_change cc;
    if (!config_change_begin(&cc, req, api, APPLY_CREATE, "config.create", NULL, create_fields,
                             NFIELDS(create_fields)))
        return;
    config_change_read_body(&cc);
    if (cc.ar.ns == NULL || cc.ar.ns[0] == '\0')
        cc.ar.ns = "default";
    if (!config_scope_or_respond(req, api, &cc.ch, &cc.ar, "create"))
        return;
    run_change(&cc.ch, &cc.ar, &cc.ans);
}

void api_configs_validate(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    json_t *body;
    if (!db_or_respond(req, api) ||
        !api_body_or_respond(req, NULL, validate_fields, NFIELDS(validate_fields), &body))
        return;
    const char *id = api_str(body, "id");
    sx_err err;
    sx_err_clear(&err);
    if (id && !repo_is_uuid(id)) {
        sx_err_set(&err, SX_EINVAL, "the request body has 1 problem");
        api_refuse(req, NULL, &err, api_details1("id", "must be a config id (a UUID)"));
        return;
    }
    val_result problems = {0};
    sx_fielderrs verrs = {0};
    const char **groups;
    size_t ngroups = api_strv(req, body, "groups", &groups);
    apply_request ar = {
        .config_id = id,
        .ns = api_str(body, "namespace"),
        .name = api_str(body, "name"),
        .groups = groups,
        .group_count = ngroups,
        .spec = json_object_get(body, "spec"),
        .problems = &problems,
    };
    /* The caller names the groups: outside its scope is a 403 (a dry run is not audited). */
    policy_object obj = {groups, ngroups, ar.ns ? ar.ns : "default"};
    if (!rest_allows_object(api, req, "configs", "validate", &obj, NULL)) {
        sx_err_set(&err, SX_EFORBIDDEN, "role %s may not validate a config in these groups",
                   api_role(req));
        api_refuse(req, NULL, &err, json_array());
        return;
    }
    int rc = changes_validate(rest_server(api), &ar, http_req_arena(req), &verrs, &err);
    if (rc == 0) {
        json_t *g = json_array();
        for (size_t i = 0; i < ngroups; i++)
            json_array_append_new(g, json_string(groups[i]));
        http_respond_json(req, 200, json_pack("{s:b,s:o}", "valid", 1, "groups", g));
    } else {
        respond_refusal(req, NULL, rc, &err, &problems, &verrs);
    }
    val_result_free(&problems);
    sx_fielderrs_free(&verrs);
}

/* ------------------------------------------------------------------ one config */

void api_config_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    cfg_record *cfg = NULL;
    cfg_version *latest = NULL;
    if (!config_of_path_or_respond(req, api, &cfg, &latest))
        return;
    api_set_etag(req, cfg->latest_version);
    http_respond_json(req, 200, api_config_json(cfg, latest));
}

/* One object's stored status: {"kind", "namespace", "name", "observed_generation",
 * "written_at", "status"} (status as the cluster holds it). */
static json_t *k8s_object_json(const k8s_status_record *r)
{
    return json_pack("{s:s,s:s,s:s,s:I,s:s,s:O}", "kind", r->kind, "namespace", r->ns, "name",
                     r->name, "observed_generation", (json_int_t)r->generation, "written_at",
                     r->written_at ? r->written_at : "", "status", r->status);
}

/* GET /api/v1/configs/{id}/kubernetes: the status Sextant wrote back to the Gateway a
 * managed config is translated from ("gateway", null until written) and to the routes
 * and policies attached to it ("attached"). 404 for a config that is not managed. */
void api_config_kubernetes(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    cfg_record *cfg = NULL;
    cfg_version *latest = NULL;
    if (!config_of_path_or_respond(req, api, &cfg, &latest))
        return;
    sx_err err;
    sx_err_clear(&err);
    if (cfg->source != CFG_SOURCE_KUBERNETES || cfg->source_ref == NULL) {
        sx_err_set(&err, SX_ENOTFOUND, "config %s is not translated from Kubernetes", cfg->id);
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    k8s_status_record *rows = NULL;
    size_t n = 0;
    if (catalog_k8s_status(rest_server(api), cfg->source_ref, http_req_arena(req), &rows, &n,
                           &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    json_t *gateway = json_null(), *attached = json_array();
    for (size_t i = 0; i < n; i++) {
        const k8s_status_record *r = &rows[i];
        if (strcmp(r->kind, "Gateway") == 0 &&
            strcmp(cfg->source_ref,
                   sx_arena_printf(http_req_arena(req), "Gateway %s/%s", r->ns, r->name)) == 0) {
            json_decref(gateway);
            gateway = k8s_object_json(r);
        } else {
            json_array_append_new(attached, k8s_object_json(r));
        }
    }
    http_respond_json(req, 200,
                      json_pack("{s:s,s:s,s:o,s:o}", "config_id", cfg->id, "source_ref",
                                cfg->source_ref, "gateway", gateway, "attached", attached));
}

void api_config_put(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    config_change cc;
    if (!config_change_begin(&cc, req, api, APPLY_UPDATE, "config.update", NULL, put_fields,
                             NFIELDS(put_fields)))
        return;
    config_change_read_body(&cc);
    if (json_object_get(cc.body, "groups") && cc.ar.group_count == 0) {
        sx_err err;
        sx_err_set(&err, SX_EINVAL, "the request body has 1 problem");
        api_refuse(req, &cc.ch, &err, api_details1("groups", "must name at least one"));
        return;
    }
    if (cc.ar.name && cc.ar.name[0] == '\0')
        cc.ar.name = NULL;
    if (!config_scope_or_respond(req, api, &cc.ch, &cc.ar, "update"))
        return;
    run_change(&cc.ch, &cc.ar, &cc.ans);
}

void api_config_delete(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    config_change cc;
    if (!config_change_begin(&cc, req, api, APPLY_DELETE, "config.delete", NULL, NULL, 0))
        return;
    cc.ar.message = http_req_query(req, "message");
    if (!config_scope_or_respond(req, api, &cc.ch, &cc.ar, "delete"))
        return;
    run_change(&cc.ch, &cc.ar, &cc.ans);
}

/* ------------------------------------------------------------------ versions */

static int list_versions(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    cfg_version_list list;
    int rc = catalog_versions(rest_server(api), http_req_param(req, "id"), page->limit,
                              page->cursor, http_req_arena(req), &list, err);
    return API_PAGE_FILL(page, rc, list, version_item);
}

void api_config_versions(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *id = config_id_or_respond(req, NULL);
    if (id != NULL && config_visible_or_respond(req, api, id))
        api_list(req, api, list_versions);
}

static bool version_param_or_respond(http_request *req, const char *id, int *out)
{
    const char *v = http_req_param(req, "v");
    long long n;
    if (api_parse_positive(v, &n) && n <= 0x7fffffff) {
        *out = (int)n;
        return true;
    }
    sx_err err;
    sx_err_set(&err, SX_ENOTFOUND, "version %.32s of config %s does not exist", v ? v : "", id);
    api_refuse(req, NULL, &err, api_details1("v", "a version is a positive integer"));
    return false;
}

void api_config_version(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int v;
    const char *id = config_id_or_respond(req, NULL);
    if (id == NULL || !version_param_or_respond(req, id, &v) ||
        !config_visible_or_respond(req, api, id))
        return;
    cfg_version *ver = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (catalog_version(rest_server(api), id, v, http_req_arena(req), &ver, &err)) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    http_respond_json(req, 200, api_version_json(ver));
}

/* A from/to query parameter: absent gives 0; else a positive integer, or 400. */
static bool diff_param_or_respond(http_request *req, const char *name, int *out)
{
    *out = 0;
    const char *s = http_req_query(req, name);
    long long n;
    if (s == NULL)
        return true;
    if (api_parse_positive(s, &n) && n <= 0x7fffffff) {
        *out = (int)n;
        return true;
    }
    sx_err err;
    sx_err_set(&err, SX_EINVAL, "invalid %s", name);
    api_refuse(req, NULL, &err,
               api_details1(name, "must be a positive integer (a version number)"));
    return false;
}

void api_config_diff(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int from, to;
    const char *id = config_id_or_respond(req, NULL);
    if (id == NULL || !diff_param_or_respond(req, "from", &from) ||
        !diff_param_or_respond(req, "to", &to) || !config_visible_or_respond(req, api, id))
        return;
    cfg_version *vf = NULL, *vt = NULL;
    sx_err err;
    sx_err_clear(&err);
    /* Defaults: the latest version against the one before it. */
    if (catalog_version_pair(rest_server(api), id, &from, &to, http_req_arena(req), &vf, &vt,
                             &err)) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    json_t *d = diff_json(vf->spec, vt->spec, "spec");
    json_t *body = json_pack("{s:s,s:i,s:i,s:s,s:s}", "config_id", id, "from", from, "to", to,
                             "from_checksum", vf->checksum, "to_checksum", vt->checksum);
    json_object_update(body, d);
    json_decref(d);
    http_respond_json(req, 200, body);
}

/* ------------------------------------------------------------------ rollback */

static json_t *rollback_extra(const apply_result *res, const apply_request *ar)
{
    return json_pack("{s:{s:i,s:i,s:i}}", "rollback", "source_version", ar->rollback_to,
                     "before_version", res->before_version, "after_version", res->latest_version);
}

void api_config_rollback(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    config_change cc;
    if (!config_change_begin(&cc, req, api, APPLY_ROLLBACK, "config.rollback", rollback_extra,
                             rollback_fields, NFIELDS(rollback_fields)))
        return;
    json_int_t v = json_integer_value(json_object_get(cc.body, "version"));
    if (v < 1 || v > 0x7fffffff) {
        sx_err err;
        sx_err_set(&err, SX_EINVAL, "the request body has 1 problem");
        api_refuse(
            req, &cc.ch, &err,
            api_details1("version", "must be a positive integer (a version of this config)"));
        return;
    }
    const char *msg = api_str(cc.body, "message");
    char dflt[64];
    snprintf(dflt, sizeof(dflt), "rollback to version %lld", (long long)v);
    cc.ar.rollback_to = (int)v;
    cc.ar.message = msg && msg[0] ? msg : dflt;
    if (!config_scope_or_respond(req, api, &cc.ch, &cc.ar, "rollback"))
        return;
    run_change(&cc.ch, &cc.ar, &cc.ans);
}
