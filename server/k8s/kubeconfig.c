/*
 * kubeconfig.c — the Kubernetes API server's address and credentials, from a kubeconfig
 * file or the pod's service account (see kubeconfig.h).
 *
 * Design: the kubeconfig is loaded whole as a libyaml document and walked by name
 * (current-context → context → cluster and user), taking scalars only. Every value goes
 * into a k8s_cfg owned by the caller, which the client reads when it sets up each
 * connection; nothing here talks to the network. Errors name the kubeconfig field and
 * never carry a token or key.
 */
#include "server/k8s/kubeconfig.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "server/base/b64.h"
#include "server/base/buf.h"
#include "server/base/mem.h"

/* Larger files are not credentials: refuse them rather than read them. */
#define MAX_FILE_BYTES (4 * 1024 * 1024)

/* ---------------------------------------------------------------- small helpers */

/* Reads a whole regular file into *out (NUL-terminated, *len bytes before it). */
static int read_file(const char *path, const char *what, char **out, size_t *len, sx_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sx_err_set(err, SX_EIO, "could not open %s %s: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
        fclose(f);
        return sx_err_set(err, SX_EIO, "could not read %s %s: not a regular file under 4 MiB", what,
                          path);
    }
    sx_buf b = {0};
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= MAX_FILE_BYTES)
        sx_buf_append(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad || b.len > MAX_FILE_BYTES) {
        sx_buf_free(&b);
        return sx_err_set(err, SX_EIO, "could not read %s %s", what, path);
    }
    *len = b.len;
    *out = b.data ? sx_buf_steal(&b) : sx_strdup("");
    return 0;
}

static void wipe_free(char *s, size_t n)
{
    if (s == NULL)
        return;
    volatile char *p = s;
    for (size_t i = 0; i < n; i++)
        p[i] = 0;
    sx_free(s);
}

/* The token in text without surrounding white space; a new string, or NULL when empty. */
static char *trim_token(const char *text)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    return n ? sx_strndup(text, n) : NULL;
}

/* Decodes standard base64 (white space ignored, padding optional) into a new buffer. */
static int b64_decode(const char *in, char **out, size_t *outlen)
{
    char *o = sx_malloc(strlen(in) / 4 * 3 + 4);
    if (!sx_b64_decode_text(in, o, outlen)) {
        sx_free(o);
        return -1;
    }
    *out = o;
    return 0;
}

static k8s_cfg *cfg_new(void)
{
    return sx_calloc(1, sizeof(k8s_cfg));
}

void k8s_cfg_free(k8s_cfg *c)
{
    if (c == NULL)
        return;
    sx_free(c->server);
    sx_free(c->ca_file);
    sx_free(c->ca_data);
    sx_free(c->cert_file);
    sx_free(c->cert_data);
    sx_free(c->key_file);
    wipe_free(c->key_data, c->key_data_len);
    wipe_free(c->token, c->token ? strlen(c->token) : 0);
    sx_free(c->token_file);
    sx_free(c->ns);
    sx_free(c->source);
    sx_free(c);
}

int k8s_cfg_token(const k8s_cfg *c, char **out, sx_err *err)
{
    *out = NULL;
    if (c->token) {
        *out = sx_strdup(c->token);
        return 0;
    }
    if (c->token_file == NULL)
        return 0;
    char *text;
    size_t len;
    int rc = read_file(c->token_file, "the token file", &text, &len, err);
    if (rc != 0)
        return rc;
    *out = trim_token(text);
    wipe_free(text, len);
    if (*out == NULL)
        return sx_err_set(err, SX_EINVAL, "the token file %s is empty", c->token_file);
    return 0;
}

/* ---------------------------------------------------------------- YAML walking */

typedef struct kc {
    yaml_document_t doc;
    const char *path; /* the kubeconfig, for messages */
    char *dir;        /* its folder, for relative file names */
} kc;

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value under key in the mapping m, or NULL. */
static yaml_node_t *get(kc *k, const yaml_node_t *m, const char *key)
{
    if (m == NULL || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *name = scalar(yaml_document_get_node(&k->doc, p->key));
        if (name && strcmp(name, key) == 0)
            return yaml_document_get_node(&k->doc, p->value);
    }
    return NULL;
}

/* The scalar under key, NULL when absent, null or empty. */
static const char *get_str(kc *k, const yaml_node_t *m, const char *key)
{
    const char *v = scalar(get(k, m, key));
    if (v == NULL || *v == '\0' || strcmp(v, "null") == 0 || strcmp(v, "~") == 0)
        return NULL;
    return v;
}

/* The `inner` mapping of the entry named name in the list under list_key ("clusters",
 * "cluster"); SX_EINVAL when there is none. */
static int named(kc *k, const char *list_key, const char *inner, const char *name,
                 yaml_node_t **out, sx_err *err)
{
    yaml_node_t *root = yaml_document_get_root_node(&k->doc);
    yaml_node_t *list = get(k, root, list_key);
    if (list && list->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = list->data.sequence.items.start;
             it < list->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&k->doc, *it);
            const char *n = get_str(k, e, "name");
            if (n && strcmp(n, name) == 0) {
                *out = get(k, e, inner);
                if (*out && (*out)->type == YAML_MAPPING_NODE)
                    return 0;
                return sx_err_set(err, SX_EINVAL, "%s %s: %s \"%s\" has no %s mapping", k->path,
                                  list_key, inner, name, inner);
            }
        }
    }
    return sx_err_set(err, SX_EINVAL, "%s: no %s named \"%s\" in %s", k->path, inner, name,
                      list_key);
}

/* An absolute file name for a name found in the kubeconfig. */
static char *resolve(kc *k, const char *name)
{
    if (name[0] == '/')
        return sx_strdup(name);
    return sx_asprintf("%s/%s", k->dir, name);
}

/* Takes field (a file name) and field-data (base64 PEM) of m into *file / *data. */
static int file_or_data(kc *k, const yaml_node_t *m, const char *field, char **file, char **data,
                        size_t *len, sx_err *err)
{
    char key[64];
    snprintf(key, sizeof(key), "%s-data", field);
    const char *d = get_str(k, m, key);
    if (d) {
        if (b64_decode(d, data, len) != 0 || *len == 0)
            return sx_err_set(err, SX_EINVAL, "%s: %s is not valid base64", k->path, key);
        return 0;
    }
    const char *f = get_str(k, m, field);
    if (f) {
        *file = resolve(k, f);
        struct stat st;
        if (stat(*file, &st) != 0)
            return sx_err_set(err, SX_EIO, "%s: %s %s: %s", k->path, field, *file, strerror(errno));
    }
    return 0;
}

static int read_cluster(kc *k, const yaml_node_t *cl, const char *name, k8s_cfg *c, sx_err *err)
{
    const char *server = get_str(k, cl, "server");
    if (server == NULL)
        return sx_err_set(err, SX_EINVAL, "%s: cluster \"%s\" has no server", k->path, name);
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return sx_err_set(err, SX_EINVAL, "%s: cluster \"%s\": server %s is not an http(s) URL",
                          k->path, name, server);
    size_t n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    c->server = sx_strndup(server, n);
    const char *insecure = get_str(k, cl, "insecure-skip-tls-verify");
    c->insecure = insecure && strcmp(insecure, "true") == 0;
    return file_or_data(k, cl, "certificate-authority", &c->ca_file, &c->ca_data, &c->ca_data_len,
                        err);
}

static int read_user(kc *k, const yaml_node_t *u, const char *name, k8s_cfg *c, sx_err *err)
{
    static const char *const plugins[] = {"exec", "auth-provider"};
    for (size_t i = 0; i < sizeof(plugins) / sizeof(*plugins); i++) {
        if (get(k, u, plugins[i])) {
            sx_err_set(err, SX_EUNSUPPORTED,
                       "%s: user \"%s\" uses an %s plug-in, which is not "
                       "supported",
                       k->path, name, plugins[i]);
            sx_err_hint(err, "Use a service account token (token or tokenFile) or a client "
                             "certificate.");
            return SX_EUNSUPPORTED;
        }
    }
    if (get_str(k, u, "username") || get_str(k, u, "password")) {
        sx_err_set(err, SX_EUNSUPPORTED,
                   "%s: user \"%s\" uses basic authentication, which is "
                   "not supported",
                   k->path, name);
        sx_err_hint(err, "Use a service account token (token or tokenFile) or a client "
                         "certificate.");
        return SX_EUNSUPPORTED;
    }
    const char *token = get_str(k, u, "token");
    const char *token_file = get_str(k, u, "tokenFile");
    if (token) {
        c->token = trim_token(token);
    } else if (token_file) {
        c->token_file = resolve(k, token_file);
        char *t = NULL;
        int rc = k8s_cfg_token(c, &t, err);
        wipe_free(t, t ? strlen(t) : 0);
        if (rc != 0) {
            sx_err_prefix(err, "%s: user \"%s\" tokenFile", k->path, name);
            return rc;
        }
    }
    int rc = file_or_data(k, u, "client-certificate", &c->cert_file, &c->cert_data,
                          &c->cert_data_len, err);
    if (rc == 0)
        rc = file_or_data(k, u, "client-key", &c->key_file, &c->key_data, &c->key_data_len, err);
    if (rc != 0)
        return rc;
    bool has_cert = c->cert_file || c->cert_data, has_key = c->key_file || c->key_data;
    if (has_cert != has_key)
        return sx_err_set(err, SX_EINVAL, "%s: user \"%s\" has a client %s without a client %s",
                          k->path, name, has_cert ? "certificate" : "key",
                          has_cert ? "key" : "certificate");
    return 0;
}

static int yaml_error(const yaml_parser_t *p, const char *path, sx_err *err)
{
    if (p->error == YAML_READER_ERROR)
        return sx_err_set(err, SX_EINVAL, "%s: invalid YAML at byte %zu: %s", path,
                          p->problem_offset, p->problem ? p->problem : "unreadable input");
    return sx_err_set(err, SX_EINVAL, "%s: invalid YAML at line %zu, column %zu: %s", path,
                      p->problem_mark.line + 1, p->problem_mark.column + 1,
                      p->problem ? p->problem : "syntax error");
}

static int walk(kc *k, const char *context, k8s_cfg *c, sx_err *err)
{
    yaml_node_t *root = yaml_document_get_root_node(&k->doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE)
        return sx_err_set(err, SX_EINVAL, "%s: not a kubeconfig (expected a mapping at the top)",
                          k->path);
    if (context == NULL || *context == '\0')
        context = get_str(k, root, "current-context");
    if (context == NULL)
        return sx_err_set(err, SX_EINVAL, "%s: no current-context and no context given", k->path);
    yaml_node_t *ctx, *cl, *u = NULL;
    int rc = named(k, "contexts", "context", context, &ctx, err);
    if (rc != 0)
        return rc;
    const char *cluster = get_str(k, ctx, "cluster");
    const char *user = get_str(k, ctx, "user");
    const char *ns = get_str(k, ctx, "namespace");
    if (cluster == NULL)
        return sx_err_set(err, SX_EINVAL, "%s: context \"%s\" names no cluster", k->path, context);
    rc = named(k, "clusters", "cluster", cluster, &cl, err);
    if (rc == 0)
        rc = read_cluster(k, cl, cluster, c, err);
    if (rc == 0 && user) {
        rc = named(k, "users", "user", user, &u, err);
        if (rc == 0)
            rc = read_user(k, u, user, c, err);
    }
    if (rc != 0)
        return rc;
    c->ns = sx_strdup(ns ? ns : "default");
    c->source = sx_asprintf("kubeconfig %s (context %s)", k->path, context);
    return 0;
}

int k8s_cfg_from_kubeconfig(const char *path, const char *context, k8s_cfg **out, sx_err *err)
{
    *out = NULL;
    char *text;
    size_t len;
    int rc = read_file(path, "the kubeconfig", &text, &len, err);
    if (rc != 0)
        return rc;
    kc k = {.path = path};
    const char *slash = strrchr(path, '/');
    k.dir = slash ? sx_strndup(path, (size_t)(slash - path)) : sx_strdup(".");
    if (slash == path) {
        sx_free(k.dir);
        k.dir = sx_strdup("");
    }
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    k8s_cfg *c = cfg_new();
    if (!yaml_parser_load(&p, &k.doc)) {
        rc = yaml_error(&p, path, err);
    } else {
        rc = walk(&k, context, c, err);
        yaml_document_delete(&k.doc);
    }
    yaml_parser_delete(&p);
    wipe_free(text, len);
    sx_free(k.dir);
    if (rc != 0) {
        k8s_cfg_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---------------------------------------------------------------- in-cluster */

int k8s_cfg_in_cluster(const char *root, k8s_cfg **out, sx_err *err)
{
    *out = NULL;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (host == NULL || *host == '\0' || port == NULL || *port == '\0')
        return sx_err_set(err, SX_EINVAL,
                          "not running in a Kubernetes pod: "
                          "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                          "are not set");
    if (root == NULL)
        root = "";
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/')
        rl--;
    k8s_cfg *c = cfg_new();
    bool v6 = strchr(host, ':') != NULL;
    c->server = sx_asprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    c->token_file = sx_asprintf("%.*s%s/token", (int)rl, root, K8S_SA_DIR);
    c->ca_file = sx_asprintf("%.*s%s/ca.crt", (int)rl, root, K8S_SA_DIR);
    char *t = NULL;
    int rc = k8s_cfg_token(c, &t, err);
    wipe_free(t, t ? strlen(t) : 0);
    struct stat st;
    if (rc == 0 && stat(c->ca_file, &st) != 0)
        rc = sx_err_set(err, SX_EIO, "could not open the service account CA %s: %s", c->ca_file,
                        strerror(errno));
    if (rc != 0) {
        sx_err_prefix(err, "in-cluster configuration");
        k8s_cfg_free(c);
        return rc;
    }
    char *nsfile = sx_asprintf("%.*s%s/namespace", (int)rl, root, K8S_SA_DIR);
    char *ns = NULL;
    size_t nslen;
    if (read_file(nsfile, "the namespace file", &ns, &nslen, NULL) == 0)
        c->ns = trim_token(ns);
    sx_free(ns);
    sx_free(nsfile);
    if (c->ns == NULL)
        c->ns = sx_strdup("default");
    c->source = sx_strdup("in-cluster service account");
    *out = c;
    return 0;
}

int k8s_cfg_load(const char *kubeconfig, const char *root, k8s_cfg **out, sx_err *err)
{
    if (kubeconfig && *kubeconfig)
        return k8s_cfg_from_kubeconfig(kubeconfig, NULL, out, err);
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (host && *host)
        return k8s_cfg_in_cluster(root, out, err);
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        /* KUBECONFIG may list several files; like kubectl's first-found rule for the
         * current context, take the first one. */
        const char *colon = strchr(env, ':');
        char *first = colon ? sx_strndup(env, (size_t)(colon - env)) : sx_strdup(env);
        int rc = k8s_cfg_from_kubeconfig(first, NULL, out, err);
        sx_free(first);
        return rc;
    }
    *out = NULL;
    sx_err_set(err, SX_EINVAL, "no Kubernetes API server configured");
    sx_err_hint(err, "Set k8s.kubeconfig, run in a pod with a service account, or set "
                     "KUBECONFIG.");
    return SX_EINVAL;
}
