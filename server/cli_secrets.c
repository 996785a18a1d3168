/*
 * cli_secrets.c — `sextant rotate-secrets` (see cli_secrets.h).
 *
 * The keyring is checked against the database first (the keys that sealed the stored
 * secrets must all be in it), so a rotation never starts with a key it cannot open
 * with; then storage reseals in batches that each commit (storage/secret_seal.h), which
 * makes the command idempotent and safe to interrupt.
 */
#include "server/cli_secrets.h"

#include "server/base/log.h"
#include "server/secrets.h"
#include "storage/secret_seal.h"

void cli_rotate_secrets_usage(FILE *out)
{
    fprintf(out, "Usage: sextant rotate-secrets [--config FILE]\n"
                 "\n"
                 "Reseals every private key stored in PostgreSQL (config versions and snapshots)\n"
                 "with the active key of secrets.key_file, including private keys stored\n"
                 "unencrypted before a keyring was configured, then forgets the keys that no\n"
                 "longer seal anything. Each batch commits on its own: the command can be\n"
                 "interrupted and run again, and a second run changes nothing. Run it once every\n"
                 "replica uses the keyring with the new active key; afterwards the old keys can\n"
                 "leave the keyring. Cached snapshots in Redis sealed with an old key are read\n"
                 "as misses and refilled from PostgreSQL.\n"
                 "\n"
                 "Options:\n"
                 "  -c, --config FILE   YAML configuration file; database.url and secrets.* are\n"
                 "                      used. Optional when the SEXTANT_* variables are set.\n"
                 "  -h, --help          Print this help.\n"
                 "\n"
                 "Exit status: 0 when every stored secret is sealed with the active key; 1 on an\n"
                 "error; 2 on a usage error.\n");
}

int cli_rotate_secrets(const cli_opts *o)
{
    sextant_config *cfg = cli_load_config(o->config);
    if (cfg == NULL)
        return 1;
    sx_err err;
    sx_err_clear(&err);
    pg_pool *pool = NULL;
    sx_keyring *keys = NULL;
    seal_rotation st = {0};
    int rc = cli_db_pool(cfg, "sextant-rotate-secrets", &pool, &err);
    if (rc == 0)
        rc = secrets_attach(cfg, pool, &keys, &err);
    if (rc == 0 && keys == NULL) {
        rc = sx_err_set(&err, SX_EINVAL, "secrets.key_file is not set");
        sx_err_hint(&err, "rotate-secrets reseals with the active key of secrets.key_file.");
    }
    if (rc == 0)
        rc = secrets_check(pool, keys, &err);
    if (rc == 0)
        rc = seal_rotate(pool, keys, &st, &err);
    if (rc == 0) {
        printf("{\"active_key\":\"%s\",\"configs_scanned\":%lld,\"configs_resealed\":%lld,"
               "\"snapshots_scanned\":%lld,\"snapshots_resealed\":%lld,\"keys_retired\":%lld}\n",
               sx_keyring_active(keys), st.configs_scanned, st.configs_resealed,
               st.snapshots_scanned, st.snapshots_resealed, st.keys_retired);
    } else {
        sx_log_err(SX_LOG_ERROR, "secrets", &err);
        cli_print_err("rotate-secrets", &err);
    }
    pg_pool_destroy(pool);
    sx_keyring_free(keys);
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}
