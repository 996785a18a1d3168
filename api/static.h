/*
 * static.h — the web UI at /: the built single-page app (ui/dist) served from
 * http.ui_dir for every path no route has.
 *
 * The files are read from disk on each request (a rebuilt UI is served without a
 * restart); paths are checked so that nothing outside the directory can be read.
 * /api/ paths keep the REST API's JSON 404; any other path that is not a file answers
 * index.html (history-API fallback), so the app's own addresses survive a reload.
 */
#ifndef SX_API_STATIC_H
#define SX_API_STATIC_H

#include "api/http.h"
#include "server/base/err.h"
#include "server/config.h"

typedef struct static_ui static_ui;

/*
 * Installs the UI as srv's fallback handler (http_set_fallback) for cfg->http.ui_dir
 * (cfg borrowed; must outlive the result). NULL ui_dir (configured as ""): nothing is
 * installed and *out is NULL. A directory without index.html is an error (SX_EINVAL
 * naming the key) when it was configured, and a warning when it is the compiled-in
 * default (the source tree's ui/dist, not built yet): non-API paths then answer 404 with
 * how to build it. Returns 0 and *out (free with static_ui_destroy after the HTTP server
 * stopped), or SX_EINVAL with err.
 */
int static_ui_create(const sextant_config *cfg, http_server *srv, static_ui **out,
                     sx_err *err) SX_MUSTCHECK;

/* NULL allowed. Call only once the HTTP server no longer runs. */
void static_ui_destroy(static_ui *ui);

/* The Content-Type served for a file name ("app.js" -> "text/javascript; charset=utf-8");
 * "application/octet-stream" for unknown extensions. Never NULL. */
const char *static_ui_content_type(const char *name);

/* True when a request path (decoded, starting with "/") may name a file below the UI's
 * root: no empty, "." or ".." segment, no segment starting with a dot, no backslash and
 * no control characters. */
bool static_ui_path_safe(const char *path);

#endif
