/*
 * test_seal.c — the secrets keyring and AES-256-GCM sealing (server/base/seal.h), the
 * sealing of private keys in documents (storage/secret_seal.h), their redaction and the
 * write-back of redacted keys (server/secrets.h), and the secrets permission of the RBAC
 * policy (api/policy.h).
 */
#include "tests/lib/testlib.h"

#include <stdlib.h>
#include <string.h>

#include "api/policy.h"
#include "server/base/arena.h"
#include "server/base/buf.h"
#include "server/base/seal.h"
#include "server/secrets.h"
#include "storage/secret_seal.h"

#define HEX1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define HEX2 "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
/* HEX1 as base64. */
#define B64_1 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define PEM   "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n"

static sx_keyring *ring(const char *text)
{
    sx_keyring *k = NULL;
    sx_err err;
    if (sx_keyring_parse(text, strlen(text), "keys", &k, &err) != 0)
        fail_msg("keyring did not parse: %s", err.message);
    return k;
}

TL_TEST(test_keyring_parse)
{
    sx_keyring *k = ring("# comment\n\nk1 " HEX1 "\n");
    assert_string_equal(sx_keyring_active(k), "k1");
    sx_keyring_free(k);
    k = ring("old " B64_1 "\r\nnew " HEX2 " active # the new one\n");
    assert_string_equal(sx_keyring_active(k), "new");
    assert_true(sx_keyring_has(k, "old"));
    assert_false(sx_keyring_has(k, "k1"));
    sx_keyring_free(k);

    struct {
        const char *text, *msg;
    } bad[] = {
        {"", "holds no key"},
        {"# only a comment\n", "holds no key"},
        {"k1\n", "keys:1: expected"},
        {"k1 " HEX1 " passive\n", "keys:1: expected"},
        {"k/1 " HEX1 "\n", "keys:1: a key id is"},
        {"k1 0001\n", "keys:1: key k1 is not 32 bytes"},
        {"k1 " HEX1 "00\n", "keys:1: key k1 is not 32 bytes"},
        {"k1 " HEX1 "\nk1 " HEX2 " active\n", "keys:2: key id k1 appears twice"},
        {"k1 " HEX1 "\nk2 " HEX2 "\n", "2 keys but none is marked active"},
        {"k1 " HEX1 " active\nk2 " HEX2 " active\n", "more than one key is marked active"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sx_keyring *out = (sx_keyring *)1;
        sx_err err;
        assert_int_equal(sx_keyring_parse(bad[i].text, strlen(bad[i].text), "keys", &out, &err),
                         SX_EINVAL);
        assert_null(out);
        if (strstr(err.message, bad[i].msg) == NULL)
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.message, bad[i].msg);
        assert_null(strstr(err.message, HEX2)); /* a key is never echoed */
    }
    sx_keyring *out = NULL;
    sx_err err;
    assert_int_equal(sx_keyring_load("/nonexistent/keys", &out, &err), SX_EIO);
}

TL_TEST(test_seal_open)
{
    sx_keyring *k1 = ring("k1 " HEX1 "\n");
    sx_keyring *both = ring("k1 " HEX1 "\nk2 " HEX2 " active\n");
    sx_keyring *wrong = ring("k1 " HEX2 "\n");
    sx_err err;
    sx_buf t = {0}, t2 = {0}, b = {0}, out = {0};

    assert_int_equal(sx_seal_text(k1, PEM, strlen(PEM), &t, &err), 0);
    assert_true(sx_sealed_text(t.data));
    assert_non_null(strstr(t.data, "sxsealed:v1:k1:"));
    assert_null(strstr(t.data, "PRIVATE"));
    /* A fresh nonce each time: the same key seals to different text. */
    assert_int_equal(sx_seal_text(k1, PEM, strlen(PEM), &t2, &err), 0);
    assert_string_not_equal(t.data, t2.data);
    assert_int_equal(sx_open_text(both, t.data, &out, &err), 0);
    assert_string_equal(out.data, PEM);
    sx_buf_reset(&out);

    /* The key under the same id is another: refused, nothing appended. */
    assert_int_equal(sx_open_text(wrong, t.data, &out, &err), SX_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "key k1 of secrets.key_file does not open"));
    assert_int_equal(out.len, 0);
    /* No keyring, or one without the id. */
    assert_int_equal(sx_open_text(NULL, t.data, &out, &err), SX_EUNAVAILABLE);
    sx_keyring *k3 = ring("k3 " HEX1 "\n");
    assert_int_equal(sx_open_text(k3, t.data, &out, &err), SX_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "key k1, which secrets.key_file does not hold"));
    /* Relabelled to another id that holds the same bytes: the id is authenticated. */
    char *relabel = strdup(t.data);
    relabel[strlen("sxsealed:v1:k")] = '3';
    assert_int_equal(sx_open_text(k3, relabel, &out, &err), SX_EUNAVAILABLE);
    free(relabel);
    /* One bit of the ciphertext flipped. */
    char *flip = strdup(t.data);
    size_t at = strlen(flip) - 10;
    flip[at] = flip[at] == 'A' ? 'B' : 'A';
    assert_int_equal(sx_open_text(k1, flip, &out, &err), SX_EUNAVAILABLE);
    free(flip);
    assert_int_equal(sx_open_text(k1, "sxsealed:v1:k1:!!", &out, &err), SX_EINVAL);
    assert_int_equal(sx_open_text(k1, "sxsealed:v1:k1:AAAA", &out, &err), SX_EINVAL);

    /* Bytes, with the active key of a keyring of two. */
    assert_int_equal(sx_seal_bytes(both, PEM, strlen(PEM), &b, &err), 0);
    assert_true(sx_sealed_bytes(b.data, b.len));
    char id[SX_SEAL_KEY_ID_MAX + 1];
    assert_true(sx_sealed_key_id(b.data, b.len, id));
    assert_string_equal(id, "k2");
    assert_int_equal(sx_open_bytes(both, b.data, b.len, &out, &err), 0);
    assert_int_equal(out.len, strlen(PEM));
    assert_memory_equal(out.data, PEM, out.len);
    assert_int_equal(sx_open_bytes(k1, b.data, b.len, &out, &err), SX_EUNAVAILABLE);
    assert_false(sx_sealed_bytes("\x0a\x03"
                                 "abc",
                                 5));

    sx_buf_free(&t);
    sx_buf_free(&t2);
    sx_buf_free(&b);
    sx_buf_free(&out);
    sx_keyring_free(k1);
    sx_keyring_free(k3);
    sx_keyring_free(both);
    sx_keyring_free(wrong);
}

static json_t *doc(void)
{
    json_t *d = json_pack("{s:[{s:s,s:s,s:s,s:s}], s:{s:{s:s}}}", "secrets", "namespace", "ns",
                          "name", "tls", "cert_pem", "CERT", "key_pem", PEM, "extensions", "x",
                          "keyPem", "other key");
    assert_non_null(d);
    return d;
}

TL_TEST(test_seal_json)
{
    sx_keyring *k = ring("k1 " HEX1 "\n");
    sx_err err;
    json_t *d = doc(), *stored = NULL;
    assert_true(seal_json_has_keys(d));
    assert_int_equal(seal_json(k, false, d, &stored, &err), 0);
    assert_ptr_not_equal(stored, d);
    char *text = json_dumps(stored, JSON_COMPACT);
    assert_null(strstr(text, "PRIVATE"));
    assert_null(strstr(text, "other key"));
    assert_non_null(strstr(text, "\"cert_pem\":\"CERT\""));
    free(text);
    /* The input is not changed. */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(d, "secrets"), 0), "key_pem")),
                        PEM);
    /* Sealing what is sealed changes nothing; opening gives the document back. */
    json_t *again = NULL;
    assert_int_equal(seal_json(k, false, stored, &again, &err), 0);
    assert_ptr_equal(again, stored);
    json_decref(again);
    /* Its keys, sealed, are still keys; the walk that finds none to seal tells so. */
    bool has_keys = false;
    assert_int_equal(seal_json_ex(k, false, stored, &again, &has_keys, &err), 0);
    assert_ptr_equal(again, stored);
    assert_true(has_keys);
    json_decref(again);
    assert_int_equal(seal_json_ex(k, false, d, &again, &has_keys, &err), 0);
    assert_ptr_not_equal(again, d);
    assert_true(has_keys);
    json_decref(again);
    assert_int_equal(seal_open_json(k, stored, &err), 0);
    assert_true(json_equal(stored, d));
    json_decref(stored);

    /* No keyring: refused with the path, or kept as it is when plaintext is allowed. */
    assert_int_equal(seal_json(NULL, false, d, &stored, &err), SX_EVALIDATION);
    assert_null(stored);
    assert_non_null(strstr(err.message, "secrets[0].key_pem is a private key"));
    assert_int_equal(seal_json(NULL, true, d, &stored, &err), 0);
    assert_ptr_equal(stored, d);
    json_decref(stored);
    json_t *none = json_pack("{s:[{s:s,s:s}]}", "secrets", "name", "tls", "key_pem", "");
    assert_false(seal_json_has_keys(none));
    assert_int_equal(seal_json(NULL, false, none, &stored, &err), 0);
    json_decref(stored);
    bool any = true;
    assert_int_equal(seal_json_ex(k, false, none, &stored, &any, &err), 0);
    assert_ptr_equal(stored, none);
    assert_false(any);
    json_decref(stored);
    json_decref(none);

    sx_buf out = {0};
    bool sealed = true;
    assert_int_equal(seal_bytes(NULL, false, false, "x", 1, &out, &sealed, &err), 0);
    assert_false(sealed);
    assert_int_equal(seal_bytes(NULL, false, true, "x", 1, &out, &sealed, &err), SX_EVALIDATION);
    assert_int_equal(seal_bytes(k, false, true, "x", 1, &out, &sealed, &err), 0);
    assert_true(sealed && sx_sealed_bytes(out.data, out.len));
    sx_buf_free(&out);
    json_decref(d);
    sx_keyring_free(k);
}

TL_TEST(test_redaction)
{
    json_t *d = doc();
    json_t *body = json_pack("{s:O, s:[{s:s,s:s,s:s}], s:[{s:s,s:s}]}", "spec", d, "changed",
                             "path", "spec.secrets[\"tls\"].key_pem", "old", "A", "new", "B",
                             "added", "path", "spec.listeners[0].name", "value", "https");
    json_incref(body);
    json_t *r = secrets_redacted(body);
    assert_ptr_not_equal(r, body); /* a copy: what the caller holds is not changed */
    tl_assert_json_text(r,
                        (const char *const[]){"\"old\":\"[redacted]\",\"new\":\"[redacted]\"",
                                              "\"value\":\"https\"", "CERT", NULL},
                        (const char *const[]){"PRIVATE", "other key", "\"A\"", NULL});
    tl_assert_json_text(body, (const char *const[]){"PRIVATE", NULL}, NULL);
    json_decref(r);
    /* Nothing to redact: the same document. */
    json_t *plain = json_pack("{s:s}", "name", "x");
    assert_ptr_equal(secrets_redacted(plain), plain);
    json_decref(plain);
    assert_null(secrets_redacted(NULL));

    /* Written back redacted: the stored key is kept; a new secret has none to keep. */
    sx_arena *a = sx_arena_create();
    json_t *sent = json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "secrets", "namespace", "ns", "name", "tls",
                             "cert_pem", "CERT", "key_pem", SECRETS_REDACTED);
    const json_t *kept = NULL;
    sx_err err;
    assert_true(secrets_has_redacted(sent));
    assert_false(secrets_has_redacted(d));
    assert_int_equal(secrets_keep_redacted(a, sent, d, &kept, &err), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(kept, "secrets"), 0), "key_pem")),
                        PEM);
    json_object_set_new(json_array_get(json_object_get(sent, "secrets"), 0), "name",
                        json_string("new"));
    assert_int_equal(secrets_keep_redacted(a, sent, d, &kept, &err), SX_EVALIDATION);
    assert_non_null(strstr(err.message, "spec.secrets[0].key_pem is [redacted]"));
    json_decref(sent);
    json_decref(body);
    json_decref(d);
    sx_arena_destroy(a);
}

TL_TEST(test_policy_secrets)
{
    policy *p = policy_builtin();
    assert_true(policy_allows(p, "admin", POLICY_SECRETS, NULL, "read"));
    assert_false(policy_allows(p, "operator", POLICY_SECRETS, NULL, "read"));
    assert_false(policy_allows(p, "viewer", POLICY_SECRETS, NULL, "read"));
    assert_true(policy_allows(p, "viewer", "configs", NULL, "read"));
    policy_free(p);
    /* A pattern that would only match "secrets" matches nothing: refused at load. */
    const char *glob = "roles:\n"
                       "  - name: all\n"
                       "    permissions:\n"
                       "      - resource: \"sec*\"\n"
                       "        actions: [read]\n";
    sx_err err;
    assert_int_not_equal(policy_parse(glob, strlen(glob), "rbac.yaml", &p, NULL, &err), 0);
    assert_non_null(strstr(err.message, "sec*"));
    const char *yaml = "roles:\n"
                       "  - name: all\n"
                       "    permissions:\n"
                       "      - resource: \"*\"\n"
                       "        actions: [\"*\"]\n"
                       "  - name: keys\n"
                       "    permissions:\n"
                       "      - resource: secrets\n"
                       "        actions: [read]\n";
    assert_int_equal(policy_parse(yaml, strlen(yaml), "rbac.yaml", &p, NULL, &err), 0);
    assert_false(policy_allows(p, "all", POLICY_SECRETS, NULL, "read")); /* no wildcard */
    assert_true(policy_allows(p, "all", "configs", NULL, "delete"));
    assert_true(policy_allows(p, "keys", POLICY_SECRETS, NULL, "read"));
    assert_false(policy_allows(p, "keys", POLICY_SECRETS, NULL, "write"));
    policy_free(p);
}

TL_MAIN()
