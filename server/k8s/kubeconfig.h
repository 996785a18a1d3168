/*
 * kubeconfig.h — where the Kubernetes API server is and how to authenticate to it:
 * from a kubeconfig file or from the service account of the pod Sextant runs in.
 *
 * A kubeconfig is read the way kubectl reads it: the named context (or current-context)
 * selects a cluster (server, certificate-authority or certificate-authority-data,
 * insecure-skip-tls-verify) and a user (token or tokenFile,
 * client-certificate(-data) and client-key(-data)); relative file names are relative to
 * the kubeconfig's folder. Authentication plug-ins (exec, auth-provider) and basic auth
 * are refused with a clear error rather than ignored. tls-server-name is not used: the
 * server's certificate must match the host of its URL (which fails closed).
 *
 * In-cluster, the server is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT and
 * the credentials are the files under /var/run/secrets/kubernetes.io/serviceaccount/
 * (token, ca.crt, namespace); tests put that tree under another root.
 *
 * Tokens are never logged; a token file is read again for each connection, because the
 * kubelet rotates projected service account tokens.
 */
#ifndef SX_K8S_KUBECONFIG_H
#define SX_K8S_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/err.h"

/* The service account folder of a pod, below the root given to k8s_cfg_in_cluster. */
#define K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Connection settings. Every string is owned by the struct, NULL when not set. The
 * *_data fields hold decoded PEM bytes (not NUL-terminated by contract: use the length). */
typedef struct k8s_cfg {
    char *server;  /* base URL without a trailing slash: "https://10.96.0.1:443" */
    char *ca_file; /* CA bundle to verify the server with */
    char *ca_data; /* the same as PEM bytes (certificate-authority-data) */
    size_t ca_data_len;
    char *cert_file; /* client certificate (PEM) */
    char *cert_data;
    size_t cert_data_len;
    char *key_file; /* client private key (PEM) */
    char *key_data;
    size_t key_data_len;
    char *token;      /* a fixed bearer token */
    char *token_file; /* a file holding the bearer token; read for each connection */
    bool insecure;    /* insecure-skip-tls-verify: do not verify the server */
    char *ns;         /* the default namespace (the context's or the pod's); never NULL */
    char *source;     /* says where this came from, for logs; never NULL; no secrets */
} k8s_cfg;

/*
 * Reads the kubeconfig at path with the named context (NULL or "": its current-context).
 * Returns 0 with *out (free with k8s_cfg_free), or an error with *out NULL: SX_EIO when
 * the file or a file it names cannot be read, SX_EINVAL for bad YAML, a missing or
 * unknown context, cluster or user, a cluster without a server, bad base64;
 * SX_EUNSUPPORTED for exec or auth-provider plug-ins and basic auth.
 */
int k8s_cfg_from_kubeconfig(const char *path, const char *context, k8s_cfg **out,
                            sx_err *err) SX_MUSTCHECK;

/*
 * The in-cluster settings: root (NULL or "" for "/") prefixes K8S_SA_DIR. Needs
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT in the environment (SX_EINVAL
 * without them: not running in a pod), a readable token file and ca.crt (SX_EIO). The
 * namespace file is optional ("default" without it).
 */
int k8s_cfg_in_cluster(const char *root, k8s_cfg **out, sx_err *err) SX_MUSTCHECK;

/*
 * What the daemon uses: the kubeconfig at kubeconfig when it is set (not NULL or ""),
 * else the in-cluster settings when KUBERNETES_SERVICE_HOST is set, else the kubeconfig
 * named by $KUBECONFIG; SX_EINVAL when none of them is there. root as for
 * k8s_cfg_in_cluster.
 */
int k8s_cfg_load(const char *kubeconfig, const char *root, k8s_cfg **out, sx_err *err) SX_MUSTCHECK;

/* The bearer token to send now: *out is a new string (free it) or NULL when c has no
 * token. SX_EIO when the token file cannot be read, SX_EINVAL when it is empty. */
int k8s_cfg_token(const k8s_cfg *c, char **out, sx_err *err) SX_MUSTCHECK;

/* Frees c; NULL allowed. Token bytes are wiped first. */
void k8s_cfg_free(k8s_cfg *c);

#endif
