// jsonEditor.ts — the CodeMirror 6 editor of a config's spec: JSON highlighting,
// completion from the spec's schema, and inline errors as you type.
//
// Errors come from one lint source that runs 400 ms after the last keystroke: a text
// that is not JSON gets its syntax error where the parser stopped, without asking the
// server; valid JSON goes to POST /api/v1/configs/validate (the whole pipeline, against
// the other configs of the groups, writing nothing) and every problem it reports is
// put on the characters its path names (spec.listeners[0].port), or on the closest
// thing that exists when the path names a missing field. CodeMirror drops an answer
// that arrives after the text changed again, so a slow server never paints stale
// errors. Read-only editors (viewers, old versions) only highlight.
//
// With format 'yaml' the same editor holds the spec as YAML (editor/yamlpos.ts): the
// syntax check is YAML's, problems land on the YAML text's characters, and there is no
// JSON highlighting or completion.
import {autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap} from '@codemirror/autocomplete';
import {defaultKeymap, history, historyKeymap, indentWithTab} from '@codemirror/commands';
import {json} from '@codemirror/lang-json';
import {bracketMatching, foldGutter, foldKeymap, indentOnInput, syntaxHighlighting, defaultHighlightStyle} from '@codemirror/language';
import {linter, lintGutter, lintKeymap, type Diagnostic} from '@codemirror/lint';
import {highlightSelectionMatches, searchKeymap} from '@codemirror/search';
import {EditorSelection, EditorState, type Extension} from '@codemirror/state';
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from '@codemirror/view';
import {locate, markRange, parseWithPositions, JsonSyntaxError} from './jsonpos';
import {specCompletion} from './schema';
import {parseYaml, YamlSyntaxError} from './yamlpos';

export type SpecFormat = 'json' | 'yaml';

/** One problem of a spec, as the validate endpoint reports it. */
export interface Problem {
  path: string;
  message: string;
  stage?: string;
  conflict_with?: string;
}

/** What validating a spec found: nothing, problems, or that it could not be asked. */
export type Validation = {ok: true} | {ok: false; problems: Problem[]; message: string} | {error: string};

export type EditorStatus =
  | {kind: 'idle'}
  | {kind: 'syntax'; message: string; line: number; col: number; format: SpecFormat}
  | {kind: 'validating'}
  | {kind: 'valid'}
  | {kind: 'invalid'; message: string; problems: (Problem & {line: number | null})[]}
  | {kind: 'unchecked'; message: string};

export interface JsonEditorOptions {
  doc: string;
  readOnly?: boolean;
  /** What the text is written in: JSON (the default) or YAML. */
  format?: SpecFormat;
  /** Accessible name of the editing area. */
  label: string;
  onChange?: (text: string) => void;
  /** Called with the parsed spec after each pause in typing; absent: syntax only. */
  validate?: (spec: Record<string, unknown>) => Promise<Validation>;
  onStatus?: (s: EditorStatus) => void;
}

export interface JsonEditor {
  view: EditorView;
  text(): string;
  setText(text: string): void;
  /** Selects what path names and scrolls to it. */
  reveal(path: string): void;
  destroy(): void;
}

const theme = EditorView.theme({
  '&': {fontSize: '13px', border: '1px solid var(--border)', borderRadius: '6px', background: 'var(--surface)'},
  '&.cm-focused': {outline: '2px solid var(--focus)', outlineOffset: '1px'},
  '.cm-scroller': {fontFamily: 'var(--mono)', lineHeight: '1.5'},
  '.cm-gutters': {background: 'var(--surface-2)', borderRight: '1px solid var(--border)', color: 'var(--muted)'},
  '.cm-tooltip-autocomplete ul li[aria-selected]': {background: 'var(--accent)', color: '#fff'},
  '.cm-completionInfo': {maxWidth: '360px', whiteSpace: 'normal'},
});

/** Where JSON.parse stopped, from its message, or the end of the text. */
function syntaxPosition(e: unknown, text: string): number {
  const m = /position (\d+)/.exec(String((e as Error)?.message ?? ''));
  if (m) return Math.min(Number(m[1]), text.length);
  try {
    parseWithPositions(text);
  } catch (x) {
    if (x instanceof JsonSyntaxError) return x.pos;
  }
  return text.length;
}

function cleanSyntaxMessage(e: unknown): string {
  return String((e as Error)?.message ?? e)
    .replace(/^JSON\.parse: /, '')
    .replace(/ in JSON at position \d+.*$/, '')
    .replace(/, "[^"]*" is not valid JSON$/, '');
}

/** A range at least a few characters wide, within the line and the node. */
function widen(state: EditorState, from: number, to: number, limit: number): {from: number; to: number} {
  if (to - from >= 2) return {from, to};
  const line = state.doc.lineAt(from);
  return {from, to: Math.max(to, Math.min(line.to, limit, from + 80))};
}

export function createJsonEditor(parent: HTMLElement, opts: JsonEditorOptions): JsonEditor {
  const status = (s: EditorStatus) => opts.onStatus?.(s);
  const yaml = opts.format === 'yaml';
  const treeOf = (text: string) => (yaml ? parseYaml(text).tree : parseWithPositions(text));

  const lintSource = async (view: EditorView): Promise<Diagnostic[]> => {
    const state = view.state;
    const text = state.doc.toString();
    let spec: unknown;
    if (yaml) {
      try {
        spec = parseYaml(text).value;
      } catch (e) {
        const pos = e instanceof YamlSyntaxError ? Math.min(e.pos, text.length) : 0;
        const line = state.doc.lineAt(pos);
        const message = (e as Error).message;
        status({kind: 'syntax', message, line: line.number, col: pos - line.from + 1, format: 'yaml'});
        const from = Math.max(0, Math.min(pos, text.length - 1));
        return [{from, to: Math.min(text.length, from + 1), severity: 'error', source: 'YAML', message: `Not valid YAML: ${message}`}];
      }
    } else
      try {
        spec = JSON.parse(text);
      } catch (e) {
      const pos = syntaxPosition(e, text);
      const line = state.doc.lineAt(pos);
      const message = cleanSyntaxMessage(e);
      status({kind: 'syntax', message, line: line.number, col: pos - line.from + 1, format: 'json'});
      const from = Math.max(0, Math.min(pos, text.length - 1));
      const to = Math.min(text.length, from + 1);
      return [{from, to, severity: 'error', source: 'JSON', message: `Not valid JSON: ${message}`}];
    }
    if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
      status({kind: 'invalid', message: `the spec must be ${yaml ? 'a YAML mapping' : 'a JSON object'}`, problems: []});
      const want = yaml ? 'a YAML mapping (key: value lines)' : 'a JSON object ({ ... })';
      return [{from: 0, to: Math.min(text.length, 1), severity: 'error', source: 'schema', message: `The spec must be ${want}.`}];
    }
    if (!opts.validate) {
      status({kind: 'idle'});
      return [];
    }
    status({kind: 'validating'});
    const v = await opts.validate(spec as Record<string, unknown>);
    if ('error' in v) {
      status({kind: 'unchecked', message: v.error});
      return [];
    }
    if (v.ok) {
      status({kind: 'valid'});
      return [];
    }
    const tree = treeOf(text);
    const diags: Diagnostic[] = [];
    const listed: (Problem & {line: number | null})[] = [];
    for (const p of v.problems) {
      const where = locate(tree, p.path || 'spec');
      const r = markRange(where.node);
      const {from, to} = widen(state, r.from, r.to, where.node.to);
      const prefix = p.stage ? `${p.stage}: ` : '';
      const missing = where.exact ? '' : ` (${where.missing ?? 'the field'} is missing here)`;
      const conflict = p.conflict_with ? ` — conflicts with ${p.conflict_with}` : '';
      diags.push({from, to, severity: 'error', source: p.path || 'spec', message: `${prefix}${p.message}${conflict}${missing}`});
      listed.push({...p, line: state.doc.lineAt(from).number});
    }
    status({kind: 'invalid', message: v.message, problems: listed});
    return diags;
  };

  const extensions: Extension[] = [
    lineNumbers(),
    highlightActiveLineGutter(),
    foldGutter(),
    drawSelection(),
    syntaxHighlighting(defaultHighlightStyle, {fallback: true}),
    bracketMatching(),
    highlightActiveLine(),
    highlightSelectionMatches(),
    ...(yaml ? [] : [json()]),
    theme,
    // tabindex: a read-only view is reached and scrolled with the keyboard too.
    EditorView.contentAttributes.of({'aria-label': opts.label, tabindex: '0'}),
    EditorState.tabSize.of(2),
    lintGutter(),
    linter(lintSource, {delay: 400}),
  ];
  if (opts.readOnly) {
    extensions.push(EditorState.readOnly.of(true), keymap.of([...defaultKeymap, ...searchKeymap, ...foldKeymap]));
  } else {
    extensions.push(
      history(),
      indentOnInput(),
      ...(yaml ? [] : [closeBrackets(), autocompletion({override: [specCompletion], icons: false})]),
      keymap.of([
        ...closeBracketsKeymap,
        ...defaultKeymap,
        ...searchKeymap,
        ...historyKeymap,
        ...foldKeymap,
        ...completionKeymap,
        ...lintKeymap,
        indentWithTab,
      ]),
      EditorView.updateListener.of((u) => {
        if (!u.docChanged) return;
        // The last verdict is about the text before this change: not valid any more
        // until the next check says so.
        if (opts.validate) status({kind: 'validating'});
        opts.onChange?.(u.state.doc.toString());
      }),
    );
  }
  const view = new EditorView({state: EditorState.create({doc: opts.doc, extensions}), parent});

  return {
    view,
    text: () => view.state.doc.toString(),
    setText(text: string) {
      if (text === view.state.doc.toString()) return;
      view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: text}});
    },
    reveal(path: string) {
      try {
        const where = locate(treeOf(view.state.doc.toString()), path);
        const r = markRange(where.node);
        view.dispatch({selection: EditorSelection.range(r.from, r.to), scrollIntoView: true});
        view.focus();
      } catch {
        view.focus();
      }
    },
    destroy: () => view.destroy(),
  };
}

/** A read-only editor showing a JSON value, for snapshots and versions. */
export function createJsonViewer(parent: HTMLElement, value: unknown, label: string): JsonEditor {
  return createJsonEditor(parent, {doc: JSON.stringify(value, null, 2), readOnly: true, label});
}
