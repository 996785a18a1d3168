/*
 * apply.c — the configuration write path (see apply.h).
 *
 * The transaction body is written to be rerun: the snapshot writer's transaction
 * (snap_writer_tx) repeats it after a serialization failure, so it resets its result
 * at the start and allocates only from the caller's arena. The writer
 * (server/snapshot/writer.h) composes, stores, caches and announces each group's
 * snapshot; this file decides which groups a change recomposes, from what, and
 * validates, versions and audits the change.
 *
 * Order inside one change: lock the config row, lock every affected group row (sorted
 * by name, so two changes never wait on each other in a cycle), read the other live
 * configs of the groups, validate, write the version, recompose each group, append the
 * audit row.
 */
#include "server/apply.h"
#include "server/apply_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/hash.h"
#include "server/base/mem.h"
#include "server/base/strv.h"
#include "server/diff.h"
#include "server/events.h"
#include "server/groups.h"
#include "server/ir/ir.h"
#include "server/secrets.h"
#include "server/snapshot/compose.h"
#include "server/snapshot/writer.h"
#include "storage/repo_audit.h"
#include "storage/repo_common.h"
#include "storage/repo_configs.h"
#include "storage/repo_deployments.h"

/* The decoded forms of a change's documents: validation decodes each once and
 * composition merges the clean ones instead of decoding them again. self is the
 * config's (NULL unless it decoded cleanly), peers[i] the i-th peer's (NULL likewise, or
 * when the peers were not decoded). */
typedef struct change_irs {
    const ir_snapshot *self;
    const ir_snapshot **peers;
} change_irs;

typedef struct tx_ctx {
    const apply_request *req;
    snap_writer *w; /* set by each run of the transaction body */
    sx_arena *a;
    apply_result *out;
    sx_fielderrs *verrs;
    snap_record **written; /* the snapshots written, in out->snapshots' order */
    /* What validation read, reused by recomposition: the other live configs of the
     * config's groups (peers == NULL when nothing was read), and the config itself as it
     * is live after the write (self.spec == NULL when it is not live). */
    const cfg_live *peers;
    size_t npeers;
    const char *const *groups; /* the config's groups after the change */
    size_t ngroups;
    cfg_live self;
    change_irs irs; /* of self and peers */
} tx_ctx;

/* Fills in and sources (NULL allowed) with the live configs of group (NULL: all of
 * them), with their decoded forms when irs has them; returns how many. */
static size_t group_inputs(const cfg_live *live, const ir_snapshot *const *irs, size_t nlive,
                           const char *group, snap_compose_input *in, snap_source *sources)
{
    size_t n = 0;
    for (size_t i = 0; i < nlive; i++) {
        if (group && !sx_strv_has((const char *const *)live[i].groups, live[i].group_count, group))
            continue;
        in[n] = (snap_compose_input){live[i].ns, live[i].name, live[i].spec, irs ? irs[i] : NULL};
        if (sources)
            sources[n] = (snap_source){live[i].id, live[i].version};
        n++;
    }
    return n;
}

/* Recomposes group on c from its live configs; appends to ctx->out when a new snapshot
 * was written. */
static int recompose(pg_conn *c, tx_ctx *ctx, const char *group, const char *reason, sx_err *err)
{
    sx_arena *a = ctx->a;
    size_t n = 0;
    int rc;
    snap_compose_input *in;
    snap_source *sources;
    if (ctx->peers && sx_strv_has(ctx->groups, ctx->ngroups, group)) {
        /* The group's rows are locked since validation read them: they are still what a
         * query would return, plus the config's own new live version. */
        in = sx_arena_alloc(a, (ctx->npeers + 1) * sizeof(*in));
        sources = sx_arena_alloc(a, (ctx->npeers + 1) * sizeof(*sources));
        n = group_inputs(ctx->peers, ctx->irs.peers, ctx->npeers, group, in, sources);
        if (ctx->self.spec) {
            in[n] =
                (snap_compose_input){ctx->self.ns, ctx->self.name, ctx->self.spec, ctx->irs.self};
            sources[n++] = (snap_source){ctx->self.id, ctx->self.version};
        }
    } else {
        cfg_live *live = NULL;
        if ((rc = cfg_repo_live_in_groups(c, &group, 1, NULL, a, &live, &n, err)) != 0)
            return rc;
        in = sx_arena_alloc(a, (n ? n : 1) * sizeof(*in));
        sources = sx_arena_alloc(a, (n ? n : 1) * sizeof(*sources));
        n = group_inputs(live, NULL, n, NULL, in, sources);
    }
    snap_write sw = {group, in, n, sources, n, reason, ctx->req->author, NULL};
    snap_record *rec = NULL;
    rc = snap_writer_write(ctx->w, c, &sw, ctx->verrs, &rec, err);
    if (rc || rec == NULL)
        return rc;
    apply_result *out = ctx->out;
    out->snapshots[out->snapshot_count] = (apply_snapshot){sx_arena_strdup(a, group), rec->version};
    ctx->written[out->snapshot_count] = rec;
    out->snapshot_count++;
    return 0;
}

static long long now_or(long long t)
{
    return t > 0 ? t : (long long)time(NULL);
}

/* The pipeline's verdict on problems: sets err from it and returns the code. */
static int refuse(const val_result *res, int rc, sx_err *err)
{
    if (rc == SX_ECONFLICT) {
        const char *other = NULL;
        for (size_t i = 0; i < res->count && other == NULL; i++)
            other = res->items[i].conflict_with;
        sx_err_set(err, SX_ECONFLICT, "configuration conflicts with config %s",
                   other ? other : "of the same group");
        sx_err_detail(err, "Another live config of one of the groups claims the same listener "
                           "address and port or the same hostname and path.");
        return SX_ECONFLICT;
    }
    return sx_err_set(err, SX_EVALIDATION, "configuration is invalid: %zu problem%s", res->count,
                      res->count == 1 ? "" : "s");
}

static void free_decoded(void *p)
{
    val_decoded_free(p);
}

static void free_ir(void *p)
{
    ir_snapshot_free(p);
}

/* Decodes spec (as a config) and every peer's spec once for the whole change, into a:
 * *vp is the pipeline's view of the peers, irs the clean decodes for composition.
 * Returns the config's decoded form. */
static const val_decoded *decode_change(sx_arena *a, const json_t *spec, const cfg_live *peers,
                                        size_t npeers, val_peer **vp, change_irs *irs)
{
    val_decoded *self = sx_arena_alloc(a, sizeof(*self));
    val_decode(spec, false, self);
    sx_arena_defer(a, free_decoded, self);
    irs->self = self->clean ? self->ir : NULL;
    irs->peers = sx_arena_alloc(a, (npeers ? npeers : 1) * sizeof(*irs->peers));
    val_peer *v = sx_arena_alloc(a, (npeers ? npeers : 1) * sizeof(*v));
    for (size_t i = 0; i < npeers; i++) {
        val_decoded *d = sx_arena_alloc(a, sizeof(*d));
        val_decode(peers[i].spec, true, d);
        sx_arena_defer(a, free_decoded, d);
        irs->peers[i] = d->clean ? d->ir : NULL;
        v[i] = (val_peer){peers[i].id, peers[i].ns, peers[i].name, peers[i].spec, d};
    }
    *vp = v;
    return self;
}

/* Checks spec before it is stored: the whole pipeline against peers when the request
 * carries limits, else the codec alone. irs receives what was decoded. */
static int check_spec(const apply_request *req, const json_t *spec, const cfg_live *peers,
                      size_t npeers, sx_arena *a, sx_fielderrs *verrs, change_irs *irs, sx_err *err,
                      const val_limits *limits)
{
    if (req->limits == NULL) {
        ir_snapshot *ir = NULL;
        irs->peers = NULL;
        if (ir_snapshot_from_json(spec, "spec", &ir, verrs) != 0) {
            char *joined = sx_fielderrs_join(verrs);
            sx_err_set(err, SX_EVALIDATION, "configuration is invalid: %zu problem%s", verrs->count,
                       verrs->count == 1 ? "" : "s");
            sx_err_detail(err, "%s", joined);
            sx_free(joined);
            return SX_EVALIDATION;
        }
        irs->self = sx_arena_defer(a, free_ir, ir);
        return 0;
    }
    val_peer *vp = NULL;
    const val_decoded *self = decode_change(a, spec, peers, npeers, &vp, irs);
    val_result local = {0};
    val_result *res = req->problems ? req->problems : &local;
    val_result_free(res);
    int rc = val_run_decoded(spec, self, vp, npeers, limits, now_or(req->now_unix), res);
    if (rc != 0)
        rc = refuse(res, rc, err);
    val_result_free(&local);
    return rc;
}

static json_t *snapshots_json(const apply_result *out)
{
    json_t *snaps = json_array();
    for (size_t i = 0; i < out->snapshot_count; i++)
        json_array_append_new(snaps, json_pack("{s:s,s:I}", "group", out->snapshots[i].group,
                                               "version", (json_int_t)out->snapshots[i].version));
    return snaps;
}

static const char *op_verb(apply_op op)
{
    static const char *const verbs[] = {
        [APPLY_CREATE] = "created", [APPLY_DELETE] = "deleted", [APPLY_ROLLBACK] = "rolled back"};
    return (size_t)op < sizeof verbs / sizeof *verbs && verbs[op] ? verbs[op] : "changed";
}

static bool empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* Whether req's source may change old (see Ownership in apply.h). */
static int check_owner(const apply_request *req, const cfg_record *old, sx_err *err)
{
    if (old->source == req->source || (req->source == CFG_SOURCE_REST && req->op == APPLY_ROLLBACK))
        return 0;
    if (req->source != CFG_SOURCE_REST) {
        sx_err_set(err, SX_ECONFLICT, "config %s/%s exists and is not managed by %s", old->ns,
                   old->name, cfg_source_name(req->source));
        sx_err_detail(err, "It was written through the REST API; a source of configuration "
                           "does not take over a config it did not create.");
        sx_err_hint(err, "Delete or rename that config, or give this one another name.");
        return SX_ECONFLICT;
    }
    /* "Gateway default/web": the kind of object to change is the first word. */
    const char *ref = old->source_ref ? old->source_ref : "";
    const char *space = strchr(ref, ' ');
    char kind[64] = "Kubernetes objects";
    if (space && space > ref)
        snprintf(kind, sizeof(kind), "%.*s", (int)(space - ref), ref);
    sx_err_set(err, SX_EMANAGED,
               "config %s/%s is managed by Kubernetes (%s); change the %s instead", old->ns,
               old->name, ref, kind);
    sx_err_detail(err,
                  "Its versions are translated from %s and what is attached to it; a change "
                  "made here would be replaced by the next translation.",
                  ref);
    sx_err_hint(err, "To go back to an earlier version meanwhile, roll back to it or roll it out.");
    return SX_EMANAGED;
}

static int apply_tx(pg_conn *c, snap_writer *w, void *arg, sx_err *err)
{
    tx_ctx *ctx = arg;
    ctx->w = w;
    const apply_request *req = ctx->req;
    sx_arena *a = ctx->a;
    apply_result *out = ctx->out;
    memset(out, 0, sizeof(*out));
    sx_fielderrs_free(ctx->verrs);
    if (req->problems)
        val_result_free(req->problems);
    ctx->peers = NULL;
    ctx->npeers = 0;
    memset(&ctx->self, 0, sizeof(ctx->self));

    int rc = idem_begin(c, req->idem, a, err);
    if (rc || (req->idem && req->idem->replayed))
        return rc;
    /* The config as it is now, locked. */
    apply_op op = req->op;
    cfg_record *old = NULL;
    if (op == APPLY_UPSERT) {
        if ((rc = cfg_repo_lock_name(c, req->ns, req->name, err)) != 0)
            return rc;
        rc = cfg_repo_get_by_name(c, req->ns, req->name, a, &old, err);
        if (rc && rc != SX_ENOTFOUND)
            return rc;
        if (rc == SX_ENOTFOUND) {
            old = NULL;
            op = APPLY_CREATE;
        } else {
            op = APPLY_UPDATE;
        }
    }
    if (op != APPLY_CREATE) {
        const char *id = old ? old->id : req->config_id;
        if ((rc = cfg_repo_lock(c, id, a, &old, err)) != 0 ||
            (rc = check_owner(req, old, err)) != 0)
            return rc;
        if (req->if_match > 0 && old->latest_version != req->if_match) {
            sx_err_set(err, SX_EPRECONDITION,
                       "config %s has changed: its latest version is %d, not %d", old->id,
                       old->latest_version, req->if_match);
            sx_err_detail(err, "Another change was saved first.");
            sx_err_hint(err, "Read the config again and reapply the change on top of version %d.",
                        old->latest_version);
            return SX_EPRECONDITION;
        }
        if (req->op == APPLY_UPDATE && !empty(req->ns) && strcmp(req->ns, old->ns) != 0) {
            sx_err_set(err, SX_EINVAL, "the namespace of config %s cannot change from %s to %s",
                       old->id, old->ns, req->ns);
            sx_err_hint(err, "Create a config in the other namespace and delete this one.");
            return SX_EINVAL;
        }
        out->config_id = old->id;
        out->before_version = old->latest_version;
        out->version = old->live_version;
        out->latest_version = old->latest_version;
    }

    if (op == APPLY_CREATE) {
        /* A taken name is the answer even when the spec would also clash with it. */
        cfg_record *same = NULL;
        rc = cfg_repo_get_by_name(c, req->ns, req->name, a, &same, err);
        if (rc == 0) {
            sx_err_set(err, SX_ECONFLICT, "config %s/%s already exists", req->ns, req->name);
            sx_err_detail(err,
                          "Its id is %s. Names are unique within a namespace among configs "
                          "that are not deleted.",
                          same->id);
            return SX_ECONFLICT;
        }
        if (rc != SX_ENOTFOUND)
            return rc;
    }

    /* What it becomes. */
    const json_t *spec = req->spec;
    cfg_version *src = NULL;
    if (op == APPLY_ROLLBACK) {
        if ((rc = cfg_repo_get_version(c, old->id, req->rollback_to, a, &src, err)) != 0)
            return rc;
        spec = src->spec;
    }
    cfg_version *prev = NULL; /* private keys written back redacted keep the stored ones */
    if (op == APPLY_UPDATE && old->latest_version > 0 && secrets_has_redacted(spec) &&
        ((rc = cfg_repo_get_version(c, old->id, old->latest_version, a, &prev, err)) != 0 ||
         (rc = secrets_keep_redacted(a, spec, prev->spec, &spec, err)) != 0))
        return rc;
    const char *const *groups = req->groups;
    size_t ngroups = req->group_count;
    bool set_groups = ngroups > 0;
    if (op == APPLY_DELETE) {
        groups = NULL;
        ngroups = 0;
    } else if (!set_groups && old) {
        groups = (const char *const *)old->groups;
        ngroups = old->group_count;
    }
    const char *ns = old ? old->ns : req->ns;
    const char *name = req->name && op != APPLY_DELETE ? req->name : old ? old->name : NULL;

    const char **affected = NULL;
    size_t naffected =
        sx_strv_union(a, groups, ngroups, old ? (const char *const *)old->groups : NULL,
                      old ? old->group_count : 0, &affected);
    if ((rc = snap_writer_lock_groups(c, affected, naffected, err)) != 0)
        return rc;
    if (op != APPLY_DELETE) {
        cfg_live *peers = NULL;
        size_t npeers = 0;
        const val_limits *lim = NULL;
        if ((rc = cfg_repo_live_in_groups(c, groups, ngroups, old ? old->id : NULL, a, &peers,
                                          &npeers, err)) != 0 ||
            (rc = groups_limits(c, req->limits, groups, ngroups, a, &lim, err)) != 0 ||
            (rc = check_spec(req, spec, peers, npeers, a, ctx->verrs, &ctx->irs, err, lim)) != 0)
            return rc;
        ctx->peers = peers ? peers : sx_arena_alloc(a, sizeof(*peers));
        ctx->npeers = npeers;
        ctx->groups = groups;
        ctx->ngroups = ngroups;
    }

    /* Write. */
    switch (op) {
    case APPLY_CREATE: {
        cfg_new cn = {ns,          name,         groups,     ngroups,     spec,
                      req->author, req->message, req->draft, req->source, req->source_ref};
        cfg_record *rec = NULL;
        if ((rc = cfg_repo_create(c, &cn, a, &rec, err)) != 0)
            return rc;
        out->config_id = rec->id;
        out->version = rec->live_version;
        out->latest_version = 1;
        out->created = out->changed = true;
        break;
    }
    case APPLY_DELETE:
        if ((rc = cfg_repo_delete(c, old->id, old->latest_version, err)) != 0)
            return rc;
        out->changed = true;
        break;
    default: {
        bool renamed = strcmp(name, old->name) != 0;
        if (op == APPLY_UPDATE && !renamed &&
            sx_strv_same_set(groups, ngroups, (const char *const *)old->groups, old->group_count)) {
            /* The same content again is not a change: for the REST API the same as the
             * latest version (a draft included); for a managed source the same as the
             * newest version it wrote itself, so that what an operator made live since
             * (a rollback, a rollout of another version) holds until the source's
             * translation changes. */
            char sum[SX_SHA256_HEX_LEN + 1];
            cfg_repo_checksum(spec, sum);
            cfg_version *cur = NULL;
            rc = req->source != CFG_SOURCE_REST
                     ? cfg_repo_newest_own_version(c, old->id, req->author, a, &cur, err)
                 : old->latest_version > 0
                     ? cfg_repo_get_version(c, old->id, old->latest_version, a, &cur, err)
                     : 0;
            if (rc)
                return rc;
            if (cur && strcmp(cur->checksum, sum) == 0 && cur->draft == req->draft)
                break;
        }
        cfg_change ch = {
            .spec = spec,
            .author = req->author,
            .message = req->message,
            .draft = req->draft,
            .source_version = src ? src->version : 0,
            .name = renamed ? name : NULL,
            .set_groups = set_groups,
            .groups = groups,
            .group_count = ngroups,
            .source_ref = req->source == CFG_SOURCE_REST ? NULL : req->source_ref,
        };
        cfg_version *v = NULL;
        if ((rc = cfg_repo_add_version(c, old->id, old->latest_version, &ch, a, &v, err)) != 0)
            return rc;
        out->latest_version = v->version;
        if (!req->draft)
            out->version = v->version;
        out->changed = true;
        break;
    }
    }

    /* A managed source repeating itself leaves no trace, not even an audit row. */
    if (!out->changed && req->source != CFG_SOURCE_REST)
        return 0;

    /* The config as composition sees it now: its live version (a draft leaves the
     * previous live version in force, which is not at hand here: read it again). */
    if (ctx->peers && out->changed && op != APPLY_DELETE) {
        if (!req->draft) {
            ctx->self = (cfg_live){out->config_id, (char *)ns,    (char *)name, NULL, 0,
                                   out->version,   (json_t *)spec};
        } else {
            ctx->peers = NULL;
        }
    }

    /* Drafts change no snapshot: allowed while a deployment holds the groups. */
    if (out->changed && (!req->draft || op == APPLY_DELETE) &&
        (rc = snap_writer_refuse_held(c, a, affected, naffected, err)) != 0)
        return rc;

    /* Recompose every group the change touched (a draft that moves the config to other
     * groups moves its live version too). Unchanged content writes nothing. */
    out->snapshots = sx_arena_alloc(a, (naffected ? naffected : 1) * sizeof(*out->snapshots));
    ctx->written = sx_arena_alloc(a, (naffected ? naffected : 1) * sizeof(*ctx->written));
    if (out->changed) {
        const char *msg = req->message ? req->message : "";
        char *ver = op == APPLY_DELETE ? "" : sx_arena_printf(a, " v%d", out->latest_version);
        char *reason = sx_arena_printf(a, "config %s/%s%s %s%s%s", ns, name, ver, op_verb(op),
                                       msg[0] ? ": " : "", msg);
        for (size_t i = 0; i < naffected; i++)
            if ((rc = recompose(c, ctx, affected[i], reason, err)) != 0)
                return rc;
    }

    apply_event ev = {op == APPLY_CREATE   ? EVENT_CONFIG_CREATED
                      : op == APPLY_DELETE ? EVENT_CONFIG_DELETED
                                           : EVENT_CONFIG_UPDATED,
                      ns,
                      name,
                      out->config_id,
                      out->latest_version,
                      req->draft,
                      old && strcmp(old->name, name) != 0 ? old->name : NULL,
                      op == APPLY_DELETE ? (const char *const *)old->groups : groups,
                      op == APPLY_DELETE ? old->group_count : ngroups,
                      req->author};
    if (out->changed && (rc = apply_events_emit(c, &ev, err)) != 0)
        return rc;
    json_t *details =
        repo_own_json(a, json_pack("{s:s,s:s,s:i,s:i,s:i,s:b,s:b,s:b}", "namespace", ns, "name",
                                   name, "before_version", out->before_version, "after_version",
                                   out->latest_version, "live_version", out->version, "created",
                                   out->created, "changed", out->changed, "draft", req->draft));
    if (op == APPLY_DELETE)
        json_object_set_new(details, "deleted", json_true());
    if (src)
        json_object_set_new(details, "source_version", json_integer(src->version));
    cfg_source source = old ? old->source : req->source;
    if (source != CFG_SOURCE_REST) {
        json_object_set_new(details, "source", json_string(cfg_source_name(source)));
        const char *ref = req->source == source && req->source_ref ? req->source_ref
                          : old                                    ? old->source_ref
                                                                   : NULL;
        if (ref)
            json_object_set_new(details, "source_ref", json_string(ref));
    }
    if (req->message && req->message[0])
        json_object_set_new(details, "message", json_string(req->message));
    if (req->audit_scope)
        json_object_set(details, "scope", (json_t *)req->audit_scope);
    json_object_set_new(details, "snapshots", snapshots_json(out));
    audit_new an = {
        .actor = req->author,
        .actor_role = req->actor_role,
        .action = req->action,
        .resource_type = "config",
        .resource_id = out->config_id,
        .result = AUDIT_SUCCESS,
        .status_code = op == APPLY_CREATE ? 201 : 200,
        .request_id = req->request_id,
        .client_request_id = req->client_request_id,
        .source_ip = req->source_ip,
        .details = details,
    };
    long long audit_id;
    if ((rc = audit_repo_append(c, &an, &audit_id, err)) != 0 || req->idem == NULL)
        return rc;
    /* The answer of a keyed change is rendered in its transaction: read the config back. */
    if ((rc = cfg_repo_get(c, out->config_id, true, a, &out->record, err)) != 0 ||
        (rc = cfg_repo_get_version(c, out->config_id, out->record->latest_version, a,
                                   &out->record_latest, err)) != 0)
        return rc;
    return idem_end(c, req->idem, out, a, err);
}

int apply_config(pg_pool *pool, snap_repo *snaps, const apply_request *req, sx_arena *a,
                 apply_result *out, sx_fielderrs *verrs, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (req->problems)
        val_result_free(req->problems);
    switch (req->op) {
    case APPLY_UPSERT:
    case APPLY_CREATE:
        if (empty(req->ns) || empty(req->name))
            return sx_err_set(err, SX_EINVAL, "a config needs a namespace and a name");
        if (req->group_count == 0)
            return sx_err_set(err, SX_EINVAL, "a config needs at least one proxy group");
        break;
    case APPLY_UPDATE:
    case APPLY_DELETE:
    case APPLY_ROLLBACK:
        if (empty(req->config_id))
            return sx_err_set(err, SX_EINVAL, "a change of a config needs its id");
        if (req->op == APPLY_ROLLBACK && req->rollback_to < 1)
            return sx_err_set(err, SX_EINVAL, "a rollback needs a version to return to");
        break;
    default:
        return sx_err_set(err, SX_EINVAL, "unknown change %d", (int)req->op);
    }
    if (empty(req->author) || req->action == NULL)
        return sx_err_set(err, SX_EINVAL, "a change needs an author and an action");
    if (req->op != APPLY_DELETE && req->op != APPLY_ROLLBACK && !json_is_object(req->spec))
        return sx_err_set(err, SX_EINVAL, "spec must be a JSON object");
    if (req->source != CFG_SOURCE_REST &&
        ((req->op != APPLY_UPSERT && req->op != APPLY_DELETE) || req->draft))
        return sx_err_set(err, SX_EINVAL, "a managed source upserts or deletes live versions only");
    if (req->source != CFG_SOURCE_REST && req->op == APPLY_UPSERT && empty(req->source_ref))
        return sx_err_set(err, SX_EINVAL, "a managed config needs a source_ref");
    int rc = req->op == APPLY_DELETE || req->op == APPLY_ROLLBACK
                 ? 0
                 : val_check_groups(req->groups, req->group_count, req->problems, err);
    if (rc)
        return rc;

    tx_ctx ctx = {.req = req, .a = a, .out = out, .verrs = verrs};
    int64_t t0 = sx_monotonic_ms();
    rc = snap_writer_tx(pool, snaps, a, apply_tx, &ctx, err);
    apply_events_count(rc, out->changed, (double)(sx_monotonic_ms() - t0) / 1000.0);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* ------------------------------------------------------------------ dry run */

typedef struct validate_ctx {
    const apply_request *req;
    sx_arena *a;
    sx_fielderrs *verrs;
} validate_ctx;

static int validate_tx(pg_conn *c, void *arg, sx_err *err)
{
    validate_ctx *ctx = arg;
    const apply_request *req = ctx->req;
    sx_arena *a = ctx->a;
    sx_fielderrs_free(ctx->verrs);
    val_result_free(req->problems);

    cfg_record *self = NULL;
    int rc = 0;
    if (!empty(req->config_id))
        rc = cfg_repo_get(c, req->config_id, false, a, &self, err);
    else if (!empty(req->ns) && !empty(req->name)) {
        rc = cfg_repo_get_by_name(c, req->ns, req->name, a, &self, err);
        if (rc == SX_ENOTFOUND)
            rc = 0;
    }
    if (rc)
        return rc;
    const char *const *groups = req->groups;
    size_t ngroups = req->group_count;
    if (ngroups == 0 && self) {
        groups = (const char *const *)self->groups;
        ngroups = self->group_count;
    }
    if (ngroups == 0)
        return sx_err_set(err, SX_EINVAL, "a config needs at least one proxy group");
    const char *ns = self ? self->ns : empty(req->ns) ? "default" : req->ns;
    const char *name = !empty(req->name) ? req->name : self ? self->name : "(new)";

    cfg_live *peers = NULL;
    size_t npeers = 0;
    if ((rc = cfg_repo_live_in_groups(c, groups, ngroups, self ? self->id : NULL, a, &peers,
                                      &npeers, err)) != 0)
        return rc;
    val_peer *vp = NULL;
    change_irs irs;
    const val_limits *lim = NULL;
    if ((rc = groups_limits(c, req->limits, groups, ngroups, a, &lim, err)) != 0)
        return rc;
    const val_decoded *dec = decode_change(a, req->spec, peers, npeers, &vp, &irs);
    int vrc =
        val_run_decoded(req->spec, dec, vp, npeers, lim, now_or(req->now_unix), req->problems);

    /* What each group's snapshot would be, checked by the codec like the write path; a
     * spec the pipeline refused would only repeat its problems there. */
    snap_compose_input *in = sx_arena_alloc(a, (npeers + 1) * sizeof(*in));
    for (size_t g = 0; vrc == 0 && g < ngroups; g++) {
        size_t n = group_inputs(peers, irs.peers, npeers, groups[g], in, NULL);
        in[n++] = (snap_compose_input){ns, name, req->spec, irs.self};
        (void)snap_writer_dry_run(a, groups[g], in, n, ctx->verrs);
    }
    if (vrc == 0 && ctx->verrs->count == 0)
        return 0;
    if (vrc == SX_ECONFLICT && ctx->verrs->count == 0)
        return refuse(req->problems, SX_ECONFLICT, err);
    return sx_err_set(err, SX_EVALIDATION, "configuration is invalid: %zu problem%s",
                      req->problems->count + ctx->verrs->count,
                      req->problems->count + ctx->verrs->count == 1 ? "" : "s");
}

int apply_validate(pg_pool *pool, const apply_request *req, sx_arena *a, sx_fielderrs *verrs,
                   sx_err *err)
{
    if (req->limits == NULL || req->problems == NULL)
        return sx_err_set(err, SX_EINVAL, "a dry run needs limits and a problem list");
    val_result_free(req->problems);
    if (!json_is_object(req->spec))
        return sx_err_set(err, SX_EINVAL, "spec must be a JSON object");
    int rc = val_check_groups(req->groups, req->group_count, req->problems, err);
    if (rc)
        return rc;
    validate_ctx ctx = {req, a, verrs};
    return pg_tx(pool, validate_tx, &ctx, err);
}

/* ------------------------------------------------------------------ publish */

typedef struct publish_ctx {
    const apply_publish_request *req;
    const ir_snapshot *ir; /* req->spec, decoded once */
    sx_arena *a;
    sx_fielderrs *verrs;
    snap_record *written;
} publish_ctx;

static int publish_tx(pg_conn *c, snap_writer *w, void *arg, sx_err *err)
{
    publish_ctx *ctx = arg;
    const apply_publish_request *req = ctx->req;
    sx_fielderrs_free(ctx->verrs);
    snap_compose_input in = {"", req->group, req->spec, ctx->ir};
    snap_write sw = {req->group, &in, 1, NULL, 0, req->message, req->author, NULL};
    int rc = snap_writer_publish(w, c, &sw, NULL, ctx->verrs, &ctx->written, err);
    if (rc)
        return rc;
    json_t *details = repo_own_json(
        ctx->a, json_pack("{s:s,s:b}", "group", req->group, "changed", ctx->written != NULL));
    if (ctx->written)
        json_object_set_new(details, "version", json_integer(ctx->written->version));
    audit_new an = {
        .actor = req->author,
        .actor_role = req->actor_role,
        .action = "snapshot.publish",
        .resource_type = "group",
        .resource_id = req->group,
        .result = AUDIT_SUCCESS,
        .details = details,
    };
    long long audit_id;
    return audit_repo_append(c, &an, &audit_id, err);
}

int apply_publish(pg_pool *pool, snap_repo *snaps, const apply_publish_request *req, sx_arena *a,
                  long long *version, sx_fielderrs *verrs, sx_err *err)
{
    *version = 0;
    int rc = groups_check_change(req->group, req->author, "a snapshot", err);
    if (rc)
        return rc;
    if (!json_is_object(req->spec))
        return sx_err_set(err, SX_EINVAL, "the snapshot must be a JSON object");
    ir_snapshot *ir = NULL;
    if (ir_snapshot_from_json(req->spec, "snapshot", &ir, verrs) != 0)
        return sx_err_set(err, SX_EVALIDATION, "snapshot is invalid: %zu problem%s", verrs->count,
                          verrs->count == 1 ? "" : "s");
    publish_ctx ctx = {req, sx_arena_defer(a, free_ir, ir), a, verrs, NULL};
    rc = snap_writer_tx(pool, snaps, a, publish_tx, &ctx, err);
    if (rc == 0 && ctx.written)
        *version = ctx.written->version;
    return rc;
}

/* ------------------------------------------------------------------ rollouts */

static json_t *content_only(sx_arena *a, const json_t *ir)
{
    if (ir == NULL)
        return repo_own_json(a, json_object());
    json_t *copy = repo_own_json(a, json_deep_copy(ir));
    json_object_del(copy, "id");
    json_object_del(copy, "generated_at");
    return copy;
}

int apply_stage(pg_conn *c, const apply_stage_request *req, sx_arena *a, apply_stage_result *out,
                sx_fielderrs *verrs, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    sx_fielderrs_free(verrs);
    if (req->problems)
        val_result_free(req->problems);
    if (empty(req->config_id) || req->version < 1 || empty(req->author))
        return sx_err_set(err, SX_EINVAL, "staging needs a config, a version and an author");
    cfg_record *cfg = NULL;
    cfg_version *ver = NULL;
    int rc = cfg_repo_lock(c, req->config_id, a, &cfg, err);
    if (rc || (rc = cfg_repo_get_version(c, cfg->id, req->version, a, &ver, err)) != 0)
        return rc;
    out->config = cfg;
    out->version = ver;
    const char *const *groups = req->group_count ? req->groups : (const char *const *)cfg->groups;
    size_t ngroups = req->group_count ? req->group_count : cfg->group_count;
    for (size_t i = 0; i < ngroups; i++)
        if (!sx_strv_has((const char *const *)cfg->groups, cfg->group_count, groups[i]))
            return sx_err_set(err, SX_ENOTFOUND, "config %s/%s does not apply to group %s", cfg->ns,
                              cfg->name, groups[i]);
    const char **sorted = NULL;
    ngroups = sx_strv_union(a, groups, ngroups, NULL, 0, &sorted);
    if ((rc = snap_writer_lock_groups(c, sorted, ngroups, err)) != 0)
        return rc;
    if ((rc = snap_writer_refuse_held(c, a, sorted, ngroups, err)) != 0)
        return rc;

    /* The whole pipeline, against the other live configs of every group of the config
     * (the version becomes live in all of them once promoted). */
    cfg_live *peers = NULL;
    size_t npeers = 0;
    change_irs irs;
    apply_request vreq = {
        .limits = req->limits, .now_unix = req->now_unix, .problems = req->problems};
    const val_limits *lim = NULL;
    if ((rc = cfg_repo_live_in_groups(c, (const char *const *)cfg->groups, cfg->group_count,
                                      cfg->id, a, &peers, &npeers, err)) != 0 ||
        (rc = groups_limits(c, req->limits, (const char *const *)cfg->groups, cfg->group_count, a,
                            &lim, err)) != 0 ||
        (rc = check_spec(&vreq, ver->spec, peers, npeers, a, verrs, &irs, err, lim)) != 0)
        return rc;

    out->groups = sx_arena_alloc(a, (ngroups ? ngroups : 1) * sizeof(*out->groups));
    out->written = sx_arena_alloc(a, (ngroups ? ngroups : 1) * sizeof(*out->written));
    snap_compose_input *in = sx_arena_alloc(a, (npeers + 1) * sizeof(*in));
    snap_source *sources = sx_arena_alloc(a, (npeers + 1) * sizeof(*sources));
    for (size_t g = 0; g < ngroups; g++) {
        const char *group = sorted[g];
        apply_stage_group *sg = &out->groups[out->group_count++];
        memset(sg, 0, sizeof(*sg));
        sg->group = sx_arena_strdup(a, group);
        if ((rc = snap_repo_current_version(c, group, &sg->from_version, err)) != 0)
            return rc;
        if (sg->from_version > 0 &&
            (rc = snap_repo_ir_on(c, group, sg->from_version, a, &sg->from_ir, err)) != 0)
            return rc;
        size_t n = group_inputs(peers, irs.peers, npeers, group, in, sources);
        in[n] = (snap_compose_input){cfg->ns, cfg->name, ver->spec, irs.self};
        sources[n++] = (snap_source){cfg->id, ver->version};
        if (req->deployment_id == NULL) {
            json_t *composed = snap_writer_dry_run(a, group, in, n, verrs);
            sg->to_ir = composed;
            char sum[SX_SHA256_HEX_LEN + 1], *cur = NULL;
            snap_writer_checksum(composed, sum);
            if (sg->from_version > 0 &&
                (rc = snap_repo_checksum(c, group, sg->from_version, a, &cur, err)) != 0)
                return rc;
            sg->changed = cur == NULL || strcmp(cur, sum) != 0;
            sg->to_version = sg->changed ? 0 : sg->from_version;
        } else {
            char *reason = sx_arena_printf(a, "config %s/%s v%d staged by deployment %s", cfg->ns,
                                           cfg->name, ver->version, req->deployment_id);
            snap_write sw = {group, in, n, sources, n, reason, req->author, req->deployment_id};
            snap_record *rec = NULL;
            if ((rc = snap_writer_write(snap_writer_plain(a), c, &sw, verrs, &rec, err)) != 0)
                return rc;
            sg->changed = rec != NULL;
            sg->to_version = rec ? rec->version : sg->from_version;
            sg->to_ir = rec ? rec->ir : sg->from_ir;
            if (rec)
                out->written[out->nwritten++] = rec;
        }
        sg->diff = repo_own_json(
            a, diff_json(content_only(a, sg->from_ir), content_only(a, sg->to_ir), NULL));
    }
    if (verrs->count > 0)
        return sx_err_set(err, SX_EVALIDATION,
                          "the snapshot of a group would be invalid: %zu "
                          "problem%s",
                          verrs->count, verrs->count == 1 ? "" : "s");
    return 0;
}

int apply_promote(pg_conn *c, const deploy_record *d, sx_arena *a, sx_err *err)
{
    const char *group;
    json_t *v;
    int rc;
    json_object_foreach((json_t *)d->target_snapshots, group, v)
    {
        if ((rc = snap_writer_promote(c, group, (long long)json_integer_value(v), a, err)) != 0)
            return rc;
    }
    return cfg_repo_set_live(c, d->config_id, d->config_version, err);
}

int apply_unpromote(pg_conn *c, const deploy_record *d, const char *author, sx_arena *a,
                    snap_record ***written, size_t *nwritten, sx_fielderrs *verrs, sx_err *err)
{
    *written = NULL;
    *nwritten = 0;
    int rc = cfg_repo_set_live(c, d->config_id, d->previous_live_version, err);
    if (rc)
        return rc;
    const char **groups = NULL;
    size_t n = sx_strv_union(a, (const char *const *)d->groups, d->group_count, NULL, 0, &groups);
    if ((rc = snap_writer_lock_groups(c, groups, n, err)) != 0)
        return rc;
    apply_request req = {.author = author};
    apply_result res = {0};
    /* The deployment's own change: its groups are not refused (it holds them). */
    tx_ctx ctx = {.req = &req, .w = snap_writer_plain(a), .a = a, .out = &res, .verrs = verrs};
    res.snapshots = sx_arena_alloc(a, (n ? n : 1) * sizeof(*res.snapshots));
    ctx.written = sx_arena_alloc(a, (n ? n : 1) * sizeof(*ctx.written));
    char *reason = sx_arena_printf(a, "rollback of deployment %s", d->id);
    for (size_t i = 0; i < n; i++)
        if ((rc = recompose(c, &ctx, groups[i], reason, err)) != 0)
            return rc;
    *written = ctx.written;
    *nwritten = res.snapshot_count;
    return 0;
}
