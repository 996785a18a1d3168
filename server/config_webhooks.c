/*
 * config_webhooks.c — the alerts.webhooks key: a list of {url, secret} parsed from the
 * JSON array text the loader holds (the environment variable's value, or the YAML list
 * of mappings turned into it by config_yaml.c), the URL's origin that logs show, and
 * the rules between the alerts.* keys.
 *
 * Design: the secrets are HMAC keys and a webhook URL may itself be a credential (many
 * chat services put the token in the path), so no message of this file quotes either;
 * the dump and the logs show the origin only.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "server/base/mem.h"
#include "server/config_internal.h"

#define URL_MAX    2048
#define SECRET_MAX 1024

void config_webhooks_clear(config_webhooks *l)
{
    for (size_t i = 0; i < l->count; i++) {
        sx_free(l->items[i].url);
        if (l->items[i].secret) {
            explicit_bzero(l->items[i].secret, strlen(l->items[i].secret));
            sx_free(l->items[i].secret);
        }
    }
    sx_free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* Whether u is an absolute http:// or https:// URL with a host and no spaces. */
static bool url_ok(const char *u)
{
    const char *rest = strncasecmp(u, "http://", 7) == 0    ? u + 7
                       : strncasecmp(u, "https://", 8) == 0 ? u + 8
                                                            : NULL;
    if (rest == NULL || *rest == '\0' || *rest == '/' || strlen(u) > URL_MAX)
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return false;
    return true;
}

int config_parse_webhooks(const char *s, config_webhooks *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof(*out));
    if (s == NULL || s[0] == '\0')
        return 0;
    json_error_t je;
    json_t *arr = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (arr == NULL || !json_is_array(arr)) {
        snprintf(why, whylen, "must be a list of {url, secret} (in the environment, a JSON array)");
        json_decref(arr);
        return SX_EINVAL;
    }
    size_t n = json_array_size(arr);
    if (n > CONFIG_WEBHOOKS_MAX) {
        snprintf(why, whylen, "at most %d webhooks, got %zu", CONFIG_WEBHOOKS_MAX, n);
        json_decref(arr);
        return SX_EINVAL;
    }
    out->items = n ? sx_calloc(n, sizeof(*out->items)) : NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        const char *k;
        json_t *v;
        const char *bad = NULL;
        if (!json_is_object(o))
            bad = "must be a mapping with url and secret";
        else {
            json_object_foreach(o, k, v)
            {
                if (strcmp(k, "url") != 0 && strcmp(k, "secret") != 0)
                    bad = "has an unknown field (only url and secret)";
            }
        }
        const char *url = bad ? NULL : json_string_value(json_object_get(o, "url"));
        const char *secret = bad ? NULL : json_string_value(json_object_get(o, "secret"));
        if (bad == NULL && (url == NULL || !url_ok(url)))
            bad = "url must be an http:// or https:// URL";
        if (bad == NULL && (secret == NULL || secret[0] == '\0' || strlen(secret) > SECRET_MAX))
            bad = "secret must be a non-empty string of at most 1024 bytes";
        if (bad) {
            snprintf(why, whylen, "webhook %zu: %s", i + 1, bad);
            out->count = i;
            config_webhooks_clear(out);
            json_decref(arr);
            return SX_EINVAL;
        }
        out->items[i].url = sx_strdup(url);
        out->items[i].secret = sx_strdup(secret);
        out->count = i + 1;
    }
    json_decref(arr);
    return 0;
}

const char *config_webhook_origin(const char *url, char *out, size_t n)
{
    if (n == 0)
        return out;
    const char *sep = url ? strstr(url, "://") : NULL;
    if (sep == NULL) {
        out[0] = '\0';
        return out;
    }
    const char *host = sep + 3;
    const char *at = strchr(host, '@'), *slash = strchr(host, '/');
    if (at && (slash == NULL || at < slash))
        host = at + 1;
    size_t len = strcspn(host, "/?#");
    snprintf(out, n, "%.*s://%.*s", (int)(sep - url), url, (int)len, host);
    return out;
}

/* Reports key i (unless it already failed) with a rule against another duration. */
static void bad_pair(loader *L, const char *key, const char *rule, int64_t other_ms, int64_t got_ms)
{
    int i = config_key_find(key);
    if (i < 0 || L->raw[i].failed)
        return;
    char o[32], g[32];
    config_bad(L, (size_t)i, "%s (%s), got %s", rule, config_format_duration(other_ms, o, sizeof o),
               config_format_duration(got_ms, g, sizeof g));
}

void config_check_alerts(loader *L)
{
    const sextant_config *c = L->cfg;
    if (c->alerts.disconnected_forget_ms <= c->alerts.disconnected_after_ms)
        bad_pair(L, "alerts.disconnected_forget", "must be greater than alerts.disconnected_after",
                 c->alerts.disconnected_after_ms, c->alerts.disconnected_forget_ms);
    if (c->alerts.webhook_backoff_min_ms > c->alerts.webhook_backoff_max_ms)
        bad_pair(L, "alerts.webhook_backoff_min", "must not exceed alerts.webhook_backoff_max",
                 c->alerts.webhook_backoff_max_ms, c->alerts.webhook_backoff_min_ms);
}
