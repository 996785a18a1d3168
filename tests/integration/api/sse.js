#!/usr/bin/env node
// sse.js — reads a server-sent events stream saved by `curl -N` (headers excluded) and
// evaluates a JavaScript expression over it, for tests/integration/api/test_events.sh.
//
//   node sse.js FILE EXPR     exits 0 when EXPR is true, 1 otherwise
//   node sse.js FILE -p EXPR  prints EXPR's value (strings raw, others as JSON)
//
// In EXPR, `e` is the array of events in stream order, each {id, event, data} with data
// parsed as JSON, and `comments` the comment lines (": keep-alive") in order. Only
// complete events (ended by a blank line) count: the stream may still be written to.
'use strict';

const fs = require('fs');

const file = process.argv[2];
const print = process.argv[3] === '-p';
const expr = process.argv[print ? 4 : 3];

let text = '';
try {
  text = fs.readFileSync(file, 'utf8');
} catch (err) {
  text = '';
}
const blocks = text.split('\n\n');
blocks.pop(); // the part after the last blank line is not complete yet
const e = [];
const comments = [];
for (const block of blocks) {
  const ev = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      comments.push(line);
      continue;
    }
    const i = line.indexOf(':');
    if (i < 0) continue;
    const field = line.slice(0, i);
    const value = line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') ev.id = Number(value);
    else if (field === 'event') ev.event = value;
    else if (field === 'data') ev.data = JSON.parse(value);
  }
  if (ev.event !== undefined) e.push(ev);
}

let v;
try {
  v = eval(expr); // eslint-disable-line no-eval
} catch (err) {
  v = undefined;
}
if (print) {
  console.log(typeof v === 'string' ? v : v === undefined ? 'undefined' : JSON.stringify(v));
  process.exit(0);
}
process.exit(v ? 0 : 1);
