#!/usr/bin/env node
// control_v1.js — a gateway.control.v1 data plane (proto/gateway/control/v1/control.proto
// loaded by @grpc/proto-loader) against one Sextant replica:
// StreamConfiguration subscribe → snapshot with the published content → ACK (no
// re-send, recorded) → new publish → NACK with error_detail (recorded in node_status,
// the ACKed version stays) → the next publish still arrives; subscriptions honoured
// (only "backends"); ReportStatus accepted for a known node (and stored) and rejected
// (accepted=false) for bad reports; a report carried on the stream is stored, and a
// stream cannot report for another node.
//
//   XDS_SERVER=127.0.0.1:PORT HTTP_PORT=... SEXTANT_BIN=... SEXTANT_DATABASE_URL=... node control_v1.js
'use strict';

const x = require('./xds');
const {build} = require('./snapshots');
const {check} = x;

const SERVER = process.env.XDS_SERVER;
const G = 'conf-control';
const ALL = ['listeners', 'http_routes', 'grpc_routes', 'stream_routes', 'backends', 'secrets', 'extensions'];
const ACK = 'DISCOVERY_RESULT_STATUS_ACK';
const NACK = 'DISCOVERY_RESULT_STATUS_NACK';

function ms(d) {
  if (d === undefined || d === null) return 0;
  if (typeof d === 'string') {
    const m = d.match(/^(\d+(?:\.\d+)?)s$/);
    return m ? Math.round(Number(m[1]) * 1000) : NaN;
  }
  return Number(d.seconds || 0) * 1000 + Math.round(Number(d.nanos || 0) / 1e6);
}
function wrapped(v) {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'object' ? v.value || 0 : v;
}
const arr = (a) => a || [];

// The part of a snapshot a data plane relies on, in one canonical shape, from either
// the published IR JSON or a decoded ConfigSnapshot message.
function project(s) {
  return {
    listeners: arr(s.listeners).map((l) => ({
      name: l.name,
      port: l.port || 0,
      protocol: l.protocol,
      hostnames: arr(l.hostnames),
      attached_routes: arr(l.attached_routes),
    })),
    http_routes: arr(s.http_routes).map((r) => ({
      name: r.name,
      namespace: r.namespace || '',
      hostnames: arr(r.hostnames),
      rules: arr(r.rules).map((u) => ({
        name: u.name || '',
        matches: arr(u.matches).map((m) => ({path: m.path || '', path_type: m.path_type || ''})),
        backend_refs: arr(u.backend_refs).map((b) => ({name: b.name, namespace: b.namespace || '', weight: wrapped(b.weight)})),
        request_timeout_ms: ms(u.timeouts && u.timeouts.request),
      })),
    })),
    backends: arr(s.backends).map((b) => ({
      name: b.name,
      namespace: b.namespace || '',
      protocol: b.protocol || '',
      connect_timeout_ms: ms(b.connect_timeout),
      endpoints: arr(b.endpoints).map((e) => ({address: e.address, port: e.port, healthy: !!e.healthy, zone: e.zone || ''})),
    })),
  };
}

class Control {
  constructor(client, id, subscriptions) {
    this.id = id;
    this.subscriptions = subscriptions;
    this.stream = new x.Stream(client.StreamConfiguration(), id);
    this.version = '';
  }
  subscribe() {
    this.stream.send({node_id: this.id, cluster: G, version: '', nonce: '', subscriptions: this.subscriptions});
  }
  ack(r) {
    this.version = r.version;
    this.stream.send({node_id: this.id, cluster: G, version: r.version, nonce: r.nonce, subscriptions: this.subscriptions, result_status: ACK});
  }
  nack(r, detail) {
    this.stream.send({
      node_id: this.id,
      cluster: G,
      version: this.version,
      nonce: r.nonce,
      subscriptions: this.subscriptions,
      result_status: NACK,
      error_detail: detail,
    });
  }
}

function row(nodeId) {
  const v = x.psql(`SELECT row_to_json(s) FROM node_status s WHERE node_id = ${x.sqlQuote(nodeId)}`);
  return v ? JSON.parse(v) : null;
}

async function metricSum(prefix) {
  const res = await fetch(`http://127.0.0.1:${process.env.HTTP_PORT}/metrics`);
  let sum = 0;
  for (const line of (await res.text()).split('\n'))
    if (line.startsWith(prefix + '{') || line.startsWith(prefix + ' ')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

x.main(async () => {
  if (!SERVER) throw new Error('XDS_SERVER (host:port of sextant grpc.listen) is not set');
  const Cds = x.controlClientClass();
  const client = new Cds(SERVER, x.grpc.credentials.createInsecure());
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));

  const s1 = build([
    {host: 'echo.test', name: 'echo', ports: [10001, 10002]},
    {host: 'other.test', name: 'other', ports: [10003], zone: 'zone-b', timeout: '3s', connectTimeout: '2s'},
  ]);
  const v1 = x.publish(G, s1);

  // ---- subscribe and receive
  const A = new Control(client, 'control-a', ALL);
  A.subscribe();
  let r = await A.stream.next(5000);
  if (!check('control.v1: a subscription is answered with a snapshot', r)) return;
  check(`control.v1: the response carries version ${v1}`, r.version === String(v1), r.version);
  check('control.v1: the response carries a nonce', !!r.nonce);
  check('control.v1: the snapshot has the published content', r.snapshot &&
    JSON.stringify(project(r.snapshot)) === JSON.stringify(project(s1)), {got: r.snapshot && project(r.snapshot), want: project(s1)});

  // ---- ACK: no re-send; recorded
  A.ack(r);
  check('control.v1: no re-send after an ACK', await A.stream.quiet(700));
  const acked = await x.waitFor(5000, () => {
    const s = row('control-a');
    return s && String(s.acked_snapshot_version) === String(v1) ? s : null;
  });
  check(`control.v1: node_status records the ACK of version ${v1}`, acked, row('control-a'));

  // ---- a new publish, NACKed
  const s2 = build([
    {host: 'echo.test', name: 'echo', ports: [10011]},
    {host: 'other.test', name: 'other', ports: [10003], zone: 'zone-b', timeout: '3s', connectTimeout: '2s'},
  ]);
  const v2 = x.publish(G, s2);
  r = await A.stream.next(5000);
  if (check('control.v1: a publish is pushed to the stream', r)) {
    check(`control.v1: it carries version ${v2}`, r.version === String(v2), r.version);
    check('control.v1: with a fresh nonce', r.nonce && A.stream.nonces.indexOf(r.nonce) === A.stream.nonces.length - 1, A.stream.nonces);
    check('control.v1: and the new content', JSON.stringify(project(r.snapshot)) === JSON.stringify(project(s2)), project(r.snapshot));
    const detail = 'conformance: snapshot rejected on purpose (control.v1)';
    A.nack(r, detail);
    check('control.v1: no re-send after a NACK', await A.stream.quiet(700));
    const nacked = await x.waitFor(5000, () => {
      const s = row('control-a');
      return s && s.last_nack_error && s.last_nack_error.includes(detail) ? s : null;
    });
    check('control.v1: the NACK and its error_detail are recorded in node_status', nacked, row('control-a'));
    if (nacked) {
      check(`control.v1: node_status keeps ${v1} as the ACKed version after the NACK`, String(nacked.acked_snapshot_version) === String(v1), nacked);
      check(`control.v1: node_status names ${v2} as the NACKed version`, String(nacked.last_nack_version) === String(v2), nacked);
    }
  }

  // ---- the next publish still goes out
  const s3 = build([{host: 'echo.test', name: 'echo', ports: [10012]}]);
  const v3 = x.publish(G, s3);
  r = await A.stream.next(5000);
  if (check('control.v1: after a NACK the next publish still arrives', r)) {
    check(`control.v1: version ${v3}, the new content`, r.version === String(v3) &&
      JSON.stringify(project(r.snapshot)) === JSON.stringify(project(s3)), {version: r.version, got: project(r.snapshot)});
    A.ack(r);
  }
  const nonces = A.stream.nonces;
  check(`control.v1: all ${nonces.length} responses have distinct nonces`, new Set(nonces).size === nonces.length, nonces);

  // ---- subscriptions honoured
  const B = new Control(client, 'control-b', ['backends']);
  B.subscribe();
  r = await B.stream.next(5000);
  if (check('control.v1: a subscription to "backends" only is answered', r)) {
    const p = project(r.snapshot || {});
    check('control.v1: it carries the backends', JSON.stringify(p.backends) === JSON.stringify(project(s3).backends), p.backends);
    check('control.v1: and no listeners or routes', p.listeners.length === 0 && p.http_routes.length === 0, p);
    B.ack(r);
  }

  // ---- ReportStatus
  const report = (req) =>
    new Promise((resolve) => client.ReportStatus(req, {deadline: Date.now() + 5000}, (err, res) => resolve({err, res})));
  const now = {seconds: String(Math.floor(Date.now() / 1000)), nanos: 0};
  const rejections0 = await metricSum('sextant_xds_status_report_rejections_total');
  let out = await report({node_id: 'control-a', version: String(v3), ready: true, message: 'serving', observed_at: now});
  check('control.v1: ReportStatus from a known node is accepted', !out.err && out.res && out.res.accepted === true, out.err ? out.err.message : out.res);
  out = await report({node_id: '', version: String(v3), ready: true, message: 'no node id', observed_at: now});
  check('control.v1: ReportStatus without a node_id is rejected (accepted=false)', !out.err && out.res && !out.res.accepted, out.err ? out.err.message : out.res);
  out = await report({node_id: 'control-never-connected', version: String(v3), ready: true, message: 'who am I', observed_at: now});
  check('control.v1: ReportStatus from a node Sextant never saw is rejected (accepted=false)', !out.err && out.res && !out.res.accepted,
    out.err ? out.err.message : out.res);
  const stored = await x.waitFor(5000, () => {
    const s = row('control-a');
    return s && s.report_message === 'serving' ? s : null;
  });
  check('control.v1: an accepted report is stored in node_status', stored && stored.report_ready === true &&
    stored.report_version === String(v3), row('control-a'));

  // ---- a report carried on the stream (DiscoveryRequest.status_report)
  A.stream.send({node_id: 'control-a', cluster: G, status_report:
    {node_id: 'control-a', version: String(v3), ready: false, message: 'draining', observed_at: now}});
  const inStream = await x.waitFor(5000, () => {
    const s = row('control-a');
    return s && s.report_message === 'draining' ? s : null;
  });
  check('control.v1: a report on the stream is stored in node_status', inStream && inStream.report_ready === false, row('control-a'));
  check('control.v1: a report-only request is not answered like an ACK/NACK', await A.stream.quiet(700));
  A.stream.send({node_id: 'control-a', cluster: G, status_report:
    {node_id: 'someone-else', version: String(v3), ready: true, message: 'spoofed', observed_at: now}});
  await A.stream.quiet(500);
  check('control.v1: a stream cannot report for another node', row('control-a').report_message === 'draining', row('control-a'));
  const rejections1 = await metricSum('sextant_xds_status_report_rejections_total');
  check('control.v1: the rejections are counted in sextant_xds_status_report_rejections_total', rejections1 - rejections0 >= 3,
    {before: rejections0, after: rejections1});
  A.stream.close();
  B.stream.close();
  client.close();
});
