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
 * The options of a program that speaks xDS for one node: --server, --group, --node
 * (node when absent) and --timeout-ms (10000 when absent), as
 * {server, group, nodeId, timeoutMs}.
 */
function nodeArgs(node) {
  return {server: arg('server'), group: arg('group'), nodeId: arg('node', node), timeoutMs: Number(arg('timeout-ms', '10000'))};
}

/**
 * Writes port to file atomically (a temporary file renamed), so a test polling for the
 * file never reads it half written.
 */
function writePortFile(file, port) {
  fs.writeFileSync(file + '.tmp', String(port));
  fs.renameSync(file + '.tmp', file);
}

module.exports = {arg, nodeArgs, writePortFile};
