// diffView.ts — two JSON documents side by side with their differences marked
// (@codemirror/merge), both read-only, unchanged stretches folded away.
import {json} from '@codemirror/lang-json';
import {syntaxHighlighting, defaultHighlightStyle} from '@codemirror/language';
import {MergeView} from '@codemirror/merge';
import {EditorState} from '@codemirror/state';
import {EditorView, lineNumbers} from '@codemirror/view';

const readOnly = (label: string) => [
  lineNumbers(),
  json(),
  syntaxHighlighting(defaultHighlightStyle, {fallback: true}),
  EditorState.readOnly.of(true),
  EditorView.editable.of(false),
  EditorView.contentAttributes.of({'aria-label': label, tabindex: '0'}),
  EditorView.theme({'&': {fontSize: '12.5px'}, '.cm-scroller': {fontFamily: 'var(--mono)'}}),
];

export const pretty = (v: unknown) => JSON.stringify(v ?? null, null, 2);

/** Shows a (left) and b (right) in parent; returns the view (destroy() when done). */
export function createDiffView(parent: HTMLElement, a: unknown, b: unknown, labels: [string, string]): MergeView {
  return new MergeView({
    parent,
    a: {doc: pretty(a), extensions: readOnly(labels[0])},
    b: {doc: pretty(b), extensions: readOnly(labels[1])},
    highlightChanges: true,
    gutter: true,
    collapseUnchanged: {margin: 3, minSize: 6},
  });
}
