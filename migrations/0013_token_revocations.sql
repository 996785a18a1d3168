-- 0013_token_revocations.sql — revoked bearer tokens (REST API and xDS proxy tokens).
--
-- A row revokes either one token, by its "jti" claim, or every token of one subject
-- ("sub") issued at or before issued_before (by its "iat" claim; a token of that subject
-- without "iat" counts as issued before). Rows are only added: `sextant token revoke`
-- inserts one and sends NOTIFY sextant_revocations in the same transaction, and every
-- replica reloads the whole list into memory on that notification (and after every
-- reconnection and periodic check), so a revocation holds on every replica within
-- seconds.

CREATE TABLE token_revocations (
    id            bigserial PRIMARY KEY,
    jti           text CHECK (jti IS NULL OR octet_length(jti) BETWEEN 1 AND 256),
    subject       text CHECK (subject IS NULL OR octet_length(subject) BETWEEN 1 AND 256),
    issued_before timestamptz,
    revoked_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((jti IS NOT NULL AND subject IS NULL AND issued_before IS NULL)
        OR (jti IS NULL AND subject IS NOT NULL AND issued_before IS NOT NULL))
);

COMMENT ON TABLE token_revocations IS
    'Revoked bearer tokens: one token by jti, or every token of a subject issued at or '
    'before issued_before. Honoured by every replica (NOTIFY sextant_revocations).';
