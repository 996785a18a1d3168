/*
 * gw_sextant.c — Sextant's own policies (sextant.dev/v1alpha1): BackendLBPolicy,
 * AIService, TokenPolicy and WasmPlugin, what they give the IR backends of the Services
 * they target, and their status.ancestors.
 *
 * Each policy targets Services, Gateways or HTTP/GRPC routes of its namespace
 * (targetRefs; where it attaches and which policy wins a backend: gw_sextant_attach.c)
 * and gives the IR backends it reaches one field: load_balancing (BackendLBPolicy),
 * ai_service (AIService), token_policy (TokenPolicy), wasm_plugin (WasmPlugin).
 *
 * Data planes: what a policy gives must be taken by every data plane of the Gateway's
 * group (options.group_planes; README "Data planes"): load balancing by all, an AI
 * service by control only, a Wasm plugin by envoy and control when it has no hooks and
 * no memory or time limits (else by control only), a token policy by all when Envoy's request
 * rate says it (requestsPerMinute, scope proxy, onLimit reject, no token counts), else by
 * control only. A policy a group cannot take is left out of that Gateway's spec (the rest
 * of the spec is served) and its ancestor entry for that Gateway is Accepted=False,
 * Invalid, naming the group and its data planes.
 *
 * Status: status.ancestors holds, for each Gateway of ours where the policy reaches a
 * backend, that it targets, or that is a parent of a route it targets, an entry
 * (ancestorRef the Gateway) with Accepted (False: Invalid for the group's data planes,
 * Conflicted when another policy applies to every backend it reaches there); for each
 * target that does not exist an entry whose ancestorRef is that target, Accepted=False
 * TargetNotFound; for a policy no Gateway uses that cannot be applied (its fields out of
 * range, a target of another kind or namespace) an entry per target with Accepted=False
 * Invalid.
 * Entries of other controllers are kept as they were.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

/* The largest values the IR's Envoy translation takes (translate_cluster.c). */
#define LB_MAX_RING_SIZE    8388608LL
#define LB_MAX_MAGLEV_TABLE 5000011LL

static const struct {
    gw_kind kind;
    const char *name;    /* the Kubernetes kind */
    const char *field;   /* the IR BackendCluster field */
    const char *feature; /* how the data-plane refusal names it */
} KINDS[GW_SX_COUNT] = {
    [GW_SX_LB] = {GW_BACKEND_LB_POLICY, "BackendLBPolicy", "load_balancing", "load balancing"},
    [GW_SX_AI] = {GW_AI_SERVICE, "AIService", "ai_service", "AI services"},
    [GW_SX_TOKEN] = {GW_TOKEN_POLICY, "TokenPolicy", "token_policy",
                     "token counts, scopes other than proxy and actions other than reject"},
    [GW_SX_WASM] = {GW_WASM_PLUGIN, "WasmPlugin", "wasm_plugin", "Wasm plugins"},
};

static int cmp_pol(const void *a, const void *b)
{
    const gw_sxp *x = a, *y = b;
    if (x->sk != y->sk)
        return x->sk < y->sk ? -1 : 1;
    int k = strcmp(x->created, y->created);
    if (k == 0)
        k = strcmp(x->obj->ns, y->obj->ns);
    return k != 0 ? k : strcmp(x->obj->name, y->obj->name);
}

static bool prime(long long n)
{
    if (n < 2)
        return false;
    for (long long d = 2; d * d <= n; d++)
        if (n % d == 0)
            return false;
    return true;
}

static bool one_of(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

/* ---------------------------------------------------------------- judging each kind */

static const char *judge_lb(gw_ctx *c, const json_t *spec, json_t *ir)
{
    static const char *const algos[][2] = {
        {"RoundRobin", "LOAD_BALANCING_ALGORITHM_ROUND_ROBIN"},
        {"LeastRequest", "LOAD_BALANCING_ALGORITHM_LEAST_REQUEST"},
        {"Random", "LOAD_BALANCING_ALGORITHM_RANDOM"},
        {"RingHash", "LOAD_BALANCING_ALGORITHM_RING_HASH"},
        {"Maglev", "LOAD_BALANCING_ALGORITHM_MAGLEV"},
    };
    static const char *const hashes[] = {"Header", "Cookie", "SourceIP", "QueryParameter", NULL};
    const char *algo = gw_str(spec, "algorithm"), *ir_algo = NULL;
    for (size_t i = 0; algo && i < sizeof algos / sizeof algos[0]; i++)
        if (strcmp(algo, algos[i][0]) == 0)
            ir_algo = algos[i][1];
    const char *hash_on = gw_str(spec, "hashOn"), *hash_key = gw_str(spec, "hashKey");
    long long ring = 0, maglev = 0;
    bool has_ring = gw_int(spec, "minimumRingSize", &ring);
    bool has_maglev = gw_int(spec, "maglevTableSize", &maglev);
    if (ir_algo == NULL)
        return gw_printf(c,
                         "spec.algorithm \"%s\" is not one of RoundRobin, LeastRequest, "
                         "Random, RingHash, Maglev",
                         algo ? algo : "");
    bool hashing = strcmp(algo, "RingHash") == 0 || strcmp(algo, "Maglev") == 0;
    if (hash_on && !hashing)
        return "spec.hashOn needs algorithm RingHash or Maglev";
    if (hash_on && !one_of(hash_on, hashes))
        return "spec.hashOn must be Header, Cookie, SourceIP or QueryParameter";
    if (hash_on && strcmp(hash_on, "SourceIP") != 0 && (hash_key == NULL || !*hash_key))
        return "spec.hashKey names the header, cookie or query parameter to hash";
    if (hash_key && (hash_on == NULL || strcmp(hash_on, "SourceIP") == 0))
        return "spec.hashKey needs hashOn Header, Cookie or QueryParameter";
    if (has_ring && (strcmp(algo, "RingHash") != 0 || ring < 1 || ring > LB_MAX_RING_SIZE))
        return "spec.minimumRingSize needs algorithm RingHash and must be between 1 and 8388608";
    if (has_maglev &&
        (strcmp(algo, "Maglev") != 0 || maglev > LB_MAX_MAGLEV_TABLE || !prime(maglev)))
        return "spec.maglevTableSize needs algorithm Maglev and must be a prime number at most "
               "5000011";
    json_object_set_new(ir, "algorithm", json_string(ir_algo));
    if (hash_on)
        json_object_set_new(ir, "hash_on", json_string(hash_on));
    if (hash_key)
        json_object_set_new(ir, "hash_key", json_string(hash_key));
    if (has_ring)
        json_object_set_new(ir, "minimum_ring_size", json_integer(ring));
    if (has_maglev)
        json_object_set_new(ir, "maglev_table_size", json_integer(maglev));
    return NULL;
}

static const char *judge_ai(gw_ctx *c, const json_t *spec, json_t *ir)
{
    static const char *const providers[] = {"openai", "anthropic", "ollama", NULL};
    static const char *const auths[] = {"APIKey", "Bearer", "None", NULL};
    const char *provider = gw_str(spec, "provider");
    if (!one_of(provider, providers))
        return gw_printf(c, "spec.provider \"%s\" is not one of openai, anthropic, ollama",
                         provider ? provider : "");
    json_object_set_new(ir, "provider", json_string(provider));
    const char *format = gw_str(spec, "format"), *model = gw_str(spec, "model");
    if (format)
        json_object_set_new(ir, "format", json_string(format));
    if (model)
        json_object_set_new(ir, "model", json_string(model));
    const char *timeout = gw_str(spec, "timeout");
    if (timeout) {
        int64_t ms;
        if (!gw_duration_ms(timeout, &ms) || ms <= 0)
            return gw_printf(c, "spec.timeout \"%s\" is not a positive duration", timeout);
        json_object_set_new(ir, "timeout", gw_duration_json(ms));
    }
    const json_t *auth = gw_get(spec, "auth");
    if (auth) {
        const char *type = gw_str(auth, "type");
        const json_t *ref = gw_get(auth, "secretRef");
        if (!one_of(type, auths))
            return "spec.auth.type must be APIKey, Bearer or None";
        if ((strcmp(type, "None") == 0) != (ref == NULL))
            return "spec.auth: APIKey and Bearer take a secretRef, None none";
        json_t *a = json_pack("{s:s}", "type", type);
        if (gw_str(auth, "headerName"))
            json_object_set_new(a, "header_name", json_string(gw_str(auth, "headerName")));
        if (ref) {
            json_object_set_new(a, "secret_ref", json_string(gw_str_or(ref, "name", "")));
            if (gw_str(ref, "key"))
                json_object_set_new(a, "secret_key", json_string(gw_str(ref, "key")));
        }
        json_object_set_new(ir, "auth", a);
    }
    return NULL;
}

/* Reads a non-negative integer field into ir (under irname) if present; false when it is
 * out of [lo, hi]. */
static bool int_field(const json_t *spec, const char *name, json_t *ir, const char *irname,
                      long long lo, long long hi)
{
    long long v;
    if (!gw_int(spec, name, &v))
        return gw_get(spec, name) == NULL;
    if (v < lo || v > hi)
        return false;
    json_object_set_new(ir, irname, json_integer(v));
    return true;
}

static const char *judge_token(gw_ctx *c, const json_t *spec, json_t *ir)
{
    (void)c;
    static const char *const scopes[] = {"proxy", "route", "client", "global", NULL};
    static const char *const actions[] = {"reject", "queue", "log", NULL};
    if (!int_field(spec, "tokensPerMinute", ir, "tokens_per_minute", 1, 1000000000000LL) ||
        !int_field(spec, "tokensPerHour", ir, "tokens_per_hour", 1, 1000000000000LL) ||
        !int_field(spec, "requestsPerMinute", ir, "requests_per_minute", 1, 1000000000LL))
        return "spec.tokensPerMinute, tokensPerHour and requestsPerMinute must be positive "
               "integers within the schema's range";
    if (json_object_size(ir) == 0)
        return "a TokenPolicy sets at least one of tokensPerMinute, tokensPerHour, "
               "requestsPerMinute";
    const char *scope = gw_str(spec, "scope"), *on_limit = gw_str(spec, "onLimit");
    if (scope && !one_of(scope, scopes))
        return "spec.scope must be proxy, route, client or global";
    if (on_limit && !one_of(on_limit, actions))
        return "spec.onLimit must be reject, queue or log";
    const json_t *burst = gw_get(spec, "burst");
    if (burst &&
        (!json_is_number(burst) || json_number_value(burst) < 1 || json_number_value(burst) > 100))
        return "spec.burst must be a number from 1 to 100";
    if (scope)
        json_object_set_new(ir, "scope", json_string(scope));
    if (on_limit)
        json_object_set_new(ir, "on_limit", json_string(on_limit));
    if (burst)
        json_object_set_new(ir, "burst", json_real(json_number_value(burst)));
    return NULL;
}

static const char *judge_wasm(gw_ctx *c, const gw_obj *o, const json_t *spec, json_t *ir)
{
    const char *b64 = gw_str(spec, "module");
    const json_t *ref = gw_get(spec, "moduleRef");
    if ((b64 != NULL) == (ref != NULL))
        return "a WasmPlugin has exactly one of spec.module and spec.moduleRef";
    if (ref) {
        const char *name = gw_str_or(ref, "name", ""), *key = gw_str_or(ref, "key", "");
        const gw_obj *cm = gw_find(&c->idx[GW_CONFIG_MAP], o->ns, name);
        if (cm == NULL)
            return gw_printf(c, "spec.moduleRef: ConfigMap %s/%s does not exist", o->ns, name);
        b64 = gw_str(gw_get(cm->o, "binaryData"), key);
        if (b64 == NULL)
            return gw_printf(c, "spec.moduleRef: ConfigMap %s/%s has no binaryData key %s", o->ns,
                             name, key);
    }
    size_t len = 0;
    const char *bytes = gw_base64(c, b64, &len);
    if (bytes == NULL || len == 0 || len > 1048576)
        return "the module is not base64 of 1 byte to 1 MiB";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    if (!EVP_Digest(bytes, len, md, &mdlen, EVP_sha256(), NULL))
        return "the module's SHA-256 could not be computed";
    for (unsigned i = 0; i < mdlen; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    const char *want = gw_str_or(spec, "sha256", "");
    if (strcmp(want, hex) != 0)
        return gw_printf(c, "spec.sha256 %s does not match the module's SHA-256 %s", want, hex);
    json_object_set_new(ir, "name", json_string(o->name));
    json_object_set_new(ir, "namespace", json_string(o->ns));
    json_object_set_new(ir, "wasm_bytes", json_string(b64));
    json_object_set_new(ir, "sha256", json_string(hex));
    size_t nh;
    const json_t *hooks = gw_array(spec, "hooks", &nh);
    if (nh)
        json_object_set_new(ir, "hooks", json_deep_copy(hooks));
    const json_t *config = gw_get(spec, "config");
    if (config) {
        char *text = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        json_object_set_new(ir, "config_json", json_string(text ? text : "null"));
        free(text);
    }
    const json_t *sb = gw_get(spec, "sandbox");
    if (sb) {
        json_t *s = json_object();
        bool ok = int_field(sb, "maxMemoryBytes", s, "max_memory_bytes", 65536, 4294967296LL) &&
                  int_field(sb, "maxExecutionTimeMs", s, "max_execution_time_ms", 1, 60000);
        if (json_is_true(gw_get(sb, "allowNetwork")))
            json_object_set_new(s, "allow_network", json_true());
        if (json_is_true(gw_get(sb, "allowFileSystem")))
            json_object_set_new(s, "allow_file_system", json_true());
        json_object_set_new(ir, "sandbox", s);
        if (!ok)
            return "spec.sandbox: maxMemoryBytes must be 65536 to 4294967296, "
                   "maxExecutionTimeMs 1 to 60000";
    }
    return NULL;
}

/* The data planes that take what p gives (GW_PLANE_* bits). */
static unsigned planes_taking(const gw_sxp *p)
{
    if (p->sk == GW_SX_LB)
        return GW_PLANES_ALL;
    if (p->sk == GW_SX_WASM) {
        /* Envoy runs a plugin in the backend's upstream filters, without hooks or
         * per-plugin limits; proxyless gRPC clients run none. */
        const json_t *sb = gw_get(p->ir, "sandbox");
        bool envoy = !gw_get(p->ir, "hooks") && !gw_get(sb, "max_memory_bytes") &&
                     !gw_get(sb, "max_execution_time_ms");
        return envoy ? GW_PLANE_ENVOY | GW_PLANE_CONTROL : GW_PLANE_CONTROL;
    }
    if (p->sk != GW_SX_TOKEN)
        return GW_PLANE_CONTROL;
    const char *scope = gw_str(p->ir, "scope"), *act = gw_str(p->ir, "on_limit");
    bool envoy = gw_get(p->ir, "requests_per_minute") && !gw_get(p->ir, "tokens_per_minute") &&
                 !gw_get(p->ir, "tokens_per_hour") && (!scope || strcmp(scope, "proxy") == 0) &&
                 (!act || strcmp(act, "reject") == 0);
    return envoy ? GW_PLANES_ALL : GW_PLANE_CONTROL;
}

static void judge(gw_ctx *c, gw_sxp *p)
{
    const json_t *spec = gw_get(p->obj->o, "spec");
    json_t *ir = json_object();
    const char *why = NULL;
    switch (p->sk) {
    case GW_SX_LB:
        why = judge_lb(c, spec, ir);
        break;
    case GW_SX_AI:
        why = judge_ai(c, spec, ir);
        break;
    case GW_SX_TOKEN:
        why = judge_token(c, spec, ir);
        break;
    default:
        why = judge_wasm(c, p->obj, spec, ir);
        break;
    }
    if (why) {
        json_decref(ir);
        p->accepted = (gw_cond){"Accepted", false, "Invalid", why};
        return;
    }
    p->ir = ir;
    p->takes = planes_taking(p);
    p->accepted = (gw_cond){"Accepted", true, "Accepted", "the policy is accepted"};
}

void gw_sx_build(gw_ctx *c)
{
    size_t total = 0;
    for (int k = 0; k < GW_SX_COUNT; k++)
        total += c->idx[KINDS[k].kind].n;
    c->sxps = sx_arena_alloc(c->a, (total + 1) * sizeof *c->sxps);
    c->sx_targets = json_object();
    c->sx_uses = json_object();
    for (int k = 0; k < GW_SX_COUNT; k++) {
        const gw_index *x = &c->idx[KINDS[k].kind];
        for (size_t i = 0; i < x->n; i++) {
            gw_sxp *p = &c->sxps[c->n_sxps++];
            memset(p, 0, sizeof *p);
            p->sk = (gw_sx_kind)k;
            p->obj = &x->v[i];
            p->created = gw_str_or(gw_get(x->v[i].o, "metadata"), "creationTimestamp", "");
        }
    }
    if (c->n_sxps > 1)
        qsort(c->sxps, c->n_sxps, sizeof *c->sxps, cmp_pol);
    for (size_t i = 0; i < c->n_sxps; i++) {
        gw_sxp *p = &c->sxps[i];
        judge(c, p);
        gw_sx_targets(c, i);
    }
}

/* The data planes of group (options.group_planes; the default when not listed or 0). */
static unsigned group_planes(const gw_ctx *c, const char *group)
{
    const gw_options *o = &c->in->options;
    unsigned planes = 0;
    for (size_t i = 0; i < o->n_group_planes && planes == 0; i++)
        if (o->group_planes[i].group && strcmp(o->group_planes[i].group, group) == 0)
            planes = o->group_planes[i].planes;
    if (planes == 0)
        planes = o->default_planes;
    return planes ? planes : GW_PLANES_ALL;
}

/* The names of the planes (GW_PLANE_* bits) into buf, comma-separated. */
static const char *planes_text(unsigned planes, char *buf, size_t n)
{
    static const char *const pn[] = {"envoy", "grpc", "control"};
    size_t used = 0;
    buf[0] = '\0';
    for (int bit = 0; bit < 3; bit++)
        if ((planes & (1u << bit)) && used < n)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", pn[bit]);
    return buf;
}

const char *gw_sx_kind_name(int k)
{
    return KINDS[k].name;
}

const char *gw_sx_field(int k)
{
    return KINDS[k].field;
}

const char *gw_sx_refusal(gw_ctx *c, const gw_sxp *p, size_t gi)
{
    unsigned planes = group_planes(c, c->gws[gi].group);
    if (p->ir == NULL || (planes & ~p->takes) == 0)
        return NULL;
    char names[64], takes[64];
    return gw_printf(c,
                     "group %s serves %s, and only %s data planes take %s: left out of Gateway "
                     "%s/%s (set the group's data planes to %s to serve it)",
                     c->gws[gi].group, planes_text(planes, names, sizeof names),
                     planes_text(p->takes, takes, sizeof takes), KINDS[p->sk].feature,
                     c->gws[gi].obj->ns, c->gws[gi].obj->name, takes);
}

/* ---------------------------------------------------------------- status */

static int cmp_anc(const void *a, const void *b)
{
    size_t x = ((const gw_sx_anc *)a)->gi, y = ((const gw_sx_anc *)b)->gi;
    return x < y ? -1 : x > y;
}

static int cmp_by_obj(const void *a, const void *b)
{
    const gw_sxp *x = *(gw_sxp *const *)a, *y = *(gw_sxp *const *)b;
    if (x->sk != y->sk)
        return x->sk < y->sk ? -1 : 1;
    return x->obj < y->obj ? -1 : x->obj > y->obj;
}

/* The conditions of our previous entry for ancestorRef (group, kind, ns, name). */
static const json_t *prev_conditions(gw_ctx *c, const json_t *old, size_t n, const char *group,
                                     const char *kind, const char *ns, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(old, i), *ref = gw_get(e, "ancestorRef");
        if (gw_status_is_ours(c, e) && strcmp(gw_str_or(ref, "group", GW_GROUP), group) == 0 &&
            strcmp(gw_str_or(ref, "kind", "Gateway"), kind) == 0 &&
            strcmp(gw_str_or(ref, "namespace", ""), ns) == 0 &&
            strcmp(gw_str_or(ref, "name", ""), name) == 0)
            return gw_get(e, "conditions");
    }
    return NULL;
}

static void push_entry(gw_ctx *c, json_t *ancestors, const json_t *old, size_t n, int64_t gen,
                       const char *group, const char *kind, const char *ns, const char *name,
                       gw_cond cond)
{
    /* One entry per ancestorRef (the list is a map keyed by it and the controller): the
     * first said of a target stays. */
    size_t i;
    const json_t *e;
    json_array_foreach(ancestors, i, e)
    {
        const json_t *ref = gw_get(e, "ancestorRef");
        if (strcmp(gw_str_or(e, "controllerName", ""), c->controller) == 0 &&
            strcmp(gw_str_or(ref, "group", ""), group) == 0 &&
            strcmp(gw_str_or(ref, "kind", ""), kind) == 0 &&
            strcmp(gw_str_or(ref, "namespace", ""), ns) == 0 &&
            strcmp(gw_str_or(ref, "name", ""), name) == 0)
            return;
    }
    const json_t *pconds = prev_conditions(c, old, n, group, kind, ns, name);
    json_array_append_new(
        ancestors, json_pack("{s:{s:s,s:s,s:s,s:s},s:s,s:o}", "ancestorRef", "group", group, "kind",
                             kind, "namespace", ns, "name", name, "controllerName", c->controller,
                             "conditions", gw_conditions(&cond, 1, pconds, gen, c->now_text)));
}

void gw_sx_status(gw_ctx *c, gw_output *out, size_t *cap)
{
    gw_sxp **order = sx_malloc((c->n_sxps + 1) * sizeof *order);
    for (size_t i = 0; i < c->n_sxps; i++)
        order[i] = &c->sxps[i];
    qsort(order, c->n_sxps, sizeof *order, cmp_by_obj);
    for (size_t oi = 0; oi < c->n_sxps; oi++) {
        gw_sxp *p = order[oi];
        const json_t *prev = gw_get(p->obj->o, "status");
        size_t n;
        const json_t *old = gw_array(prev, "ancestors", &n);
        json_t *ancestors = gw_status_others(c, old, n, NULL);
        int64_t gen = gw_generation(p->obj->o);
        gw_sx_target_ancestors(c, p);
        if (p->n_gws > 1)
            qsort(p->gws, p->n_gws, sizeof *p->gws, cmp_anc);
        for (size_t k = 0; k < p->n_gws; k++) {
            const gw_gw *g = &c->gws[p->gws[k].gi];
            const gw_sx_anc *a = &p->gws[k];
            gw_cond cond = p->accepted;
            if (cond.ok && a->refused)
                cond = (gw_cond){"Accepted", false, "Invalid", a->refused};
            else if (cond.ok && !a->applied && a->lost_to >= 0)
                cond = (gw_cond){
                    "Accepted", false, "Conflicted",
                    gw_printf(c,
                              "%s %s/%s applies instead to every backend this policy reaches "
                              "in Gateway %s/%s (a more specific target, or older)",
                              KINDS[p->sk].name, c->sxps[a->lost_to].obj->ns,
                              c->sxps[a->lost_to].obj->name, g->obj->ns, g->obj->name)};
            push_entry(c, ancestors, old, n, gen, GW_GROUP, "Gateway", g->obj->ns, g->obj->name,
                       cond);
        }
        for (size_t k = 0; k < p->n_missing; k++) {
            const gw_sx_missing *m = &p->missing[k];
            push_entry(c, ancestors, old, n, gen, m->group, m->kind, p->obj->ns, m->name,
                       (gw_cond){"Accepted", false, "TargetNotFound", m->message});
        }
        if (p->n_gws == 0 && !p->accepted.ok) {
            /* Invalid or Conflicted with no Gateway using it: said on each target. */
            size_t nt;
            const json_t *targets = gw_array(gw_get(p->obj->o, "spec"), "targetRefs", &nt);
            for (size_t k = 0; k < nt && json_array_size(ancestors) < 16; k++) {
                const json_t *t = json_array_get(targets, k);
                const char *name = gw_str_or(t, "name", "");
                bool missing = false;
                for (size_t m = 0; m < p->n_missing && !missing; m++)
                    missing = strcmp(p->missing[m].name, name) == 0 &&
                              strcmp(p->missing[m].kind, gw_str_or(t, "kind", "")) == 0;
                if (!missing && *name)
                    push_entry(c, ancestors, old, n, gen, gw_str_or(t, "group", ""),
                               gw_str_or(t, "kind", "Service"),
                               gw_str_or(t, "namespace", p->obj->ns), name, p->accepted);
            }
        }
        while (json_array_size(ancestors) > 16) /* the schema's maxItems */
            json_array_remove(ancestors, json_array_size(ancestors) - 1);
        gw_status_push(out, cap, KINDS[p->sk].kind, p->obj,
                       gw_status_set(prev, "ancestors", ancestors));
    }
    sx_free(order);
}

void gw_sx_free(gw_ctx *c)
{
    for (size_t i = 0; i < c->n_sxps; i++)
        json_decref(c->sxps[i].ir);
    json_decref(c->sx_targets);
    json_decref(c->sx_uses);
}
