#!/usr/bin/env node
// k8s_gateway_api.js — the Gateway API conformance scenarios end to end: the objects
// of tests/k8s/fixtures/ applied with kubectl to the test API server, each scenario in
// namespaces of its own (<prefix>-infra, <prefix>-web-backend, <prefix>-app-backend),
// translated by a real `sextant serve`; then, for each scenario, the status Sextant
// wrote (read back with kubectl get -o json: conditions with the Gateway API's reasons,
// observedGeneration, attachedRoutes, addresses) and what its Gateways' proxy groups are
// served over ADS, decoded with Envoy's protos and read as a proxy reads it: which
// backend (cluster and endpoints) the requests of the upstream conformance test reach.
// Then changes: a ReferenceGrant added and removed, weights changed, a route deleted.
//
//   K8S_DIR=<k8s_start dir> XDS_SERVER=127.0.0.1:PORT GATEWAY_ADDRESS=IP node k8s_gateway_api.js
//
// What Sextant documents differently from the upstream tests (server/k8s/gw.h): a rule
// left with no backend to forward to is not served, so its requests get 404 where the
// upstream tests expect 500.
'use strict';

const x = require('./xds');
const k = require('./k8s');

const DIR = process.env.K8S_DIR;
const SERVER = process.env.XDS_SERVER;
const ADDRESS = process.env.GATEWAY_ADDRESS;
const CONTROLLER = 'sextant.dev/gateway-controller';
const GROUP = 'gateway.networking.k8s.io';
const KINDS = ['gatewayclasses', 'gateways', 'httproutes', 'grpcroutes', 'tlsroutes'];
const STATUS_MS = 20000;
const XDS_MS = 15000;

// The ready endpoints of base.yaml's EndpointSlices, by Service port: what a proxy must
// be given for each backend (10.1.1.13 is not ready; 10.1.1.12 has no conditions,
// which means ready).
const ENDPOINTS = {
  'infra-backend-v1:8080': ['10.1.1.11:3000', '10.1.1.12:3000'],
  'infra-backend-v2:8080': ['10.1.2.11:3000', '10.1.2.12:3000'],
  'infra-backend-v3:8080': ['10.1.3.11:3000'],
  'web-backend:8080': ['10.2.1.11:3000', '10.2.1.12:3000'],
  'tcp-backend:8443': ['10.1.4.11:8443'],
  'grpc-infra-backend-v1:8080': ['10.1.5.11:3000'],
  'grpc-infra-backend-v2:8080': ['10.1.6.11:3000'],
};

const C = (what, problem) => ({what, problem: problem || ''});
const infra = (p) => `${p}-infra`;
const web = (p) => `${p}-web-backend`;

// ------------------------------------------------------------------ status checks

const KIND_LIST = (...kinds) => kinds.map((kind) => ({group: GROUP, kind}));
const HTTP_KINDS = KIND_LIST('HTTPRoute', 'GRPCRoute');

// condChecks(label, obj, conditions, want): want maps a condition type to
// [status, reason]; each must be there at the object's current generation.
function condChecks(label, obj, conditions, want) {
  const gen = obj ? obj.metadata.generation : undefined;
  return Object.entries(want).map(([type, [status, reason]]) =>
    C(
      `${label}: ${type}=${status} (${reason}) at observedGeneration ${gen}`,
      obj ? k.condProblem(conditions, type, status, reason, gen) : 'not found',
    ),
  );
}

// gateway(objs, ns, name, want): the Gateway's conditions (want.accepted, want.programmed
// as [status, reason]), its addresses, and per listener (want.listeners[name]) its
// conditions, supportedKinds and attachedRoutes.
function gateway(objs, ns, name, want) {
  const gw = k.find(objs, 'Gateway', ns, name);
  const label = `Gateway ${ns}/${name}`;
  const out = condChecks(label, gw, gw && gw.status && gw.status.conditions, {
    Accepted: want.accepted || ['True', 'Accepted'],
    Programmed: want.programmed || ['True', 'Programmed'],
  });
  out.push(
    C(
      `${label}: status.addresses is ${ADDRESS}`,
      k.eq('addresses', gw && gw.status && gw.status.addresses, [{type: 'IPAddress', value: ADDRESS}]),
    ),
  );
  for (const [lname, lw] of Object.entries(want.listeners)) {
    const ls = k.listenerStatus(gw, lname);
    const ll = `${label} listener ${lname}`;
    if (!ls) {
      out.push(C(`${ll}: has a status`, 'no status.listeners entry'));
      continue;
    }
    out.push(C(`${ll}: attachedRoutes ${lw.attached}`, k.eq('attachedRoutes', ls.attachedRoutes, lw.attached)));
    out.push(C(`${ll}: supportedKinds`, k.eq('supportedKinds', ls.supportedKinds, lw.kinds || HTTP_KINDS)));
    out.push(
      ...condChecks(ll, gw, ls.conditions, {
        Accepted: ['True', 'Accepted'],
        Programmed: lw.programmed || ['True', 'Programmed'],
        ResolvedRefs: lw.resolved || ['True', 'ResolvedRefs'],
        Conflicted: ['False', 'NoConflicts'],
      }),
    );
  }
  return out;
}

// route(objs, kind, ns, name, parent, want): the route's status.parents entry of this
// controller for parent {ns, name, section}: Accepted and ResolvedRefs as want says
// ([status, reason]; both True by default).
function route(objs, kind, ns, name, parent, want = {}) {
  const r = k.find(objs, kind, ns, name);
  const sec = parent.section ? `/${parent.section}` : '';
  const label = `${kind} ${ns}/${name} on Gateway ${parent.ns}/${parent.name}${sec}`;
  const p = k.routeParent(r, parent.ns, parent.name, parent.section);
  if (!p) return [C(`${label}: has a status.parents entry`, r ? JSON.stringify(r.status) : 'route not found')];
  return [
    C(`${label}: written by ${CONTROLLER}`, k.eq('controllerName', p.controllerName, CONTROLLER)),
    ...condChecks(label, r, p.conditions, {
      Accepted: want.accepted || ['True', 'Accepted'],
      ResolvedRefs: want.resolved || ['True', 'ResolvedRefs'],
    }),
  ];
}

// The Gateway "same-namespace" of many fixtures, in the scenario's infra namespace: as a
// route's parent, and its status with `attached` routes on its listener http.
const SAME_NS = (p) => ({ns: infra(p), name: 'same-namespace'});
const sameNamespace = (objs, p, attached = 1) => gateway(objs, infra(p), 'same-namespace', {listeners: {http: {attached}}});

// ------------------------------------------------------------------ xDS checks

// The cluster name of a Service port in the IR (server/k8s/gw.h): <ns>/<service>:<port>,
// ":grpc" appended when gRPC is spoken to it.
const cluster = (ns, svcPort, suffix = '') => `${ns}/${svcPort}${suffix}`;

// backendChecks(view, label, ns, svcPort, suffix): the cluster of the Service port is
// served (EDS) with the Service's ready endpoints.
function backendChecks(view, label, ns, svcPort, suffix = '') {
  const name = cluster(ns, svcPort, suffix);
  const c = view.clusters[name];
  if (!c) return [C(`${label}: cluster ${name} is served`, `clusters: ${Object.keys(view.clusters).join(', ')}`)];
  return [
    C(
      `${label}: cluster ${name} has the endpoints of ${ns}/${svcPort.split(':')[0]}`,
      k.eq('endpoints', view.endpoints[name], ENDPOINTS[svcPort]),
    ),
  ];
}

// reaches(view, label, result, ns, svcPort, suffix): the request's result forwards to
// exactly that Service port's cluster, which is served with its endpoints.
function reaches(view, label, result, ns, svcPort, suffix = '') {
  const want = [{name: cluster(ns, svcPort, suffix), weight: null}];
  const p = k.eq('forwarded to', result.clusters, want);
  if (p) return [C(`${label} reaches ${ns}/${svcPort}`, `${p} (${JSON.stringify(result)})`)];
  return [C(`${label} reaches ${ns}/${svcPort}`), ...backendChecks(view, label, ns, svcPort, suffix)];
}

// notFound(label, result): the request gets 404 (no virtual host or route takes it).
function notFound(label, result) {
  return [C(`${label} gets 404`, k.eq('result', result, {status: 404}))];
}

// httpCases(view, ns, port, cases): each case [host, path, headers, svcPort | 404] of
// the upstream test: the request to the listener on PORT (over TLS with the host as SNI
// on 443) reaches that Service port of namespace NS, or gets 404.
function httpCases(view, ns, port, cases) {
  return cases.flatMap(([host, path, headers, want]) => {
    const label = `${host || '(any host)'} ${path}${headers ? ' ' + JSON.stringify(headers) : ''}`;
    const h = host || 'gateway.example';
    const result = k.httpRequest(view, port, {host: h, path, headers, sni: port === 443 ? h : undefined});
    return want === 404 ? notFound(label, result) : reaches(view, label, result, ns, want);
  });
}

// listenerChecks(view, group, port): the Gateway's listener "<group>:<port>" binds PORT.
function listenerChecks(view, group, port) {
  const name = `${group}:${port}`;
  const l = view.listeners[name];
  if (!l) return [C(`listener ${name} is served`, `listeners: ${Object.keys(view.listeners).join(', ') || 'none'}`)];
  const sa = l.address && l.address.socket_address;
  return [C(`listener ${name} binds port ${port}`, k.eq('address', sa && `${sa.address}:${sa.port_value}`, `0.0.0.0:${port}`))];
}

function noListeners(view, group) {
  return [C(`group ${group} is served no listener`, k.eq('listeners', Object.keys(view.listeners), []))];
}

// ------------------------------------------------------------------ the scenarios
//
// Each: prefix (its namespaces), fixture files (on base.yaml), keep (which objects),
// status(objs, prefix) and xds {"<namespace suffix>/<gateway>": evaluate(view, prefix,
// group)} for the state after the first apply.

const SCENARIOS = [
  {
    name: 'HTTPRouteSimpleSameNamespace',
    prefix: 'simple',
    files: ['httproute-simple-same-namespace.yaml'],
    status: (o, p) => [
      ...sameNamespace(o, p),
      ...route(o, 'HTTPRoute', infra(p), `${p}-infra-test`, SAME_NS(p)),
    ],
    xds: {
      'infra/same-namespace': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [[null, '/', null, 'infra-backend-v1:8080']]),
      ],
    },
  },
  {
    name: 'HTTPRouteCrossNamespace',
    prefix: 'xns',
    files: ['httproute-cross-namespace.yaml'],
    status: (o, p) => [
      ...gateway(o, infra(p), 'backend-namespaces', {listeners: {http: {attached: 1}}}),
      ...route(o, 'HTTPRoute', web(p), 'cross-namespace', {ns: infra(p), name: 'backend-namespaces'}),
      // its twin on a Gateway that admits routes of its own namespace only
      ...sameNamespace(o, p, 0),
      ...route(o, 'HTTPRoute', web(p), 'cross-namespace-not-allowed', SAME_NS(p), {accepted: ['False', 'NotAllowedByListeners']}),
    ],
    xds: {
      'infra/backend-namespaces': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, web(p), 80, [[null, '/', null, 'web-backend:8080']]),
      ],
      'infra/same-namespace': (v, p, g) => [...listenerChecks(v, g, 80), ...httpCases(v, web(p), 80, [[null, '/', null, 404]])],
    },
  },
  {
    // HTTPRouteInvalidReferenceGrant first (every grant is wrong), then the grant of
    // HTTPRouteReferenceGrant is added, then deleted again (see the changes below).
    name: 'HTTPRouteCrossNamespace without a ReferenceGrant (HTTPRouteInvalidReferenceGrant)',
    prefix: 'rg',
    files: ['httproute-invalid-reference-grant.yaml'],
    status: (o, p) => [
      ...sameNamespace(o, p),
      ...route(o, 'HTTPRoute', infra(p), 'reference-grant', SAME_NS(p), {resolved: ['False', 'RefNotPermitted']}),
    ],
    xds: {
      'infra/same-namespace': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, web(p), 80, [[null, '/', null, 404]]),
        C(`cluster ${cluster(web(p), 'web-backend:8080')} is not served`, v.clusters[cluster(web(p), 'web-backend:8080')] ? 'it is' : ''),
      ],
    },
  },
  {
    name: 'HTTPRouteInvalidBackendRefUnknownKind',
    prefix: 'unk',
    files: ['httproute-invalid-backendref-unknown-kind.yaml'],
    status: (o, p) => [
      ...sameNamespace(o, p),
      ...route(o, 'HTTPRoute', infra(p), 'invalid-backend-ref-unknown-kind', SAME_NS(p), {resolved: ['False', 'InvalidKind']}),
    ],
    xds: {
      'infra/same-namespace': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [[null, '/v2', null, 404]]),
        C('no cluster is served for the backendRef of unknown kind', k.eq('clusters', Object.keys(v.clusters), [])),
      ],
    },
  },
  {
    name: 'HTTPRouteHostnameIntersection',
    prefix: 'hi',
    files: ['httproute-hostname-intersection.yaml'],
    status: (o, p) => {
      const gw = {ns: infra(p), name: 'httproute-hostname-intersection'};
      return [
        ...gateway(o, infra(p), 'httproute-hostname-intersection', {
          listeners: {'listener-1': {attached: 2}, 'listener-2': {attached: 1}, 'listener-3': {attached: 1}},
        }),
        ...route(o, 'HTTPRoute', infra(p), 'specific-host-matches-listener-specific-host', gw),
        ...route(o, 'HTTPRoute', infra(p), 'specific-host-matches-listener-wildcard-host', gw),
        ...route(o, 'HTTPRoute', infra(p), 'wildcard-host-matches-listener-specific-host', gw),
        ...route(o, 'HTTPRoute', infra(p), 'wildcard-host-matches-listener-wildcard-host', gw),
        ...route(o, 'HTTPRoute', infra(p), 'no-intersecting-hosts', gw, {accepted: ['False', 'NoMatchingListenerHostname']}),
        ...gateway(o, infra(p), 'httproute-hostname-intersection-all', {listeners: {'listener-1': {attached: 1}}}),
        ...route(o, 'HTTPRoute', infra(p), 'httproute-hostname-intersection-all', {
          ns: infra(p),
          name: 'httproute-hostname-intersection-all',
        }),
      ];
    },
    xds: {
      'infra/httproute-hostname-intersection': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [
          ['very.specific.com', '/s1', null, 'infra-backend-v1:8080'],
          ['very.specific.com:1234', '/s1', null, 'infra-backend-v1:8080'],
          ['non.matching.com', '/s1', null, 404],
          ['foo.nonmatchingwildcard.io', '/s1', null, 404],
          ['foo.wildcard.io', '/s1', null, 404],
          ['very.specific.com', '/non-matching-prefix', null, 404],
          ['foo.wildcard.io', '/s2', null, 'infra-backend-v2:8080'],
          ['bar.wildcard.io', '/s2', null, 'infra-backend-v2:8080'],
          ['foo.bar.wildcard.io', '/s2', null, 'infra-backend-v2:8080'],
          ['non.matching.com', '/s2', null, 404],
          ['wildcard.io', '/s2', null, 404],
          ['very.specific.com', '/s2', null, 404],
          ['foo.wildcard.io', '/non-matching-prefix', null, 404],
          ['very.specific.com', '/s3', null, 'infra-backend-v3:8080'],
          ['non.matching.com', '/s3', null, 404],
          ['foo.specific.com', '/s3', null, 404],
          ['foo.wildcard.io', '/s3', null, 404],
          ['foo.anotherwildcard.io', '/s4', null, 'infra-backend-v1:8080'],
          ['bar.anotherwildcard.io', '/s4', null, 'infra-backend-v1:8080'],
          ['foo.bar.anotherwildcard.io', '/s4', null, 'infra-backend-v1:8080'],
          ['anotherwildcard.io', '/s4', null, 404],
          ['foo.wildcard.io', '/s4', null, 404],
          ['very.specific.com', '/s4', null, 404],
          ['foo.anotherwildcard.io', '/non-matching-prefix', null, 404],
          ['specific.but.wrong.com', '/s5', null, 404],
          ['wildcard.io', '/s5', null, 404],
        ]),
      ],
      'infra/httproute-hostname-intersection-all': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [
          ['first.com', '/', null, 'infra-backend-v2:8080'],
          ['sub.first.com', '/', null, 'infra-backend-v2:8080'],
          ['second.com', '/', null, 'infra-backend-v2:8080'],
          ['sub.second.com', '/', null, 'infra-backend-v2:8080'],
          ['third.com', '/', null, 404],
          ['sub.third.com', '/', null, 404],
        ]),
      ],
    },
  },
  {
    name: 'HTTPRouteListenerHostnameMatching',
    prefix: 'lhm',
    files: ['httproute-listener-hostname-matching.yaml'],
    status: (o, p) => {
      const gw = (section) => ({ns: infra(p), name: 'httproute-listener-hostname-matching', section});
      return [
        ...gateway(o, infra(p), 'httproute-listener-hostname-matching', {
          listeners: {'listener-1': {attached: 1}, 'listener-2': {attached: 1}, 'listener-3': {attached: 1}, 'listener-4': {attached: 1}},
        }),
        ...route(o, 'HTTPRoute', infra(p), 'backend-v1', gw('listener-1')),
        ...route(o, 'HTTPRoute', infra(p), 'backend-v2', gw('listener-2')),
        ...route(o, 'HTTPRoute', infra(p), 'backend-v3', gw('listener-3')),
        ...route(o, 'HTTPRoute', infra(p), 'backend-v3', gw('listener-4')),
      ];
    },
    xds: {
      'infra/httproute-listener-hostname-matching': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [
          ['bar.com', '/', null, 'infra-backend-v1:8080'],
          ['foo.bar.com', '/', null, 'infra-backend-v2:8080'],
          ['baz.bar.com', '/', null, 'infra-backend-v3:8080'],
          ['boo.bar.com', '/', null, 'infra-backend-v3:8080'],
          ['multiple.prefixes.bar.com', '/', null, 'infra-backend-v3:8080'],
          ['multiple.prefixes.foo.com', '/', null, 'infra-backend-v3:8080'],
          ['foo.com', '/', null, 404],
          ['no.matching.host', '/', null, 404],
        ]),
      ],
    },
  },
  {
    name: 'HTTPRouteMatching',
    prefix: 'match',
    files: ['httproute-matching.yaml'],
    status: (o, p) => [
      ...sameNamespace(o, p),
      ...route(o, 'HTTPRoute', infra(p), 'matching', SAME_NS(p)),
    ],
    xds: {
      'infra/same-namespace': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [
          [null, '/', null, 'infra-backend-v1:8080'],
          [null, '/example', null, 'infra-backend-v1:8080'],
          [null, '/', {Version: 'one'}, 'infra-backend-v1:8080'],
          [null, '/v2', null, 'infra-backend-v2:8080'],
          [null, '/v2/example', null, 'infra-backend-v2:8080'],
          [null, '/', {Version: 'two'}, 'infra-backend-v2:8080'],
          [null, '/v2/', null, 'infra-backend-v2:8080'],
          [null, '/v2example', null, 'infra-backend-v1:8080'],
          [null, '/foo/v2/example', null, 'infra-backend-v1:8080'],
        ]),
      ],
    },
  },
  {
    name: 'HTTPRouteWeight',
    prefix: 'weight',
    files: ['httproute-weight.yaml'],
    status: (o, p) => [
      ...sameNamespace(o, p),
      ...route(o, 'HTTPRoute', infra(p), 'weighted-backends', SAME_NS(p)),
      C(
        'HTTPRoute weighted-backends is at generation 1',
        k.eq('generation', (k.find(o, 'HTTPRoute', infra(p), 'weighted-backends') || {metadata: {}}).metadata.generation, 1),
      ),
    ],
    xds: {
      'infra/same-namespace': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...weights(v, infra(p), {'infra-backend-v1:8080': 70, 'infra-backend-v2:8080': 30}),
      ],
    },
  },
  {
    name: 'GatewayInvalidTLSConfiguration',
    prefix: 'tls',
    files: ['gateway-invalid-tls-configuration.yaml'],
    // The fixture's expired certificate expires on 2026-11-27: whether it is expired
    // depends on the day the test runs, so that Gateway is left to the unit test, which
    // fixes the time.
    keep: (o) => !(o.kind === 'Gateway' && o.metadata.name === 'gateway-certificate-expired'),
    status: (o, p) => {
      const invalid = {programmed: ['False', 'Invalid'], resolved: ['False', 'InvalidCertificateRef'], attached: 0};
      const out = [];
      for (const name of [
        'gateway-certificate-nonexistent-secret',
        'gateway-certificate-unsupported-group',
        'gateway-certificate-unsupported-kind',
        'gateway-certificate-malformed-secret',
      ])
        out.push(...gateway(o, infra(p), name, {programmed: ['False', 'Invalid'], listeners: {https: invalid}}));
      out.push(
        ...gateway(o, web(p), 'gateway-certificate-other-namespace', {
          programmed: ['False', 'Invalid'],
          listeners: {https: {...invalid, resolved: ['False', 'RefNotPermitted']}},
        }),
        ...gateway(o, infra(p), 'gateway-certificate-valid', {listeners: {https: {attached: 1}}}),
        ...route(o, 'HTTPRoute', infra(p), 'https-route', {ns: infra(p), name: 'gateway-certificate-valid'}),
      );
      return out;
    },
    xds: {
      'infra/gateway-certificate-nonexistent-secret': (v, p, g) => noListeners(v, g),
      'infra/gateway-certificate-unsupported-group': (v, p, g) => noListeners(v, g),
      'infra/gateway-certificate-unsupported-kind': (v, p, g) => noListeners(v, g),
      'infra/gateway-certificate-malformed-secret': (v, p, g) => noListeners(v, g),
      'web-backend/gateway-certificate-other-namespace': (v, p, g) => noListeners(v, g),
      'infra/gateway-certificate-valid': (v, p, g) => [
        ...listenerChecks(v, g, 443),
        ...tlsCertificate(v, 443, 'second-example.org', `${infra(p)}/tls-validity-checks-certificate`),
        ...httpCases(v, infra(p), 443, [
          ['second-example.org', '/', null, 'infra-backend-v1:8080'],
          ['other.example.com', '/', null, 404],
        ]),
      ],
    },
  },
  {
    name: 'GatewayWithAttachedRoutes',
    prefix: 'att',
    files: ['gateway-with-attached-routes.yaml'],
    status: (o, p) => [
      ...gateway(o, infra(p), 'gateway-with-one-attached-route', {listeners: {http: {attached: 1, kinds: KIND_LIST('HTTPRoute')}}}),
      ...gateway(o, infra(p), 'gateway-with-two-attached-routes', {listeners: {http: {attached: 2, kinds: KIND_LIST('HTTPRoute')}}}),
      ...route(
        o,
        'HTTPRoute',
        infra(p),
        'http-route-not-accepted',
        {ns: infra(p), name: 'gateway-with-two-attached-routes'},
        {accepted: ['False', 'NoMatchingListenerHostname']},
      ),
      ...gateway(o, infra(p), 'unresolved-gateway-with-one-attached-unresolved-route', {
        programmed: ['False', 'Invalid'],
        listeners: {
          tls: {attached: 1, kinds: KIND_LIST('HTTPRoute'), programmed: ['False', 'Invalid'], resolved: ['False', 'InvalidCertificateRef']},
        },
      }),
      ...route(
        o,
        'HTTPRoute',
        infra(p),
        'http-route-4',
        {ns: infra(p), name: 'unresolved-gateway-with-one-attached-unresolved-route', section: 'tls'},
        {resolved: ['False', 'BackendNotFound']},
      ),
    ],
    xds: {
      'infra/gateway-with-one-attached-route': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [[null, '/', null, 'infra-backend-v1:8080']]),
      ],
      'infra/gateway-with-two-attached-routes': (v, p, g) => [
        ...listenerChecks(v, g, 80),
        ...httpCases(v, infra(p), 80, [
          ['foo.example.com', '/', null, 'infra-backend-v1:8080'],
          ['not-accepted.test.com', '/', null, 404],
        ]),
      ],
      'infra/unresolved-gateway-with-one-attached-unresolved-route': (v, p, g) => noListeners(v, g),
    },
  },
  {
    name: 'GRPCRouteExactMethodMatching',
    prefix: 'grpc',
    files: ['grpcroute-exact-method-matching.yaml'],
    status: (o, p) => [
      ...sameNamespace(o, p),
      ...route(o, 'GRPCRoute', infra(p), 'exact-matching', SAME_NS(p)),
    ],
    xds: {
      'infra/same-namespace': (v, p, g) => {
        const svc = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';
        const call = (method) => k.grpcRequest(v, 80, 'grpc.example', svc, method);
        return [
          ...listenerChecks(v, g, 80),
          ...reaches(v, `gRPC ${svc}/Echo`, call('Echo'), infra(p), 'grpc-infra-backend-v1:8080', ':grpc'),
          ...reaches(v, `gRPC ${svc}/EchoTwo`, call('EchoTwo'), infra(p), 'grpc-infra-backend-v2:8080', ':grpc'),
          // 404 is what a gRPC client sees as UNIMPLEMENTED
          ...notFound(`gRPC ${svc}/EchoThree`, call('EchoThree')),
          ...['grpc-infra-backend-v1:8080', 'grpc-infra-backend-v2:8080'].map((b) => {
            const c = v.clusters[cluster(infra(p), b, ':grpc')];
            const o =
              c &&
              c.typed_extension_protocol_options &&
              c.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
            const h = o && o.decoded && o.decoded.explicit_http_config;
            return C(
              `cluster ${cluster(infra(p), b, ':grpc')} speaks HTTP/2 to its endpoints`,
              h && h.http2_protocol_options ? '' : JSON.stringify(o),
            );
          }),
        ];
      },
    },
  },
  {
    name: 'TLSRouteSimpleSameNamespace',
    prefix: 'tlsr',
    files: ['tlsroute-simple-same-namespace.yaml'],
    status: (o, p) => [
      ...gateway(o, infra(p), 'gateway-tlsroute', {listeners: {https: {attached: 1, kinds: KIND_LIST('TLSRoute')}}}),
      ...route(o, 'TLSRoute', infra(p), `${p}-infra-test`, {ns: infra(p), name: 'gateway-tlsroute'}),
    ],
    xds: {
      'infra/gateway-tlsroute': (v, p, g) => {
        const l = k.listenerOn(v, 443);
        const inspector = ((l && l.listener_filters) || []).some((f) => f.name === 'envoy.filters.listener.tls_inspector');
        const abc = k.tlsConnection(v, 443, 'abc.example.com');
        const name = cluster(infra(p), 'tcp-backend:8443');
        return [
          ...listenerChecks(v, g, 443),
          C('the TLS listener reads the SNI (tls_inspector)', inspector ? '' : JSON.stringify(l && l.listener_filters)),
          C('a connection with SNI abc.example.com is passed through to tcp-backend', k.eq('result', abc, {cluster: name})),
          ...backendChecks(v, 'SNI abc.example.com', infra(p), 'tcp-backend:8443'),
          C(
            'a connection with SNI other.example.com is not taken',
            abc.cluster && k.tlsConnection(v, 443, 'other.example.com').cluster ? 'it is' : '',
          ),
          C('the passthrough listener terminates no TLS', k.downstreamTls(v, 443, 'abc.example.com') ? 'it has a transport socket' : ''),
        ];
      },
    },
  },
];

// weights(view, ns, want): a request to "/" is split over exactly the clusters of want
// ({svcPort: weight}; weight-0 backends absent), each served with its endpoints.
function weights(view, ns, want) {
  const result = k.httpRequest(view, 80, {host: 'gateway.example', path: '/'});
  const got = Object.fromEntries((result.clusters || []).filter((c) => c.weight).map((c) => [c.name, c.weight]));
  const exp = Object.fromEntries(Object.entries(want).map(([b, w]) => [cluster(ns, b), w]));
  return [
    C(`/ is split ${JSON.stringify(want)}`, k.eq('weighted clusters', got, exp) + (result.clusters ? '' : ` (${JSON.stringify(result)})`)),
    ...Object.keys(want).flatMap((b) => backendChecks(view, '/', ns, b)),
  ];
}

// tlsCertificate(view, port, sni, secret): the listener's filter chain for SNI
// terminates TLS with the SDS secret of that name, served with the Secret's tls.crt.
let CERT = null;
function tlsCertificate(view, port, sni, secret) {
  const ctx = k.downstreamTls(view, port, sni);
  const sds = (ctx && ctx.common_tls_context && ctx.common_tls_context.tls_certificate_sds_secret_configs) || [];
  const out = [
    C(
      `the listener on ${port} terminates TLS for ${sni} with secret ${secret}`,
      k.eq(
        'sds secrets',
        sds.map((s) => s.name),
        [secret],
      ),
    ),
  ];
  const s = view.secrets[secret];
  if (!s) return [...out, C(`secret ${secret} is served`, `secrets: ${Object.keys(view.secrets).join(', ') || 'none'}`)];
  const chain = s.tls_certificate && s.tls_certificate.certificate_chain;
  const pem = chain && (chain.inline_bytes ? Buffer.from(chain.inline_bytes).toString() : chain.inline_string);
  const want = Buffer.from(CERT['tls.crt'], 'base64').toString();
  out.push(
    C(
      `secret ${secret} carries the Secret's certificate`,
      pem && want && pem.trim() === want.trim() ? '' : `got ${JSON.stringify(pem).slice(0, 80)}`,
    ),
  );
  const key = s.tls_certificate && s.tls_certificate.private_key;
  out.push(C(`secret ${secret} carries a private key`, key ? '' : 'none'));
  return out;
}

// ------------------------------------------------------------------ driving

// The proxy group of a scenario's Gateway "<namespace suffix>/<name>" (the default
// k8s.group_template, <namespace>/<gateway>).
const groupOf = (s, key) => `${s.prefix}-${key}`;

// settleStatus(sections): sections [{what, evaluate(objs)}]; polls the status (one
// kubectl get of every kind for all of them) until every check passes or STATUS_MS
// pass, then reports each section's checks.
async function settleStatus(sections) {
  let results = [];
  await x.waitFor(STATUS_MS, () => {
    let objs;
    try {
      objs = k.getAll(DIR, KINDS);
    } catch (e) {
      results = sections.map((sec) => [C(`${sec.what}: the status can be read`, e.message)]);
      return false;
    }
    results = sections.map((sec) => {
      try {
        return sec.evaluate(objs);
      } catch (e) {
        return [C(`${sec.what}: the status is as expected`, e.stack)];
      }
    });
    return results.every((checks) => checks.every((c) => !c.problem));
  });
  sections.forEach((sec, n) => {
    console.log(`-- ${sec.what}: status`);
    for (const c of results[n]) x.check(c.what, !c.problem, c.problem);
  });
}

// settleXds(sections): sections [{what, items: [{watch, evaluate(view)}]}], all waited
// for at once (XDS_MS at most), then each section's checks reported.
async function settleXds(sections) {
  const results = await Promise.all(sections.map((sec) => Promise.all(sec.items.map((i) => i.watch.until(i.evaluate, XDS_MS)))));
  sections.forEach((sec, n) => {
    console.log(`-- ${sec.what}: served xDS`);
    results[n].forEach((checks, m) => {
      for (const c of checks) x.check(`[${sec.items[m].watch.group}] ${c.what}`, !c.problem, c.problem);
    });
  });
}

x.main(async () => {
  // ---- every scenario applied at once, each in its own namespaces
  // base.yaml's certificate for *.example.com, example.com, second-example.org and
  // *.wildcard.org, made anew: the fixture's is valid from a fixed day on.
  CERT = k.tlsSecretData(['*.example.com', 'example.com', 'second-example.org', '*.wildcard.org']);
  const objects = [];
  for (const s of SCENARIOS) {
    const objs = k.fixture(s.prefix, ['base.yaml', ...s.files], s.keep);
    for (const o of objs) if (o.kind === 'Secret' && o.metadata.name === 'tls-validity-checks-certificate') o.data = {...CERT};
    objects.push(...objs);
  }
  k.apply(DIR, objects);
  x.pass(`kubectl apply of ${objects.length} objects of ${SCENARIOS.length} scenarios`);

  const classes = (o) => {
    const ours = k.find(o, 'GatewayClass', '', 'sextant');
    const other = k.find(o, 'GatewayClass', '', 'other');
    return [
      ...condChecks('GatewayClass sextant', ours, ours && ours.status && ours.status.conditions, {Accepted: ['True', 'Accepted']}),
      // the class of another controller keeps the status the API server defaulted
      C(
        'GatewayClass other (another controller) is left alone',
        k.eq(
          'conditions',
          ((other && other.status && other.status.conditions) || []).map((c) => [c.type, c.status, c.reason]),
          [['Accepted', 'Unknown', 'Pending']],
        ),
      ),
    ];
  };
  await settleStatus([
    {what: 'GatewayClasses', evaluate: classes},
    ...SCENARIOS.map((s) => ({what: s.name, evaluate: (o) => s.status(o, s.prefix)})),
  ]);

  const watches = {};
  const watch = (group) => (watches[group] = watches[group] || new k.GroupWatch(SERVER, group, `k8s-conformance-${group}`));
  const xdsItems = (s, table) =>
    Object.entries(table).map(([gw, fn]) => {
      const group = groupOf(s, gw);
      return {watch: watch(group), evaluate: (v) => fn(v, s.prefix, group)};
    });
  await settleXds(SCENARIOS.map((s) => ({what: s.name, items: xdsItems(s, s.xds)})));

  // ---- changes
  const byName = (p) => SCENARIOS.find((s) => s.prefix === p);
  // HTTPRouteReferenceGrant: the grant that lets rg-infra's HTTPRoutes use web-backend
  const grant = k.fixture('rg', ['httproute-reference-grant.yaml'], (o) => o.kind === 'ReferenceGrant');
  // HTTPRouteWeight, changed: 20 / 0 / 80
  const weighted = k.fixture('weight', ['httproute-weight.yaml'], (o) => o.kind === 'HTTPRoute')[0];
  weighted.spec.rules[0].backendRefs.forEach((b, i) => (b.weight = [20, 0, 80][i]));
  k.apply(DIR, [...grant, weighted]);
  // GatewayWithAttachedRoutes: one of the two routes goes
  k.remove(
    DIR,
    k.fixture('att', ['gateway-with-attached-routes.yaml'], (o) => o.kind === 'HTTPRoute' && o.metadata.name === 'http-route-3'),
  );
  x.pass('a ReferenceGrant added, weights changed, a route deleted');

  const rg = byName('rg');
  const rgGroup = groupOf(rg, 'infra/same-namespace');
  await settleStatus([
    {
      what: 'HTTPRouteReferenceGrant (the grant added)',
      evaluate: (o) => route(o, 'HTTPRoute', infra('rg'), 'reference-grant', SAME_NS('rg')),
    },
    {
      what: 'HTTPRouteWeight (weights changed)',
      evaluate: (o) => [
        C(
          'HTTPRoute weighted-backends is at generation 2',
          k.eq('generation', (k.find(o, 'HTTPRoute', infra('weight'), 'weighted-backends') || {metadata: {}}).metadata.generation, 2),
        ),
        ...route(o, 'HTTPRoute', infra('weight'), 'weighted-backends', SAME_NS('weight')),
      ],
    },
    {
      what: 'GatewayWithAttachedRoutes (a route deleted)',
      evaluate: (o) =>
        gateway(o, infra('att'), 'gateway-with-two-attached-routes', {listeners: {http: {attached: 1, kinds: KIND_LIST('HTTPRoute')}}}),
    },
  ]);
  await settleXds([
    {
      what: 'HTTPRouteReferenceGrant (the grant added)',
      items: [{watch: watch(rgGroup), evaluate: (v) => httpCases(v, web('rg'), 80, [[null, '/', null, 'web-backend:8080']])}],
    },
    {
      what: 'HTTPRouteWeight (weights changed)',
      items: [
        {
          watch: watch(groupOf(byName('weight'), 'infra/same-namespace')),
          evaluate: (v) => weights(v, infra('weight'), {'infra-backend-v1:8080': 20, 'infra-backend-v3:8080': 80}),
        },
      ],
    },
    {
      what: 'GatewayWithAttachedRoutes (a route deleted)',
      items: [
        {
          watch: watch(groupOf(byName('att'), 'infra/gateway-with-two-attached-routes')),
          evaluate: (v) => {
            const routes = Object.values(v.routes).flatMap((rc) =>
              (rc.virtual_hosts || []).flatMap((vh) => (vh.routes || []).map((r) => r.name)),
            );
            return [
              C(
                'no route of the deleted http-route-3 is served',
                routes.some((n) => n.includes('/http-route-3/')) ? JSON.stringify(routes) : '',
              ),
              ...httpCases(v, infra('att'), 80, [['foo.example.com', '/', null, 'infra-backend-v1:8080']]),
            ];
          },
        },
      ],
    },
  ]);

  // HTTPRouteReferenceGrant, second half: the grant deleted, the backend is refused again
  k.remove(DIR, grant);
  const deleted = 'HTTPRouteReferenceGrant (the grant deleted)';
  await settleStatus([
    {
      what: deleted,
      evaluate: (o) => route(o, 'HTTPRoute', infra('rg'), 'reference-grant', SAME_NS('rg'), {resolved: ['False', 'RefNotPermitted']}),
    },
  ]);
  await settleXds([{what: deleted, items: [{watch: watch(rgGroup), evaluate: (v) => rg.xds['infra/same-namespace'](v, 'rg', rgGroup)}]}]);

  for (const w of Object.values(watches)) w.close();
});
