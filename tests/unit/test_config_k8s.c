/*
 * test_config_k8s.c — the Kubernetes source's configuration keys (k8s.*): their
 * defaults, a file that sets each of them, the environment over the file, every bad
 * value refused with the key named, the address list as a YAML list and as text, and the
 * expansion of the group template.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/testlib.h"

#include "server/base/buf.h"
#include "server/base/mem.h"
#include "server/config.h"

#define DBURL "SEXTANT_DATABASE_URL=postgres://sextant@127.0.0.1:5432/sextant"

static char dir[TL_DIR_MAX], yaml_path[TL_PATH_MAX], kubeconfig[TL_PATH_MAX];

static int setup(void **state)
{
    (void)state;
    char *const paths[] = {yaml_path, kubeconfig};
    const char *const files[] = {"sextant.yaml", "kubeconfig"};
    if (tl_tmpdir(dir, "config-k8s", paths, files, 2) != 0)
        return -1;
    tl_write_file(kubeconfig, "apiVersion: v1\nkind: Config\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tl_rmdir(dir);
    return 0;
}

/* Loads yaml (NULL: no file; "@KUBECONFIG@" becomes the test's kubeconfig file) with
 * the database URL and env (NULL-terminated, NULL for none). */
static int load(const char *yaml, const char **env, sextant_config **cfg, sx_fielderrs *errs)
{
    char *envv[16];
    size_t n = 0;
    envv[n++] = DBURL;
    for (size_t i = 0; env && env[i]; i++)
        envv[n++] = (char *)env[i];
    envv[n] = NULL;
    if (yaml) {
        char *text = sx_strdup(yaml);
        char *at = strstr(text, "@KUBECONFIG@");
        if (at) {
            *at = '\0';
            char *full = sx_asprintf("%s%s%s", text, kubeconfig, at + strlen("@KUBECONFIG@"));
            sx_free(text);
            text = full;
        }
        tl_write_file(yaml_path, text);
        sx_free(text);
    }
    return config_load(yaml ? yaml_path : NULL, envv, cfg, errs);
}

static sextant_config *load_ok(const char *yaml, const char **env)
{
    return tl_config_load_ok(load, yaml, env);
}

TL_TEST(test_defaults)
{
    sextant_config *c = load_ok(NULL, NULL);
    assert_false(c->k8s.enabled);
    assert_null(c->k8s.kubeconfig);
    assert_string_equal(c->k8s.controller_name, "sextant.dev/gateway-controller");
    assert_string_equal(c->k8s.group_template, "<namespace>/<gateway>");
    assert_int_equal(c->k8s.gateway_addresses.count, 0);
    assert_null(c->k8s.gateway_addresses.items);
    assert_int_equal(c->k8s.settle_delay_ms, 100);
    assert_int_equal(c->k8s.settle_max_ms, 1000);
    assert_int_equal(c->k8s.max_input_objects, 0);
    assert_int_equal(c->k8s.max_objects_per_snapshot, 0);
    assert_int_equal(c->k8s.max_endpoints_per_snapshot, 0);
    assert_int_equal(c->k8s.resync_ms, 36000000);
    assert_int_equal(c->k8s.max_backoff_ms, 300000);
    assert_int_equal(c->k8s.watch_timeout_ms, 300000);
    config_free(c);
}

static const char *full_yaml = "k8s:\n"
                               "  enabled: true\n"
                               "  kubeconfig: @KUBECONFIG@\n"
                               "  controller_name: example.net/gateway-controller\n"
                               "  group_template: gw-<namespace>.<gateway>\n"
                               "  gateway_addresses:\n"
                               "    - 203.0.113.7\n"
                               "    - \"2001:db8::1\"\n"
                               "    - gateway.example.com\n"
                               "  settle_delay: 250ms\n"
                               "  settle_max: 2s\n"
                               "  max_input_objects: 50000\n"
                               "  max_objects_per_snapshot: 4000\n"
                               "  max_endpoints_per_snapshot: 20000\n"
                               "  resync: 0\n"
                               "  max_backoff: 30s\n"
                               "  watch_timeout: 90s\n";

TL_TEST(test_full_file)
{
    sextant_config *c = load_ok(full_yaml, NULL);
    assert_true(c->k8s.enabled);
    assert_string_equal(c->k8s.kubeconfig, kubeconfig);
    assert_string_equal(c->k8s.controller_name, "example.net/gateway-controller");
    assert_string_equal(c->k8s.group_template, "gw-<namespace>.<gateway>");
    assert_int_equal(c->k8s.gateway_addresses.count, 3);
    assert_string_equal(c->k8s.gateway_addresses.items[0].value, "203.0.113.7");
    assert_true(c->k8s.gateway_addresses.items[0].is_ip);
    assert_string_equal(c->k8s.gateway_addresses.items[1].value, "2001:db8::1");
    assert_true(c->k8s.gateway_addresses.items[1].is_ip);
    assert_string_equal(c->k8s.gateway_addresses.items[2].value, "gateway.example.com");
    assert_false(c->k8s.gateway_addresses.items[2].is_ip);
    assert_int_equal(c->k8s.settle_delay_ms, 250);
    assert_int_equal(c->k8s.settle_max_ms, 2000);
    assert_int_equal(c->k8s.max_input_objects, 50000);
    assert_int_equal(c->k8s.max_objects_per_snapshot, 4000);
    assert_int_equal(c->k8s.max_endpoints_per_snapshot, 20000);
    assert_int_equal(c->k8s.resync_ms, 0);
    assert_int_equal(c->k8s.max_backoff_ms, 30000);
    assert_int_equal(c->k8s.watch_timeout_ms, 90000);

    /* The dump shows the list as a list, the durations canonically. */
    json_t *d = config_dump_json(c);
    json_t *k = json_object_get(d, "k8s");
    json_t *want = json_pack("[sss]", "203.0.113.7", "2001:db8::1", "gateway.example.com");
    tl_assert_json_equal(json_object_get(k, "gateway_addresses"), want);
    json_decref(want);
    assert_string_equal(json_string_value(json_object_get(k, "settle_delay")), "250ms");
    assert_string_equal(json_string_value(json_object_get(k, "watch_timeout")), "1m30s");
    assert_true(json_is_true(json_object_get(k, "enabled")));
    json_decref(d);
    config_free(c);
}

/* Environment variables over full_yaml's keys (an empty kubeconfig: in-cluster). */
static const char *override_env[] = {
    "SEXTANT_K8S_ENABLED=yes",
    "SEXTANT_K8S_GATEWAY_ADDRESSES= 198.51.100.1 , lb.example.org ",
    "SEXTANT_K8S_SETTLE_DELAY=0",
    "SEXTANT_K8S_MAX_INPUT_OBJECTS=7",
    "SEXTANT_K8S_GROUP_TEMPLATE=<gateway>",
    "SEXTANT_K8S_KUBECONFIG=",
    NULL};

TL_TEST(test_env_overrides_file)
{
    sextant_config *c = load_ok(full_yaml, override_env);
    assert_true(c->k8s.enabled);
    assert_null(c->k8s.kubeconfig); /* an empty variable: in-cluster */
    assert_int_equal(c->k8s.gateway_addresses.count, 2);
    assert_string_equal(c->k8s.gateway_addresses.items[0].value, "198.51.100.1");
    assert_string_equal(c->k8s.gateway_addresses.items[1].value, "lb.example.org");
    assert_false(c->k8s.gateway_addresses.items[1].is_ip);
    assert_int_equal(c->k8s.settle_delay_ms, 0);
    assert_int_equal(c->k8s.settle_max_ms, 2000); /* the file's */
    assert_int_equal(c->k8s.max_input_objects, 7);
    assert_string_equal(c->k8s.group_template, "<gateway>");
    config_free(c);

    /* An empty list in the environment clears the file's. */
    const char *none[] = {"SEXTANT_K8S_GATEWAY_ADDRESSES=", NULL};
    c = load_ok(full_yaml, none);
    assert_int_equal(c->k8s.gateway_addresses.count, 0);
    config_free(c);
}

typedef struct bad_case {
    const char *name;
    const char *yaml; /* NULL: no file */
    const char *env;  /* NULL: none */
    const char *path; /* the error's path */
    const char *msg;  /* a substring of its message */
} bad_case;

static const bad_case bad_cases[] = {
    {"controller name without a path", "k8s:\n  controller_name: sextant.dev\n", NULL,
     "k8s.controller_name", "domain-prefixed path"},
    {"controller name with an upper-case domain", "k8s:\n  controller_name: Sextant.dev/gw\n", NULL,
     "k8s.controller_name", "lowercase DNS domain"},
    {"controller name with a space in its path", "k8s:\n  controller_name: \"sextant.dev/a b\"\n",
     NULL, "k8s.controller_name", "may hold only"},
    {"empty controller name", NULL, "SEXTANT_K8S_CONTROLLER_NAME=",
     "SEXTANT_K8S_CONTROLLER_NAME (k8s.controller_name)", "must not be empty"},
    {"empty group template", "k8s:\n  group_template: \"\"\n", NULL, "k8s.group_template",
     "must not be empty"},
    {"unknown placeholder", "k8s:\n  group_template: <namespace>/<name>\n", NULL,
     "k8s.group_template", "only the placeholders <namespace> and <gateway>"},
    {"space in the template", "k8s:\n  group_template: \"edge <gateway>\"\n", NULL,
     "k8s.group_template", "without spaces"},
    {"template without the gateway", "k8s:\n  group_template: <namespace>\n", NULL,
     "k8s.group_template", "must contain <gateway>"},
    {"template with a character group names may not hold",
     "k8s:\n  group_template: \"<namespace>#<gateway>\"\n", NULL, "k8s.group_template",
     "must make proxy group names, which may hold only ASCII letters, digits and the "
     "characters - _ . : /"},
    {"template making names too long", NULL,
     "SEXTANT_K8S_GROUP_TEMPLATE=<namespace>/<gateway>/"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "SEXTANT_K8S_GROUP_TEMPLATE (k8s.group_template)", "must be at most 253 bytes"},
    {"address that is neither", "k8s:\n  gateway_addresses: \"10.0.0.1, not an address\"\n", NULL,
     "k8s.gateway_addresses", "\"not an address\" is neither an IP address"},
    {"upper-case host name", NULL, "SEXTANT_K8S_GATEWAY_ADDRESSES=LB.example.com",
     "SEXTANT_K8S_GATEWAY_ADDRESSES (k8s.gateway_addresses)", "lowercase DNS host name"},
    {"empty entry", "k8s:\n  gateway_addresses: \"10.0.0.1,,10.0.0.2\"\n", NULL,
     "k8s.gateway_addresses", "empty"},
    {"trailing comma", NULL, "SEXTANT_K8S_GATEWAY_ADDRESSES=10.0.0.1,",
     "SEXTANT_K8S_GATEWAY_ADDRESSES (k8s.gateway_addresses)", "empty"},
    {"list item with a comma", "k8s:\n  gateway_addresses:\n    - \"10.0.0.1,10.0.0.2\"\n", NULL,
     "k8s.gateway_addresses", "without commas (line 3)"},
    {"list of mappings", "k8s:\n  gateway_addresses:\n    - value: 10.0.0.1\n", NULL,
     "k8s.gateway_addresses", "list of single values"},
    {"mapping for a list", "k8s:\n  gateway_addresses:\n    ip: 10.0.0.1\n", NULL,
     "k8s.gateway_addresses", "expected a single value, got a mapping"},
    {"settle max below delay", "k8s:\n  settle_delay: 2s\n  settle_max: 500ms\n", NULL,
     "k8s.settle_max", "must not be less than k8s.settle_delay (2s), got 500ms"},
    {"settle delay too long", "k8s:\n  settle_delay: 2m\n", NULL, "k8s.settle_delay",
     "must be between"},
    {"settle max zero", "k8s:\n  settle_max: 0\n", NULL, "k8s.settle_max", "must be between"},
    {"negative limit", "k8s:\n  max_input_objects: -1\n", NULL, "k8s.max_input_objects",
     "must be between 0 and 1000000000"},
    {"limit not a number", NULL, "SEXTANT_K8S_MAX_ENDPOINTS_PER_SNAPSHOT=lots",
     "SEXTANT_K8S_MAX_ENDPOINTS_PER_SNAPSHOT (k8s.max_endpoints_per_snapshot)",
     "expected an integer"},
    {"watch timeout with milliseconds", "k8s:\n  watch_timeout: 1500ms\n", NULL,
     "k8s.watch_timeout", "whole number of seconds"},
    {"watch timeout too long", "k8s:\n  watch_timeout: 2h\n", NULL, "k8s.watch_timeout",
     "must be between"},
    {"resync below a second", "k8s:\n  resync: 500ms\n", NULL, "k8s.resync", "at least 1s"},
    {"max back-off below a second", "k8s:\n  max_backoff: 500ms\n", NULL, "k8s.max_backoff",
     "must be between"},
    {"kubeconfig that does not exist", "k8s:\n  kubeconfig: /nonexistent/kubeconfig\n", NULL,
     "k8s.kubeconfig", "cannot read"},
    {"enabled not a boolean", NULL, "SEXTANT_K8S_ENABLED=maybe",
     "SEXTANT_K8S_ENABLED (k8s.enabled)", "expected true or false"},
    {"misspelt key", "k8s:\n  controler_name: x.dev/y\n", NULL, "k8s.controler_name",
     "did you mean \"controller_name\""},
};

TL_TEST(test_bad_values)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case *bc = &bad_cases[i];
        const char *env[] = {bc->env, NULL};
        sextant_config *c = NULL;
        sx_fielderrs errs = {0};
        int rc = load(bc->yaml, env, &c, &errs);
        if (!tl_config_refused(bc->name, rc, c, &errs, 1, bc->path, bc->msg))
            failures++;
    }
    assert_int_equal(failures, 0);
}

TL_TEST(test_group_template)
{
    char out[300];
    assert_int_equal(config_k8s_group("<namespace>/<gateway>", "default", "web", out, sizeof(out)),
                     0);
    assert_string_equal(out, "default/web");
    assert_int_equal(
        config_k8s_group("edge-<gateway>.<namespace>.<gateway>", "prod", "api", out, sizeof(out)),
        0);
    assert_string_equal(out, "edge-api.prod.api");
    assert_int_equal(config_k8s_group("<gateway>", "a", "b", out, sizeof(out)), 0);
    assert_string_equal(out, "b");

    /* Longer than a group name may be (253 bytes): refused, out emptied. */
    char name[254];
    memset(name, 'g', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    assert_int_equal(config_k8s_group("<namespace>/<gateway>", "ns", name, out, sizeof(out)),
                     SX_EINVAL);
    assert_string_equal(out, "");
    name[250] = '\0'; /* "ns/" + 250 bytes = 253: the longest there is */
    assert_int_equal(config_k8s_group("<namespace>/<gateway>", "ns", name, out, sizeof(out)), 0);
    assert_int_equal(strlen(out), 253);
    /* Too small a buffer, and templates the loader refuses. */
    assert_int_equal(config_k8s_group("<namespace>/<gateway>", "default", "web", out, 8),
                     SX_EINVAL);
    assert_string_equal(out, "");
    assert_int_equal(config_k8s_group("<name>", "default", "web", out, sizeof(out)), SX_EINVAL);
    assert_int_equal(config_k8s_group("<gateway>", "default", "", out, sizeof(out)), SX_EINVAL);
}

TL_TEST(test_help_lists_the_keys)
{
    const char *expect[] = {"SEXTANT_K8S_ENABLED; default false",
                            "SEXTANT_K8S_KUBECONFIG; none, in-cluster",
                            "SEXTANT_K8S_CONTROLLER_NAME; default sextant.dev/gateway-controller",
                            "SEXTANT_K8S_GROUP_TEMPLATE; default <namespace>/<gateway>",
                            "SEXTANT_K8S_GATEWAY_ADDRESSES",
                            "SEXTANT_K8S_SETTLE_DELAY; default 100ms",
                            "SEXTANT_K8S_SETTLE_MAX; default 1s",
                            "SEXTANT_K8S_MAX_INPUT_OBJECTS; 0, no limit",
                            "SEXTANT_K8S_MAX_OBJECTS_PER_SNAPSHOT; 0, no limit",
                            "SEXTANT_K8S_MAX_ENDPOINTS_PER_SNAPSHOT; 0, no limit",
                            "SEXTANT_K8S_RESYNC; default 10h",
                            "SEXTANT_K8S_MAX_BACKOFF; default 5m",
                            "SEXTANT_K8S_WATCH_TIMEOUT; default 5m"};
    tl_assert_help_has(expect, sizeof(expect) / sizeof(expect[0]));
}

TL_MAIN_GROUP(setup, teardown)
