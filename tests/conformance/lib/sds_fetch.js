#!/usr/bin/env node
// sds_fetch.js — what a proxy receives for its TLS secrets: walks ADS (state of the world)
// as Envoy does for a TLS listener — LDS (wildcard), then SDS for every secret the
// listeners' TLS contexts name — ACKs each response, and prints one JSON document with
// each secret's certificate chain and private key as Envoy's own protos decode them:
//
//   {"version": "3", "secrets": {"ns/name": {"cert": "-----BEGIN ...", "key": "-----BEGIN ..."}}}
//
//   node sds_fetch.js --server 127.0.0.1:PORT --group G --node ID
//
// Exits 1 (with the reason on stderr) when a response does not come in time.
'use strict';

const x = require('./xds');
const {TYPE} = x;
const {nodeArgs} = require('../../lib/cli.js');

const {server, group, nodeId, timeoutMs} = nodeArgs('sds-fetch');

// The names of the SDS secrets a listener's TLS contexts refer to.
function sdsNames(listener) {
  const names = [];
  for (const chain of listener.filter_chains || []) {
    const ts = chain.transport_socket;
    if (!ts || !ts.typed_config) continue;
    const ctx = x.decodeAny(ts.typed_config);
    const common = ctx.common_tls_context || {};
    for (const s of common.tls_certificate_sds_secret_configs || []) names.push(s.name);
  }
  return names;
}

// The text of an Envoy DataSource (inline_string or inline_bytes).
function text(ds) {
  if (!ds) return null;
  if (ds.inline_string !== undefined) return ds.inline_string;
  if (ds.inline_bytes !== undefined) return Buffer.from(ds.inline_bytes).toString();
  return null;
}

async function main() {
  // The listeners' TLS contexts are DownstreamTlsContext messages, in tls.proto.
  const root = x.envoy();
  root.loadSync('envoy/extensions/transport_sockets/tls/v3/tls.proto', {keepCase: true});
  root.resolveAll();
  const Ads = x.adsClientClass();
  const client = new Ads(server, x.grpc.credentials.createInsecure());
  const stream = new x.Stream(client.StreamAggregatedResources(), nodeId);
  const ask = async (type, names, first) => {
    const req = {type_url: type, resource_names: names, version_info: '', response_nonce: ''};
    if (first) req.node = {id: nodeId, cluster: group, locality: {}, user_agent_name: 'sextant-conformance'};
    stream.send(req);
    const r = await stream.nextOfType(type, timeoutMs);
    if (!r) throw new Error(`no ${x.TYPE_NAME[type]} response from ${server} within ${timeoutMs} ms`);
    stream.send({type_url: type, version_info: r.version_info, response_nonce: r.nonce, resource_names: names});
    return r;
  };
  const lds = await ask(TYPE.LDS, [], true);
  const names = [...new Set(lds.resources.flatMap((any) => sdsNames(x.decodeAny(any))))].sort();
  if (names.length === 0) throw new Error('no listener names an SDS secret');
  const sds = await ask(TYPE.SDS, names, false);
  const out = {version: sds.version_info, secrets: {}};
  for (const any of sds.resources || []) {
    const s = x.decodeAny(any);
    const tc = s.tls_certificate || {};
    out.secrets[s.name] = {cert: text(tc.certificate_chain), key: text(tc.private_key)};
  }
  stream.close();
  client.close();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(`sds_fetch: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
