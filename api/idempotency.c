/*
 * idempotency.c — the Idempotency-Key header of mutating REST requests (see
 * idempotency.h).
 *
 * The request hash covers the method, the path as routed and the body, separated by
 * newlines; headers such as If-Match and query parameters are not part of it. The
 * lookup before the handler answers the common retry (the first request completed
 * long ago) without touching the write path; the claim in the change's transaction
 * (server/idem.h) decides the races the lookup cannot see.
 */
#include "api/idempotency.h"

#include <string.h>

#include "server/base/hash.h"
#include "server/changes.h"

static void hash_request(http_request *req, char out[SX_SHA256_HEX_LEN + 1])
{
    size_t blen = 0;
    const char *body = http_req_body(req, &blen);
    const char *method = http_req_method(req), *path = http_req_path(req);
    size_t mlen = strlen(method), plen = strlen(path);
    size_t n = mlen + 1 + plen + 1 + blen;
    char *buf = sx_arena_alloc(http_req_arena(req), n + 1);
    memcpy(buf, method, mlen);
    buf[mlen] = '\n';
    memcpy(buf + mlen + 1, path, plen);
    buf[mlen + 1 + plen] = '\n';
    memcpy(buf + mlen + 1 + plen + 1, body, blen);
    sx_sha256_hex(buf, n, out);
}

static void replay(http_request *req, int status, const char *body)
{
    http_req_set_header(req, API_IDEM_REPLAYED_HEADER, "true");
    http_respond(req, status, "application/json", body, strlen(body));
}

bool api_idem_or_respond(http_request *req, const api_change *ch, idem_render_fn render, void *ud,
                         idem_request **out)
{
    *out = NULL;
    const char *key = http_req_header(req, API_IDEM_HEADER);
    if (key == NULL)
        return true;
    sx_err err;
    sx_err_clear(&err);
    if (!idem_key_valid(key)) {
        sx_err_set(&err, SX_EINVAL, "invalid %s header", API_IDEM_HEADER);
        api_refuse(req, ch, &err,
                   api_details1(API_IDEM_HEADER,
                                "must be 1 to 255 printable ASCII characters, such as a UUID"));
        return false;
    }
    sx_arena *a = http_req_arena(req);
    idem_request *r = sx_arena_alloc(a, sizeof(*r));
    char hash[SX_SHA256_HEX_LEN + 1];
    hash_request(req, hash);
    *r = (idem_request){
        .subject = api_user(req),
        .key = sx_arena_strdup(a, key),
        .request_hash = sx_arena_strdup(a, hash),
        .ttl_ms = idem_ttl_ms(rest_server(ch->api)),
        .render = render,
        .ud = ud,
    };
    idem_record *rec = NULL;
    if (idem_lookup(rest_server(ch->api), r->subject, r->key, a, &rec, &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return false;
    }
    if (rec && strcmp(rec->request_hash, r->request_hash) != 0) {
        idem_reused(&err, r->key);
        api_refuse(req, ch, &err, NULL);
        return false;
    }
    if (rec) {
        replay(req, rec->status, rec->response);
        return false;
    }
    *out = r;
    return true;
}

bool api_change_open_or_respond(http_request *req, const api_change *ch, idem_render_fn render,
                                void *ud, const api_field *fields, size_t n, idem_request **idem,
                                json_t **body)
{
    sx_err err;
    sx_err_clear(&err);
    if (changes_ready(rest_server(ch->api), &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return false;
    }
    return api_idem_or_respond(req, ch, render, ud, idem) &&
           api_body_or_respond(req, ch, fields, n, body);
}

bool api_idem_respond(http_request *req, const idem_request *r)
{
    if (r == NULL || r->body == NULL)
        return false;
    if (r->replayed)
        replay(req, r->status, r->body);
    else
        http_respond(req, r->status, "application/json", r->body, strlen(r->body));
    return true;
}
