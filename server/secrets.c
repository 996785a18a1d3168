/*
 * secrets.c — the keyring of the daemon and the commands, and redaction (see secrets.h).
 *
 * Redaction is one walk over a JSON answer, so that whatever carries a config's spec or
 * a snapshot's IR (a config, a version, a snapshot view, a diff, a stored idempotent
 * answer) is covered without each handler knowing where private keys sit.
 */
#include "server/secrets.h"

#include <string.h>

#include "server/base/log.h"
#include "storage/secret_seal.h"

#define COMPONENT "secrets"

int secrets_attach(const sextant_config *cfg, pg_pool *pool, sx_keyring **out, sx_err *err)
{
    *out = NULL;
    if (cfg->secrets.key_file) {
        int rc = sx_keyring_load(cfg->secrets.key_file, out, err);
        if (rc)
            return rc;
    } else if (cfg->secrets.allow_plaintext) {
        SX_WARN(COMPONENT, "secrets.key_file is not set and secrets.allow_plaintext is true: "
                           "private keys in configs are stored unencrypted in PostgreSQL and "
                           "Redis");
    }
    pg_pool_set_secrets(pool, *out, cfg->secrets.allow_plaintext);
    return 0;
}

int secrets_check(pg_pool *pool, const sx_keyring *k, sx_err *err)
{
    pg_conn *c;
    int rc = pg_acquire(pool, &c, err);
    if (rc) {
        if (err)
            err->code = SX_EUNAVAILABLE;
        return SX_EUNAVAILABLE;
    }
    rc = seal_check_keys(c, k, err);
    pg_release(pool, c);
    return rc;
}

static bool is_key_member(const char *k, size_t n)
{
    return (n == 7 && memcmp(k, "key_pem", 7) == 0) || (n == 6 && memcmp(k, "keyPem", 6) == 0);
}

/* Whether a diff path ("spec.secrets[\"x\"].key_pem") ends with a private key member. */
static bool path_names_key(const char *path)
{
    size_t n = strlen(path);
    return (n >= 8 && strcmp(path + n - 8, ".key_pem") == 0) ||
           (n >= 7 && strcmp(path + n - 7, ".keyPem") == 0);
}

/* Redacts doc in place when change, else only says whether there is anything to. */
static bool redact(json_t *doc, bool change)
{
    bool found = false;
    if (json_is_object(doc)) {
        const char *path = json_string_value(json_object_get(doc, "path"));
        bool diff_entry = path && path_names_key(path);
        const char *k;
        json_t *v;
        json_object_foreach(doc, k, v)
        {
            if ((diff_entry && strcmp(k, "path") != 0) || is_key_member(k, strlen(k))) {
                if (json_is_string(v) && json_string_length(v) > 0 &&
                    strcmp(json_string_value(v), SECRETS_REDACTED) != 0) {
                    found = true;
                    if (change)
                        json_string_set(v, SECRETS_REDACTED);
                }
            } else {
                found = redact(v, change) || found;
            }
            if (found && !change)
                return true;
        }
    } else if (json_is_array(doc)) {
        size_t i;
        json_t *v;
        json_array_foreach(doc, i, v)
        {
            found = redact(v, change) || found;
            if (found && !change)
                return true;
        }
    }
    return found;
}

json_t *secrets_redacted(json_t *doc)
{
    if (doc == NULL || !redact(doc, false))
        return doc;
    json_t *copy = json_deep_copy(doc);
    json_decref(doc);
    redact(copy, true);
    return copy;
}
