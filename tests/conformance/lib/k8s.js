// k8s.js — what the Kubernetes conformance programs share: kubectl on the test API
// server (tests/k8s/apiserver.py, started by tests/lib/k8s.sh), the Gateway API
// fixtures of tests/k8s/fixtures/ made ready to apply, conditions read back from the
// status Sextant wrote, and a proxy group's served xDS state followed over ADS and
// decoded with Envoy's upstream protos (nested Any payloads included).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const {execFileSync} = require('child_process');
const x = require('./xds');

const {TYPE} = x;
const FIXTURES = path.join(x.REPO, 'tests', 'k8s', 'fixtures');
const PYTHON = '/usr/bin/python3';

// ------------------------------------------------------------------ kubectl

// kubectl(dir, args, input): runs kubectl on DIR/kubeconfig (k8s_start's folder) and
// returns its standard output; throws with its standard error when it fails.
function kubectl(dir, args, input) {
  try {
    return execFileSync(
      process.env.KUBECTL || 'kubectl',
      ['--kubeconfig', path.join(dir, 'kubeconfig'), '--cache-dir', path.join(dir, 'kube-cache'), ...args],
      {encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20},
    );
  } catch (e) {
    throw new Error(`kubectl ${args.join(' ')} failed: ${(e.stderr || e.message).trim()}`);
  }
}

// apply(dir, objects): `kubectl apply` of a list of objects (one List document).
function apply(dir, objects) {
  return kubectl(dir, ['apply', '-f', '-'], JSON.stringify({apiVersion: 'v1', kind: 'List', items: objects}));
}

// remove(dir, objects): `kubectl delete` of the objects, waiting for nothing.
function remove(dir, objects) {
  return kubectl(dir, ['delete', '--wait=false', '-f', '-'], JSON.stringify({apiVersion: 'v1', kind: 'List', items: objects}));
}

// getAll(dir, kinds): every object of the kinds (resource names as kubectl takes them)
// in every namespace, as one list read with `kubectl get -o json`.
function getAll(dir, kinds) {
  return JSON.parse(kubectl(dir, ['get', kinds.join(','), '-A', '-o', 'json'])).items;
}

// The API version the test API server's CRDs serve (tests/k8s/crds/) for kinds the
// fixtures write with another one: the translator does not read apiVersion, the API
// server does.
const SERVED_VERSION = {
  ReferenceGrant: 'gateway.networking.k8s.io/v1beta1',
  TLSRoute: 'gateway.networking.k8s.io/v1alpha2',
  TCPRoute: 'gateway.networking.k8s.io/v1alpha2',
  UDPRoute: 'gateway.networking.k8s.io/v1alpha2',
};

// fixture(prefix, files, keep): the objects of tests/k8s/fixtures/FILES ready for a real
// API server: every gateway-conformance-* namespace becomes PREFIX-* (so each scenario
// has namespaces of its own), metadata.generation (the API server's to set) is dropped,
// and apiVersions are those the test API server serves. keep(object), when given,
// filters the objects.
function fixture(prefix, files, keep = () => true) {
  const texts = files.map((f) => fs.readFileSync(path.join(FIXTURES, f), 'utf8').replace(/gateway-conformance-/g, `${prefix}-`));
  // Debian's python3-yaml (python3-kubernetes needs it) reads the YAML; node has no parser.
  const json = execFileSync(
    PYTHON,
    ['-c', 'import sys, json, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin.read()) if d], sys.stdout)'],
    {encoding: 'utf8', input: texts.join('\n---\n')},
  );
  return JSON.parse(json)
    .filter(keep)
    .map((o) => {
      delete o.metadata.generation;
      if (SERVED_VERSION[o.kind]) o.apiVersion = SERVED_VERSION[o.kind];
      return o;
    });
}

// tlsSecretData(names): the data of a kubernetes.io/tls Secret (base64 tls.crt and
// tls.key): a self-signed ECDSA certificate for the DNS names, valid from now for two
// days (openssl), so a test does not depend on the day it runs.
function tlsSecretData(names) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sextant-k8s-tls-'));
  try {
    const crt = path.join(dir, 'tls.crt');
    const key = path.join(dir, 'tls.key');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-keyout',
        key,
        '-out',
        crt,
        '-subj',
        `/CN=${names[0]}`,
        '-addext',
        `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
      ],
      {stdio: 'ignore'},
    );
    return {'tls.crt': fs.readFileSync(crt).toString('base64'), 'tls.key': fs.readFileSync(key).toString('base64')};
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

// ------------------------------------------------------------------ status

// find(objects, kind, ns, name): the object of that kind (and namespace) from getAll.
function find(objects, kind, ns, name) {
  return objects.find((o) => o.kind === kind && o.metadata.name === name && (o.metadata.namespace || '') === (ns || ''));
}

// cond(conditions, type): the condition of that type, or undefined.
function cond(conditions, type) {
  return (conditions || []).find((c) => c.type === type);
}

// condProblem(conditions, type, status, reason, generation): why the condition is not
// status/reason at observedGeneration generation, or '' when it is.
function condProblem(conditions, type, status, reason, generation) {
  const c = cond(conditions, type);
  if (!c) return `no ${type} condition`;
  if (c.status !== status || c.reason !== reason || c.observedGeneration !== generation)
    return `${type} is ${c.status}/${c.reason} at generation ${c.observedGeneration}, want ${status}/${reason} at ${generation}`;
  return '';
}

// routeParent(route, gwNs, gwName, sectionName): the route's status.parents entry for
// that Gateway (and sectionName, when given).
function routeParent(route, gwNs, gwName, sectionName) {
  return ((route && route.status && route.status.parents) || []).find(
    (p) =>
      p.parentRef.name === gwName &&
      (p.parentRef.namespace || route.metadata.namespace) === gwNs &&
      (sectionName === undefined || p.parentRef.sectionName === sectionName),
  );
}

// listenerStatus(gateway, name): the status.listeners entry of a Gateway's listener.
function listenerStatus(gw, name) {
  return ((gw && gw.status && gw.status.listeners) || []).find((l) => l.name === name);
}

// ------------------------------------------------------------------ xDS

let extraLoaded = false;
// decodeDeep(any): the Any payload decoded with Envoy's protos, every nested Any (filter
// and transport socket configs) decoded too, in place of {type_url, value}: the result
// keeps type_url and adds the decoded fields under `decoded`.
function decodeDeep(any) {
  if (!extraLoaded) {
    const root = x.envoy();
    root.loadSync(
      [
        'envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto',
        'envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto',
        'envoy/extensions/transport_sockets/tls/v3/tls.proto',
        'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
      ],
      {keepCase: true},
    );
    root.resolveAll();
    extraLoaded = true;
  }
  return nested(x.decodeAny(any));
}
function nested(v) {
  if (Array.isArray(v)) return v.map(nested);
  if (!v || typeof v !== 'object' || Buffer.isBuffer(v)) return v;
  if (typeof v.type_url === 'string' && v.type_url.startsWith('type.googleapis.com/')) {
    try {
      return {type_url: v.type_url, decoded: decodeDeep(v)};
    } catch (e) {
      return {type_url: v.type_url, undecoded: `${e.message}`};
    }
  }
  const out = {};
  for (const [k, w] of Object.entries(v)) out[k] = nested(w);
  return out;
}

// The route configuration names a decoded Listener's HTTP connection managers read.
function rdsNames(l) {
  const names = [];
  const hcm = (f) => {
    const c = f.typed_config && f.typed_config.decoded;
    if (c && c.rds && c.rds.route_config_name) names.push(c.rds.route_config_name);
  };
  for (const fc of l.filter_chains || []) for (const f of fc.filters || []) hcm(f);
  if (l.default_filter_chain) for (const f of l.default_filter_chain.filters || []) hcm(f);
  if (l.api_listener && l.api_listener.api_listener) {
    const c = l.api_listener.api_listener.decoded;
    if (c && c.rds && c.rds.route_config_name) names.push(c.rds.route_config_name);
  }
  return names;
}

// The SDS secret names decoded resources refer to (TLS contexts' *_sds_secret_config(s)).
function sdsNames(v, out = []) {
  if (Array.isArray(v)) v.forEach((w) => sdsNames(w, out));
  else if (v && typeof v === 'object' && !Buffer.isBuffer(v))
    for (const [k, w] of Object.entries(v)) {
      if (/_sds_secret_configs?$/.test(k)) for (const c of [].concat(w)) c && c.name && out.push(c.name);
      else sdsNames(w, out);
    }
  return out;
}

// GroupWatch: one ADS stream (state of the world) of a node of GROUP that subscribes
// as Envoy does — LDS and CDS by wildcard, RDS for the route names its listeners read,
// EDS for its clusters, SDS for the secrets its TLS contexts name — ACKs every response
// and keeps the decoded state. Every response is logged in `responses` ({type, version}).
class GroupWatch {
  constructor(server, group, nodeId) {
    this.group = group;
    const Ads = x.adsClientClass();
    this.client = new Ads(server, x.grpc.credentials.createInsecure());
    this.stream = new x.Stream(this.client.StreamAggregatedResources(), nodeId);
    this.nodeId = nodeId;
    this.state = {};
    this.names = {};
    this.responses = [];
    this.first = true;
    this.request(TYPE.LDS, []);
    this.request(TYPE.CDS, []);
  }
  request(type, names) {
    this.names[type] = names;
    const s = this.state[type] || {};
    const req = {type_url: type, resource_names: names, version_info: s.version || '', response_nonce: s.nonce || ''};
    if (this.first) req.node = {id: this.nodeId, cluster: this.group, locality: {}, user_agent_name: 'sextant-conformance'};
    this.first = false;
    this.stream.send(req);
  }
  take(r) {
    const decoded = {};
    for (const any of r.resources || []) {
      const msg = decodeDeep(any);
      decoded[r.type_url === TYPE.EDS ? msg.cluster_name : msg.name] = msg;
    }
    const prev = this.state[r.type_url];
    // LDS and CDS responses are the full state; RDS and EDS ones may carry only some names.
    const full = r.type_url === TYPE.LDS || r.type_url === TYPE.CDS || !prev;
    const resources = full ? decoded : {...prev.resources, ...decoded};
    this.state[r.type_url] = {version: r.version_info, nonce: r.nonce, resources};
    this.responses.push({type: x.TYPE_NAME[r.type_url], version: r.version_info});
    this.stream.send({
      type_url: r.type_url,
      version_info: r.version_info,
      response_nonce: r.nonce,
      resource_names: this.names[r.type_url] || [],
    });
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    if (r.type_url === TYPE.LDS) {
      const want = [...new Set(Object.values(resources).flatMap(rdsNames))].sort();
      if (!same(want, this.names[TYPE.RDS] || [])) this.request(TYPE.RDS, want);
    } else if (r.type_url === TYPE.CDS) {
      const want = [
        ...new Set(Object.values(resources).map((c) => (c.eds_cluster_config && c.eds_cluster_config.service_name) || c.name)),
      ].sort();
      if (!same(want, this.names[TYPE.EDS] || [])) this.request(TYPE.EDS, want);
    }
    if (r.type_url === TYPE.LDS || r.type_url === TYPE.CDS) {
      const all = [TYPE.LDS, TYPE.CDS].flatMap((t) => Object.values((this.state[t] && this.state[t].resources) || {}));
      const want = [...new Set(sdsNames(all))].sort();
      if (!same(want, this.names[TYPE.SDS] || [])) this.request(TYPE.SDS, want);
    }
  }
  // The served state as a test reads it: listeners, routes (route configurations),
  // clusters and secrets by name, endpoints of each EDS name as sorted "ip:port", and the
  // version of each type; only subscribed RDS, EDS and SDS names count.
  view() {
    const res = (t) => (this.state[t] && this.state[t].resources) || {};
    const subscribed = (t) => Object.fromEntries(Object.entries(res(t)).filter(([n]) => (this.names[t] || []).includes(n)));
    const endpoints = {};
    for (const [n, a] of Object.entries(subscribed(TYPE.EDS))) {
      endpoints[n] = [];
      for (const e of a.endpoints || [])
        for (const le of e.lb_endpoints || []) {
          const sa = le.endpoint.address.socket_address;
          endpoints[n].push(`${sa.address}:${sa.port_value}`);
        }
      endpoints[n].sort();
    }
    const versions = {};
    for (const [k, t] of Object.entries(TYPE)) if (this.state[t]) versions[k] = this.state[t].version;
    return {
      listeners: res(TYPE.LDS),
      routes: subscribed(TYPE.RDS),
      clusters: res(TYPE.CDS),
      endpoints,
      secrets: subscribed(TYPE.SDS),
      versions,
    };
  }
  // Whether LDS and CDS were answered and every subscribed RDS, EDS and SDS name too.
  complete() {
    if (!this.state[TYPE.LDS] || !this.state[TYPE.CDS]) return false;
    for (const t of [TYPE.RDS, TYPE.EDS, TYPE.SDS]) {
      const names = this.names[t] || [];
      const have = (this.state[t] && this.state[t].resources) || {};
      if (names.some((n) => !have[n])) return false;
    }
    return true;
  }
  // until(evaluate, ms): waits, taking each response as it comes, until the state is
  // complete and every check evaluate(view) returns ({what, problem}) has an empty
  // problem, or ms pass; returns the last checks (one failing check when no complete
  // state was served).
  async until(evaluate, ms) {
    const deadline = Date.now() + ms;
    for (;;) {
      let checks;
      try {
        checks = this.complete()
          ? evaluate(this.view())
          : [{what: `a complete xDS state is served to group ${this.group}`, problem: `subscribed ${JSON.stringify(this.names)}`}];
      } catch (e) {
        checks = [{what: `the resources served to group ${this.group} are understood`, problem: e.message}];
      }
      if (checks.every((c) => !c.problem)) return checks;
      const left = deadline - Date.now();
      const r = left > 0 ? await this.stream.next(left) : null;
      if (!r) {
        if (this.stream.error)
          checks = [...checks, {what: `the ADS stream of ${this.group} stays open`, problem: this.stream.error.message}];
        return checks;
      }
      this.take(r);
    }
  }
  // quiet(ms): takes what is queued, then waits ms taking what comes; returns the
  // responses taken.
  async quiet(ms) {
    const n = this.responses.length;
    for (const r of this.stream.drain()) this.take(r);
    const deadline = Date.now() + ms;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const r = await this.stream.next(left);
      if (!r) break;
      this.take(r);
    }
    return this.responses.slice(n);
  }
  close() {
    this.stream.close();
    this.client.close();
  }
}

// ------------------------------------------------------------------ what a proxy does
//
// The served resources read the way Envoy reads them, so a test says what a request
// gets (the conformance suite's request → backend cases) rather than how the resources
// are spelled. Only what Sextant emits is understood; anything else throws, so a
// resource this reading does not know fails the test instead of being skipped.

// listenerOn(view, port): the decoded socket Listener bound to PORT.
function listenerOn(view, port) {
  return Object.values(view.listeners).find((l) => l.address && l.address.socket_address && l.address.socket_address.port_value === port);
}

// The filter chain of a Listener a connection with SNI (undefined: none) is given:
// the chain whose server_names match it (exact before "*." suffix), else the one
// without server_names.
function filterChain(l, sni) {
  const chains = (l && l.filter_chains) || [];
  const names = (fc) => (fc.filter_chain_match && fc.filter_chain_match.server_names) || [];
  if (sni !== undefined) {
    const exact = chains.find((fc) => names(fc).includes(sni));
    if (exact) return exact;
    let best = null;
    let bestLen = -1;
    for (const fc of chains)
      for (const n of names(fc))
        if (n.startsWith('*.') && sni.endsWith(n.slice(1)) && sni.length > n.length - 1 && n.length > bestLen) {
          best = fc;
          bestLen = n.length;
        }
    if (best) return best;
  }
  return chains.find((fc) => !names(fc).length) || null;
}

// The network filter of a chain with that typed_config type (decoded), or null.
function networkFilter(fc, typeUrl) {
  const f = ((fc && fc.filters) || []).find((g) => g.typed_config && g.typed_config.type_url === typeUrl);
  return f ? f.typed_config.decoded : null;
}
const TCP_PROXY_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy';

// Envoy's virtual host selection: the exact domain, then the longest suffix wildcard
// ("*.example.com"; the * matches one character or more), then the longest prefix
// wildcard ("foo.*"), then "*".
function selectVirtualHost(rc, host) {
  let best = null;
  let bestRank = -1;
  let bestLen = -1;
  for (const vh of rc.virtual_hosts || [])
    for (const d0 of vh.domains || []) {
      const d = d0.toLowerCase();
      let rank = -1;
      if (d === host) rank = 3;
      else if (d === '*') rank = 0;
      else if (d.startsWith('*') && host.length > d.length - 1 && host.endsWith(d.slice(1))) rank = 2;
      else if (d.endsWith('*') && host.length > d.length - 1 && host.startsWith(d.slice(0, -1))) rank = 1;
      if (rank < 0) continue;
      if (rank > bestRank || (rank === bestRank && d.length > bestLen)) {
        best = vh;
        bestRank = rank;
        bestLen = d.length;
      }
    }
  return best;
}

function fullMatch(regex, v, flags = '') {
  return v !== undefined && new RegExp(`^(?:${regex})$`, flags).test(v);
}

// envoy.type.matcher.v3.StringMatcher against a value (undefined: absent).
function stringMatch(m, v) {
  if (v === undefined) return false;
  const ic = !!m.ignore_case;
  const c = (t) => (ic ? t.toLowerCase() : t);
  switch (m.match_pattern) {
    case 'exact':
      return c(v) === c(m.exact);
    case 'prefix':
      return c(v).startsWith(c(m.prefix));
    case 'suffix':
      return c(v).endsWith(c(m.suffix));
    case 'contains':
      return c(v).includes(c(m.contains));
    case 'safe_regex':
      return fullMatch(m.safe_regex.regex, v, ic ? 'i' : '');
  }
  throw new Error(`string matcher ${JSON.stringify(m)} is not understood by this test`);
}

// envoy.config.route.v3.HeaderMatcher against the request's headers (lower-case names).
function headerMatch(h, headers) {
  const v = headers[h.name.toLowerCase()];
  let ok;
  switch (h.header_match_specifier) {
    case 'exact_match':
      ok = v === h.exact_match;
      break;
    case 'safe_regex_match':
      ok = fullMatch(h.safe_regex_match.regex, v);
      break;
    case 'prefix_match':
      ok = v !== undefined && v.startsWith(h.prefix_match);
      break;
    case 'present_match':
      ok = (v !== undefined) === !!h.present_match;
      break;
    case 'string_match':
      ok = stringMatch(h.string_match, v);
      break;
    default:
      throw new Error(`header matcher ${JSON.stringify(h)} is not understood by this test`);
  }
  return h.invert_match ? !ok : ok;
}

// envoy.config.route.v3.QueryParameterMatcher against the request's query parameters.
function queryMatch(q, query) {
  const v = query[q.name];
  if (q.query_parameter_match_specifier === 'present_match') return v !== undefined;
  if (q.query_parameter_match_specifier === 'string_match') return stringMatch(q.string_match, v);
  throw new Error(`query parameter matcher ${JSON.stringify(q)} is not understood by this test`);
}

const ROUTE_MATCH_FIELDS = new Set([
  'path_specifier',
  'prefix',
  'path',
  'safe_regex',
  'path_separated_prefix',
  'case_sensitive',
  'headers',
  'query_parameters',
  'grpc',
]);

// envoy.config.route.v3.RouteMatch against a request {path, headers, query}.
function routeMatches(m, req) {
  for (const k of Object.keys(m)) if (!ROUTE_MATCH_FIELDS.has(k)) throw new Error(`route match field ${k} is not understood by this test`);
  const cs = !(m.case_sensitive && m.case_sensitive.value === false);
  const c = (t) => (cs ? t : t.toLowerCase());
  const p = c(req.path);
  let ok;
  switch (m.path_specifier) {
    case 'prefix':
      ok = p.startsWith(c(m.prefix));
      break;
    case 'path':
      ok = p === c(m.path);
      break;
    case 'safe_regex':
      ok = fullMatch(m.safe_regex.regex, req.path, cs ? '' : 'i');
      break;
    case 'path_separated_prefix':
      ok = p === c(m.path_separated_prefix) || p.startsWith(c(m.path_separated_prefix) + '/');
      break;
    default:
      throw new Error(`path specifier ${m.path_specifier} is not understood by this test`);
  }
  if (!ok) return false;
  for (const h of m.headers || []) if (!headerMatch(h, req.headers)) return false;
  for (const q of m.query_parameters || []) if (!queryMatch(q, req.query)) return false;
  if (m.grpc && !String(req.headers['content-type'] || '').startsWith('application/grpc')) return false;
  return true;
}

// The clusters a decoded Route forwards to: [{name, weight}] (weight null for one cluster).
function routeClusters(r) {
  const a = r.route;
  if (a.cluster_specifier === 'cluster') return [{name: a.cluster, weight: null}];
  if (a.cluster_specifier === 'weighted_clusters')
    return (a.weighted_clusters.clusters || []).map((w) => ({name: w.name, weight: w.weight ? w.weight.value : 0}));
  throw new Error(`cluster specifier ${a.cluster_specifier} is not understood by this test`);
}

// httpRequest(view, port, req): what a proxy serving VIEW does with an HTTP request
// {host, path (with its query), method, headers} on the listener bound to PORT:
//   {clusters: [{name, weight}], route}  forwarded (weights null for a single cluster)
//   {status: 404}                         no virtual host or no route matches
//   {redirect}, {status: N}               a redirect or a direct response
//   {error}                               nothing can take the request (no listener, ...)
function httpRequest(view, port, req) {
  const l = listenerOn(view, port);
  if (!l) return {error: `no listener on port ${port}`};
  const fc = filterChain(l, req.sni);
  const hcm = networkFilter(fc, x.HCM_TYPE);
  if (!hcm) return {error: `listener ${l.name} has no HTTP connection manager for SNI ${req.sni}`};
  if (hcm.route_specifier !== 'rds') return {error: `listener ${l.name}: route_specifier ${hcm.route_specifier}`};
  const rc = view.routes[hcm.rds.route_config_name];
  if (!rc) return {error: `route configuration ${hcm.rds.route_config_name} was not served`};
  let host = String(req.host || '').toLowerCase();
  if (hcm.strip_any_host_port) host = host.replace(/:\d+$/, '');
  const vh = selectVirtualHost(rc, host);
  if (!vh) return {status: 404};
  const [path, qs] = String(req.path || '/').split('?');
  const query = Object.fromEntries(new URLSearchParams(qs || ''));
  const headers = {':authority': host, ':path': req.path || '/', ':method': req.method || 'GET'};
  for (const [k, v] of Object.entries(req.headers || {})) headers[k.toLowerCase()] = v;
  for (const r of vh.routes || []) {
    if (!routeMatches(r.match, {path, headers, query})) continue;
    if (r.action === 'route') return {route: r.name, clusters: routeClusters(r)};
    if (r.action === 'redirect') return {redirect: r.redirect};
    if (r.action === 'direct_response') return {status: r.direct_response.status};
    return {error: `route ${r.name}: action ${r.action}`};
  }
  return {status: 404};
}

// grpcRequest(view, port, host, service, method): httpRequest for a gRPC call.
function grpcRequest(view, port, host, service, method) {
  return httpRequest(view, port, {
    host,
    path: `/${service}/${method}`,
    method: 'POST',
    headers: {'content-type': 'application/grpc'},
  });
}

// tlsConnection(view, port, sni): the cluster a TLS passthrough listener on PORT
// forwards a connection with SNI to ({cluster}), or {error}.
function tlsConnection(view, port, sni) {
  const l = listenerOn(view, port);
  if (!l) return {error: `no listener on port ${port}`};
  const fc = filterChain(l, sni);
  if (!fc) return {error: `no filter chain of ${l.name} takes SNI ${sni}`};
  const tcp = networkFilter(fc, TCP_PROXY_TYPE);
  if (!tcp) return {error: `the filter chain of ${l.name} for SNI ${sni} has no TCP proxy`};
  return {cluster: tcp.cluster};
}

// The downstream TLS context (decoded) of a listener's filter chain for SNI.
function downstreamTls(view, port, sni) {
  const fc = filterChain(listenerOn(view, port), sni);
  const ts = fc && fc.transport_socket;
  return ts && ts.typed_config ? ts.typed_config.decoded : null;
}

// Problems as a list: eq(what, got, want) is '' when JSON-equal.
function eq(what, got, want) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  return g === w ? '' : `${what}: got ${g}, want ${w}`;
}

module.exports = {
  kubectl,
  apply,
  remove,
  getAll,
  fixture,
  tlsSecretData,
  find,
  cond,
  condProblem,
  routeParent,
  listenerStatus,
  decodeDeep,
  GroupWatch,
  listenerOn,
  httpRequest,
  grpcRequest,
  tlsConnection,
  downstreamTls,
  eq,
};
