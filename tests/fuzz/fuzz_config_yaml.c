/*
 * fuzz_config_yaml.c — libFuzzer target for the configuration loader
 * (server/config.c, server/config_yaml.c): the input is the YAML file, read through
 * config_load as `sextant serve --config` reads it, every value then parsed and
 * checked. The database URL comes from the environment so that a file can load
 * completely; a loaded configuration is dumped as JSON, as the daemon logs it.
 * Invariants: failure reports at least one problem and no configuration, success the
 * opposite.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>

#include <jansson.h>

#include "server/base/fielderr.h"
#include "server/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("sextant-fuzz-config", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    char *envp[] = {"SEXTANT_DATABASE_URL=postgresql://sextant@127.0.0.1:5432/sextant", NULL};
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    int rc = config_load(path, envp, &cfg, &errs);
    if (rc == 0) {
        if (cfg == NULL)
            abort();
        json_decref(config_dump_json(cfg));
        config_free(cfg);
    } else if (cfg != NULL || errs.count == 0) {
        abort();
    }
    sx_fielderrs_free(&errs);
    return 0;
}
