/*
 * test_alerts_webhook.c — what the alert webhooks promise that needs no network: the
 * X-Sextant-Signature value (HMAC-SHA256, checked against RFC 4231's vectors and
 * against OpenSSL over a payload), the retries' back-off schedule, and the
 * alerts.webhooks key (a YAML list of mappings or a JSON array in the environment;
 * bad entries refused without quoting a secret; the dump hides secrets and paths).
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/alerts_webhook.h"
#include "server/config.h"

static char dir[TL_DIR_MAX], yaml_path[TL_PATH_MAX];

static int setup(void **state)
{
    (void)state;
    char *paths[] = {yaml_path};
    const char *files[] = {"sextant.yaml"};
    return tl_tmpdir(dir, "alerts", paths, files, 1);
}

static int teardown(void **state)
{
    (void)state;
    tl_rmdir(dir);
    return 0;
}

TL_TEST(test_signature)
{
    char sig[ALERT_HOOK_SIGNATURE_LEN];
    /* RFC 4231, test case 2. */
    const char *data = "what do ya want for nothing?";
    assert_string_equal(alert_hook_sign("Jefe", data, strlen(data), sig),
                        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* The body is signed byte for byte: one byte more changes the signature. */
    char other[ALERT_HOOK_SIGNATURE_LEN];
    alert_hook_sign("Jefe", data, strlen(data) - 1, other);
    assert_string_not_equal(sig, other);
    /* Another secret, another signature; the length is always "sha256=" + 64. */
    alert_hook_sign("Jeff", data, strlen(data), other);
    assert_string_not_equal(sig, other);
    assert_int_equal(strlen(other), 71);
    /* An empty body still has a signature (RFC 4231 style key, empty message). */
    alert_hook_sign("key", "", 0, other);
    assert_string_equal(other,
                        "sha256=5d5d139563c95b5967b9bd9a8c9b233a9dedb45072794cd232dc1b74832607d0");
}

TL_TEST(test_backoff_schedule)
{
    /* Doubling from the minimum, capped at the maximum. */
    long long want[] = {500, 1000, 2000, 4000, 8000, 10000, 10000};
    for (int i = 0; i < 7; i++)
        assert_int_equal(alert_hook_backoff_ms(i + 1, 500, 10000), want[i]);
    /* A very late retry does not overflow. */
    assert_int_equal(alert_hook_backoff_ms(1000, 1000, 60000), 60000);
    /* A maximum below the minimum: the minimum. */
    assert_int_equal(alert_hook_backoff_ms(3, 1000, 10), 1000);
    /* Retry 0 or below is treated as the first. */
    assert_int_equal(alert_hook_backoff_ms(0, 250, 1000), 250);
}

static int load(const char *yaml, const char *webhooks_env, sextant_config **cfg,
                sx_fielderrs *errs)
{
    char env_url[] = "SEXTANT_DATABASE_URL=postgres://localhost/sextant";
    char env_hooks[2048];
    char *envv[3] = {env_url, NULL, NULL};
    if (webhooks_env) {
        snprintf(env_hooks, sizeof env_hooks, "SEXTANT_ALERTS_WEBHOOKS=%s", webhooks_env);
        envv[1] = env_hooks;
    }
    if (yaml)
        tl_write_file(yaml_path, yaml);
    return config_load(yaml ? yaml_path : NULL, envv, cfg, errs);
}

TL_TEST(test_config_webhooks)
{
    sextant_config *cfg = NULL;
    sx_fielderrs errs = {0};
    /* Defaults: no webhook, rules on with their documented thresholds. */
    assert_int_equal(load(NULL, NULL, &cfg, &errs), 0);
    assert_int_equal(cfg->alerts.webhooks.count, 0);
    assert_true(cfg->alerts.enabled);
    assert_int_equal(cfg->alerts.nack_rate_percent, 5);
    assert_int_equal(cfg->alerts.nack_window_ms, 5 * 60 * 1000);
    assert_int_equal(cfg->alerts.webhook_retries, 5);
    config_free(cfg);

    /* A YAML list of mappings. */
    assert_int_equal(load("alerts:\n"
                          "  interval: 200ms\n"
                          "  webhooks:\n"
                          "    - url: https://hooks.example.com/T000/B000/tok3n\n"
                          "      secret: s3cr3t-one\n"
                          "    - url: http://127.0.0.1:9999/alerts\n"
                          "      secret: \"s3cr3t two\"\n",
                          NULL, &cfg, &errs),
                     0);
    assert_int_equal(cfg->alerts.interval_ms, 200);
    assert_int_equal(cfg->alerts.webhooks.count, 2);
    assert_string_equal(cfg->alerts.webhooks.items[0].url,
                        "https://hooks.example.com/T000/B000/tok3n");
    assert_string_equal(cfg->alerts.webhooks.items[1].secret, "s3cr3t two");
    json_t *dump = config_dump_json(cfg);
    char *text = json_dumps(dump, JSON_COMPACT);
    assert_null(strstr(text, "s3cr3t"));
    assert_null(strstr(text, "tok3n"));
    assert_non_null(strstr(text, "\"https://hooks.example.com\""));
    free(text);
    json_decref(dump);
    config_free(cfg);

    /* The environment's JSON array overrides the file. */
    assert_int_equal(
        load(NULL, "[{\"url\":\"http://127.0.0.1:1/x\",\"secret\":\"k\"}]", &cfg, &errs), 0);
    assert_int_equal(cfg->alerts.webhooks.count, 1);
    assert_string_equal(cfg->alerts.webhooks.items[0].secret, "k");
    config_free(cfg);

    /* Bad entries are refused, naming the entry and never the secret. */
    static const char *const bad[] = {
        "[{\"url\":\"ftp://x/y\",\"secret\":\"hush-hush\"}]",
        "[{\"url\":\"http://x/y\"}]",
        "[{\"url\":\"http://x/y\",\"secret\":\"hush-hush\",\"extra\":1}]",
        "{\"url\":\"http://x/y\",\"secret\":\"hush-hush\"}",
        "[{\"url\":\"http://x/y\",\"secret\":\"\"}]",
        "not json hush-hush",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg = NULL;
        errs = (sx_fielderrs){0};
        assert_int_equal(load(NULL, bad[i], &cfg, &errs), SX_EINVAL);
        assert_null(cfg);
        assert_true(errs.count >= 1);
        bool named = false;
        for (size_t k = 0; k < errs.count; k++) {
            assert_null(strstr(errs.items[k].message, "hush-hush"));
            named = named || strstr(errs.items[k].path, "alerts.webhooks") != NULL;
        }
        assert_true(named);
        sx_fielderrs_free(&errs);
    }
    /* Cross checks: a proxy gone for good only after it counts as disconnected, and a
     * back-off whose minimum does not exceed its maximum. */
    errs = (sx_fielderrs){0};
    assert_int_equal(load("alerts:\n  disconnected_after: 2h\n  disconnected_forget: 1h\n"
                          "  webhook_backoff_min: 2m\n  webhook_backoff_max: 1m\n",
                          NULL, &cfg, &errs),
                     SX_EINVAL);
    assert_int_equal(errs.count, 2);
    assert_string_equal(errs.items[0].path, "alerts.disconnected_forget");
    assert_non_null(
        strstr(errs.items[0].message, "must be greater than alerts.disconnected_after"));
    assert_string_equal(errs.items[1].path, "alerts.webhook_backoff_min");
    sx_fielderrs_free(&errs);
    /* A YAML scalar where the list belongs is refused too. */
    errs = (sx_fielderrs){0};
    assert_int_equal(load("alerts:\n  webhooks:\n    - just-a-url\n", NULL, &cfg, &errs),
                     SX_EINVAL);
    sx_fielderrs_free(&errs);
}

TL_MAIN_GROUP(setup, teardown)
