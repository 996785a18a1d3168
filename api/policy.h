/*
 * policy.h — the RBAC policy: which role may do which action on which resource.
 *
 * The file format (auth.policy_file; the built-in default is policy_builtin_yaml()),
 * shaped like the design's rbac-policies.yaml:
 *
 *   roles:
 *     - name: operator                 # a role, as named by the token's "role" claim
 *       permissions:                   # rules; a request is allowed when any rule matches
 *         - resource: configs          # a TYPE or TYPE/ID pattern
 *           actions: [read, create]    # action names, or "*" for every action
 *         - resource: "groups/edge-*"  # only the groups whose name starts with edge-
 *           actions: [rollback]
 *
 * A request asks about (role, resource type, resource id or none, action); the REST
 * routes name the type ("configs", "snapshots", "proxies", "groups", "deployments",
 * "replicas", "events", "audit", "auth") and the action ("read", "create", "update",
 * "delete", "rollback", "apply", ...), and the id is the route's {id}, {node_id} or
 * {group}. In patterns and actions "*" matches any run of characters. A pattern without
 * a slash is matched against the type alone, so it covers the type's collection and
 * every id ("*" covers everything). A pattern TYPE/ID needs a request with an id that
 * ID matches, except that an ID of exactly "*" also covers requests without an id, so
 * the design's "configs/" + "*" style means the same as "configs". There are only
 * grants, no denials: what no rule grants is refused. Role names are 1-64 of
 * [a-z0-9_-], unique. Unknown keys are errors (a misspelt key must not silently change
 * what is granted), and every error is reported with its line.
 *
 * Scoped rules. A rule may carry "groups:" (configs, deployments, snapshots, groups,
 * proxies) and "namespaces:" (configs) lists of glob patterns:
 *
 *         - resource: configs
 *           actions: [read, create, update]
 *           groups: ["edge-*"]              # every group of the object must match one
 *           namespaces: ["team-a-*"]        # and its namespace one of these
 *
 * Such a rule grants its actions only on the objects in its scope: an object whose every
 * group matches one of its group patterns (a config's groups, a deployment's groups, a
 * snapshot's, a proxy's or the group itself) and, with namespaces, whose namespace
 * matches one of those (an object without a namespace is outside). policy_allows answers
 * "may the role do this to some object" (what a route checks before its handler runs,
 * and what the UI is told); the handlers then ask policy_allows_object for each object a
 * request touches, or shows. For the other types (replicas, audit, events, ...) a scoped
 * rule grants nothing.
 *
 * The loader refuses any pattern that can never match, naming the role and the pattern:
 * a resource type that matches no known type, an id pattern that no id of the type can
 * match ("snapshots/edge-*": snapshot ids are integers; config and deployment ids are
 * UUIDs), groups or namespaces on a type that has none, and a group or namespace
 * pattern whose literal characters no valid name holds.
 */
#ifndef SX_API_POLICY_H
#define SX_API_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/err.h"
#include "server/base/fielderr.h"

/* The resource type of the private keys in configs and snapshots. Only a rule whose
 * resource is exactly "secrets" grants an action on it (no "*" pattern does): "secrets:
 * read" shows private keys in REST answers, which otherwise read "[redacted]"
 * (server/secrets.h). The built-in admin has it; operator and viewer do not. */
#define POLICY_SECRETS "secrets"

/* A loaded policy. Read-only once loaded, so any thread may consult it. */
typedef struct policy policy;

/* The YAML text of the built-in policy (viewer reads everything but private keys;
 * operator also changes configs, rolls back configs and groups, and does everything
 * with deployments; admin does everything and reads private keys). Static storage. */
const char *policy_builtin_yaml(void);

/* The built-in policy, parsed; never NULL (a parse failure is a bug and aborts). Free
 * with policy_free. */
policy *policy_builtin(void);

/*
 * Parses a policy from text[0..len), naming it name ("rbac.yaml") in errors. Returns 0
 * and *out (free with policy_free), or SX_EINVAL with *out NULL: err->message is the
 * first problem as "NAME:LINE: PATH: what" with a count of the others, and errs (NULL
 * allowed) receives every problem, its path "NAME:LINE" and its message "PATH: what".
 */
int policy_parse(const char *text, size_t len, const char *name, policy **out, sx_fielderrs *errs,
                 sx_err *err) SX_MUSTCHECK;

/* Reads and parses the file at path; as policy_parse, plus SX_EIO when it cannot be
 * read. */
int policy_load_file(const char *path, policy **out, sx_fielderrs *errs, sx_err *err) SX_MUSTCHECK;

/* NULL allowed. */
void policy_free(policy *p);

/* True when role is defined by the policy. */
bool policy_has_role(const policy *p, const char *role);

/* The role names, comma-separated, in file order, into out; returns out. */
const char *policy_role_names(const policy *p, char *out, size_t outlen);

/* True when role may do action on the resource type (and id; NULL or "" when the
 * request names none). Unknown roles may do nothing. */
bool policy_allows(const policy *p, const char *role, const char *resource_type,
                   const char *resource_id, const char *action);

/* What a scoped check is about: the groups an object belongs to (all of them; for a
 * change, before and after) and its namespace (NULL when it has none). Borrowed. */
typedef struct policy_object {
    const char *const *groups;
    size_t ngroups;
    const char *ns;
} policy_object;

/*
 * True when role may do action on the resource type (and id) for the object obj: an
 * unscoped rule grants it, or a scoped rule does whose scope covers obj. When scope is
 * not NULL it receives, for the audit, a new JSON object naming the scope that decided
 * when a scoped rule was involved (NULL when an unscoped rule allowed or no rule grants
 * the action at all): allowed, {"role", "permission": index of the rule in the role,
 * "groups"?, "namespaces"?}; refused, {"role", "groups": every group pattern of the
 * rules that grant the action, "namespaces": theirs, "outside": the object's groups
 * that a rule's patterns miss, "outside_namespace"?}.
 */
bool policy_allows_object(const policy *p, const char *role, const char *resource_type,
                          const char *resource_id, const char *action, const policy_object *obj,
                          json_t **scope);

#endif
