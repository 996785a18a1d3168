/*
 * changes.h — the write side of the domain: config changes from the REST API, their
 * dry-run validation, a group's rollback to one of its snapshots, the audit rows of
 * requests that were refused before they could change anything, and the changes of the
 * configs a source of configuration manages (Kubernetes: one config per Gateway).
 *
 * Each function takes a typed request, runs it on the daemon's pool (the change itself
 * through server/apply.h, in one transaction) and returns a typed result or an error;
 * none sees an HTTP request. The validation limits are the daemon's configured ones.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef SX_SERVER_CHANGES_H
#define SX_SERVER_CHANGES_H

#include "server/apply.h"
#include "server/groups.h"
#include "server/rollback.h"
#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "storage/repo_audit.h"

struct sx_server;

/* 0 when changes can be written (the pool and the snapshot repository are wired), else
 * SX_EUNAVAILABLE "the database is not available". */
int changes_ready(const struct sx_server *srv, sx_err *err) SX_MUSTCHECK;

/* apply_config with the configured validation limits (req->limits is ignored;
 * req->problems receives the pipeline's problems, as there). */
int changes_apply(struct sx_server *srv, apply_request *req, sx_arena *a, apply_result *out,
                  sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

/* apply_validate with the configured validation limits: nothing is written. */
int changes_validate(struct sx_server *srv, apply_request *req, sx_arena *a, sx_fielderrs *verrs,
                     sx_err *err) SX_MUSTCHECK;

/* rollback_group on the daemon's pool and snapshot repository, validated with the
 * configured limits (req->limits is ignored; req->problems receives validation's
 * problems). */
int changes_rollback_group(struct sx_server *srv, rollback_group_request *req, sx_arena *a,
                           rollback_group_result *out, sx_fielderrs *verrs,
                           sx_err *err) SX_MUSTCHECK;

/* The problems of a refused config as a JSON array: every pipeline problem as
 * {"stage", "path", "message"[, "conflict_with"][, "data_plane"]} and every field error as
 * {"stage": stage, "path", "message"}. problems and verrs may be NULL. New reference. */
json_t *changes_problems_json(const val_result *problems, const sx_fielderrs *verrs,
                              const char *stage);

/* ------------------------------------------------------------------ managed configs */

/* The actor of every change a managed source makes, in the audit log and as the author
 * of the versions it writes. */
#define CHANGES_KUBERNETES_ACTOR "kubernetes"

/* A managed config's content as its source translated it; pointers borrowed for the
 * call. */
typedef struct changes_managed {
    const char *ns;            /* config namespace; required */
    const char *name;          /* config name; required */
    const char *const *groups; /* proxy groups it applies to; at least one */
    size_t group_count;
    const json_t *spec;     /* the IR (a ConfigSnapshot in JSON), exactly what a REST PUT of
                               the config takes as "spec"; required */
    const char *source_ref; /* what it is translated from, such as "Gateway default/web";
                               required, 1..1024 bytes; shown by the REST API and the UI and
                               named by their refusals */
    const char *message;    /* kept with a new version; NULL = "" */
} changes_managed;

/*
 * Writes the config ns/name of the Kubernetes source (source "kubernetes", author and
 * audit actor CHANGES_KUBERNETES_ACTOR, action "config.sync") through the same path as a
 * REST change (apply_config with the configured validation limits, in one transaction:
 * lock, validate against the other live configs of the groups, version, recompose and
 * write each group's snapshot, cache, audit, NOTIFY): creates it with a live version 1
 * when there is none, else adds a live version. Concurrent calls for one name queue.
 *
 * "Unchanged" means: the spec and groups equal the newest version this source wrote
 * itself (author CHANGES_KUBERNETES_ACTOR, not a rollback), whatever version is live.
 * An operator may roll a managed config back (POST .../rollback) or roll out another
 * of its versions (POST .../apply); that version then stays live across every repeat
 * of the same translation (each settle, each k8s.resync, each restart of the
 * controller) and is replaced only when the Gateway's translation really changes,
 * which writes a new live version. Such a translation may equal what is live (the
 * Gateway was changed back to what the operator rolled back to): it is still written,
 * so that the config's history says the source has caught up.
 *
 * Returns 0 with *out filled (in a): out->changed is false when the translation is
 * unchanged, and then nothing at all was written (no version, snapshot, audit row or
 * NOTIFY) and out->version is the config's live version, whoever wrote it; otherwise
 * out->created says whether the config is new, out->version is its new live version
 * and out->snapshots the snapshots written.
 * Failures write nothing (the groups keep serving their current snapshots):
 * SX_EVALIDATION or SX_ECONFLICT with the pipeline's problems in *problems (NULL
 * allowed; free with val_result_free) and the composition's in verrs, paths starting at
 * "spec" (changes_problems_json renders both; a group name that is not one is a schema
 * problem at "groups[i]"); SX_ECONFLICT also when a deployment in
 * progress holds one of the groups (retry later) or when a config of that name exists
 * that the REST API wrote (the source never takes one over); SX_EINVAL for missing
 * fields; SX_EUNAVAILABLE without a database; database errors otherwise.
 */
int changes_put_managed(struct sx_server *srv, const changes_managed *m, sx_arena *a,
                        apply_result *out, val_result *problems, sx_fielderrs *verrs,
                        sx_err *err) SX_MUSTCHECK;

/*
 * Deletes the config ns/name of the Kubernetes source (its Gateway is gone): a soft
 * delete that recomposes its groups, audited as "config.delete" by
 * CHANGES_KUBERNETES_ACTOR, in one transaction. message (NULL = "") is kept in the audit
 * row. Returns 0 with out->changed true when it deleted the config, false when there
 * was no live config of that name (nothing is written). SX_ECONFLICT when the config
 * was written through the REST API, or when a deployment in progress holds one of its
 * groups; SX_EVALIDATION (verrs) when a group's snapshot without it would be invalid;
 * SX_EUNAVAILABLE and database errors otherwise. The source's configs are listed by
 * catalog_configs with a filter on source "kubernetes".
 */
int changes_delete_managed(struct sx_server *srv, const char *ns, const char *name,
                           const char *message, sx_arena *a, apply_result *out, sx_fielderrs *verrs,
                           sx_err *err) SX_MUSTCHECK;

/* Sets the data planes of a proxy group (server/groups.h: checked against the group's
 * live configs, audited as "group.update"); req->default_planes is filled here from
 * the configuration. */
int changes_set_group_planes(struct sx_server *srv, groups_set_request *req, sx_arena *a,
                             groups_info *out, val_result *problems, sx_err *err) SX_MUSTCHECK;

/* Appends one audit row on a connection of its own (the row of a refusal: nothing else
 * is written with it). SX_EUNAVAILABLE "no database is configured" when there is no
 * pool; database errors otherwise. */
int changes_audit(struct sx_server *srv, const audit_new *row, sx_err *err) SX_MUSTCHECK;

#endif
