-- 0005_config_source.sql — where a config's content comes from.
--
-- Configs are written through the REST API, the web UI and `sextant import` ('rest'),
-- or translated from the Kubernetes Gateway API ('kubernetes'): one config per Gateway,
-- whose versions the controller writes through the same path as every other change.
-- A managed config is not edited through the REST API (its source would overwrite the
-- edit); its versions can still be rolled out and rolled back like any other's.
-- Existing configs were all written through the REST API or an import.

ALTER TABLE configs
    ADD COLUMN source text NOT NULL DEFAULT 'rest'
        CONSTRAINT configs_source_known CHECK (source IN ('rest', 'kubernetes')),
    ADD COLUMN source_ref text
        CONSTRAINT configs_source_ref_length CHECK (length(source_ref) BETWEEN 1 AND 1024);
-- A managed config always names what it is translated from; a REST config never does.
ALTER TABLE configs
    ADD CONSTRAINT configs_source_ref_when_managed CHECK ((source = 'rest') = (source_ref IS NULL));

COMMENT ON COLUMN configs.source IS
    'Who writes the config''s versions: ''rest'' (REST API, web UI, sextant import) or '
    '''kubernetes'' (translated from a Gateway; the REST API refuses to change it).';
COMMENT ON COLUMN configs.source_ref IS
    'The object a managed config is translated from, such as ''Gateway default/web''; NULL '
    'for a REST config.';
