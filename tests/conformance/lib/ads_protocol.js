#!/usr/bin/env node
// ads_protocol.js — a protocol-level ADS client that checks Sextant's
// StreamAggregatedResources (state of the world) and DeltaAggregatedResources
// (incremental) against the xDS protocol, decoding every response with Envoy's
// upstream protos (the ones @grpc/grpc-js-xds ships).
//
//   XDS_SERVER=127.0.0.1:GRPC_PORT HTTP_PORT=... SEXTANT_BIN=... SEXTANT_DATABASE_URL=... \
//       [ADS_ONLY=sotw|delta] node ads_protocol.js
//
// It publishes its own snapshots (`sextant publish`) to two proxy groups, conf-sotw
// and conf-delta, and checks, on both protocols: a fresh nonce per response; the
// version per type; ACK without re-send; NACK (error_detail) recorded in node_status
// while later publishes still go out; stale nonces ignored (SotW); named and wildcard
// subscriptions (legacy empty list for LDS/CDS, "*"); a name requested before it
// exists sent once published; full state for LDS/CDS; CDS → EDS → LDS → RDS order;
// Delta initial_resource_versions, per-resource content-hash versions,
// removed_resources, subscription changes with a stale nonce; the node of the first
// request kept for the stream; NACKs counted in sextant_xds_nacks_total. Prints
// ok:/FAIL: lines; exits 1 when any check failed.
'use strict';

const x = require('./xds');
const ec = require('./envoy_checks');
const {build} = require('./snapshots');
const {TYPE, TYPE_NAME, check, pass} = x;

const SERVER = process.env.XDS_SERVER;
const HTTP_PORT = process.env.HTTP_PORT; // the replica's /metrics
const QUIET_MS = 600;
const WAIT_MS = 5000;

// ------------------------------------------------------------------ decoding

// Decodes the resources of a SotW response: Map name -> {msg, bytes}; problems lists
// what did not decode or had the wrong type URL.
function decodeSotw(r) {
  const byName = new Map();
  const problems = [];
  for (const [i, any] of (r.resources || []).entries()) {
    if (any.type_url !== r.type_url) {
      problems.push(`resources[${i}] type_url ${any.type_url} in a ${r.type_url} response`);
      continue;
    }
    try {
      const msg = x.decodeAny(any);
      byName.set(ec.resourceName(r.type_url, msg), {msg, bytes: any.value});
    } catch (e) {
      problems.push(`resources[${i}] does not decode as ${r.type_url}: ${e.message}`);
    }
  }
  return {byName, problems};
}

// Decodes the resources of a Delta response: Map name -> {msg, version, bytes}.
function decodeDelta(r) {
  const byName = new Map();
  const problems = [];
  for (const [i, res] of (r.resources || []).entries()) {
    if (!res.name) problems.push(`resources[${i}] has no name`);
    if (!res.version) problems.push(`resources[${i}] (${res.name}) has no version`);
    if (!res.resource) {
      problems.push(`resources[${i}] (${res.name}) has no resource`);
      continue;
    }
    if (res.resource.type_url !== r.type_url) {
      problems.push(`resources[${i}] type_url ${res.resource.type_url} in a ${r.type_url} response`);
      continue;
    }
    try {
      const msg = x.decodeAny(res.resource);
      const name = ec.resourceName(r.type_url, msg);
      if (name !== res.name) problems.push(`resources[${i}] is named ${res.name} but holds ${name}`);
      byName.set(res.name, {msg, version: res.version, bytes: res.resource.value});
    } catch (e) {
      problems.push(`resources[${i}] does not decode as ${r.type_url}: ${e.message}`);
    }
  }
  return {byName, problems};
}

function names(map) {
  return [...map.keys()].sort();
}
function sameSet(a, b) {
  return JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
}
function tn(t) {
  return TYPE_NAME[t] || t;
}

function node(id, group) {
  return {
    id,
    cluster: group,
    locality: {},
    user_agent_name: 'sextant-conformance',
    user_agent_version: '1.0',
    client_features: ['envoy.lb.does_not_support_overprovisioning'],
  };
}

// ------------------------------------------------------------------ clients

// What both variants of the ADS stream share: the stream, the node sent with the first
// request only, and reading the responses of one type.
class Ads {
  constructor(call, id, group) {
    this.id = id;
    this.group = group;
    this.stream = new x.Stream(call, id);
    this.first = true;
  }
  // send(req): sends a request, with the node when it is the stream's first.
  send(req) {
    if (this.first) req.node = node(this.id, this.group);
    this.first = false;
    this.stream.send(req);
  }
  next(type, ms = WAIT_MS) {
    return this.stream.nextOfType(type, ms);
  }
  quiet(type, ms = QUIET_MS) {
    return this.stream.quiet(ms, (m) => m.type_url === type);
  }
}

class Sotw extends Ads {
  constructor(client, id, group) {
    super(client.StreamAggregatedResources(), id, group);
    this.state = {};
  }
  st(type) {
    return (this.state[type] ||= {names: [], version: '', nonce: ''});
  }
  // request(type, names, extra): a (re)subscription carrying the type's last
  // accepted version and last nonce unless extra overrides them.
  request(type, names, extra = {}) {
    const s = this.st(type);
    s.names = names;
    this.send({type_url: type, resource_names: names, version_info: s.version, response_nonce: s.nonce, ...extra});
  }
  ack(r) {
    const s = this.st(r.type_url);
    s.version = r.version_info;
    s.nonce = r.nonce;
    this.stream.send({type_url: r.type_url, version_info: r.version_info, response_nonce: r.nonce, resource_names: s.names});
  }
  nack(r, message) {
    const s = this.st(r.type_url);
    s.nonce = r.nonce;
    this.stream.send({
      type_url: r.type_url,
      version_info: s.version,
      response_nonce: r.nonce,
      resource_names: s.names,
      error_detail: {code: 3, message},
    });
  }
}

class Delta extends Ads {
  constructor(client, id, group) {
    super(client.DeltaAggregatedResources(), id, group);
    this.nonce = {};
  }
  request(type, sub = [], unsub = [], extra = {}) {
    const req = {type_url: type, resource_names_subscribe: sub, resource_names_unsubscribe: unsub, ...extra};
    if (req.response_nonce === undefined) req.response_nonce = this.nonce[type] || '';
    this.send(req);
  }
  ack(r) {
    this.nonce[r.type_url] = r.nonce;
    this.stream.send({type_url: r.type_url, response_nonce: r.nonce});
  }
  nack(r, message) {
    this.nonce[r.type_url] = r.nonce;
    this.stream.send({type_url: r.type_url, response_nonce: r.nonce, error_detail: {code: 3, message}});
  }
}

// collect(client, types, onResponse, ms): takes responses until one of each type in
// types has arrived (or ms passed), handing each to onResponse (which ACKs or NACKs);
// returns them in arrival order.
async function collect(c, types, onResponse, ms = WAIT_MS) {
  const got = [];
  const deadline = Date.now() + ms;
  while (!types.every((t) => got.some((r) => r.type_url === t))) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const r = await c.stream.next(left);
    if (!r) break;
    got.push(r);
    onResponse(r);
  }
  return got;
}

// Checks that types arrived in make-before-break order (first arrival of each).
function checkOrder(what, got, types) {
  const firsts = types.map((t) => got.findIndex((r) => r.type_url === t));
  const arrived = got.map((r) => tn(r.type_url)).join(' → ');
  if (!check(`${what}: ${types.map(tn).join(', ')} all pushed`, firsts.every((i) => i >= 0), arrived)) return;
  check(`${what}: pushed in the order ${types.map(tn).join(' → ')}`, firsts.every((v, i) => i === 0 || firsts[i - 1] < v), arrived);
}

function checkNoncesFresh(label, stream) {
  const n = stream.nonces;
  const dup = n.filter((v, i) => n.indexOf(v) !== i);
  check(`${label}: every response has a non-empty nonce`, n.every((v) => v), n);
  check(`${label}: every one of the ${n.length} responses has a fresh nonce`, dup.length === 0, `repeated: ${dup}`);
}

const NACKS_LDS = 'sextant_xds_nacks_total{type="lds"}';
async function nacksLds() {
  return (await x.metric(HTTP_PORT, NACKS_LDS)) || 0;
}

async function nackRecorded(nodeId, message) {
  const got = await x.waitFor(5000, () => {
    const v = x.psql(`SELECT last_nack_error FROM node_status WHERE node_id = ${x.sqlQuote(nodeId)}`);
    return v.includes(message) ? v : null;
  });
  check(`NACK of ${nodeId} recorded in node_status.last_nack_error`, got,
    x.psql(`SELECT row_to_json(s) FROM node_status s WHERE node_id = ${x.sqlQuote(nodeId)}`) || 'no node_status row');
}

function nodeKept(impostor, real, group) {
  check(`a node in a later request does not replace the stream's node (no proxy_nodes row for ${impostor})`,
    x.psql(`SELECT count(*) FROM proxy_nodes WHERE node_id = ${x.sqlQuote(impostor)}`) === '0');
  check(`the stream's node ${real} stays in group ${group}`,
    x.psql(`SELECT group_name FROM proxy_nodes WHERE node_id = ${x.sqlQuote(real)}`) === group);
}

// ------------------------------------------------------------------ state of the world

// The services both protocol variants publish (echo.test and the others, one port each).
const SERVICES = {
  echo: {host: 'echo.test', name: 'echo', ports: [10001]},
  other: {host: 'other.test', name: 'other', ports: [10002]},
  third: {host: 'third.test', name: 'third', ports: [10003]},
  fourth: {host: 'fourth.test', name: 'fourth', ports: [10005]},
  late: {host: 'late.test', name: 'late', ports: [10004]},
};

async function sotw(client) {
  const G = 'conf-sotw';
  const svc = SERVICES;
  const v1 = x.publish(G, build([svc.echo, svc.other]));
  const A = new Sotw(client, 'ads-sotw-a', G);

  // ---- LDS, legacy wildcard (empty list)
  A.request(TYPE.LDS, []);
  let r = await A.next(TYPE.LDS);
  if (!check('SotW: LDS with an empty resource list (legacy wildcard) is answered', r)) return;
  check(`SotW LDS: version_info is the snapshot version ${v1}`, r.version_info === String(v1), r.version_info);
  check('SotW LDS: the response has a nonce', !!r.nonce);
  let d = decodeSotw(r);
  check('SotW LDS: every resource is an Envoy Listener (upstream proto)', d.problems.length === 0, d.problems);
  check('SotW LDS: the wildcard gets every listener (echo.test, other.test)', sameSet(names(d.byName), ['echo.test', 'other.test']), names(d.byName));
  const rds = {};
  for (const host of ['echo.test', 'other.test']) {
    const l = d.byName.get(host);
    if (!l) continue;
    const {problems, rdsName} = ec.listener(l.msg, host);
    check(`SotW LDS ${host}: api_listener HCM, RDS over ads {}, router filter last`, problems.length === 0, problems);
    rds[host] = rdsName;
  }
  A.ack(r);
  check('SotW LDS: no re-send after the ACK', await A.quiet(TYPE.LDS));

  // ---- RDS, named
  A.request(TYPE.RDS, [rds['echo.test']]);
  r = await A.next(TYPE.RDS);
  if (!check('SotW: RDS for the listener\'s route_config_name is answered', r)) return;
  const rdsNonce1 = r.nonce;
  d = decodeSotw(r);
  check('SotW RDS: every resource is an Envoy RouteConfiguration', d.problems.length === 0, d.problems);
  check('SotW RDS: a named subscription gets exactly that name', sameSet(names(d.byName), [rds['echo.test']]), names(d.byName));
  let clusters = [];
  if (d.byName.has(rds['echo.test'])) {
    const rt = ec.route(d.byName.get(rds['echo.test']).msg, 'echo.test', {timeoutMs: 5000});
    check('SotW RDS: a virtual host matches echo.test, routes have a path match, a cluster and the 5 s timeout', rt.problems.length === 0, rt.problems);
    clusters = rt.clusters;
  }
  A.ack(r);
  check('SotW RDS: no re-send after the ACK', await A.quiet(TYPE.RDS));

  // ---- CDS, legacy wildcard
  A.request(TYPE.CDS, []);
  r = await A.next(TYPE.CDS);
  if (!check('SotW: CDS with an empty resource list (legacy wildcard) is answered', r)) return;
  d = decodeSotw(r);
  check('SotW CDS: every resource is an Envoy Cluster', d.problems.length === 0, d.problems);
  check('SotW CDS: the wildcard gets both clusters', d.byName.size === 2, names(d.byName));
  const echoCluster = clusters[0];
  check('SotW CDS: the route\'s cluster is among them', d.byName.has(echoCluster), {route: clusters, cds: names(d.byName)});
  for (const [n, c] of d.byName) {
    const p = ec.cluster(c.msg, {connectTimeoutMs: 1000});
    check(`SotW CDS ${n}: EDS over ads {}, usable lb policy, 1 s connect timeout`, p.length === 0, p);
  }
  const otherCluster = names(d.byName).find((n) => n !== echoCluster);
  const echoEds = d.byName.has(echoCluster) ? ec.edsName(d.byName.get(echoCluster).msg) : echoCluster;
  A.ack(r);
  check('SotW CDS: no re-send after the ACK', await A.quiet(TYPE.CDS));

  // ---- EDS, named
  A.request(TYPE.EDS, [echoEds]);
  r = await A.next(TYPE.EDS);
  if (!check('SotW: EDS for the cluster\'s service name is answered', r)) return;
  d = decodeSotw(r);
  check('SotW EDS: every resource is an Envoy ClusterLoadAssignment', d.problems.length === 0, d.problems);
  check('SotW EDS: a named subscription gets exactly that name', sameSet(names(d.byName), [echoEds]), names(d.byName));
  if (d.byName.has(echoEds)) {
    const p = ec.cla(d.byName.get(echoEds).msg, {ports: [10001]});
    check('SotW EDS: locality present with weight > 0, IP endpoints with ports, usable health', p.length === 0, p);
  }
  A.ack(r);
  check('SotW EDS: no re-send after the ACK', await A.quiet(TYPE.EDS));

  // ---- a new snapshot changing every type: make-before-break order
  const v2 = x.publish(G, build([{...svc.echo, ports: [10011], timeout: '6s', connectTimeout: '2s'}, svc.other, svc.third]));
  let got = await collect(A, [TYPE.CDS, TYPE.EDS, TYPE.LDS, TYPE.RDS], (m) => A.ack(m));
  checkOrder(`SotW publish v${v2}`, got, [TYPE.CDS, TYPE.EDS, TYPE.LDS, TYPE.RDS]);
  for (const m of got)
    check(`SotW ${tn(m.type_url)} after publish: version_info is ${v2}`, m.version_info === String(v2), m.version_info);
  r = got.find((m) => m.type_url === TYPE.CDS);
  if (r) {
    d = decodeSotw(r);
    check('SotW CDS is full state: all three clusters in the response', d.byName.size === 3, names(d.byName));
    const c = d.byName.get(echoCluster);
    check('SotW CDS: the changed connect timeout (2 s) is sent', c && ec.cluster(c.msg, {connectTimeoutMs: 2000}).length === 0, c && c.msg);
  }
  r = got.find((m) => m.type_url === TYPE.LDS);
  if (r) {
    d = decodeSotw(r);
    check('SotW LDS is full state: echo.test, other.test, third.test', sameSet(names(d.byName), ['echo.test', 'other.test', 'third.test']), names(d.byName));
  }
  r = got.find((m) => m.type_url === TYPE.EDS);
  if (r) {
    d = decodeSotw(r);
    check('SotW EDS after publish: only the subscribed name, with the new endpoint', sameSet(names(d.byName), [echoEds]) &&
      ec.cla(d.byName.get(echoEds).msg, {ports: [10011]}).length === 0, [...d.byName.values()].map((v) => v.msg));
  }
  r = got.find((m) => m.type_url === TYPE.RDS);
  if (r) {
    d = decodeSotw(r);
    const rc = d.byName.get(rds['echo.test']);
    check('SotW RDS after publish: the new 6 s route timeout', rc && ec.route(rc.msg, 'echo.test', {timeoutMs: 6000}).problems.length === 0, rc && rc.msg);
  }
  await x.sleep(300);
  A.stream.drain().forEach((m) => A.ack(m));

  // ---- stale nonce: ignored; then the same change with the current nonce is answered
  A.stream.send({type_url: TYPE.RDS, version_info: String(v2), response_nonce: rdsNonce1, resource_names: [rds['echo.test'], rds['other.test']]});
  check('SotW: a request with a stale nonce is not answered', await A.quiet(TYPE.RDS, 800));
  A.request(TYPE.RDS, [rds['echo.test'], rds['other.test']]);
  r = await A.next(TYPE.RDS);
  if (check('SotW: adding a name to a named subscription (current nonce) is answered', r)) {
    d = decodeSotw(r);
    // RDS is not full state: the unchanged route may be left out, the new one must be there.
    check('SotW RDS: the response holds the newly subscribed route', d.byName.has(rds['other.test']), names(d.byName));
    check('SotW RDS: and nothing that was not subscribed', names(d.byName).every((n) => n === rds['echo.test'] || n === rds['other.test']), names(d.byName));
    A.ack(r);
  }

  // ---- stream B: a named LDS subscription for a listener that does not exist yet
  const B = new Sotw(client, 'ads-sotw-b', G);
  B.request(TYPE.LDS, ['late.test']);
  r = await B.next(TYPE.LDS, 1500);
  if (r) {
    d = decodeSotw(r);
    check('SotW: a name that does not exist yet is answered without other listeners', d.byName.size === 0, names(d.byName));
    B.ack(r);
  } else pass('SotW: a name that does not exist yet gets no listener');
  B.request(TYPE.EDS, []);
  r = await B.next(TYPE.EDS, 1000);
  check('SotW: an empty EDS list is not a wildcard (no endpoints sent)', !r || (r.resources || []).length === 0, r && decodeSotw(r).byName.size);
  if (r) B.ack(r);

  // ---- publish v3 (late.test appears); A NACKs the listeners
  const v3 = x.publish(G, build([{...svc.echo, ports: [10011], timeout: '6s', connectTimeout: '2s'}, svc.other, svc.third, svc.late]));
  r = await B.next(TYPE.LDS);
  if (check('SotW: a listener requested before it existed is sent once published', r)) {
    d = decodeSotw(r);
    check('SotW: the named subscription gets late.test and nothing else', sameSet(names(d.byName), ['late.test']), names(d.byName));
    check(`SotW: it comes with version_info ${v3}`, r.version_info === String(v3), r.version_info);
    B.ack(r);
  }
  const nackMsg = 'conformance: listener rejected on purpose (sotw)';
  const nacks0 = await nacksLds();
  got = await collect(A, [TYPE.CDS, TYPE.LDS], (m) => (m.type_url === TYPE.LDS ? A.nack(m, nackMsg) : A.ack(m)));
  check(`SotW publish v${v3}: CDS and LDS pushed to the wildcard stream`, got.some((m) => m.type_url === TYPE.LDS) && got.some((m) => m.type_url === TYPE.CDS),
    got.map((m) => tn(m.type_url)));
  check('SotW: no re-send after a NACK', await A.quiet(TYPE.LDS));
  await nackRecorded('ads-sotw-a', nackMsg);
  const nacks1 = await x.waitFor(2000, async () => ((await nacksLds()) > nacks0 ? nacksLds() : null));
  check(`SotW: the NACK is counted in ${NACKS_LDS}`, nacks1 === nacks0 + 1, {before: nacks0, after: await nacksLds()});
  A.stream.drain().forEach((m) => A.ack(m));

  // ---- B unsubscribes from everything: an empty list after names is not a wildcard
  B.request(TYPE.LDS, []);
  r = await B.next(TYPE.LDS, 800);
  check('SotW: an empty LDS list after named ones unsubscribes (no wildcard)', !r || (r.resources || []).length === 0, r && names(decodeSotw(r).byName));

  // ---- publish v4 without other.test: the NACKed type still gets it; full state deletes
  const v4 = x.publish(G, build([{...svc.echo, ports: [10011], timeout: '6s', connectTimeout: '2s'}, svc.third, svc.late]));
  got = await collect(A, [TYPE.CDS, TYPE.LDS], (m) => A.ack(m));
  r = got.find((m) => m.type_url === TYPE.LDS);
  if (check('SotW: after a NACK the next publish still goes out (LDS)', r)) {
    d = decodeSotw(r);
    check(`SotW LDS v${v4}: version_info ${v4}`, r.version_info === String(v4), r.version_info);
    check('SotW LDS is full state: other.test is absent (deleted)', sameSet(names(d.byName), ['echo.test', 'third.test', 'late.test']), names(d.byName));
  }
  r = got.find((m) => m.type_url === TYPE.CDS);
  if (check('SotW: CDS pushed for the removal', r)) {
    d = decodeSotw(r);
    // Make before break: the listener the client runs still routes to the removed
    // cluster until it ACKs the new listeners, so the first CDS keeps it.
    check('SotW CDS keeps the removed cluster while the routes may still use it', d.byName.has(otherCluster), names(d.byName));
  }
  // Once the listeners (and routes) of v4 are ACKed, a last CDS response deletes it.
  let last = null;
  for (let i = 0; i < 5 && !last; i++) {
    const m = await A.next(TYPE.CDS, 1500);
    if (!m) break;
    A.ack(m);
    if (!decodeSotw(m).byName.has(otherCluster)) last = m;
  }
  if (check('SotW: a last CDS response follows the ACK of the routes', last)) {
    d = decodeSotw(last);
    check('SotW CDS is full state: the removed cluster is then absent', d.byName.size === 3 && !d.byName.has(otherCluster), names(d.byName));
    check(`SotW CDS: the last response is still version ${v4}`, last.version_info === String(v4), last.version_info);
  }
  await x.sleep(300);
  A.stream.drain().forEach((m) => A.ack(m));

  // ---- the node of the first request is kept
  const imp = {...node('impostor-sotw', 'conf-elsewhere')};
  A.stream.send({node: imp, type_url: TYPE.EDS, version_info: A.st(TYPE.EDS).version, response_nonce: A.st(TYPE.EDS).nonce, resource_names: [echoEds]});
  const v5 = x.publish(G, build([{...svc.echo, ports: [10021], timeout: '6s', connectTimeout: '2s'}, svc.third, svc.late]));
  r = await A.next(TYPE.EDS);
  if (check('SotW: a stream that sent another node later still gets its own group\'s pushes', r)) {
    d = decodeSotw(r);
    check(`SotW EDS v${v5}: the new endpoint`, d.byName.has(echoEds) && ec.cla(d.byName.get(echoEds).msg, {ports: [10021]}).length === 0, names(d.byName));
    check(`SotW EDS v${v5}: version_info ${v5}`, r.version_info === String(v5), r.version_info);
    A.ack(r);
  }
  // Versions are per type: only endpoints changed, so only EDS moves to v5; the other
  // types stay at the version the client ACKed (nothing is re-sent).
  const others = await A.stream.quiet(QUIET_MS, (m) => m.type_url !== TYPE.EDS);
  check(`SotW: a snapshot changing only endpoints advances only EDS (CDS/LDS/RDS stay at v${v4})`, others,
    A.stream.drain().map((m) => `${tn(m.type_url)} ${m.version_info}`));
  await x.sleep(200);
  nodeKept('impostor-sotw', 'ads-sotw-a', G);

  // ---- stream C: explicit "*" wildcard
  const C = new Sotw(client, 'ads-sotw-c', G);
  C.request(TYPE.CDS, ['*']);
  r = await C.next(TYPE.CDS);
  if (check('SotW: CDS ["*"] (explicit wildcard) is answered', r)) {
    d = decodeSotw(r);
    check('SotW CDS ["*"]: every cluster', d.byName.size === 3, names(d.byName));
  }

  // ---- stream D: a reconnect carrying per-type versions and empty nonces: a type at the
  // current version is not sent again (the client holds it), an older one is answered.
  // The server takes requests in order and evaluates each before the next, so a CDS
  // response would have been queued before the LDS one.
  const D = new Sotw(client, 'ads-sotw-d', G);
  D.request(TYPE.CDS, [], {version_info: String(v5), response_nonce: ''});
  D.request(TYPE.LDS, [], {version_info: String(v2), response_nonce: ''});
  const rl = await D.next(TYPE.LDS);
  check('SotW: a new stream\'s request with an empty nonce and an older version is answered (LDS)', rl, 'no LDS response');
  if (rl) check(`SotW: it carries the current version ${v5}`, rl.version_info === String(v5), rl.version_info);
  check(
    'SotW: a new stream\'s request at the current version is not answered: the client holds it (CDS)',
    rl && D.stream.queue.every((m) => m.type_url !== TYPE.CDS),
    D.stream.queue.map((m) => `${m.type_url} ${m.version_info}`),
  );

  for (const s of [A, B, C, D]) checkNoncesFresh(`SotW stream ${s.id}`, s.stream);

  // ---- a second stream from the same node supersedes the first
  const superseded0 = (await x.metric(HTTP_PORT, 'sextant_xds_stream_terminations_total{reason="superseded"}')) || 0;
  const A2 = new Sotw(client, 'ads-sotw-a', G);
  A2.request(TYPE.CDS, []);
  r = await A2.next(TYPE.CDS);
  check('SotW: a second stream from the same node is served', r);
  const ended = await x.waitFor(3000, () => A.stream.error || A.stream.ended);
  check('SotW: it supersedes (ends) the first stream of that node', ended);
  const superseded1 = await x.waitFor(2000, async () => {
    const v = (await x.metric(HTTP_PORT, 'sextant_xds_stream_terminations_total{reason="superseded"}')) || 0;
    return v > superseded0 ? v : null;
  });
  check('SotW: counted in sextant_xds_stream_terminations_total{reason="superseded"}', superseded1 === superseded0 + 1, {before: superseded0, after: superseded1});
  for (const s of [A, A2, B, C, D]) s.stream.close();
}

// ------------------------------------------------------------------ delta

async function delta(client) {
  const G = 'conf-delta';
  const svc = SERVICES;
  x.publish(G, build([svc.echo, svc.other]));
  const E = new Delta(client, 'ads-delta-e', G);
  const ver = {}; // type -> name -> version, as E knows them
  const remember = (r) => {
    const m = (ver[r.type_url] ||= {});
    for (const res of r.resources || []) m[res.name] = res.version;
    for (const n of r.removed_resources || []) delete m[n];
  };

  // ---- LDS "*"
  E.request(TYPE.LDS, ['*']);
  let r = await E.next(TYPE.LDS);
  if (!check('Delta: LDS subscribe ["*"] is answered', r)) return;
  let d = decodeDelta(r);
  check('Delta LDS: every resource is a named, versioned Envoy Listener', d.problems.length === 0, d.problems);
  check('Delta LDS: "*" gets every listener', sameSet(names(d.byName), ['echo.test', 'other.test']), names(d.byName));
  check('Delta LDS: nothing removed on the first response', (r.removed_resources || []).length === 0, r.removed_resources);
  const rds = {};
  for (const [host, l] of d.byName) {
    const {problems, rdsName} = ec.listener(l.msg, host);
    check(`Delta LDS ${host}: api_listener HCM, RDS over ads {}, router filter last`, problems.length === 0, problems);
    rds[host] = rdsName;
  }
  remember(r);
  E.ack(r);
  check('Delta LDS: no re-send after the ACK', await E.quiet(TYPE.LDS));

  // ---- RDS named
  E.request(TYPE.RDS, [rds['echo.test']]);
  r = await E.next(TYPE.RDS);
  if (!check('Delta: RDS subscribe by name is answered', r)) return;
  d = decodeDelta(r);
  check('Delta RDS: exactly the subscribed route, decoded', d.problems.length === 0 && sameSet(names(d.byName), [rds['echo.test']]), [d.problems, names(d.byName)]);
  let clusters = [];
  if (d.byName.has(rds['echo.test'])) {
    const rt = ec.route(d.byName.get(rds['echo.test']).msg, 'echo.test', {timeoutMs: 5000});
    check('Delta RDS: routes usable by a proxy', rt.problems.length === 0, rt.problems);
    clusters = rt.clusters;
  }
  remember(r);
  E.ack(r);

  // ---- CDS legacy wildcard (empty first subscription)
  E.request(TYPE.CDS, []);
  r = await E.next(TYPE.CDS);
  if (!check('Delta: CDS with an empty first subscription (legacy wildcard) is answered', r)) return;
  d = decodeDelta(r);
  check('Delta CDS: every resource is a named, versioned Envoy Cluster', d.problems.length === 0, d.problems);
  check('Delta CDS: the wildcard gets both clusters', d.byName.size === 2, names(d.byName));
  const echoCluster = clusters[0];
  const otherCluster = names(d.byName).find((n) => n !== echoCluster);
  for (const [n, c] of d.byName) check(`Delta CDS ${n}: EDS over ads {}`, ec.cluster(c.msg).length === 0, ec.cluster(c.msg));
  const eds = {};
  for (const [n, c] of d.byName) eds[n] = ec.edsName(c.msg);
  const echoEds = eds[echoCluster];
  const otherEds = eds[otherCluster];
  remember(r);
  E.ack(r);
  check('Delta CDS: no re-send after the ACK', await E.quiet(TYPE.CDS));

  // ---- EDS named
  E.request(TYPE.EDS, [echoEds, otherEds]);
  r = await E.next(TYPE.EDS);
  if (!check('Delta: EDS subscribe by name is answered', r)) return;
  const edsNonce1 = r.nonce;
  d = decodeDelta(r);
  check('Delta EDS: both subscribed assignments, decoded', d.problems.length === 0 && sameSet(names(d.byName), [echoEds, otherEds]), [d.problems, names(d.byName)]);
  for (const [n, a] of d.byName) check(`Delta EDS ${n}: localities weighted > 0, IP endpoints`, ec.cla(a.msg).length === 0, ec.cla(a.msg));
  remember(r);
  E.ack(r);

  // ---- only endpoints change: only that resource is sent, with a new version
  const echoEdsV1 = ver[TYPE.EDS][echoEds];
  x.publish(G, build([{...svc.echo, ports: [10011]}, svc.other]));
  r = await E.next(TYPE.EDS);
  if (check('Delta: an endpoint change is pushed on EDS', r)) {
    d = decodeDelta(r);
    check('Delta EDS: only the changed assignment is sent', sameSet(names(d.byName), [echoEds]), names(d.byName));
    const e = d.byName.get(echoEds);
    check('Delta EDS: its per-resource version changed with its content', e && e.version !== echoEdsV1, [echoEdsV1, e && e.version]);
    check('Delta EDS: the new endpoint', e && ec.cla(e.msg, {ports: [10011]}).length === 0, e && e.msg);
    remember(r);
    E.ack(r);
  }
  const unchanged = await E.stream.quiet(QUIET_MS, (m) => m.type_url !== TYPE.EDS);
  const extra = E.stream.drain();
  extra.forEach((m) => {
    remember(m);
    E.ack(m);
  });
  check('Delta: unchanged clusters, listeners and routes are not re-sent', unchanged, extra.map((m) => `${tn(m.type_url)} ${names(decodeDelta(m).byName)}`));

  // ---- v3: a cluster changes, one is added, one removed; E NACKs the listeners
  const echoClusterV = ver[TYPE.CDS][echoCluster];
  const echoEdsV2 = ver[TYPE.EDS][echoEds];
  x.publish(G, build([{...svc.echo, ports: [10011], timeout: '6s', connectTimeout: '2s'}, svc.third]));
  const nackMsg = 'conformance: listener rejected on purpose (delta)';
  const nacks0 = await nacksLds();
  const got = await collect(E, [TYPE.CDS, TYPE.EDS, TYPE.LDS, TYPE.RDS], (m) => {
    if (m.type_url === TYPE.LDS) E.nack(m, nackMsg);
    else {
      remember(m);
      E.ack(m);
    }
  });
  checkOrder('Delta publish (cluster and route changed, service added and removed)', got, [TYPE.CDS, TYPE.EDS, TYPE.LDS, TYPE.RDS]);
  r = got.find((m) => m.type_url === TYPE.CDS);
  let thirdCluster = null;
  let thirdEds = null;
  if (r) {
    d = decodeDelta(r);
    thirdCluster = names(d.byName).find((n) => n !== echoCluster) || null;
    if (thirdCluster) thirdEds = ec.edsName(d.byName.get(thirdCluster).msg);
    check('Delta CDS: the changed cluster and the new one are sent', d.byName.size === 2 && d.byName.has(echoCluster), names(d.byName));
    check('Delta CDS: the changed cluster has a new version', d.byName.has(echoCluster) && d.byName.get(echoCluster).version !== echoClusterV);
    // Make before break: this client NACKs the new listeners, so it keeps running the
    // old ones, which route to the removed cluster: its removal waits.
    check('Delta CDS: the removed cluster is not removed while the client runs routes that use it', (r.removed_resources || []).length === 0, r.removed_resources);
  }
  r = got.find((m) => m.type_url === TYPE.EDS);
  if (r) {
    d = decodeDelta(r);
    check('Delta EDS: removed_resources names the subscribed assignment that went away', (r.removed_resources || []).includes(otherEds), r.removed_resources);
    // The changed cluster's endpoints may be re-sent (Envoy finishes warming an updated
    // cluster only on a new ClusterLoadAssignment), but content unchanged means the same
    // per-resource version.
    const e = d.byName.get(echoEds);
    check('Delta EDS: an assignment re-sent with unchanged content keeps its version (content hash)',
      !e || e.version === echoEdsV2, [echoEdsV2, e && e.version]);
  }
  r = got.find((m) => m.type_url === TYPE.LDS);
  if (r) {
    d = decodeDelta(r);
    check('Delta LDS: the new listener is sent', d.byName.has('third.test'), names(d.byName));
    check('Delta LDS: removed_resources names the removed listener', sameSet(r.removed_resources || [], ['other.test']), r.removed_resources);
  }
  r = got.find((m) => m.type_url === TYPE.RDS);
  if (r) {
    d = decodeDelta(r);
    const rc = d.byName.get(rds['echo.test']);
    check('Delta RDS: the changed route (6 s timeout) is sent', rc && ec.route(rc.msg, 'echo.test', {timeoutMs: 6000}).problems.length === 0, names(d.byName));
  }
  check('Delta: no re-send after a NACK', await E.quiet(TYPE.LDS));
  await nackRecorded('ads-delta-e', nackMsg);
  const nacks1 = await x.waitFor(2000, async () => ((await nacksLds()) > nacks0 ? nacksLds() : null));
  check(`Delta: the NACK is counted in ${NACKS_LDS}`, nacks1 === nacks0 + 1, {before: nacks0, after: await nacksLds()});
  await x.sleep(200);
  E.stream.drain().forEach((m) => {
    remember(m);
    E.ack(m);
  });

  // ---- v4: pushes go on after the NACK
  x.publish(G, build([{...svc.echo, ports: [10012], timeout: '6s', connectTimeout: '2s'}, svc.third, svc.fourth]));
  r = await E.next(TYPE.LDS);
  if (check('Delta: after a NACK the next publish still goes out (LDS)', r)) {
    d = decodeDelta(r);
    check('Delta LDS: the new listener fourth.test', d.byName.has('fourth.test'), names(d.byName));
    remember(r);
    E.ack(r);
  }
  // Listeners and routes accepted: the cluster held back at v3 is removed now.
  let removal = null;
  for (let i = 0; i < 6 && !removal; i++) {
    const m = await E.stream.next(1500);
    if (!m) break;
    remember(m);
    E.ack(m);
    if (m.type_url === TYPE.CDS && (m.removed_resources || []).includes(otherCluster)) removal = m;
  }
  check('Delta CDS: removed_resources names the removed cluster once the routes are accepted', removal, removal && removal.removed_resources);
  await x.sleep(400);
  E.stream.drain().forEach((m) => {
    remember(m);
    E.ack(m);
  });

  // ---- subscribe and unsubscribe with a stale nonce are applied
  E.request(TYPE.EDS, [thirdEds], [], {response_nonce: edsNonce1});
  r = await E.next(TYPE.EDS);
  if (check('Delta: a subscription sent with a stale nonce is applied', r)) {
    d = decodeDelta(r);
    check('Delta EDS: the newly subscribed assignment is sent', d.byName.has(thirdEds), names(d.byName));
    remember(r);
    E.ack(r);
  }
  E.request(TYPE.EDS, [], [echoEds], {response_nonce: edsNonce1});
  await x.sleep(300);
  E.stream.drain().forEach((m) => E.ack(m));
  x.publish(G, build([{...svc.echo, ports: [10013], timeout: '6s', connectTimeout: '2s'}, svc.third, svc.fourth]));
  const after = await E.next(TYPE.EDS, 1000);
  check('Delta: an unsubscription sent with a stale nonce is applied (no push for it)',
    !after || !decodeDelta(after).byName.has(echoEds), after && names(decodeDelta(after).byName));
  await x.sleep(200);
  E.stream.drain().forEach((m) => {
    remember(m);
    E.ack(m);
  });

  // ---- the node of the first request is kept
  E.stream.send({node: node('impostor-delta', 'conf-elsewhere'), type_url: TYPE.RDS, response_nonce: E.nonce[TYPE.RDS] || ''});
  await x.sleep(300);
  nodeKept('impostor-delta', 'ads-delta-e', G);

  // ---- stream F: initial_resource_versions
  const F = new Delta(client, 'ads-delta-f', G);
  const cv = ver[TYPE.CDS] || {};
  const initial = {[echoCluster]: cv[echoCluster], [thirdCluster]: 'not-the-current-version', 'conformance-gone-cluster': '0123456789abcdef'};
  for (const n of Object.keys(cv)) if (!(n in initial)) initial[n] = cv[n];
  F.request(TYPE.CDS, ['*'], [], {initial_resource_versions: initial});
  r = await F.next(TYPE.CDS);
  if (check('Delta: CDS "*" with initial_resource_versions is answered (one resource is stale)', r)) {
    d = decodeDelta(r);
    check('Delta initial_resource_versions: clusters the client has at the current version are not sent', !d.byName.has(echoCluster), names(d.byName));
    check('Delta initial_resource_versions: the cluster with another version is sent', d.byName.has(thirdCluster), names(d.byName));
    check('Delta initial_resource_versions: a cluster that no longer exists is in removed_resources',
      (r.removed_resources || []).includes('conformance-gone-cluster'), r.removed_resources);
    F.ack(r);
  }
  F.request(TYPE.EDS, [thirdEds], [], {initial_resource_versions: {[thirdEds]: (ver[TYPE.EDS] || {})[thirdEds]}});
  r = await F.next(TYPE.EDS, 1000);
  check('Delta initial_resource_versions: a named assignment already current is not re-sent',
    !r || !decodeDelta(r).byName.has(thirdEds), r && names(decodeDelta(r).byName));
  if (r) F.ack(r);

  // ---- F: a name requested before it exists
  F.request(TYPE.LDS, ['late.test']);
  r = await F.next(TYPE.LDS, 1500);
  if (r) {
    check('Delta: a listener that does not exist yet is not sent', (r.resources || []).length === 0, names(decodeDelta(r).byName));
    F.ack(r);
  }
  x.publish(G, build([{...svc.echo, ports: [10013], timeout: '6s', connectTimeout: '2s'}, svc.third, svc.fourth, svc.late]));
  r = await F.next(TYPE.LDS);
  if (check('Delta: a listener requested before it existed is sent once published', r)) {
    d = decodeDelta(r);
    check('Delta: the named subscription gets late.test and nothing else', sameSet(names(d.byName), ['late.test']), names(d.byName));
    F.ack(r);
  }
  await x.sleep(300);
  E.stream.drain().forEach((m) => E.ack(m));

  for (const s of [E, F]) checkNoncesFresh(`Delta stream ${s.id}`, s.stream);
  for (const s of [E, F]) s.stream.close();
}

// ------------------------------------------------------------------ main

x.main(async () => {
  if (!SERVER) throw new Error('XDS_SERVER (host:port of sextant grpc.listen) is not set');
  const Ads = x.adsClientClass();
  const client = new Ads(SERVER, x.grpc.credentials.createInsecure());
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));
  const only = process.env.ADS_ONLY || '';
  if (only !== 'delta') await sotw(client);
  if (only !== 'sotw') await delta(client);
  client.close();
});
