/*
 * reconcile.h — per-object reconcile bookkeeping of the Kubernetes source: which judged
 * objects a pass acts on, and when an object whose reconcile failed is tried again.
 *
 * The translation (server/k8s/gw.h) is a pure function of every watched object, so each
 * pass translates all of them; reconciling one object is acting on its share of the
 * output: a Gateway's config, an object's status, a finalizer (server/k8s/finalizer.h).
 * A pass reconciles an object when its fingerprint (what the translation wants of it:
 * its status, a Gateway's spec) differs from its last reconcile, when it is dirty (the
 * object differs from what is wanted: its status, its finalizer) and not waiting out a
 * back-off, when its requeue time has come, or when the pass reconciles everything
 * (k8s.resync, a new term of leadership). Our own status write, seen again through the
 * watch, therefore changes nothing: the object is neither changed nor dirty then.
 *
 * A failed reconcile requeues that object alone: 1 s after the first failure, doubling
 * up to the maximum (k8s.max_backoff); a success forgets its failures. An event that
 * changes the object's fingerprint reconciles it at once, whatever its requeue time
 * (as a work queue's Add does), and a failure then keeps doubling. Other objects are
 * never held up: each has its own time.
 *
 * Results: "success"; "invalid" when the object's own status reports a problem (a
 * condition Accepted, Programmed or ResolvedRefs False: a certificateRef that is no
 * certificate, a backend that does not exist), which a change the watch cannot show may
 * cure (a certificate's validity, a Secret outside the watch's field selector); "error"
 * when writing its config, status or finalizer failed. Both requeue.
 *
 * Metrics: sextant_k8s_reconcile_total{kind,result}, sextant_k8s_requeues_total{kind},
 * sextant_k8s_reconcile_backoff_seconds{kind} (histogram of the requeue delays chosen).
 *
 * Not thread-safe: one thread (the controller's) owns it.
 */
#ifndef SX_K8S_RECONCILE_H
#define SX_K8S_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "server/base/metrics.h"

typedef struct k8s_rec k8s_rec;

typedef enum k8s_rec_result {
    K8S_REC_SUCCESS = 0,
    K8S_REC_INVALID, /* its status reports a problem */
    K8S_REC_ERROR,   /* a write failed */
} k8s_rec_result;

/* Creates the bookkeeping; metrics may be NULL. min_backoff_ms is the first requeue
 * delay (1000 in production), max_backoff_ms the longest (at least min_backoff_ms).
 * Never NULL; free with k8s_rec_destroy. */
k8s_rec *k8s_rec_create(sx_metrics *metrics, int64_t min_backoff_ms, int64_t max_backoff_ms);

/* Frees r; NULL allowed. */
void k8s_rec_destroy(k8s_rec *r);

/* Starts a pass: every object is unseen until k8s_rec_wanted names it. */
void k8s_rec_begin(k8s_rec *r);

/*
 * Whether the pass should reconcile the object (kind, key "namespace/name" or "name"):
 * true when all is set, when it is new or its fingerprint differs from the last one,
 * when it is dirty and not requeued, or when its requeue time (monotonic ms) is not
 * after now. Records the fingerprint (stolen; NULL allowed, compared as JSON) and marks
 * the object seen.
 */
bool k8s_rec_wanted(k8s_rec *r, const char *kind, const char *key, json_t *fingerprint, bool dirty,
                    int64_t now, bool all);

/*
 * Records the outcome of reconciling the object (after k8s_rec_wanted said so): a
 * success forgets its failures and its requeue; a failure requeues it, counts it and
 * logs why (borrowed, NULL allowed) with the delay. Returns the requeue delay in ms, or
 * 0 after a success.
 */
int64_t k8s_rec_done(k8s_rec *r, const char *kind, const char *key, k8s_rec_result result,
                     const char *why, int64_t now);

/* Ends a pass that named every object: forgets the objects it did not name (gone). A
 * pass cut short (the lead was lost) does not call this. */
void k8s_rec_end(k8s_rec *r);

/* The earliest requeue time (monotonic ms), or INT64_MAX when nothing is requeued. */
int64_t k8s_rec_next_due(const k8s_rec *r);

/* The consecutive failures of the object so far (0 when it is unknown or succeeded). */
int k8s_rec_failures(const k8s_rec *r, const char *kind, const char *key);

/* Forgets every fingerprint (not the failures): the next pass reconciles everything it
 * names, as a pass with all set does. */
void k8s_rec_forget_fingerprints(k8s_rec *r);

/*
 * Whether status (an object's status as the translation wants it, borrowed) reports a
 * problem of the object: a condition Accepted, Programmed or ResolvedRefs that is
 * "False", in a listener, at the top, or in an entry of status.parents / ancestors
 * whose controllerName is controller_name. Writes the first one found, in that order,
 * into why (n bytes, "Accepted=False (Reason): message", prefixed with the listener or
 * parent).
 */
bool k8s_rec_status_problem(const json_t *status, const char *controller_name, char *why, size_t n);

#endif
