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
 * standard alphabet's "+" and "/". */
typedef enum sx_b64_alphabet {
    SX_B64_URL,
    SX_B64_ANY,
} sx_b64_alphabet;

/* Decodes the n characters of s (no padding: strip "=" first) into out, which has room
 * for n / 4 * 3 + 2 bytes, and sets *len to the bytes written. *clean tells whether the
 * bits left over past the last byte are all zero (a canonical encoding). Returns false,
 * with out partly written, when n % 4 is 1 or s holds a character of no alphabet. */
bool sx_b64_decode(const char *s, size_t n, sx_b64_alphabet alphabet, uint8_t *out, size_t *len,
                   bool *clean);

#endif
