/*
 * status_store.h — keeps in the database the status the controller wrote back to each
 * Kubernetes object (storage/repo_k8s_status.h), linked to the managed configs it
 * concerns, so the REST API and the web UI show what the cluster holds.
 *
 * The controller calls these where it patches: k8s_sstore_put after a status patch went
 * through (or found the object's status already as judged), k8s_sstore_forget when an
 * object goes, k8s_sstore_sweep after a complete pass. Only the leading replica calls
 * them. Each takes a pooled connection for the call.
 *
 * Failures: SX_EUNAVAILABLE when the database is not wired or unreachable, database
 * errors otherwise; err must not be NULL.
 */
#ifndef SX_SERVER_K8S_STATUS_STORE_H
#define SX_SERVER_K8S_STATUS_STORE_H

#include "server/base/err.h"
#include "server/k8s/gw.h"

struct sx_server;

/* Stores s's status as written, linked to "Gateway <ns>/<name>" of s itself (a Gateway)
 * or of every Gateway its status entries of controller name (route parents, policy
 * ancestors). */
int k8s_sstore_put(struct sx_server *srv, const char *controller, const gw_status_out *s,
                   sx_err *err) SX_MUSTCHECK;

/* Drops the row of s's object (it is gone or going). */
int k8s_sstore_forget(struct sx_server *srv, const gw_status_out *s, sx_err *err) SX_MUSTCHECK;

/* Drops the rows of every object out has no status for (deleted, or not judged any
 * more). Nothing happens when out is over its input limit (its routes are not judged). */
int k8s_sstore_sweep(struct sx_server *srv, const gw_output *out, sx_err *err) SX_MUSTCHECK;

#endif
