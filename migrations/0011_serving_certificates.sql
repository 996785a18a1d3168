-- 0011_serving_certificates.sql — the serving certificate of managed TLS (tls.managed):
-- one row every replica reads, so that all of them serve the same certificate.
--
-- The first replica that finds no row issues the certificate from the configured CA and
-- inserts it (the primary key lets one insert win); from then on only the leader
-- replaces it, before it expires, with an UPDATE conditioned on the serial it read, so
-- two replicas that both believe they lead cannot both renew. The private key is stored
-- as an encrypted PKCS#8 PEM whose passphrase only holders of the CA's private key can
-- derive (server/certs_managed.c): the table alone does not give the key away.

CREATE TABLE serving_certificates (
    name       text PRIMARY KEY,
    cert_pem   text NOT NULL,
    key_pem    text NOT NULL,
    serial     text NOT NULL,
    not_after  timestamptz NOT NULL,
    issued_by  text NOT NULL,
    issued_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE serving_certificates IS
    'Managed serving certificates (tls.managed): the chain (leaf first, then the CA), the '
    'encrypted PKCS#8 private key, and who issued it when.';
