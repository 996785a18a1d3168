/*
 * test_kubeconfig.c — where the API server is and how to authenticate: kubeconfig files
 * (inline data, files relative to the kubeconfig, a chosen context, refused plug-ins,
 * broken YAML) and the in-cluster service account under a test root.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/base/mem.h"
#include "server/k8s/kubeconfig.h"

static char *fixture(const char *name)
{
    return sx_asprintf("%s/tests/unit/k8s/fixtures/%s", tl_env("SEXTANT_SOURCE_DIR"), name);
}

static void assert_bytes(const char *data, size_t len, const char *want)
{
    assert_non_null(data);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(data, want, len);
}

TL_TEST(test_inline_data_and_contexts)
{
    char *path = fixture("kubeconfig-data.yaml");
    k8s_cfg *c;
    TL_OK(k8s_cfg_from_kubeconfig(path, NULL, &c, &e_));
    /* current-context dev: the trailing slash of the server is dropped. */
    assert_string_equal(c->server, "https://127.0.0.1:6443");
    assert_bytes(c->ca_data, c->ca_data_len,
                 "-----BEGIN CERTIFICATE-----\nfixture CA\n-----END CERTIFICATE-----\n");
    assert_null(c->ca_file);
    assert_false(c->insecure);
    assert_string_equal(c->ns, "gateways");
    char *tok;
    TL_OK(k8s_cfg_token(c, &tok, &e_));
    assert_string_equal(tok, "fixture-token-123");
    sx_free(tok);
    assert_null(c->cert_data);
    /* The source names the file and context, never the token. */
    assert_non_null(strstr(c->source, "context dev"));
    assert_null(strstr(c->source, "fixture-token"));
    k8s_cfg_free(c);

    /* Another context: client certificate, no token, insecure, default namespace. */
    TL_OK(k8s_cfg_from_kubeconfig(path, "prod", &c, &e_));
    assert_string_equal(c->server, "https://[fd00::1]:443");
    assert_true(c->insecure);
    assert_string_equal(c->ns, "default");
    assert_bytes(c->cert_data, c->cert_data_len,
                 "-----BEGIN CERTIFICATE-----\nfixture client\n-----END CERTIFICATE-----\n");
    assert_bytes(c->key_data, c->key_data_len,
                 "-----BEGIN PRIVATE KEY-----\nfixture key\n-----END PRIVATE KEY-----\n");
    TL_OK(k8s_cfg_token(c, &tok, &e_));
    assert_null(tok);
    k8s_cfg_free(c);

    sx_err e;
    assert_int_equal(k8s_cfg_from_kubeconfig(path, "staging", &c, &e), SX_EINVAL);
    assert_null(c);
    assert_non_null(strstr(e.message, "no context named \"staging\""));
    sx_free(path);
}

TL_TEST(test_files_relative_to_kubeconfig)
{
    char *path = fixture("kubeconfig-files.yaml");
    char *dir = fixture("");
    k8s_cfg *c;
    TL_OK(k8s_cfg_from_kubeconfig(path, NULL, &c, &e_));
    assert_string_equal(c->server, "https://k8s.example.test:8443");
    char *want = sx_asprintf("%ssa/ca.crt", dir);
    assert_string_equal(c->ca_file, want);
    sx_free(want);
    want = sx_asprintf("%sclient.crt", dir);
    assert_string_equal(c->cert_file, want);
    sx_free(want);
    want = sx_asprintf("%sclient.key", dir);
    assert_string_equal(c->key_file, want);
    sx_free(want);
    /* The token comes from the file, read for each connection. */
    char *tok;
    TL_OK(k8s_cfg_token(c, &tok, &e_));
    assert_string_equal(tok, "file-token-456");
    sx_free(tok);
    char tmp[] = "/tmp/sx-k8s-tokenXXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    sx_free(c->token_file);
    c->token_file = sx_strdup(tmp);
    tl_write_file(tmp, "rotated\n");
    TL_OK(k8s_cfg_token(c, &tok, &e_));
    assert_string_equal(tok, "rotated");
    sx_free(tok);
    tl_write_file(tmp, "\n");
    sx_err e;
    assert_int_equal(k8s_cfg_token(c, &tok, &e), SX_EINVAL);
    assert_null(tok);
    unlink(tmp);
    assert_int_equal(k8s_cfg_token(c, &tok, &e), SX_EIO);
    k8s_cfg_free(c);
    sx_free(dir);
    sx_free(path);
}

TL_TEST(test_refused_and_broken)
{
    k8s_cfg *c;
    sx_err e;
    char *path = fixture("kubeconfig-exec.yaml");
    assert_int_equal(k8s_cfg_from_kubeconfig(path, NULL, &c, &e), SX_EUNSUPPORTED);
    assert_null(c);
    assert_non_null(strstr(e.message, "exec plug-in"));
    assert_true(e.hint[0] != '\0');
    sx_free(path);

    path = fixture("kubeconfig-broken.yaml");
    assert_int_equal(k8s_cfg_from_kubeconfig(path, NULL, &c, &e), SX_EINVAL);
    assert_non_null(strstr(e.message, "invalid YAML at line"));
    sx_free(path);

    path = fixture("no-such-kubeconfig.yaml");
    assert_int_equal(k8s_cfg_from_kubeconfig(path, NULL, &c, &e), SX_EIO);
    assert_non_null(strstr(e.message, "could not open the kubeconfig"));
    sx_free(path);

    /* Small documents written here: each one's error names what is wrong. */
    static const struct {
        const char *yaml;
        int code;
        const char *message;
    } cases[] = {
        {"clusters: []\n", SX_EINVAL, "no current-context"},
        {"- a\n- b\n", SX_EINVAL, "expected a mapping"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n", SX_EINVAL,
         "names no cluster"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: "
         "c\n  cluster: {certificate-authority-data: QQ==}\n",
         SX_EINVAL, "has no server"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: "
         "c\n  cluster: {server: 'ftp://h'}\n",
         SX_EINVAL, "is not an http(s) URL"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: "
         "c\n  cluster: {server: 'https://h', certificate-authority-data: '%%%'}\n",
         SX_EINVAL, "certificate-authority-data is not valid base64"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
         "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n",
         SX_EINVAL, "no user named \"u\""},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
         "clusters:\n- name: c\n  cluster: {server: 'https://h'}\nusers:\n- name: u\n  user: "
         "{username: a, password: b}\n",
         SX_EUNSUPPORTED, "basic authentication"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
         "clusters:\n- name: c\n  cluster: {server: 'https://h'}\nusers:\n- name: u\n  user: "
         "{client-certificate-data: QUJD}\n",
         SX_EINVAL, "client certificate without a client key"},
        {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
         "clusters:\n- name: c\n  cluster: {server: 'https://h'}\nusers:\n- name: u\n  user: "
         "{tokenFile: /nonexistent/token}\n",
         SX_EIO, "tokenFile"},
    };
    char tmp[] = "/tmp/sx-k8s-kcXXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tl_write_file(tmp, cases[i].yaml);
        int rc = k8s_cfg_from_kubeconfig(tmp, NULL, &c, &e);
        if (rc != cases[i].code || strstr(e.message, cases[i].message) == NULL)
            fail_msg("case %zu: got %d \"%s\", want %d \"%s\"", i, rc, e.message, cases[i].code,
                     cases[i].message);
        assert_null(c);
    }
    unlink(tmp);
}

/* Makes root/K8S_SA_DIR with the given files (NULL: left out). */
static void sa_tree(const char *root, const char *token, const char *ca, const char *ns)
{
    char *cmd = sx_asprintf("mkdir -p '%s%s'", root, K8S_SA_DIR);
    assert_int_equal(system(cmd), 0);
    sx_free(cmd);
    const char *names[] = {"token", "ca.crt", "namespace"};
    const char *texts[] = {token, ca, ns};
    for (int i = 0; i < 3; i++) {
        char *p = sx_asprintf("%s%s/%s", root, K8S_SA_DIR, names[i]);
        if (texts[i])
            tl_write_file(p, texts[i]);
        else
            unlink(p);
        sx_free(p);
    }
}

TL_TEST(test_in_cluster)
{
    char root[] = "/tmp/sx-k8s-podXXXXXX";
    assert_non_null(mkdtemp(root));
    k8s_cfg *c;
    sx_err e;
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(k8s_cfg_in_cluster(root, &c, &e), SX_EINVAL);
    assert_non_null(strstr(e.message, "not running in a Kubernetes pod"));

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    sa_tree(root, "sa-token\n", "-----BEGIN CERTIFICATE-----\n", "team-a\n");
    TL_OK(k8s_cfg_in_cluster(root, &c, &e_));
    assert_string_equal(c->server, "https://10.96.0.1:443");
    char *want = sx_asprintf("%s%s/ca.crt", root, K8S_SA_DIR);
    assert_string_equal(c->ca_file, want);
    sx_free(want);
    assert_string_equal(c->ns, "team-a");
    char *tok;
    TL_OK(k8s_cfg_token(c, &tok, &e_));
    assert_string_equal(tok, "sa-token");
    sx_free(tok);
    assert_string_equal(c->source, "in-cluster service account");
    k8s_cfg_free(c);

    /* IPv6 service host; no namespace file. */
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    sa_tree(root, "sa-token\n", "-----BEGIN CERTIFICATE-----\n", NULL);
    TL_OK(k8s_cfg_in_cluster(root, &c, &e_));
    assert_string_equal(c->server, "https://[fd00:10:96::1]:443");
    assert_string_equal(c->ns, "default");
    k8s_cfg_free(c);

    /* k8s_cfg_load: in a pod, the service account ... */
    TL_OK(k8s_cfg_load(NULL, root, &c, &e_));
    assert_string_equal(c->source, "in-cluster service account");
    k8s_cfg_free(c);
    /* ... unless a kubeconfig is named. */
    char *kc = fixture("kubeconfig-data.yaml");
    TL_OK(k8s_cfg_load(kc, root, &c, &e_));
    assert_string_equal(c->server, "https://127.0.0.1:6443");
    k8s_cfg_free(c);

    /* A missing CA or token is an error naming the file. */
    sa_tree(root, "sa-token\n", NULL, NULL);
    assert_int_equal(k8s_cfg_in_cluster(root, &c, &e), SX_EIO);
    assert_non_null(strstr(e.message, "ca.crt"));
    sa_tree(root, NULL, "-----BEGIN CERTIFICATE-----\n", NULL);
    assert_int_equal(k8s_cfg_in_cluster(root, &c, &e), SX_EIO);
    assert_non_null(strstr(e.message, "token"));
    assert_null(c);

    /* Outside a pod: $KUBECONFIG (its first file), else a clear error. */
    unsetenv("KUBERNETES_SERVICE_HOST");
    char *env = sx_asprintf("%s:/nonexistent", kc);
    setenv("KUBECONFIG", env, 1);
    TL_OK(k8s_cfg_load("", root, &c, &e_));
    assert_string_equal(c->ns, "gateways");
    k8s_cfg_free(c);
    unsetenv("KUBECONFIG");
    assert_int_equal(k8s_cfg_load(NULL, root, &c, &e), SX_EINVAL);
    assert_string_equal(e.message, "no Kubernetes API server configured");
    sx_free(env);
    sx_free(kc);
    char *cmd = sx_asprintf("rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    sx_free(cmd);
}

TL_MAIN()
