/*
 * certs_managed.h — managed TLS (tls.managed): Sextant issues the serving certificate of
 * both listeners from a CA it is given, keeps it in PostgreSQL so that every replica
 * serves the same one, and the leader renews it before it expires.
 *
 * The component "tls_managed" reads the certificate from the database when it starts:
 * the first replica to find none issues one (tls.managed_names as its subject
 * alternative names, valid tls.managed_lifetime) and the first insert wins. Start-up
 * waits for it (at most 30 s), because the gRPC listener cannot start without a
 * certificate; the REST listener, which starts first, fails handshakes until then.
 * Afterwards a thread polls the row every tls.reload_interval: a new serial is installed
 * into server/certs.h (new connections get it, open ones keep theirs), and the leader
 * (server/leader.h) issues a new certificate tls.managed_renew_before its notAfter, or
 * at once when the stored one was not issued by the configured CA or its key cannot be
 * decrypted with it. Only the leader writes after the first insert, and its UPDATE is
 * conditioned on the serial it read.
 *
 * The private key is stored as an encrypted PKCS#8 PEM (AES-256-CBC, PBKDF2) whose
 * passphrase is derived with HKDF-SHA256 from the CA's private key, which every replica
 * has and the database does not.
 */
#ifndef SX_SERVER_CERTS_MANAGED_H
#define SX_SERVER_CERTS_MANAGED_H

#include "server/base/err.h"
#include "server/supervisor.h"

struct sx_server;
typedef struct certs_managed certs_managed;

/* When tls.managed is set: checks the configuration (the CA files, no http.tls / grpc.tls
 * certificate files, a lifetime longer than the renewal margin), loads the CA, marks
 * both listeners of srv->certs as managed and sets *out; otherwise *out is NULL. Needs
 * srv->certs, srv->db and srv->leader. Returns 0 or SX_EINVAL / SX_EIO with err. */
int certs_managed_create(struct sx_server *srv, certs_managed **out, sx_err *err) SX_MUSTCHECK;

/* Frees it after its component stopped; NULL allowed. */
void certs_managed_destroy(certs_managed *m);

/* The component "tls_managed" (ctx: the certs_managed). start fails with SX_EUNAVAILABLE
 * when no certificate could be had within 30 s. */
extern const sup_ops certs_managed_sup_ops;

#endif
