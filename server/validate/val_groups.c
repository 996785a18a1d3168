/*
 * val_groups.c — the rule for proxy group names, which every way of naming a group
 * (a config's groups, a group's rollback, a published snapshot, the Kubernetes group
 * template) is checked against.
 *
 * A group name travels further than most names: into URLs (a path segment of the REST
 * API and of the web UI, where a "/" is sent as %2F), RBAC id patterns (where '*' is
 * the wildcard), snapshot ids ("<group>:<version>"), log lines and metrics. The rule
 * keeps to characters that mean nothing special in any of them, plus "/" so that the
 * default group of a Kubernetes Gateway, "<namespace>/<gateway>", is one; "." and ".."
 * alone are refused because a client resolves them away in a URL before sending it.
 */
#include <stdio.h>
#include <string.h>

#include "server/validate/val_internal.h"

const char *val_group_name_problem(const char *name)
{
    if (name == NULL || name[0] == '\0')
        return "must not be empty";
    if (strlen(name) > VAL_GROUP_NAME_MAX)
        return "must be at most 253 bytes";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "must not be \".\" or \"..\"";
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("-_.:/", c)))
            return "may hold only ASCII letters, digits and the characters - _ . : /";
    }
    return NULL;
}

int val_check_groups(const char *const *groups, size_t n, val_result *out, sx_err *err)
{
    val_result local = {0};
    val_ctx c = {.out = out ? out : &local, .stage = VAL_SCHEMA};
    size_t bad = 0;
    char first[VAL_PATH_MAX + 128] = "";
    for (size_t i = 0; i < n; i++) {
        const char *why = val_group_name_problem(groups[i]);
        if (why == NULL)
            continue;
        char path[VAL_PATH_MAX];
        val_add(&c, val_path(path, "groups[%zu]", i), "%s", why);
        if (bad++ == 0)
            snprintf(first, sizeof(first), "%s: %s", path, why);
    }
    val_result_free(&local);
    if (bad == 0)
        return 0;
    sx_err_set(err, SX_EVALIDATION, "configuration is invalid: %zu problem%s", bad,
               bad == 1 ? "" : "s");
    sx_err_detail(err, "%s", first);
    return SX_EVALIDATION;
}

int val_check_group_name(const char *group, sx_err *err)
{
    const char *why = val_group_name_problem(group);
    return why ? sx_err_set(err, SX_EINVAL, "invalid proxy group name: %s", why) : 0;
}
