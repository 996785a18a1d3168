-- 0012_group_data_planes.sql — the data planes a proxy group serves: Envoy proxies
-- ("envoy"), proxyless gRPC clients ("grpc") and gateway.control.v1 data planes
-- ("control"). Validation checks a config against what each of its groups' data planes
-- can express, so a group that serves only gateway.control.v1 clients takes every
-- feature of that protocol, while a group that Envoy proxies follow refuses the ones
-- Envoy has no counterpart for.
--
-- NULL means the default of the configuration (groups.default_data_planes), so that
-- an operator's change of that default reaches every group that never chose.

ALTER TABLE proxy_groups
    ADD COLUMN data_planes text[]
        CHECK (data_planes IS NULL OR (cardinality(data_planes) BETWEEN 1 AND 3
               AND data_planes <@ ARRAY['envoy', 'grpc', 'control']::text[]));

COMMENT ON COLUMN proxy_groups.data_planes IS
    'Kinds of data plane the group serves, a non-empty subset of envoy, grpc and control; '
    'NULL: the configured default (groups.default_data_planes).';
