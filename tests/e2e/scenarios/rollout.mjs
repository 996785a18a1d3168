// rollout.mjs — rollouts from the web UI (tests/e2e/test_ui_rollout.sh).
import {spawn} from 'node:child_process';
import {check, expectAbsent, expectVisible, rest, run, selectInEditor, waitFor} from '../lib/browser.mjs';

const {ADMIN, CONFIG_ID, GROUP, NODES, BAD, DATAPLANE_CMD, DATAPLANE_LOG} = process.env;
const nodes = NODES.split(' ');

/** Edits the config in the browser and saves it as a draft; returns the new version. */
async function saveDraft(page, from, to, message) {
  await page.goto(`/configs/${CONFIG_ID}`);
  await page.locator('.cm-content').filter({hasText: 'b-web-example'}).waitFor();
  await selectInEditor(page, from);
  await page.keyboard.type(to);
  await expectVisible(`the change "${to}" validates`, page.getByText('✓ Valid'), 8000);
  await page.getByTestId('save-message').fill(message);
  await page.getByLabel(/Save as a draft/).check();
  await page.getByTestId('save').click();
  await expectVisible('the draft is saved', page.getByText(/^Saved version \d+$/));
  return Number(await page.getByTestId('config-version').textContent());
}

/** The group's current snapshot version, as the API says. */
async function groupVersion() {
  const r = await rest(ADMIN, 'GET', '/api/v1/groups');
  return r.json.items.find((g) => g.name === GROUP)?.latest_version;
}

async function ackedBy(node) {
  const r = await rest(ADMIN, 'GET', `/api/v1/proxies/${node}`);
  return r.json?.acked_version;
}

run('rollout', async ({page, shot}) => {
  await page.goto('/');
  await page.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('signed in as operator', page.getByTestId('who').filter({hasText: 'operator'}));
  const before = await groupVersion();

  // ---- a draft, planned and applied in waves
  const v2 = await saveDraft(page, '"connect_timeout": "1s"', '"connect_timeout": "2s"', 'slower connects, rolled out in waves');
  await check('a draft does not change what the group is served', groupVersion().then((v) => v === before));
  await page.getByRole('link', {name: 'Apply…'}).click();
  await expectVisible('the apply page opens', page.getByRole('heading', {name: /^Apply team\/web/}));
  await check(`the apply page proposes the draft v${v2}`, waitFor(async () => (await page.getByTestId('apply-version').inputValue()) === String(v2)), async () => page.getByTestId('apply-version').inputValue());
  await page.getByLabel('Rolling, in waves').check();
  await page.getByLabel('Wave by').selectOption('size');
  await page.getByLabel('Proxies per wave').fill('1');
  await page.getByLabel('Pause between waves').fill('2s');
  await page.getByLabel('Reason').fill('e2e: slower connects');
  await check('applying needs a dry run first', page.getByTestId('apply').isDisabled());
  await page.getByTestId('dry-run').click();
  const waves = page.getByTestId('plan-waves');
  await expectVisible('the dry run shows the plan', waves);
  await check(`the plan has one wave per proxy (${nodes.length})`, waitFor(async () => (await waves.locator('li').count()) === nodes.length));
  for (const n of nodes) await expectVisible(`the plan names ${n}`, waves.getByText(n));
  await expectVisible('the plan shows the group change', page.getByTestId('plan-group').filter({hasText: GROUP}).filter({hasText: 'connect_timeout'}));
  await shot('plan');
  await page.getByTestId('apply').click();

  await expectVisible('applying opens the deployment page', page.getByRole('heading', {name: /^Deployment /}));
  const depUrl = page.url();
  const wave = (i) => page.getByTestId(`wave-${i}`);
  await check('wave 1 fills up with its ACK', waitFor(async () => /1\/1 ACKed/.test(await wave(1).textContent()), 15000), async () => wave(1).textContent());
  await page.getByTestId('action-pause').click();
  await page.getByRole('dialog').getByLabel('Reason').fill('e2e: look at wave 1 first');
  await page.getByTestId('confirm-action').click();
  await expectVisible('the deployment is paused', page.locator('.page-head').getByText('paused', {exact: true}), 10000);
  await expectVisible('a paused deployment offers resume', page.getByTestId('action-resume'));
  await expectAbsent('a paused deployment offers no pause', page.getByTestId('action-pause'));
  await new Promise((r) => setTimeout(r, 3000)); // longer than the pause between waves
  await check('no wave starts while paused', wave(3).textContent().then((t) => /0\/1 ACKed/.test(t)), async () => wave(3).textContent());
  await shot('paused');
  await page.getByTestId('action-resume').click();
  await page.getByTestId('confirm-action').click();
  await expectVisible('the rollout completes after resuming', page.locator('.page-head').getByText('completed', {exact: true}), 30000);
  for (let i = 1; i <= nodes.length; i++)
    await check(`wave ${i} shows its ACK`, wave(i).textContent().then((t) => /1\/1 ACKed/.test(t)), async () => wave(i).textContent());
  await shot('completed');
  const promoted = await groupVersion();
  await check(`completing promotes a new snapshot of the group (v${before} → v${promoted})`, promoted > before);
  for (const n of nodes) await check(`${n} runs the promoted snapshot v${promoted}`, waitFor(async () => (await ackedBy(n)) === promoted, 10000));

  // ---- a change one proxy rejects
  const bad = spawn('bash', ['-c', `exec ${DATAPLANE_CMD} >>${DATAPLANE_LOG} 2>&1`], {stdio: 'ignore'});
  try {
    await check(`${BAD} joins and acks the current snapshot`, waitFor(async () => (await ackedBy(BAD)) === promoted, 15000));
    await saveDraft(page, '"healthy": true', '"healthy": true, "zone": "nack-me"', 'something one proxy cannot load');
    await page.getByRole('link', {name: 'Apply…'}).click();
    await page.getByLabel('All at once').check();
    await page.getByTestId('dry-run').click();
    await expectVisible(`the plan includes ${BAD}`, page.getByTestId('plan-waves').getByText(BAD));
    await page.getByTestId('apply').click();
    await expectVisible('the second deployment opens', page.getByRole('heading', {name: /^Deployment /}));
    await check('this is a new deployment', Promise.resolve(page.url() !== depUrl));
    await expectVisible(`the NACK of ${BAD} shows with its error`, page.getByTestId('wave-errors').filter({hasText: BAD}).filter({hasText: 'nack-me'}), 20000);
    await expectVisible('the deployment rolls itself back', page.locator('.page-head').getByText('rolled back', {exact: true}), 30000);
    await expectVisible('the page says why', page.getByTestId('state-reason').filter({hasText: /NACK/}));
    await shot('rolled-back');
    await check('the group is still served the promoted snapshot', groupVersion().then((v) => v === promoted));
    for (const n of [...nodes, BAD]) await check(`${n} is back on v${promoted}`, waitFor(async () => (await ackedBy(n)) === promoted, 15000));
    await page.getByRole('link', {name: BAD}).first().click();
    await expectVisible(`the proxy page of ${BAD} shows its last NACK`, page.getByTestId('last-nack').filter({hasText: 'nack-me'}));
  } finally {
    bad.kill('SIGTERM');
  }
});
