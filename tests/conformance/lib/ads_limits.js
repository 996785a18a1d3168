// ads_limits.js — bounded inputs on the xDS server: a 1 MB node id, 100,000 resource
// names, a name too long, node metadata too large, garbage bytes, a message past
// xds.max_receive_message_bytes and more streams than xds.max_streams are each refused
// with their gRPC status and counted in sextant_xds_limit_refusals_total{limit}, while
// a well-behaved stream keeps being served and no refused stream shows as a node.
//
// XDS_SERVER and HTTP_PORT name one replica started with xds.max_streams 3 and
// xds.max_receive_message_bytes 2 MiB (test_ads_limits.sh).
'use strict';

const x = require('./xds');
const {build} = require('./snapshots');

const SERVER = process.env.XDS_SERVER;
const HTTP_PORT = process.env.HTTP_PORT;
const G = 'conf-limits';
const CDS = x.TYPE.CDS;
const ADS_SOTW = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const INVALID_ARGUMENT = 3;
const RESOURCE_EXHAUSTED = 8;

function node(id, extra = {}) {
  return {id, cluster: G, user_agent_name: 'sextant-conformance', user_agent_version: '1.0', ...extra};
}

// A state-of-the-world stream whose first request asks for CDS names (all: []).
function open(client, n, names = []) {
  const s = new x.Stream(client.StreamAggregatedResources(), n.id.slice(0, 40));
  s.send({type_url: CDS, resource_names: names, node: n});
  return s;
}

async function refusals(limit) {
  return (await x.metric(HTTP_PORT, `sextant_xds_limit_refusals_total{limit="${limit}"}`)) || 0;
}

function nodeRows(id) {
  return Number(x.psql(`SELECT count(*) FROM proxy_nodes WHERE node_id = ${x.sqlQuote(id)}`));
}

// refused(what, stream, code, limit, before): the stream ends with code, and the limit's
// counter went up by one (null limit: a refusal of gRPC itself, not counted by Sextant).
async function refused(what, s, code, limit, before) {
  const ended = await x.waitFor(10000, () => s.error || s.ended);
  x.check(`${what}: the stream is refused with status ${code}`, ended && s.error && s.error.code === code,
    s.error ? `${s.error.code} ${s.error.details}` : 'not ended');
  if (s.error) x.check(`${what}: the status carries a message`, (s.error.details || '').length > 0, s.error.details);
  if (limit) {
    const after = await x.waitFor(5000, async () => ((await refusals(limit)) > before ? refusals(limit) : null));
    x.check(`${what}: counted in sextant_xds_limit_refusals_total{limit="${limit}"}`, after === before + 1, {before, after});
  }
  s.close();
}

x.main(async () => {
  const Ads = x.adsClientClass();
  const client = new Ads(SERVER, x.grpc.credentials.createInsecure());
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));
  const v1 = x.publish(G, build([{host: 'a.test', name: 'a', ports: [10001]}]));

  // A well-behaved stream, open throughout.
  const well = open(client, node('well-behaved'));
  let r = await well.nextOfType(CDS, 10000);
  if (!x.check('a well-behaved stream is served', r && r.version_info === String(v1), r)) return;
  well.send({type_url: CDS, resource_names: [], version_info: r.version_info, response_nonce: r.nonce});

  let before = await refusals('node_id');
  await refused('a 1 MB node id', open(client, node('n'.repeat(1 << 20))), INVALID_ARGUMENT, 'node_id', before);

  before = await refusals('resource_names');
  const many = Array.from({length: 100000}, (_, i) => `cluster-${i}`);
  await refused('100,000 resource names', open(client, node('many-names'), many), RESOURCE_EXHAUSTED, 'resource_names', before);
  x.check('a node refused on its first request is not recorded', nodeRows('many-names') === 0);

  before = await refusals('resource_name_length');
  await refused('a 2,000-byte resource name', open(client, node('long-name'), ['c'.repeat(2000)]), INVALID_ARGUMENT, 'resource_name_length', before);

  before = await refusals('node_metadata');
  // (proto-loader encodes google.protobuf.Value's kind only under its camelCase name)
  const metadata = {fields: {big: {stringValue: 'm'.repeat(100000)}}};
  await refused('100 kB of node metadata', open(client, node('big-metadata', {metadata})), INVALID_ARGUMENT, 'node_metadata', before);

  before = await refusals('malformed_request');
  const raw = client.makeBidiStreamRequest(ADS_SOTW, (b) => b, (b) => b);
  const garbage = new x.Stream(raw, 'garbage');
  garbage.send(Buffer.from([0x0f, 0xff, 0xff, 0xff, 0x01, 0x02]));
  await refused('garbage bytes', garbage, INVALID_ARGUMENT, 'malformed_request', before);

  await refused('a 3 MB request (past xds.max_receive_message_bytes)',
    open(client, node('huge-message'), ['h'.repeat(1000)].concat(Array.from({length: 3000}, (_, i) => `${i}`.padEnd(1000, 'x')))),
    RESOURCE_EXHAUSTED, null, 0);

  // xds.max_streams 3: the well-behaved stream and two more; a third new node is refused,
  // a stream superseding one of the same node is not.
  const s1 = open(client, node('cap-1'));
  const s2 = open(client, node('cap-2'));
  x.check('streams up to xds.max_streams are served', (await s1.nextOfType(CDS, 10000)) && (await s2.nextOfType(CDS, 10000)));
  before = await refusals('streams');
  await refused('a stream past xds.max_streams', open(client, node('cap-3')), RESOURCE_EXHAUSTED, 'streams', before);
  x.check('the refused node is not recorded', nodeRows('cap-3') === 0);
  const s1b = open(client, node('cap-1'));
  x.check('a stream superseding one of its node is served at the cap', await s1b.nextOfType(CDS, 10000));

  // The well-behaved stream was served all along and still is.
  x.check('the well-behaved stream is still open', !well.error && !well.ended, well.error && String(well.error));
  const v2 = x.publish(G, build([{host: 'b.test', name: 'b', ports: [10002]}]));
  r = await well.next(10000, (m) => m.type_url === CDS && m.version_info === String(v2));
  x.check('the well-behaved stream gets the next snapshot', r, well.drain().map((m) => m.version_info));
  for (const s of [well, s1, s2, s1b]) s.close();
  client.close();
});
