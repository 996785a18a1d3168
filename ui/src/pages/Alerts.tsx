// Alerts.tsx — Sextant's own alerts: what fires now, then the recently resolved ones,
// newest first (GET /api/v1/alerts by state), reloaded on alert events and polls.
import {usePaged, useLive, useTitle} from '../lib/hooks';
import {seg} from '../lib/router';
import type {components} from '../gen/openapi';
import {ListTable} from '../components/list';
import {Badge, Empty, PageHead, Section, Time} from '../components/ui';

type Alert = components['schemas']['Alert'];

const RULES: Record<string, string> = {
  nack_rate: 'NACK rate',
  proxy_disconnected: 'Proxy disconnected',
  deployment_failed: 'Deployment failed',
  replica_lost: 'Replica lost',
};

/** The subject as a link to its page, where it has one. */
function Subject({a}: {a: Alert}) {
  switch (a.rule) {
    case 'nack_rate':
      return <a href={`/proxies?group=${encodeURIComponent(a.subject)}`}>{a.subject}</a>;
    case 'proxy_disconnected':
      return <a href={`/proxies/${seg(a.subject)}`}>{a.subject}</a>;
    case 'deployment_failed':
      return <a href={`/deployments/${seg(a.subject)}`}>{a.subject.slice(0, 8)}…</a>;
    default:
      return <span class="mono">{a.subject}</span>;
  }
}

function value(a: Alert): string {
  if (a.rule === 'nack_rate') return `${(a.value * 100).toFixed(1)}%`;
  if (a.rule === 'deployment_failed') return '—';
  return `${Math.round(a.value)} s`;
}

function Rows({items, resolved}: {items: Alert[]; resolved: boolean}) {
  return (
    <>
      {items.map((a) => (
        <tr key={a.id} data-rule={a.rule} data-state={a.state}>
          <td>
            <Badge tone={resolved ? 'ok' : 'bad'}>{RULES[a.rule] ?? a.rule}</Badge>
          </td>
          <td>
            <Subject a={a} />
          </td>
          <td>{a.message}</td>
          <td class="nowrap">{value(a)}</td>
          <td>
            <Time iso={a.started_at} />
          </td>
          {resolved && (
            <td>
              <Time iso={a.resolved_at} />
            </td>
          )}
        </tr>
      ))}
    </>
  );
}

export function AlertsPage() {
  useTitle('Alerts');
  const firing = usePaged('listAlerts', {query: {state: 'firing'}}, 100);
  const resolved = usePaged('listAlerts', {query: {state: 'resolved'}}, 50);
  useLive(firing.reload, (e) => e.type.startsWith('alert_'), 1000);
  useLive(resolved.reload, (e) => e.type === 'alert_resolved', 1000);
  return (
    <>
      <PageHead
        title="Alerts"
        sub="Sextant's own rules, evaluated by the leader: NACK rate of a group, proxies disconnected, deployments that failed or rolled back, replicas lost."
      />
      <Section title="Firing">
        <ListTable
          list={firing}
          what="the firing alerts"
          testid="alerts-firing"
          head={['Rule', 'Subject', 'Message', 'Value', 'Since']}
          empty={<Empty title="Nothing fires" />}
        >
          <Rows items={firing.items} resolved={false} />
        </ListTable>
      </Section>
      <Section title="Recently resolved">
        <ListTable
          list={resolved}
          what="the resolved alerts"
          testid="alerts-resolved"
          more="Older alerts"
          head={['Rule', 'Subject', 'Message', 'Last value', 'Fired', 'Resolved']}
          empty={<Empty title="No alert has resolved yet" />}
        >
          <Rows items={resolved.items} resolved />
        </ListTable>
      </Section>
    </>
  );
}
