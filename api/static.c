/*
 * static.c — the web UI at /: the files of the built single-page app (ui/dist, or
 * http.ui_dir), served for every path no route has.
 *
 * The module is the HTTP server's fallback handler (http_set_fallback), so /api/v1,
 * /healthz, /readyz and /metrics keep their routes and never reach it. A GET or HEAD of
 * a regular file below the root answers the file with its content type; any other
 * path, except under /api/ (the REST API's JSON 404) and /assets/ (a missing bundle is
 * a 404, not a page), answers index.html, so that the app's own addresses
 * (/configs/9b2f...) survive a reload: the history-API fallback.
 *
 * Reading nothing outside the root takes two locks: the decoded path must be made of
 * plain segments (no "", ".", "..", dot files, backslashes or control characters; see
 * static_ui_path_safe), and the file's realpath must still lie below the root's
 * realpath, which also catches a symbolic link pointing out. Only regular files are
 * served.
 *
 * Caching: Vite names every bundle under /assets/ after a hash of its content, so those
 * answers are immutable for a year; everything else (index.html above all) is
 * "no-cache" with an ETag (size and modification time), so a browser revalidates it
 * with If-None-Match and gets a 304 until the UI is rebuilt. A file with a ".gz" twin
 * (written by ui/scripts/compress.mjs) is sent compressed to clients that accept gzip.
 * Files are read per request (the page cache keeps them warm): the UI is a few hundred
 * kilobytes, and a rebuilt UI is served without a restart.
 */
#include "api/static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/base/log.h"
#include "server/base/mem.h"

#ifndef SEXTANT_UI_DIR
#define SEXTANT_UI_DIR "ui/dist"
#endif

/* Largest file served; the UI's biggest bundle is well under a megabyte. */
#define MAX_FILE_BYTES (32L * 1024 * 1024)

/* What the HTML document may load: its own scripts, styles (CodeMirror injects style
 * elements, hence 'unsafe-inline' for styles only), images and API calls; no frames,
 * plugins or foreign origins. */
#define CSP                                                                                        \
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "                    \
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; "               \
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

struct static_ui {
    char *root;  /* realpath of http.ui_dir, no trailing slash */
    bool built;  /* root/index.html exists: false serves the "not built" page */
    size_t rlen; /* strlen(root) */
};

/* ------------------------------------------------------------------ paths and types */

bool static_ui_path_safe(const char *path)
{
    if (path == NULL || path[0] != '/')
        return false;
    const char *seg = path + 1;
    for (;;) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || seg[0] == '.')
            return false; /* "", ".", "..", ".git", ".env" */
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)seg[i];
            if (c < 0x20 || c == 0x7f || c == '\\')
                return false;
        }
        if (slash == NULL)
            return true;
        seg = slash + 1;
    }
}

const char *static_ui_content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".webmanifest", "application/manifest+json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".webp", "image/webp"},
        {".woff2", "font/woff2"},
        {".woff", "font/woff"},
        {".wasm", "application/wasm"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char *base = strrchr(name, '/');
    const char *dot = strrchr(base ? base : name, '.');
    if (dot)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* True for a path under /assets/, where Vite puts its content-hashed bundles. */
static bool is_asset(const char *path)
{
    return strncmp(path, "/assets/", 8) == 0;
}

/* True when the client takes gzip (a "gzip" coding in Accept-Encoding without q=0). */
static bool accepts_gzip(const char *ae)
{
    for (const char *p = ae; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        if (n >= 4 && strncasecmp(p, "gzip", 4) == 0 && (n == 4 || p[4] == ';' || p[4] == ' ')) {
            const char *q = strstr(p, "q=");
            bool zero = q && q < p + n && strtod(q + 2, NULL) == 0.0;
            return !zero;
        }
        p += n;
    }
    return false;
}

/* ------------------------------------------------------------------ answering */

/* An open regular file below the root, with what its headers need. */
typedef struct ui_file {
    int fd;
    struct stat st;
} ui_file;

/*
 * Opens root + rel when it is a regular file whose realpath stays below the root.
 * Returns 0, or SX_ENOTFOUND (absent, a directory, outside the root) / SX_EIO.
 */
static int open_below(const static_ui *ui, const char *rel, ui_file *out)
{
    char joined[PATH_MAX], real[PATH_MAX];
    int n = snprintf(joined, sizeof(joined), "%s%s", ui->root, rel);
    if (n < 0 || (size_t)n >= sizeof(joined))
        return SX_ENOTFOUND;
    if (realpath(joined, real) == NULL)
        return errno == ENOENT || errno == ENOTDIR ? SX_ENOTFOUND : SX_EIO;
    if (strncmp(real, ui->root, ui->rlen) != 0 || (ui->rlen > 1 && real[ui->rlen] != '/'))
        return SX_ENOTFOUND;
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? SX_ENOTFOUND : SX_EIO;
    if (fstat(fd, &out->st) != 0 || !S_ISREG(out->st.st_mode)) {
        close(fd);
        return SX_ENOTFOUND;
    }
    out->fd = fd;
    return 0;
}

/* The weak entity tag of an open file: its size and modification time. */
static void etag_of(const struct stat *st, char *out, size_t n)
{
    snprintf(out, n, "W/\"%llx-%llx%09ld\"", (unsigned long long)st->st_size,
             (unsigned long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
}

/* True when If-None-Match names etag (or is "*"). */
static bool not_modified(http_request *r, const char *etag)
{
    const char *inm = http_req_header(r, "If-None-Match");
    if (inm == NULL)
        return false;
    if (strcmp(inm, "*") == 0)
        return true;
    /* A list of tags: compare weakly, W/ prefixes ignored on both sides. */
    const char *want = strncmp(etag, "W/", 2) == 0 ? etag + 2 : etag;
    size_t wl = strlen(want);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, ", ");
        if (n == wl && strncmp(p, want, wl) == 0)
            return true;
        p += n;
    }
    return false;
}

/* Sends the open file f (closed here) as the answer for name (which decides the type). */
static void send_file(http_request *r, ui_file *f, const char *name, bool gzipped, bool immutable)
{
    char etag[96];
    etag_of(&f->st, etag, sizeof(etag));
    bool html = strcmp(static_ui_content_type(name), "text/html; charset=utf-8") == 0;
    http_req_set_header(r, "Cache-Control",
                        immutable ? "public, max-age=31536000, immutable" : "no-cache");
    http_req_set_header(r, "ETag", etag);
    http_req_set_header(r, "Vary", "Accept-Encoding");
    if (html) {
        http_req_set_header(r, "Content-Security-Policy", CSP);
        http_req_set_header(r, "X-Frame-Options", "DENY");
        http_req_set_header(r, "Referrer-Policy", "no-referrer");
    }
    if (not_modified(r, etag)) {
        close(f->fd);
        http_respond(r, 304, NULL, "", 0);
        return;
    }
    if (f->st.st_size > MAX_FILE_BYTES) {
        close(f->fd);
        SX_WARN("ui", "%s is larger than %ld bytes and is not served", name, MAX_FILE_BYTES);
        sx_err err;
        sx_err_set(&err, SX_EINTERNAL, "the file is too large to serve");
        http_respond_err(r, &err, NULL);
        return;
    }
    size_t len = (size_t)f->st.st_size, got = 0;
    char *body = sx_malloc(len ? len : 1);
    while (got < len) {
        ssize_t k = read(f->fd, body + got, len - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(f->fd);
    if (got != len) {
        sx_free(body);
        SX_WARN("ui", "could not read %s: %s", name, got < len ? "short read" : strerror(errno));
        sx_err err;
        sx_err_set(&err, SX_EINTERNAL, "could not read the file");
        http_respond_err(r, &err, NULL);
        return;
    }
    if (gzipped)
        http_req_set_header(r, "Content-Encoding", "gzip");
    http_respond(r, 200, static_ui_content_type(name), body, len);
    sx_free(body);
}

/* Sends rel (a safe path below the root) when it is a file, its .gz twin when the client
 * takes gzip; returns false (nothing sent) when there is no such file. */
static bool try_file(http_request *r, const static_ui *ui, const char *rel, bool immutable)
{
    ui_file f;
    if (accepts_gzip(http_req_header(r, "Accept-Encoding"))) {
        char gz[PATH_MAX];
        int n = snprintf(gz, sizeof(gz), "%s.gz", rel);
        if (n > 0 && (size_t)n < sizeof(gz) && open_below(ui, gz, &f) == 0) {
            send_file(r, &f, rel, true, immutable);
            return true;
        }
    }
    if (open_below(ui, rel, &f) != 0)
        return false;
    send_file(r, &f, rel, false, immutable);
    return true;
}

static void respond_not_built(http_request *r, const static_ui *ui)
{
    char page[1024];
    int n = snprintf(page, sizeof(page),
                     "<!doctype html><meta charset=utf-8><title>Sextant</title>"
                     "<h1>The web UI is not built</h1>"
                     "<p>%s has no index.html. Build it with <code>npm ci &amp;&amp; npm run "
                     "build</code> in <code>ui/</code> (<code>deploy/local/up.sh</code> does), "
                     "or point <code>http.ui_dir</code> at a built copy. The REST API is at "
                     "<code>/api/v1</code>.</p>",
                     ui->root);
    http_req_set_header(r, "Cache-Control", "no-store");
    http_respond(r, 404, "text/html; charset=utf-8", page,
                 n > 0 && (size_t)n < sizeof(page) ? (size_t)n : strlen(page));
}

static void handle(http_request *r, void *ud)
{
    const static_ui *ui = ud;
    const char *path = http_req_path(r);
    const char *method = http_req_method(r);
    if (strncmp(path, "/api/", 5) == 0 || strcmp(path, "/api") == 0 ||
        (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)) {
        http_respond_no_route(r);
        return;
    }
    if (!ui->built) {
        respond_not_built(r, ui);
        return;
    }
    bool asset = is_asset(path);
    if (strcmp(path, "/") != 0 && static_ui_path_safe(path) && try_file(r, ui, path, asset))
        return;
    if (asset) {
        http_req_set_header(r, "Cache-Control", "no-store");
        http_respond(r, 404, "text/plain; charset=utf-8", "not found\n", 10);
        return;
    }
    if (!try_file(r, ui, "/index.html", false)) {
        SX_WARN("ui", "%s/index.html disappeared", ui->root);
        respond_not_built(r, ui);
    }
}

/* ------------------------------------------------------------------ lifecycle */

int static_ui_create(const sextant_config *cfg, http_server *srv, static_ui **out, sx_err *err)
{
    *out = NULL;
    const char *dir = cfg->http.ui_dir;
    if (dir == NULL) {
        SX_INFO("ui", "web UI not served (http.ui_dir is empty)");
        return 0;
    }
    bool configured = strcmp(dir, SEXTANT_UI_DIR) != 0;
    char real[PATH_MAX];
    bool found = realpath(dir, real) != NULL;
    struct stat st;
    char index[PATH_MAX + 16];
    snprintf(index, sizeof(index), "%s/index.html", found ? real : dir);
    bool built = found && stat(index, &st) == 0 && S_ISREG(st.st_mode);
    if (!built && configured) {
        sx_err_set(err, SX_EINVAL, "http.ui_dir %s has no index.html", dir);
        sx_err_hint(err, "Build the UI (npm ci && npm run build in ui/) and point http.ui_dir "
                         "at its dist folder, or set it to \"\" to serve no UI.");
        return SX_EINVAL;
    }
    static_ui *ui = sx_calloc(1, sizeof(*ui));
    ui->root = sx_strdup(found ? real : dir);
    ui->rlen = strlen(ui->root);
    while (ui->rlen > 1 && ui->root[ui->rlen - 1] == '/')
        ui->root[--ui->rlen] = '\0';
    ui->built = built;
    if (built)
        sx_log_fields(SX_LOG_INFO, "ui", json_pack("{s:s}", "ui_dir", ui->root),
                      "web UI served at / from %s", ui->root);
    else
        sx_log_fields(SX_LOG_WARN, "ui", json_pack("{s:s}", "ui_dir", ui->root),
                      "web UI not built: %s has no index.html (npm ci && npm run build in ui/)",
                      ui->root);
    http_set_fallback(srv, "ui", handle, ui);
    *out = ui;
    return 0;
}

void static_ui_destroy(static_ui *ui)
{
    if (ui == NULL)
        return;
    sx_free(ui->root);
    sx_free(ui);
}
