-- 0010_secrets.sql — private keys at rest: the keys that sealed them, and the one change
-- the history tables allow, resealing.
--
-- Private keys in config specs (config_versions.spec) and snapshots (snapshots.ir, and
-- snapshots.encoded as a whole) are stored sealed with AES-256-GCM under a key of the
-- keyring in secrets.key_file (storage/secret_seal.h); each sealed value names its key.
-- `sextant rotate-secrets` reseals them with the active key, which needs an UPDATE of
-- rows that are otherwise immutable. The triggers below keep refusing every change,
-- except an UPDATE that leaves every column but the secret-bearing ones alone, made by a
-- transaction that set sextant.rekey to 'on'.

CREATE TABLE secret_keys (
    key_id      text        PRIMARY KEY CHECK (key_id ~ '^[A-Za-z0-9._-]{1,32}$'),
    check_value text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE secret_keys IS
    'One row per key id that may have sealed a stored secret. check_value is a known text '
    'sealed with that key: a replica whose keyring lacks the id, or holds another key under '
    'it, refuses to start. rotate-secrets deletes the rows of the keys it has retired.';

-- Refuses like sextant_refuse_change(), but lets through an UPDATE under sextant.rekey
-- that changes only the columns named as the trigger's arguments.
CREATE FUNCTION sextant_refuse_change_but_reseal() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND current_setting('sextant.rekey', true) = 'on'
       AND (to_jsonb(NEW) - TG_ARGV) = (to_jsonb(OLD) - TG_ARGV) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% on % is not allowed: rows of % are immutable',
        TG_OP, TG_TABLE_NAME, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation',
              HINT = 'History is append-only; record a new row instead.';
END;
$$;

COMMENT ON FUNCTION sextant_refuse_change_but_reseal() IS
    'Trigger function of the history tables that hold secrets: refuses UPDATE and DELETE, '
    'except an UPDATE of the secret columns (the trigger arguments) under sextant.rekey.';

DROP TRIGGER config_versions_immutable ON config_versions;
CREATE TRIGGER config_versions_immutable
    BEFORE UPDATE OR DELETE ON config_versions
    FOR EACH ROW EXECUTE FUNCTION sextant_refuse_change_but_reseal('spec');

DROP TRIGGER snapshots_immutable ON snapshots;
CREATE TRIGGER snapshots_immutable
    BEFORE UPDATE OR DELETE ON snapshots
    FOR EACH ROW EXECUTE FUNCTION sextant_refuse_change_but_reseal('ir', 'encoded');
