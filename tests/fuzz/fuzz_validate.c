/*
 * fuzz_validate.c — libFuzzer target for the validation pipeline (server/validate).
 *
 * The input is JSON: an object is a config's spec run alone; an array is the spec
 * followed by up to three peers (other live configs of the same group), so the
 * dependency and conflict stages see more than one document. The odd/even length of
 * the input switches the limits between none and small ones with the policies on, so
 * the quota and security stages are reached too. Every problem must carry a path and a
 * message, and the code must agree with the problems found.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "server/base/err.h"
#include "server/validate/validate.h"

#define NOW 1767225600LL /* 2026-01-01 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (j == NULL)
        return 0;
    const json_t *spec = j;
    val_peer peers[3];
    char ids[3][8];
    size_t npeers = 0;
    if (json_is_array(j)) {
        spec = json_array_get(j, 0);
        for (size_t i = 1; i < json_array_size(j) && npeers < 3; i++, npeers++) {
            snprintf(ids[npeers], sizeof(ids[npeers]), "p%zu", npeers);
            peers[npeers] = (val_peer){.id = ids[npeers],
                                       .ns = "default",
                                       .name = ids[npeers],
                                       .spec = json_array_get(j, i),
                                       .decoded = NULL};
        }
        if (spec == NULL) {
            json_decref(j);
            return 0;
        }
    }
    val_limits none = {0};
    val_limits small = {.config_listeners = 2,
                        .config_routes = 3,
                        .config_backends = 2,
                        .config_endpoints = 4,
                        .group_listeners = 3,
                        .group_routes = 4,
                        .group_backends = 3,
                        .group_endpoints = 5,
                        .tls_on_privileged_ports = true,
                        .refuse_private_endpoints = true,
                        .regex_max_program_size = 50};
    val_result r = {0};
    int rc = val_run(spec, npeers ? peers : NULL, npeers, size % 2 ? &small : &none, NOW, &r);
    bool conflicts_only = r.count > 0;
    for (size_t i = 0; i < r.count; i++) {
        if (r.items[i].path == NULL || r.items[i].message == NULL ||
            r.items[i].stage >= VAL_STAGE_COUNT)
            abort();
        if (r.items[i].stage != VAL_CONFLICT)
            conflicts_only = false;
    }
    if ((rc == 0) != (r.count == 0))
        abort();
    if (rc != 0 && (rc == SX_ECONFLICT) != conflicts_only)
        abort();
    val_result_free(&r);
    json_decref(j);
    return 0;
}
