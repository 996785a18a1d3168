"""kapi — the pieces of the test Kubernetes API server (tests/k8s/apiserver.py).

util       errors as Kubernetes Status objects, times, names
selectors  label and field selectors
patch      JSON merge patch, strategic merge patch, JSON patch
schema     structural schemas of CRDs: pruning, defaulting, validation
resources  the resource types served (built-in kinds and CRD-registered ones)
store      objects, the resourceVersion history, compaction, watchers
openapi    discovery documents and the OpenAPI v2/v3 documents kubectl reads
table      the meta.k8s.io Table rendering kubectl asks for
"""
