// ads_supersede.js — a second ADS stream with the node id of a live one supersedes it,
// and the node stays connected, on the second stream, in GET /api/v1/proxies/{id}: the
// end of the first stream (reason superseded), which reaches the node status after the
// start of the second, changes nothing.
//
// XDS_SERVER and HTTP_PORT name the replica, REPLICA_LOG its log. The end of the first
// stream is known to be queued once the replica logs it; a probe node connecting after
// that is written by the same or a later flush, so once the probe shows in the API the
// end of the first stream has been written (or dropped) too.
'use strict';

const fs = require('fs');
const x = require('./xds');

const SERVER = process.env.XDS_SERVER;
const HTTP_PORT = process.env.HTTP_PORT;
const LOG = process.env.REPLICA_LOG;
const TOKEN = process.env.TOKEN;
const G = 'conf-supersede';
const CDS = x.TYPE.CDS;

async function proxy(id) {
  const res = await fetch(`http://127.0.0.1:${HTTP_PORT}/api/v1/proxies/${encodeURIComponent(id)}`, {
    headers: {Authorization: `Bearer ${TOKEN}`},
  });
  if (res.status !== 200) return null;
  return res.json();
}

// A state-of-the-world stream of node id, whose client says version, asking for CDS.
function open(client, id, version) {
  const s = new x.Stream(client.StreamAggregatedResources(), `${id}/${version}`);
  s.send({
    type_url: CDS,
    resource_names: [],
    node: {id, cluster: G, user_agent_name: 'sextant-conformance', user_agent_version: version},
  });
  return s;
}

// The replica logged that node's stream ended as superseded.
function loggedSuperseded(id) {
  return fs
    .readFileSync(LOG, 'utf8')
    .split('\n')
    .some((l) => l.includes('xds stream ended: superseded') && l.includes(`"node":"${id}"`));
}

x.main(async () => {
  const Ads = x.adsClientClass();
  const client = new Ads(SERVER, x.grpc.credentials.createInsecure());
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));
  const N = 'supersede-node';

  const first = open(client, N, 'first');
  const up = await x.waitFor(10000, async () => {
    const p = await proxy(N);
    return p && p.connected && p.client.endsWith('first') ? p : null;
  });
  if (!x.check('the first stream shows the node connected', up, await proxy(N))) return;

  const second = open(client, N, 'second');
  const ended = await x.waitFor(10000, () => first.error || first.ended);
  x.check('the second stream of the node ends the first', ended);
  x.check('the replica logs the end of the first stream as superseded', await x.waitFor(10000, () => loggedSuperseded(N)));

  const probe = open(client, 'supersede-probe', 'probe');
  x.check('a probe node connecting afterwards is written',
    await x.waitFor(10000, async () => {
      const p = await proxy('supersede-probe');
      return p && p.connected;
    }));

  const p = await proxy(N);
  x.check('the node is connected after its first stream was superseded', p && p.connected && p.state === 'connected', p);
  x.check('its disconnect reason is not "superseded"', p && p.disconnect_reason === null, p && p.disconnect_reason);
  x.check('it is shown on the second stream (its client)', p && p.client.endsWith('second'), p && p.client);
  x.check('the second stream is still live', !second.error && !second.ended, second.error && String(second.error));

  second.close();
  const down = await x.waitFor(10000, async () => {
    const q = await proxy(N);
    return q && !q.connected ? q : null;
  });
  x.check('the end of the second stream disconnects the node', down && down.disconnect_reason === 'client_disconnect', down || (await proxy(N)));
  probe.close();
  client.close();
});
