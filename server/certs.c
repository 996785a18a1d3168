/*
 * certs.c — the serving certificates of the listeners: loading and checking the
 * material, the reload thread, the expiry gauge and warnings (see certs.h).
 *
 * Each listener's current version sits behind a mutex as one pointer; readers take a
 * reference under the mutex and drop the lock at once, so a handshake never waits on a
 * reload (which reads and parses outside the lock and swaps the pointer at the end).
 * A replaced version is freed when its last reader releases it.
 */
#include "server/certs.h"

#include <errno.h>
#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/base/buf.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/pem.h"

#define PEM_FILE_MAX (1024 * 1024)

enum { F_CERT, F_KEY, F_CA, F_COUNT };
static const char *const file_keys[CERTS_LISTENERS][F_COUNT] = {
    {"http.tls.cert_file", "http.tls.key_file", NULL},
    {"grpc.tls.cert_file", "grpc.tls.key_file", "grpc.tls.client_ca_file"},
};
static const char *const listener_names[CERTS_LISTENERS] = {"http", "grpc"};

/* What a file looked like when it was last read; a difference means "read it again". */
typedef struct stamp {
    bool present;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} stamp;

typedef struct source {
    bool enabled;
    bool managed;               /* fed by certs_install; its cert and key files unused */
    const char *files[F_COUNT]; /* borrowed from the configuration; NULL when unset */
    stamp seen[F_COUNT];        /* the stamps of the last attempt, good or bad */
    certs_pem *current;         /* under certs.mu; NULL until loaded */
    uint64_t generations;       /* versions installed so far */
    uint64_t warned_generation; /* under certs.mu: the version the expiry warning was for */
} source;

struct certs {
    const sextant_config *cfg;
    sup_supervisor *sup;
    pthread_mutex_t mu; /* guards src[].current and generations, and the wake flags */
    pthread_cond_t cv;
    bool reload_asked; /* certs_reload: re-read every file */
    bool stop_asked;
    source src[CERTS_LISTENERS];
    sup_thread thread;
    sx_metric *m_expiry;  /* sextant_tls_cert_expiry_timestamp_seconds{listener} */
    sx_metric *m_reloads; /* sextant_tls_reloads_total{listener,result} */
};

const char *certs_listener_name(certs_listener l)
{
    return (unsigned)l < CERTS_LISTENERS ? listener_names[l] : "?";
}

/* ------------------------------------------------------------------ the material */

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        sx_free(s);
    }
}

void certs_pem_release(certs_pem *p)
{
    if (p == NULL || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    sx_free(p->cert);
    wipe_free(p->key);
    sx_free(p->ca);
    sx_free(p);
}

static int64_t asn1_time_epoch(const ASN1_TIME *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

static int bad(sx_err *err, const char *fmt, const char *what)
{
    ERR_clear_error();
    return sx_err_set(err, SX_EINVAL, fmt, what);
}

int certs_pem_parse(const char *cert, const char *key, const char *ca, certs_pem **out, sx_err *err)
{
    *out = NULL;
    int rc = 0;
    X509 *leaf = NULL;
    EVP_PKEY *pk = NULL;
    BIO *b = BIO_new_mem_buf(cert, -1);
    leaf = b ? sx_pem_read_x509(b) : NULL;
    if (leaf == NULL) {
        BIO_free(b);
        return bad(err, "the %s holds no PEM certificate", "certificate file");
    }
    for (X509 *more; (more = sx_pem_read_x509(b)) != NULL;)
        X509_free(more); /* the rest of the chain parses too */
    ERR_clear_error();
    BIO_free(b);
    b = BIO_new_mem_buf(key, -1);
    pk = b ? sx_pem_read_key(b) : NULL;
    BIO_free(b);
    if (pk == NULL) {
        rc = bad(err, "the %s holds no unencrypted PEM private key", "key file");
        goto out;
    }
    if (X509_check_private_key(leaf, pk) != 1) {
        rc =
            bad(err, "the private key does not belong to the %s", "first certificate of the chain");
        goto out;
    }
    if (ca) {
        b = BIO_new_mem_buf(ca, -1);
        X509 *c = b ? sx_pem_read_x509(b) : NULL;
        BIO_free(b);
        if (c == NULL) {
            rc = bad(err, "the %s holds no PEM certificate", "client CA file");
            goto out;
        }
        X509_free(c);
    }
    certs_pem *p = sx_calloc(1, sizeof(*p));
    p->cert = sx_strdup(cert);
    p->key = sx_strdup(key);
    p->ca = ca ? sx_strdup(ca) : NULL;
    p->not_before = asn1_time_epoch(X509_get0_notBefore(leaf));
    p->not_after = asn1_time_epoch(X509_get0_notAfter(leaf));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    snprintf(p->serial, sizeof(p->serial), "%s", hex ? hex : "");
    OPENSSL_free(hex);
    BN_free(bn);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (X509_digest(leaf, EVP_sha256(), md, &mdlen) == 1)
        for (unsigned int i = 0; i < mdlen && i < 32; i++)
            snprintf(p->fingerprint + 2 * i, 3, "%02x", md[i]);
    atomic_init(&p->refs, 1);
    *out = p;
out:
    ERR_clear_error();
    EVP_PKEY_free(pk);
    X509_free(leaf);
    return rc;
}

/* ------------------------------------------------------------------ files */

static stamp stamp_of(const char *path)
{
    stamp s;
    memset(&s, 0, sizeof(s));
    struct stat st;
    if (path && stat(path, &st) == 0) {
        s.present = true;
        s.dev = st.st_dev;
        s.ino = st.st_ino;
        s.size = st.st_size;
        s.mtime = st.st_mtim;
    }
    return s;
}

static bool stamp_same(const stamp *a, const stamp *b)
{
    return a->present == b->present && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static char *read_file(const char *key, const char *path, sx_err *err)
{
    sx_buf b = {0};
    int rc = sx_buf_read_file(&b, path, PEM_FILE_MAX);
    if (rc == 0 && b.len > 0 && b.len <= PEM_FILE_MAX)
        return sx_buf_steal(&b);
    const char *why = rc < 0       ? strerror(errno)
                      : rc > 0     ? "read error"
                      : b.len == 0 ? "the file is empty"
                                   : "larger than 1 MiB";
    sx_buf_free(&b);
    sx_err_set(err, SX_EIO, "could not read %s %s: %s", key, path, why);
    return NULL;
}

/* ------------------------------------------------------------------ installing */

static void check_expiry(certs *c, certs_listener l, int64_t now);

/* Makes p (one reference, taken over) the current version of l, and says at once
 * whether it expires soon. */
static void install(certs *c, certs_listener l, certs_pem *p, const char *what)
{
    source *s = &c->src[l];
    pthread_mutex_lock(&c->mu);
    p->generation = ++s->generations;
    certs_pem *old = s->current;
    s->current = p;
    pthread_mutex_unlock(&c->mu);
    const char *lv[] = {listener_names[l]};
    sx_metric_set(c->m_expiry, lv, (double)p->not_after);
    if (old) {
        const char *rv[] = {listener_names[l], "ok"};
        sx_metric_inc(c->m_reloads, rv);
    }
    sx_log_fields(SX_LOG_INFO, "certs",
                  json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "listener", listener_names[l], "serial",
                            p->serial, "sha256", p->fingerprint, "not_after",
                            (json_int_t)p->not_after, "generation", (json_int_t)p->generation,
                            "previous_generation", (json_int_t)(old ? old->generation : 0)),
                  "%s certificate %s from %s (serial %s)", listener_names[l],
                  old ? "reloaded" : "loaded", what, p->serial);
    certs_pem_release(old);
    check_expiry(c, l, (int64_t)time(NULL));
}

static void count_failure(certs *c, certs_listener l, const sx_err *err, const char *what)
{
    const char *rv[] = {listener_names[l], "error"};
    sx_metric_inc(c->m_reloads, rv);
    sx_log_fields(SX_LOG_ERROR, "certs",
                  json_pack("{s:s,s:s}", "listener", listener_names[l], "error", err->message),
                  "%s certificate not reloaded from %s, the previous one keeps serving: %s",
                  listener_names[l], what, err->message);
}

/* Reads and checks l's files; installs them on success. Returns 0 or the error. */
static int load_files(certs *c, certs_listener l, sx_err *err)
{
    source *s = &c->src[l];
    for (int f = 0; f < F_COUNT; f++)
        s->seen[f] = stamp_of(s->files[f]);
    char *text[F_COUNT] = {NULL, NULL, NULL};
    int rc = 0;
    for (int f = 0; f < F_COUNT && rc == 0; f++)
        if (s->files[f] && (text[f] = read_file(file_keys[l][f], s->files[f], err)) == NULL)
            rc = err->code;
    certs_pem *p = NULL;
    if (rc == 0 && (rc = certs_pem_parse(text[F_CERT], text[F_KEY], text[F_CA], &p, err)) != 0)
        sx_err_prefix(err, "%s and %s", s->files[F_CERT], s->files[F_KEY]);
    sx_free(text[F_CERT]);
    wipe_free(text[F_KEY]);
    sx_free(text[F_CA]);
    if (rc == 0)
        install(c, l, p, s->files[F_CERT]);
    return rc;
}

int certs_install(certs *c, certs_listener l, const char *cert, const char *key, const char *what,
                  sx_err *err)
{
    source *s = &c->src[l];
    certs_pem *p = NULL;
    const char *ca = NULL;
    char *ca_text = NULL;
    if (s->files[F_CA]) {
        if ((ca_text = read_file(file_keys[l][F_CA], s->files[F_CA], err)) == NULL) {
            count_failure(c, l, err, what);
            return err->code;
        }
        ca = ca_text;
    }
    int rc = certs_pem_parse(cert, key, ca, &p, err);
    sx_free(ca_text);
    if (rc != 0) {
        count_failure(c, l, err, what);
        return rc;
    }
    install(c, l, p, what);
    return 0;
}

/* One pass over l's files: reloads when a stamp changed (or always when forced). */
static void check_files(certs *c, certs_listener l, bool force)
{
    source *s = &c->src[l];
    bool changed = force;
    for (int f = 0; f < F_COUNT && !changed; f++) {
        if (s->files[f] == NULL || (s->managed && f != F_CA))
            continue;
        stamp now = stamp_of(s->files[f]);
        changed = !stamp_same(&now, &s->seen[f]);
    }
    if (!changed)
        return;
    sx_err err;
    sx_err_clear(&err);
    if (s->managed) {
        /* Only the client CA comes from a file: reinstall the current certificate. */
        for (int f = 0; f < F_COUNT; f++)
            s->seen[f] = stamp_of(s->files[f]);
        certs_pem *cur = certs_current(c, l);
        int rc =
            cur ? certs_install(c, l, cur->cert, cur->key, "the managed certificate", &err) : 0;
        (void)rc; /* a failure is counted and logged by certs_install */
        certs_pem_release(cur);
        return;
    }
    if (load_files(c, l, &err) != 0)
        count_failure(c, l, &err, s->files[F_CERT]);
}

/* ------------------------------------------------------------------ expiry */

static void check_expiry(certs *c, certs_listener l, int64_t now)
{
    source *s = &c->src[l];
    char notice[32];
    snprintf(notice, sizeof(notice), "tls_%s", listener_names[l]);
    certs_pem *p = certs_current(c, l);
    if (p == NULL)
        return;
    int64_t left = p->not_after - now;
    if (left * 1000 >= c->cfg->tls.expiry_warning_ms) {
        sup_set_notice(c->sup, notice, NULL);
        certs_pem_release(p);
        return;
    }
    char when[64], text[256];
    struct tm tm;
    time_t t = (time_t)p->not_after;
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (left > 0)
        snprintf(text, sizeof(text), "the %s certificate (serial %s) expires at %s, in %lld h",
                 listener_names[l], p->serial, when, (long long)(left / 3600));
    else
        snprintf(text, sizeof(text), "the %s certificate (serial %s) expired at %s",
                 listener_names[l], p->serial, when);
    sup_set_notice(c->sup, notice, text);
    pthread_mutex_lock(&c->mu); /* install() runs this on other threads too */
    bool first = s->warned_generation != p->generation;
    s->warned_generation = p->generation;
    pthread_mutex_unlock(&c->mu);
    if (first) {
        sx_log_fields(SX_LOG_WARN, "certs",
                      json_pack("{s:s,s:s,s:I}", "listener", listener_names[l], "serial", p->serial,
                                "not_after", (json_int_t)p->not_after),
                      "%s", text);
    }
    certs_pem_release(p);
}

/* ------------------------------------------------------------------ the thread */

static void *certs_thread(void *arg)
{
    certs *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        struct timespec until = sx_deadline_in(c->cfg->tls.reload_interval_ms);
        while (!c->stop_asked && !c->reload_asked)
            if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT)
                break;
        bool stop = c->stop_asked, force = c->reload_asked;
        c->reload_asked = false;
        pthread_mutex_unlock(&c->mu);
        if (stop)
            break;
        if (force)
            SX_INFO("certs", "reloading the certificates (SIGHUP)");
        int64_t now = (int64_t)time(NULL);
        for (int l = 0; l < CERTS_LISTENERS; l++) {
            if (!c->src[l].enabled)
                continue;
            check_files(c, (certs_listener)l, force);
            check_expiry(c, (certs_listener)l, now);
        }
    }
    return NULL;
}

static void certs_wake_stop(void *arg)
{
    certs *c = arg;
    sx_cond_raise(&c->mu, &c->cv, &c->stop_asked);
}

void certs_reload(certs *c)
{
    if (c)
        sx_cond_raise(&c->mu, &c->cv, &c->reload_asked);
}

/* ------------------------------------------------------------------ lifecycle */

int certs_create(const certs_options *o, certs **out, sx_err *err)
{
    *out = NULL;
    certs *c = sx_calloc(1, sizeof(*c));
    c->cfg = o->config;
    c->sup = o->sup;
    pthread_mutex_init(&c->mu, NULL);
    sx_cond_init_monotonic(&c->cv);
    c->thread = (sup_thread){
        .run = certs_thread, .wake = certs_wake_stop, .ctx = c, .what = "the certificate reload"};
    if (o->metrics) {
        c->m_expiry = sx_metrics_gauge(o->metrics, "sextant_tls_cert_expiry_timestamp_seconds",
                                       "When the certificate a listener serves expires "
                                       "(its notAfter), seconds since the epoch",
                                       "listener");
        c->m_reloads = sx_metrics_counter(o->metrics, "sextant_tls_reloads_total",
                                          "Certificate reloads by listener and result (ok: "
                                          "new material serves; error: it was refused and the "
                                          "previous one keeps serving)",
                                          "listener,result");
    }
    const config_tls *tls[CERTS_LISTENERS] = {&o->config->http.tls, &o->config->grpc.tls};
    for (int l = 0; l < CERTS_LISTENERS; l++) {
        source *s = &c->src[l];
        s->files[F_CERT] = tls[l]->cert_file;
        s->files[F_KEY] = tls[l]->key_file;
        s->files[F_CA] = l == CERTS_GRPC ? tls[l]->client_ca_file : NULL;
        s->enabled = s->files[F_CERT] && s->files[F_KEY];
        int rc;
        if (s->enabled && (rc = load_files(c, (certs_listener)l, err)) != 0) {
            certs_destroy(c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

void certs_set_managed(certs *c, certs_listener l)
{
    c->src[l].managed = true;
    c->src[l].enabled = true;
    c->src[l].seen[F_CA] = stamp_of(c->src[l].files[F_CA]);
}

bool certs_enabled(const certs *c, certs_listener l)
{
    return c && (unsigned)l < CERTS_LISTENERS && c->src[l].enabled;
}

bool certs_verifies_clients(const certs *c, certs_listener l)
{
    return certs_enabled(c, l) && c->src[l].files[F_CA] != NULL;
}

certs_pem *certs_current(certs *c, certs_listener l)
{
    if (!certs_enabled(c, l))
        return NULL;
    pthread_mutex_lock(&c->mu);
    certs_pem *p = c->src[l].current;
    if (p)
        atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&c->mu);
    return p;
}

sup_thread *certs_component(certs *c)
{
    return &c->thread;
}

void certs_destroy(certs *c)
{
    if (c == NULL)
        return;
    for (int l = 0; l < CERTS_LISTENERS; l++)
        certs_pem_release(c->src[l].current);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    sx_free(c);
}
