// data_planes.js — what a proxy group's data planes let its configs hold, through the
// REST API, and what a gateway.control.v1 client of a group serving only "control"
// receives:
//   - PUT /api/v1/groups/{group} sets the data planes (audited; a viewer may not; bad
//     names are refused and change nothing), GET reads them back;
//   - a config with AI service, token policy, Wasm plugin, session persistence, an
//     extension_ref filter, HTTP/3 and UDP listeners and a UDP stream route is created
//     in the "control" group, and a control.v1 client of that group receives all of it;
//   - the same config in a group that serves Envoy (the default) is refused with 422,
//     each problem at the field's path and naming the data plane "envoy";
//   - adding "envoy" to the control group is refused while that config lives there, and
//     the group keeps serving "control" only.
//
//   XDS_SERVER, HTTP_PORT, TOKEN (operator), VIEWER_TOKEN, SEXTANT_DATABASE_URL
'use strict';

const x = require('./xds');
const {check} = x;

const SERVER = process.env.XDS_SERVER;
const HTTP = `http://127.0.0.1:${process.env.HTTP_PORT}`;
const CTL = 'conf-planes-control';
const EDGE = 'conf-planes-edge';
const ALL = ['listeners', 'http_routes', 'grpc_routes', 'stream_routes', 'backends', 'secrets', 'extensions'];

async function rest(method, path, body, token = process.env.TOKEN) {
  const res = await fetch(HTTP + path, {
    method,
    headers: {Authorization: `Bearer ${token}`, ...(body ? {'Content-Type': 'application/json'} : {})},
    body: body ? JSON.stringify(body) : undefined,
  });
  let json = null;
  try {
    json = await res.json();
  } catch (e) {
    json = null;
  }
  return {status: res.status, body: json};
}

const group = (g) => `/api/v1/groups/${encodeURIComponent(g)}`;

// Every feature only gateway.control.v1 data planes take, in one config.
const WASM = Buffer.from('\0asm\x01\0\0\0').toString('base64');
const SPEC = {
  listeners: [
    {name: 'h3', protocol: 'LISTENER_PROTOCOL_HTTP3', port: 8443, hostnames: ['ai.example.com'], attached_routes: ['planes/chat']},
    {name: 'dns', protocol: 'LISTENER_PROTOCOL_UDP', port: 5353, attached_routes: ['planes/dns']},
  ],
  http_routes: [
    {
      name: 'chat',
      namespace: 'planes',
      hostnames: ['ai.example.com'],
      rules: [
        {
          name: 'chat',
          matches: [{path: '/v1/chat', path_type: 'PathPrefix'}],
          filters: [{type: 'ExtensionRef', extension_ref: {group: 'gateway.example.com', kind: 'Guard', name: 'pii'}}],
          backend_refs: [{name: 'llm', namespace: 'planes'}],
          session_persistence: {session_name: 'chat-session', type: 'Header', idle_timeout: '600s'},
        },
      ],
    },
  ],
  stream_routes: [
    {name: 'dns', namespace: 'planes', kind: 'ROUTE_KIND_UDP', rules: [{port: 5353, backend_refs: [{name: 'dns', namespace: 'planes'}]}]},
  ],
  backends: [
    {
      name: 'llm',
      namespace: 'planes',
      protocol: 'HTTP',
      endpoints: [{address: '192.0.2.10', port: 443, healthy: true}],
      ai_service: {provider: 'openai', format: 'openai', model: 'gpt-4o', auth: {type: 'Bearer', header_name: 'Authorization', secret_ref: 'openai-key', secret_key: 'token'}, timeout: '30s'},
      token_policy: {tokens_per_minute: '60000', tokens_per_hour: '1000000', requests_per_minute: '600', scope: 'consumer', burst: 1.5, on_limit: 'reject'},
      wasm_plugin: {name: 'redact', namespace: 'planes', wasm_bytes: WASM, sha256: require('crypto').createHash('sha256').update(Buffer.from(WASM, 'base64')).digest('hex'), hooks: ['request_headers'], config_json: '{"mask":"*"}',
        sandbox: {max_memory_bytes: '16777216', max_execution_time_ms: '50', allow_network: false, allow_file_system: false}},
    },
    {name: 'dns', namespace: 'planes', endpoints: [{address: '192.0.2.53', port: 53, healthy: true}]},
  ],
};

// Where each feature is, and the data plane the envoy group must name there. The
// header-based session persistence itself is translated (Envoy's stateful session
// filter); its idle timeout is not, Envoy having none. The HTTP/3 listener is translated
// too (a QUIC listener), and for Envoy it needs the TLS this one lacks; the UDP listener
// and its route become a udp_proxy listener. Of the token policy, Envoy's local rate limit
// takes the request rate but not the token counts or a per-consumer scope. The Wasm
// plugin runs in Envoy's upstream filters, but not its hooks or sandbox limits.
const ENVOY_REFUSED = [
  'spec.http_routes[0].rules[0].filters[0].extension_ref',
  'spec.http_routes[0].rules[0].session_persistence.idle_timeout',
  'spec.backends[0].ai_service',
  'spec.backends[0].token_policy.tokens_per_minute',
  'spec.backends[0].token_policy.tokens_per_hour',
  'spec.backends[0].token_policy.scope',
  'spec.backends[0].wasm_plugin.hooks',
  'spec.backends[0].wasm_plugin.sandbox.max_memory_bytes',
  'spec.backends[0].wasm_plugin.sandbox.max_execution_time_ms',
];

function auditRows(g) {
  const v = x.psql(`SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY id), '[]') FROM audit_log a WHERE action = 'group.update' AND result = 'success' AND resource_id = ${x.sqlQuote(g)}`);
  return JSON.parse(v || '[]');
}

x.main(async () => {
  // ---- the groups API
  let r = await rest('GET', group(CTL));
  check('GET of a group nobody configured answers its defaults (envoy, grpc, control)', r.status === 200 && r.body.data_planes_default === true &&
    JSON.stringify(r.body.data_planes) === '["envoy","grpc","control"]', r);

  r = await rest('PUT', group(CTL), {data_planes: ['control']}, process.env.VIEWER_TOKEN);
  check('a viewer may not change a group (403)', r.status === 403, r);
  r = await rest('PUT', group(CTL), {data_planes: ['control', 'quic']});
  check('an unknown data plane is refused (422 at data_planes)', r.status === 422 &&
    r.body.error.details.some((d) => d.path === 'data_planes' && /quic/.test(d.message)), r);
  r = await rest('PUT', group(CTL), {data_planes: ['control'], use_default: true});
  check('data_planes and use_default together are refused (400)', r.status === 400, r);
  r = await rest('GET', group(CTL));
  check('a refused change changes nothing', r.status === 200 && r.body.data_planes_default === true, r.body);

  r = await rest('PUT', group(CTL), {data_planes: ['control']});
  check('an operator sets the group to serve control only', r.status === 200 &&
    JSON.stringify(r.body.data_planes) === '["control"]' && r.body.data_planes_default === false, r);
  r = await rest('GET', group(CTL));
  check('GET reads back data_planes ["control"]', r.status === 200 && JSON.stringify(r.body.data_planes) === '["control"]', r.body);
  const audits = auditRows(CTL);
  check('the change is audited as group.update with the data planes before and after', audits.length === 1 &&
    audits[0].result === 'success' && JSON.stringify(audits[0].details.data_planes) === '["control"]' &&
    audits[0].details.data_planes_before === null, audits);

  // ---- the control group takes every feature
  r = await rest('POST', '/api/v1/configs', {namespace: 'planes', name: 'ai', groups: [CTL], spec: SPEC});
  check('a config with every control-only feature is created in the control group (201)', r.status === 201, r);

  const Cds = x.controlClientClass();
  const client = new Cds(SERVER, x.grpc.credentials.createInsecure());
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));
  const s = new x.Stream(client.StreamConfiguration(), 'planes-control');
  s.send({node_id: 'planes-control', cluster: CTL, version: '', nonce: '', subscriptions: ALL});
  const resp = await s.next(5000);
  if (check('the control.v1 client of the group receives a snapshot', resp && resp.snapshot)) {
    const snap = resp.snapshot;
    const l = snap.listeners || [];
    const b = (snap.backends || []).find((e) => e.name === 'llm') || {};
    const rule = ((snap.http_routes || [])[0] || {rules: [{}]}).rules[0] || {};
    const sr = (snap.stream_routes || [])[0] || {};
    check('it carries the HTTP/3 listener', l.some((e) => e.name === 'h3' && e.protocol === 'LISTENER_PROTOCOL_HTTP3' && e.port === 8443), l);
    check('it carries the UDP listener', l.some((e) => e.name === 'dns' && e.protocol === 'LISTENER_PROTOCOL_UDP' && e.port === 5353), l);
    check('it carries the UDP stream route', sr.kind === 'ROUTE_KIND_UDP' && sr.rules && sr.rules[0].port === 5353, sr);
    check('it carries the AI service', b.ai_service && b.ai_service.provider === 'openai' && b.ai_service.model === 'gpt-4o' &&
      b.ai_service.auth && b.ai_service.auth.secret_ref === 'openai-key', b.ai_service);
    check('it carries the token policy', b.token_policy && String(b.token_policy.tokens_per_minute) === '60000' &&
      String(b.token_policy.requests_per_minute) === '600' && b.token_policy.burst === 1.5 && b.token_policy.on_limit === 'reject', b.token_policy);
    const w = b.wasm_plugin || {};
    check('it carries the Wasm plugin with its module and sandbox', w.name === 'redact' &&
      Buffer.from(w.wasm_bytes || []).toString('base64') === WASM && w.config_json === '{"mask":"*"}' &&
      w.sandbox && String(w.sandbox.max_memory_bytes) === '16777216' && String(w.sandbox.max_execution_time_ms) === '50', w);
    check('it carries the session persistence', rule.session_persistence && rule.session_persistence.session_name === 'chat-session' &&
      rule.session_persistence.type === 'Header', rule.session_persistence);
    check('it carries the extension_ref filter', rule.filters && rule.filters[0] && rule.filters[0].extension_ref &&
      rule.filters[0].extension_ref.name === 'pii', rule.filters);
    s.send({node_id: 'planes-control', cluster: CTL, version: resp.version, nonce: resp.nonce, subscriptions: ALL,
      result_status: 'DISCOVERY_RESULT_STATUS_ACK'});
  }
  s.end && s.end();

  // ---- a group that serves Envoy refuses them, naming the data plane
  r = await rest('PUT', group(EDGE), {data_planes: ['envoy']});
  check('a second group is set to serve envoy only', r.status === 200 && JSON.stringify(r.body.data_planes) === '["envoy"]', r);
  r = await rest('POST', '/api/v1/configs', {namespace: 'planes', name: 'ai-edge', groups: [EDGE], spec: SPEC});
  const details = (r.body && r.body.error && r.body.error.details) || [];
  check('the same config in the envoy group is refused (422)', r.status === 422, r.status);
  for (const path of ENVOY_REFUSED) {
    const d = details.find((e) => e.path === path && e.data_plane === 'envoy');
    check(`refused at ${path}, naming the envoy data plane and the group`, d && /envoy data plane/.test(d.message) &&
      d.message.includes(EDGE), details.filter((e) => e.path === path));
  }
  const h3 = details.find((d) => d.path === 'spec.listeners[0].tls');
  check('the HTTP/3 listener is translated for envoy, which needs its TLS secrets', h3 && !h3.data_plane &&
    /needs at least one secret/.test(h3.message), details.filter((d) => d.path.startsWith('spec.listeners[0]')));
  const extra = details.filter((d) => !ENVOY_REFUSED.includes(d.path) && d.path !== 'spec.listeners[0].tls');
  check('and for nothing else', extra.length === 0, extra);
  r = await rest('POST', '/api/v1/configs/validate', {groups: ['conf-planes-default'], spec: SPEC});
  check('a group that never chose serves envoy, grpc and control: the header-based session is refused for grpc', r.status === 422 &&
    r.body.error.details.some((d) => d.path === 'spec.http_routes[0].rules[0].session_persistence.type' && d.data_plane === 'grpc'), r);
  r = await rest('GET', '/api/v1/configs?namespace=planes');
  const names = ((r.body && r.body.items) || []).map((c) => c.name);
  check('nothing was created by the refused request', !names.includes('ai-edge'), names);

  r = await rest('POST', '/api/v1/configs/validate', {groups: [EDGE], spec: SPEC});
  check('a dry run in the envoy group says the same', r.status === 422 &&
    r.body.error.details.some((d) => d.path === 'spec.backends[0].ai_service' && d.data_plane === 'envoy'), r);

  // ---- a control group cannot start serving envoy while it holds them
  r = await rest('PUT', group(CTL), {data_planes: ['envoy', 'control']});
  const pd = (r.body && r.body.error && r.body.error.details) || [];
  check('adding envoy to the control group is refused (422)', r.status === 422, r);
  check('the refusal names the config, the field and the data plane', pd.some((d) =>
    d.path === 'configs[planes/ai].spec.backends[0].ai_service' && d.data_plane === 'envoy'), pd);
  r = await rest('GET', group(CTL));
  check('the group still serves control only', JSON.stringify(r.body.data_planes) === '["control"]', r.body);
  check('the refusal is audited as failed with its problems', x.psql(`SELECT count(*) FROM audit_log WHERE action = 'group.update' AND result = 'failed'
    AND status_code = 422 AND resource_id = ${x.sqlQuote(CTL)} AND details::text LIKE '%configs[planes/ai]%'`) === '1');

  r = await rest('GET', '/api/v1/groups');
  const listed = ((r.body && r.body.items) || []).find((g) => g.name === CTL);
  check('GET /api/v1/groups lists the group with its data planes', listed && JSON.stringify(listed.data_planes) === '["control"]', r.body);
  client.close();
});
