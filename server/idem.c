/*
 * idem.c — idempotent changes: the claim of a client's key and the storing of its
 * answer inside a change's transaction (see idem.h).
 *
 * The answer is rendered once, serialized exactly as the HTTP layer serializes a JSON
 * answer (compact, keys in insertion order), and stored as that text; the first answer
 * and every replay then send the same bytes.
 */
#include "server/idem.h"

#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "server/secrets.h"
#include "server/server.h"

static void reset(idem_request *r)
{
    r->replayed = false;
    r->status = 0;
    r->body = NULL;
}

int idem_reused(sx_err *err, const char *key)
{
    sx_err_set(err, SX_EKEYREUSED, "idempotency key %.64s%s was used for another request", key,
               strlen(key) > 64 ? "..." : "");
    sx_err_detail(err, "A key stands for one request: the same method, path and body. This "
                       "request differs from the one first sent with the key, which is not "
                       "repeated and nothing was changed.");
    sx_err_hint(err, "Send a new key with a new request; retry with the key only the request "
                     "it was first sent with.");
    return SX_EKEYREUSED;
}

int idem_begin(pg_conn *c, idem_request *r, sx_arena *a, sx_err *err)
{
    if (r == NULL)
        return 0;
    reset(r);
    if (r->render == NULL)
        return sx_err_set(err, SX_EINVAL, "an idempotent change needs a renderer");
    idem_record *rec = NULL;
    int rc = idem_repo_claim(c, r->subject, r->key, r->request_hash, r->ttl_ms, a, &rec, err);
    if (rc || rec == NULL)
        return rc;
    if (strcmp(rec->request_hash, r->request_hash) != 0)
        return idem_reused(err, r->key);
    r->replayed = true;
    r->status = rec->status;
    r->body = rec->response;
    return 0;
}

int idem_end(pg_conn *c, idem_request *r, const void *result, sx_arena *a, sx_err *err)
{
    if (r == NULL)
        return 0;
    int status = 0;
    json_t *body = r->render(result, r->ud, &status);
    /* Stored in PostgreSQL and replayed to whoever holds the key: never a private key. */
    body = secrets_redacted(body);
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (text == NULL)
        return sx_err_set(err, SX_EINTERNAL, "could not render the answer of an idempotent change");
    r->body = sx_arena_strdup(a, text);
    free(text);
    r->status = status;
    return idem_repo_answer(c, r->subject, r->key, status, r->body, err);
}

bool idem_key_valid(const char *key)
{
    return idem_repo_key_valid(key);
}

long long idem_ttl_ms(const struct sx_server *srv)
{
    return srv && srv->config ? srv->config->api.idempotency_ttl_ms : 24LL * 3600 * 1000;
}

int idem_lookup(struct sx_server *srv, const char *subject, const char *key, sx_arena *a,
                idem_record **out, sx_err *err)
{
    *out = NULL;
    if (srv == NULL || srv->db == NULL)
        return sx_err_set(err, SX_EUNAVAILABLE, "the database is not available");
    pg_conn *c = NULL;
    int rc = pg_acquire(srv->db, &c, err);
    if (rc)
        return rc;
    rc = idem_repo_get(c, subject, key, idem_ttl_ms(srv), a, out, err);
    pg_release(srv->db, c);
    return rc;
}

int idem_prune(struct sx_server *srv, pg_conn *c, long long *deleted, sx_err *err)
{
    return idem_repo_prune(c, idem_ttl_ms(srv), deleted, err);
}
