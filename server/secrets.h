/*
 * secrets.h — private keys in configs: the keyring the daemon and the commands seal
 * them with, and their redaction from what users read.
 *
 * At rest (PostgreSQL and Redis) private keys are sealed by storage (storage/
 * secret_seal.h) with the keyring of secrets.key_file; above storage they are plaintext,
 * which is what proxies are served. What users read over REST is redacted: every
 * private key string (key_pem / keyPem) becomes SECRETS_REDACTED, for every caller
 * whose role lacks the explicit permission "secrets: read" (api/policy.h).
 */
#ifndef SX_SERVER_SECRETS_H
#define SX_SERVER_SECRETS_H

#include <stdbool.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/seal.h"
#include "server/config.h"
#include "storage/pg_pool.h"

/* What a redacted private key reads as. */
#define SECRETS_REDACTED "[redacted]"

/*
 * Loads the keyring of cfg's secrets.key_file into *out (NULL when the key is not set)
 * and gives pool its secrets policy (pg_pool_set_secrets): seal with the keyring; or,
 * without one, store private keys unsealed when secrets.allow_plaintext (with a warning
 * logged), else refuse them. *out must outlive the pool; free it with sx_keyring_free
 * after the pool. Errors of sx_keyring_load (a file that is not a keyring).
 */
int secrets_attach(const sextant_config *cfg, pg_pool *pool, sx_keyring **out,
                   sx_err *err) SX_MUSTCHECK;

/*
 * Checks k against the keys that sealed the stored secrets and registers its active key
 * (seal_check_keys) on a connection of pool. SX_EINVAL when k cannot open what is stored
 * (a missing keyring, a missing key id, another key under an id); SX_EUNAVAILABLE when
 * the database cannot be reached.
 */
int secrets_check(pg_pool *pool, const sx_keyring *k, sx_err *err) SX_MUSTCHECK;

/* doc with every non-empty private key string (a member key_pem or keyPem at any depth,
 * and the values of a diff entry whose "path" names one) replaced by SECRETS_REDACTED.
 * Takes the reference to doc and returns one: doc itself when it has nothing to redact,
 * else a redacted deep copy (doc may share objects with the caller's data, which is
 * never changed). NULL allowed (NULL returned). */
json_t *secrets_redacted(json_t *doc);

/* Whether a spec carries a private key that reads SECRETS_REDACTED (one written back as
 * it was read by a role without secrets: read). NULL allowed. */
bool secrets_has_redacted(const json_t *spec);

/*
 * The spec to store for an update that wrote back redacted private keys: *out (in a) is
 * a copy of spec in which every secrets[i].key_pem that reads SECRETS_REDACTED holds the
 * key of the secret of the same namespace and name in prev (the version it replaces), so
 * editing a config does not need the permission to read its keys. SX_EVALIDATION, naming
 * the path, when prev has no such secret (there is no key to keep).
 */
int secrets_keep_redacted(sx_arena *a, const json_t *spec, const json_t *prev, const json_t **out,
                          sx_err *err) SX_MUSTCHECK;

#endif
