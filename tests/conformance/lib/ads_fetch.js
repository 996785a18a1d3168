#!/usr/bin/env node
// ads_fetch.js — fetches a proxy group's whole xDS state from one Sextant replica over
// ADS (state of the world), the way a proxyless client walks it: LDS (wildcard) →
// RDS (the listeners' route names) → CDS (wildcard) → EDS (the clusters' service
// names), ACKing each. Prints one JSON document, deterministic (types and names
// sorted) so two replicas' answers can be compared with cmp:
//
//   {"CDS": {"version": "2", "resources": {"name": "<base64 of the bytes>"}}, ...,
//    "endpoints": {"eds name": ["127.0.0.1:50051"]}}
//
//   node ads_fetch.js --server 127.0.0.1:PORT --group G --node ID [--until-version N]
//
// With --until-version N it keeps the stream open after the first fetch until a
// response with version_info N arrives (a push), and prints the state then; it
// creates --ready-file FILE (when given) once the first fetch is done.
// With --resume FILE (an earlier output, typically from another replica) each first
// request carries that type's version_info from FILE with an empty nonce, as a client
// reconnecting after a failover does.
// Exits 1 (with the reason on stderr) when a step times out.
'use strict';

const x = require('./xds');
const ec = require('./envoy_checks');
const {TYPE} = x;

const {arg, nodeArgs} = require('../../lib/cli.js');
const {server, group, nodeId, timeoutMs} = nodeArgs('ads-fetch');
const until = arg('until-version', '');
const resume = arg('resume', '') ? JSON.parse(require('fs').readFileSync(arg('resume'), 'utf8')) : {};

async function main() {
  const Ads = x.adsClientClass();
  const client = new Ads(server, x.grpc.credentials.createInsecure());
  const stream = new x.Stream(client.StreamAggregatedResources(), nodeId);
  const state = {};
  const names = {};
  let first = true;
  const request = (type, resourceNames) => {
    names[type] = resourceNames;
    const s = state[type] || {version: (resume[x.TYPE_NAME[type]] || {}).version || ''};
    const req = {type_url: type, resource_names: resourceNames, version_info: s.version || '', response_nonce: s.nonce || ''};
    if (first) req.node = {id: nodeId, cluster: group, locality: {}, user_agent_name: 'sextant-conformance'};
    first = false;
    stream.send(req);
  };
  const take = (r) => {
    const resources = {};
    const decoded = {};
    for (const any of r.resources || []) {
      const msg = x.decodeAny(any);
      const name = ec.resourceName(r.type_url, msg);
      resources[name] = Buffer.from(any.value).toString('base64');
      decoded[name] = msg;
    }
    // LDS and CDS responses are full state; RDS and EDS ones may carry only what changed.
    const prev = state[r.type_url];
    const full = r.type_url === TYPE.LDS || r.type_url === TYPE.CDS || !prev;
    state[r.type_url] = {
      version: r.version_info,
      nonce: r.nonce,
      resources: full ? resources : {...prev.resources, ...resources},
      decoded: full ? decoded : {...prev.decoded, ...decoded},
    };
    stream.send({type_url: r.type_url, version_info: r.version_info, response_nonce: r.nonce, resource_names: names[r.type_url] || []});
  };
  const step = async (type, resourceNames) => {
    request(type, resourceNames);
    const r = await stream.nextOfType(type, timeoutMs);
    if (!r) throw new Error(`no ${x.TYPE_NAME[type]} response from ${server} within ${timeoutMs} ms`);
    take(r);
  };

  await step(TYPE.LDS, []);
  const routeNames = Object.values(state[TYPE.LDS].decoded)
    .map((l) => ec.listener(l).rdsName)
    .filter(Boolean);
  await step(TYPE.RDS, [...new Set(routeNames)].sort());
  await step(TYPE.CDS, []);
  const edsNames = Object.values(state[TYPE.CDS].decoded).map(ec.edsName);
  await step(TYPE.EDS, [...new Set(edsNames)].sort());

  if (arg('ready-file')) require('fs').writeFileSync(arg('ready-file'), 'fetched\n');
  if (until) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await stream.next(deadline - Date.now());
      if (!r) throw new Error(`no response with version_info ${until} from ${server} within ${timeoutMs} ms`);
      take(r);
      if (r.version_info === until) break;
    }
    await x.sleep(300);
    for (const r of stream.drain()) take(r);
  }

  const out = {};
  for (const [k, t] of Object.entries(TYPE)) {
    if (!state[t]) continue;
    const res = state[t].resources;
    out[k] = {version: state[t].version, resources: Object.fromEntries(Object.keys(res).sort().map((n) => [n, res[n]]))};
  }
  out.endpoints = {};
  for (const [n, a] of Object.entries((state[TYPE.EDS] || {}).decoded || {}).sort()) {
    out.endpoints[n] = [];
    for (const e of a.endpoints || [])
      for (const le of e.lb_endpoints || []) {
        const sa = le.endpoint.address.socket_address;
        out.endpoints[n].push(`${sa.address}:${sa.port_value}`);
      }
    out.endpoints[n].sort();
  }
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
  stream.close();
  client.close();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`ads_fetch: ${e.message}`);
    process.exit(1);
  },
);
