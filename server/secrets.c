/*
 * secrets.c — the keyring of the daemon and the commands, and redaction (see secrets.h).
 *
 * Redaction is one walk over a JSON answer, so that whatever carries a config's spec or
 * a snapshot's IR (a config, a version, a snapshot view, a diff, a stored idempotent
 * answer) is covered without each handler knowing where private keys sit.
 */
#include "server/secrets.h"

#include <string.h>
#include <sys/stat.h>

#include "server/base/log.h"
#include "storage/repo_common.h"
#include "storage/secret_seal.h"

#define COMPONENT "secrets"

int secrets_attach(const sextant_config *cfg, pg_pool *pool, sx_keyring **out, sx_err *err)
{
    *out = NULL;
    if (cfg->secrets.key_file) {
        int rc = sx_keyring_load(cfg->secrets.key_file, out, err);
        if (rc)
            return rc;
        struct stat st;
        if (stat(cfg->secrets.key_file, &st) == 0 && (st.st_mode & 077) != 0)
            SX_WARN(COMPONENT,
                    "secrets.key_file %s can be read by other users than its owner (mode %03o); "
                    "chmod 600 it",
                    cfg->secrets.key_file, (unsigned)(st.st_mode & 0777));
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

/* The key_pem member of secret i of doc, or NULL. */
static const char *key_of(const json_t *secret)
{
    return json_string_value(json_object_get(secret, "key_pem"));
}

static bool same_str(const json_t *x, const json_t *y, const char *field)
{
    const char *a = json_string_value(json_object_get(x, field));
    const char *b = json_string_value(json_object_get(y, field));
    return strcmp(a ? a : "", b ? b : "") == 0;
}

bool secrets_has_redacted(const json_t *spec)
{
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(spec, "secrets"), i, s)
    {
        const char *k = key_of(s);
        if (k && strcmp(k, SECRETS_REDACTED) == 0)
            return true;
    }
    return false;
}

int secrets_keep_redacted(sx_arena *a, const json_t *spec, const json_t *prev, const json_t **out,
                          sx_err *err)
{
    *out = spec;
    if (!secrets_has_redacted(spec))
        return 0;
    json_t *copy = repo_own_json(a, json_deep_copy(spec));
    const json_t *olds = json_object_get(prev, "secrets");
    size_t i, j;
    json_t *s;
    const json_t *o;
    json_array_foreach(json_object_get(copy, "secrets"), i, s)
    {
        const char *k = key_of(s);
        if (k == NULL || strcmp(k, SECRETS_REDACTED) != 0)
            continue;
        const char *kept = NULL;
        json_array_foreach(olds, j, o)
        {
            if (same_str(s, o, "namespace") && same_str(s, o, "name"))
                kept = key_of(o);
        }
        if (kept == NULL || kept[0] == '\0' || strcmp(kept, SECRETS_REDACTED) == 0) {
            sx_err_set(err, SX_EVALIDATION,
                       "spec.secrets[%zu].key_pem is %s, and the config has no key of that "
                       "secret to keep",
                       i, SECRETS_REDACTED);
            sx_err_hint(err, "Send the private key itself for a new or renamed secret.");
            return SX_EVALIDATION;
        }
        json_object_set_new(s, "key_pem", json_string(kept));
    }
    *out = copy;
    return 0;
}
