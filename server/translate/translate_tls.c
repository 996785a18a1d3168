/*
 * translate_tls.c — TLS: Secret resources, and the TLS transport sockets of listeners
 * (DownstreamTlsContext) and clusters (UpstreamTlsContext).
 *
 * Key material never travels inside a Listener or Cluster: both name their
 * certificates and trusted CAs as SDS secrets delivered over ADS, so a certificate
 * rotation changes one Secret and nothing else. An IR secret becomes the Secret named
 * by its qualified name ("<namespace>/<name>", or "<name>"). CA bundles that the IR
 * carries inline become Secrets of their own: "ca:<cluster>" for the CAs that verify a
 * backend (tls_validation.ca_pems) and "client-ca:<listener>" for the CAs that verify
 * a listener's clients (frontend_validation.ca_pems). ':' cannot appear in Kubernetes
 * names, so these never collide with translated Secrets; a collision is refused anyway.
 *
 * Proxyless gRPC clients accept upstream TLS only through certificate providers of
 * their own bootstrap, not SDS; a cluster with TLS is therefore for Envoy.
 */
#include "server/translate/translate.h"

#include <string.h>

#include "envoy/extensions/transport_sockets/quic/v3/quic_transport.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/common.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"

typedef Envoy__Extensions__TransportSockets__Tls__V3__Secret ev_secret;
typedef Envoy__Extensions__TransportSockets__Tls__V3__SdsSecretConfig ev_sds;
typedef Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext ev_common;
typedef Envoy__Extensions__TransportSockets__Tls__V3__CertificateValidationContext ev_validation;
typedef Envoy__Extensions__TransportSockets__Tls__V3__TlsParameters ev_params;
typedef Envoy__Config__Core__V3__DataSource ev_data;

#define TLS_SOCKET  "envoy.transport_sockets.tls"
#define QUIC_SOCKET "envoy.transport_sockets.quic"

static ev_data *inline_string(tr_ctx *tr, const char *s)
{
    ev_data *d = TR_NEW(tr, ev_data, ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT);
    d->specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_STRING;
    d->inline_string = tr_strdup(tr, s);
    return d;
}

static ev_sds *sds(tr_ctx *tr, const char *name)
{
    ev_sds *c =
        TR_NEW(tr, ev_sds, ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SDS_SECRET_CONFIG__INIT);
    c->name = tr_strdup(tr, name);
    c->sds_config = tr_ads(tr);
    return c;
}

/* The transport socket `name` whose typed config is ctx. */
static Envoy__Config__Core__V3__TransportSocket *socket_of(tr_ctx *tr, const char *name,
                                                           const ProtobufCMessage *ctx)
{
    Envoy__Config__Core__V3__TransportSocket *ts =
        TR_NEW(tr, Envoy__Config__Core__V3__TransportSocket,
               ENVOY__CONFIG__CORE__V3__TRANSPORT_SOCKET__INIT);
    ts->name = (char *)name;
    ts->config_type_case = ENVOY__CONFIG__CORE__V3__TRANSPORT_SOCKET__CONFIG_TYPE_TYPED_CONFIG;
    ts->typed_config = tr_any(tr, ctx);
    return ts;
}

/* "TLSv1.2" → TLSv1_2; "" → TLS_AUTO. Range-checked by the IR already. */
static int tls_version(const char *v)
{
    static const char *const names[] = {"TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
    for (int i = 0; i < 4; i++)
        if (v && strcmp(v, names[i]) == 0)
            return i + 1;
    return 0;
}

/* Splits a comma-separated option value into a repeated string field. */
static void split_list(tr_ctx *tr, const char *v, size_t *n, char ***out)
{
    size_t cap = 1;
    for (const char *p = v; *p; p++)
        cap += *p == ',';
    *out = (char **)tr_ptrs(tr, cap);
    *n = 0;
    const char *start = v;
    for (const char *p = v;; p++) {
        if (*p == ',' || *p == '\0') {
            while (start < p && *start == ' ')
                start++;
            const char *end = p;
            while (end > start && end[-1] == ' ')
                end--;
            if (end > start)
                (*out)[(*n)++] = sx_arena_strndup(tr->arena, start, (size_t)(end - start));
            start = p + 1;
        }
        if (*p == '\0')
            break;
    }
}

/* ---------------------------------------------------------------- secrets */

static void emit_secret(tr_ctx *tr, ev_secret *s)
{
    tr_emit(tr, TR_SDS, s->name, &s->base);
}

void tr_secrets(tr_ctx *tr)
{
    for (size_t i = 0; i < tr->ir->n_secrets; i++) {
        const ir_secret *in = tr->ir->secrets[i];
        const char *path = tr_printf(tr, "secrets[%zu]", i);
        if (tr_empty(in->cert_pem))
            tr_error(tr, tr_printf(tr, "%s.cert_pem", path), "certificate must not be empty");
        if (tr_empty(in->key_pem))
            tr_error(tr, tr_printf(tr, "%s.key_pem", path), "private key must not be empty");
        ev_secret *s =
            TR_NEW(tr, ev_secret, ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__INIT);
        s->name = (char *)tr_qname(tr, in->namespace_, in->name);
        Envoy__Extensions__TransportSockets__Tls__V3__TlsCertificate *c =
            TR_NEW(tr, Envoy__Extensions__TransportSockets__Tls__V3__TlsCertificate,
                   ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_CERTIFICATE__INIT);
        c->certificate_chain = inline_string(tr, in->cert_pem);
        c->private_key = inline_string(tr, in->key_pem);
        s->type_case = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_TLS_CERTIFICATE;
        s->tls_certificate = c;
        emit_secret(tr, s);
    }
}

void tr_ca_secret(tr_ctx *tr, const char *name, char **pems, size_t n_pems)
{
    size_t len = 1;
    for (size_t i = 0; i < n_pems; i++)
        len += strlen(pems[i]) + 1;
    char *bundle = tr_alloc(tr, len), *p = bundle;
    for (size_t i = 0; i < n_pems; i++) {
        size_t n = strlen(pems[i]);
        memcpy(p, pems[i], n);
        p += n;
        if (n > 0 && pems[i][n - 1] != '\n')
            *p++ = '\n';
    }
    *p = '\0';
    ev_validation *v =
        TR_NEW(tr, ev_validation,
               ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__INIT);
    v->trusted_ca = inline_string(tr, bundle);
    ev_secret *s =
        TR_NEW(tr, ev_secret, ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__INIT);
    s->name = tr_strdup(tr, name);
    s->type_case = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_VALIDATION_CONTEXT;
    s->validation_context = v;
    /* Emitted once; the same name with other content is a clash with an IR secret. */
    for (size_t i = 0; i < tr->out[TR_SDS].count; i++) {
        const tr_resource *r = &tr->out[TR_SDS].items[i];
        if (strcmp(r->name, name) != 0)
            continue;
        size_t n = protobuf_c_message_get_packed_size(&s->base);
        uint8_t *bytes = tr_alloc(tr, n + 1);
        protobuf_c_message_pack(&s->base, bytes);
        if (n != r->len || memcmp(bytes, r->bytes, n) != 0)
            tr_error(tr, "secrets", "secret name \"%s\" is taken by a generated ca bundle", name);
        return;
    }
    emit_secret(tr, s);
}

/* ---------------------------------------------------------------- downstream */

/* The DownstreamTlsContext of listener li (see tr_downstream_tls); alpn: its protocols
 * (n of them; 0: none). NULL after recording errors. */
static Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext *
downstream_context(tr_ctx *tr, size_t li, const char *const *alpn, size_t n_alpn, const char *path);

Envoy__Config__Core__V3__TransportSocket *tr_downstream_tls(tr_ctx *tr, size_t li, bool http,
                                                            const char *path)
{
    static const char *const h2_h1[] = {"h2", "http/1.1"};
    Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext *d =
        downstream_context(tr, li, h2_h1, http ? 2 : 0, path);
    return d ? socket_of(tr, TLS_SOCKET, &d->base) : NULL;
}

Envoy__Config__Core__V3__TransportSocket *tr_downstream_quic(tr_ctx *tr, size_t li,
                                                             const char *path)
{
    static const char *const h3[] = {"h3"};
    Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext *d =
        downstream_context(tr, li, h3, 1, path);
    if (d == NULL)
        return NULL;
    Envoy__Extensions__TransportSockets__Quic__V3__QuicDownstreamTransport *q =
        TR_NEW(tr, Envoy__Extensions__TransportSockets__Quic__V3__QuicDownstreamTransport,
               ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__QUIC__V3__QUIC_DOWNSTREAM_TRANSPORT__INIT);
    q->downstream_tls_context = d;
    return socket_of(tr, QUIC_SOCKET, &q->base);
}

static Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext *
downstream_context(tr_ctx *tr, size_t li, const char *const *alpn, size_t n_alpn, const char *path)
{
    const ir_listener *l = tr->ir->listeners[li];
    const Gateway__Control__V1__TlsConfig *t = l->tls;
    const char *tp = tr_printf(tr, "%s.tls", path);
    if (t == NULL || t->n_secret_refs == 0) {
        tr_error(tr, t ? tr_printf(tr, "%s.secret_refs", tp) : tp,
                 "a listener that terminates tls needs at least one secret");
        return NULL;
    }
    size_t errs = tr->errs.count;
    ev_common *c = TR_NEW(tr, ev_common,
                          ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__INIT);
    c->n_tls_certificate_sds_secret_configs = t->n_secret_refs;
    c->tls_certificate_sds_secret_configs = (ev_sds **)tr_ptrs(tr, t->n_secret_refs);
    for (size_t i = 0; i < t->n_secret_refs; i++) {
        const char *name =
            tr_secret_ref(tr, t->secret_refs[i], tr_printf(tr, "%s.secret_refs[%zu]", tp, i));
        c->tls_certificate_sds_secret_configs[i] = sds(tr, name ? name : "");
    }
    if (!tr_empty(t->min_version) || !tr_empty(t->max_version)) {
        ev_params *p = TR_NEW(tr, ev_params,
                              ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_PARAMETERS__INIT);
        p->tls_minimum_protocol_version = tls_version(t->min_version);
        p->tls_maximum_protocol_version = tls_version(t->max_version);
        if (p->tls_minimum_protocol_version && p->tls_maximum_protocol_version &&
            p->tls_minimum_protocol_version > p->tls_maximum_protocol_version)
            tr_error(tr, tr_printf(tr, "%s.min_version", tp),
                     "min_version %s is above max_version %s", t->min_version, t->max_version);
        c->tls_params = p;
    }
    if (n_alpn) {
        c->n_alpn_protocols = n_alpn;
        c->alpn_protocols = (char **)tr_ptrs(tr, n_alpn);
        for (size_t i = 0; i < n_alpn; i++)
            c->alpn_protocols[i] = (char *)alpn[i];
    }
    Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext *d =
        TR_NEW(tr, Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext,
               ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__DOWNSTREAM_TLS_CONTEXT__INIT);
    d->common_tls_context = c;

    const Gateway__Control__V1__FrontendValidation *fv = t->frontend_validation;
    if (fv) {
        const char *fp = tr_printf(tr, "%s.frontend_validation", tp);
        bool fallback = false;
        if (tr_empty(fv->mode) || strcmp(fv->mode, "AllowValidOnly") == 0 ||
            strcmp(fv->mode, "Require") == 0)
            fallback = false;
        else if (strcmp(fv->mode, "AllowInsecureFallback") == 0)
            fallback = true;
        else
            tr_error(tr, tr_printf(tr, "%s.mode", fp),
                     "unknown mode \"%s\": use AllowValidOnly or AllowInsecureFallback", fv->mode);
        if (fv->n_ca_pems == 0) {
            tr_error(tr, tr_printf(tr, "%s.ca_pems", fp),
                     "client certificate validation needs at least one ca certificate");
        } else {
            const char *ca = tr_printf(tr, "client-ca:%s", l->name);
            tr_ca_secret(tr, ca, fv->ca_pems, fv->n_ca_pems);
            if (fallback) {
                /* Ask for a certificate, accept a connection without one or with one
                 * that does not verify. */
                Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext
                    *cv = TR_NEW(
                        tr,
                        Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext,
                        ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__COMBINED_CERTIFICATE_VALIDATION_CONTEXT__INIT);
                cv->default_validation_context = TR_NEW(
                    tr, ev_validation,
                    ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__INIT);
                cv->default_validation_context->trust_chain_verification =
                    ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__TRUST_CHAIN_VERIFICATION__ACCEPT_UNTRUSTED;
                cv->validation_context_sds_secret_config = sds(tr, ca);
                c->validation_context_type_case =
                    ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_COMBINED_VALIDATION_CONTEXT;
                c->combined_validation_context = cv;
            } else {
                c->validation_context_type_case =
                    ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT_SDS_SECRET_CONFIG;
                c->validation_context_sds_secret_config = sds(tr, ca);
            }
            Google__Protobuf__BoolValue *req =
                TR_NEW(tr, Google__Protobuf__BoolValue, GOOGLE__PROTOBUF__BOOL_VALUE__INIT);
            req->value = !fallback;
            d->require_client_certificate = req;
        }
    }
    return tr->errs.count == errs ? d : NULL;
}

/* ---------------------------------------------------------------- upstream */

/* TLS options of a listener's backend_tls, applied to the upstream context. */
static void backend_options(tr_ctx *tr, ev_common *c,
                            const Gateway__Control__V1__BackendTlsConfig *bt, const char *path)
{
    if (bt->n_options == 0)
        return;
    ev_params *p =
        TR_NEW(tr, ev_params, ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_PARAMETERS__INIT);
    for (size_t i = 0; i < bt->n_options; i++) {
        const char *k = bt->options[i]->key,
                   *v = bt->options[i]->value ? bt->options[i]->value : "";
        const char *op = tr_printf(tr, "%s.options[\"%s\"]", path, k);
        if (strcmp(k, "cipher_suites") == 0) {
            split_list(tr, v, &p->n_cipher_suites, &p->cipher_suites);
        } else if (strcmp(k, "ecdh_curves") == 0) {
            split_list(tr, v, &p->n_ecdh_curves, &p->ecdh_curves);
        } else if (strcmp(k, "signature_algorithms") == 0) {
            split_list(tr, v, &p->n_signature_algorithms, &p->signature_algorithms);
        } else if (strcmp(k, "min_version") == 0 || strcmp(k, "max_version") == 0) {
            int ver = tls_version(v);
            if (ver == 0)
                tr_error(tr, op, "unknown tls version \"%s\": use TLSv1.0 to TLSv1.3", v);
            else if (k[1] == 'i')
                p->tls_minimum_protocol_version = ver;
            else
                p->tls_maximum_protocol_version = ver;
        } else {
            tr_error(tr, op,
                     "unknown backend tls option: use cipher_suites, ecdh_curves, "
                     "signature_algorithms, min_version or max_version");
        }
    }
    c->tls_params = p;
}

Envoy__Config__Core__V3__TransportSocket *tr_upstream_tls(tr_ctx *tr, size_t bi, bool h2,
                                                          const char *path)
{
    const ir_backend *b = tr->ir->backends[bi];
    const Gateway__Control__V1__BackendTlsValidation *v = b->tls_validation;
    if (v == NULL)
        return NULL; /* plain text; a listener's client certificate only applies to TLS */
    size_t errs = tr->errs.count;
    const char *vp = tr_printf(tr, "%s.tls_validation", path);
    ev_common *c = TR_NEW(tr, ev_common,
                          ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__INIT);

    /* Which names the backend certificate must carry: the SANs given, else hostname. */
    ev_validation *dv =
        TR_NEW(tr, ev_validation,
               ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__INIT);
    size_t n_san =
        v->n_subject_alt_names ? v->n_subject_alt_names : (tr_empty(v->hostname) ? 0 : 1);
    dv->n_match_typed_subject_alt_names = n_san;
    dv->match_typed_subject_alt_names =
        (Envoy__Extensions__TransportSockets__Tls__V3__SubjectAltNameMatcher **)tr_ptrs(tr, n_san);
    for (size_t i = 0; i < n_san; i++) {
        const char *san = v->n_subject_alt_names ? v->subject_alt_names[i] : v->hostname;
        Envoy__Extensions__TransportSockets__Tls__V3__SubjectAltNameMatcher *m =
            TR_NEW(tr, Envoy__Extensions__TransportSockets__Tls__V3__SubjectAltNameMatcher,
                   ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SUBJECT_ALT_NAME_MATCHER__INIT);
        m->san_type =
            strstr(san, "://")
                ? ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SUBJECT_ALT_NAME_MATCHER__SAN_TYPE__URI
                : ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SUBJECT_ALT_NAME_MATCHER__SAN_TYPE__DNS;
        m->matcher = TR_NEW(tr, Envoy__Type__Matcher__V3__StringMatcher,
                            ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT);
        m->matcher->match_pattern_case =
            ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_EXACT;
        m->matcher->exact = tr_strdup(tr, san);
        dv->match_typed_subject_alt_names[i] = m;
    }

    if (v->n_ca_pems > 0) {
        const char *ca = tr_printf(tr, "ca:%s", tr_qname(tr, b->namespace_, b->name));
        tr_ca_secret(tr, ca, v->ca_pems, v->n_ca_pems);
        Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext
            *cv = TR_NEW(
                tr,
                Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext,
                ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__COMBINED_CERTIFICATE_VALIDATION_CONTEXT__INIT);
        cv->default_validation_context = dv;
        cv->validation_context_sds_secret_config = sds(tr, ca);
        c->validation_context_type_case =
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_COMBINED_VALIDATION_CONTEXT;
        c->combined_validation_context = cv;
        if (!tr_empty(v->well_known_ca_certificates))
            tr_error(tr, tr_printf(tr, "%s.well_known_ca_certificates", vp),
                     "use either ca_pems or well_known_ca_certificates, not both");
    } else if (!tr_empty(v->well_known_ca_certificates)) {
        if (strcmp(v->well_known_ca_certificates, "System") != 0)
            tr_error(tr, tr_printf(tr, "%s.well_known_ca_certificates", vp),
                     "unknown ca set \"%s\": the only one is System",
                     v->well_known_ca_certificates);
        dv->system_root_certs = TR_NEW(
            tr,
            Envoy__Extensions__TransportSockets__Tls__V3__CertificateValidationContext__SystemRootCerts,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__SYSTEM_ROOT_CERTS__INIT);
        c->validation_context_type_case =
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT;
        c->validation_context = dv;
    } else if (v->n_ca_certificate_refs > 0) {
        tr_error(tr, tr_printf(tr, "%s.ca_pems", vp),
                 "ca_certificate_refs were not resolved into ca_pems");
    } else {
        tr_error(tr, vp,
                 "backend tls needs ca_pems or well_known_ca_certificates to verify the backend");
    }

    const Gateway__Control__V1__BackendTlsConfig *bt = tr->backend_tls[bi];
    if (bt) {
        const char *from = tr->backend_tls_from[bi];
        if (!tr_empty(bt->client_certificate_ref)) {
            const char *name = tr_secret_ref(tr, bt->client_certificate_ref,
                                             tr_printf(tr, "%s.client_certificate_ref", from));
            c->n_tls_certificate_sds_secret_configs = 1;
            c->tls_certificate_sds_secret_configs = (ev_sds **)tr_ptrs(tr, 1);
            c->tls_certificate_sds_secret_configs[0] = sds(tr, name ? name : "");
        }
        backend_options(tr, c, bt, from);
    }
    if (h2) {
        c->n_alpn_protocols = 1;
        c->alpn_protocols = (char **)tr_ptrs(tr, 1);
        c->alpn_protocols[0] = "h2";
    }
    Envoy__Extensions__TransportSockets__Tls__V3__UpstreamTlsContext *u =
        TR_NEW(tr, Envoy__Extensions__TransportSockets__Tls__V3__UpstreamTlsContext,
               ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__UPSTREAM_TLS_CONTEXT__INIT);
    u->common_tls_context = c;
    if (!tr_empty(v->hostname))
        u->sni = tr_strdup(tr, v->hostname);
    return tr->errs.count == errs ? socket_of(tr, TLS_SOCKET, &u->base) : NULL;
}
