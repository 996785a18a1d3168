// k8s_status.mjs — the status written back to Kubernetes on a managed config's page, and
// the link to the resources it produced (tests/e2e/test_ui_k8s_status.sh).
//
//   node k8s_status.mjs phase1   the page against what kubectl read, the link, axe
//   node k8s_status.mjs phase2   after the route was fixed in the cluster
import fs from 'node:fs';
import {check, expectAbsent, expectVisible, run, waitFor} from '../lib/browser.mjs';
import {axeCheck} from '../lib/a11y.mjs';

const {MANAGED_ID, GROUP, K8S_GATEWAY, K8S_BROKEN, K8S_SHOP, RESOURCES} = process.env;
const phase = process.argv[2] || 'phase1';
const read = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));

/** Checks that every condition of conds is rendered in table scope as the cluster has it. */
async function expectConditions(what, scope, conds) {
  for (const c of conds) {
    const row = scope.locator(`[data-testid="condition"][data-type="${c.type}"]`);
    await expectVisible(`${what}: condition ${c.type} is shown`, row);
    const cells = await row.first().locator('th, td').allTextContents();
    const [type, status, reason, message, gen] = cells.map((t) => t.trim());
    await check(
      `${what}: ${c.type} reads ${c.status} ${c.reason} "${c.message}" at generation ${c.observedGeneration}, as kubectl reads it`,
      type === c.type && status.endsWith(c.status) && reason === c.reason && message === (c.message ?? '') && gen === String(c.observedGeneration),
      cells.join(' | '),
    );
    const healthy = c.status === (c.type === 'Conflicted' ? 'False' : 'True');
    await check(
      `${what}: ${c.type} ${c.status} is marked ${healthy ? 'healthy (✓)' : 'failing (✗)'} with its status in words, not by colour alone`,
      new RegExp(`^${healthy ? '✓' : '✗'}\\s*${c.status}$`).test(status),
      status,
    );
  }
}

/** The route entries of route r for Gateway shop/web, by our controller. */
const ourParents = (r) => r.status.parents.filter((p) => p.parentRef.name === 'web' && p.controllerName === 'sextant.dev/gateway-controller');

run(`k8s-status-${phase}`, async ({page, shot}) => {
  await page.goto('/');
  await page.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('the operator is signed in', page.getByTestId('who').filter({hasText: 'dev-operator'}));
  const gw = read(K8S_GATEWAY);
  const broken = read(K8S_BROKEN);

  if (phase === 'phase2') {
    await page.goto(`/configs/${MANAGED_ID}`);
    const route = page.locator('[data-testid="k8s-route"][data-name="shop/broken"]');
    const shown = () => route.locator('[data-testid="condition"][data-type="ResolvedRefs"][data-status="True"]').count().then((n) => n > 0);
    await check(
      'after the fix the page (reloaded) shows route broken ResolvedRefs True',
      waitFor(async () => {
        if (await shown()) return true;
        await page.getByRole('button', {name: 'Reload'}).click();
        return false;
      }, 30000, 1000),
    );
    await expectConditions('route broken, fixed', route, ourParents(broken)[0].conditions);
    await check(
      `route broken's observed generation is its new one (${broken.metadata.generation})`,
      route.getByTestId('observed-generation').textContent().then((t) => t === String(broken.metadata.generation)),
    );
    await expectVisible('the route is marked in words as healthy', route.getByText('every condition healthy'));
    await shot('fixed');
    return;
  }

  // ---- the config page: the Gateway, its listeners, each route
  await page.goto(`/configs/${MANAGED_ID}`);
  await expectVisible('the page says the config is managed by Gateway shop/web', page.getByTestId('read-only').filter({hasText: 'Gateway shop/web'}));
  const status = page.getByTestId('k8s-status');
  await expectVisible('the status in the cluster is shown', status.getByTestId('k8s-gateway'));
  const gateway = status.getByTestId('k8s-gateway');
  await check(
    `the Gateway's observed generation is its generation (${gw.metadata.generation})`,
    gateway.getByTestId('observed-generation').first().textContent().then((t) => t === String(gw.metadata.generation)),
  );
  await expectVisible('when it was written is shown', gateway.locator('time').first());
  const gwTable = gateway.getByRole('table', {name: 'Conditions of Gateway shop/web'});
  await expectConditions('Gateway shop/web', gwTable, gw.status.conditions);
  for (const l of gw.status.listeners) {
    const li = gateway.locator(`[data-testid="k8s-listener"][data-name="${l.name}"]`);
    await check(
      `listener ${l.name} shows ${l.attachedRoutes} attached routes, as kubectl reads it`,
      li.getByTestId('attached-routes').textContent().then((t) => t === String(l.attachedRoutes)),
    );
    await expectConditions(`listener ${l.name}`, li, l.conditions);
  }
  for (const r of [read(K8S_SHOP), broken]) {
    const li = status.locator(`[data-testid="k8s-route"][data-name="shop/${r.metadata.name}"]`);
    await expectVisible(`route shop/${r.metadata.name} is listed`, li);
    await expectConditions(`route ${r.metadata.name}`, li, ourParents(r)[0].conditions);
    await check(
      `route ${r.metadata.name}'s observed generation is ${r.metadata.generation}`,
      li.getByTestId('observed-generation').textContent().then((t) => t === String(r.metadata.generation)),
    );
  }
  const bad = status.locator('[data-testid="k8s-route"][data-name="shop/broken"]');
  await expectVisible('route broken: ResolvedRefs False BackendNotFound, with its message', bad.locator('[data-type="ResolvedRefs"][data-status="False"]').filter({hasText: 'BackendNotFound'}).filter({hasText: 'no-such-service'}));
  await expectVisible('route broken is marked in words as having a failing condition', bad.getByText('a condition is failing'));
  await shot('status');
  await axeCheck(page, 'the managed config with the status written back');

  // ---- the link to the translated objects: the group's current snapshot, this config's part
  const want = read(RESOURCES);
  await page.getByTestId('translated-link').click();
  await check('the link opens the group\'s snapshots filtered to this config', page.waitForURL(`**/snapshots/${encodeURIComponent(GROUP)}?config=${MANAGED_ID}`).then(() => true));
  const part = page.getByTestId('config-resources');
  await expectVisible('this config\'s resources in the current snapshot are shown', part);
  await expectVisible('the snapshot shown is the one serving', page.locator('.tl-selected').filter({hasText: 'serving'}));
  for (const [kind, names] of Object.entries(want))
    for (const n of names) await expectVisible(`${kind} ${n} of the config is shown`, part.locator(`[data-testid="produced-resource"][data-kind="${kind}"][data-name="${n}"]`));
  const shownNames = await part.getByTestId('produced-resource').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')));
  const wantCount = Object.values(want).reduce((n, l) => n + l.length, 0);
  await check(`exactly the config's ${wantCount} resources are shown`, shownNames.length === wantCount, shownNames.join(', '));
  await expectAbsent('the REST config\'s listener in the same snapshot is not', part.locator('[data-name="l-other-example"]'));
  await expectVisible('the JSON view holds the config\'s listener', part.locator('.cm-content').filter({hasText: want.listeners[0]}));
  await shot('translated');
  await axeCheck(page, 'the snapshot filtered to the managed config');
  await expectVisible('the snapshot says it was built from the REST config too', page.getByRole('link', {name: /^team\/other v1$/}));
  await part.getByTestId('whole-snapshot').click();
  await expectVisible('"Show the whole snapshot" shows all of it', page.locator('.cm-content').filter({hasText: '"backends"'}));
  await expectAbsent('... without the filter', page.getByTestId('config-resources'));
});
