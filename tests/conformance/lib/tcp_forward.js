#!/usr/bin/env node
// tcp_forward.js — a loopback TCP forwarder the tests put between an xDS client and
// the Sextant replicas, to move the client from one replica to another.
//
//   node tcp_forward.js --port-file FILE --target-file TARGETS
//
// Listens on a free 127.0.0.1 port (written to FILE once listening). Each new
// connection goes to the address in TARGETS ("host:port", re-read on SIGHUP).
// Connections already open stay where they are: they end when their replica goes
// away, and the client's reconnection then reaches the new target.
'use strict';
const fs = require('fs');
const net = require('net');

const {arg, writePortFile} = require('../../lib/cli.js');
const portFile = arg('port-file', '');
const targetFile = arg('target-file', '');
let target = null;
function readTarget() {
  const [host, port] = fs.readFileSync(targetFile, 'utf8').trim().split(':');
  target = {host, port: Number(port)};
  console.log(`tcp_forward: new connections go to ${host}:${port}`);
}
readTarget();
process.on('SIGHUP', readTarget);

const server = net.createServer((down) => {
  const up = net.connect(target.port, target.host);
  down.pipe(up);
  up.pipe(down);
  const close = () => {
    down.destroy();
    up.destroy();
  };
  down.on('error', close);
  up.on('error', close);
  down.on('close', close);
  up.on('close', close);
});
server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  console.log(`tcp_forward: listening on 127.0.0.1:${port}`);
  writePortFile(portFile, port);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
