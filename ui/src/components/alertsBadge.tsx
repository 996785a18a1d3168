// alertsBadge.tsx — the header's count of firing alerts, a link to the Alerts page;
// reloaded on alert events and polls, hidden while nothing fires.
import {useApi, useLive} from '../lib/hooks';

export function AlertsBadge() {
  const firing = useApi('listAlerts', {query: {state: 'firing', limit: 1000}});
  useLive(firing.reload, (e) => e.type.startsWith('alert_'), 1000);
  const n = firing.data?.items.length ?? 0;
  if (!n) return null;
  return (
    <a href="/alerts" class="badge badge-bad" style={{textDecoration: 'none'}} data-testid="alerts-badge" title="Alerts firing now">
      {n >= 1000 ? '1000+' : n} firing
    </a>
  );
}
