// alerts.mjs — the Alerts page and the header's badge (tests/e2e/test_ui_alerts.sh): a
// data plane that goes away fires proxy_disconnected, shown in the header and on the
// page; when it comes back the alert resolves on the page, without a reload.
import {spawn} from 'node:child_process';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {check, expectAbsent, expectVisible, run, signInWithToken, waitFor} from '../lib/browser.mjs';

const {VIEWER, NODE, GROUP, DP_PID, GRPC_PORT} = process.env;
const here = path.dirname(fileURLToPath(import.meta.url));

run('alerts', async ({page, shot}) => {
  await page.goto('/');
  await signInWithToken(page, VIEWER);
  await expectVisible('the viewer is signed in', page.getByTestId('who'));
  await expectAbsent('no alert badge while nothing fires', page.getByTestId('alerts-badge'));

  // ---- the data plane goes away
  process.kill(Number(DP_PID), 'SIGTERM');
  const badge = page.getByTestId('alerts-badge');
  await expectVisible('the header says one alert fires', badge.filter({hasText: '1 firing'}), 20000);
  await badge.click();
  await expectVisible('the badge leads to the Alerts page', page.getByRole('heading', {name: 'Alerts'}));
  await expectVisible('Alerts is the current page in the navigation', page.locator('nav a[aria-current="page"]', {hasText: 'Alerts'}));
  const firing = page.getByTestId('alerts-firing').locator('tr[data-rule="proxy_disconnected"]');
  await expectVisible('the firing alert is listed', firing);
  await expectVisible('... with its node, linked to the proxy', firing.locator(`a[href="/proxies/${NODE}"]`));
  await expectVisible('... and its message', firing.getByText(`proxy ${NODE} of group ${GROUP} disconnected`));
  await shot('alerts-firing');

  // ---- it comes back
  const dp = spawn(process.execPath, [path.join(here, '..', 'lib', 'dataplane.cjs'), '--server', `127.0.0.1:${GRPC_PORT}`, '--node', NODE, '--group', GROUP], {stdio: 'ignore'});
  try {
    const resolved = page.getByTestId('alerts-resolved').locator('tr[data-rule="proxy_disconnected"][data-state="resolved"]');
    await expectVisible('the alert moves to the resolved ones', resolved, 20000);
    await expectVisible('nothing fires any more', page.getByText('Nothing fires'));
    // The badge reloads on the same event as the page, on its own: wait for it.
    await check('the badge is gone', waitFor(async () => (await page.getByTestId('alerts-badge').count()) === 0));
    await shot('alerts-resolved');
  } finally {
    dp.kill('SIGTERM');
  }
});
