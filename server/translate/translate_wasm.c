/*
 * translate_wasm.c — a backend's Wasm plugin as an upstream HTTP filter of its Cluster
 * (envoy.filters.http.wasm in the cluster's HttpProtocolOptions.http_filters).
 *
 * A plugin belongs to a backend, so it runs where Envoy runs HTTP filters per backend:
 * in the cluster's upstream filter chain (Envoy 1.31 and later), for every request sent
 * to that backend whichever route chose it. The chain ends with the upstream codec
 * filter, as Envoy requires. The module goes inline (AsyncDataSource.local.inline_bytes)
 * into Envoy's V8 runtime, in a VM named after the plugin ("<namespace>/<name>"), and
 * config_json reaches the plugin unchanged as its configuration (a StringValue, which
 * Envoy passes without the wrapper). The module must be a WebAssembly binary, and a
 * sha256 beside it must be the module's checksum.
 *
 * Of the sandbox, allow_network false becomes a capability restriction: every
 * Proxy-Wasm host call and every WASI call Envoy implements is allowed except the HTTP
 * and gRPC calls out. Envoy's host offers no file system (its WASI calls are stdio,
 * clocks, randomness, arguments and environment), so allow_file_system holds either
 * way. Envoy has no per-plugin memory or execution-time limit and calls every callback
 * the module exports, so max_memory_bytes, max_execution_time_ms and hooks are refused
 * with their paths, not dropped (validation says the same per data plane,
 * server/validate/val_planes.c). Proxyless gRPC clients run no plugins: a backend they
 * read cannot have one (translate_cluster.c).
 */
#include <string.h>
#include <strings.h>

#include "envoy/extensions/filters/http/upstream_codec/v3/upstream_codec.pb-c.h"
#include "envoy/extensions/filters/http/wasm/v3/wasm.pb-c.h"
#include "envoy/extensions/wasm/v3/wasm.pb-c.h"
#include "server/base/hash.h"
#include "server/translate/translate.h"

typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter ev_filter;
typedef Envoy__Extensions__Wasm__V3__CapabilityRestrictionConfig__AllowedCapabilitiesEntry
    ev_capability;

#define WASM_FILTER  "envoy.filters.http.wasm"
#define CODEC_FILTER "envoy.filters.http.upstream_codec"
#define WASM_RUNTIME "envoy.wasm.runtime.v8"

/* What a plugin without network access may call: the Proxy-Wasm ABI's host calls
 * (v0.2.1, and the v0.1.0 names Envoy still serves) and the WASI calls Envoy
 * implements, less proxy_http_call and the proxy_grpc_* calls. */
static const char *const OFFLINE[] = {
    "proxy_log",
    "proxy_get_log_level",
    "proxy_get_current_time_nanoseconds",
    "proxy_set_tick_period_milliseconds",
    "proxy_done",
    "proxy_set_effective_context",
    "proxy_get_buffer_bytes",
    "proxy_set_buffer_bytes",
    "proxy_get_buffer_status",
    "proxy_get_header_map_size",
    "proxy_get_header_map_pairs",
    "proxy_set_header_map_pairs",
    "proxy_get_header_map_value",
    "proxy_add_header_map_value",
    "proxy_replace_header_map_value",
    "proxy_remove_header_map_value",
    "proxy_continue_stream",
    "proxy_close_stream",
    "proxy_continue_request",
    "proxy_continue_response",
    "proxy_clear_route_cache",
    "proxy_get_status",
    "proxy_send_local_response",
    "proxy_set_shared_data",
    "proxy_get_shared_data",
    "proxy_register_shared_queue",
    "proxy_resolve_shared_queue",
    "proxy_enqueue_shared_queue",
    "proxy_dequeue_shared_queue",
    "proxy_define_metric",
    "proxy_record_metric",
    "proxy_increment_metric",
    "proxy_get_metric",
    "proxy_get_property",
    "proxy_set_property",
    "proxy_call_foreign_function",
    "fd_write",
    "fd_read",
    "fd_seek",
    "fd_close",
    "fd_fdstat_get",
    "environ_get",
    "environ_sizes_get",
    "args_get",
    "args_sizes_get",
    "proc_exit",
    "clock_time_get",
    "random_get",
};

#define N_OFFLINE (sizeof OFFLINE / sizeof OFFLINE[0])

static Envoy__Extensions__Wasm__V3__CapabilityRestrictionConfig *offline(tr_ctx *tr)
{
    Envoy__Extensions__Wasm__V3__CapabilityRestrictionConfig *r =
        TR_NEW(tr, Envoy__Extensions__Wasm__V3__CapabilityRestrictionConfig,
               ENVOY__EXTENSIONS__WASM__V3__CAPABILITY_RESTRICTION_CONFIG__INIT);
    r->allowed_capabilities = (ev_capability **)tr_ptrs(tr, N_OFFLINE);
    for (size_t i = 0; i < N_OFFLINE; i++) {
        ev_capability *e = TR_NEW(
            tr, ev_capability,
            ENVOY__EXTENSIONS__WASM__V3__CAPABILITY_RESTRICTION_CONFIG__ALLOWED_CAPABILITIES_ENTRY__INIT);
        e->key = (char *)OFFLINE[i];
        e->value = TR_NEW(tr, Envoy__Extensions__Wasm__V3__SanitizationConfig,
                          ENVOY__EXTENSIONS__WASM__V3__SANITIZATION_CONFIG__INIT);
        r->allowed_capabilities[r->n_allowed_capabilities++] = e;
    }
    return r;
}

/* The plugin's configuration as a StringValue Any, or NULL when it has none. */
static Google__Protobuf__Any *configuration(tr_ctx *tr, const char *json)
{
    if (tr_empty(json))
        return NULL;
    Google__Protobuf__StringValue *v =
        TR_NEW(tr, Google__Protobuf__StringValue, GOOGLE__PROTOBUF__STRING_VALUE__INIT);
    v->value = (char *)json;
    return tr_any(tr, &v->base);
}

/* Records what Envoy cannot run of plugin w (IR path wp); true when nothing. */
static bool runnable(tr_ctx *tr, const Gateway__Control__V1__WasmPluginConfig *w, const char *wp)
{
    size_t errs = tr->errs.count;
    static const unsigned char MAGIC[4] = {0x00, 'a', 's', 'm'};
    if (w->wasm_bytes.len == 0)
        tr_error(tr, tr_printf(tr, "%s.wasm_bytes", wp), "envoy needs the module inline");
    else if (w->wasm_bytes.len < sizeof MAGIC || memcmp(w->wasm_bytes.data, MAGIC, 4) != 0)
        tr_error(tr, tr_printf(tr, "%s.wasm_bytes", wp), "is not a WebAssembly binary module");
    if (!tr_empty(w->sha256) && w->wasm_bytes.len > 0) {
        char hex[SX_SHA256_HEX_LEN + 1];
        sx_sha256_hex(w->wasm_bytes.data, w->wasm_bytes.len, hex);
        if (strcasecmp(hex, w->sha256) != 0)
            tr_error(tr, tr_printf(tr, "%s.sha256", wp),
                     "is not the checksum of wasm_bytes (sha256 %s)", hex);
    }
    if (w->n_hooks)
        tr_error(tr, tr_printf(tr, "%s.hooks", wp),
                 "envoy calls every callback the module exports: leave hooks empty");
    if (w->sandbox && w->sandbox->max_memory_bytes)
        tr_error(tr, tr_printf(tr, "%s.sandbox.max_memory_bytes", wp),
                 "envoy's wasm runtime has no per-plugin memory limit");
    if (w->sandbox && w->sandbox->max_execution_time_ms)
        tr_error(tr, tr_printf(tr, "%s.sandbox.max_execution_time_ms", wp),
                 "envoy's wasm runtime has no per-plugin execution time limit");
    return tr->errs.count == errs;
}

size_t tr_wasm_upstream_filters(
    tr_ctx *tr, const ir_backend *b, const char *path,
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter ***out)
{
    const Gateway__Control__V1__WasmPluginConfig *w = b->wasm_plugin;
    *out = NULL;
    if (w == NULL)
        return 0;
    const char *wp = tr_printf(tr, "%s.wasm_plugin", path);
    if (!runnable(tr, w, wp))
        return 0;
    const char *id = tr_qname(tr, w->namespace_, tr_empty(w->name) ? b->name : w->name);

    Envoy__Config__Core__V3__DataSource *local =
        TR_NEW(tr, Envoy__Config__Core__V3__DataSource, ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT);
    local->specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_BYTES;
    local->inline_bytes = w->wasm_bytes;
    Envoy__Config__Core__V3__AsyncDataSource *code =
        TR_NEW(tr, Envoy__Config__Core__V3__AsyncDataSource,
               ENVOY__CONFIG__CORE__V3__ASYNC_DATA_SOURCE__INIT);
    code->specifier_case = ENVOY__CONFIG__CORE__V3__ASYNC_DATA_SOURCE__SPECIFIER_LOCAL;
    code->local = local;
    Envoy__Extensions__Wasm__V3__VmConfig *vm = TR_NEW(
        tr, Envoy__Extensions__Wasm__V3__VmConfig, ENVOY__EXTENSIONS__WASM__V3__VM_CONFIG__INIT);
    vm->vm_id = (char *)id;
    vm->runtime = WASM_RUNTIME;
    vm->code = code;
    Envoy__Extensions__Wasm__V3__PluginConfig *pc =
        TR_NEW(tr, Envoy__Extensions__Wasm__V3__PluginConfig,
               ENVOY__EXTENSIONS__WASM__V3__PLUGIN_CONFIG__INIT);
    pc->name = (char *)id;
    pc->vm_case = ENVOY__EXTENSIONS__WASM__V3__PLUGIN_CONFIG__VM_VM_CONFIG;
    pc->vm_config = vm;
    pc->configuration = configuration(tr, w->config_json);
    if (w->sandbox == NULL || !w->sandbox->allow_network)
        pc->capability_restriction_config = offline(tr);
    Envoy__Extensions__Filters__Http__Wasm__V3__Wasm *wasm =
        TR_NEW(tr, Envoy__Extensions__Filters__Http__Wasm__V3__Wasm,
               ENVOY__EXTENSIONS__FILTERS__HTTP__WASM__V3__WASM__INIT);
    wasm->config = pc;
    Envoy__Extensions__Filters__Http__UpstreamCodec__V3__UpstreamCodec *codec =
        TR_NEW(tr, Envoy__Extensions__Filters__Http__UpstreamCodec__V3__UpstreamCodec,
               ENVOY__EXTENSIONS__FILTERS__HTTP__UPSTREAM_CODEC__V3__UPSTREAM_CODEC__INIT);

    ev_filter **v = (ev_filter **)tr_ptrs(tr, 2);
    v[0] = tr_http_filter(tr, WASM_FILTER, tr_any(tr, &wasm->base), false);
    v[1] = tr_http_filter(tr, CODEC_FILTER, tr_any(tr, &codec->base), false);
    *out = v;
    return 2;
}
