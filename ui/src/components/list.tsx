// list.tsx — what the list pages share: a table with its column headers, the table of
// one paged list (its error, its empty state, skeleton rows while the first page loads,
// "load more"), the group filter, and the box that says why the server refused an action.
import {isValidElement, type ComponentChildren, type VNode} from 'preact';
import {describeError} from '../lib/api';
import type {Group} from '../lib/types';
import {ErrorBox, Field, SkeletonRows, SortHeader, val, type SortDir} from './ui';

/** A column header: a label, [label, col] for one that sorts the table on col, or an
 * element of its own. */
export type Head = string | [string, string] | VNode;

/** The sort state of a table (useSort). */
export interface Sorting {
  sort: {col: string; dir: SortDir};
  onSort: (col: string) => void;
}

/** A table's header cells. */
export function Heads({cols, sorting}: {cols: Head[]; sorting?: Sorting}) {
  return (
    <>
      {cols.map((h, i) =>
        isValidElement(h) ? (
          h
        ) : Array.isArray(h) && sorting ? (
          <SortHeader key={h[1]} label={h[0]} col={h[1]} sort={sorting.sort} onSort={sorting.onSort} />
        ) : (
          <th key={i} scope="col">
            {Array.isArray(h) ? h[0] : h}
          </th>
        ),
      )}
    </>
  );
}

/** The header of a column of numbers (aligned to the right like its cells). */
export function num(label: string): VNode {
  return (
    <th key={label} scope="col" class="num">
      {label}
    </th>
  );
}

/** A table: its column headers (head, sorting) and its rows (children); named for tests
 * (testid) or for screen readers (label). */
export function Table({
  head,
  sorting,
  testid,
  label,
  class: cls,
  children,
}: {
  head: Head[];
  sorting?: Sorting;
  testid?: string;
  label?: string;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table class={cls ? `table ${cls}` : 'table'} data-testid={testid} aria-label={label}>
        <thead>
          <tr>
            <Heads cols={head} sorting={sorting} />
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** What ListTable needs of usePaged's answer. */
export interface PagedList {
  items: unknown[];
  next: string | null;
  error: Error | undefined;
  loading: boolean;
  reload: () => unknown;
  more: () => unknown;
}

/**
 * The table of a paged list: an error box, else the empty state when nothing is there
 * (shown: the rows left after the page's own filters), else the table with its column
 * headers (head, sorting) and the rows (children), placeholder rows while the first page loads, and a button for
 * the next page.
 */
export function ListTable({
  list,
  what,
  testid,
  head,
  sorting,
  empty,
  shown = list.items.length,
  more = 'Load more',
  children,
}: {
  list: PagedList;
  what: string;
  testid: string;
  head: Head[];
  sorting?: Sorting;
  empty: ComponentChildren;
  shown?: number;
  more?: string;
  children: ComponentChildren;
}) {
  return (
    <>
      {list.error && <ErrorBox error={list.error} retry={list.reload} what={what} />}
      {!list.loading && !list.error && !shown ? (
        empty
      ) : (
        <Table head={head} sorting={sorting} testid={testid}>
          {list.loading && !list.items.length && <SkeletonRows cols={head.length} />}
          {children}
        </Table>
      )}
      {list.next && (
        <button type="button" class="btn" onClick={list.more} disabled={list.loading}>
          {more}
        </button>
      )}
    </>
  );
}

/** The "Group" filter of a list page; value "" = all groups. With keep, a group in the
 * address that the server does not list (yet) stays selectable. */
export function GroupFilter({
  groups,
  value,
  onChange,
  keep = false,
}: {
  groups: Group[] | undefined;
  value: string;
  onChange: (g: string) => void;
  keep?: boolean;
}) {
  const list = groups ?? [];
  return (
    <Field label="Group">
      <select value={value} onChange={(e) => onChange(val(e))}>
        <option value="">all groups</option>
        {list.map((g) => (
          <option key={g.name} value={g.name}>
            {g.name}
          </option>
        ))}
        {keep && value && !list.some((g) => g.name === value) && <option value={value}>{value}</option>}
      </select>
    </Field>
  );
}

/** Why the server refused an action, under the form that asked for it. */
export function Refusal({title, error, children}: {title: string; error: unknown; children?: ComponentChildren}) {
  return (
    <div class="error-box" role="alert">
      <strong>{title}</strong>
      <p>{children ?? describeError(error)}</p>
    </div>
  );
}

/** A dialog's two buttons: cancel (labelled cancel), and the action it asks to confirm. */
export function ConfirmButtons({
  onCancel,
  cancel = 'Cancel',
  children,
}: {
  onCancel: () => void;
  cancel?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="btn-row dialog-actions">
      <button type="button" class="btn" onClick={onCancel}>
        {cancel}
      </button>
      {children}
    </div>
  );
}
