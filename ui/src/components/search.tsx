// search.tsx — the search box in the header of every page: finds a proxy, config,
// group or deployment by a fragment of its name or id (GET /api/v1/search) and opens
// its page. It is a combobox: typing lists the hits, ↓/↑ move through them, Enter opens
// the one chosen (the first by default), Esc closes the list; "/" anywhere outside a
// text field puts the focus in the box.
import {useEffect, useRef, useState} from 'preact/hooks';
import {describeError, fetchOp, type Reply} from '../lib/api';
import {navigate, seg} from '../lib/router';

type Hit = Reply<'search'>['items'][number];

const KIND_LABEL: Record<Hit['kind'], string> = {proxy: 'Proxy', config: 'Config', group: 'Group', deployment: 'Deployment'};

/** The page of a hit: a group opens on the fleet page with its replicas shown. */
export function hitHref(h: Hit): string {
  switch (h.kind) {
    case 'proxy':
      return `/proxies/${seg(h.id)}`;
    case 'config':
      return `/configs/${seg(h.id)}`;
    case 'group':
      return `/fleet?group=${encodeURIComponent(h.id)}`;
    case 'deployment':
      return `/deployments/${seg(h.id)}`;
  }
}

// Preact's types allow role="combobox" on an <input> only with a list attribute (a
// <datalist>); this combobox owns its list box instead.
const COMBOBOX = {role: 'combobox'} as Record<string, string>;

export function SearchBox() {
  const [q, setQ] = useState('');
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLDivElement>(null);

  // Ask after a short pause in typing; an older answer never replaces a newer one.
  useEffect(() => {
    const text = q.trim();
    if (!text) {
      setHits(null);
      setError(null);
      return;
    }
    let gone = false;
    const t = setTimeout(() => {
      fetchOp('search', {query: {q: text.slice(0, 200)}})
        .then((r) => {
          if (gone) return;
          setHits(r.items);
          setError(null);
          setActive(0);
        })
        .catch((e) => {
          if (!gone) setError(describeError(e));
        });
    }, 200);
    return () => {
      gone = true;
      clearTimeout(t);
    };
  }, [q]);

  // "/" focuses the box; a click elsewhere closes the list.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      const typing = t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
      if (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        input.current?.focus();
      }
    };
    const onDown = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener('keydown', onKey);
    document.addEventListener('mousedown', onDown);
    return () => {
      window.removeEventListener('keydown', onKey);
      document.removeEventListener('mousedown', onDown);
    };
  }, []);

  const go = (h: Hit) => {
    setOpen(false);
    setQ('');
    setHits(null);
    navigate(hitHref(h));
  };

  const shown = open && q.trim() !== '' && (hits !== null || error !== null);
  const onKeyDown = (e: KeyboardEvent) => {
    const n = hits?.length ?? 0;
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setOpen(true);
      if (n) setActive((a) => (a + 1) % n);
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      if (n) setActive((a) => (a - 1 + n) % n);
    } else if (e.key === 'Enter') {
      if (shown && hits && hits[active]) {
        e.preventDefault();
        go(hits[active]);
      }
    } else if (e.key === 'Escape') {
      if (shown) {
        e.preventDefault();
        setOpen(false);
      } else setQ('');
    }
  };

  const optionId = (i: number) => `search-hit-${i}`;
  return (
    <div class="search" ref={box} role="search">
      <label class="sr-only" for="search-input">
        Search proxies, configs, groups and deployments
      </label>
      <input
        id="search-input"
        ref={input}
        type="search"
        class="search-input"
        placeholder="Search  /"
        autoComplete="off"
        spellcheck={false}
        {...COMBOBOX}
        aria-autocomplete="list"
        aria-expanded={shown}
        aria-controls="search-results"
        aria-activedescendant={shown && hits && hits.length ? optionId(active) : undefined}
        value={q}
        onInput={(e) => {
          setQ(e.currentTarget.value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onKeyDown={onKeyDown}
        data-testid="search-input"
      />
      <div class="search-pop" hidden={!shown}>
        {error && (
          <p class="search-note" role="alert">
            Search failed: {error}
          </p>
        )}
        {!error && hits && hits.length === 0 && (
          <p class="search-note" role="status">
            Nothing matches “{q.trim()}”.
          </p>
        )}
        <ul
          id="search-results"
          role="listbox"
          aria-label="Search results"
          class="search-list"
          hidden={!hits?.length}
          data-testid="search-results"
        >
          {shown &&
            hits?.map((h, i) => (
              <li
                key={`${h.kind}:${h.id}`}
                id={optionId(i)}
                role="option"
                aria-selected={i === active}
                class={i === active ? 'search-hit active' : 'search-hit'}
                data-kind={h.kind}
                data-id={h.id}
                onMouseDown={(e) => e.preventDefault()}
                onClick={() => go(h)}
                onMouseEnter={() => setActive(i)}
              >
                <span class="search-kind">{KIND_LABEL[h.kind]}</span>
                <span class="search-label mono">{h.label}</span>
                {h.detail && <span class="search-detail muted">{h.detail}</span>}
              </li>
            ))}
        </ul>
      </div>
    </div>
  );
}
