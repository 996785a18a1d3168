/*
 * nonce.h — response nonces of one xDS stream.
 *
 * A nonce only has to be unique within its stream (xds_protocol.rst: "the nonce is
 * valid only in the context of an individual xDS stream"), yet a client that echoes a
 * nonce from an earlier stream or another replica must not match by accident. Each
 * stream therefore starts from a random seed and steps by an odd constant: distinct
 * counters give distinct 64-bit values, and values of different streams do not line
 * up. The value is kept as a number (8 bytes per type and stream) and written as 16
 * lowercase hex digits on the wire.
 */
#ifndef SX_XDS_NONCE_H
#define SX_XDS_NONCE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Text of a nonce and its terminator. */
#define XDS_NONCE_LEN 17

typedef struct xds_nonce {
    uint64_t seed;  /* random per stream */
    uint64_t count; /* responses so far */
} xds_nonce;

static inline void xds_nonce_init(xds_nonce *n, uint64_t seed)
{
    n->seed = seed;
    n->count = 0;
}

/* The next nonce value of the stream. */
static inline uint64_t xds_nonce_next(xds_nonce *n)
{
    n->count++;
    return n->seed + n->count * UINT64_C(0x9E3779B97F4A7C15);
}

/* Writes v as 16 lowercase hex digits and a NUL. */
static inline void xds_nonce_format(uint64_t v, char out[XDS_NONCE_LEN])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = hex[v & 15];
    out[16] = '\0';
}

/* Whether text is the nonce v. */
static inline bool xds_nonce_equals(uint64_t v, const char *text)
{
    char buf[XDS_NONCE_LEN];
    xds_nonce_format(v, buf);
    return strcmp(buf, text) == 0;
}

#endif
