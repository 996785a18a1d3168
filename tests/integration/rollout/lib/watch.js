#!/usr/bin/env node
// watch.js — watches a deployment and the fleet together while a rollout runs, and
// records every moment at which a node was somewhere it should not be.
//
//   node watch.js --api http://127.0.0.1:HTTP --token JWT --fleet http://127.0.0.1:FLEET \
//       --deployment ID --old-version V --old-backend A --out REPORT.json [--interval-ms 100]
//
// Each sample reads the deployment (D1), then the fleet's state, then the deployment
// again (D2), so that what it concludes held during the whole fleet read:
//   - a wave still pending in D2 had not started while the fleet was read: each of its
//     nodes must still run the old version, must not even have received the target
//     version, and (grpcjs) its last call must have reached the old backend;
//   - a wave already completed in D1 (while the deployment is not rolling back) had
//     all its nodes' ACKs of the target: each of them must run the target version.
// It stops when the deployment reaches a final state (or on SIGTERM) and writes
// {samples, violations: [first 50], violation_count, target, final_state,
//  wave_states: [{at, states}] (each change)} to REPORT.
'use strict';
const fs = require('fs');

const {arg} = require('../../../lib/cli.js');
const API = arg('api');
const TOKEN = arg('token');
const FLEET = arg('fleet');
const ID = arg('deployment');
const OLD = String(arg('old-version'));
const OLD_BACKEND = arg('old-backend', '');
const OUT = arg('out');
const INTERVAL = Number(arg('interval-ms', '100'));
const FINAL = new Set(['completed', 'rolled_back', 'rollback_failed']);

const report = {samples: 0, violations: [], violation_count: 0, target: null, final_state: null, wave_states: [], errors: 0};
let stop = false;

function write() {
  fs.writeFileSync(OUT + '.tmp', JSON.stringify(report, null, 1));
  fs.renameSync(OUT + '.tmp', OUT);
}
function violation(v) {
  report.violation_count++;
  if (report.violations.length < 50) report.violations.push({at: Date.now(), ...v});
}
async function getJson(url, headers = {}) {
  const r = await fetch(url, {headers, signal: AbortSignal.timeout(5000)});
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
  return r.json();
}
const deployment = () => getJson(`${API}/api/v1/deployments/${ID}`, {Authorization: `Bearer ${TOKEN}`});
const fleet = () => getJson(`${FLEET}/state`);

async function sample() {
  const d1 = await deployment();
  const f = await fleet();
  const d2 = await deployment();
  report.samples++;
  const groups = Object.keys(d2.target_snapshots || {});
  const target = groups.length ? String(d2.target_snapshots[groups[0]]) : null;
  report.target = target;
  const byId = new Map(f.clients.map((c) => [c.node_id, c]));
  const states = (d2.waves || []).map((w) => w.state).join(',');
  const last = report.wave_states[report.wave_states.length - 1];
  if (!last || last.states !== states || last.state !== d2.state) report.wave_states.push({at: Date.now(), state: d2.state, states});

  for (const w of d2.waves || []) {
    if (w.state !== 'pending') continue;
    for (const id of w.node_ids) {
      const c = byId.get(id);
      if (!c) {
        violation({wave: w.index, node: id, what: 'not in the fleet'});
        continue;
      }
      if (c.version !== OLD) violation({wave: w.index, node: id, what: `runs version ${c.version}, not ${OLD}, before its wave started`});
      if (target && c.versions[target] && c.versions[target].first_response_at)
        violation({wave: w.index, node: id, what: `received version ${target} before its wave started`});
      if (c.kind === 'grpcjs' && OLD_BACKEND && c.backend && c.backend !== OLD_BACKEND)
        violation({wave: w.index, node: id, what: `reached backend ${c.backend}, not ${OLD_BACKEND}, before its wave started`});
    }
  }
  if (target && (d2.state === 'in_progress' || d2.state === 'paused' || d2.state === 'completed')) {
    for (const w of d1.waves || []) {
      if (w.state !== 'completed') continue;
      for (const id of w.node_ids) {
        const c = byId.get(id);
        if (c && c.version !== target) violation({wave: w.index, node: id, what: `runs version ${c.version} although its wave completed (target ${target})`});
      }
    }
  }
  report.final_state = d2.state;
  return FINAL.has(d2.state);
}

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    stop = true;
    write();
    process.exit(0);
  });
}

(async () => {
  while (!stop) {
    let done = false;
    try {
      done = await sample();
    } catch (e) {
      report.errors++;
      report.last_error = String(e.message || e);
    }
    write();
    if (done) break;
    await new Promise((r) => setTimeout(r, INTERVAL));
  }
  write();
})();
