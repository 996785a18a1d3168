-- 0009_audit_chain.sql — a tamper-evident audit log, partitioned by month, that the
-- runtime role can append to and read but never change.
--
-- Hash chain. Every audit row belongs to the chain of its writer (the replica id, which
-- is the session's application_name; `sextant import` and `publish` write as
-- "sextant-import" and "sextant-publish") and carries that chain's next sequence number
-- (1, 2, 3, ...), the hash of the writer's previous row (prev_hash; 32 zero bytes before
-- the first row) and its own hash: sha256 of the canonical bytes below. The BEFORE INSERT
-- trigger sets all three; it locks the writer's row of audit_chain_heads, so the rows of
-- one writer are chained one after another in commit order while writers never wait on
-- each other, and it advances that head in the inserting transaction, so a transaction
-- that rolls back (or a replica that dies mid-write) leaves the head where it was.
--
-- Canonical bytes of a row (what `sextant audit verify` recomputes, see
-- storage/audit_chain.c): the 16 ASCII bytes "sextant-audit-v1", prev_hash (32 bytes),
-- id (int8, big-endian), F(writer), seq (int8, big-endian), then F() of each of: at as
-- UTC "YYYY-MM-DDTHH:MM:SS.ffffffZ", actor, actor_role, action, resource_type,
-- resource_id, result, status_code as decimal text, request_id, source_ip as inet text,
-- details as jsonb text. F(NULL) is the int4 -1 (ff ff ff ff); F(text) is the int4
-- big-endian byte length of its UTF-8 bytes followed by those bytes.
--
-- Heads and anchors. audit_chain_heads holds each writer's last seq and hash (a deleted
-- last row shows as a head beyond the chain); audit_chain_anchors holds, per writer, the
-- last row that `sextant audit archive` exported and detached, from which the remaining
-- chain continues.
--
-- Privileges. The functions that change the chain run as the owner (SECURITY DEFINER);
-- sextant_grant_runtime_role(role) gives a runtime role INSERT and SELECT on audit_log
-- and SELECT on the heads and anchors, never UPDATE, DELETE, TRUNCATE or ownership (so
-- no ALTER TABLE ... DISABLE TRIGGER), and the rights it needs on every other table.
-- `sextant migrate` calls it for database.runtime_role after applying migrations.

-- ----------------------------------------------------------------------------------
-- Heads and anchors.

CREATE TABLE audit_chain_heads (
    writer text        PRIMARY KEY,
    seq    bigint      NOT NULL CHECK (seq >= 0),
    hash   bytea       NOT NULL CHECK (octet_length(hash) = 32),
    at     timestamptz NOT NULL
);

COMMENT ON TABLE audit_chain_heads IS
    'The last row of each audit writer''s chain: its seq, hash and time. Advanced only by '
    'the audit_log insert trigger, in the inserting transaction.';

CREATE TABLE audit_chain_anchors (
    writer          text        PRIMARY KEY,
    seq             bigint      NOT NULL CHECK (seq >= 1),
    hash            bytea       NOT NULL CHECK (octet_length(hash) = 32),
    archived_before timestamptz NOT NULL,
    archived_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE audit_chain_anchors IS
    'Per writer, the last archived (exported and detached) audit row: the remaining chain '
    'starts at seq + 1 with prev_hash = hash.';

-- ----------------------------------------------------------------------------------
-- Canonical bytes and the chain trigger.

CREATE FUNCTION sextant_audit_field(v text) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v IS NULL THEN '\xffffffff'::bytea
                ELSE int4send(octet_length(convert_to(v, 'UTF8'))) || convert_to(v, 'UTF8') END
$$;

CREATE FUNCTION sextant_audit_canonical(prev_hash bytea, id bigint, writer text, seq bigint,
                                        at timestamptz, actor text, actor_role text,
                                        action text, resource_type text, resource_id text,
                                        result text, status_code integer, request_id text,
                                        source_ip inet, details jsonb) RETURNS bytea
LANGUAGE sql STABLE AS $$
    SELECT convert_to('sextant-audit-v1', 'UTF8') || prev_hash || int8send(id)
        || sextant_audit_field(writer) || int8send(seq)
        || sextant_audit_field(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
        || sextant_audit_field(actor) || sextant_audit_field(actor_role)
        || sextant_audit_field(action) || sextant_audit_field(resource_type)
        || sextant_audit_field(resource_id) || sextant_audit_field(result)
        || sextant_audit_field(status_code::text) || sextant_audit_field(request_id)
        || sextant_audit_field(source_ip::text) || sextant_audit_field(details::text)
$$;

COMMENT ON FUNCTION sextant_audit_canonical IS
    'The bytes an audit row''s hash covers (sha256); documented in 0009_audit_chain.sql.';

CREATE FUNCTION sextant_audit_chain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    head_seq  bigint;
    head_hash bytea;
    head_at   timestamptz;
BEGIN
    NEW.writer := coalesce(nullif(NEW.writer, ''), 'unknown');
    INSERT INTO audit_chain_heads (writer, seq, hash, at)
    VALUES (NEW.writer, 0, decode(repeat('00', 32), 'hex'), '-infinity')
    ON CONFLICT (writer) DO NOTHING;
    SELECT h.seq, h.hash, h.at INTO head_seq, head_hash, head_at
      FROM audit_chain_heads h WHERE h.writer = NEW.writer FOR UPDATE;
    -- A writer's rows keep time order as well as seq order, so that archiving by month
    -- cuts each chain once. A transaction that began before the head's row takes the
    -- head's time; across a month boundary that would move it to another partition.
    IF NEW.at < head_at THEN
        IF date_trunc('month', NEW.at AT TIME ZONE 'UTC')
           <> date_trunc('month', head_at AT TIME ZONE 'UTC') THEN
            RAISE EXCEPTION 'audit row of % would precede its writer''s last row across a month boundary',
                NEW.writer USING ERRCODE = 'serialization_failure',
                HINT = 'Retry the transaction.';
        END IF;
        NEW.at := head_at;
    END IF;
    NEW.seq := head_seq + 1;
    NEW.prev_hash := head_hash;
    NEW.hash := sha256(sextant_audit_canonical(NEW.prev_hash, NEW.id, NEW.writer, NEW.seq,
        NEW.at, NEW.actor, NEW.actor_role, NEW.action, NEW.resource_type, NEW.resource_id,
        NEW.result, NEW.status_code, NEW.request_id, NEW.source_ip, NEW.details));
    UPDATE audit_chain_heads SET seq = NEW.seq, hash = NEW.hash, at = NEW.at
     WHERE writer = NEW.writer;
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION sextant_audit_chain() FROM PUBLIC;

-- ----------------------------------------------------------------------------------
-- Monthly partitions (UTC months), named audit_log_YYYY_MM.

CREATE FUNCTION sextant_audit_partition_create(month timestamp) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    m       timestamp := date_trunc('month', month);
    part    text := 'audit_log_' || to_char(m, 'YYYY_MM');
    grantee text;
BEGIN
    IF to_regclass(quote_ident(part)) IS NOT NULL THEN
        RETURN 0;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_log FOR VALUES FROM (%L) TO (%L)',
                   part, m AT TIME ZONE 'UTC', (m + interval '1 month') AT TIME ZONE 'UTC');
    EXECUTE format('COMMENT ON TABLE %I IS %L', part,
                   'The audit_log rows of ' || to_char(m, 'YYYY-MM') || ' (UTC); read them '
                   'through audit_log. `sextant audit archive` exports and detaches it.');
    -- Rows are reached through audit_log only: no one but the owner holds rights on a
    -- partition, whatever default privileges say.
    FOR grantee IN
        SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
          FROM pg_class c, aclexplode(c.relacl) a
         WHERE c.oid = quote_ident(part)::regclass AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('REVOKE ALL ON %I FROM %s', part, grantee);
    END LOOP;
    RETURN 1;
END;
$$;

CREATE FUNCTION sextant_audit_partitions_ensure(months_ahead integer DEFAULT 2) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    this_month timestamp := date_trunc('month', now() AT TIME ZONE 'UTC');
    created    integer := 0;
BEGIN
    IF months_ahead < 0 OR months_ahead > 24 THEN
        RAISE EXCEPTION 'months_ahead must be between 0 and 24' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Concurrent replicas create each partition once.
    PERFORM pg_advisory_xact_lock(1397053525);
    FOR i IN 0..months_ahead LOOP
        created := created + sextant_audit_partition_create(this_month + make_interval(months => i));
    END LOOP;
    RETURN created;
END;
$$;

REVOKE ALL ON FUNCTION sextant_audit_partition_create(timestamp) FROM PUBLIC;
REVOKE ALL ON FUNCTION sextant_audit_partitions_ensure(integer) FROM PUBLIC;

-- Functions that run as the owner resolve names in the migration's schema, then the
-- catalog, and temporary tables last, so a caller's temporary table cannot stand in.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION sextant_audit_chain() SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION sextant_audit_partition_create(timestamp) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION sextant_audit_partitions_ensure(integer) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END;
$$;

COMMENT ON FUNCTION sextant_audit_partitions_ensure(integer) IS
    'Creates the audit_log partitions of this month and the next months_ahead months (UTC); '
    'returns how many it created. Runs as the owner; every replica calls it.';

-- ----------------------------------------------------------------------------------
-- The partitioned audit log, with the rows of the old one chained as writer "migrated".

ALTER TABLE audit_log RENAME TO audit_log_unpartitioned;
ALTER SEQUENCE audit_log_id_seq OWNED BY NONE;

CREATE TABLE audit_log (
    id            bigint      NOT NULL DEFAULT nextval('audit_log_id_seq'),
    at            timestamptz NOT NULL DEFAULT now(),
    actor         text        NOT NULL,
    actor_role    text        NOT NULL DEFAULT '',
    action        text        NOT NULL,
    resource_type text        NOT NULL,
    resource_id   text        NOT NULL DEFAULT '',
    result        text        NOT NULL CONSTRAINT audit_log_result_check
                                       CHECK (result IN ('success', 'denied', 'failed')),
    status_code   integer,
    request_id    text,
    source_ip     inet,
    details       jsonb       NOT NULL DEFAULT '{}' CONSTRAINT audit_log_details_check
                                       CHECK (jsonb_typeof(details) = 'object'),
    writer        text        NOT NULL DEFAULT current_setting('application_name'),
    seq           bigint      NOT NULL DEFAULT 0,
    prev_hash     bytea       NOT NULL DEFAULT '\x',
    hash          bytea       NOT NULL DEFAULT '\x'
) PARTITION BY RANGE (at);

ALTER SEQUENCE audit_log_id_seq OWNED BY audit_log.id;

COMMENT ON TABLE audit_log IS
    'Who did what to which resource, from where, with what result. Append-only (UPDATE, '
    'DELETE and TRUNCATE are refused by triggers) and hash-chained per writer; partitioned '
    'by month (audit_log_YYYY_MM).';
COMMENT ON COLUMN audit_log.actor IS 'User (JWT subject), or "system" / a replica id for automatic actions.';
COMMENT ON COLUMN audit_log.action IS 'What was done: "config.create", "config.rollback", "deployment.pause", ...';
COMMENT ON COLUMN audit_log.details IS
    'Anything else worth keeping, e.g. {"before_version": 3, "after_version": 4}.';
COMMENT ON COLUMN audit_log.writer IS 'The chain the row belongs to: the writing replica id.';
COMMENT ON COLUMN audit_log.seq IS 'Position in the writer''s chain: 1, 2, 3, ... (a gap is a missing row).';
COMMENT ON COLUMN audit_log.prev_hash IS 'hash of the writer''s previous row; 32 zero bytes for its first.';
COMMENT ON COLUMN audit_log.hash IS 'sha256 of the row''s canonical bytes (see 0009_audit_chain.sql).';

CREATE TRIGGER audit_log_chain
    BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION sextant_audit_chain();

DO $$
DECLARE
    first_month timestamp;
    m           timestamp;
BEGIN
    SELECT date_trunc('month', min(at) AT TIME ZONE 'UTC') INTO first_month FROM audit_log_unpartitioned;
    m := coalesce(first_month, date_trunc('month', now() AT TIME ZONE 'UTC'));
    WHILE m < date_trunc('month', now() AT TIME ZONE 'UTC') LOOP
        PERFORM sextant_audit_partition_create(m);
        m := m + interval '1 month';
    END LOOP;
    PERFORM sextant_audit_partitions_ensure(2);
END;
$$;

-- Time order is the chain's order (the trigger keeps each writer's times ascending).
INSERT INTO audit_log (id, at, actor, actor_role, action, resource_type, resource_id, result,
                       status_code, request_id, source_ip, details, writer)
SELECT id, at, actor, actor_role, action, resource_type, resource_id, result, status_code,
       request_id, source_ip, details, 'migrated'
  FROM audit_log_unpartitioned ORDER BY at, id;

DROP TABLE audit_log_unpartitioned;

ALTER TABLE audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id, at);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_resource ON audit_log (resource_type, resource_id, id);
CREATE INDEX audit_log_request ON audit_log (request_id);
CREATE INDEX audit_log_chain_seq ON audit_log (writer, seq);

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION sextant_refuse_change();
CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION sextant_refuse_change();

-- Fire even under session_replication_role = replica.
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_chain;
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate;

-- ----------------------------------------------------------------------------------
-- The runtime role.

CREATE FUNCTION sextant_grant_runtime_role(role_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r     text := quote_ident(role_name);
    owner oid := (SELECT relowner FROM pg_class WHERE oid = 'audit_log'::regclass);
    t     record;
BEGIN
    IF role_name IS NULL OR role_name = '' THEN
        RAISE EXCEPTION 'the runtime role name is empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role_name) THEN
        BEGIN
            EXECUTE format('CREATE ROLE %s NOLOGIN', r);
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL; -- created meanwhile by a migration of another database
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'runtime role "%" does not exist and this login may not create it', role_name
                    USING ERRCODE = 'insufficient_privilege',
                          HINT = 'Create it first (CREATE ROLE ' || r || ' LOGIN PASSWORD ...), then run sextant migrate again.';
        END;
    END IF;
    IF pg_has_role(role_name, owner, 'USAGE') THEN
        RAISE EXCEPTION 'runtime role "%" owns the audit log (or acts as its owner)', role_name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The runtime role must be a role of its own, not the owner or a member of it.';
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %s', current_schema(), r);
    FOR t IN
        SELECT c.relname, c.relkind FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'S') AND NOT c.relispartition
    LOOP
        IF t.relkind = 'S' THEN
            EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE %I TO %s', t.relname, r);
        ELSIF t.relname = 'audit_log' THEN
            EXECUTE format('REVOKE ALL ON %I FROM %s', t.relname, r);
            EXECUTE format('GRANT SELECT, INSERT ON %I TO %s', t.relname, r);
        ELSIF t.relname IN ('audit_chain_heads', 'audit_chain_anchors', 'schema_migrations') THEN
            EXECUTE format('REVOKE ALL ON %I FROM %s', t.relname, r);
            EXECUTE format('GRANT SELECT ON %I TO %s', t.relname, r);
        ELSIF t.relname LIKE 'audit\_log\_%' THEN
            -- A detached (archived) month: the owner's alone.
            EXECUTE format('REVOKE ALL ON %I FROM %s', t.relname, r);
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO %s', t.relname, r);
        END IF;
    END LOOP;
    FOR t IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'audit_log'::regclass
    LOOP
        EXECUTE format('REVOKE ALL ON %I FROM %s', t.relname, r);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION sextant_audit_partitions_ensure(integer) TO %s', r);
END;
$$;

REVOKE ALL ON FUNCTION sextant_grant_runtime_role(text) FROM PUBLIC;

COMMENT ON FUNCTION sextant_grant_runtime_role(text) IS
    'Gives the runtime role exactly what serve needs: INSERT and SELECT on audit_log, SELECT '
    'on the chain heads and anchors, the ensure-partitions function, and SELECT, INSERT, '
    'UPDATE, DELETE on the other tables. Creates the role (NOLOGIN) when it is missing.';
