// xds.js — shared pieces of the conformance programs: Envoy's upstream protos (the
// ones @grpc/grpc-js-xds ships), bidirectional streams with a response queue and
// deadlines, checks that record failures and keep going, and the outside world
// (sextant publish, psql, /metrics).
//
// Everything that decodes Sextant's bytes uses Envoy's own .proto files, never
// Sextant's: wire compatibility is what these tests prove.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const {execFileSync} = require('child_process');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const DEPS = path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const INCLUDE_DIRS = ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) => path.join(DEPS, d));
const REPO = process.env.SEXTANT_SOURCE_DIR || path.resolve(__dirname, '..', '..', '..');

const TYPE = {
  CDS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  EDS: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  LDS: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  RDS: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  SDS: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
};
const TYPE_NAME = Object.fromEntries(Object.entries(TYPE).map(([k, v]) => [v, k]));
const HCM_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';

const LOADER_OPTIONS = {keepCase: true, longs: String, enums: String, defaults: false, oneofs: true};

// ------------------------------------------------------------------ checks

let failures = 0;
let checks = 0;
function pass(what) {
  checks++;
  console.log(`ok: ${what}`);
}
function fail(what, detail) {
  checks++;
  failures++;
  console.log(`FAIL: ${what}${detail === undefined ? '' : ' — ' + short(detail)}`);
}
// check(what, cond, detail): records the outcome; detail is printed on failure.
function check(what, cond, detail) {
  if (cond) pass(what);
  else fail(what, detail);
  return !!cond;
}
function short(v) {
  const s = typeof v === 'string' ? v : JSON.stringify(v, (k, x) => (Buffer.isBuffer(x) ? `<${x.length} bytes>` : x));
  return s && s.length > 600 ? s.slice(0, 600) + '…' : s;
}
function summary() {
  console.log(failures ? `${failures} of ${checks} checks failed` : `all ${checks} checks passed`);
  return failures ? 1 : 0;
}
// main(fn): runs an async test body, prints the summary and exits with its status;
// an exception counts as a failure (the body stops there).
function main(fn) {
  const hard = setTimeout(() => {
    fail('the program finished within its time limit');
    process.exit(summary() || 1);
  }, Number(process.env.CONFORMANCE_TIME_LIMIT_MS || 50000));
  hard.unref();
  fn()
    .catch((e) => fail('the test ran to its end', e && e.stack ? e.stack : String(e)))
    .finally(() => process.exit(summary()));
}

// ------------------------------------------------------------------ protos

let envoyRoot = null;
// Envoy's message types, for decoding the Any payloads Sextant sends.
function envoy() {
  if (envoyRoot) return envoyRoot;
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => {
    if (path.isAbsolute(target)) return target;
    for (const dir of INCLUDE_DIRS) {
      const p = path.join(dir, target);
      if (fs.existsSync(p)) return p;
    }
    return target; // google/protobuf/*: protobufjs has them built in
  };
  root.loadSync(
    [
      'envoy/service/discovery/v3/ads.proto',
      'envoy/config/cluster/v3/cluster.proto',
      'envoy/config/endpoint/v3/endpoint.proto',
      'envoy/config/listener/v3/listener.proto',
      'envoy/config/route/v3/route.proto',
      'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
      'envoy/extensions/filters/http/router/v3/router.proto',
      'envoy/extensions/filters/http/stateful_session/v3/stateful_session.proto',
      'envoy/extensions/http/stateful_session/cookie/v3/cookie.proto',
      'envoy/extensions/http/stateful_session/header/v3/header.proto',
      'envoy/extensions/transport_sockets/quic/v3/quic_transport.proto',
      'envoy/extensions/filters/udp/udp_proxy/v3/udp_proxy.proto',
      'envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto',
      'envoy/extensions/transport_sockets/tls/v3/secret.proto',
      'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
      'envoy/extensions/filters/http/wasm/v3/wasm.proto',
      'envoy/extensions/filters/http/upstream_codec/v3/upstream_codec.proto',
    ],
    {keepCase: true},
  );
  root.resolveAll();
  envoyRoot = root;
  return root;
}

// decodeAny({type_url, value}): the payload as a plain object (Envoy's protos), or
// throws when the type is unknown or the bytes do not parse.
function decodeAny(any) {
  const name = any.type_url.replace(/^type\.googleapis\.com\//, '');
  const t = envoy().lookupType(name);
  // An empty message (Router {}) has no bytes: proto-loader then leaves value unset.
  const msg = t.decode(any.value || Buffer.alloc(0));
  return t.toObject(msg, {longs: String, enums: String, defaults: false, oneofs: true, bytes: Buffer});
}

// The ADS client class, built by proto-loader from Envoy's ads.proto.
function adsClientClass() {
  const def = protoLoader.loadSync('envoy/service/discovery/v3/ads.proto', {...LOADER_OPTIONS, includeDirs: INCLUDE_DIRS});
  return grpc.loadPackageDefinition(def).envoy.service.discovery.v3.AggregatedDiscoveryService;
}

// The gateway.control.v1 client class, from the repository's control.proto.
function controlClientClass() {
  const def = protoLoader.loadSync('gateway/control/v1/control.proto', {
    ...LOADER_OPTIONS,
    includeDirs: [path.join(REPO, 'proto')],
  });
  return grpc.loadPackageDefinition(def).gateway.control.v1.ConfigurationDiscoveryService;
}

// ------------------------------------------------------------------ streams

// Stream wraps a bidirectional call: responses queue up until next() takes them.
class Stream {
  constructor(call, label) {
    this.call = call;
    this.label = label;
    this.queue = [];
    this.waiters = [];
    this.error = null;
    this.ended = false;
    this.nonces = [];
    call.on('data', (m) => {
      if (m && m.nonce !== undefined) this.nonces.push(m.nonce);
      this.queue.push(m);
      this.wake();
    });
    call.on('error', (e) => {
      this.error = e;
      this.wake();
    });
    call.on('end', () => {
      this.ended = true;
      this.wake();
    });
    call.on('status', () => {});
  }
  wake() {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  send(req) {
    this.call.write(req);
  }
  // next(ms, pred): the next queued response (the first one matching pred, when given;
  // the others stay queued), or null when none comes within ms.
  async next(ms = 3000, pred = null) {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = pred ? this.queue.findIndex(pred) : this.queue.length ? 0 : -1;
      if (i >= 0) return this.queue.splice(i, 1)[0];
      if (this.error || this.ended) return null;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
  // nextOfType(typeUrl, ms): the next response of one xDS type.
  nextOfType(typeUrl, ms = 3000) {
    return this.next(ms, (m) => m.type_url === typeUrl);
  }
  // quiet(ms, pred): true when no (matching) response arrives within ms.
  async quiet(ms, pred = null) {
    return (await this.next(ms, pred)) === null;
  }
  // Drops everything queued (returns it).
  drain() {
    const q = this.queue;
    this.queue = [];
    return q;
  }
  close() {
    try {
      this.call.end();
    } catch (e) {
      /* already closed */
    }
    try {
      this.call.cancel();
    } catch (e) {
      /* already closed */
    }
  }
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// ------------------------------------------------------------------ outside world

// publish(group, snapshot): runs `sextant publish` and returns the snapshot version it
// reports (a number); throws with its output when it fails.
function publish(group, snapshot, message = 'conformance') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-pub-'));
  const file = path.join(dir, 'snapshot.json');
  fs.writeFileSync(file, JSON.stringify(snapshot, null, 2));
  try {
    const out = execFileSync(process.env.SEXTANT_BIN, ['publish', '--group', group, '--author', 'conformance', '-m', message, file], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const m = out.match(/"version"\s*:\s*(\d+)/);
    if (!m) throw new Error(`sextant publish printed no version: ${out}`);
    return Number(m[1]);
  } catch (e) {
    if (e.stdout !== undefined) throw new Error(`sextant publish failed (${e.status}): ${e.stdout}${e.stderr}`);
    throw e;
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

// psql(sql): the first column of the first row as text ("" when no row).
function psql(sql) {
  return execFileSync('psql', [process.env.SEXTANT_DATABASE_URL, '-qtAXc', sql], {encoding: 'utf8'}).split('\n')[0].trim();
}
function sqlQuote(s) {
  return "'" + String(s).replace(/'/g, "''") + "'";
}

// waitFor(ms, fn): polls fn (sync or async) every 100 ms until it returns truthy;
// returns its last value.
async function waitFor(ms, fn) {
  const deadline = Date.now() + ms;
  for (;;) {
    let v;
    try {
      v = await fn();
    } catch (e) {
      v = null;
    }
    if (v || Date.now() >= deadline) return v;
    await sleep(100);
  }
}

// metric(httpPort, name): the value of one Prometheus sample (name with its labels as
// printed), or null.
async function metric(httpPort, name) {
  const res = await fetch(`http://127.0.0.1:${httpPort}/metrics`);
  const text = await res.text();
  for (const line of text.split('\n')) {
    const sp = line.lastIndexOf(' ');
    if (sp > 0 && line.slice(0, sp) === name) return Number(line.slice(sp + 1));
  }
  return null;
}

module.exports = {
  TYPE,
  TYPE_NAME,
  HCM_TYPE,
  ROUTER_TYPE,
  INCLUDE_DIRS,
  REPO,
  grpc,
  check,
  pass,
  fail,
  short,
  main,
  envoy,
  decodeAny,
  adsClientClass,
  controlClientClass,
  Stream,
  sleep,
  publish,
  psql,
  sqlQuote,
  waitFor,
  metric,
};
