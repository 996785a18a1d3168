#!/usr/bin/env node
// xds_client.js — a proxyless gRPC client (@grpc/grpc-js-xds) that calls
// sextant.test.Echo/Hello on TARGET over and over and logs each outcome.
//
//   GRPC_XDS_BOOTSTRAP_CONFIG='{...}' node xds_client.js --target xds:///echo.test \
//       --out FILE [--interval-ms 50] [--deadline-ms 2000]
//
// One call at a time; each result is one line appended to FILE:
//   <unix ms> ok <backend>
//   <unix ms> err <grpc code> <code name> <details>
// so the shell test can wait for "the last line says backend B" with a deadline.
// Runs until SIGTERM/SIGINT.
'use strict';
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
require('@grpc/grpc-js-xds').register();

const {arg} = require('../../lib/cli.js');
const target = arg('target', 'xds:///echo.test');
const out = arg('out', '/dev/stdout');
const interval = Number(arg('interval-ms', '50'));
const deadlineMs = Number(arg('deadline-ms', '2000'));

const def = protoLoader.loadSync(path.join(__dirname, '..', 'proto', 'echo.proto'), {keepCase: true});
const Echo = grpc.loadPackageDefinition(def).sextant.test.Echo;
const client = new Echo(target, grpc.credentials.createInsecure());
const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

let stopping = false;
let seq = 0;
function log(line) {
  fs.appendFileSync(out, `${Date.now()} ${line}\n`);
}
function once() {
  if (stopping) return;
  seq++;
  client.Hello({message: `call ${seq}`}, {deadline: Date.now() + deadlineMs}, (err, reply) => {
    if (err) log(`err ${err.code} ${CODE_NAMES[err.code] || '?'} ${String(err.details || err.message).replace(/\s+/g, ' ')}`);
    else log(`ok ${reply.backend}`);
    setTimeout(once, interval);
  });
}
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    stopping = true;
    client.close();
    process.exit(0);
  });
}
once();
