#!/usr/bin/env node
// control_fetch.js — what a gateway.control.v1 data plane of one proxy group is served
// now: subscribes to StreamConfiguration (control.proto loaded by @grpc/proto-loader),
// takes the first snapshot, ACKs it, and prints the snapshot as JSON. Exits 1 when no
// snapshot arrives within 5 s. Bytes fields (a Wasm module) are printed in base64, as
// the IR's JSON writes them.
//
//   node control_fetch.js --server 127.0.0.1:PORT --group GROUP [--node ID]
'use strict';

const x = require('../../conformance/lib/xds');

const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const ALL = ['listeners', 'http_routes', 'grpc_routes', 'stream_routes', 'backends', 'secrets', 'extensions'];

(async () => {
  const Cds = x.controlClientClass();
  const client = new Cds(args.server, x.grpc.credentials.createInsecure());
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));
  const node = args.node || 'k8s-crds-control';
  const s = new x.Stream(client.StreamConfiguration(), node);
  s.send({node_id: node, cluster: args.group, version: '', nonce: '', subscriptions: ALL});
  const resp = await s.next(5000);
  if (!resp || !resp.snapshot) {
    console.error(`no snapshot for group ${args.group}: ${s.error || 'nothing within 5 s'}`);
    process.exit(1);
  }
  s.send({node_id: node, cluster: args.group, version: resp.version, nonce: resp.nonce, subscriptions: ALL,
    result_status: 'DISCOVERY_RESULT_STATUS_ACK'});
  const b64 = (k, v) => (v && v.type === 'Buffer' && Array.isArray(v.data) ? Buffer.from(v.data).toString('base64') : v);
  console.log(JSON.stringify(resp.snapshot, b64));
  s.close();
  client.close();
  process.exit(0);
})().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
