// k8sStatus.tsx — on the page of a config translated from Kubernetes, the status Sextant
// wrote back to the cluster (GET /api/v1/configs/{id}/kubernetes): the Gateway's
// conditions and each listener's (with its attached routes), then every route attached
// to the Gateway with its conditions for that Gateway, as the cluster holds them, with
// the generation they observed and when they were written. A condition that is not in its
// healthy state (True, or False for Conflicted) is marked with a sign and says so in its
// tooltip, besides its status in words: not by colour alone.
import {useApi, useLive} from '../lib/hooks';
import type {components} from '../gen/openapi';
import {Badge, ErrorBox, Section, Time} from './ui';
import {Table} from './list';

type K8sObject = components['schemas']['K8sObjectStatus'];

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

const arr = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? (v as Record<string, unknown>[]) : []);

/** Conditions whose healthy state is False (the Gateway API's negative polarity). */
const NEGATIVE = new Set(['Conflicted']);
/** Whether condition c is in its healthy state. */
const healthy = (c: Condition) => c.status === (NEGATIVE.has(c.type ?? '') ? 'False' : 'True');

function ConditionStatus({c}: {c: Condition}) {
  const status = c.status;
  if (status === 'True' || status === 'False')
    return healthy(c) ? (
      <Badge tone="ok" title={status === 'False' ? `False is the healthy state of ${c.type}` : undefined}>
        <span aria-hidden="true">✓ </span>
        {status}
      </Badge>
    ) : (
      <Badge tone="bad" title={`${c.type} is ${status}: see the reason and message`}>
        <span aria-hidden="true">✗ </span>
        {status}
      </Badge>
    );
  return (
    <Badge tone="warn">
      <span aria-hidden="true">? </span>
      {status || 'Unknown'}
    </Badge>
  );
}

/** A list of Kubernetes conditions as a table: one row each. */
function Conditions({conditions, label}: {conditions: unknown; label: string}) {
  const list = arr(conditions) as Condition[];
  if (!list.length) return <p class="muted small">No conditions.</p>;
  return (
    <Table head={['Condition', 'Status', 'Reason', 'Message', 'Observed generation', 'Since']} class="conditions" label={label}>
      {list.map((c) => (
        <tr
          key={c.type}
          class={healthy(c) ? 'cond' : 'cond cond-failing'}
          data-testid="condition"
          data-type={c.type}
          data-status={c.status}
          data-healthy={healthy(c) ? 'true' : 'false'}
          data-reason={c.reason}
        >
          <th scope="row">{c.type}</th>
          <td>
            <ConditionStatus c={c} />
          </td>
          <td class="mono">{c.reason}</td>
          <td>{c.message}</td>
          <td>{c.observedGeneration ?? ''}</td>
          <td>{c.lastTransitionTime ? <Time iso={c.lastTransitionTime} /> : ''}</td>
        </tr>
      ))}
    </Table>
  );
}

function Written({o}: {o: K8sObject}) {
  return (
    <p class="muted small">
      Observed generation <strong data-testid="observed-generation">{o.observed_generation}</strong> · written <Time iso={o.written_at} />
    </p>
  );
}

/** Whether route parent entry e names Gateway ns/name (a parentRef without a namespace is the route's). */
function namesGateway(e: Record<string, unknown>, routeNs: string, ns: string, name: string): boolean {
  const ref = (e.parentRef ?? e.ancestorRef ?? {}) as Record<string, unknown>;
  return (ref.kind ?? 'Gateway') === 'Gateway' && (ref.namespace ?? routeNs) === ns && ref.name === name;
}

function Attached({o, ns, name}: {o: K8sObject; ns: string; name: string}) {
  const entries = [...arr(o.status.parents), ...arr(o.status.ancestors)].filter((e) => namesGateway(e, o.namespace, ns, name));
  const bad = entries.some((e) => (arr(e.conditions) as Condition[]).some((c) => !healthy(c)));
  return (
    <li class="k8s-object" data-testid="k8s-route" data-kind={o.kind} data-name={`${o.namespace}/${o.name}`}>
      <h4>
        {o.kind} {o.namespace}/{o.name}{' '}
        {bad ? (
          <Badge tone="bad">
            <span aria-hidden="true">✗ </span>a condition is failing
          </Badge>
        ) : (
          <Badge tone="ok">
            <span aria-hidden="true">✓ </span>every condition healthy
          </Badge>
        )}
      </h4>
      <Written o={o} />
      {entries.map((e, i) => {
        const ref = (e.parentRef ?? e.ancestorRef ?? {}) as Record<string, unknown>;
        const section = ref.sectionName ? ` listener ${String(ref.sectionName)}` : '';
        const port = ref.port ? ` port ${String(ref.port)}` : '';
        return (
          <div key={i}>
            <p class="small">
              For Gateway {ns}/{name}
              {section}
              {port}, by <code class="mono">{String(e.controllerName ?? '')}</code>
            </p>
            <Conditions conditions={e.conditions} label={`Conditions of ${o.kind} ${o.namespace}/${o.name} for Gateway ${ns}/${name}${section}`} />
          </div>
        );
      })}
    </li>
  );
}

/** The written-back status of managed config id, translated from Gateway ns/name. */
export function KubernetesStatus({id, ns, name}: {id: string; ns: string; name: string}) {
  const st = useApi('getConfigKubernetes', {path: {id}});
  useLive(st.reload, (e) => /^config_/.test(e.type), 2000);
  const gw = st.data?.gateway ?? null;
  return (
    <Section title="Status in the cluster" id="h-k8s-status">
      <div data-testid="k8s-status">
        {st.error && <ErrorBox error={st.error} retry={st.reload} what="the Kubernetes status" />}
        <p class="small">
          What Sextant last wrote to the status of Gateway <strong>{`${ns}/${name}`}</strong> and of the routes attached to it, as the
          cluster holds it (
          <code class="mono" data-testid="status-command">
            kubectl -n {ns} get gateway {name} -o yaml
          </code>
          ).{' '}
          <button type="button" class="btn btn-small" onClick={() => void st.reload()}>
            Reload
          </button>
        </p>
        {st.data && !gw && (
          <p class="notice" data-testid="k8s-status-none">
            No status written yet: the leading replica writes it once it has translated the Gateway.
          </p>
        )}
        {gw && (
          <div data-testid="k8s-gateway">
            <h3>Gateway {`${gw.namespace}/${gw.name}`}</h3>
            <Written o={gw} />
            <Conditions conditions={gw.status.conditions} label={`Conditions of Gateway ${gw.namespace}/${gw.name}`} />
            <h4>Listeners</h4>
            <ul class="k8s-listeners">
              {arr(gw.status.listeners).map((l) => (
                <li key={String(l.name)} data-testid="k8s-listener" data-name={String(l.name)}>
                  <p>
                    <strong class="mono">{String(l.name)}</strong> · attached routes{' '}
                    <strong data-testid="attached-routes">{String(l.attachedRoutes ?? 0)}</strong>
                  </p>
                  <Conditions conditions={l.conditions} label={`Conditions of listener ${String(l.name)}`} />
                </li>
              ))}
            </ul>
          </div>
        )}
        {st.data && (
          <>
            <h3>Attached routes</h3>
            {st.data.attached.length ? (
              <ul class="k8s-routes">
                {st.data.attached.map((o) => (
                  <Attached key={`${o.kind}/${o.namespace}/${o.name}`} o={o} ns={ns} name={name} />
                ))}
              </ul>
            ) : (
              <p class="muted small" data-testid="k8s-routes-none">
                No route is attached to this Gateway.
              </p>
            )}
          </>
        )}
      </div>
    </Section>
  );
}
