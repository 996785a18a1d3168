#!/usr/bin/env node
// compress.mjs — writes a .gz twin next to every compressible file of the build
// (scripts, styles, HTML, SVG, JSON over 1 KB). Sextant sends the twin to clients that
// accept gzip (api/static.c), so the UI travels at a third of its size without the
// server compressing anything per request.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const dir = process.argv[2] || 'dist';
const COMPRESSIBLE = /\.(js|mjs|css|html|svg|json|map|txt)$/;
let files = 0;
let before = 0;
let after = 0;
function walk(d) {
  for (const e of fs.readdirSync(d, {withFileTypes: true})) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (COMPRESSIBLE.test(e.name)) {
      const raw = fs.readFileSync(p);
      if (raw.length < 1024) continue;
      const gz = zlib.gzipSync(raw, {level: 9});
      if (gz.length >= raw.length) continue;
      fs.writeFileSync(`${p}.gz`, gz);
      fs.utimesSync(`${p}.gz`, fs.statSync(p).atime, fs.statSync(p).mtime);
      files++;
      before += raw.length;
      after += gz.length;
    }
  }
}
walk(dir);
console.log(`compressed ${files} files: ${(before / 1024).toFixed(0)} KB -> ${(after / 1024).toFixed(0)} KB gzip`);
