// snapshots.js — gateway.control.v1 ConfigSnapshots (IR JSON) for the conformance tests.
//
// A "service" is what a proxyless gRPC client needs to dial xds:///HOST: a listener of
// protocol LISTENER_PROTOCOL_GRPC on port 0 with HOST as its hostname, an HTTP route
// attached to it, and a backend cluster with its endpoints on loopback.
//
//   build([{host: 'echo.test', name: 'echo', ports: [50051]}])
//
// Service options: ports (endpoint ports on 127.0.0.1), zone, timeout (route request
// timeout), connectTimeout (cluster), listener (false: no listener and no route, the
// backend alone), listenerName (default NAME-grpc; Sextant names the listener's route
// configuration after it), weight (backend weight).
//
// From the shell:  node snapshots.js echo PORT [--no-listener]   (prints the JSON)
'use strict';

const NAMESPACE = 'conformance';

function build(services) {
  const snap = {listeners: [], http_routes: [], backends: []};
  for (const s of services) {
    const name = s.name;
    if (s.listener !== false) {
      snap.listeners.push({
        name: s.listenerName || `${name}-grpc`,
        protocol: 'LISTENER_PROTOCOL_GRPC',
        port: 0,
        hostnames: [s.host],
        attached_routes: [name],
      });
      snap.http_routes.push({
        name,
        namespace: NAMESPACE,
        hostnames: [s.host],
        rules: [
          {
            name: 'all',
            matches: [{path: '/', path_type: 'PathPrefix'}],
            backend_refs: [{name, namespace: NAMESPACE, weight: s.weight || 1}],
            timeouts: {request: s.timeout || '5s'},
          },
        ],
      });
    }
    snap.backends.push({
      name,
      namespace: NAMESPACE,
      protocol: 'grpc',
      connect_timeout: s.connectTimeout || '1s',
      endpoints: (s.ports || []).map((port) => ({address: '127.0.0.1', port, healthy: true, zone: s.zone || 'zone-a'})),
    });
  }
  return snap;
}

module.exports = {build, NAMESPACE};

if (require.main === module) {
  const [kind, port, ...rest] = process.argv.slice(2);
  if (kind !== 'echo' || !/^\d+$/.test(port || '')) {
    console.error('usage: node snapshots.js echo PORT [--no-listener]');
    process.exit(2);
  }
  const listener = !rest.includes('--no-listener');
  process.stdout.write(JSON.stringify(build([{host: 'echo.test', name: 'echo', ports: [Number(port)], listener}]), null, 2) + '\n');
}
