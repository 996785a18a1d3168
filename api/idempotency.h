/*
 * idempotency.h — the Idempotency-Key header of mutating REST requests.
 *
 * A client that did not see the outcome of a write (a timeout, a 503 while the database
 * fails over) retries it with the key it first sent; the change is made at most once
 * and every retry gets the answer of the one that was made. Here the header is read and
 * checked (1..255 printable ASCII, else 400), the request hashed (SHA-256 of method,
 * path and body) and, before the handler does any work, a committed answer under the
 * caller's key looked up: the same request gets it back byte for byte (with
 * Idempotent-Replayed: true), another request 422 idempotency_key_reused. Otherwise the
 * handler passes the typed key (server/idem.h) down with its change; the domain claims
 * the key and stores the answer in the change's transaction, so a retry racing the
 * first request waits for it and then replays it. Keys are per user: the same key sent
 * by two users names two requests.
 *
 * Stored are the answers of changes that committed (every 2xx of a change, including a
 * dry run or a change that found nothing to do); a request refused for its input, a
 * conflict or a missing database stores nothing, and its retry runs again.
 */
#ifndef SX_API_IDEMPOTENCY_H
#define SX_API_IDEMPOTENCY_H

#include <stdbool.h>

#include "api/handlers_common.h"
#include "server/idem.h"

/* The request header and the header of a replayed answer. */
#define API_IDEM_HEADER          "Idempotency-Key"
#define API_IDEM_REPLAYED_HEADER "Idempotent-Replayed"

/*
 * Reads the Idempotency-Key of the change ch. True when the handler goes on: *out is
 * NULL without the header, else the key to hand to the domain (in the request's
 * arena), with render and ud (see idem_render_fn) set. False when the request is
 * answered: 400 for a malformed key, the stored answer of the same request, 422 for a
 * key answered for another request, 503 without a database (refusals audited with ch).
 */
bool api_idem_or_respond(http_request *req, const api_change *ch, idem_render_fn render, void *ud,
                         idem_request **out);

/* The opening of a change with a body and an optional key: 503 (not audited) unless
 * the daemon takes changes now, then the key (api_idem_or_respond with render and ud,
 * into *idem) and the body with the n fields (api_body_or_respond, into *body). True
 * when the handler goes on; false when the request is answered. */
bool api_change_open_or_respond(http_request *req, const api_change *ch, idem_render_fn render,
                                void *ud, const api_field *fields, size_t n, idem_request **idem,
                                json_t **body);

/* After the domain returned 0 for a change made under r: answers with r's answer (the
 * stored one when the key was answered meanwhile, marked replayed) and returns true.
 * False when r is NULL or holds no answer: the handler answers as without a key.
 * Response headers set before stay. */
bool api_idem_respond(http_request *req, const idem_request *r);

#endif
