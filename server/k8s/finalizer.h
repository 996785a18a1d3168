/*
 * finalizer.h — finalizer-guarded deletion: an object of ours that others still
 * reference is not deleted until the last reference goes.
 *
 * The leader puts the finalizer K8S_FINALIZER on every object of a guarded kind that is
 * ours. A `kubectl delete` of one then only sets metadata.deletionTimestamp (the API
 * server keeps the object while a finalizer is left); while something still references
 * it, the finalizer stays and its status carries the condition K8S_FIN_CONDITION
 * (status True, reason InUse, the holders named in the message); once nothing does, the
 * leader removes the finalizer and the API server completes the deletion. An object that
 * stops being ours loses the finalizer. Every patch carries the resourceVersion read, so
 * a concurrent change is a 409 and the object is reconciled again from the newer state.
 *
 * A guard is generic: a kind, a predicate "ours" and a function naming the holders from
 * the watched maps. k8s_fin_gateway_class is the GatewayClass's (held by the Gateways
 * that name it); Sextant's own kinds add theirs the same way.
 */
#ifndef SX_K8S_FINALIZER_H
#define SX_K8S_FINALIZER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "server/k8s/watchmap.h"

#define K8S_FINALIZER     "sextant.dev/finalizer"
#define K8S_FIN_CONDITION "sextant.dev/DeletionBlocked"

typedef enum k8s_fin_action {
    K8S_FIN_NONE,   /* nothing to do */
    K8S_FIN_ADD,    /* ours and not being deleted, without the finalizer: add it */
    K8S_FIN_HOLD,   /* being deleted and still referenced: keep it, say what holds it */
    K8S_FIN_REMOVE, /* being deleted and no longer referenced, or not ours: remove it */
} k8s_fin_action;

typedef struct k8s_fin_guard {
    const char *kind; /* "GatewayClass" */
    /* Whether obj (borrowed) is ours. */
    bool (*ours)(const json_t *obj, void *ctx);
    /* Appends to holders (a JSON array) one string per object that still references obj,
     * as "<Kind> <namespace>/<name>", in a stable order. */
    void (*holders)(const json_t *obj, const wm_table_state *ts, json_t *holders, void *ctx);
    void *ctx;
} k8s_fin_guard;

/* "none", "add", "hold", "remove". */
const char *k8s_fin_action_name(k8s_fin_action a);

/* What obj's finalizer needs now. *holders is set to a new array (the caller decrefs)
 * of what holds obj (empty unless the action is K8S_FIN_HOLD). */
k8s_fin_action k8s_fin_judge(const k8s_fin_guard *g, const json_t *obj, const wm_table_state *ts,
                             json_t **holders);

/* The JSON merge patch that adds (K8S_FIN_ADD) or removes (K8S_FIN_REMOVE) the finalizer
 * of obj, keeping the other finalizers, with obj's resourceVersion as precondition; a new
 * object, or NULL for the other actions. */
json_t *k8s_fin_patch(const json_t *obj, k8s_fin_action a);

/*
 * Puts the condition K8S_FIN_CONDITION into status (a status object, changed in place)
 * when action is K8S_FIN_HOLD, naming the holders; removes it otherwise. prev_status
 * (NULL allowed) is the object's status as read: an unchanged condition keeps its
 * lastTransitionTime; now_text is the time for a new one (RFC 3339).
 */
void k8s_fin_condition(json_t *status, const json_t *prev_status, k8s_fin_action action,
                       const json_t *holders, int64_t generation, const char *now_text);

/* The guard of GatewayClasses whose spec.controllerName is *controller_name (the pointer
 * is kept): held by the Gateways whose spec.gatewayClassName names them. */
k8s_fin_guard k8s_fin_gateway_class(const char *const *controller_name);

/* The guard of Sextant's own kind kind ("WasmPlugin", "AIService", "TokenPolicy",
 * "BackendLBPolicy"; a static string, kept): every object of it is ours, held by the
 * HTTPRoutes and GRPCRoutes of its namespace whose rules name it in a filter of type
 * ExtensionRef (extensionRef group sextant.dev, that kind and its name), on a rule or on
 * one of the rule's backendRefs. */
k8s_fin_guard k8s_fin_sextant(const char *kind);

#endif
