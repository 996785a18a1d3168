// schema.ts — completion of a config's spec from its JSON Schema (generated at build
// time from proto/gateway/control/v1/control.proto by scripts/proto-schema.mjs).
//
// At a property name the editor offers the fields of the message the cursor is in
// (those not there yet), each with its type and the .proto comment; at a value it
// offers the enum names, true/false, or an empty object, array or string of the right
// shape. The cursor's context comes from jsonpos.cursorContext, which works on the
// half-typed text the parser would reject.
import {snippetCompletion, type Completion, type CompletionContext, type CompletionResult} from '@codemirror/autocomplete';
import specSchema from '../gen/spec-schema.json';
import {cursorContext} from './jsonpos';

export interface SchemaNode {
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  enum?: string[];
  'x-enum-descriptions'?: string[];
  examples?: string[];
  format?: string;
}

const root = specSchema as unknown as SchemaNode & {$defs: Record<string, SchemaNode>};

/** Follows $ref, keeping the referring node's description when it has one. */
export function deref(s: SchemaNode | undefined): SchemaNode | undefined {
  let n = s;
  let description = s?.description;
  for (let i = 0; n?.$ref && i < 16; i++) {
    const name = n.$ref.replace('#/$defs/', '');
    n = root.$defs[name];
    description = description ?? n?.description;
  }
  return n ? {...n, description} : n;
}

/** The schema of the value at path (keys, "[]" for array items) below the spec. */
export function schemaAt(path: string[]): SchemaNode | undefined {
  let s: SchemaNode | undefined = root;
  for (const k of path) {
    s = deref(s);
    if (!s) return undefined;
    if (k === '[]') s = s.items;
    else if (s.properties && k in s.properties) s = s.properties[k];
    else if (s.additionalProperties && typeof s.additionalProperties === 'object') s = s.additionalProperties;
    else return undefined;
  }
  return deref(s);
}

function typeLabel(s: SchemaNode | undefined): string {
  if (!s) return '';
  if (s.$ref) return s.$ref.replace('#/$defs/', '');
  if (s.type === 'array') {
    const it = s.items?.$ref ? s.items.$ref.replace('#/$defs/', '') : typeLabel(s.items);
    return `${it}[]`;
  }
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object')
    return `map<string, ${typeLabel(s.additionalProperties)}>`;
  if (s.format?.startsWith('duration')) return 'duration';
  return Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? '');
}

/** The text a property gets when chosen: "name": then a value template. */
function propertySnippet(name: string, s: SchemaNode | undefined): string {
  const d = deref(s);
  const key = `"${name}": `;
  if (!d) return `${key}\${}`;
  if (d.type === 'array') return `${key}[\${}]`;
  if (d.type === 'object') return `${key}{\${}}`;
  if (d.enum) return `${key}"\${}"`;
  if (d.type === 'string') return `${key}"\${}"`;
  if (d.type === 'boolean') return `${key}\${true}`;
  return `${key}\${}`;
}

function valueOptions(s: SchemaNode | undefined, quoted: boolean): Completion[] {
  const d = deref(s);
  if (!d) return [];
  if (d.enum)
    return d.enum.map((v, i) => ({
      label: quoted ? `"${v}"` : `"${v}"`,
      displayLabel: v,
      type: 'enum',
      info: d['x-enum-descriptions']?.[i] || undefined,
    }));
  if (d.type === 'boolean') return ['true', 'false'].map((v) => ({label: v, type: 'keyword'}));
  if (d.type === 'object') return [snippetCompletion('{${}}', {label: '{}', detail: typeLabel(s), type: 'type'})];
  if (d.type === 'array') return [snippetCompletion('[${}]', {label: '[]', detail: typeLabel(s), type: 'type'})];
  if (d.examples) return d.examples.map((v) => ({label: `"${v}"`, type: 'text', detail: d.format}));
  return [];
}

/** The CodeMirror completion source for a spec editor. */
export function specCompletion(ctx: CompletionContext): CompletionResult | null {
  const text = ctx.state.doc.sliceString(0, ctx.pos);
  const cc = cursorContext(text, ctx.pos);
  const typed = text.slice(cc.from);
  // closeBrackets put a quote after the cursor when the opening one was typed: replace it too.
  const after = ctx.state.doc.sliceString(ctx.pos, ctx.pos + 1);
  const to = typed.startsWith('"') && after === '"' ? ctx.pos + 1 : ctx.pos;
  // Only complete while typing a word or a quote, or when asked (Ctrl-Space).
  if (!ctx.explicit && !/^"?[\w-]*$/.test(typed)) return null;
  if (!ctx.explicit && typed === '') return null;
  if (cc.position === 'key') {
    const s = schemaAt(cc.path);
    if (!s?.properties) return null;
    const taken = new Set(cc.siblings);
    // Another member follows: the inserted one needs its comma.
    const rest = ctx.state.doc.sliceString(to, to + 200).trimStart();
    const comma = rest.startsWith('"') ? ',' : '';
    const options: Completion[] = Object.entries(s.properties)
      .filter(([k]) => !taken.has(k))
      .map(([k, v]) =>
        snippetCompletion(propertySnippet(k, v) + comma, {
          label: `"${k}"`,
          displayLabel: k,
          detail: typeLabel(v),
          info: v.description || deref(v)?.description || undefined,
          type: 'property',
        }),
      );
    return {from: cc.from, to, options, validFor: /^"?[\w-]*$/};
  }
  if (cc.position === 'value' || cc.position === 'item') {
    const options = valueOptions(schemaAt(cc.path), typed.startsWith('"'));
    if (!options.length) return null;
    return {from: cc.from, to, options, validFor: /^"?[\w-]*"?$/};
  }
  return null;
}

/** The description of the field at path, for hover help and the problems list. */
export function describeField(path: string[]): string | undefined {
  return schemaAt(path)?.description;
}
