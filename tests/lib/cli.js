// cli.js — what the tests' node programs share for their command lines: option values
// and the port file a test waits for.
'use strict';
const fs = require('fs');

/** The value after --NAME on the command line, or dflt when the option is absent. */
function arg(name, dflt) {
  const i = process.argv.indexOf('--' + name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

/**
 * Writes port to file atomically (a temporary file renamed), so a test polling for the
 * file never reads it half written.
 */
function writePortFile(file, port) {
  fs.writeFileSync(file + '.tmp', String(port));
  fs.renameSync(file + '.tmp', file);
}

module.exports = {arg, writePortFile};
