/*
 * client.h — the Kubernetes API client: keeps one watchable map per kind equal to what
 * the API server holds, by list then watch, and writes status back.
 *
 * Per kind, one thread with its own connection runs the informer loop of the Kubernetes
 * API conventions:
 *
 *   list    GET the collection in pages (limit, continue); the map is then replaced by
 *           what the pages held (objects that vanished are deleted), in one step;
 *   watch   GET ?watch=true from the list's resourceVersion with allowWatchBookmarks=true
 *           and timeoutSeconds: ADDED and MODIFIED store the object, DELETED removes it,
 *           BOOKMARK only moves the resourceVersion on;
 *   resume  a watch the server ended (its timeout) or that broke (a dropped connection,
 *           an error) is opened again from the last resourceVersion seen, so nothing is
 *           missed; a failure waits an exponential back-off with jitter first;
 *   relist  410 Gone (as the answer to the watch, or an ERROR event carrying code 410)
 *           means the resourceVersion was compacted away: list again
 *           (sextant_k8s_relists_total{kind} counts these).
 *
 * A kind the server does not serve (404 on its list: its CRD is not installed) is logged
 * once and tried again every missing_retry_ms; its map stays empty. 401 and 403 are
 * logged once each time the answer changes, then retried with back-off; so is any other
 * failure. Objects in the maps carry apiVersion and kind (list items that lack them get
 * them) and no metadata.managedFields.
 *
 * Stopping is prompt: k8s_client_stop wakes the back-off sleeps and aborts the transfers
 * in progress through libcurl's progress callback, which libcurl calls at least once a
 * second even while a watch waits for data.
 *
 * Metrics (when options.metrics is set): sextant_k8s_watch_events_total{kind,type},
 * sextant_k8s_relists_total{kind}, sextant_k8s_objects{kind}.
 *
 * Thread model: create, start, stop and destroy from one thread; the queries and
 * k8s_patch_status from any thread.
 */
#ifndef SX_K8S_CLIENT_H
#define SX_K8S_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/k8s/kinds.h"
#include "server/k8s/kubeconfig.h"
#include "server/k8s/watchmap.h"

typedef struct k8s_client k8s_client;

typedef struct k8s_client_options {
    const k8s_cfg *cfg;    /* borrowed; required; must outlive the client */
    wm_table *maps;        /* borrowed; required: the map of each kind is added to it */
    const k8s_kind *kinds; /* borrowed array (e.g. k8s_kind_table); required, nkinds > 0 */
    size_t nkinds;
    sx_metrics *metrics;     /* NULL allowed */
    int page_size;           /* objects per list page; 0: 500 */
    int watch_timeout_s;     /* timeoutSeconds asked of the server; 0: 300 */
    int backoff_min_ms;      /* first delay after a failure; 0: 250 */
    int backoff_max_ms;      /* longest delay; 0: 30000 */
    int missing_retry_ms;    /* how often a kind the server does not serve is tried; 0: 30000 */
    size_t max_event_bytes;  /* cap on one watch event; 0: 16 MiB */
    long connect_timeout_ms; /* 0: 10000 */
} k8s_client_options;

/* Where one kind's loop is; changed only by its thread. */
typedef enum k8s_kind_state {
    K8S_KIND_IDLE,     /* not started, or stopped */
    K8S_KIND_LISTING,  /* listing: the first time, or again after 410 Gone */
    K8S_KIND_WATCHING, /* the map holds the list and the watch is (re)opened from it */
    K8S_KIND_MISSING,  /* the server does not serve the kind (404); tried again later */
    K8S_KIND_FAILING,  /* the last request failed; waiting out the back-off */
} k8s_kind_state;

/* Checks the options and creates a stopped client: adds each kind's map to opt->maps and
 * registers the metrics. SX_EINVAL when a required option is missing. *out is freed with
 * k8s_client_destroy. */
int k8s_client_create(const k8s_client_options *opt, k8s_client **out, sx_err *err) SX_MUSTCHECK;

/* Starts one thread per kind. SX_EINTERNAL when a thread cannot be created (the ones
 * started are stopped again). Call once. */
int k8s_client_start(k8s_client *c, sx_err *err) SX_MUSTCHECK;

/* Stops every kind's thread and joins them; returns within about a second. The maps
 * keep what they hold. Idempotent; NULL allowed. */
void k8s_client_stop(k8s_client *c);

/* Frees a stopped (or never started) client; NULL allowed. */
void k8s_client_destroy(k8s_client *c);

/* True once every kind has been listed once or found not served: the maps then hold
 * what the API server held (readiness waits for this). */
bool k8s_client_synced(k8s_client *c);

/* Waits up to timeout_ms (negative: without limit) for k8s_client_synced; returns it. */
bool k8s_client_wait_synced(k8s_client *c, int64_t timeout_ms);

/* The state of the named kind's loop (K8S_KIND_IDLE for a kind the client does not watch),
 * and its name ("watching", ...). */
k8s_kind_state k8s_client_kind_state(k8s_client *c, const char *kind);
const char *k8s_kind_state_name(k8s_kind_state s);

/* The resourceVersion the named kind's watch resumes from, as a new string (free it), or
 * NULL before the first list. */
char *k8s_client_resource_version(k8s_client *c, const char *kind);

/*
 * Status write-back: a JSON merge patch {"status": status} on the /status subresource of
 * the object (ns NULL or "" for a cluster-scoped kind) of the named kind, which must be
 * one of the client's kinds. Returns the HTTP status of the answer (200 when the patch
 * was applied; a status outside 2xx also sets err to "PATCH <path>: HTTP <code>
 * <reason>: <the Status message>"), or a negative SX_E* code when no answer came
 * (SX_EINVAL for an unknown kind, SX_EUNAVAILABLE, SX_ETIMEOUT). status is borrowed.
 * With resource_version (NULL: none) the patch carries metadata.resourceVersion, which
 * makes it a precondition: the server answers 409 when the object changed since.
 * Any thread; calls are serialised on one connection.
 */
int k8s_patch_status(k8s_client *c, const char *kind, const char *ns, const char *name,
                     const json_t *status, const char *resource_version, sx_err *err) SX_MUSTCHECK;

/*
 * A JSON merge patch (borrowed) on the object itself, not a subresource: metadata such as
 * finalizers. The answer is as for k8s_patch_status; a patch carrying
 * metadata.resourceVersion is refused with 409 when the object changed since. On 2xx,
 * *resource_version (NULL allowed) is set to the object's new resourceVersion (a new
 * string to free, NULL when the answer had none); otherwise to NULL.
 */
int k8s_patch_object(k8s_client *c, const char *kind, const char *ns, const char *name,
                     const json_t *patch, char **resource_version, sx_err *err) SX_MUSTCHECK;

#endif
