/*
 * repo_certs.h — the serving_certificates table: the managed serving certificate every
 * replica serves (migrations/0011_serving_certificates.sql).
 *
 * Any replica inserts the first certificate when there is none (cert_repo_insert: the
 * first insert wins); the leader replaces it with cert_repo_replace, conditioned on the
 * serial it read, so a renewal never overwrites one it did not see. Every replica polls
 * cert_repo_get.
 *
 * Memory: results live in the caller's sx_arena. Every function is one statement.
 * Failures: SX_EINVAL for bad input, database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_CERTS_H
#define SX_STORAGE_REPO_CERTS_H

#include <stdbool.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

typedef struct cert_record {
    const char *name;     /* "default" */
    const char *cert_pem; /* the chain, leaf first */
    const char *key_pem;  /* encrypted PKCS#8 PEM; never log */
    const char *serial;   /* the leaf's serial, upper-case hex */
    long long not_after;  /* seconds since the epoch */
    const char *issued_by;
} cert_record;

/* The row called name; *found false (and *out untouched) when there is none. */
int cert_repo_get(pg_conn *c, const char *name, sx_arena *a, cert_record *out, bool *found,
                  sx_err *err) SX_MUSTCHECK;

/* Inserts r unless a row of that name exists; *inserted says which happened. */
int cert_repo_insert(pg_conn *c, const cert_record *r, bool *inserted, sx_err *err) SX_MUSTCHECK;

/* Replaces the row r->name with r when its serial is still old_serial; *replaced says
 * whether it was. */
int cert_repo_replace(pg_conn *c, const cert_record *r, const char *old_serial, bool *replaced,
                      sx_err *err) SX_MUSTCHECK;

#endif
