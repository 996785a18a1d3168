// format.ts — times, sizes and numbers as people read them.

/** "12 s ago", "3 min ago", "in 5 min"; "—" for none. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.round((now - t) / 1000);
  const abs = Math.abs(s);
  const fmt = (n: number, u: string) => (s >= 0 ? `${n} ${u} ago` : `in ${n} ${u}`);
  if (abs < 5) return 'just now';
  if (abs < 60) return fmt(abs, 's');
  if (abs < 3600) return fmt(Math.floor(abs / 60), 'min');
  if (abs < 86400) return fmt(Math.floor(abs / 3600), 'h');
  return fmt(Math.floor(abs / 86400), 'd');
}

/** Local date and time, to the second. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function percent(x: number): string {
  return `${(x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 0)} %`;
}

export const shortId = (id: string) => (id.length > 12 ? id.slice(0, 8) : id);

/** JSON for display: compact for scalars, indented for the rest. */
export function showJson(v: unknown): string {
  if (v === undefined) return '—';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  return JSON.stringify(v, null, 2);
}

/** An RFC 3339 time from a datetime-local input value ("" stays ""). */
export function localInputToIso(v: string): string {
  if (!v) return '';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

export function isoToLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
