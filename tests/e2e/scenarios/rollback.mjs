// rollback.mjs — config and group rollbacks from the web UI (tests/e2e/test_ui_rollback.sh).
import fs from 'node:fs';
import {check, expectVisible, run, signInWithToken, waitFor} from '../lib/browser.mjs';

const {OPERATOR, CONFIG_ID, GROUP, ECHO_A, ECHO_B, CALLS, NODES} = process.env;
const nodes = NODES.split(' ');

/** The gRPC client's last outcome ("ok A"). */
const lastCall = () => fs.readFileSync(CALLS, 'utf8').trim().split('\n').pop().split(' ').slice(1).join(' ');

/** Waits until the watching tab's proxies table shows every node acknowledging version
 * (the tab is never reloaded: the table follows live events). */
async function proxiesAcked(watch, version) {
  for (const n of nodes) {
    const cell = watch.locator(`tr[data-node="${n}"]`).getByTestId('acked');
    await check(`the open proxies page shows ${n} acknowledging v${version} without a reload`, waitFor(async () => (await cell.textContent()).trim() === `v${version}`, 15000), async () => cell.textContent());
  }
}

run('rollback', async ({page, context, shot}) => {
  // A second tab keeps the group's proxies in view the whole time.
  const watch = await context.newPage();
  await watch.goto(`/proxies?group=${encodeURIComponent(GROUP)}`);
  await signInWithToken(watch, OPERATOR);
  await proxiesAcked(watch, 2);

  // The working tab in front (a background tab gets no animation frames, which clicks wait for).
  await page.bringToFront();
  await page.goto(`/configs/${CONFIG_ID}/history`);
  await signInWithToken(page, OPERATOR);
  await expectVisible('the operator lands on the history', page.locator('[data-version="2"]').filter({hasText: 'echo on B'}));

  // ---- config rollback, with its confirmation. Its first answer is lost on the way
  // back (the server commits, the browser sees a network error): the app sends it again
  // with the same Idempotency-Key, and the rollback is made once.
  const rollbackKeys = [];
  await page.route('**/api/v1/configs/*/rollback', async (route, req) => {
    rollbackKeys.push(req.headers()['idempotency-key']);
    if (rollbackKeys.length > 1) return route.continue();
    await route.fetch();
    await route.abort('failed');
  });
  await page.locator('[data-version="1"]').getByRole('button', {name: 'Roll back to v1'}).click();
  const dialog = page.getByRole('dialog', {name: 'Roll back to version 1?'});
  await expectVisible('a confirmation dialog opens', dialog);
  const diff = dialog.getByTestId('rollback-diff');
  await expectVisible(`the confirmation shows the endpoint going from B's port ${ECHO_B} back to A's ${ECHO_A}`, diff.locator('li.diff-changed').filter({hasText: ECHO_B}).filter({hasText: ECHO_A}));
  await shot('rollback-confirm');
  await dialog.getByTestId('confirm-rollback').click();
  await expectVisible('the rollback is confirmed', page.getByText("Rolled back: version 3 has version 1's spec"));
  await expectVisible('version 3 appears as a rollback of v1', page.locator('[data-version="3"]').filter({hasText: 'rollback of v1'}).filter({hasText: 'olga'}));
  await check('the rollback whose answer was lost was sent twice with one Idempotency-Key (a UUID)',
    rollbackKeys.length === 2 && /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(rollbackKeys[0]) && rollbackKeys[1] === rollbackKeys[0],
    JSON.stringify(rollbackKeys));
  await page.unroute('**/api/v1/configs/*/rollback');
  await expectVisible('the difference of version 3 is shown', page.getByTestId('diff-summary').filter({hasText: 'v2 → v3'}));

  await proxiesAcked(watch, 3);
  await check('the gRPC client now lands on backend A', waitFor(() => lastCall() === 'ok A', 10000), lastCall);
  await shot('proxies-after-rollback', watch);

  // ---- group rollback: republish snapshot v2
  await page.getByRole('link', {name: 'Snapshots'}).click();
  await expectVisible('the snapshots page shows the group', page.getByRole('heading', {name: `Snapshots of ${GROUP}`}));
  await check("the snapshots page's address carries the group as one segment", page.url().endsWith(`/snapshots/${encodeURIComponent(GROUP)}`), page.url());
  await page.getByTestId('snapshot-versions').getByRole('button', {name: /^v2/}).click();
  const republish = page.waitForRequest((r) => r.method() === 'POST' && /\/api\/v1\/groups\/.*\/rollback$/.test(r.url()));
  await page.getByTestId('republish').click();
  const rep = page.getByRole('dialog', {name: `Republish snapshot v2 of ${GROUP}?`});
  await expectVisible('a confirmation shows the two snapshots side by side', rep.locator('.cm-mergeView'));
  await rep.getByTestId('confirm-republish').click();
  await expectVisible('the republish is confirmed', page.getByText(`Group ${GROUP} now serves v2's content as v4`));
  const groupKey = (await republish).headers()['idempotency-key'];
  await check('the republish carries its own Idempotency-Key', /^[0-9a-f-]{36}$/.test(groupKey ?? '') && groupKey !== rollbackKeys[0], groupKey);
  await expectVisible('v4 is the snapshot being served', page.getByTestId('snapshot-versions').locator('li').first().filter({hasText: 'v4'}).filter({hasText: 'serving'}));
  await proxiesAcked(watch, 4);
  await check('the gRPC client lands on backend B again', waitFor(() => lastCall() === 'ok B', 10000), lastCall);

  // ---- the audit log
  await page.getByRole('link', {name: 'Audit'}).click();
  const table = page.getByTestId('audit-table');
  await expectVisible('the audit log lists the config rollback by olga', table.locator('tr[data-action="config.rollback"]').filter({hasText: 'olga'}).filter({hasText: 'source version: 1'}));
  await expectVisible('the audit log lists the group rollback by olga', table.locator('tr[data-action="group.rollback"]').filter({hasText: 'olga'}).filter({hasText: GROUP}));
  await expectVisible('the audit log lists the update before them', table.locator('tr[data-action="config.update"]').filter({hasText: 'e2e-admin'}));
  await expectVisible('the audit log lists the creation', table.locator('tr[data-action="config.create"]').filter({hasText: 'e2e-admin'}));
  await page.getByLabel('User').fill('olga');
  await page.getByRole('button', {name: 'Filter'}).click();
  await check('filtered by user, only olga\'s two rollbacks remain', waitFor(async () => {
    const actions = await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action')).sort().join());
    return actions === 'config.rollback,group.rollback';
  }), async () => table.locator('tbody').textContent());
  // The one lost answer of the config rollback, provoked above.
}, {allowConsole: [/Failed to load resource: net::ERR_FAILED/]});
