// dataPlanes.tsx — a proxy group's data planes (Envoy proxies, proxyless gRPC clients,
// gateway.control.v1 clients), shown on the group's page and changed there by those the
// policy lets update groups. The server refuses a change while a live config of the group
// holds what a new data plane cannot take; every such problem is listed with the config,
// the field and the data plane that cannot take it.
import {useEffect, useState} from 'preact/hooks';
import {ApiError, fetchOp} from '../lib/api';
import {useAction, useApi} from '../lib/hooks';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import {Badge, Section, toast} from './ui';

const KINDS = [
  {name: 'envoy', label: 'Envoy proxies', hint: 'ADS, what the Envoy translation can express'},
  {name: 'grpc', label: 'Proxyless gRPC clients', hint: 'ADS, as gRPC clients read it'},
  {name: 'control', label: 'gateway.control.v1 data planes', hint: 'everything the protocol carries'},
] as const;
type Kind = (typeof KINDS)[number]['name'];

export function DataPlanes({group}: {group: string}) {
  const me = useStore(session).me;
  const g = useApi('getGroup', {path: {group}});
  const [chosen, setChosen] = useState<Kind[] | null>(null);
  const {busy, error, run} = useAction();
  useEffect(() => setChosen(null), [group]);
  const may = can(me, 'groups', 'update');
  const serving = (g.data?.data_planes ?? []) as Kind[];
  const now = chosen ?? serving;
  const changed = chosen !== null && [...chosen].sort().join() !== [...serving].sort().join();
  const save = (body: {data_planes: Kind[]} | {use_default: true}) =>
    run(async () => {
      const r = await fetchOp('updateGroup', {path: {group}, body});
      toast(`Group ${group} serves ${r.data_planes.join(', ')}`);
      setChosen(null);
      await g.reload();
    });
  const details = error instanceof ApiError ? error.details : [];
  return (
    <Section title="Data planes" id="h-planes">
      {g.data && (
        <p class="small">
          What validation lets this group's configs hold: a feature one of its data planes cannot take is refused.{' '}
          {g.data.data_planes_default && <Badge tone="info">server default</Badge>}
        </p>
      )}
      <fieldset class="fieldset" data-testid="data-planes" disabled={!may || busy || !g.data}>
        <legend>Serves</legend>
        {KINDS.map((k) => (
          <label key={k.name} class="check" title={k.hint}>
            <input
              type="checkbox"
              name={k.name}
              checked={now.includes(k.name)}
              onChange={(e) => {
                const on = e.currentTarget.checked;
                setChosen(on ? [...now, k.name] : now.filter((x) => x !== k.name));
              }}
            />
            <span>
              {k.label} <span class="muted small">({k.name})</span>
            </span>
          </label>
        ))}
      </fieldset>
      {may && (
        <div class="btn-row">
          <button
            type="button"
            class="btn btn-primary"
            disabled={busy || !changed || now.length === 0}
            onClick={() => save({data_planes: KINDS.map((k) => k.name).filter((n) => now.includes(n))})}
            data-testid="save-data-planes"
          >
            Save data planes
          </button>
          {g.data && !g.data.data_planes_default && (
            <button type="button" class="btn" disabled={busy} onClick={() => save({use_default: true})}>
              Use the server default
            </button>
          )}
        </div>
      )}
      {error !== null && (
        <div class="error-box" role="alert" data-testid="data-planes-refusal">
          <strong>Not changed</strong>
          <p>{error instanceof Error ? error.message : String(error)}</p>
          {details.length > 0 && (
            <ul class="small">
              {details.map((d, i) => (
                <li key={i}>
                  <code class="mono">{d.path}</code>
                  {d.data_plane && <Badge tone="warn">{d.data_plane}</Badge>}: {d.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </Section>
  );
}
