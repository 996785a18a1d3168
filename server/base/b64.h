/*
 * b64.h — base64 decoding (RFC 4648), for JWT segments (base64url) and the proto3 JSON
 * bytes fields (either alphabet).
 */
#ifndef SX_BASE_B64_H
#define SX_BASE_B64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which characters stand for 62 and 63: "-" and "_" only (base64url), or also the
 * standard alphabet's "+" and "/", or those only. */
typedef enum sx_b64_alphabet {
    SX_B64_URL,
    SX_B64_ANY,
    SX_B64_STD,
} sx_b64_alphabet;

/* Decodes the n characters of s (no padding: strip "=" first) into out, which has room
 * for n / 4 * 3 + 2 bytes, and sets *len to the bytes written. *clean tells whether the
 * bits left over past the last byte are all zero (a canonical encoding). Returns false,
 * with out partly written, when n % 4 is 1 or s holds a character of no alphabet. */
bool sx_b64_decode(const char *s, size_t n, sx_b64_alphabet alphabet, uint8_t *out, size_t *len,
                   bool *clean);

/* Decodes standard base64 text as Kubernetes writes it (Secret data, kubeconfig *-data):
 * white space anywhere is ignored and "=" padding is optional, but nothing other than
 * white space may follow it. out has room for strlen(s) / 4 * 3 + 3 bytes; the bytes are
 * NUL-terminated there and *len set to their count. Returns false, with out partly
 * written and *len unchanged, on a character outside the alphabet, one after the
 * padding, more than two "=" or a dangling last character. */
bool sx_b64_decode_text(const char *s, char *out, size_t *len);

#endif
