#!/usr/bin/env bash
# test_scoped_roles.sh — roles scoped to proxy groups (groups: in the RBAC policy), with
# the real daemon, PostgreSQL and Redis:
#   - a role allowed configs and groups only in "edge-*" is refused (403, nothing
#     written, an audit row "denied" naming the scope and the group outside it) a
#     config into prod, a config in prod and edge-a at once, moving its own config from
#     edge-a to prod, moving prod's config to edge-a, the rollback of group prod and a
#     rollout of prod's config; it creates, changes and rolls back in its own groups,
#     and the success rows name the scope that allowed them;
#   - its lists (configs, groups, snapshots, deployments, proxies) hold only what is
#     in edge-*, while an admin's hold prod too; a single GET of prod's config,
#     snapshot, deployment or proxy answers 404, as for something that does not exist;
#   - a policy with a pattern that can never match (snapshots/edge-*, a group glob no
#     group name fits, an unknown resource) stops the start, naming role and pattern.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init scoped-roles
api_policy 'admin *=*' 'edge-operator configs=read,create,update,rollback,validate,apply@edge-*' \
    'edge-operator groups=read,rollback@edge-*' 'edge-operator snapshots=read@edge-*' \
    'edge-operator deployments=read,pause@edge-*' 'edge-operator proxies=read@edge-*' 'edge-operator auth=read'
api_serve
ADMIN=$(api_token alice admin)
EDGE=$(api_token eddie edge-operator)

counts() { # what a refused change must not have written
    sql "SELECT (SELECT count(*) FROM configs) || '/' || (SELECT count(*) FROM config_versions) || '/' || (SELECT count(*) FROM snapshots)"
}
# last_row ACTION: the newest audit row of eddie for ACTION, as JSON in $WORK/body.
last_row() {
    sql "SELECT row_to_json(a) FROM (SELECT result, status_code, resource_id, details FROM audit_log
         WHERE actor = 'eddie' AND action = '$1' ORDER BY id DESC LIMIT 1) a" >"$WORK/body"
}
groups_of() { # groups_of ID: a config's groups, comma-separated
    sql "SELECT array_to_string(groups, ',') FROM configs WHERE id = '$1'"
}

# ------------------------------------------------------------------ set-up by the admin
call_status "admin: a config in prod" 201 api_json "$ADMIN" POST /api/v1/configs "$(api_config_body p prod "$(api_spec 10080 p.example)")"
PROD=$(jv .id)
call_status "admin: a config in edge-a" 201 api_json "$ADMIN" POST /api/v1/configs "$(api_config_body e edge-a "$(api_spec 10081 e.example)")"
EDGE_CFG=$(jv .id)
call_status "admin: a second version in prod" 200 api_json "$ADMIN" PUT "/api/v1/configs/$PROD" "{\"spec\":$(api_spec 10082 p.example)}"

# ------------------------------------------------------------------ writes outside the scope
BEFORE=$(counts)
call_error "edge-operator: POST /configs into prod" 403 permission_denied \
    api_json "$EDGE" POST /api/v1/configs "$(api_config_body q prod "$(api_spec 10090 q.example)")"
check "... nothing written" [ "$(counts)" = "$BEFORE" ]
last_row config.create
check "... audit row: denied, 403, the scope edge-* and prod outside it" \
    jtrue 'j.result === "denied" && j.status_code === 403 && j.details.scope.role === "edge-operator" && j.details.scope.groups.join() === "edge-*" && j.details.scope.outside.join() === "prod"'

call_error "edge-operator: POST /configs into edge-b and prod at once" 403 permission_denied \
    api_json "$EDGE" POST /api/v1/configs '{"namespace":"team","name":"q","groups":["edge-b","prod"],"spec":'"$(api_spec 10090 q.example)"'}'
check "... nothing written" [ "$(counts)" = "$BEFORE" ]

call_error "edge-operator: PUT moving its edge-a config to prod" 403 permission_denied \
    api_json "$EDGE" PUT "/api/v1/configs/$EDGE_CFG" "{\"groups\":[\"prod\"],\"spec\":$(api_spec 10081 e.example)}"
check "... nothing written, the config stays in edge-a" [ "$(counts)/$(groups_of "$EDGE_CFG")" = "$BEFORE/edge-a" ]
last_row config.update
check "... audit row: denied, naming prod outside edge-*" \
    jtrue "j.result === 'denied' && j.resource_id === '$EDGE_CFG' && j.details.scope.outside.join() === 'prod'"

call_error "edge-operator: PUT moving prod's config to edge-a" 403 permission_denied \
    api_json "$EDGE" PUT "/api/v1/configs/$PROD" "{\"groups\":[\"edge-a\"],\"spec\":$(api_spec 10082 p.example)}"
check "... nothing written, the config stays in prod" [ "$(counts)/$(groups_of "$PROD")" = "$BEFORE/prod" ]

call_error "edge-operator: rollback of prod's config" 403 permission_denied \
    api_json "$EDGE" POST "/api/v1/configs/$PROD/rollback" '{"version":1}'
call_error "edge-operator: POST /groups/prod/rollback" 403 permission_denied \
    api_json "$EDGE" POST /api/v1/groups/prod/rollback '{"snapshot_version":1}'
check "... nothing written" [ "$(counts)" = "$BEFORE" ]
last_row group.rollback
check "... audit row: denied, resource prod, the scope edge-*" \
    jtrue 'j.result === "denied" && j.status_code === 403 && j.resource_id === "prod" && j.details.scope.groups.join() === "edge-*" && j.details.scope.outside.join() === "prod"'
call_error "edge-operator: POST /configs/validate into prod" 403 permission_denied \
    api_json "$EDGE" POST /api/v1/configs/validate "{\"groups\":[\"prod\"],\"spec\":$(api_spec 10090 q.example)}"

# ------------------------------------------------------------------ writes inside the scope
call_status "edge-operator: POST /configs into edge-b" 201 \
    api_json "$EDGE" POST /api/v1/configs "$(api_config_body b edge-b "$(api_spec 10091 b.example)")"
EDGE_B=$(jv .id)
last_row config.create
check "... audit row: success, naming the rule and its groups" \
    jtrue "j.result === 'success' && j.resource_id === '$EDGE_B' && j.details.scope.role === 'edge-operator' && j.details.scope.permission === 0 && j.details.scope.groups.join() === 'edge-*'"
call_status "edge-operator: PUT its edge-a config: a new port, moved to edge-a and edge-b" 200 \
    api_json "$EDGE" PUT "/api/v1/configs/$EDGE_CFG" "{\"groups\":[\"edge-a\",\"edge-b\"],\"spec\":$(api_spec 10083 e.example)}"
check "... the config is in edge-a and edge-b" [ "$(groups_of "$EDGE_CFG")" = "edge-a,edge-b" ]
call_status "edge-operator: rollback of its config to version 1" 200 \
    api_json "$EDGE" POST "/api/v1/configs/$EDGE_CFG/rollback" '{"version":1}'
call_status "edge-operator: POST /groups/edge-a/rollback to snapshot 1" 200 \
    api_json "$EDGE" POST /api/v1/groups/edge-a/rollback '{"snapshot_version":1}'
call_status "edge-operator: POST /configs/validate into edge-c" 200 \
    api_json "$EDGE" POST /api/v1/configs/validate "{\"groups\":[\"edge-c\"],\"spec\":$(api_spec 10092 c.example)}"

# ------------------------------------------------------------------ rollouts
sql "INSERT INTO proxy_nodes (node_id, group_name, connected, last_seen) VALUES
       ('prod-1', 'prod', true, now()), ('edge-b-1', 'edge-b', true, now())" >/dev/null
APPLY='{"version":1,"strategy":{"type":"all_at_once"},"wave_timeout":"1h","reason":"scope"}'
call_error "edge-operator: a rollout of prod's config" 403 permission_denied \
    api_json "$EDGE" POST "/api/v1/configs/$PROD/apply" "$APPLY"
check "... no deployment" [ "$(sql "SELECT count(*) FROM deployments")" = 0 ]
call_status "edge-operator: a rollout of its edge-b config" 201 api_json "$EDGE" POST "/api/v1/configs/$EDGE_B/apply" "$APPLY"
EDGE_DEP=$(jv .id)
call_status "admin: a rollout of prod's config" 201 api_json "$ADMIN" POST "/api/v1/configs/$PROD/apply" "$APPLY"
PROD_DEP=$(jv .id)
call_error "edge-operator: pausing prod's rollout" 403 permission_denied \
    api_call "$EDGE" POST "/api/v1/deployments/$PROD_DEP/pause"
check "... the rollout is not paused" [ "$(sql "SELECT state FROM deployments WHERE id = '$PROD_DEP'")" != paused ]

# ------------------------------------------------------------------ lists and reads
# listed WHO TOKEN PATH WHAT EXPR: GET PATH as WHO answers 200 and EXPR (over j) holds.
listed() {
    call_status "$1: GET ${3#/api/v1}" 200 api_call "$2" GET "$3"
    check "... $4" jtrue "$5"
}
listed edge-operator "$EDGE" /api/v1/configs "only the configs of edge-* groups" \
    "j.items.map(c => c.id).sort().join() === ['$EDGE_CFG', '$EDGE_B'].sort().join()"
listed admin "$ADMIN" /api/v1/configs "all three" 'j.items.length === 3'
listed edge-operator "$EDGE" /api/v1/groups "edge-a and edge-b, not prod" \
    'j.items.map(g => g.name).join() === "edge-a,edge-b"'
listed admin "$ADMIN" /api/v1/groups "prod too" 'j.items.map(g => g.name).includes("prod")'
listed edge-operator "$EDGE" /api/v1/snapshots "only snapshots of edge-* groups" \
    'j.items.length > 0 && j.items.every(s => s.group.startsWith("edge-"))'
listed edge-operator "$EDGE" '/api/v1/snapshots?group=prod' "none" 'j.items.length === 0'
listed edge-operator "$EDGE" /api/v1/deployments "only the edge-b rollout" \
    "j.items.map(d => d.id).join() === '$EDGE_DEP'"
listed admin "$ADMIN" /api/v1/deployments "both" 'j.items.length === 2'
listed edge-operator "$EDGE" /api/v1/proxies "only edge-b-1" \
    'j.items.map(n => n.node_id).join() === "edge-b-1"'
listed admin "$ADMIN" /api/v1/proxies "both" 'j.items.length === 2'

PROD_SNAP=$(sql "SELECT id FROM snapshots WHERE group_name = 'prod' ORDER BY id LIMIT 1")
call_error "edge-operator: GET prod's config" 404 not_found api_call "$EDGE" GET "/api/v1/configs/$PROD"
call_error "edge-operator: GET prod's config versions" 404 not_found api_call "$EDGE" GET "/api/v1/configs/$PROD/versions"
call_error "edge-operator: GET a snapshot of prod" 404 not_found api_call "$EDGE" GET "/api/v1/snapshots/$PROD_SNAP"
call_error "edge-operator: GET prod's rollout" 404 not_found api_call "$EDGE" GET "/api/v1/deployments/$PROD_DEP"
call_error "edge-operator: GET proxy prod-1" 404 not_found api_call "$EDGE" GET /api/v1/proxies/prod-1
call_error "edge-operator: GET /groups/prod" 403 permission_denied api_call "$EDGE" GET /api/v1/groups/prod
call_status "edge-operator: GET its config" 200 api_call "$EDGE" GET "/api/v1/configs/$EDGE_CFG"
call_status "edge-operator: GET proxy edge-b-1" 200 api_call "$EDGE" GET /api/v1/proxies/edge-b-1
api_stop

# ------------------------------------------------------------------ policies that never match
# refused NAME WANT YAML-OF-ONE-PERMISSION: the daemon does not start with it, and its
# error names role "ops" and the pattern.
refused() {
    printf 'roles:\n  - name: ops\n    permissions:\n%s\n' "$3" >"$WORK/bad-$1.yaml"
    SEXTANT_AUTH_POLICY_FILE="$WORK/bad-$1.yaml" "$BIN" serve >"$WORK/bad-$1.log" 2>&1
    check "$1: the start is refused (exit 1)" [ $? -eq 1 ]
    check "$1: the error names the role and the pattern" \
        bash -c "grep -F 'role ops' '$WORK/bad-$1.log' | grep -qF '$2'"
}
refused snapshot-id-pattern '"edge-*"' '      - resource: "snapshots/edge-*"
        actions: [read]'
refused config-id-pattern '"prod*"' '      - resource: "configs/prod*"
        actions: [read]'
refused group-glob '"edge *"' '      - resource: configs
        actions: [read]
        groups: ["edge *"]'
refused unknown-resource '"config"' '      - resource: config
        actions: [read]'
refused groups-on-audit 'audit' '      - resource: audit
        actions: [read]
        groups: ["edge-*"]'
refused namespace-glob '"Team_A"' '      - resource: configs
        actions: [read]
        namespaces: ["Team_A"]'

finish
