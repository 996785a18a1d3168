#!/usr/bin/env node
// fleet_spec.js — writes the spec of a fleet (fleet.js --spec) to stdout.
//
//   node fleet_spec.js --servers 127.0.0.1:P1[,127.0.0.1:P2] --group G \
//       --kinds grpcjs:6,ads:10,envoy:4 [--prefix G-] [--target echo.test] [--spread] \
//       [--labels k=v,k2=v2] [--set ID.key=value ...] [--start N]
//
// Node ids are PREFIX01, PREFIX02, ... (two digits at least, so they sort as numbered);
// the kinds are interleaved evenly over the ids (20 clients with grpcjs:6 get a grpcjs
// client about every third id). "envoy" is an ads client with mode "envoy" (wildcard
// LDS and CDS). --spread rotates each client's server list by its position, so the
// clients spread over the replicas and fail over to the others. --set sets one field of
// one client (value parsed as JSON when it parses, else a string), e.g.
// --set G-03.nack_if=canary. --start N numbers from N (default 1).
'use strict';

function args() {
  const out = {set: []};
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const k = a[i].replace(/^--/, '');
    if (k === 'spread') out.spread = true;
    else if (k === 'set') out.set.push(a[++i]);
    else out[k] = a[++i];
  }
  return out;
}

const o = args();
if (!o.servers || !o.group || !o.kinds) {
  console.error('usage: fleet_spec.js --servers H:P[,H:P] --group G --kinds grpcjs:N,ads:N[,envoy:N] [options]');
  process.exit(2);
}
const servers = o.servers.split(',').filter(Boolean);
const prefix = o.prefix !== undefined ? o.prefix : `${o.group}-`;
const labels = {};
for (const kv of (o.labels || '').split(',').filter(Boolean)) {
  const i = kv.indexOf('=');
  labels[kv.slice(0, i)] = kv.slice(i + 1);
}
const kinds = o.kinds.split(',').map((s) => {
  const [kind, n] = s.split(':');
  return {kind, n: Number(n)};
});
const total = kinds.reduce((s, k) => s + k.n, 0);

// Interleave: each kind takes positions spread evenly over 0..total-1; the kind with
// fewest members places first so its members are spaced out best.
const slots = new Array(total).fill(null);
for (const k of [...kinds].sort((a, b) => a.n - b.n)) {
  for (let j = 0; j < k.n; j++) {
    let p = Math.floor(((j + 0.5) * total) / k.n);
    while (slots[p % total] !== null) p++;
    slots[p % total] = k.kind;
  }
}
const start = Number(o.start || 1);
const width = Math.max(2, String(start + total - 1).length);
const clients = slots.map((kind, i) => {
  const c = {
    id: `${prefix}${String(start + i).padStart(width, '0')}`,
    kind: kind === 'envoy' ? 'ads' : kind,
    group: o.group,
    labels: {...labels},
  };
  if (kind === 'envoy') c.mode = 'envoy';
  if (o.spread) c.servers = servers.map((_, j) => servers[(i + j) % servers.length]);
  return c;
});
for (const s of o.set) {
  const m = /^([^.]+)\.([^=]+)=(.*)$/.exec(s);
  if (!m) {
    console.error(`--set ${s}: want ID.key=value`);
    process.exit(2);
  }
  const c = clients.find((x) => x.id === m[1]);
  if (!c) {
    console.error(`--set ${s}: no client ${m[1]}`);
    process.exit(2);
  }
  let v = m[3];
  try {
    v = JSON.parse(v);
  } catch (e) {
    /* a plain string */
  }
  c[m[2]] = v;
}
process.stdout.write(JSON.stringify({servers, target: o.target || 'echo.test', clients}, null, 2) + '\n');
