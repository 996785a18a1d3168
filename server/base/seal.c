/*
 * seal.c — the secrets keyring and AES-256-GCM sealing (see seal.h).
 *
 * Design: OpenSSL's EVP AES-256-GCM with a random 96-bit nonce per seal and a 128-bit
 * tag. The additional authenticated data is a label naming the form and the key id
 * ("sextant-secret-v1:<key id>"), so a value cannot be made to name another key. Key
 * bytes live only in the keyring, which is wiped with OPENSSL_cleanse when freed;
 * plaintext scratch is wiped the same way.
 */
#include "server/base/seal.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "server/base/b64.h"
#include "server/base/mem.h"
#include "server/base/num.h"

#define KEY_LEN   32
#define NONCE_LEN 12
#define TAG_LEN   16
#define MAX_KEYS  64
#define FILE_MAX  (64 * 1024)

typedef struct seal_key {
    char id[SX_SEAL_KEY_ID_MAX + 1];
    unsigned char key[KEY_LEN];
} seal_key;

struct sx_keyring {
    seal_key keys[MAX_KEYS];
    size_t n;
    size_t active; /* index into keys */
};

/* ------------------------------------------------------------------ the keyring */

static bool valid_id(const char *s, size_t n)
{
    if (n == 0 || n > SX_SEAL_KEY_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

/* The 32 key bytes from 64 hex digits or base64 (padded or not); false otherwise. */
static bool parse_key(const char *s, size_t n, unsigned char out[KEY_LEN])
{
    if (n == 2 * KEY_LEN) {
        bool hex = true;
        for (size_t i = 0; i < KEY_LEN && hex; i++) {
            int hi = sx_hex_digit(s[2 * i]), lo = sx_hex_digit(s[2 * i + 1]);
            hex = hi >= 0 && lo >= 0;
            out[i] = (unsigned char)(hi << 4 | lo);
        }
        if (hex)
            return true;
    }
    while (n > 0 && s[n - 1] == '=')
        n--;
    uint8_t tmp[64];
    size_t len = 0;
    bool clean;
    if (n > 48 || !sx_b64_decode(s, n, SX_B64_STD, tmp, &len, &clean) || len != KEY_LEN) {
        OPENSSL_cleanse(tmp, sizeof(tmp));
        return false;
    }
    memcpy(out, tmp, KEY_LEN);
    OPENSSL_cleanse(tmp, sizeof(tmp));
    return true;
}

/* The next white-space separated word of [*p, end) into (*w, *wn); false at the end. */
static bool next_word(const char **p, const char *end, const char **w, size_t *wn)
{
    while (*p < end && (**p == ' ' || **p == '\t' || **p == '\r'))
        (*p)++;
    if (*p >= end)
        return false;
    *w = *p;
    while (*p < end && !(**p == ' ' || **p == '\t' || **p == '\r'))
        (*p)++;
    *wn = (size_t)(*p - *w);
    return true;
}

int sx_keyring_parse(const char *text, size_t len, const char *name, sx_keyring **out, sx_err *err)
{
    *out = NULL;
    sx_keyring *k = sx_calloc(1, sizeof(*k));
    size_t nactive = 0;
    int line = 0, rc = 0;
    const char *p = text, *end = text + len;
    while (p < end && rc == 0) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        line++;
        const char *w[4];
        size_t wn[4], nw = 0;
        const char *q = p;
        while (nw < 4 && next_word(&q, eol, &w[nw], &wn[nw])) {
            if (w[nw][0] == '#')
                break;
            nw++;
        }
        p = eol + 1;
        if (nw == 0)
            continue;
        if (nw < 2 || nw > 3 || (nw == 3 && !(wn[2] == 6 && memcmp(w[2], "active", 6) == 0))) {
            rc = sx_err_set(err, SX_EINVAL, "%s:%d: expected \"<key id> <key> [active]\"", name,
                            line);
        } else if (!valid_id(w[0], wn[0])) {
            rc = sx_err_set(err, SX_EINVAL,
                            "%s:%d: a key id is 1 to %d characters of A-Z, a-z, 0-9, '.', '_' "
                            "and '-'",
                            name, line, SX_SEAL_KEY_ID_MAX);
        } else if (k->n == MAX_KEYS) {
            rc = sx_err_set(err, SX_EINVAL, "%s:%d: more than %d keys", name, line, MAX_KEYS);
        } else {
            seal_key *sk = &k->keys[k->n];
            memcpy(sk->id, w[0], wn[0]);
            sk->id[wn[0]] = '\0';
            for (size_t i = 0; i < k->n && rc == 0; i++)
                if (strcmp(k->keys[i].id, sk->id) == 0)
                    rc = sx_err_set(err, SX_EINVAL, "%s:%d: key id %s appears twice", name, line,
                                    sk->id);
            if (rc == 0 && !parse_key(w[1], wn[1], sk->key))
                rc = sx_err_set(err, SX_EINVAL,
                                "%s:%d: key %s is not 32 bytes as 64 hex digits or base64", name,
                                line, sk->id);
            if (rc == 0 && nw == 3) {
                k->active = k->n;
                nactive++;
            }
            if (rc == 0)
                k->n++;
        }
    }
    if (rc == 0 && k->n == 0)
        rc = sx_err_set(err, SX_EINVAL, "%s: holds no key", name);
    else if (rc == 0 && nactive > 1)
        rc = sx_err_set(err, SX_EINVAL, "%s: more than one key is marked active", name);
    else if (rc == 0 && nactive == 0 && k->n > 1)
        rc = sx_err_set(err, SX_EINVAL, "%s: %zu keys but none is marked active", name, k->n);
    if (rc) {
        sx_err_hint(err, "Each line is \"<key id> <key> [active]\": the key 32 random bytes as 64 "
                         "hex digits or base64, \"active\" on the key new secrets are sealed "
                         "with.");
        sx_keyring_free(k);
        return rc;
    }
    *out = k;
    return 0;
}

int sx_keyring_load(const char *path, sx_keyring **out, sx_err *err)
{
    *out = NULL;
    sx_buf b = {0};
    int r = sx_buf_read_file(&b, path, FILE_MAX);
    int rc;
    if (r != 0)
        rc = sx_err_set(err, SX_EIO, "could not read the secrets key file %s", path);
    else if (b.len > FILE_MAX)
        rc = sx_err_set(err, SX_EINVAL, "secrets key file %s is over %d bytes", path, FILE_MAX);
    else
        rc = sx_keyring_parse(b.data ? b.data : "", b.len, path, out, err);
    if (b.data)
        OPENSSL_cleanse(b.data, b.len);
    sx_buf_free(&b);
    return rc;
}

void sx_keyring_free(sx_keyring *k)
{
    if (k == NULL)
        return;
    OPENSSL_cleanse(k, sizeof(*k));
    sx_free(k);
}

const char *sx_keyring_active(const sx_keyring *k)
{
    return k->keys[k->active].id;
}

static const seal_key *find_key(const sx_keyring *k, const char *id)
{
    for (size_t i = 0; k && i < k->n; i++)
        if (strcmp(k->keys[i].id, id) == 0)
            return &k->keys[i];
    return NULL;
}

bool sx_keyring_has(const sx_keyring *k, const char *key_id)
{
    return find_key(k, key_id) != NULL;
}

/* ------------------------------------------------------------------ AES-256-GCM */

static void aad_of(const char *id, char out[64])
{
    snprintf(out, 64, "sextant-secret-v1:%s", id);
}

/* nonce|ciphertext|tag of pt under key into out (appended). */
static int gcm_seal(const seal_key *key, const void *pt, size_t n, sx_buf *out, sx_err *err)
{
    if (n > INT32_MAX - 64)
        return sx_err_set(err, SX_ETOOLARGE, "a secret of %zu bytes is too large to seal", n);
    char aad[64];
    aad_of(key->id, aad);
    sx_buf_reserve(out, NONCE_LEN + n + TAG_LEN);
    unsigned char *nonce = (unsigned char *)out->data + out->len;
    unsigned char *ct = nonce + NONCE_LEN;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0;
    bool ok = c && RAND_bytes(nonce, NONCE_LEN) == 1 &&
              EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1 &&
              EVP_EncryptInit_ex(c, NULL, NULL, key->key, nonce) == 1 &&
              EVP_EncryptUpdate(c, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) == 1 &&
              EVP_EncryptUpdate(c, ct, &len, pt, (int)n) == 1 &&
              EVP_EncryptFinal_ex(c, ct + len, &fin) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, ct + n) == 1;
    EVP_CIPHER_CTX_free(c);
    if (!ok)
        return sx_err_set(err, SX_EINTERNAL, "could not seal a secret: AES-256-GCM failed");
    out->len += NONCE_LEN + n + TAG_LEN;
    out->data[out->len] = '\0';
    return 0;
}

/* Opens nonce|ciphertext|tag (in[0..n)) with the key named id, appending to out. */
static int gcm_open(const sx_keyring *k, const char *id, const unsigned char *in, size_t n,
                    sx_buf *out, sx_err *err)
{
    const seal_key *key = find_key(k, id);
    if (key == NULL) {
        sx_err_set(err, SX_EUNAVAILABLE, "secret sealed with key %s, which %s", id,
                   k ? "secrets.key_file does not hold" : "cannot be opened: no secrets.key_file");
        sx_err_hint(err, "Keep every key that sealed a stored secret in secrets.key_file until "
                         "`sextant rotate-secrets` has resealed them with the active key.");
        return SX_EUNAVAILABLE;
    }
    if (n < NONCE_LEN + TAG_LEN)
        return sx_err_set(err, SX_EINVAL, "sealed secret is truncated");
    size_t ctn = n - NONCE_LEN - TAG_LEN;
    char aad[64];
    aad_of(id, aad);
    sx_buf_reserve(out, ctn + 1);
    unsigned char *pt = (unsigned char *)out->data + out->len;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0;
    bool ok = c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1 &&
              EVP_DecryptInit_ex(c, NULL, NULL, key->key, in) == 1 &&
              EVP_DecryptUpdate(c, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) == 1 &&
              EVP_DecryptUpdate(c, pt, &len, in + NONCE_LEN, (int)ctn) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN,
                                  (void *)(in + NONCE_LEN + ctn)) == 1 &&
              EVP_DecryptFinal_ex(c, pt + len, &fin) == 1;
    EVP_CIPHER_CTX_free(c);
    if (!ok) {
        OPENSSL_cleanse(pt, ctn);
        sx_err_set(err, SX_EUNAVAILABLE, "key %s of secrets.key_file does not open a stored secret",
                   id);
        sx_err_detail(err, "The key under that id is not the one the secret was sealed with, or "
                           "the stored value was altered.");
        return SX_EUNAVAILABLE;
    }
    out->len += ctn;
    out->data[out->len] = '\0';
    return 0;
}

/* ------------------------------------------------------------------ the two forms */

bool sx_sealed_text(const char *s)
{
    return s && strncmp(s, SX_SEAL_TEXT_PREFIX, strlen(SX_SEAL_TEXT_PREFIX)) == 0;
}

bool sx_sealed_bytes(const void *data, size_t n)
{
    return data && n >= 5 && memcmp(data, SX_SEAL_BYTES_MAGIC, 4) == 0;
}

bool sx_sealed_key_id(const void *data, size_t n, char out[SX_SEAL_KEY_ID_MAX + 1])
{
    const char *s = data;
    size_t pl = strlen(SX_SEAL_TEXT_PREFIX);
    if (n > pl && memcmp(s, SX_SEAL_TEXT_PREFIX, pl) == 0) {
        const char *id = s + pl, *colon = memchr(id, ':', n - pl);
        if (colon == NULL || !valid_id(id, (size_t)(colon - id)))
            return false;
        memcpy(out, id, (size_t)(colon - id));
        out[colon - id] = '\0';
        return true;
    }
    if (sx_sealed_bytes(data, n)) {
        size_t idn = (unsigned char)s[4];
        if (n < 5 + idn || !valid_id(s + 5, idn))
            return false;
        memcpy(out, s + 5, idn);
        out[idn] = '\0';
        return true;
    }
    return false;
}

int sx_seal_text(const sx_keyring *k, const void *pt, size_t n, sx_buf *out, sx_err *err)
{
    const seal_key *key = &k->keys[k->active];
    sx_buf raw = {0};
    int rc = gcm_seal(key, pt, n, &raw, err);
    if (rc == 0) {
        size_t base = out->len;
        sx_buf_printf(out, "%s%s:", SX_SEAL_TEXT_PREFIX, key->id);
        size_t enc = 4 * ((raw.len + 2) / 3);
        sx_buf_reserve(out, enc + 1);
        int w = EVP_EncodeBlock((unsigned char *)out->data + out->len,
                                (const unsigned char *)raw.data, (int)raw.len);
        if (w < 0) {
            out->len = base;
            rc = sx_err_set(err, SX_EINTERNAL, "could not encode a sealed secret");
        } else {
            out->len += (size_t)w;
            out->data[out->len] = '\0';
        }
    }
    sx_buf_free(&raw);
    return rc;
}

int sx_seal_bytes(const sx_keyring *k, const void *pt, size_t n, sx_buf *out, sx_err *err)
{
    const seal_key *key = &k->keys[k->active];
    size_t idn = strlen(key->id);
    sx_buf_append(out, SX_SEAL_BYTES_MAGIC, 4);
    sx_buf_putc(out, (char)idn);
    sx_buf_append(out, key->id, idn);
    return gcm_seal(key, pt, n, out, err);
}

int sx_open_text(const sx_keyring *k, const char *sealed, sx_buf *out, sx_err *err)
{
    char id[SX_SEAL_KEY_ID_MAX + 1];
    size_t n = strlen(sealed);
    if (!sx_sealed_key_id(sealed, n, id))
        return sx_err_set(err, SX_EINVAL, "malformed sealed secret");
    const char *b64 = sealed + strlen(SX_SEAL_TEXT_PREFIX) + strlen(id) + 1;
    size_t bn = strlen(b64);
    while (bn > 0 && b64[bn - 1] == '=')
        bn--;
    uint8_t *raw = sx_malloc(bn / 4 * 3 + 3);
    size_t len = 0;
    bool clean;
    int rc;
    if (!sx_b64_decode(b64, bn, SX_B64_STD, raw, &len, &clean))
        rc = sx_err_set(err, SX_EINVAL, "malformed sealed secret");
    else
        rc = gcm_open(k, id, raw, len, out, err);
    sx_free(raw);
    return rc;
}

int sx_open_bytes(const sx_keyring *k, const void *sealed, size_t n, sx_buf *out, sx_err *err)
{
    char id[SX_SEAL_KEY_ID_MAX + 1];
    if (!sx_sealed_key_id(sealed, n, id))
        return sx_err_set(err, SX_EINVAL, "malformed sealed secret");
    const unsigned char *p = (const unsigned char *)sealed + 5 + strlen(id);
    return gcm_open(k, id, p, n - 5 - strlen(id), out, err);
}
