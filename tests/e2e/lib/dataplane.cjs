#!/usr/bin/env node
// dataplane.cjs — a gateway.control.v1 data plane for the browser tests: it subscribes
// to Sextant as NODE in GROUP and answers every snapshot with an ACK, like a healthy
// proxy, or with a NACK when the snapshot's JSON contains TEXT (--nack-matching), like
// a proxy that cannot load some setting. It reconnects when the stream drops and runs
// until SIGTERM. Each answer is one line on stdout:
//   <unix ms> ack <version>      <unix ms> nack <version> <error>
//
//   node dataplane.cjs --server 127.0.0.1:18000 --node dp-1 --group web [--nack-matching TEXT]
//
// It uses the repository's control.proto through the conformance tests' helpers
// (tests/conformance/lib/xds.js and its node_modules).
'use strict';
const x = require('../../conformance/lib/xds');

const {arg} = require('../../lib/cli.js');
const SERVER = arg('server');
const NODE = arg('node');
const GROUP = arg('group');
const NACK_TEXT = arg('nack-matching', null);
const ALL = ['listeners', 'http_routes', 'grpc_routes', 'stream_routes', 'backends', 'secrets', 'extensions'];
if (!SERVER || !NODE || !GROUP) {
  console.error('usage: dataplane.cjs --server HOST:PORT --node ID --group GROUP [--nack-matching TEXT]');
  process.exit(2);
}

const Cds = x.controlClientClass();
const client = new Cds(SERVER, x.grpc.credentials.createInsecure());
let stopping = false;
let call = null;

function log(line) {
  process.stdout.write(`${Date.now()} ${line}\n`);
}

function run() {
  if (stopping) return;
  let applied = '';
  call = client.StreamConfiguration();
  const send = (m) => call.write({node_id: NODE, cluster: GROUP, subscriptions: ALL, ...m});
  call.on('data', (r) => {
    const text = JSON.stringify(r.snapshot || {});
    if (NACK_TEXT && text.includes(NACK_TEXT)) {
      const error = `cannot apply version ${r.version}: it contains "${NACK_TEXT}"`;
      send({version: applied, nonce: r.nonce, result_status: 'DISCOVERY_RESULT_STATUS_NACK', error_detail: error});
      log(`nack ${r.version} ${error}`);
    } else {
      applied = r.version;
      send({version: r.version, nonce: r.nonce, result_status: 'DISCOVERY_RESULT_STATUS_ACK'});
      log(`ack ${r.version}`);
    }
  });
  let over = false;
  const again = (why) => {
    if (stopping || over) return;
    over = true;
    log(`stream ended (${why}); reconnecting`);
    call = null;
    setTimeout(run, 500);
  };
  call.on('error', (e) => again(e.message));
  call.on('end', () => again('end'));
  call.on('status', () => {});
  send({version: '', nonce: ''});
}

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    stopping = true;
    try {
      call?.end();
      call?.cancel();
    } catch {
      /* already closed */
    }
    client.close();
    process.exit(0);
  });
}
run();
