-- 0022_k8s_status.sql — the status Sextant wrote back to the Kubernetes objects it judges.
--
-- The leading replica's controller patches the status of every Gateway API object it
-- judges (Gateways, routes, policies, GatewayClasses) and keeps here, per object, the
-- status the cluster got from that patch: the same JSON, the metadata.generation its
-- conditions observed, and when it was written. A row is linked to the managed configs
-- it concerns through source_refs, the configs.source_ref values of the Gateways
-- involved ('Gateway default/web' for that Gateway and for every route attached to it).
-- An object that is deleted, or that Sextant no longer judges, loses its row. The REST
-- API shows the rows of a config beside it (GET /api/v1/configs/{id}/kubernetes).

CREATE TABLE k8s_status (
    kind        text        NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),
    namespace   text        NOT NULL CHECK (length(namespace) <= 253),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 253),
    generation  bigint      NOT NULL CHECK (generation >= 0),
    status      jsonb       NOT NULL CHECK (jsonb_typeof(status) = 'object'),
    source_refs text[]      NOT NULL DEFAULT '{}',
    written_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, namespace, name)
);

CREATE INDEX k8s_status_source_refs ON k8s_status USING gin (source_refs);

COMMENT ON TABLE k8s_status IS
    'The status the leader last wrote to each Kubernetes object it judges, as the cluster '
    'holds it (written in the same step as the status patch).';
COMMENT ON COLUMN k8s_status.namespace IS
    'The object''s namespace; '''' for a cluster-scoped object (GatewayClass).';
COMMENT ON COLUMN k8s_status.generation IS
    'The metadata.generation the status was judged from: the observedGeneration of its '
    'conditions.';
COMMENT ON COLUMN k8s_status.source_refs IS
    'The configs.source_ref of every Gateway of ours the object is, or is attached to.';
COMMENT ON COLUMN k8s_status.written_at IS
    'When the status (or the generation it observed) last changed.';
