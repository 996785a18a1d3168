#!/usr/bin/env node
// ads_follow.js — follows what one proxy group is served over ADS (state of the world),
// the way a proxyless gRPC client walks it (LDS wildcard → RDS of the listeners' route
// names → CDS wildcard → EDS of the clusters' service names), ACKing every response,
// and after each response rewrites a summary of the state decoded with Envoy's protos:
//
//   node ads_follow.js --server 127.0.0.1:PORT --group G --out FILE [--node ID] [--log FILE]
//
//   {"versions": {"LDS": "3", ...}, "listeners": [names], "paths": [every route match's
//    path, prefix or regex], "endpoints": ["address:port", ...], "nacks": 0}
//
// (lists sorted; the file is replaced atomically, so a test polling it never reads half
// of it). A response that does not decode is NACKed and counted. With --log, each time
// the newest version_info of any type changes (a snapshot may change one type only) it
// is appended there as "<unix ms> <version>", for when it arrived.
// Runs until SIGTERM.
'use strict';

const fs = require('fs');
const x = require('./xds');
const ec = require('./envoy_checks');
const {TYPE} = x;
const {arg} = require('../../lib/cli.js');

const server = arg('server');
const group = arg('group');
const out = arg('out');
const nodeId = arg('node', 'ads-follow');
const log = arg('log');
if (!server || !group || !out) {
  console.error('usage: node ads_follow.js --server HOST:PORT --group G --out FILE [--node ID]');
  process.exit(2);
}

const Ads = x.adsClientClass();
const client = new Ads(server, x.grpc.credentials.createInsecure());
const call = client.StreamAggregatedResources();
const state = {}; // type -> {version, nonce, decoded: {name: msg}}
const names = {}; // type -> the resource names asked for
let nacks = 0;
let first = true;

function request(type, resourceNames, errorDetail) {
  names[type] = resourceNames;
  const s = state[type] || {};
  // RDS and EDS: what is no longer asked for is no longer part of the state
  if (s.decoded && (type === TYPE.RDS || type === TYPE.EDS))
    for (const n of Object.keys(s.decoded)) if (!resourceNames.includes(n)) delete s.decoded[n];
  const req = {type_url: type, resource_names: resourceNames, version_info: s.version || '', response_nonce: s.nonce || ''};
  if (first) req.node = {id: nodeId, cluster: group, locality: {}, user_agent_name: 'sextant-conformance'};
  if (errorDetail) req.error_detail = {code: 3, message: errorDetail};
  first = false;
  call.write(req);
}

// The newest version_info of every type received (they are snapshot versions).
const newest = () => Math.max(0, ...Object.values(state).map((s) => Number(s.version) || 0));

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function summary() {
  const decoded = (t) => (state[t] || {}).decoded || {};
  const paths = [];
  for (const rc of Object.values(decoded(TYPE.RDS)))
    for (const vh of rc.virtual_hosts || [])
      for (const r of vh.routes || []) {
        const m = r.match || {};
        paths.push(m.path || m.prefix || m.path_separated_prefix || (m.safe_regex || {}).regex || '');
      }
  const endpoints = [];
  for (const a of Object.values(decoded(TYPE.EDS)))
    for (const e of a.endpoints || [])
      for (const le of e.lb_endpoints || []) {
        const sa = le.endpoint.address.socket_address;
        endpoints.push(`${sa.address}:${sa.port_value}`);
      }
  const versions = {};
  for (const [k, t] of Object.entries(TYPE)) if (state[t]) versions[k] = state[t].version;
  return {versions, newest: newest(), listeners: Object.keys(decoded(TYPE.LDS)).sort(), paths: paths.sort(), endpoints: endpoints.sort(), nacks};
}

function write() {
  fs.writeFileSync(out + '.tmp', JSON.stringify(summary()) + '\n');
  fs.renameSync(out + '.tmp', out);
}

call.on('data', (r) => {
  const type = r.type_url;
  const decoded = {};
  try {
    for (const any of r.resources || []) {
      const msg = x.decodeAny(any);
      decoded[ec.resourceName(type, msg)] = msg;
    }
  } catch (e) {
    nacks++;
    state[type] = {...(state[type] || {}), nonce: r.nonce};
    request(type, names[type] || [], e.message);
    write();
    return;
  }
  // LDS and CDS responses are the full state; RDS and EDS ones may carry only what changed.
  const prev = state[type];
  const full = type === TYPE.LDS || type === TYPE.CDS || !prev;
  const before = newest();
  state[type] = {version: r.version_info, nonce: r.nonce, decoded: full ? decoded : {...prev.decoded, ...decoded}};
  if (log && newest() !== before) fs.appendFileSync(log, `${Date.now()} ${newest()}\n`);
  request(type, names[type] || []); // the ACK
  if (type === TYPE.LDS) {
    const rds = [...new Set(Object.values(decoded).map((l) => ec.listener(l).rdsName).filter(Boolean))].sort();
    if (!same(rds, names[TYPE.RDS])) request(TYPE.RDS, rds);
  } else if (type === TYPE.CDS) {
    const eds = [...new Set(Object.values(decoded).map(ec.edsName))].sort();
    if (!same(eds, names[TYPE.EDS])) request(TYPE.EDS, eds);
  }
  write();
});
call.on('error', (e) => {
  console.error(`ads_follow: ${e.message}`);
  process.exit(1);
});
call.on('end', () => process.exit(0));

request(TYPE.LDS, []);
request(TYPE.CDS, []);
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    call.cancel();
    client.close();
    process.exit(0);
  });
}
