/*
 * hash.h — content hashes (SHA-256, hex) used for config checksums, snapshot
 * checksums, migration checksums and per-resource versions.
 */
#ifndef SX_BASE_HASH_H
#define SX_BASE_HASH_H

#include <stddef.h>

#define SX_SHA256_HEX_LEN 64

/* Writes the lowercase hex SHA-256 of p[0..n) and a NUL into out (65 bytes). */
void sx_sha256_hex(const void *p, size_t n, char out[SX_SHA256_HEX_LEN + 1]);

#endif
