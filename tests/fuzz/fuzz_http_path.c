/*
 * fuzz_http_path.c — libFuzzer target for the HTTP router's path decoding (api/http.c)
 * and the decimal parameters read from paths, queries and headers (api_parse_at_least,
 * api/handlers_common.c).
 *
 * The input is a request target as a client sends it, "/seg/seg%2F...?name=value&...".
 * The path is split at the slashes sent, as the router does, and each segment decoded:
 * an accepted segment is UTF-8 text without control characters, never longer than sent,
 * left alone when it holds no '%', and decodes to itself again once every byte is
 * percent-encoded. Each query value is parsed as an id: accepted only when it is
 * decimal digits whose value prints back the same (leading zeros aside).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers_common.h"
#include "api/http_internal.h"
#include "server/base/mem.h"
#include "server/base/utf8.h"
#include "tests/fuzz/fuzz_util.h"

static void segment(const char *seg)
{
    char *s = sx_strdup(seg);
    if (!http_decode_segment(s)) {
        sx_free(s);
        return;
    }
    size_t n = strlen(s);
    if (n > strlen(seg) || !sx_utf8_valid(s))
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            abort();
    if (strchr(seg, '%') == NULL && strcmp(s, seg) != 0)
        abort();
    char *enc = sx_malloc(3 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(enc + 3 * i, 4, "%%%02X", (unsigned char)s[i]);
    enc[3 * n] = '\0';
    if (!http_decode_segment(enc) || strcmp(enc, s) != 0)
        abort();
    sx_free(enc);
    sx_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *target = fz_cstr(data, size);
    char *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    char *path = target[0] == '/' ? target + 1 : target;
    for (char *p = path; *p;) {
        char *slash = strchr(p, '/');
        if (slash)
            *slash = '\0';
        segment(p);
        if (slash == NULL)
            break;
        p = slash + 1;
    }
    for (char *q = query; q && *q;) {
        char *amp = strchr(q, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(q, '=');
        fz_id_value(eq ? eq + 1 : q);
        if (amp == NULL)
            break;
        q = amp + 1;
    }
    sx_free(target);
    return 0;
}
