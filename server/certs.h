/*
 * certs.h — the serving certificates of the REST and gRPC listeners: loaded, checked,
 * reloaded without a restart, and watched for expiry.
 *
 * Each listener with TLS has a source: its certificate chain, private key and (gRPC
 * only) client CA bundle, read from the files of http.tls.* / grpc.tls.*, or handed in
 * by the managed mode (server/certs_managed.h). What a source serves is a certs_pem:
 * one immutable, reference-counted version of the material. The listeners never cache
 * it: they ask for the current version at each TLS handshake (libmicrohttpd through
 * GnuTLS's certificate callback, gRPC through its certificate config fetcher), so a new
 * version reaches new connections at once and open connections, streams included, keep
 * the session they have.
 *
 * The component "certs" is one thread that checks the files every tls.reload_interval
 * (device, inode, size and modification time) and at once on certs_reload (SIGHUP, which
 * re-reads every file whatever its stamps). A changed file set is read whole and
 * checked with OpenSSL: the chain parses, the key parses and belongs to the first
 * certificate, the CA bundle holds certificates. Material that fails keeps the old
 * version serving, logs an error and counts sextant_tls_reloads_total{result="error"};
 * the same bad files are not reported again until they change. The thread also sets
 * sextant_tls_cert_expiry_timestamp_seconds{listener} and, from tls.expiry_warning
 * before the leaf certificate's notAfter, logs a warning (once per version) and puts a
 * notice on /readyz (sup_set_notice; a notice, not a failure).
 *
 * Thread safety: certs_current and certs_reload from any thread (certs_current is
 * called on handshake threads and never blocks for long); certs_install from any thread.
 */
#ifndef SX_SERVER_CERTS_H
#define SX_SERVER_CERTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/config.h"
#include "server/supervisor.h"

/* The listeners that serve TLS. */
typedef enum certs_listener {
    CERTS_HTTP, /* the REST API, UI and metrics (http.tls.*) */
    CERTS_GRPC, /* xDS and gateway.control.v1 (grpc.tls.*) */
    CERTS_LISTENERS
} certs_listener;

/* One version of a listener's TLS material. Immutable once made; shared by reference:
 * whoever got it from certs_current releases it with certs_pem_release. */
typedef struct certs_pem {
    char *cert;          /* PEM certificate chain, leaf first; NUL-terminated */
    char *key;           /* PEM private key (never logged) */
    char *ca;            /* PEM client CA bundle; NULL when clients are not verified */
    uint64_t generation; /* 1 for the first version a listener serves, then 2, 3, ... */
    int64_t not_before;  /* the leaf's validity, seconds since the epoch */
    int64_t not_after;
    char serial[96];      /* the leaf's serial number, upper-case hex */
    char fingerprint[65]; /* SHA-256 of the leaf's DER, lower-case hex */
    atomic_int refs;
} certs_pem;

typedef struct certs certs;

typedef struct certs_options {
    const sextant_config *config; /* http.tls.*, grpc.tls.*, tls.*; borrowed */
    sx_metrics *metrics;          /* borrowed; NULL allowed */
    sup_supervisor *sup;          /* borrowed; the notices on /readyz, the sleeps; required */
} certs_options;

/* Creates the certificates of every listener whose TLS is configured and loads their
 * files now, so that a listener has its material before it starts. Returns 0 and *out,
 * or SX_EIO / SX_EINVAL (a file unreadable, a key that does not match) with err naming
 * the key and file; nothing is created then. */
int certs_create(const certs_options *o, certs **out, sx_err *err) SX_MUSTCHECK;

/* Frees everything; the component must have stopped and no listener may still call
 * certs_current. NULL allowed. */
void certs_destroy(certs *c);

/* Whether listener l serves TLS (its files are configured, or it is managed). */
bool certs_enabled(const certs *c, certs_listener l);

/* Whether listener l verifies client certificates (grpc.tls.client_ca_file). */
bool certs_verifies_clients(const certs *c, certs_listener l);

/* The version listener l serves now, with one reference for the caller; NULL when it has
 * no TLS or no material yet (a managed certificate not loaded yet). NULL c allowed. */
certs_pem *certs_current(certs *c, certs_listener l);

/* Drops one reference; NULL allowed. */
void certs_pem_release(certs_pem *p);

/* Makes listener l serve new material (the managed mode hands in its certificate this
 * way; ca NULL keeps the listener's client CA). The material is checked as the files'
 * is; on failure the old version keeps serving, and err says why. what names the
 * material's origin in logs. Returns 0, SX_EINVAL. */
int certs_install(certs *c, certs_listener l, const char *cert, const char *key, const char *what,
                  sx_err *err) SX_MUSTCHECK;

/* Marks listener l as managed: its files are not watched, certs_install feeds it. Before
 * the component starts. */
void certs_set_managed(certs *c, certs_listener l);

/* Checks every file now and re-reads them even if their stamps did not change (SIGHUP).
 * Returns at once; the component's thread does the work. Any thread. */
void certs_reload(certs *c);

/* The name of listener l in logs and metric labels: "http", "grpc". */
const char *certs_listener_name(certs_listener l);

/* Checks material and fills what it says: cert must hold a chain (leaf first), key the
 * leaf's private key (unencrypted), ca (NULL allowed) at least one certificate. Returns
 * 0, or SX_EINVAL with why. On success *out is a new version with one reference and
 * generation 0; the strings are copied. */
int certs_pem_parse(const char *cert, const char *key, const char *ca, certs_pem **out,
                    sx_err *err) SX_MUSTCHECK;

/* The component "certs", for sup_register with sup_thread_ops. */
sup_thread *certs_component(certs *c);

#endif
