// jsonpos.ts — where things are in a JSON text: a parser that keeps every value's
// offsets (to put the server's validation errors, which name paths such as
// spec.listeners[0].port or spec.backends["echo"].endpoints[1], on the right
// characters), and a tolerant scanner that says what the cursor is in while the text is
// being typed and is not valid JSON yet (for completion).

export type JKind = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null';

export interface JNode {
  kind: JKind;
  from: number;
  to: number;
  /** The property name's range when the node is an object member's value. */
  keyFrom?: number;
  keyTo?: number;
  props?: Map<string, JNode>;
  items?: JNode[];
  value?: unknown;
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly pos: number,
  ) {
    super(message);
  }
}

/** Parses text (strict JSON) into a tree of positioned nodes; throws JsonSyntaxError. */
export function parseWithPositions(text: string): JNode {
  let i = 0;
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const fail = (msg: string): never => {
    throw new JsonSyntaxError(msg, i);
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    let out = '';
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\\') {
        i++;
        const c = text[i];
        if (c === 'u') {
          out += String.fromCharCode(parseInt(text.slice(i + 1, i + 5), 16));
          i += 5;
          continue;
        }
        out += ({b: '\b', f: '\f', n: '\n', r: '\r', t: '\t'} as Record<string, string>)[c] ?? c;
        i++;
      } else out += text[i++];
    }
    if (text[i] !== '"') {
      i = start;
      fail('unterminated string');
    }
    i++;
    return out;
  };
  // The closing bracket of an object or array next (consumed)?
  const closes = (close: string): boolean => {
    ws();
    if (text[i] !== close) return false;
    i++;
    return true;
  };
  // After a member: true when "," says another follows, false at the closing bracket.
  const more = (close: string): boolean => {
    ws();
    if (text[i] === ',') {
      i++;
      return true;
    }
    if (closes(close)) return false;
    return fail(`expected "," or "${close}"`);
  };
  const value = (): JNode => {
    ws();
    const from = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const props = new Map<string, JNode>();
      if (!closes('}')) {
        do {
          ws();
          if (text[i] !== '"') fail('expected a property name');
          const keyFrom = i;
          const key = str();
          const keyTo = i;
          ws();
          if (text[i] !== ':') fail('expected ":"');
          i++;
          const v = value();
          v.keyFrom = keyFrom;
          v.keyTo = keyTo;
          props.set(key, v);
        } while (more('}'));
      }
      return {kind: 'object', from, to: i, props};
    }
    if (c === '[') {
      i++;
      const items: JNode[] = [];
      if (!closes(']')) {
        do {
          items.push(value());
        } while (more(']'));
      }
      return {kind: 'array', from, to: i, items};
    }
    if (c === '"') {
      const v = str();
      return {kind: 'string', from, to: i, value: v};
    }
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!m) return fail('expected a value');
    i += m[0].length;
    const t = m[0];
    if (t === 'true' || t === 'false') return {kind: 'boolean', from, to: i, value: t === 'true'};
    if (t === 'null') return {kind: 'null', from, to: i, value: null};
    return {kind: 'number', from, to: i, value: Number(t)};
  };
  const root = value();
  ws();
  if (i < text.length) fail('unexpected text after the value');
  return root;
}

/** One step of a path: .key, [index], or ["name"] (a map key, or the element of an
 * array of named objects whose "name" is that). */
export type Seg = {key: string} | {index: number} | {name: string};

/** Splits "spec.listeners[0].port" or 'spec.backends["echo"].endpoints[1]' into steps. */
export function parsePath(path: string): Seg[] {
  const out: Seg[] = [];
  let i = 0;
  while (i < path.length) {
    if (path[i] === '.') {
      i++;
      continue;
    }
    if (path[i] === '[') {
      if (path[i + 1] === '"') {
        let j = i + 2;
        let s = '';
        while (j < path.length && path[j] !== '"') {
          if (path[j] === '\\') j++;
          s += path[j++];
        }
        out.push({name: s});
        i = path.indexOf(']', j) + 1 || path.length;
      } else {
        const j = path.indexOf(']', i);
        const n = Number(path.slice(i + 1, j < 0 ? undefined : j));
        out.push(Number.isInteger(n) ? {index: n} : {key: path.slice(i + 1, j)});
        i = j < 0 ? path.length : j + 1;
      }
      continue;
    }
    let j = i;
    while (j < path.length && path[j] !== '.' && path[j] !== '[') j++;
    out.push({key: path.slice(i, j)});
    i = j;
  }
  return out;
}

/**
 * The node a path names, walking root; when a step cannot be followed (a missing
 * field), the deepest node reached, with exact false. A leading "spec" step is skipped
 * when root has no "spec" member (the editor holds the spec itself).
 */
export function locate(root: JNode, path: string): {node: JNode; exact: boolean; missing?: string} {
  let segs = parsePath(path);
  if (segs.length && 'key' in segs[0] && segs[0].key === 'spec' && !root.props?.has('spec')) segs = segs.slice(1);
  let node = root;
  for (const s of segs) {
    let next: JNode | undefined;
    if ('key' in s) next = node.props?.get(s.key);
    else if ('index' in s) next = node.items?.[s.index];
    else if (node.kind === 'object') next = node.props?.get(s.name);
    else next = node.items?.find((it) => it.props?.get('name')?.value === s.name);
    if (!next) return {node, exact: false, missing: 'key' in s ? s.key : 'index' in s ? `[${s.index}]` : s.name};
    node = next;
  }
  return {node, exact: true};
}

/** The characters to underline for a problem at node: a scalar value, or the property
 * name of an object or array (not its whole body), or the opening bracket. */
export function markRange(node: JNode): {from: number; to: number} {
  if (node.kind === 'object' || node.kind === 'array') {
    if (node.keyFrom !== undefined && node.keyTo !== undefined) return {from: node.keyFrom, to: node.keyTo};
    return {from: node.from, to: node.from + 1};
  }
  return {from: node.from, to: node.to};
}

// ------------------------------------------------------------------ completion context

/** What the cursor is in, from a scan of the text before it (which may be invalid). */
export interface CursorContext {
  /** Keys from the root to the container; arrays appear as "[]". */
  path: string[];
  /** "key": a property name belongs here; "value": a value of path's last key;
   * "item": an array element; "none": inside something else (a number, after a value). */
  position: 'key' | 'value' | 'item' | 'none';
  /** Start of the token being typed (an opening quote included), for replacement. */
  from: number;
  /** Keys already in the object the cursor is in (before the cursor). */
  siblings: string[];
}

type Frame = {kind: 'object'; key: string | null; keys: string[]; expect: 'key' | 'colon' | 'value' | 'comma'} | {kind: 'array'; expect: 'value' | 'comma'};

export function cursorContext(text: string, pos: number): CursorContext {
  const stack: Frame[] = [];
  let i = 0;
  let lastString = '';
  let tokenStart = pos;
  let inString = false;
  let stringStart = 0;
  const top = () => stack[stack.length - 1];
  const afterValue = () => {
    const t = top();
    if (!t) return;
    t.expect = 'comma';
  };
  while (i < pos) {
    const c = text[i];
    if (inString) {
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '"') {
        inString = false;
        const t = top();
        if (t && t.kind === 'object' && t.expect === 'key') {
          t.key = lastString;
          t.keys.push(lastString);
          t.expect = 'colon';
        } else afterValue();
      } else lastString += c;
      i++;
      continue;
    }
    if (c === '"') {
      inString = true;
      stringStart = i;
      lastString = '';
    } else if (c === '{') {
      stack.push({kind: 'object', key: null, keys: [], expect: 'key'});
    } else if (c === '[') {
      stack.push({kind: 'array', expect: 'value'});
    } else if (c === '}' || c === ']') {
      stack.pop();
      afterValue();
    } else if (c === ':') {
      const t = top();
      if (t && t.kind === 'object') t.expect = 'value';
    } else if (c === ',') {
      const t = top();
      if (t && t.kind === 'object') {
        t.expect = 'key';
        t.key = null;
      } else if (t) t.expect = 'value';
    } else if (/[-0-9a-z]/.test(c)) {
      // a bare token (number, true, false, null): consumed to its end
      let j = i;
      while (j < pos && /[-+.0-9a-zA-Z]/.test(text[j])) j++;
      if (j >= pos) {
        tokenStart = i;
        i = pos;
        break;
      }
      i = j;
      afterValue();
      continue;
    }
    i++;
  }
  if (inString) tokenStart = stringStart;
  const path: string[] = [];
  for (let k = 1; k < stack.length; k++) {
    const parent = stack[k - 1];
    path.push(parent.kind === 'object' ? (parent.key ?? '') : '[]');
  }
  const t = top();
  if (!t) return {path, position: 'none', from: tokenStart, siblings: []};
  if (t.kind === 'object') {
    if (t.expect === 'key') return {path, position: 'key', from: tokenStart, siblings: t.keys};
    if (t.expect === 'value')
      return {path: [...path, t.key ?? ''], position: 'value', from: tokenStart, siblings: t.keys.filter((k) => k !== t.key)};
    return {path, position: 'none', from: tokenStart, siblings: t.keys};
  }
  if (t.expect === 'value' || inString) return {path: [...path, '[]'], position: 'item', from: tokenStart, siblings: []};
  return {path, position: 'none', from: tokenStart, siblings: []};
}
