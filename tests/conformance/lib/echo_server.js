#!/usr/bin/env node
// echo_server.js — a test gRPC backend: answers sextant.test.Echo/Hello with its name.
//
//   node echo_server.js --name A [--host 127.0.0.1] [--port 0] [--port-file FILE]
//
// Listens on --host (a loopback address, 127.0.0.1 by default; port 0 picks a free
// one); writes the bound port to --port-file once it accepts calls, so the test never
// races a port. Two backends on different loopback addresses can share one port, as
// the pods behind one Kubernetes Service port do. Exits on SIGTERM/SIGINT.
'use strict';
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const {arg, writePortFile} = require('../../lib/cli.js');
const name = arg('name', 'echo');
const host = arg('host', '127.0.0.1');
const port = Number(arg('port', '0'));
const portFile = arg('port-file', '');

const def = protoLoader.loadSync(path.join(__dirname, '..', 'proto', 'echo.proto'), {keepCase: true});
const echo = grpc.loadPackageDefinition(def).sextant.test;

const server = new grpc.Server();
server.addService(echo.Echo.service, {
  Hello(call, cb) {
    cb(null, {backend: name, message: call.request.message});
  },
});
server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(`echo_server ${name}: ${err.message}`);
    process.exit(1);
  }
  console.log(`echo_server ${name} listening on ${host}:${bound}`);
  if (portFile) {
    writePortFile(portFile, bound);
  }
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.forceShutdown();
    process.exit(0);
  });
}
