/*
 * http.h — HTTP to the Kubernetes API server on libcurl: a handle set up with the
 * connection settings of a k8s_cfg, one-shot JSON requests, and the error a failed
 * response means.
 *
 * Every request carries the bearer token (read again from a token file each time) and
 * trusts only the configured CA, unless the configuration says insecure-skip-tls-verify.
 * Nothing here logs; no error message carries a token.
 */
#ifndef SX_K8S_HTTP_H
#define SX_K8S_HTTP_H

#include <stddef.h>
#include <curl/curl.h>
#include <jansson.h>

#include "server/base/err.h"
#include "server/k8s/kubeconfig.h"

/* Initialises libcurl once per process (thread-safe); call before the first handle. */
void k8s_http_global_init(void);

/*
 * Resets h and sets it up for a request to cfg's server: TLS trust and client
 * certificate, "Authorization: Bearer" with the token read now, "Accept:
 * application/json", content_type (NULL when the request has no body) and
 * connect_timeout_ms. No signals, TCP keep-alive on. *headers receives the header list h
 * uses: free it with curl_slist_free_all once the transfer is over. SX_EIO / SX_EINVAL
 * when the token cannot be read (h is reset then and *headers NULL).
 */
int k8s_http_setup(CURL *h, const k8s_cfg *cfg, const char *content_type, long connect_timeout_ms,
                   struct curl_slist **headers, sx_err *err) SX_MUSTCHECK;

/* The project error code for an HTTP status (404 → SX_ENOTFOUND, 410 → SX_EPRECONDITION,
 * 5xx → SX_EUNAVAILABLE, ...). */
int k8s_http_code(long http);

/*
 * Sets err for a response with status http whose body (NULL allowed, len bytes) may be a
 * Kubernetes Status object: "<what>: <http> <reason>: <Status message>". Returns the
 * code of k8s_http_code.
 */
int k8s_http_error(long http, const char *body, size_t len, const char *what, sx_err *err);

/*
 * One request: method ("GET", "PATCH", ...) on path (with its query) of cfg's server,
 * with body (NULL: none) sent as content_type ("application/json" when NULL). On a handle
 * h (reused for its connection; NULL: a handle of this call). Returns the HTTP status
 * (> 0) with *out the JSON body (new reference, NULL when empty or not JSON) when a
 * response came; for a status outside 2xx err is set as by k8s_http_error. Returns a
 * negative SX_E* code when none came (SX_EUNAVAILABLE: the connection failed,
 * SX_ETIMEOUT, SX_ETOOLARGE: a body over 64 MiB), *out NULL.
 */
int k8s_http_request(CURL *h, const k8s_cfg *cfg, const char *method, const char *path,
                     const json_t *body, const char *content_type, json_t **out,
                     sx_err *err) SX_MUSTCHECK;

#endif
