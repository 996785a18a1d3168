/*
 * groups.c — a proxy group's settings: its data planes (see groups.h).
 *
 * A change runs in one transaction: lock (or create) the group's row, check the live
 * configs of the group against the new data planes (val_planes_refusals, then the
 * translator over their merge when an ADS data plane is added), write, audit. The
 * snapshot does not change: what a data plane receives is decided by its protocol, not
 * by the group's setting, which only bounds what validation lets in.
 */
#include "server/groups.h"

#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_audit.h"
#include "storage/repo_common.h"
#include "storage/repo_configs.h"
#include "storage/pg_listener.h"
#include "storage/repo_groups.h"

/* The bits of stored names; 0 for none (or names this build does not know, which the
 * table's CHECK keeps out). */
static unsigned stored_planes(const group_settings *s)
{
    unsigned planes = 0;
    char why[128];
    if (s->n_data_planes && val_planes_parse((const char *const *)s->data_planes, s->n_data_planes,
                                             &planes, why, sizeof why) != 0)
        return 0;
    return planes;
}

static void fill_info(const group_settings *s, unsigned dflt, groups_info *out)
{
    unsigned planes = stored_planes(s);
    out->name = s->name;
    out->planes_default = planes == 0;
    out->planes = planes ? planes : (dflt ? dflt : VAL_PLANES_ALL);
    out->current_version = s->current_version;
}

int groups_planes(pg_conn *c, const char *const *groups, size_t n, sx_arena *a,
                  val_group_planes **out, sx_err *err)
{
    group_settings *s = NULL;
    val_group_planes *v = sx_arena_alloc(a, (n ? n : 1) * sizeof(*v));
    *out = v;
    int rc = group_repo_get(c, groups, n, a, &s, err);
    for (size_t i = 0; i < n; i++)
        v[i] = (val_group_planes){groups[i], rc == 0 ? stored_planes(&s[i]) : 0};
    return rc;
}

typedef struct get_ctx {
    const char *group;
    unsigned dflt;
    sx_arena *a;
    groups_info *out;
} get_ctx;

static int get_tx(pg_conn *c, void *arg, sx_err *err)
{
    get_ctx *g = arg;
    group_settings *s = NULL;
    int rc = group_repo_get(c, &g->group, 1, g->a, &s, err);
    if (rc == 0)
        fill_info(&s[0], g->dflt, g->out);
    return rc;
}

int groups_get(pg_pool *pool, const char *group, unsigned default_planes, sx_arena *a,
               groups_info *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (val_check_group_name(group, err))
        return SX_EINVAL;
    get_ctx g = {group, default_planes, a, out};
    return pg_tx(pool, get_tx, &g, err);
}

/* ------------------------------------------------------------------ the change */

typedef struct set_ctx {
    const groups_set_request *req;
    unsigned planes; /* the new setting; 0: the default */
    sx_arena *a;
    groups_info *out;
    val_result *problems;
} set_ctx;

static void add_problem(val_result *r, const char *path, const char *plane, const char *msg)
{
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->items = sx_realloc(r->items, r->cap * sizeof(*r->items));
    }
    r->items[r->count++] = (val_problem){
        .stage = VAL_SEMANTIC,
        .path = sx_strdup(path),
        .message = sx_strdup(msg),
        .data_plane = plane ? sx_strdup(plane) : NULL,
    };
}

/* What the group's live configs hold that the new planes cannot take. */
static int check_configs(pg_conn *c, set_ctx *ctx, unsigned planes, sx_err *err)
{
    const char *group = ctx->req->group;
    cfg_live *live = NULL;
    size_t n = 0;
    int rc = cfg_repo_live_in_groups(c, &group, 1, NULL, ctx->a, &live, &n, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        size_t before = ctx->problems->count;
        (void)val_planes_refusals(live[i].spec, group, planes, ctx->problems);
        /* Their paths are the config's: name it. */
        for (size_t k = before; k < ctx->problems->count; k++) {
            val_problem *p = &ctx->problems->items[k];
            char *path = sx_asprintf("configs[%s/%s].%s", live[i].ns, live[i].name, p->path);
            sx_free(p->path);
            p->path = path;
        }
    }
    if (ctx->problems->count == 0 && (planes & VAL_PLANES_ADS) && n > 0) {
        const json_t **specs = sx_arena_alloc(ctx->a, n * sizeof(*specs));
        for (size_t i = 0; i < n; i++)
            specs[i] = live[i].spec;
        sx_err terr;
        sx_err_clear(&terr);
        if (val_planes_translate(specs, n, group, &terr) != 0) {
            char msg[SX_ERR_MESSAGE_MAX + 64];
            snprintf(msg, sizeof msg, "the group's configuration does not translate for %s: %s",
                     (planes & VAL_PLANE_ENVOY) ? "envoy" : "grpc", terr.message);
            add_problem(ctx->problems, "data_planes", (planes & VAL_PLANE_ENVOY) ? "envoy" : "grpc",
                        msg);
        }
    }
    if (ctx->problems->count == 0)
        return 0;
    return sx_err_set(err, SX_EVALIDATION,
                      "the configs of group %s do not fit its new data planes: %zu problem%s",
                      group, ctx->problems->count, ctx->problems->count == 1 ? "" : "s");
}

static int set_tx(pg_conn *c, void *arg, sx_err *err)
{
    set_ctx *ctx = arg;
    const groups_set_request *req = ctx->req;
    val_result_free(ctx->problems);
    int rc = idem_begin(c, req->idem, ctx->a, err);
    if (rc || (req->idem && req->idem->replayed))
        return rc;
    group_settings before;
    if ((rc = group_repo_lock(c, req->group, ctx->a, &before, err)) != 0)
        return rc;
    unsigned dflt = req->default_planes ? req->default_planes : VAL_PLANES_ALL;
    unsigned effective = ctx->planes ? ctx->planes : dflt;
    if ((rc = check_configs(c, ctx, effective, err)) != 0)
        return rc;
    json_t *names = val_planes_json(ctx->planes);
    const char **v = sx_arena_alloc(ctx->a, 3 * sizeof(*v));
    size_t nv = 0;
    for (size_t i = 0; i < json_array_size(names); i++)
        v[nv++] = sx_arena_strdup(ctx->a, json_string_value(json_array_get(names, i)));
    json_decref(names);
    if ((rc = group_repo_set_planes(c, req->group, v, nv, ctx->a, err)) != 0 ||
        (rc = pg_notify(c, GROUPS_NOTIFY_CHANNEL, req->group, err)) != 0)
        return rc;

    group_settings after = before;
    after.data_planes = (char **)v;
    after.n_data_planes = nv;
    fill_info(&after, req->default_planes, ctx->out);

    unsigned was = stored_planes(&before);
    json_t *details = repo_own_json(
        ctx->a, json_pack("{s:s,s:o,s:o,s:o}", "group", req->group, "data_planes_before",
                          was ? val_planes_json(was) : json_null(), "data_planes",
                          ctx->planes ? val_planes_json(ctx->planes) : json_null(), "serves",
                          val_planes_json(effective)));
    return groups_change_end(c, GROUPS_WHO(req), "group.update", req->group, details, req->idem,
                             ctx->out, ctx->a, err);
}

int groups_check_change(const char *group, const char *author, const char *what, sx_err *err)
{
    if (group == NULL || group[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "%s needs a proxy group", what);
    if (val_check_group_name(group, err))
        return SX_EINVAL;
    if (author == NULL || author[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "%s needs an author", what);
    return 0;
}

int groups_set_planes(pg_pool *pool, const groups_set_request *req, sx_arena *a, groups_info *out,
                      val_result *problems, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    val_result_free(problems);
    if (val_check_group_name(req->group, err))
        return SX_EINVAL;
    if (req->author == NULL || req->author[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "a change of a group needs an author");
    unsigned planes = 0;
    if (!req->reset) {
        char why[160];
        if (val_planes_parse(req->planes, req->nplanes, &planes, why, sizeof why) != 0) {
            add_problem(problems, "data_planes", NULL, why);
            return sx_err_set(err, SX_EVALIDATION, "data_planes is invalid: %s", why);
        }
    }
    set_ctx ctx = {req, planes, a, out, problems};
    int rc = pg_tx(pool, set_tx, &ctx, err);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

int groups_limits(pg_conn *c, const val_limits *in, const char *const *groups, size_t n,
                  sx_arena *a, const val_limits **out, sx_err *err)
{
    *out = in;
    if (in == NULL || n == 0)
        return 0;
    val_limits *l = sx_arena_alloc(a, sizeof(*l));
    *l = *in;
    val_group_planes *gp = NULL;
    int rc = groups_planes(c, groups, n, a, &gp, err);
    if (rc)
        return rc;
    l->groups = gp;
    l->ngroups = n;
    *out = l;
    return 0;
}

int groups_change_end(pg_conn *c, groups_who who, const char *action, const char *group,
                      json_t *details, idem_request *idem, const void *result, sx_arena *a,
                      sx_err *err)
{
    audit_new an = {
        .actor = who.author,
        .actor_role = who.actor_role,
        .action = action,
        .resource_type = "group",
        .resource_id = group,
        .result = AUDIT_SUCCESS,
        .status_code = 200,
        .request_id = who.request_id,
        .client_request_id = who.client_request_id,
        .source_ip = who.source_ip,
        .details = details,
    };
    long long audit_id;
    int rc = audit_repo_append(c, &an, &audit_id, err);
    return rc ? rc : idem_end(c, idem, result, a, err);
}
