-- 0006_idempotency.sql — the answers of mutating REST requests sent with an
-- Idempotency-Key, so a client that did not see the outcome of a write can retry it.
--
-- A row is written in the same transaction as the change it answers: it exists exactly
-- when the change committed. A retry with the same key and the same request (same
-- request_hash) gets status and response back without a second change; the same key with
-- another request is refused. Keys are scoped per authenticated subject, so two users
-- never see each other's answers. Rows older than api.idempotency_ttl are deleted by the
-- periodic sweep of every replica (and ignored until then).

CREATE TABLE idempotency_keys (
    subject      text        NOT NULL CONSTRAINT idempotency_keys_subject_length
                                 CHECK (length(subject) BETWEEN 1 AND 1024),
    key          text        NOT NULL CONSTRAINT idempotency_keys_key_printable
                                 CHECK (length(key) BETWEEN 1 AND 255 AND key !~ '[^ -~]'),
    request_hash text        NOT NULL CONSTRAINT idempotency_keys_request_hash_hex
                                 CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    -- Both NULL only inside the transaction of the change, between the claim of the key
    -- and the answer: no other transaction ever sees such a row.
    status       integer     CONSTRAINT idempotency_keys_status_http
                                 CHECK (status BETWEEN 100 AND 599),
    response     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subject, key),
    CONSTRAINT idempotency_keys_answered CHECK ((status IS NULL) = (response IS NULL))
);

-- The sweep deletes by age.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

COMMENT ON TABLE idempotency_keys IS
    'Answers of mutating REST requests sent with an Idempotency-Key, written in the '
    'transaction of the change; replayed to a retry of the same request by the same subject.';
COMMENT ON COLUMN idempotency_keys.request_hash IS
    'Hex SHA-256 of the request: method, path and body. The same key with another hash is '
    'refused (422).';
COMMENT ON COLUMN idempotency_keys.response IS
    'The response body exactly as it was sent (text, not jsonb, so a replay is byte-identical).';
