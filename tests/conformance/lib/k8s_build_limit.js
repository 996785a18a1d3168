#!/usr/bin/env node
// k8s_build_limit.js — a Gateway whose build goes over k8s.max_endpoints_per_snapshot
// keeps serving its last good snapshot. Against a `sextant serve` with the limit set to
// 3 and the test API server (K8S_DIR): HTTPRouteSimpleSameNamespace's objects
// (tests/k8s/fixtures/) are applied and served (version N, two endpoints); the
// EndpointSlice then grows to four ready endpoints: the Gateway's status says
// Programmed=False (NoResources, naming the limit), sextant_k8s_build_failures_total
// grows, no new snapshot is written for its group and its ADS client gets nothing new
// — while a later change to another Gateway is served; back to three endpoints, the new
// state is served and the Gateway is Programmed again.
//
//   K8S_DIR=... XDS_SERVER=127.0.0.1:PORT HTTP_PORT=... SEXTANT_DATABASE_URL=... node k8s_build_limit.js
'use strict';

const x = require('./xds');
const k = require('./k8s');
const {check} = x;

const DIR = process.env.K8S_DIR;
const SERVER = process.env.XDS_SERVER;
const HTTP_PORT = process.env.HTTP_PORT;
const LIMIT = 3;
const P = 'limit';
const NS = `${P}-infra`;
const GROUP = `${NS}/same-namespace`;
const WITNESS_GROUP = `${NS}/all-namespaces`;
const CLUSTER = `${NS}/infra-backend-v1:8080`;
const FAILURES = 'sextant_k8s_build_failures_total';
const WAIT_MS = 15000;

const C = (what, problem) => ({what, problem: problem || ''});
const report = (checks) => checks.forEach((c) => check(c.what, !c.problem, c.problem));

// The Gateway's conditions and its listener's Programmed condition.
function gatewayChecks(objs, programmed, listenerProgrammed, message) {
  const gw = k.find(objs, 'Gateway', NS, 'same-namespace');
  if (!gw) return [C(`Gateway ${NS}/same-namespace exists`, 'not found')];
  const gen = gw.metadata.generation;
  const conds = (gw.status && gw.status.conditions) || [];
  const l = k.listenerStatus(gw, 'http');
  const out = [
    C(
      `Gateway ${NS}/same-namespace: Accepted=True at observedGeneration ${gen}`,
      k.condProblem(conds, 'Accepted', 'True', 'Accepted', gen),
    ),
    C(`Gateway ${NS}/same-namespace: Programmed=${programmed.join(' (')})`, k.condProblem(conds, 'Programmed', ...programmed, gen)),
    C(
      `Gateway ${NS}/same-namespace listener http: Programmed=${listenerProgrammed.join(' (')})`,
      l ? k.condProblem(l.conditions, 'Programmed', ...listenerProgrammed, gen) : 'no listener status',
    ),
  ];
  if (message) {
    const c = k.cond(conds, 'Programmed');
    out.push(
      C(`the Programmed message says why: "${message}"`, c && c.message && c.message.includes(message) ? '' : `message: ${c && c.message}`),
    );
  }
  return out;
}

// Polls the status (kubectl get) until evaluate(objs) passes or WAIT_MS pass; reports.
async function status(evaluate) {
  let checks = [];
  await x.waitFor(WAIT_MS, () => {
    try {
      checks = evaluate(k.getAll(DIR, ['gateways', 'httproutes']));
    } catch (e) {
      checks = [C('the status is read back', e.message)];
    }
    return checks.every((c) => !c.problem);
  });
  report(checks);
}

function endpointsOf(slice, ips) {
  const s = JSON.parse(JSON.stringify(slice));
  s.endpoints = ips.map((ip) => ({addresses: [ip], conditions: {ready: true}}));
  return s;
}

const served = (want) => (v) => [
  C(`${CLUSTER} is served with ${want.join(', ')}`, k.eq('endpoints', v.endpoints[CLUSTER], want)),
  C(
    'a request to / reaches it',
    k.eq(
      'clusters',
      (k.httpRequest(v, 80, {host: 'gateway.example', path: '/'}).clusters || []).map((c) => c.name),
      [CLUSTER],
    ),
  ),
];

const snapshotVersion = (group) => x.psql(`SELECT latest_snapshot_version FROM proxy_groups WHERE name = ${x.sqlQuote(group)}`);

x.main(async () => {
  const objects = k.fixture(P, ['base.yaml', 'httproute-simple-same-namespace.yaml']);
  const slice = objects.find((o) => o.kind === 'EndpointSlice' && o.metadata.name === 'infra-backend-v1-a1b2c');
  k.apply(DIR, objects);

  // ---- the good build: two ready endpoints, under the limit of 3
  await status((o) => gatewayChecks(o, ['True', 'Programmed'], ['True', 'Programmed']));
  const w = new k.GroupWatch(SERVER, GROUP, 'k8s-limit');
  report(await w.until(served(['10.1.1.11:3000', '10.1.1.12:3000']), WAIT_MS));
  const good = w.view().versions;
  const goodSnapshot = snapshotVersion(GROUP);
  const witness = new k.GroupWatch(SERVER, WITNESS_GROUP, 'k8s-limit-witness');
  report(
    await witness.until(
      (v) => [
        C(
          `group ${WITNESS_GROUP} is served its listener`,
          Object.keys(v.listeners).length === 1 ? '' : JSON.stringify(Object.keys(v.listeners)),
        ),
      ],
      WAIT_MS,
    ),
  );
  const failures0 = (await x.metric(HTTP_PORT, FAILURES)) || 0;
  await w.quiet(0);
  const seen = w.responses.length;

  // ---- over the limit: four ready endpoints
  k.apply(DIR, [endpointsOf(slice, ['10.1.1.11', '10.1.1.12', '10.1.1.14', '10.1.1.15'])]);
  await status((o) =>
    gatewayChecks(
      o,
      ['False', 'NoResources'],
      ['False', 'Invalid'],
      `4 endpoints, over the limit of ${LIMIT} (k8s.max_endpoints_per_snapshot)`,
    ),
  );
  const failures1 = await x.waitFor(WAIT_MS, async () => {
    const v = await x.metric(HTTP_PORT, FAILURES);
    return v > failures0 ? v : null;
  });
  check(`${FAILURES} grows (${failures0} → ${failures1})`, failures1 > failures0);

  // A later change to another Gateway is translated, written and served: by then a
  // snapshot of the over-limit group, had one been written, would have been pushed too.
  k.apply(DIR, [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: {name: 'witness', namespace: NS},
      spec: {parentRefs: [{name: 'all-namespaces'}], rules: [{backendRefs: [{name: 'infra-backend-v2', port: 8080}]}]},
    },
  ]);
  report(
    await witness.until(
      (v) => [
        C(
          `a later change to Gateway ${WITNESS_GROUP} is served`,
          k.eq(
            'clusters',
            (k.httpRequest(v, 80, {host: 'gateway.example', path: '/'}).clusters || []).map((c) => c.name),
            [`${NS}/infra-backend-v2:8080`],
          ),
        ),
      ],
      WAIT_MS,
    ),
  );
  await w.quiet(0);
  check(
    `the ADS client of ${GROUP} got no new version while over the limit (still ${JSON.stringify(good)})`,
    w.responses.length === seen,
    w.responses.slice(seen),
  );
  report(served(['10.1.1.11:3000', '10.1.1.12:3000'])(w.view()).map((c) => ({...c, what: `still: ${c.what}`})));
  check(
    `no snapshot of ${GROUP} was written over the limit (still version ${goodSnapshot})`,
    snapshotVersion(GROUP) === goodSnapshot,
    snapshotVersion(GROUP),
  );

  // ---- back under the limit: three ready endpoints are served
  k.apply(DIR, [endpointsOf(slice, ['10.1.1.11', '10.1.1.12', '10.1.1.14'])]);
  report(await w.until(served(['10.1.1.11:3000', '10.1.1.12:3000', '10.1.1.14:3000']), WAIT_MS));
  const now = w.view().versions;
  check(`a new snapshot version is served (${good.EDS} → ${now.EDS})`, Number(now.EDS) > Number(good.EDS), {good, now});
  await status((o) => gatewayChecks(o, ['True', 'Programmed'], ['True', 'Programmed']));

  w.close();
  witness.close();
});
