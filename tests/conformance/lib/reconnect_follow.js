#!/usr/bin/env node
// reconnect_follow.js — a data plane that keeps what it was sent across reconnects, as
// Envoy and gRPC's xDS clients do: when its stream ends (the replica died) it opens a
// new one to the same address and asks again carrying what it holds — ADS (state of
// the world): per type the last ACKed version_info and the same resource names, and the
// wildcard LDS/CDS → RDS/EDS walk of a proxyless client; gateway.control.v1: the last
// ACKed version. Every response is ACKed and logged, so a test counts what each stream
// was sent:
//
//   node reconnect_follow.js --protocol ads|control --server HOST:PORT --group G \
//       --node ID --log FILE --state FILE
//
//   log:   one line per response: "<unix ms> <stream> <type> <version> <resources>"
//          (type "snapshot" for gateway.control.v1); a line "<unix ms> <stream> open"
//          when a stream is opened (1, 2, ...)
//   state: {"stream": N, "versions": {type: version}} rewritten atomically after every
//          response and every (re)connect
// Runs until SIGTERM.
//
// A stream is one the server can see: like Envoy, which opens its xDS stream on a
// connection it has established (and retries the connection, with back-off, while the
// server is down), each stream waits for its channel to connect (gRPC wait-for-ready)
// instead of failing at once on a refused connection. So however long the replica takes
// to come back, the stream after its death is stream 2.
'use strict';

const fs = require('fs');
const x = require('./xds');
const ec = require('./envoy_checks');
const {TYPE} = x;
const {arg} = require('../../lib/cli.js');

const protocol = arg('protocol', 'ads');
const server = arg('server');
const group = arg('group');
const nodeId = arg('node');
const log = arg('log');
const stateFile = arg('state');
if (!server || !group || !nodeId || !log || !stateFile || !['ads', 'control'].includes(protocol)) {
  console.error('usage: node reconnect_follow.js --protocol ads|control --server HOST:PORT --group G --node ID --log FILE --state FILE');
  process.exit(2);
}

const held = {}; // type -> {version, names}: what the client holds, kept across streams
let streamNo = 0;
let call = null;
let client = null;
let stopping = false;

function note(line) {
  fs.appendFileSync(log, `${Date.now()} ${streamNo} ${line}\n`);
}
function writeState() {
  const versions = {};
  for (const [t, h] of Object.entries(held)) versions[t] = h.version;
  fs.writeFileSync(stateFile + '.tmp', JSON.stringify({stream: streamNo, versions}) + '\n');
  fs.renameSync(stateFile + '.tmp', stateFile);
}

// The connection's back-off while the server is down, short for the test (gRPC's
// default starts at 1 s and grows to 120 s).
const CHANNEL_OPTIONS = {'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000};
// A call that waits for its channel to connect rather than failing while it cannot.
function waitForReady() {
  const md = new x.grpc.Metadata();
  md.setOptions({waitForReady: true});
  return md;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const short = (t) => (Object.entries(TYPE).find(([, u]) => u === t) || [t])[0];

// ------------------------------------------------------------------ ADS, state of the world
function adsStream() {
  const Ads = x.adsClientClass();
  client = new Ads(server, x.grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  call = client.StreamAggregatedResources(waitForReady());
  const nonces = {}; // type -> nonce of the last response on this stream
  const names = {}; // type -> names asked for on this stream
  let first = true;
  const request = (type, resourceNames) => {
    names[type] = resourceNames;
    const req = {type_url: type, resource_names: resourceNames, version_info: (held[type] || {}).version || '', response_nonce: nonces[type] || ''};
    if (first) req.node = {id: nodeId, cluster: group, user_agent_name: 'sextant-conformance'};
    first = false;
    call.write(req);
  };
  call.on('data', (r) => {
    const type = r.type_url;
    const decoded = (r.resources || []).map((any) => x.decodeAny(any));
    note(`${short(type)} ${r.version_info} ${decoded.length}`);
    nonces[type] = r.nonce;
    held[type] = {version: r.version_info, names: names[type] || []};
    request(type, names[type] || []); // the ACK
    if (type === TYPE.LDS) {
      const rds = [...new Set(decoded.map((l) => ec.listener(l).rdsName).filter(Boolean))].sort();
      if (!same(rds, names[TYPE.RDS])) request(TYPE.RDS, rds);
    } else if (type === TYPE.CDS) {
      const eds = [...new Set(decoded.map(ec.edsName))].sort();
      if (!same(eds, names[TYPE.EDS])) request(TYPE.EDS, eds);
    }
    writeState();
  });
  // After a reconnect: every type held is asked for again, with its version and names.
  const types = [TYPE.LDS, TYPE.CDS, TYPE.RDS, TYPE.EDS];
  for (const t of types) {
    if (held[t]) request(t, held[t].names);
    else if (t === TYPE.LDS || t === TYPE.CDS) request(t, []);
  }
}

// ------------------------------------------------------------------ gateway.control.v1
function controlStream() {
  const Control = x.controlClientClass();
  client = new Control(server, x.grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  call = client.StreamConfiguration(waitForReady());
  const version = () => (held.snapshot || {}).version || '';
  call.on('data', (r) => {
    note(`snapshot ${r.version} 1`);
    held.snapshot = {version: r.version};
    call.write({node_id: nodeId, cluster: group, version: r.version, nonce: r.nonce, result_status: 'DISCOVERY_RESULT_STATUS_ACK'});
    writeState();
  });
  call.write({node_id: nodeId, cluster: group, version: version(), nonce: ''});
}

// ------------------------------------------------------------------ reconnecting
function connect() {
  if (stopping) return;
  streamNo++;
  note('open');
  (protocol === 'ads' ? adsStream : controlStream)();
  writeState();
  let ended = false;
  const again = (why) => {
    if (ended || stopping) return;
    ended = true;
    note(`closed ${JSON.stringify(why)}`);
    try {
      client.close();
    } catch (e) {
      // already closed
    }
    setTimeout(connect, 200); // a client's back-off, short for the test
  };
  call.on('error', (e) => again(e.message));
  call.on('end', () => again('end'));
}

connect();
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    stopping = true;
    if (call) call.cancel();
    if (client) client.close();
    process.exit(0);
  });
}
