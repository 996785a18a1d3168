/*
 * secret_seal.h — private keys at rest: sealing them in the documents and bytes the
 * repositories store, the table of the keys that sealed them (secret_keys), and the
 * rotation that reseals every stored secret with the active key.
 *
 * What is sealed: every string member named "key_pem" (or "keyPem", the proto3 JSON
 * name of the same field) anywhere in a config's spec (config_versions.spec) or a
 * snapshot's IR (snapshots.ir) becomes a sealed text (server/base/seal.h); the encoded
 * snapshot bytes (snapshots.encoded) of a snapshot whose IR carries a private key are
 * sealed whole. The repositories seal on write and open on read, so everything above
 * storage sees plaintext and nothing at rest does. The pool's secrets policy
 * (pg_pool_set_secrets) says what to do without a keyring: store private keys as they
 * are (allow_plaintext), or refuse them (SX_EVALIDATION, the default).
 *
 * secret_keys holds one row per key id that sealed something, with a check value sealed
 * by that key: at start (seal_check_keys) a keyring that lacks one of those ids, or
 * holds a different key under it, is refused before anything is served.
 *
 * Memory: results belong to the caller (new references, sx_buf contents). Thread
 * safety: stateless; the keyring is read-only.
 */
#ifndef SX_STORAGE_SECRET_SEAL_H
#define SX_STORAGE_SECRET_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/buf.h"
#include "server/base/err.h"
#include "server/base/seal.h"
#include "storage/pg_pool.h"

/* Whether doc carries a non-empty private key (a key_pem / keyPem string). */
bool seal_json_has_keys(const json_t *doc);

/*
 * The form of doc to store: *stored is a new reference, doc itself when it carries no
 * plaintext private key, else a deep copy whose private keys are sealed with k. With k
 * NULL: doc itself when allow_plaintext, else SX_EVALIDATION naming the first key's
 * path (*stored NULL).
 */
int seal_json(const sx_keyring *k, bool allow_plaintext, const json_t *doc, json_t **stored,
              sx_err *err) SX_MUSTCHECK;
/* seal_json, also telling whether doc carries a non-empty private key, sealed or not
 * (seal_json_has_keys(doc)), from the same walk; has_keys NULL allowed. */
int seal_json_ex(const sx_keyring *k, bool allow_plaintext, const json_t *doc, json_t **stored,
                 bool *has_keys, sx_err *err) SX_MUSTCHECK;

/* Opens every sealed private key of doc in place (NULL allowed). Errors of
 * sx_open_text (an unknown key id, a key that does not open it). */
int seal_open_json(const sx_keyring *k, json_t *doc, sx_err *err) SX_MUSTCHECK;

/* The bytes to store for a snapshot's encoded form: sealed with k into out when
 * has_keys and k is set (*sealed true); else untouched (*sealed false), or, has_keys
 * without k and without allow_plaintext, SX_EVALIDATION. */
int seal_bytes(const sx_keyring *k, bool allow_plaintext, bool has_keys, const void *data, size_t n,
               sx_buf *out, bool *sealed, sx_err *err) SX_MUSTCHECK;

/* Checks the keyring against secret_keys on c: every key id there must be in k with the
 * key that sealed its check value; then registers k's active key. k NULL: refused when
 * secret_keys has any row. SX_EINVAL with the reason otherwise; database errors. */
int seal_check_keys(pg_conn *c, const sx_keyring *k, sx_err *err) SX_MUSTCHECK;

/* What seal_rotate did. */
typedef struct seal_rotation {
    long long configs_scanned, configs_resealed;     /* config_versions rows */
    long long snapshots_scanned, snapshots_resealed; /* snapshots rows */
    long long keys_retired;                          /* secret_keys rows deleted */
} seal_rotation;

/*
 * Reseals every stored private key that is not sealed with k's active key (plaintext
 * ones included), in batches that each commit on their own: interrupted, a rerun picks
 * up where it stopped, and a run over data already sealed with the active key changes
 * nothing. Finally deletes the secret_keys rows of the other keys, which then seal
 * nothing. The immutable history rows are changed through the one exception their
 * triggers allow (migration 0010: only the secret columns, only under sextant.rekey).
 */
int seal_rotate(pg_pool *pool, const sx_keyring *k, seal_rotation *out, sx_err *err) SX_MUSTCHECK;

#endif
