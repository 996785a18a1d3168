/*
 * config_k8s.c — the Kubernetes source's configuration keys: the address list parser,
 * the rules between the k8s.* keys, and the expansion of the group template.
 *
 * Part of the configuration module (see config_internal.h): the keys themselves are rows
 * of config_keys.c like every other, parsed by the loader; what is particular to the
 * Kubernetes keys lives here so that the loader stays about loading. The rules follow
 * the Gateway API's own: a controllerName is a domain-prefixed path, a Hostname address
 * a lowercase DNS name, an IPAddress address an IPv4 or IPv6 address; a value that the
 * API server would refuse in a status write is refused at start instead.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/config_internal.h"
#include "server/validate/validate.h"

#define GROUP_NAME_MAX      253
#define CONTROLLER_NAME_MAX 253

/* ------------------------------------------------------------------ names */

/* A DNS-1123 label run from s[0..n): lowercase letters, digits and '-', not starting or
 * ending with '-', 1..63 bytes. */
static bool dns_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

/* A DNS-1123 subdomain s[0..n): dot-separated labels, at most 253 bytes. */
static bool dns_subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!dns_label(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

/* A Gateway API controllerName: "<domain>/<path>", such as
 * "sextant.dev/gateway-controller". Returns NULL, or why it is not one. */
static const char *controller_name_problem(const char *s)
{
    if (s == NULL || s[0] == '\0')
        return "must not be empty";
    if (strlen(s) > CONTROLLER_NAME_MAX)
        return "must be at most 253 bytes";
    const char *slash = strchr(s, '/');
    if (slash == NULL)
        return "must be a domain-prefixed path, such as sextant.dev/gateway-controller";
    if (!dns_subdomain(s, (size_t)(slash - s)))
        return "must start with a lowercase DNS domain, such as sextant.dev/gateway-controller";
    if (slash[1] == '\0')
        return "needs a path after the domain, such as sextant.dev/gateway-controller";
    for (const char *p = slash + 1; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/-._~%!$&'()*+,;=:", *p))
            return "the path after the domain may hold only letters, digits and "
                   "/-._~%!$&'()*+,;=:";
    return NULL;
}

/* ------------------------------------------------------------------ addresses */

void config_addresses_clear(config_addresses *l)
{
    for (size_t i = 0; i < l->count; i++)
        sx_free(l->items[i].value);
    sx_free(l->items);
    l->items = NULL;
    l->count = 0;
}

int config_parse_addresses(const char *s, config_addresses *out, char *why, size_t whylen)
{
    config_addresses l = {0};
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        char item[300];
        if ((size_t)(b - a) >= sizeof(item)) {
            snprintf(why, whylen, "an address is longer than 253 bytes");
            goto fail;
        }
        snprintf(item, sizeof(item), "%.*s", (int)(b - a), a);
        if (item[0] == '\0' && (comma || l.count > 0)) {
            snprintf(why, whylen, "an entry between commas is empty");
            goto fail;
        }
        if (item[0]) {
            unsigned char buf[sizeof(struct in6_addr)];
            bool ip = inet_pton(AF_INET, item, buf) == 1 || inet_pton(AF_INET6, item, buf) == 1;
            if (!ip && !dns_subdomain(item, strlen(item))) {
                char q[160];
                snprintf(why, whylen, "%s is neither an IP address nor a lowercase DNS host name",
                         config_quote(item, q, sizeof(q)));
                goto fail;
            }
            l.items = sx_realloc(l.items, (l.count + 1) * sizeof(*l.items));
            l.items[l.count++] = (config_address){sx_strdup(item), ip};
        }
        p = comma ? comma + 1 : end;
        if (comma && *p == '\0') {
            snprintf(why, whylen, "an entry between commas is empty");
            goto fail;
        }
    }
    *out = l;
    return 0;
fail:
    config_addresses_clear(&l);
    return SX_EINVAL;
}

/* ------------------------------------------------------------------ group template */

static const char PH_NAMESPACE[] = "<namespace>";
static const char PH_GATEWAY[] = "<gateway>";

/* Expands tpl with ns and gateway into out (n bytes); returns the length it needs (which
 * may be n or more, then out is cut), or -1 when tpl has a '<' that starts no known
 * placeholder or a '>' outside one, or a byte that is not printable or is a space. */
static long expand(const char *tpl, const char *ns, const char *gateway, char *out, size_t n)
{
    size_t len = 0;
    for (const char *p = tpl; *p;) {
        const char *with = NULL;
        size_t skip = 1;
        if (strncmp(p, PH_NAMESPACE, sizeof(PH_NAMESPACE) - 1) == 0) {
            with = ns;
            skip = sizeof(PH_NAMESPACE) - 1;
        } else if (strncmp(p, PH_GATEWAY, sizeof(PH_GATEWAY) - 1) == 0) {
            with = gateway;
            skip = sizeof(PH_GATEWAY) - 1;
        } else if (*p == '<' || *p == '>' || !isgraph((unsigned char)*p)) {
            return -1;
        }
        size_t wl = with ? strlen(with) : 1;
        for (size_t i = 0; i < wl; i++, len++)
            if (len + 1 < n)
                out[len] = with ? with[i] : *p;
        p += skip;
    }
    if (n > 0)
        out[len < n ? len : n - 1] = '\0';
    return (long)len;
}

int config_k8s_group(const char *tpl, const char *ns, const char *gateway, char *out, size_t n)
{
    long len = tpl && ns && gateway ? expand(tpl, ns, gateway, out, n) : -1;
    if (len <= 0 || len > GROUP_NAME_MAX || (size_t)len >= n) {
        if (n > 0)
            out[0] = '\0';
        return SX_EINVAL;
    }
    return 0;
}

/* ------------------------------------------------------------------ cross-key rules */

/* Reports msg about key path unless the key's own value was already refused. */
static void bad_key(loader *L, const char *path, const char *msg)
{
    int i = config_key_find(path);
    if (i >= 0 && !L->raw[i].failed)
        config_bad(L, (size_t)i, "%s", msg);
}

void config_check_k8s(loader *L)
{
    const sextant_config *c = L->cfg;
    const char *why = controller_name_problem(c->k8s.controller_name);
    if (why)
        bad_key(L, "k8s.controller_name", why);

    /* The template must be well-formed and keep the Gateways of a namespace apart;
     * without <namespace>, Gateways of one name in several namespaces share a group. */
    const char *tpl = c->k8s.group_template;
    char out[VAL_GROUP_NAME_MAX + 2]; /* one byte more than a group name may have */
    if (tpl == NULL || tpl[0] == '\0') {
        bad_key(L, "k8s.group_template",
                "must not be empty: use <namespace> and <gateway> for the Gateway's namespace "
                "and name, such as <namespace>/<gateway>");
    } else if (expand(tpl, "ns", "gw", out, sizeof(out)) < 0) {
        bad_key(L, "k8s.group_template",
                "may contain only the placeholders <namespace> and <gateway> and printable "
                "characters without spaces");
    } else if (strstr(tpl, PH_GATEWAY) == NULL) {
        bad_key(L, "k8s.group_template",
                "must contain <gateway>, so that every Gateway gets a proxy group of its own");
    } else if ((why = val_group_name_problem(out)) != NULL) {
        /* Kubernetes names are lowercase letters, digits, '-' and '.': only the rest of
         * the template can break the rule for group names (server/validate/validate.h). */
        char msg[256];
        snprintf(msg, sizeof(msg), "must make proxy group names, which %s", why);
        bad_key(L, "k8s.group_template", msg);
    }

    int i_delay = config_key_find("k8s.settle_delay");
    int i_max = config_key_find("k8s.settle_max");
    if (!L->raw[i_delay].failed && !L->raw[i_max].failed &&
        c->k8s.settle_max_ms < c->k8s.settle_delay_ms) {
        char d[32], m[32], msg[128];
        snprintf(msg, sizeof(msg), "must not be less than k8s.settle_delay (%s), got %s",
                 config_format_duration(c->k8s.settle_delay_ms, d, sizeof(d)),
                 config_format_duration(c->k8s.settle_max_ms, m, sizeof(m)));
        bad_key(L, "k8s.settle_max", msg);
    }
    if (c->k8s.watch_timeout_ms % 1000 != 0)
        bad_key(L, "k8s.watch_timeout",
                "must be a whole number of seconds (it is sent as timeoutSeconds)");
    if (c->k8s.resync_ms > 0 && c->k8s.resync_ms < 1000)
        bad_key(L, "k8s.resync", "must be 0 (never) or at least 1s");
}
