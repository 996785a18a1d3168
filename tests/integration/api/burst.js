// burst.js — a burst of concurrent writes to the REST API that records every answer,
// for the crash-safety test (test_rest_crash.sh).
//
//   node burst.js --port P --token T --group G --workers N --ms DURATION --out LOG
//
// Each worker owns configs of its own (team/burst-W-K, distinct hosts and ports, so the
// validation pipeline never refuses them): it creates one, then updates it with new
// content again and again, and now and then creates another. Every answer is appended
// to LOG at once, one line each:
//   ok   create|update  STATUS  CONFIG_ID  VERSION  CHECKSUM
//   fail create|update  STATUS-or-error
// so that a daemon killed mid-burst leaves a record of exactly which writes it
// acknowledged. Runs until DURATION has passed, whatever happens to the daemon.
'use strict';

const fs = require('fs');
const http = require('http');

const {arg} = require('../../lib/cli.js');

const port = Number(arg('port'));
const token = arg('token');
const group = arg('group', 'burst');
const workers = Number(arg('workers', '4'));
const durationMs = Number(arg('ms', '3000'));
const out = arg('out');
const agent = new http.Agent({keepAlive: true, maxSockets: workers});

function spec(w, k, n) {
  const host = `w${w}-c${k}.burst.example`;
  const slug = `w${w}-c${k}`;
  // One port per (worker, config); the content changes through the route timeout.
  return {
    listeners: [{name: `l-${slug}`, address: '0.0.0.0', port: 20000 + w * 100 + k,
      protocol: 'LISTENER_PROTOCOL_HTTP', hostnames: [host], attached_routes: [`r-${slug}`]}],
    http_routes: [{name: `r-${slug}`, namespace: 'team', hostnames: [host],
      rules: [{name: 'all', matches: [{path: '/', path_type: 'PathPrefix'}],
        backend_refs: [{name: `b-${slug}`, namespace: 'team', port: 8080}],
        timeouts: {request: `${n + 1}s`}}]}],
    backends: [{name: `b-${slug}`, namespace: 'team', protocol: 'http', connect_timeout: '1s',
      endpoints: [{address: '10.0.0.1', port: 8080}]}],
  };
}

function call(method, path, body) {
  return new Promise((resolve) => {
    const data = JSON.stringify(body);
    const req = http.request({host: '127.0.0.1', port, method, path, agent,
      headers: {'Authorization': `Bearer ${token}`, 'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(data)}}, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
        resolve({status: res.statusCode, json});
      });
      res.on('error', (e) => resolve({status: 0, error: e.code || e.message}));
    });
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({status: 0, error: e.code || e.message}));
    req.end(data);
  });
}

function record(op, r) {
  const line = r.status >= 200 && r.status < 300 && r.json
    ? `ok ${op} ${r.status} ${r.json.id} ${r.json.version} ${r.json.checksum}\n`
    : `fail ${op} ${r.status || r.error}\n`;
  fs.appendFileSync(out, line);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function worker(w, deadline) {
  let k = 0;
  let id = null;
  let n = 0;
  while (Date.now() < deadline) {
    if (id === null || n % 8 === 7) {
      const r = await call('POST', '/api/v1/configs', {namespace: 'team', name: `burst-${w}-${k}`,
        groups: [group], spec: spec(w, k, 0)});
      record('create', r);
      if (r.status === 201) {
        id = r.json.id;
        n = 0;
        k++;
      } else if (r.status === 409) {
        k++; // the create committed before an earlier answer was lost: use a new name
      } else {
        await sleep(50);
      }
      continue;
    }
    n++;
    const r = await call('PUT', `/api/v1/configs/${id}`, {spec: spec(w, k - 1, n)});
    record('update', r);
    if (r.status === 0)
      await sleep(50);
  }
}

async function main() {
  const deadline = Date.now() + durationMs;
  await Promise.all(Array.from({length: workers}, (_, w) => worker(w, deadline)));
  agent.destroy();
}

main();
