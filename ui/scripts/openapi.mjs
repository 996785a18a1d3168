#!/usr/bin/env node
// openapi.mjs — generates the UI's API types and path table from the OpenAPI document.
//
//   node scripts/openapi.mjs ../api/openapi.json src/gen/openapi.ts
//
// api/openapi.json is the one description of the REST API: the server compiles it in
// and serves it at /api/v1/openapi.json, and this script turns it into TypeScript at
// build time (not committed): the `paths`, `operations` and `components` interfaces of
// openapi-typescript, plus `routes`, the method and path template of every operationId.
// src/lib/api.ts calls the API through them, so a field renamed in the document fails
// `tsc` wherever the UI still uses the old name.
import fs from 'node:fs';
import path from 'node:path';
import openapiTS from 'openapi-typescript';

const [, , input, output] = process.argv;
if (!input || !output) {
  console.error('usage: openapi.mjs OPENAPI_JSON OUT_TS');
  process.exit(2);
}
const doc = JSON.parse(fs.readFileSync(input, 'utf8'));
const types = await openapiTS(doc, {emptyObjectsUnknown: true});

const routes = [];
for (const [p, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (!op.operationId) throw new Error(`${method.toUpperCase()} ${p} has no operationId`);
    routes.push(`  ${op.operationId}: {method: '${method.toUpperCase()}', path: '${p}'},`);
  }
}
const table = `
/** Every operation of the document: its method and path template ({name} = a path parameter). */
export const routes = {
${routes.join('\n')}
} as const satisfies Record<keyof operations, {method: string; path: string}>;
`;
fs.mkdirSync(path.dirname(output), {recursive: true});
const text = `// Generated from ${path.basename(input)} by scripts/openapi.mjs: do not edit.\n${types}${table}`;
if (!fs.existsSync(output) || fs.readFileSync(output, 'utf8') !== text) fs.writeFileSync(output, text);
