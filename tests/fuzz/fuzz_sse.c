/*
 * fuzz_sse.c — libFuzzer target for the parameters of the live events stream
 * (GET /api/v1/events, api/handlers_events.c): the Last-Event-ID header (or ?since=),
 * an event id, and ?types=, a comma-separated list of event types.
 *
 * The input is "<Last-Event-ID>\n<types>". An accepted id is non-negative and prints
 * back as sent (leading zeros aside); an accepted types list sets only bits of known
 * types, each named in the list; a refused one explains itself in a NUL-terminated
 * message that fits its buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers_common.h"
#include "api/handlers_events.h"
#include "server/base/mem.h"
#include "server/events.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = fz_cstr(data, size);
    char *types = strchr(in, '\n');
    if (types)
        *types++ = '\0';

    fz_id_value(in);

    unsigned mask = 0xdeadu;
    char why[512];
    memset(why, 'x', sizeof(why));
    if (api_events_parse_types(types, &mask, why, sizeof(why))) {
        if (mask >> EVENTS_NTYPES)
            abort();
        for (int k = 0; k < EVENTS_NTYPES; k++)
            if ((mask & (1u << k)) && strstr(types, events_type_name(k)) == NULL)
                abort();
    } else if (memchr(why, '\0', sizeof(why)) == NULL || why[0] == '\0') {
        abort();
    }
    sx_free(in);
    return 0;
}
