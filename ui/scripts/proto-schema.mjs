#!/usr/bin/env node
// proto-schema.mjs — derives the JSON Schema of a config's spec from control.proto.
//
//   node scripts/proto-schema.mjs ../proto/gateway/control/v1/control.proto src/gen/spec-schema.json
//
// A config's spec is a gateway.control.v1.ConfigSnapshot in the proto3 JSON mapping
// (server/ir/pbjson.h): field names as in the .proto, enums as value names, 64-bit
// integers as strings (numbers accepted), bytes as base64, maps as objects, Duration as
// "1.5s", Timestamp as RFC 3339, wrappers as their bare value, Struct as any object. The
// composer sets the snapshot's id and generated_at, so the spec's root leaves them out.
// Every message becomes a $defs entry with additionalProperties false (the server
// refuses unknown fields) and each field's leading comment as its description, which
// the editor shows next to its completions. The .proto stays the single source of
// truth: this file is generated at build time and not committed.
//
// The parser knows the subset of proto3 that control.proto uses: top-level messages
// and enums, scalar, message, enum, repeated and map fields, oneof blocks, comments.
import fs from 'node:fs';
import path from 'node:path';

const [, , input, output] = process.argv;
if (!input || !output) {
  console.error('usage: proto-schema.mjs CONTROL_PROTO OUT_JSON');
  process.exit(2);
}
const text = fs.readFileSync(input, 'utf8');

// ------------------------------------------------------------------ tokens
// Comments are kept as tokens so that a declaration can take the comment lines just
// above it as its description.
function tokenize(src) {
  const out = [];
  let i = 0;
  let line = 1;
  while (i < src.length) {
    const c = src[i];
    if (c === '\n') {
      line++;
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (src.startsWith('//', i)) {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      out.push({t: 'comment', v: src.slice(i + 2, stop).trim(), line});
      i = stop;
    } else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      if (end < 0) throw new Error(`${input}:${line}: unterminated comment`);
      line += (src.slice(i, end).match(/\n/g) || []).length;
      i = end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out.push({t: 'str', v: src.slice(i + 1, j), line});
      i = j + 1;
    } else if (/[A-Za-z0-9_.]/.test(c)) {
      let j = i;
      while (j < src.length && /[A-Za-z0-9_.]/.test(src[j])) j++;
      out.push({t: 'word', v: src.slice(i, j), line});
      i = j;
    } else {
      out.push({t: 'sym', v: c, line});
      i++;
    }
  }
  return out;
}

// ------------------------------------------------------------------ declarations
const toks = tokenize(text);
let p = 0;
let pending = []; // comment lines waiting for the declaration they describe
let pendingLine = -1;

function next() {
  for (;;) {
    const tok = toks[p++];
    if (!tok) return null;
    if (tok.t !== 'comment') return tok;
    // A blank line between comment and declaration detaches the comment.
    if (pending.length && tok.line !== pendingLine + 1) pending = [];
    pending.push(tok.v);
    pendingLine = tok.line;
  }
}
function peek() {
  const save = p;
  const savePending = pending.slice();
  const saveLine = pendingLine;
  const tok = next();
  p = save;
  pending = savePending;
  pendingLine = saveLine;
  return tok;
}
function takeComment(tok) {
  const doc = tok && pendingLine === tok.line - 1 ? pending.join(' ') : '';
  pending = [];
  return doc;
}
function expect(v) {
  const tok = next();
  if (!tok || tok.v !== v) throw new Error(`${input}:${tok ? tok.line : 'EOF'}: expected "${v}", got "${tok ? tok.v : 'EOF'}"`);
  return tok;
}
function skipStatement() {
  for (let tok = next(); tok && tok.v !== ';'; tok = next());
}

const messages = new Map(); // name -> {doc, fields: [{name, type, repeated, map, doc, oneof}]}
const enums = new Map(); // name -> {doc, values: [{name, doc}]}

// Reads "NAME {" and the statements of the block up to its "}", handing the first token
// of each to statement (with NAME); returns NAME.
function parseBlock(statement) {
  const name = next().v;
  expect('{');
  for (let tok = next(); tok.v !== '}'; tok = next()) statement(tok, name);
  return name;
}

function parseEnum(doc) {
  const values = [];
  const name = parseBlock((tok) => {
    if (tok.v === 'option' || tok.v === 'reserved') {
      skipStatement();
      return;
    }
    const vdoc = takeComment(tok);
    expect('=');
    next();
    skipStatement();
    values.push({name: tok.v, doc: vdoc});
  });
  enums.set(name, {doc, values});
}

function parseField(first, fields, oneof) {
  const doc = takeComment(first);
  let repeated = false;
  let type = first.v;
  let map = null;
  if (type === 'repeated' || type === 'optional') {
    repeated = type === 'repeated';
    type = next().v;
  }
  if (type === 'map') {
    expect('<');
    const key = next().v;
    expect(',');
    const value = next().v;
    expect('>');
    map = {key, value};
  }
  const name = next().v;
  expect('=');
  next();
  skipStatement();
  fields.push({name, type: map ? map.value : type, repeated, map, doc, oneof});
}

function parseMessage(doc) {
  const fields = [];
  const name = parseBlock((tok) => {
    if (tok.v === 'option' || tok.v === 'reserved' || tok.v === 'extensions') {
      takeComment(tok);
      skipStatement();
    } else if (tok.v === 'oneof') {
      const odoc = takeComment(tok);
      parseBlock((f, oname) => parseField(f, fields, {name: oname, doc: odoc}));
    } else if (tok.v === 'message' || tok.v === 'enum') {
      throw new Error(`${input}:${tok.line}: nested ${tok.v} declarations are not supported`);
    } else {
      parseField(tok, fields, null);
    }
  });
  messages.set(name, {doc, fields});
}

for (let tok = next(); tok; tok = next()) {
  if (tok.v === 'message') parseMessage(takeComment(tok));
  else if (tok.v === 'enum') parseEnum(takeComment(tok));
  else if (tok.v === 'service') {
    takeComment(tok);
    // Skip the service block, braces balanced.
    let depth = 0;
    for (let t = next(); t; t = next()) {
      if (t.v === '{') depth++;
      else if (t.v === '}' && --depth === 0) break;
    }
  } else {
    takeComment(tok);
    if (peek() && tok.v !== ';') skipStatement();
  }
}

// ------------------------------------------------------------------ schema
const UINT32_MAX = 4294967295;
const INT32 = {type: 'integer', minimum: -2147483648, maximum: 2147483647};
const UINT32 = {type: 'integer', minimum: 0, maximum: UINT32_MAX};
const INT64 = {type: ['integer', 'string'], pattern: '^-?[0-9]+$', description: '64-bit integer (a number or its decimal string)'};
const UINT64 = {type: ['integer', 'string'], minimum: 0, pattern: '^[0-9]+$', description: '64-bit unsigned integer (a number or its decimal string)'};
const WELL_KNOWN = {
  'google.protobuf.Duration': {
    type: 'string',
    pattern: '^-?[0-9]+(\\.[0-9]{1,9})?s$',
    examples: ['1s', '0.25s', '30s'],
    format: 'duration (seconds with an "s": "1.5s")',
  },
  'google.protobuf.Timestamp': {type: 'string', format: 'date-time'},
  'google.protobuf.Struct': {type: 'object'},
  'google.protobuf.Value': {},
  'google.protobuf.ListValue': {type: 'array'},
  'google.protobuf.Empty': {type: 'object', additionalProperties: false},
  'google.protobuf.UInt32Value': UINT32,
  'google.protobuf.Int32Value': INT32,
  'google.protobuf.UInt64Value': UINT64,
  'google.protobuf.Int64Value': INT64,
  'google.protobuf.BoolValue': {type: 'boolean'},
  'google.protobuf.StringValue': {type: 'string'},
  'google.protobuf.DoubleValue': {type: 'number'},
  'google.protobuf.FloatValue': {type: 'number'},
  'google.protobuf.BytesValue': {type: 'string', contentEncoding: 'base64'},
};
const SCALARS = {
  string: {type: 'string'},
  bool: {type: 'boolean'},
  int32: INT32,
  sint32: INT32,
  sfixed32: INT32,
  uint32: UINT32,
  fixed32: UINT32,
  int64: INT64,
  sint64: INT64,
  sfixed64: INT64,
  uint64: UINT64,
  fixed64: UINT64,
  double: {type: 'number'},
  float: {type: 'number'},
  bytes: {type: 'string', contentEncoding: 'base64'},
};

function typeSchema(type) {
  if (SCALARS[type]) return {...SCALARS[type]};
  if (WELL_KNOWN[type]) return {...WELL_KNOWN[type]};
  const local = type.replace(/^gateway\.control\.v1\./, '');
  if (messages.has(local) || enums.has(local)) return {$ref: `#/$defs/${local}`};
  throw new Error(`${input}: unknown type ${type}`);
}

function fieldSchema(f) {
  let s = typeSchema(f.type);
  if (f.map) s = {type: 'object', propertyNames: {type: 'string'}, additionalProperties: s};
  else if (f.repeated) s = {type: 'array', items: s};
  const doc = [f.doc, f.oneof ? `One of "${f.oneof.name}": set at most one of its fields.` : ''].filter(Boolean).join(' ');
  if (doc) s.description = doc;
  return s;
}

const defs = {};
for (const [name, e] of enums) {
  defs[name] = {
    type: 'string',
    enum: e.values.map((v) => v.name),
    description: e.doc,
    'x-enum-descriptions': e.values.map((v) => v.doc),
  };
}
for (const [name, m] of messages) {
  const properties = {};
  for (const f of m.fields) properties[f.name] = fieldSchema(f);
  defs[name] = {type: 'object', description: m.doc, properties, additionalProperties: false};
}

const root = defs.ConfigSnapshot;
if (!root) throw new Error(`${input}: no ConfigSnapshot message`);
const specProps = {...root.properties};
delete specProps.id;
delete specProps.generated_at;
const schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sextant.invalid/schemas/config-spec.json',
  title: 'Sextant config spec',
  description:
    'The spec of a config: a gateway.control.v1.ConfigSnapshot in the proto3 JSON mapping, without the id and generated_at the composer sets. Generated from ' +
    path.basename(input) +
    '.',
  type: 'object',
  properties: specProps,
  additionalProperties: false,
  $defs: defs,
};

fs.mkdirSync(path.dirname(output), {recursive: true});
const body = JSON.stringify(schema, null, 1) + '\n';
if (!fs.existsSync(output) || fs.readFileSync(output, 'utf8') !== body) fs.writeFileSync(output, body);
console.log(`${output}: ${messages.size} messages, ${enums.size} enums`);
