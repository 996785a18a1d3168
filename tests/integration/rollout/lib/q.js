#!/usr/bin/env node
// q.js — reads JSON files for the rollout tests' shell code.
//
//   node q.js [--test] EXPR FILE...
//
// The files are parsed as JSON and bound to j (the first), j2, j3, ... ("not-json"
// files are null). EXPR is a JavaScript expression over them and the helpers below.
// Without --test it prints the value (strings raw, others as JSON, "undefined" when
// absent); with --test it exits 0 when the value is truthy, 1 otherwise (also when it
// throws).
//
// Helpers:
//   ms(ts)          RFC 3339 (microseconds allowed) -> unix ms (NaN for null)
//   c(id, f = j)    the client of fleet state f with that node id
//   clients(f = j)  all clients of a fleet state
//   onv(id, v, f)   the client last ACKed version v (string or number)
//   sse(file)       the events of a text/event-stream capture: [{id, event, data}]
//   wave(d, k)      wave k of deployment d
//   waveOf(d, id)   index of the wave holding node id (-1 when none)
//   uniq(a)         a without repeats
'use strict';
const fs = require('fs');

const argv = process.argv.slice(2);
const test = argv[0] === '--test';
if (test) argv.shift();
const expr = argv.shift();
const docs = argv.map((f) => {
  try {
    return JSON.parse(fs.readFileSync(f, 'utf8'));
  } catch (e) {
    return null;
  }
});
/* eslint-disable no-unused-vars */
const [j, j2, j3, j4] = docs;

function ms(ts) {
  if (!ts) return NaN;
  if (typeof ts === 'number') return ts;
  // Date.parse takes at most milliseconds; cut finer fractions.
  return Date.parse(String(ts).replace(/(\.\d{3})\d+/, '$1').replace(' ', 'T'));
}
function clients(f = j) {
  return (f && f.clients) || [];
}
function c(id, f = j) {
  return clients(f).find((x) => x.node_id === id) || null;
}
function onv(id, v, f = j) {
  const x = c(id, f);
  return !!x && x.version === String(v);
}
function sse(file) {
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    return [];
  }
  const out = [];
  for (const block of text.replace(/\r/g, '').split('\n\n')) {
    const ev = {id: null, event: 'message', data: ''};
    let any = false;
    const data = [];
    for (const line of block.split('\n')) {
      if (!line || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const k = i < 0 ? line : line.slice(0, i);
      const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (k === 'id') ev.id = v;
      else if (k === 'event') ev.event = v;
      else if (k === 'data') data.push(v);
      else continue;
      any = true;
    }
    if (!any) continue;
    try {
      ev.data = data.length ? JSON.parse(data.join('\n')) : null;
    } catch (e) {
      ev.data = data.join('\n');
    }
    out.push(ev);
  }
  // A block still being written (no blank line after it yet) is left out.
  if (!text.endsWith('\n\n') && out.length && text.trim()) out.pop();
  return out;
}
function wave(d, k) {
  return ((d && d.waves) || []).find((w) => w.index === k) || null;
}
function waveOf(d, id) {
  const w = ((d && d.waves) || []).find((x) => (x.node_ids || []).includes(id));
  return w ? w.index : -1;
}
function uniq(a) {
  return [...new Set(a)];
}
/* eslint-enable no-unused-vars */

let v;
try {
  v = eval(expr); // eslint-disable-line no-eval
} catch (e) {
  if (test) process.exit(1);
  console.log('undefined');
  process.exit(0);
}
if (test) process.exit(v ? 0 : 1);
console.log(typeof v === 'string' ? v : v === undefined ? 'undefined' : JSON.stringify(v));
