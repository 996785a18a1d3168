/*
 * certs_managed.c — managed TLS: issuing the serving certificate from the configured
 * CA, sharing it through PostgreSQL, renewing it on the leader (see certs_managed.h).
 *
 * One thread does everything, in sync(): read the row, issue and insert one when there
 * is none, install a serial not installed yet, and (leader only) replace one that is
 * due or foreign. A failure is logged when it begins, not on every poll, and retried at
 * the next poll; what is installed keeps serving meanwhile.
 */
#include "server/certs_managed.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/pem.h"
#include "server/certs.h"
#include "server/leader.h"
#include "server/server.h"
#include "storage/repo_certs.h"

#define CERT_NAME        "default"
#define START_TIMEOUT_MS 30000
#define START_RETRY_MS   500
#define CA_FILE_MAX      (1024 * 1024)

struct certs_managed {
    struct sx_server *srv;
    X509 *ca;
    EVP_PKEY *ca_key;
    char *ca_pem;
    char *sans;          /* "DNS:localhost,IP:127.0.0.1" */
    char *common_name;   /* the first name */
    char passphrase[65]; /* hex of HKDF-SHA256(CA key); never log */
    char installed[96];  /* the serial the listeners serve; "" before the first */
    bool failing;        /* the last sync failed (logged once) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop_asked;
    pthread_t thread;
    atomic_bool started; /* the thread runs */
};

/* ------------------------------------------------------------------ setup */

static char *read_text(const char *key, const char *path, sx_err *err)
{
    sx_buf b = {0};
    int rc = sx_buf_read_file(&b, path, CA_FILE_MAX);
    if (rc == 0 && b.len > 0 && b.len <= CA_FILE_MAX)
        return sx_buf_steal(&b);
    sx_buf_free(&b);
    sx_err_set(err, SX_EIO, "could not read %s %s", key, path);
    return NULL;
}

/* "a, b" → SANs "DNS:a,IP:b" and the first name; SX_EINVAL for an empty or odd name. */
static int parse_names(certs_managed *m, const char *list, sx_err *err)
{
    sx_buf sans = {0};
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        char name[256];
        if ((size_t)(e - p) >= sizeof(name)) {
            sx_buf_free(&sans);
            return sx_err_set(err, SX_EINVAL, "tls.managed_names: a name is too long");
        }
        memcpy(name, p, (size_t)(e - p));
        name[e - p] = '\0';
        for (const char *c = name; *c; c++)
            if (!isalnum((unsigned char)*c) && !strchr(".-*:", *c)) {
                sx_buf_free(&sans);
                return sx_err_set(err, SX_EINVAL,
                                  "tls.managed_names: \"%s\" is neither a DNS name nor an IP "
                                  "address",
                                  name);
            }
        unsigned char ip[16];
        bool is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
        sx_buf_printf(&sans, "%s%s:%s", sans.len ? "," : "", is_ip ? "IP" : "DNS", name);
        if (m->common_name == NULL)
            m->common_name = sx_strdup(name);
        p = e;
    }
    if (sans.len == 0) {
        sx_buf_free(&sans);
        return sx_err_set(err, SX_EINVAL, "tls.managed_names must name at least one host");
    }
    m->sans = sx_buf_steal(&sans);
    return 0;
}

/* The passphrase of the stored keys: HKDF-SHA256 of the CA key's DER, as hex. */
static int derive_passphrase(certs_managed *m, sx_err *err)
{
    unsigned char *der = NULL, out[32];
    int len = i2d_PrivateKey(m->ca_key, &der);
    size_t outlen = sizeof(out);
    static const char info[] = "sextant managed serving key";
    EVP_PKEY_CTX *k = len > 0 ? EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL) : NULL;
    bool ok = k && EVP_PKEY_derive_init(k) == 1 && EVP_PKEY_CTX_set_hkdf_md(k, EVP_sha256()) == 1 &&
              EVP_PKEY_CTX_set1_hkdf_salt(k, (const unsigned char *)"sextant", 7) == 1 &&
              EVP_PKEY_CTX_set1_hkdf_key(k, der, len) == 1 &&
              EVP_PKEY_CTX_add1_hkdf_info(k, (const unsigned char *)info, sizeof(info) - 1) == 1 &&
              EVP_PKEY_derive(k, out, &outlen) == 1 && outlen == sizeof(out);
    EVP_PKEY_CTX_free(k);
    if (der) {
        OPENSSL_cleanse(der, (size_t)len);
        OPENSSL_free(der);
    }
    ERR_clear_error();
    if (!ok)
        return sx_err_set(err, SX_EINTERNAL, "could not derive the key of the stored keys");
    for (size_t i = 0; i < sizeof(out); i++)
        snprintf(m->passphrase + 2 * i, 3, "%02x", out[i]);
    OPENSSL_cleanse(out, sizeof(out));
    return 0;
}

static int load_ca(certs_managed *m, const sextant_config *cfg, sx_err *err)
{
    char *key = NULL;
    m->ca_pem = read_text("tls.ca_cert_file", cfg->tls.ca_cert_file, err);
    if (m->ca_pem == NULL ||
        (key = read_text("tls.ca_key_file", cfg->tls.ca_key_file, err)) == NULL)
        return err->code;
    BIO *b = BIO_new_mem_buf(m->ca_pem, -1);
    m->ca = b ? sx_pem_read_x509(b) : NULL;
    BIO_free(b);
    b = BIO_new_mem_buf(key, -1);
    m->ca_key = b ? sx_pem_read_key(b) : NULL;
    BIO_free(b);
    OPENSSL_cleanse(key, strlen(key));
    sx_free(key);
    ERR_clear_error();
    if (m->ca == NULL)
        return sx_err_set(err, SX_EINVAL, "tls.ca_cert_file %s holds no PEM certificate",
                          cfg->tls.ca_cert_file);
    if (m->ca_key == NULL)
        return sx_err_set(err, SX_EINVAL, "tls.ca_key_file %s holds no unencrypted private key",
                          cfg->tls.ca_key_file);
    if (X509_check_private_key(m->ca, m->ca_key) != 1) {
        ERR_clear_error();
        return sx_err_set(err, SX_EINVAL, "tls.ca_key_file does not belong to tls.ca_cert_file");
    }
    return derive_passphrase(m, err);
}

/* ------------------------------------------------------------------ issuing */

static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    bool ok = e && X509_add_ext(x, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok;
}

static char *bio_text(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    return n > 0 ? sx_strndup(data, (size_t)n) : NULL;
}

/* A new certificate: *chain (leaf + CA) and *enc_key (encrypted PKCS#8), in r. */
static int issue(certs_managed *m, sx_arena *a, cert_record *r, sx_err *err)
{
    const sextant_config *cfg = m->srv->config;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIGNUM *bn = BN_new();
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    unsigned char rnd[16];
    bool ok = key && x && bn && cb && kb && RAND_bytes(rnd, sizeof(rnd)) == 1;
    if (ok) {
        rnd[0] &= 0x7f; /* a positive serial */
        X509V3_CTX ctx;
        ok = X509_set_version(x, 2) == 1 && BN_bin2bn(rnd, sizeof(rnd), bn) &&
             BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -300) &&
             X509_gmtime_adj(X509_getm_notAfter(x), (long)(cfg->tls.managed_lifetime_ms / 1000)) &&
             X509_set_pubkey(x, key) == 1 &&
             X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                        (const unsigned char *)m->common_name, -1, -1, 0) == 1 &&
             X509_set_issuer_name(x, X509_get_subject_name(m->ca)) == 1;
        if (ok) {
            X509V3_set_ctx(&ctx, m->ca, x, NULL, NULL, 0);
            ok = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
                 add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
                 add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") &&
                 add_ext(x, &ctx, NID_subject_alt_name, m->sans) &&
                 add_ext(x, &ctx, NID_subject_key_identifier, "hash") &&
                 add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") &&
                 X509_sign(x, m->ca_key, EVP_sha256()) > 0;
        }
        ok = ok && PEM_write_bio_X509(cb, x) == 1 && BIO_puts(cb, m->ca_pem) > 0 &&
             PEM_write_bio_PKCS8PrivateKey(kb, key, EVP_aes_256_cbc(), NULL, 0, NULL,
                                           m->passphrase) == 1;
    }
    int rc = 0;
    if (ok) {
        char *chain = bio_text(cb), *enc = bio_text(kb);
        char *hex = BN_bn2hex(bn);
        r->name = CERT_NAME;
        r->cert_pem = sx_arena_strdup(a, chain ? chain : "");
        r->key_pem = sx_arena_strdup(a, enc ? enc : "");
        r->serial = sx_arena_strdup(a, hex ? hex : "");
        struct tm tm;
        memset(&tm, 0, sizeof(tm));
        ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm); /* the row says what the certificate says */
        r->not_after = (long long)timegm(&tm);
        r->issued_by = cfg->replica.id;
        sx_free(chain);
        sx_free(enc);
        OPENSSL_free(hex);
    } else {
        rc = sx_err_set(err, SX_EINTERNAL, "could not issue a serving certificate");
    }
    ERR_clear_error();
    BIO_free(cb);
    BIO_free(kb);
    BN_free(bn);
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

/* The stored key decrypted to an unencrypted PKCS#8 PEM (caller wipes and frees), or
 * NULL when the passphrase does not open it. */
static char *decrypt_key(certs_managed *m, const char *enc)
{
    BIO *b = BIO_new_mem_buf(enc, -1);
    EVP_PKEY *pk = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, m->passphrase) : NULL;
    BIO_free(b);
    char *out = NULL;
    BIO *o = pk ? BIO_new(BIO_s_mem()) : NULL;
    if (o && PEM_write_bio_PrivateKey(o, pk, NULL, NULL, 0, NULL, NULL) == 1)
        out = bio_text(o);
    BIO_free(o);
    EVP_PKEY_free(pk);
    ERR_clear_error();
    return out;
}

/* Whether the stored chain's leaf was issued by our CA. */
static bool ours(certs_managed *m, const char *chain)
{
    BIO *b = BIO_new_mem_buf(chain, -1);
    X509 *leaf = b ? sx_pem_read_x509(b) : NULL;
    BIO_free(b);
    EVP_PKEY *pub = X509_get0_pubkey(m->ca);
    bool ok = leaf && pub && X509_verify(leaf, pub) == 1;
    X509_free(leaf);
    ERR_clear_error();
    return ok;
}

/* ------------------------------------------------------------------ sync */

/* Installs r into both listeners unless it is installed already. */
static int install(certs_managed *m, const cert_record *r, sx_err *err)
{
    if (strcmp(m->installed, r->serial) == 0)
        return 0;
    char *key = decrypt_key(m, r->key_pem);
    if (key == NULL)
        return sx_err_set(
            err, SX_EINVAL,
            "the stored serving certificate's key does not open with tls.ca_key_file");
    char what[160];
    snprintf(what, sizeof(what), "the database (issued by %s)", r->issued_by);
    int rc = certs_install(m->srv->certs, CERTS_HTTP, r->cert_pem, key, what, err);
    if (rc == 0)
        rc = certs_install(m->srv->certs, CERTS_GRPC, r->cert_pem, key, what, err);
    OPENSSL_cleanse(key, strlen(key));
    sx_free(key);
    if (rc == 0)
        snprintf(m->installed, sizeof(m->installed), "%s", r->serial);
    return rc;
}

static int sync_on(certs_managed *m, pg_conn *c, sx_arena *a, sx_err *err)
{
    const sextant_config *cfg = m->srv->config;
    cert_record cur;
    bool found = false, done = false;
    int rc = cert_repo_get(c, CERT_NAME, a, &cur, &found, err);
    if (rc == 0 && !found) {
        cert_record fresh;
        if ((rc = issue(m, a, &fresh, err)) == 0 &&
            (rc = cert_repo_insert(c, &fresh, &done, err)) == 0) {
            if (done)
                sx_log_fields(SX_LOG_INFO, "tls_managed",
                              json_pack("{s:s,s:I}", "serial", fresh.serial, "not_after",
                                        (json_int_t)fresh.not_after),
                              "issued the first managed serving certificate (serial %s)",
                              fresh.serial);
            rc = cert_repo_get(c, CERT_NAME, a, &cur, &found, err);
        }
    }
    if (rc != 0)
        return rc;
    if (!found)
        return sx_err_set(err, SX_EINTERNAL, "the managed serving certificate vanished");
    bool foreign = !ours(m, cur.cert_pem);
    int irc = foreign ? sx_err_set(err, SX_EINVAL,
                                   "the stored serving certificate (serial %s) "
                                   "was not issued by tls.ca_cert_file",
                                   cur.serial)
                      : install(m, &cur, err);
    long long left = cur.not_after - (long long)time(NULL);
    bool due = left * 1000 < cfg->tls.managed_renew_before_ms;
    if (!leader_is_leader(m->srv->leader) || !(due || irc != 0))
        return irc;
    /* The leader replaces a certificate that is due, or that it cannot serve. */
    cert_record next;
    bool replaced = false;
    if ((rc = issue(m, a, &next, err)) != 0 ||
        (rc = cert_repo_replace(c, &next, cur.serial, &replaced, err)) != 0)
        return rc;
    if (!replaced)
        return 0; /* someone else changed it: the next poll reads theirs */
    sx_log_fields(SX_LOG_INFO, "tls_managed",
                  json_pack("{s:s,s:s,s:I,s:I}", "serial", next.serial, "previous_serial",
                            cur.serial, "not_after", (json_int_t)next.not_after,
                            "previous_not_after", (json_int_t)cur.not_after),
                  "renewed the managed serving certificate (serial %s replaces %s: %s)",
                  next.serial, cur.serial, due ? "due" : "not servable");
    return install(m, &next, err);
}

static int sync_once(certs_managed *m, sx_err *err)
{
    pg_conn *c = NULL;
    int rc = pg_acquire(m->srv->db, &c, err);
    if (rc != 0)
        return rc;
    sx_arena *a = sx_arena_create();
    rc = sync_on(m, c, a, err);
    sx_arena_destroy(a);
    pg_release(m->srv->db, c);
    return rc;
}

/* Logs a failure when failing begins and the recovery when it ends. */
static void note(certs_managed *m, int rc, const sx_err *err)
{
    if (rc != 0 && !m->failing)
        sx_log_err(SX_LOG_ERROR, "tls_managed", err);
    if (rc == 0 && m->failing)
        SX_INFO("tls_managed", "the managed serving certificate is in sync again");
    m->failing = rc != 0;
}

static void *managed_thread(void *arg)
{
    certs_managed *m = arg;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        struct timespec until = sx_deadline_in(m->srv->config->tls.reload_interval_ms);
        while (!m->stop_asked)
            if (pthread_cond_timedwait(&m->cv, &m->mu, &until) != 0)
                break;
        bool stop = m->stop_asked;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            return NULL;
        sx_err err;
        sx_err_clear(&err);
        note(m, sync_once(m, &err), &err);
    }
}

/* ------------------------------------------------------------------ component */

static int managed_start(void *ctx, sx_err *err)
{
    certs_managed *m = ctx;
    int64_t deadline = sx_monotonic_ms() + START_TIMEOUT_MS;
    int rc;
    while ((rc = sync_once(m, err)) != 0 || m->installed[0] == '\0') {
        note(m, rc, err);
        if (sx_monotonic_ms() >= deadline || !sup_sleep(m->srv->sup, START_RETRY_MS)) {
            sx_err_prefix(err, "no managed serving certificate within %d s",
                          START_TIMEOUT_MS / 1000);
            return rc ? rc : SX_EUNAVAILABLE;
        }
    }
    note(m, 0, err);
    m->stop_asked = false;
    if (pthread_create(&m->thread, NULL, managed_thread, m) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not start the managed TLS thread");
    atomic_store(&m->started, true);
    return 0;
}

static void managed_stop(void *ctx)
{
    certs_managed *m = ctx;
    if (!atomic_load(&m->started))
        return;
    sx_cond_raise(&m->mu, &m->cv, &m->stop_asked);
    pthread_join(m->thread, NULL);
    atomic_store(&m->started, false);
}

/* Ready once started: start returns only with a certificate installed, and a failed
 * poll later keeps serving the installed one. */
static bool managed_ready(void *ctx)
{
    certs_managed *m = ctx;
    return atomic_load(&m->started);
}

const sup_ops certs_managed_sup_ops = {
    .start = managed_start, .stop = managed_stop, .ready = managed_ready};

int certs_managed_create(struct sx_server *srv, certs_managed **out, sx_err *err)
{
    *out = NULL;
    const sextant_config *cfg = srv->config;
    if (!cfg->tls.managed)
        return 0;
    if (cfg->tls.ca_cert_file == NULL || cfg->tls.ca_key_file == NULL)
        return sx_err_set(err, SX_EINVAL, "tls.managed needs tls.ca_cert_file and tls.ca_key_file");
    if (cfg->http.tls.cert_file || cfg->grpc.tls.cert_file)
        return sx_err_set(err, SX_EINVAL,
                          "tls.managed serves its own certificate: unset http.tls.cert_file, "
                          "http.tls.key_file, grpc.tls.cert_file and grpc.tls.key_file");
    if (cfg->tls.managed_lifetime_ms <= cfg->tls.managed_renew_before_ms)
        return sx_err_set(err, SX_EINVAL,
                          "tls.managed_lifetime must be longer than tls.managed_renew_before");
    certs_managed *m = sx_calloc(1, sizeof(*m));
    m->srv = srv;
    pthread_mutex_init(&m->mu, NULL);
    sx_cond_init_monotonic(&m->cv);
    int rc;
    if ((rc = parse_names(m, cfg->tls.managed_names, err)) != 0 ||
        (rc = load_ca(m, cfg, err)) != 0) {
        certs_managed_destroy(m);
        return rc;
    }
    certs_set_managed(srv->certs, CERTS_HTTP);
    certs_set_managed(srv->certs, CERTS_GRPC);
    *out = m;
    return 0;
}

void certs_managed_destroy(certs_managed *m)
{
    if (m == NULL)
        return;
    X509_free(m->ca);
    EVP_PKEY_free(m->ca_key);
    sx_free(m->ca_pem);
    sx_free(m->sans);
    sx_free(m->common_name);
    OPENSSL_cleanse(m->passphrase, sizeof(m->passphrase));
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    sx_free(m);
}
