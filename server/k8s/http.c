/*
 * http.c — requests to the Kubernetes API server on libcurl (see http.h).
 *
 * Design: the connection settings of a k8s_cfg become curl options in one function, so
 * the watch loop's long-lived handles and one-shot requests trust, authenticate and time
 * out alike. PEM bytes from the kubeconfig are handed to curl as copied blobs, never
 * written to disk.
 */
#include "server/k8s/http.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/mem.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "dev"
#endif

/* One response body larger than this is refused (lists are paginated well below it). */
#define MAX_RESPONSE_BYTES (64u * 1024 * 1024)
/* How long a one-shot request may take in all. */
#define REQUEST_TIMEOUT_MS 30000L

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void k8s_http_global_init(void)
{
    pthread_once(&global_once, global_init);
}

static void set_blob(CURL *h, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob b = {.data = (void *)data, .len = len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(h, opt, &b);
}

int k8s_http_setup(CURL *h, const k8s_cfg *cfg, const char *content_type, long connect_timeout_ms,
                   struct curl_slist **headers, sx_err *err)
{
    *headers = NULL;
    curl_easy_reset(h);
    char *token = NULL;
    int rc = k8s_cfg_token(cfg, &token, err);
    if (rc != 0)
        return rc;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "sextant/" SEXTANT_VERSION);
    if (cfg->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (cfg->ca_data) {
        set_blob(h, CURLOPT_CAINFO_BLOB, cfg->ca_data, cfg->ca_data_len);
    } else if (cfg->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
    }
    if (cfg->cert_data) {
        set_blob(h, CURLOPT_SSLCERT_BLOB, cfg->cert_data, cfg->cert_data_len);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (cfg->cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert_file);
    }
    if (cfg->key_data) {
        set_blob(h, CURLOPT_SSLKEY_BLOB, cfg->key_data, cfg->key_data_len);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (cfg->key_file) {
        curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key_file);
    }
    struct curl_slist *l = curl_slist_append(NULL, "Accept: application/json");
    if (token) {
        char *auth = sx_asprintf("Authorization: Bearer %s", token);
        l = curl_slist_append(l, auth);
        memset(auth, 0, strlen(auth));
        sx_free(auth);
        memset(token, 0, strlen(token));
        sx_free(token);
    }
    if (content_type) {
        char *ct = sx_asprintf("Content-Type: %s", content_type);
        l = curl_slist_append(l, ct);
        sx_free(ct);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    *headers = l;
    return 0;
}

int k8s_http_code(long http)
{
    switch (http) {
    case 400:
        return SX_EINVAL;
    case 401:
        return SX_EUNAUTH;
    case 403:
        return SX_EFORBIDDEN;
    case 404:
        return SX_ENOTFOUND;
    case 409:
        return SX_ECONFLICT;
    case 410:
    case 412:
        return SX_EPRECONDITION;
    case 413:
        return SX_ETOOLARGE;
    case 415:
        return SX_EUNSUPPORTED;
    case 422:
        return SX_EVALIDATION;
    case 429:
        return SX_ERATELIMIT;
    case 504:
        return SX_ETIMEOUT;
    default:
        return http >= 500 ? SX_EUNAVAILABLE : SX_EINTERNAL;
    }
}

int k8s_http_error(long http, const char *body, size_t len, const char *what, sx_err *err)
{
    int code = k8s_http_code(http);
    const char *msg = NULL, *reason = NULL;
    json_t *st = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    if (json_is_object(st)) {
        msg = json_string_value(json_object_get(st, "message"));
        reason = json_string_value(json_object_get(st, "reason"));
    }
    if (msg && *msg)
        sx_err_set(err, code, "%s: HTTP %ld%s%s: %s", what, http, reason ? " " : "",
                   reason ? reason : "", msg);
    else
        sx_err_set(err, code, "%s: HTTP %ld", what, http);
    json_decref(st);
    return code;
}

typedef struct sink {
    sx_buf body;
    bool too_large;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (s->body.len + len > MAX_RESPONSE_BYTES) {
        s->too_large = true;
        return 0;
    }
    sx_buf_append(&s->body, p, len);
    return len;
}

int k8s_http_request(CURL *h, const k8s_cfg *cfg, const char *method, const char *path,
                     const json_t *body, const char *content_type, json_t **out, sx_err *err)
{
    *out = NULL;
    CURL *own = NULL;
    if (h == NULL) {
        k8s_http_global_init();
        h = own = curl_easy_init();
        if (h == NULL)
            return sx_err_set(err, SX_EINTERNAL, "could not create a libcurl handle");
    }
    struct curl_slist *headers = NULL;
    int rc =
        k8s_http_setup(h, cfg, body ? (content_type ? content_type : "application/json") : NULL,
                       REQUEST_TIMEOUT_MS / 3, &headers, err);
    if (rc != 0) {
        curl_easy_cleanup(own);
        return rc;
    }
    char *url = sx_asprintf("%s%s", cfg->server, path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    char errbuf[CURL_ERROR_SIZE] = "";
    sink s = {0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    if (text) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
    }
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    CURLcode cc = curl_easy_perform(h);
    long http = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
    char what[256];
    snprintf(what, sizeof(what), "%s %s", method, path);
    if (cc != CURLE_OK) {
        if (s.too_large)
            rc = sx_err_set(err, SX_ETOOLARGE, "%s: the response is larger than %u bytes", what,
                            MAX_RESPONSE_BYTES);
        else
            rc = sx_err_set(err, cc == CURLE_OPERATION_TIMEDOUT ? SX_ETIMEOUT : SX_EUNAVAILABLE,
                            "%s: %s", what, *errbuf ? errbuf : curl_easy_strerror(cc));
    } else {
        rc = (int)http;
        if (s.body.len)
            *out = json_loadb(s.body.data, s.body.len, 0, NULL);
        if (http < 200 || http > 299)
            k8s_http_error(http, s.body.data, s.body.len, what, err);
    }
    /* The handle must not keep pointers into this call's memory. */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_slist_free_all(headers);
    sx_buf_free(&s.body);
    free(text);
    sx_free(url);
    curl_easy_cleanup(own);
    return rc;
}
