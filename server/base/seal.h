/*
 * seal.h — the secrets keyring and AES-256-GCM sealing of private keys at rest.
 *
 * A keyring is read from the file named by secrets.key_file: one key a line,
 *
 *     # comment
 *     2026-11  <64 hex digits, or the base64 of 32 bytes>  active
 *     2026-05  <...>
 *
 * a key id (1..32 of [A-Za-z0-9._-]), the 32-byte key, and "active" on the one key new
 * secrets are sealed with (a file of one key needs no mark). The other keys only open
 * what they sealed before a rotation. Keys never leave this module: they are wiped when
 * the keyring is freed and never logged.
 *
 * Two sealed forms, each carrying the id of its key so that keys can rotate:
 *   - text (a JSON string value): "sxsealed:v1:<key id>:<base64 of nonce|ciphertext|tag>"
 *   - bytes (a bytea or a cache value): "SXE1", one byte of key id length, the key id,
 *     the 12-byte nonce, the ciphertext and the 16-byte tag.
 * The nonce is random per seal; the key id is authenticated with the ciphertext, so a
 * sealed value cannot be relabelled to another key.
 *
 * A keyring is immutable once loaded: any thread may use it.
 */
#ifndef SX_BASE_SEAL_H
#define SX_BASE_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/buf.h"
#include "server/base/err.h"

#define SX_SEAL_KEY_ID_MAX 32
/* The prefix of every sealed text. */
#define SX_SEAL_TEXT_PREFIX "sxsealed:v1:"
/* The marker every sealed byte string starts with. */
#define SX_SEAL_BYTES_MAGIC "SXE1"

typedef struct sx_keyring sx_keyring;

/* Parses a keyring from text[0..len); name ("secrets.key_file") starts every error
 * message, with the line. Returns 0 and *out (free with sx_keyring_free), or SX_EINVAL
 * with *out NULL. */
int sx_keyring_parse(const char *text, size_t len, const char *name, sx_keyring **out,
                     sx_err *err) SX_MUSTCHECK;
/* Reads and parses the file at path; as sx_keyring_parse, plus SX_EIO when it cannot be
 * read. */
int sx_keyring_load(const char *path, sx_keyring **out, sx_err *err) SX_MUSTCHECK;
/* Wipes and frees; NULL allowed. */
void sx_keyring_free(sx_keyring *k);

/* The id of the active key; never NULL. */
const char *sx_keyring_active(const sx_keyring *k);
/* Whether the keyring holds a key of that id. */
bool sx_keyring_has(const sx_keyring *k, const char *key_id);

/* Whether s (NUL-terminated) / data[0..n) is in sealed form. NULL allowed (false). */
bool sx_sealed_text(const char *s);
bool sx_sealed_bytes(const void *data, size_t n);

/* The key id of a sealed text or byte string into out (NUL-terminated); false when it is
 * not in sealed form. */
bool sx_sealed_key_id(const void *data, size_t n, char out[SX_SEAL_KEY_ID_MAX + 1]);

/* Seals pt[0..n) with the active key, appending the sealed text (NUL-terminated through
 * sx_buf_cstr) or the sealed bytes to out. Never fails but for a broken OpenSSL
 * (SX_EINTERNAL). */
int sx_seal_text(const sx_keyring *k, const void *pt, size_t n, sx_buf *out,
                 sx_err *err) SX_MUSTCHECK;
int sx_seal_bytes(const sx_keyring *k, const void *pt, size_t n, sx_buf *out,
                  sx_err *err) SX_MUSTCHECK;

/* Opens a sealed text (NUL-terminated) or sealed bytes, appending the plaintext to out.
 * k NULL is allowed (then every sealed value fails). SX_EINVAL for a malformed value;
 * SX_EUNAVAILABLE when the keyring holds no key of its id, or when the key does not open
 * it (a different key under the same id, or altered data): the message says which. */
int sx_open_text(const sx_keyring *k, const char *sealed, sx_buf *out, sx_err *err) SX_MUSTCHECK;
int sx_open_bytes(const sx_keyring *k, const void *sealed, size_t n, sx_buf *out,
                  sx_err *err) SX_MUSTCHECK;

#endif
