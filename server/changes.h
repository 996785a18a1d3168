/*
 * changes.h — the write side of the REST API: config changes, their dry-run validation,
 * a group's rollback to one of its snapshots, and the audit rows of requests that were
 * refused before they could change anything.
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

/* apply_group_rollback on the daemon's pool and snapshot repository. */
int changes_rollback_group(struct sx_server *srv, const apply_group_rollback_request *req,
                           sx_arena *a, apply_group_rollback_result *out, sx_fielderrs *verrs,
                           sx_err *err) SX_MUSTCHECK;

/* The problems of a refused config as a JSON array: every pipeline problem as
 * {"stage", "path", "message"[, "conflict_with"]} and every field error as {"stage":
 * stage, "path", "message"}. problems and verrs may be NULL. New reference. */
json_t *changes_problems_json(const val_result *problems, const sx_fielderrs *verrs,
                              const char *stage);

/* Appends one audit row on a connection of its own (the row of a refusal: nothing else
 * is written with it). SX_EUNAVAILABLE "no database is configured" when there is no
 * pool; database errors otherwise. */
int changes_audit(struct sx_server *srv, const audit_new *row, sx_err *err) SX_MUSTCHECK;

#endif
