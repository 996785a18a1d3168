// replicas.tsx — the Sextant replicas sharing the database (GET /api/v1/replicas): which
// one leads, which are alive (heard from within three heartbeats) or stale, the version
// each runs and when it was last seen.
import {useEffect} from 'preact/hooks';
import {useApi} from '../lib/hooks';
import type {Replica} from '../lib/types';
import {Badge, ErrorBox, Time} from './ui';
import {Table} from './list';

/** The replicas as a table: leaders first, then the alive ones, then by id. */
export function ReplicasTable({replicas}: {replicas: Replica[]}) {
  if (!replicas.length) return <p class="muted">No replica has reported yet.</p>;
  const rows = [...replicas].sort(
    (a, b) => Number(b.leader) - Number(a.leader) || Number(b.alive) - Number(a.alive) || a.id.localeCompare(b.id),
  );
  return (
    <Table head={['Replica', 'State', 'Version', 'Last seen']} testid="replicas-table">
      {rows.map((r) => (
        <tr key={r.id} data-testid={`replica-${r.id}`}>
          <td>
            <span class="mono" title={`REST ${r.http_address} · xDS ${r.grpc_address}`}>
              {r.id}
            </span>{' '}
            {r.leader && (
              <span data-testid="leader-badge">
                <Badge tone="info" title={`holds the leader lock (term ${r.term ?? '?'})`}>
                  leader
                </Badge>
              </span>
            )}
          </td>
          <td>
            {r.alive ? (
              <Badge tone="ok" title="heard from within three heartbeats">
                alive
              </Badge>
            ) : (
              <Badge tone="warn" title="silent for more than three heartbeats">
                stale
              </Badge>
            )}
          </td>
          <td class="mono">{r.version}</td>
          <td>
            <Time iso={r.last_seen} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** The replicas, read again every 5 s (heartbeats are not live events). */
export function Replicas() {
  const r = useApi('listReplicas', {query: {limit: 100}});
  const reload = r.reload;
  useEffect(() => {
    const t = setInterval(() => void reload(), 5000);
    return () => clearInterval(t);
  }, [reload]);
  if (r.error && !r.data) return <ErrorBox error={r.error} retry={r.reload} what="the replicas" />;
  if (!r.data) return <p class="muted">Loading…</p>;
  return <ReplicasTable replicas={r.data.items} />;
}
