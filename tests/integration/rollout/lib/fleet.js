#!/usr/bin/env node
// fleet.js — a controllable fleet of real xDS clients for the rollout tests, in one
// process, with its state served over a small local HTTP server.
//
//   node fleet.js --spec SPEC.json --port-file FILE
//
// SPEC: {"servers": ["127.0.0.1:P1", "127.0.0.1:P2"], "target": "echo.test",
//        "clients": [{"id": "n01", "kind": "grpcjs" | "ads", "group": "g",
//                     "labels": {"tier": "web"}, "servers": [...], "mode": "proxyless" | "envoy",
//                     "nack_if": "MARKER", "nack_message": "...", "silent_if": "MARKER",
//                     "rpc_interval_ms": 100, "rpc_deadline_ms": 2000}]}
//
// Each client is one xDS node: its own node id, node.cluster = its group, node
// metadata {"labels": {...}} (where Sextant reads labels from), its own ADS stream.
//
// - grpcjs: a @grpc/grpc-js-xds channel dialing xds:///<target> with a bootstrap of its
//   own (the channel option grpc-js-xds offers for that), calling
//   sextant.test.Echo/Hello one call at a time, so the backend its route leads to is
//   observable. grpc-js-xds uses only the first xDS server of a bootstrap, so each
//   grpcjs client dials a TCP forwarder of its own that connects each new connection
//   to the first replica of the client's list that accepts it (failover).
// - ads: a protocol-level ADS state-of-the-world client decoding with Envoy's upstream
//   protos. mode "proxyless" (default) subscribes like a proxyless gRPC client: LDS
//   [target] → RDS (the HCM's route_config_name) → CDS (the route's clusters) → EDS;
//   mode "envoy" subscribes LDS and CDS by wildcard, RDS and EDS by name. It ACKs,
//   except: nack_if — NACK (error_detail, previous version) every response carrying a
//   resource with the marker bytes that it has not accepted before (like a proxy, it
//   accepts again a resource it already holds unchanged); silent_if — never answer such a response (and
//   send nothing more for that type until a response without the marker comes; when
//   its behaviour is changed it answers what it held back, as a hung client that
//   recovers). These behaviours are the ads clients' (grpc-js-xds answers as it
//   decides). On a stream end it reconnects with backoff, moving through its server
//   list when a server does not answer, and re-subscribes with the versions it
//   accepted and empty nonces, as real clients do.
//
// What every client saw is recorded from the wire: for grpcjs the ADS call of
// grpc-js-xds is tapped (requests and responses), so both kinds report the same facts.
//
// HTTP API (127.0.0.1, port written to --port-file once listening):
//   GET  /state                  {"now": ms, "clients": [view, ...]}
//   GET  /clients/ID             one view
//   POST /clients/ID/behaviour   {"nack_if"?, "nack_message"?, "silent_if"?} (null clears)
//   POST /clients                a client spec: starts it
//   POST /clients/ID/stop        ends its stream (and its channel) for good
//   POST /clients/ID/start       starts a stopped client again
//   POST /quit
// A view: {node_id, kind, group, labels, mode, servers, server, connected, connects,
//   version (the configuration it runs: of the version_infos it ACKed a response of and
//   NACKed none of, the one ACKed last), version_at, acked: {LDS: {version, at}, ...}
//   (per type; a type whose content did not change is not re-sent, so these differ),
//   versions: {V: {first_response_at, first_ack_at, last_ack_at, acks, nacks}},
//   responses, acks, nacks, last_nack: {type, version, error, at}, silenced: [...],
//   dangling: [{type: "CDS", version, missing: [cluster], at}] (CDS responses that left
//   out a cluster the routes the client had accepted still use: the client deletes it
//   while its routes point at it),
//   behaviour, events: [last 300 {at, ev, type?, version?, ...}], and for grpcjs: backend
//   (last reached), backend_at, backends: [{backend, at}] (each change), rpc_ok,
//   rpc_errors, last_rpc_error}. Times are unix ms.
'use strict';

const fs = require('fs');
const http = require('http');
const net = require('net');
const path = require('path');
const {createRequire} = require('module');

const CONF = path.resolve(__dirname, '..', '..', '..', 'conformance');
const creq = createRequire(path.join(CONF, 'package.json'));
const x = require(path.join(CONF, 'lib', 'xds.js'));
const ec = require(path.join(CONF, 'lib', 'envoy_checks.js'));
const grpc = x.grpc;
const protoLoader = creq('@grpc/proto-loader');
creq('@grpc/grpc-js-xds').register();
const {XdsClient} = creq('@grpc/grpc-js-xds/build/src/xds-client');

const {TYPE} = x;
const SHORT = {[TYPE.LDS]: 'LDS', [TYPE.RDS]: 'RDS', [TYPE.CDS]: 'CDS', [TYPE.EDS]: 'EDS', [TYPE.SDS]: 'SDS'};
const ORDER = ['LDS', 'RDS', 'CDS', 'EDS'];
const LONG = {LDS: TYPE.LDS, RDS: TYPE.RDS, CDS: TYPE.CDS, EDS: TYPE.EDS};
const HCM_NAME = 'envoy.filters.network.http_connection_manager';
const MAX_EVENTS = 300;

const {arg, writePortFile} = require('../../../lib/cli.js');
function log(...a) {
  console.log(new Date().toISOString(), ...a);
}

// google.protobuf.Struct as proto-loader wants it, from a plain JSON object. The
// well-known types come from protobufjs's built-in definitions, whose field names are
// camelCase even when the loader keeps the case of everything else.
function toValue(v) {
  if (v === null || v === undefined) return {nullValue: 'NULL_VALUE'};
  if (typeof v === 'string') return {stringValue: v};
  if (typeof v === 'number') return {numberValue: v};
  if (typeof v === 'boolean') return {boolValue: v};
  if (Array.isArray(v)) return {listValue: {values: v.map(toValue)}};
  return {structValue: toStruct(v)};
}
function toStruct(o) {
  const fields = {};
  for (const [k, v] of Object.entries(o || {})) fields[k] = toValue(v);
  return {fields};
}

// ------------------------------------------------------------------ what a client saw

// Observer records one node's ADS exchange: responses, and the requests that answer
// them (ACK: same nonce, no error_detail; NACK: same nonce with error_detail).
class Observer {
  constructor(view) {
    this.v = view;
    this.pending = {}; // type -> {version, nonce, refs}
    // What the configuration the client accepted refers to: RDS → the clusters its
    // accepted routes use, ... (kept across reconnections, like a client's cache).
    this.uses = {};
  }
  event(e) {
    const ev = {at: Date.now(), ...e};
    this.v.events.push(ev);
    if (this.v.events.length > MAX_EVENTS) this.v.events.splice(0, this.v.events.length - MAX_EVENTS);
    return ev;
  }
  ver(version) {
    return (this.v.versions[version] ||= {first_response_at: null, first_ack_at: null, last_ack_at: null, acks: 0, nacks: 0, held: 0});
  }
  // The version the client is on: of the versions it ACKed something of, NACKed
  // nothing of and holds no unanswered response of, the one ACKed last. (A client can
  // ACK one type of a version it NACKs or ignores another type of — an emptied CDS
  // before a refused RDS — and still run the older configuration.)
  settle() {
    let best = null;
    for (const [v, vv] of Object.entries(this.v.versions)) {
      if (!vv.acks || vv.nacks || vv.held) continue;
      if (!best || vv.last_ack_at > best[1]) best = [v, vv.last_ack_at];
    }
    this.v.version = best ? best[0] : null;
    this.v.version_at = best ? best[1] : null;
  }
  response(m) {
    const type = SHORT[m.type_url] || m.type_url;
    const now = Date.now();
    this.v.responses++;
    const vv = this.ver(m.version_info);
    if (vv.first_response_at === null) vv.first_response_at = now;
    let msgs = null;
    try {
      msgs = (m.resources || []).map((any) => x.decodeAny(any));
    } catch (e) {
      msgs = null;
    }
    this.pending[type] = {version: m.version_info, nonce: m.nonce, refs: msgs ? refsOf(type, msgs) : null,
      names: msgs ? msgs.map((c) => c.name) : null};
    this.event({ev: 'response', type, version: m.version_info, resources: (m.resources || []).length});
    // CDS (and LDS) responses are full state: a cluster left out is deleted by the
    // client. One that the routes it runs still use leaves those routes dangling
    // (make-before-break says: remove a cluster only once no accepted route uses it).
    if (type === 'CDS' && msgs && this.uses.CDS) {
      const have = new Set(msgs.map((c) => c.name));
      // Only clusters the client holds count: leaving one out of a full-state response
      // deletes it. (A proxyless client subscribes to a new route's cluster after
      // accepting the route; a response made before the server saw that subscription
      // does not carry it, which deletes nothing.)
      const held = this.heldCds || new Set();
      const missing = this.uses.CDS.filter((n) => !have.has(n) && held.has(n));
      if (missing.length) {
        this.v.dangling.push({type, version: m.version_info, missing, at: now});
        if (this.v.dangling.length > 50) this.v.dangling.shift();
        this.event({ev: 'dangling', type, version: m.version_info, missing});
      }
    }
  }
  // unheld(m): a silenced response is answered (or dropped with its stream) after all.
  unheld(m) {
    const vv = this.ver(m.version_info);
    if (vv.held > 0) vv.held--;
    this.settle();
  }
  request(req) {
    const type = SHORT[req.type_url] || req.type_url;
    const p = this.pending[type];
    if (!p || !req.response_nonce || req.response_nonce !== p.nonce) {
      this.event({ev: 'request', type, version: req.version_info || '', names: (req.resource_names || []).length});
      return;
    }
    delete this.pending[type];
    const now = Date.now();
    const err = req.error_detail && (req.error_detail.message || req.error_detail.code) ? req.error_detail : null;
    if (err) {
      this.v.nacks++;
      this.v.last_nack = {type, version: p.version, error: err.message || '', at: now};
      this.ver(p.version).nacks++;
      this.settle();
      this.event({ev: 'nack', type, version: p.version, error: err.message || ''});
      return;
    }
    this.v.acks++;
    if (type === 'CDS' && p.names) this.heldCds = new Set(p.names);
    if (p.refs) {
      const next = {LDS: 'RDS', RDS: 'CDS', CDS: 'EDS'}[type];
      if (next) this.uses[next] = p.refs;
    }
    const version = req.version_info || p.version;
    this.v.acked[type] = {version, at: now};
    const vv = this.ver(version);
    if (vv.first_ack_at === null) vv.first_ack_at = now;
    vv.last_ack_at = now;
    vv.acks++;
    this.settle();
    this.event({ev: 'ack', type, version});
  }
  silenced(m) {
    const type = SHORT[m.type_url] || m.type_url;
    this.v.silenced.push({type, version: m.version_info, at: Date.now()});
    if (this.v.silenced.length > 50) this.v.silenced.shift();
    this.ver(m.version_info).held++;
    this.settle();
    this.event({ev: 'silent', type, version: m.version_info});
  }
  connected(server) {
    this.v.connected = true;
    this.v.server = server;
    this.v.connects++;
    this.pending = {};
    this.event({ev: 'connect', server});
  }
  disconnected(why) {
    if (!this.v.connected) return;
    this.v.connected = false;
    this.pending = {};
    this.event({ev: 'disconnect', server: this.v.server, why});
  }
}

function newView(spec, fleet) {
  return {
    node_id: spec.id,
    kind: spec.kind,
    group: spec.group || '',
    labels: spec.labels || {},
    mode: spec.kind === 'ads' ? spec.mode || 'proxyless' : 'grpc-js-xds',
    servers: spec.servers || fleet.servers,
    server: null,
    connected: false,
    connects: 0,
    stopped: false,
    version: null,
    version_at: null,
    acked: {},
    versions: {},
    responses: 0,
    acks: 0,
    nacks: 0,
    last_nack: null,
    silenced: [],
    dangling: [],
    behaviour: {
      nack_if: spec.nack_if || null,
      nack_message: spec.nack_message || null,
      silent_if: spec.silent_if || null,
    },
    events: [],
  };
}

function containsMarker(m, marker) {
  if (!marker) return false;
  return (m.resources || []).some((r) => r && r.value && Buffer.from(r.value).includes(marker));
}

// Like a real proxy, a client refuses a resource it has not accepted yet: one it holds
// unchanged from an accepted response (a cluster the server keeps sending until the
// routes that used it are gone) is accepted again.
function containsNewMarker(m, marker, held) {
  if (!marker) return false;
  return (m.resources || []).some((r) => r && r.value && Buffer.from(r.value).includes(marker) &&
    !(held && held.has(Buffer.from(r.value).toString('base64'))));
}

// ------------------------------------------------------------------ ads: protocol client

class AdsNode {
  constructor(spec, fleet) {
    this.spec = spec;
    this.fleet = fleet;
    this.view = newView(spec, fleet);
    this.obs = new Observer(this.view);
    this.target = spec.target || fleet.target;
    this.envoy = this.view.mode === 'envoy';
    // type -> names (null = wildcard, [] = not subscribed)
    this.subs = {LDS: this.envoy ? null : [this.target], RDS: [], CDS: this.envoy ? null : [], EDS: []};
    this.accepted = {}; // type -> version_info last ACKed (sent on reconnect)
    this.nonce = {};
    this.silentType = {}; // type -> the silenced response, while unanswered
    this.serverIdx = 0;
    this.attempt = 0;
    this.call = null;
    this.timer = null;
    this.gotResponse = false;
  }
  start() {
    this.view.stopped = false;
    this.connect();
  }
  stop() {
    this.view.stopped = true;
    clearTimeout(this.timer);
    const c = this.call;
    this.call = null;
    if (c) {
      try {
        c.cancel();
      } catch (e) {
        /* gone */
      }
    }
    this.obs.disconnected('stopped');
  }
  node() {
    return {
      id: this.view.node_id,
      cluster: this.view.group,
      locality: {},
      metadata: toStruct({labels: this.view.labels}),
      user_agent_name: this.envoy ? 'sextant-fleet-envoy-like' : 'sextant-fleet-ads',
      user_agent_version: '1.0',
      client_features: ['envoy.lb.does_not_support_overprovisioning'],
    };
  }
  subscribed(type) {
    const n = this.subs[type];
    return n === null || n.length > 0;
  }
  connect() {
    if (this.view.stopped) return;
    const servers = this.view.servers;
    const server = servers[this.serverIdx % servers.length];
    const call = this.fleet.adsClient(server).StreamAggregatedResources();
    this.call = call;
    this.first = true;
    this.nonce = {};
    for (const m of Object.values(this.silentType)) this.obs.unheld(m);
    this.silentType = {};
    this.gotResponse = false;
    this.obs.connected(server);
    call.on('data', (m) => {
      if (this.call !== call) return;
      this.gotResponse = true;
      this.attempt = 0;
      this.onResponse(m);
    });
    const ended = (why) => {
      if (this.call !== call) return;
      this.call = null;
      this.obs.disconnected(why);
      this.retry();
    };
    call.on('error', (e) => ended(`error ${e.code} ${e.details || e.message}`));
    call.on('end', () => ended('end'));
    call.on('status', () => {});
    // A (re)connecting client sends every subscription at once, with the versions it
    // accepted and empty nonces.
    for (const t of ORDER) if (this.subscribed(t)) this.send(t, {response_nonce: ''});
  }
  retry() {
    if (this.view.stopped) return;
    // A server that gave no response on this stream is passed over for the next one.
    if (!this.gotResponse) this.serverIdx++;
    const delay = Math.min(2000, 100 * 2 ** Math.min(this.attempt, 5)) * (0.8 + 0.4 * Math.random());
    this.attempt++;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }
  send(type, extra = {}) {
    if (!this.call) return;
    const names = this.subs[type];
    const req = {
      type_url: LONG[type],
      version_info: this.accepted[type] || '',
      response_nonce: this.nonce[type] || '',
      resource_names: names === null ? [] : names,
      ...extra,
    };
    if (this.first) req.node = this.node();
    this.first = false;
    this.obs.request(req);
    this.call.write(req);
  }
  setNames(type, names) {
    const sorted = [...new Set(names)].sort();
    const cur = this.subs[type];
    if (cur === null) return false; // wildcard stays wildcard
    if (JSON.stringify(cur) === JSON.stringify(sorted)) return false;
    this.subs[type] = sorted;
    return true;
  }
  onResponse(m) {
    this.obs.response(m);
    this.answer(m);
  }
  answer(m) {
    const type = SHORT[m.type_url];
    if (!type || !LONG[type]) return;
    const b = this.view.behaviour;
    if (this.silentType[type]) {
      this.obs.unheld(this.silentType[type]);
      delete this.silentType[type];
    }
    if (b.silent_if && containsMarker(m, b.silent_if)) {
      this.silentType[type] = m;
      this.obs.silenced(m);
      return;
    }
    if (b.nack_if && containsNewMarker(m, b.nack_if, this.acceptedBytes && this.acceptedBytes[type])) {
      this.nonce[type] = m.nonce;
      this.send(type, {error_detail: {code: 3, message: b.nack_message || `fleet: resource contains "${b.nack_if}"`}});
      return;
    }
    let next;
    try {
      next = this.follow(type, m);
    } catch (e) {
      this.nonce[type] = m.nonce;
      this.send(type, {error_detail: {code: 3, message: `fleet: cannot decode ${type}: ${e.message}`}});
      return;
    }
    this.nonce[type] = m.nonce;
    this.accepted[type] = m.version_info;
    (this.acceptedBytes ||= {})[type] = new Set((m.resources || []).filter((r) => r && r.value)
      .map((r) => Buffer.from(r.value).toString('base64')));
    this.send(type, {version_info: m.version_info});
    for (const t of next) if (!this.silentType[t]) this.send(t);
  }
  // behaviourChanged(): a client that was silent answers what it left unanswered, as
  // its new behaviour says (a hung client that recovers).
  behaviourChanged() {
    for (const m of Object.values(this.silentType)) this.answer(m);
  }
  // follow(type, response): decodes the resources and updates the subscriptions they
  // lead to; returns the types whose names changed (to be requested after the ACK).
  follow(type, m) {
    const msgs = (m.resources || []).map((any) => x.decodeAny(any));
    const next = {LDS: 'RDS', RDS: 'CDS', CDS: 'EDS'}[type];
    return next && this.setNames(next, refsOf(type, msgs)) ? [next] : [];
  }
}

// refsOf(type, msgs): the names of the next type that resources of this type refer to
// (LDS → route configurations, RDS → clusters, CDS → EDS service names).
function refsOf(type, msgs) {
  const out = [];
  if (type === 'LDS') {
    for (const l of msgs) out.push(...rdsNames(l));
  } else if (type === 'RDS') {
    for (const rc of msgs) {
      for (const vh of rc.virtual_hosts || []) {
        for (const r of vh.routes || []) {
          if (!r.route) continue;
          if (r.route.cluster) out.push(r.route.cluster);
          for (const wc of (r.route.weighted_clusters && r.route.weighted_clusters.clusters) || []) out.push(wc.name);
        }
      }
    }
  } else if (type === 'CDS') {
    for (const c of msgs) if (c.type === 'EDS') out.push(ec.edsName(c));
  }
  return [...new Set(out)].sort();
}

// The route configuration names a listener's HTTP connection managers ask for.
function rdsNames(l) {
  const out = [];
  const hcmAnys = [];
  if (l.api_listener && l.api_listener.api_listener) hcmAnys.push(l.api_listener.api_listener);
  for (const fc of l.filter_chains || []) {
    for (const f of fc.filters || []) if (f.name === HCM_NAME && f.typed_config) hcmAnys.push(f.typed_config);
  }
  for (const any of hcmAnys) {
    if (any.type_url !== x.HCM_TYPE) continue;
    const hcm = x.decodeAny(any);
    if (hcm.rds && hcm.rds.route_config_name) out.push(hcm.rds.route_config_name);
  }
  return out;
}

// ------------------------------------------------------------------ grpcjs: grpc-js-xds

// Every ADS call grpc-js-xds starts is tapped: the XdsClient of a channel is found by
// its node id (one bootstrap, hence one XdsClient, per grpcjs node).
const tapped = new Map(); // node id -> GrpcJsNode
const origGetOrCreate = XdsClient.prototype.getOrCreateClient;
XdsClient.prototype.getOrCreateClient = function (authority) {
  const single = origGetOrCreate.call(this, authority);
  if (!single.__fleetTapped) {
    single.__fleetTapped = true;
    const nodeId = this.bootstrapInfo && this.bootstrapInfo.node && this.bootstrapInfo.node.id;
    const ads = single.adsClient;
    const orig = ads.StreamAggregatedResources;
    ads.StreamAggregatedResources = function (...a) {
      const call = orig.apply(ads, a);
      const owner = tapped.get(nodeId);
      if (owner) owner.tap(call);
      return call;
    };
  }
  return single;
};

let echoClass = null;
function echoService() {
  if (!echoClass) {
    const def = protoLoader.loadSync(path.join(CONF, 'proto', 'echo.proto'), {keepCase: true});
    echoClass = grpc.loadPackageDefinition(def).sextant.test.Echo;
  }
  return echoClass;
}
const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

class GrpcJsNode {
  constructor(spec, fleet) {
    this.spec = spec;
    this.fleet = fleet;
    this.view = newView(spec, fleet);
    Object.assign(this.view, {backend: null, backend_at: null, backends: [], rpc_ok: 0, rpc_errors: 0, last_rpc_error: null});
    this.obs = new Observer(this.view);
    this.target = spec.target || fleet.target;
    this.interval = Number(spec.rpc_interval_ms || 100);
    this.deadline = Number(spec.rpc_deadline_ms || 2000);
    this.serverIdx = 0;
    this.fwd = null;
    this.fwdPort = 0;
    this.sockets = new Set();
    this.client = null;
    this.timer = null;
    this.seq = 0;
    tapped.set(this.view.node_id, this);
  }
  // The forwarder: each connection goes to the first server, from the current one on,
  // that accepts it.
  async listen() {
    if (this.fwd) return;
    this.fwd = net.createServer((down) => this.forward(down));
    await new Promise((resolve) => this.fwd.listen(0, '127.0.0.1', resolve));
    this.fwdPort = this.fwd.address().port;
  }
  forward(down, tries = 0) {
    const servers = this.view.servers;
    if (tries >= servers.length) {
      down.destroy();
      return;
    }
    const server = servers[this.serverIdx % servers.length];
    const [host, port] = server.split(':');
    const up = net.connect(Number(port), host);
    let open = false;
    this.sockets.add(down);
    this.sockets.add(up);
    up.once('connect', () => {
      open = true;
      this.view.server = server;
      down.pipe(up);
      up.pipe(down);
    });
    const close = () => {
      this.sockets.delete(down);
      this.sockets.delete(up);
      down.destroy();
      up.destroy();
    };
    up.on('error', () => {
      if (!open) {
        this.sockets.delete(up);
        up.destroy();
        this.serverIdx++;
        if (!down.destroyed) this.forward(down, tries + 1);
        return;
      }
      close();
    });
    down.on('error', close);
    down.on('close', () => {
      if (open || down.destroyed) close();
    });
    up.on('close', () => {
      if (open) close();
    });
  }
  tap(call) {
    const obs = this.obs;
    const write = call.write.bind(call);
    call.write = (req, ...rest) => {
      try {
        obs.request(req);
      } catch (e) {
        /* observation must never break the client */
      }
      return write(req, ...rest);
    };
    call.prependListener('data', (m) => {
      if (!this.view.connected) obs.connected(this.view.server);
      obs.response(m);
    });
    call.on('status', (s) => obs.disconnected(`status ${s.code} ${s.details || ''}`));
  }
  async start() {
    this.view.stopped = false;
    await this.listen();
    const bootstrap = {
      xds_servers: [{server_uri: `127.0.0.1:${this.fwdPort}`, channel_creds: [{type: 'insecure'}]}],
      node: {id: this.view.node_id, cluster: this.view.group, locality: {}, metadata: {labels: this.view.labels}},
    };
    const Echo = echoService();
    this.client = new Echo(`xds:///${this.target}`, grpc.credentials.createInsecure(), {
      'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config': JSON.stringify(bootstrap),
    });
    this.once();
  }
  once() {
    if (this.view.stopped || !this.client) return;
    const client = this.client;
    this.seq++;
    client.Hello({message: `${this.view.node_id} ${this.seq}`}, {deadline: Date.now() + this.deadline}, (err, reply) => {
      if (this.client !== client) return;
      const now = Date.now();
      if (err) {
        this.view.rpc_errors++;
        this.view.last_rpc_error = {at: now, code: CODE_NAMES[err.code] || String(err.code), details: String(err.details || err.message)};
      } else {
        this.view.rpc_ok++;
        if (reply.backend !== this.view.backend) {
          this.view.backends.push({backend: reply.backend, at: now});
          if (this.view.backends.length > 100) this.view.backends.shift();
          this.obs.event({ev: 'backend', backend: reply.backend});
        }
        this.view.backend = reply.backend;
        this.view.backend_at = now;
      }
      this.timer = setTimeout(() => this.once(), this.interval);
    });
  }
  stop() {
    this.view.stopped = true;
    clearTimeout(this.timer);
    if (this.client) this.client.close();
    this.client = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    this.obs.disconnected('stopped');
  }
}

// ------------------------------------------------------------------ the fleet

class Fleet {
  constructor(spec) {
    this.servers = spec.servers || [];
    this.target = spec.target || 'echo.test';
    this.nodes = new Map();
    this.adsClients = new Map();
    this.Ads = x.adsClientClass();
  }
  adsClient(server) {
    let c = this.adsClients.get(server);
    if (!c) {
      c = new this.Ads(server, grpc.credentials.createInsecure(), {
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 1000,
        'grpc.min_reconnect_backoff_ms': 100,
      });
      this.adsClients.set(server, c);
    }
    return c;
  }
  async add(spec) {
    if (!spec || !spec.id) throw new Error('a client needs an id');
    if (this.nodes.has(spec.id)) throw new Error(`client ${spec.id} exists`);
    let n;
    if (spec.kind === 'ads') n = new AdsNode(spec, this);
    else if (spec.kind === 'grpcjs') n = new GrpcJsNode(spec, this);
    else throw new Error(`client ${spec.id}: kind must be grpcjs or ads`);
    if (!n.view.servers.length) throw new Error(`client ${spec.id}: no servers`);
    this.nodes.set(spec.id, n);
    await n.start();
    return n;
  }
  view(n) {
    return n.view;
  }
  state() {
    return {now: Date.now(), clients: [...this.nodes.values()].map((n) => n.view)};
  }
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => {
      try {
        resolve(s ? JSON.parse(s) : {});
      } catch (e) {
        reject(new Error(`body is not JSON: ${e.message}`));
      }
    });
    req.on('error', reject);
  });
}

async function main() {
  const specFile = arg('spec', '');
  const portFile = arg('port-file', '');
  if (!specFile) throw new Error('usage: fleet.js --spec SPEC.json --port-file FILE');
  const spec = JSON.parse(fs.readFileSync(specFile, 'utf8'));
  const fleet = new Fleet(spec);

  const server = http.createServer(async (req, res) => {
    const send = (code, body) => {
      res.writeHead(code, {'Content-Type': 'application/json'});
      res.end(JSON.stringify(body));
    };
    try {
      const url = new URL(req.url, 'http://x');
      const p = url.pathname.split('/').filter(Boolean);
      if (req.method === 'GET' && url.pathname === '/state') return send(200, fleet.state());
      if (req.method === 'POST' && url.pathname === '/quit') {
        send(200, {});
        setTimeout(() => process.exit(0), 50);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/clients') {
        const n = await fleet.add(await readBody(req));
        return send(201, n.view);
      }
      if (p[0] === 'clients' && p[1]) {
        const n = fleet.nodes.get(decodeURIComponent(p[1]));
        if (!n) return send(404, {error: `no client ${p[1]}`});
        if (req.method === 'GET' && p.length === 2) return send(200, n.view);
        if (req.method === 'POST' && p[2] === 'behaviour') {
          const b = await readBody(req);
          for (const k of ['nack_if', 'nack_message', 'silent_if']) if (k in b) n.view.behaviour[k] = b[k] || null;
          n.obs.event({ev: 'behaviour', ...n.view.behaviour});
          if (n.behaviourChanged) n.behaviourChanged();
          return send(200, n.view);
        }
        if (req.method === 'POST' && p[2] === 'stop') {
          n.stop();
          return send(200, n.view);
        }
        if (req.method === 'POST' && p[2] === 'start') {
          if (n.view.stopped) await n.start();
          return send(200, n.view);
        }
      }
      send(404, {error: `no route ${req.method} ${url.pathname}`});
    } catch (e) {
      send(400, {error: e.message});
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

  for (const c of spec.clients || []) await fleet.add(c);
  const port = server.address().port;
  log(`fleet: ${fleet.nodes.size} clients, state on http://127.0.0.1:${port}/state`);
  if (portFile) {
    writePortFile(portFile, port);
  }
}

for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
process.on('unhandledRejection', (e) => log('fleet: unhandled rejection', e && e.stack ? e.stack : e));
main().catch((e) => {
  log('fleet:', e && e.stack ? e.stack : e);
  process.exit(1);
});
