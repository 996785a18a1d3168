// bluegreen.mjs — a blue-green rollout steered from the web UI, run by
// tests/e2e/test_ui_bluegreen.sh: the Apply page's Blue-green choice plans green then
// blue; the deployment page says when green ACKed and waits, offers Promote, and the
// promotion switches blue; Roll back afterwards puts every proxy back on the old content.
import {check, expectAbsent, expectVisible, rest, run, waitFor} from '../lib/browser.mjs';

const {ADMIN, CONFIG_ID, GROUP, NODES, GREEN} = process.env;
const nodes = NODES.split(' ');
const blue = nodes.filter((n) => n !== GREEN);

const badge = (scope, text) => scope.locator('.badge').filter({hasText: new RegExp(`^${text}$`)});
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const get = async (p) => (await rest(ADMIN, 'GET', p)).json;
const deployment = (id) => get(`/api/v1/deployments/${id}`);
const groupVersion = async () => (await get('/api/v1/groups')).items.find((g) => g.name === GROUP)?.latest_version;
const acked = async (n) => (await get(`/api/v1/proxies/${n}`)).acked_version;

run('bluegreen', async ({page, shot}) => {
  const head = page.locator('.page-head');
  const headState = (s) => badge(head.locator('.page-sub'), s);

  // ---- fixture: a draft with another connect timeout
  const cfg = await get(`/api/v1/configs/${CONFIG_ID}`);
  const spec = (await get(`/api/v1/configs/${CONFIG_ID}/versions/${cfg.live_version}`)).spec;
  spec.backends[0].connect_timeout = '4s';
  const put = await rest(ADMIN, 'PUT', `/api/v1/configs/${CONFIG_ID}`, {spec, draft: true, message: 'blue-green candidate'});
  await check('fixture: a draft is saved', put.status === 200, put.text);
  const draft = put.json?.version;
  const base = await groupVersion();

  await page.goto('/');
  await page.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('signed in as operator', page.getByTestId('who').filter({hasText: 'operator'}));

  // ---- the plan
  await page.goto(`/configs/${CONFIG_ID}/apply`);
  await expectVisible('the apply page opens', page.getByRole('heading', {name: /^Apply /}));
  await check(`the apply page proposes the draft v${draft}`, waitFor(async () => (await page.getByTestId('apply-version').inputValue()) === String(draft)));
  await page.getByTestId('strategy-blue-green').check();
  await expectVisible('without green proxies the page says what is missing', page.getByText('choose the green proxies: node ids or labels'));
  await page.getByTestId('green-node-ids').fill(GREEN);
  await page.getByLabel('Wait for a promotion').fill('1h');
  await page.getByLabel('Reason').fill('e2e: blue-green');
  const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/api/v1/configs/${CONFIG_ID}/apply`));
  await page.getByTestId('dry-run').click();
  const body = (await sent).postDataJSON();
  await check('the dry run asks for blue-green with the green proxy, 1h, rolling back on timeout', body.dry_run === true && same(body.strategy, {type: 'blue_green', green: {node_ids: [GREEN]}, promote_timeout: '1h', on_timeout: 'rollback'}), JSON.stringify(body));
  const planList = page.getByTestId('plan-waves');
  await expectVisible('the dry run shows the plan', planList);
  const shown = async () => (await planList.locator('li .mono').allTextContents()).map((t) => t.split(', ').sort());
  await check(`the plan shows green (${GREEN}) then blue (${blue.join(', ')})`, waitFor(async () => same(await shown(), [[GREEN], [...blue].sort()])), async () => JSON.stringify(await shown()));
  await shot('bluegreen-plan');

  // ---- green takes it; the page waits for a promotion
  await page.getByTestId('apply').click();
  await expectVisible('applying opens the deployment page', page.getByRole('heading', {name: /^Deployment /}));
  const id = decodeURIComponent(page.url().split('/deployments/')[1] ?? '');
  const phase = page.getByTestId('blue-green-phase');
  await expectVisible('the page says green ACKed and it waits for a promotion', phase.filter({hasText: 'waiting for a promotion'}), 15000);
  await expectVisible('it offers Promote', page.getByTestId('action-promote'));
  const d0 = await deployment(id);
  const target = d0.target_snapshots[GROUP];
  await check(`the green proxy runs v${target}`, waitFor(async () => (await acked(GREEN)) === target, 10000));
  for (const n of blue) await check(`blue ${n} stays on v${base}`, acked(n).then((v) => v === base));
  await shot('bluegreen-waiting');

  // ---- promote
  await page.getByTestId('action-promote').click();
  const ask = page.getByRole('dialog', {name: 'Promote this rollout?'});
  await expectVisible('promote asks first, saying blue switches at once', ask.getByText(/Every blue proxy switches/));
  await check('nothing happens before it is confirmed', deployment(id).then((d) => d.blue_green.phase === 'awaiting_promotion'));
  await ask.getByLabel('Reason').fill('e2e: green looks good');
  await ask.getByTestId('confirm-action').click();
  await expectVisible('the deployment completes', headState('completed'), 15000);
  await expectVisible('the page says every proxy switched', phase.filter({hasText: 'every proxy switched'}));
  await expectAbsent('Promote is gone', page.getByTestId('action-promote'));
  for (const n of nodes) await check(`${n} runs v${target}`, waitFor(async () => (await acked(n)) === target, 10000));

  // ---- roll back after the promotion
  await page.getByTestId('action-rollback').click();
  const confirm = page.getByRole('dialog', {name: 'Roll back this rollout?'});
  await confirm.getByLabel('Reason').fill('e2e: back to blue');
  await confirm.getByTestId('confirm-action').click();
  await expectVisible('the deployment ends rolled back', headState('rolled back'), 15000);
  const after = await groupVersion();
  await check(`the group serves a new snapshot v${after} with the old content`, after > target);
  for (const n of nodes) await check(`${n} runs v${after}`, waitFor(async () => (await acked(n)) === after, 10000));
  await shot('bluegreen-rolled-back');
});
