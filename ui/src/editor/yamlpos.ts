// yamlpos.ts — the spec as YAML: parsing a YAML text into the spec's value and into the
// same tree of positioned nodes as jsonpos.ts builds for JSON (so the validation
// pipeline's paths land on the right characters of a YAML text too), and writing a
// value as YAML. The server stores JSON; a YAML text is converted on the way in and
// out, so its comments, anchors and styles are not kept.
import {isAlias, isMap, isScalar, isSeq, parseDocument, stringify, type Node} from 'yaml';
import type {JNode} from './jsonpos';

export class YamlSyntaxError extends Error {
  constructor(
    message: string,
    readonly pos: number,
  ) {
    super(message);
  }
}

function kindOf(v: unknown): JNode['kind'] {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'boolean';
  return Array.isArray(v) ? 'array' : 'object';
}

function toNode(n: Node | null | undefined, at: number): JNode {
  if (!n) return {kind: 'null', from: at, to: at, value: null};
  const [from, to] = n.range ?? [at, at];
  if (isMap(n)) {
    const props = new Map<string, JNode>();
    for (const p of n.items) {
      const key = isScalar(p.key) ? String(p.key.value) : String(p.key);
      const keyRange = isScalar(p.key) ? p.key.range : undefined;
      const child = toNode(p.value as Node | null, keyRange ? keyRange[1] : from);
      if (keyRange) {
        child.keyFrom = keyRange[0];
        child.keyTo = keyRange[1];
      }
      props.set(key, child);
    }
    return {kind: 'object', from, to, props};
  }
  if (isSeq(n)) return {kind: 'array', from, to, items: n.items.map((it) => toNode(it as Node, from))};
  if (isScalar(n)) return {kind: kindOf(n.value), from, to: n.range ? n.range[1] : to, value: n.value};
  if (isAlias(n)) return {kind: 'null', from, to, value: null};
  return {kind: 'null', from, to, value: null};
}

/** Parses a YAML text: its value (plain JSON data) and positioned tree; throws
 * YamlSyntaxError with the offset of the first error. */
export function parseYaml(text: string): {value: unknown; tree: JNode} {
  const doc = parseDocument(text, {prettyErrors: false, uniqueKeys: true});
  if (doc.errors.length) {
    const e = doc.errors[0];
    throw new YamlSyntaxError(e.message.split('\n')[0], e.pos[0]);
  }
  const value = doc.toJS({maxAliasCount: 100}) as unknown;
  return {value: value === undefined ? null : value, tree: toNode(doc.contents as Node | null, 0)};
}

/** A value as YAML text (block style, two-space indents). */
export function toYaml(value: unknown): string {
  return stringify(value, {indent: 2, lineWidth: 0, aliasDuplicateObjects: false});
}
