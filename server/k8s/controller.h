/*
 * controller.h — the Kubernetes Gateway API source, wired: the API client keeps one
 * watchable map per kind (server/k8s/client.h, watchmap.h); a thread waits for changes,
 * lets a burst settle (k8s.settle_delay after the last change, at most k8s.settle_max
 * after the first), translates every object at once (server/k8s/gw.h), writes each
 * Gateway's IR through the same write path as REST (changes_put_managed: versioned,
 * audited as "kubernetes", NOTIFY, served by every replica), deletes the configs of
 * Gateways that are gone, and writes the status of every judged object back with a
 * merge patch on /status, only when it changed.
 *
 * Each pass translates everything, then reconciles object by object
 * (server/k8s/reconcile.h): only the objects whose share of the output changed, that
 * differ from it, or whose requeue time came. A Gateway's reconcile hands the write path
 * its spec when it differs from what this replica last wrote or found unchanged in its
 * current term (each is a transaction); that memory is dropped when the lead changes,
 * when a write fails and at every k8s.resync, when every Gateway is checked against the
 * database again. An object whose reconcile fails (a write refused, its status reporting
 * a problem) is requeued alone, 1 s doubling to k8s.max_backoff, reset by a success.
 * Every k8s.resync (default 10 h) every judged object is reconciled again without an
 * event, from the maps (the watches are not restarted: a kind is listed again only after
 * 410 Gone). GatewayClasses of ours carry the finalizer sextant.dev/finalizer, which
 * holds their deletion while Gateways use them (server/k8s/finalizer.h).
 *
 * A change of a group's data planes (GROUPS_NOTIFY_CHANNEL, server/groups.h, from any
 * replica's REST API) is not a Kubernetes event but decides which of Sextant's policies
 * a Gateway's config holds: it starts a pass too, as does a reconnection of the
 * LISTEN connection (which may have missed one).
 *
 * Every replica with k8s.enabled watches, so a standby that takes over has its maps
 * ready; only the leader (server/leader.h) writes configs and status. An unchanged
 * translation writes nothing, which also makes the short overlap of two leaders
 * harmless: both compute the same output and the second finds nothing to write. A
 * Gateway whose build fails or is over a limit keeps its last written config (its
 * groups keep serving the last good snapshot) and says why in its status and in
 * sextant_k8s_build_failures_total. A write the database refused for a while
 * (unreachable, a rollout in progress on the group) is retried with the Gateway's
 * back-off.
 *
 * Readiness: false until every kind was listed once (or found missing).
 *
 * Metrics: sextant_k8s_translation_seconds, sextant_k8s_status_writes_total{result},
 * sextant_k8s_config_writes_total{result}, sextant_k8s_build_failures_total,
 * sextant_k8s_resyncs_total, the reconcile metrics of server/k8s/reconcile.h, and the
 * client's sextant_k8s_watch_events_total{kind,type}, sextant_k8s_relists_total{kind},
 * sextant_k8s_objects{kind}.
 */
#ifndef SX_K8S_CONTROLLER_H
#define SX_K8S_CONTROLLER_H

#include "server/base/err.h"
#include "server/leader.h"
#include "server/supervisor.h"

struct sx_server;
typedef struct k8s_controller k8s_controller;

/* Creates the controller from srv's k8s.* configuration (srv and lead borrowed; lead may
 * be NULL: this replica then leads whenever it runs). Reads the kubeconfig (or the
 * in-cluster service account) now: SX_EINVAL or SX_EIO when it is unusable. */
int k8s_ctl_create(struct sx_server *srv, leader *lead, k8s_controller **out,
                   sx_err *err) SX_MUSTCHECK;

/* The component "kubernetes" (for sup_register with sup_thread_ops). */
sup_thread *k8s_ctl_component(k8s_controller *c);

/* Frees a stopped controller; NULL allowed. */
void k8s_ctl_destroy(k8s_controller *c);

#endif
