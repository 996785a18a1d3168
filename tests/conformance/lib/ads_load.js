#!/usr/bin/env node
// ads_load.js — many protocol-level ADS clients (state of the world), each on a gRPC
// channel (TCP connection) of its own, as a fleet of Envoys is; each subscribes to
// listeners and clusters (wildcard) and to the endpoints of its clusters, ACKs every
// response and, when its stream ends or fails, reconnects the way Envoy does: the
// versions and names it holds in its first requests, empty nonces, after a short
// back-off.
//
//   node ads_load.js --server HOST:PORT --group G --streams N --out FILE [--prefix ID]
//
// Node ids are PREFIX-0 .. PREFIX-(N-1). FILE is rewritten (atomically) every 100 ms and
// on every change of what it says:
//
//   {"streams": N, "up": streams whose current connection a replica accepted (response
//          headers) or answered,
//    "connects": streams opened in all, "ends": streams that ended or failed,
//    "changes": responses whose version_info differs from what the client held of that
//               type (a first response counts for nothing: the client held nothing),
//    "versions": {"<version>": clients whose newest version_info (of any type) it is},
//    "max_gap_ms": the longest time from a stream's end to the next one being up,
//    "last_end_ms": when a stream last ended (unix ms)}
//
// Runs until SIGTERM.
'use strict';

const fs = require('fs');
const x = require('./xds');
const ec = require('./envoy_checks');
const {TYPE} = x;
const {arg} = require('../../lib/cli.js');

const server = arg('server');
const group = arg('group');
const count = Number(arg('streams', '100'));
const out = arg('out');
const prefix = arg('prefix', 'load');
if (!server || !group || !out || !(count > 0)) {
  console.error('usage: node ads_load.js --server HOST:PORT --group G --streams N --out FILE [--prefix ID]');
  process.exit(2);
}

const Ads = x.adsClientClass();
const TYPES = [TYPE.LDS, TYPE.CDS, TYPE.EDS];
const totals = {connects: 0, ends: 0, changes: 0, max_gap_ms: 0, last_end_ms: 0};
const clients = [];
let dirty = true;

// The names a client asks for of type t: wildcard for listeners and clusters, its
// clusters' endpoints for EDS.
function namesOf(c, t) {
  return t === TYPE.EDS ? c.eds : [];
}

function startStream(c) {
  c.attempt++;
  const attempt = c.attempt;
  c.up = false;
  c.edsNonce = '';
  totals.connects++;
  const call = c.client.StreamAggregatedResources();
  c.call = call;
  let first = true;
  for (const t of TYPES) {
    if (t === TYPE.EDS && !c.eds.length) continue; // asked for once the clusters are known
    const held = c.held[t];
    const req = {type_url: t, resource_names: namesOf(c, t), version_info: held || '', response_nonce: ''};
    if (first) req.node = {id: c.id, cluster: group, locality: {}, user_agent_name: 'sextant-ads-load'};
    first = false;
    call.write(req);
  }
  call.on('data', (r) => {
    if (attempt !== c.attempt) return;
    const t = r.type_url;
    if (c.held[t] !== undefined && c.held[t] !== r.version_info) totals.changes++;
    c.held[t] = r.version_info;
    call.write({type_url: t, resource_names: namesOf(c, t), version_info: r.version_info, response_nonce: r.nonce});
    if (t === TYPE.CDS) {
      const eds = [...new Set((r.resources || []).map((a) => ec.edsName(x.decodeAny(a))))].sort();
      if (eds.join() !== c.eds.join()) {
        c.eds = eds;
        call.write({type_url: TYPE.EDS, resource_names: eds, version_info: c.held[TYPE.EDS] || '', response_nonce: c.edsNonce || ''});
      }
    } else if (t === TYPE.EDS) {
      c.edsNonce = r.nonce;
    }
    markUp();
    dirty = true;
  });
  // Up once a replica accepted the stream (its response headers) or answered it: a
  // client that reconnects holding the current versions is sent nothing.
  const markUp = () => {
    if (attempt !== c.attempt || c.up) return;
    c.up = true;
    c.backoff = 0;
    if (c.endedAt) totals.max_gap_ms = Math.max(totals.max_gap_ms, Date.now() - c.endedAt);
    c.endedAt = 0;
    dirty = true;
  };
  call.on('metadata', markUp);
  const ended = () => {
    if (attempt !== c.attempt || c.stopping) return;
    c.attempt++; // later events of this call are ignored
    c.up = false;
    c.endedAt = Date.now();
    totals.ends++;
    totals.last_end_ms = c.endedAt;
    dirty = true;
    try {
      call.cancel();
    } catch (e) {
      /* already closed */
    }
    // Envoy's back-off starts small and grows; a first retry at once is what spreads
    // a reconnecting fleet over the replicas the load balancer still has.
    c.backoff = c.backoff ? Math.min(c.backoff * 2, 1000) : 50;
    setTimeout(() => {
      if (!c.stopping) startStream(c);
    }, Math.floor(c.backoff / 2 + Math.random() * c.backoff));
  };
  call.on('error', ended);
  call.on('end', ended);
  call.on('status', () => {});
}

function write() {
  if (!dirty) return;
  dirty = false;
  const versions = {};
  let up = 0;
  for (const c of clients) {
    if (c.up) up++;
    const held = Object.values(c.held).map(Number);
    if (held.length) {
      const v = String(Math.max(...held));
      versions[v] = (versions[v] || 0) + 1;
    }
  }
  const doc = {streams: count, up, ...totals, versions};
  fs.writeFileSync(out + '.tmp', JSON.stringify(doc) + '\n');
  fs.renameSync(out + '.tmp', out);
}

for (let i = 0; i < count; i++) {
  // A local subchannel pool: every client its own connection, as separate proxies have.
  const client = new Ads(server, x.grpc.credentials.createInsecure(), {'grpc.use_local_subchannel_pool': 1});
  const c = {id: `${prefix}-${i}`, client, held: {}, eds: [], edsNonce: '', attempt: 0, up: false, endedAt: 0, backoff: 0, stopping: false};
  clients.push(c);
  startStream(c);
}
setInterval(write, 100);
write();

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    for (const c of clients) {
      c.stopping = true;
      try {
        c.call.cancel();
      } catch (e) {
        /* already closed */
      }
      c.client.close();
    }
    process.exit(0);
  });
}
