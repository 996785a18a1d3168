// wasm_check.js — what an Envoy proxy receives for a backend with a Wasm plugin, decoded
// with Envoy's upstream protos from an ads_fetch.js document (first argument): cluster
// CLUSTER carries HttpProtocolOptions whose upstream HTTP filters are the Wasm filter
// (the module MODULE.wasm inline in the V8 runtime, in VM ID, the plugin configuration
// CONFIG as a StringValue, network calls left out of the allowed capabilities) and then
// the upstream codec, with HTTP/1.1 upstream as before.
//
//   node wasm_check.js FETCH.json CLUSTER MODULE.wasm ID CONFIG
'use strict';

const fs = require('fs');
const x = require('./xds');
const {check} = x;

const [file, cluster, modulePath, id, config] = process.argv.slice(2);
const OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

x.main(async () => {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const b64 = doc.CDS.resources[cluster];
  if (!check(`CDS holds cluster ${cluster}`, b64, Object.keys(doc.CDS.resources))) return;
  const c = x.decodeAny({type_url: x.TYPE.CDS, value: Buffer.from(b64, 'base64')});
  const any = (c.typed_extension_protocol_options || {})[OPTIONS];
  if (!check(`the cluster carries ${OPTIONS}`, any && any.type_url.endsWith(OPTIONS), c.typed_extension_protocol_options)) return;
  const o = x.decodeAny(any);
  check('with HTTP/1.1 upstream, as a backend without a plugin', o.explicit_http_config && o.explicit_http_config.http_protocol_options, o);
  const f = o.http_filters || [];
  check('two upstream HTTP filters: the Wasm filter, then the upstream codec', f.length === 2 &&
    f[0].name === 'envoy.filters.http.wasm' && /filters\.http\.wasm\.v3\.Wasm$/.test(f[0].typed_config.type_url) &&
    f[1].name === 'envoy.filters.http.upstream_codec' && /UpstreamCodec$/.test(f[1].typed_config.type_url), f.map((e) => e.name));
  if (!f.length) return;
  const w = x.decodeAny(f[0].typed_config).config || {};
  const vm = w.vm_config || {};
  const code = ((vm.code || {}).local || {}).inline_bytes;
  check(`the plugin ${id} runs in VM ${id} of the V8 runtime`, w.name === id && vm.vm_id === id && vm.runtime === 'envoy.wasm.runtime.v8', {name: w.name, vm_id: vm.vm_id, runtime: vm.runtime});
  check('its module is the one the config holds, inline', code && Buffer.compare(Buffer.from(code), fs.readFileSync(modulePath)) === 0, code && code.length);
  let conf = null;
  if (w.configuration) conf = x.envoy().lookupType('google.protobuf.StringValue').decode(w.configuration.value).value;
  check('its configuration is config_json, as a StringValue', w.configuration && /StringValue$/.test(w.configuration.type_url) && conf === config, conf);
  const caps = Object.keys((w.capability_restriction_config || {}).allowed_capabilities || {});
  check('without network access it may log and read headers, but not call out', caps.includes('proxy_log') &&
    caps.includes('proxy_get_header_map_value') && !caps.some((n) => /^proxy_(http|grpc)_/.test(n)), caps);
});
