/*
 * b64.c — base64 decoding: one character at a time into a bit accumulator, a byte out
 * whenever eight bits are in.
 */
#include "server/base/b64.h"

#include <ctype.h>

static int value(char c, sx_b64_alphabet alphabet)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    bool url = alphabet != SX_B64_STD, std = alphabet != SX_B64_URL;
    if ((c == '-' && url) || (c == '+' && std))
        return 62;
    if ((c == '_' && url) || (c == '/' && std))
        return 63;
    return -1;
}

bool sx_b64_decode(const char *s, size_t n, sx_b64_alphabet alphabet, uint8_t *out, size_t *len,
                   bool *clean)
{
    *len = 0;
    if (n % 4 == 1)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = value(s[i], alphabet);
        if (v < 0)
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[(*len)++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    *clean = acc == 0;
    return true;
}

bool sx_b64_decode_text(const char *s, char *out, size_t *len)
{
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isspace(*p))
            continue;
        if (*p == '=') {
            pad++;
            continue;
        }
        int v = value((char)*p, SX_B64_STD);
        if (v < 0 || pad)
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (pad > 2 || bits >= 6)
        return false;
    out[n] = '\0';
    *len = n;
    return true;
}
