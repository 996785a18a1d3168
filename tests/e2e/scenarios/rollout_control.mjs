// rollout_control.mjs — an operator's control of rollouts from the web UI, after
// rollout.mjs in tests/e2e/test_ui_rollout.sh (same server, group and data planes):
//   (a) a canary chosen on the Apply page: the dry run shows the wave sizes of the
//       canary rule, and the same plan the API answers for the same request;
//   (b) the canary, waiting out its interval after wave 1, shows its progress on the
//       deployments list and on a dashboard open in another tab, which follows it live
//       without moving it; Cancel on its page takes it through canceling / rolling back
//       to rolled back, wave 1 rolled back and wave 2 canceled;
//   (c) a completed deployment rolled back with the "Roll back" button after its
//       confirmation: rolled back, and every proxy acknowledges the previous content
//       (on the proxies page and in GET /api/v1/proxies).
import {check, expectAbsent, expectVisible, rest, run, waitFor} from '../lib/browser.mjs';

const {ADMIN, CONFIG_ID, GROUP, NODES} = process.env;
const nodes = NODES.split(' ');

/**
 * The waves of a canary over n proxies, as server/rollout/strategy.c plans them: wave
 * k brings the cumulative share up to ceil(n · pct / 100) (pct rounded to 1e-9 first,
 * at least 1 proxy), pct starting at initial and growing by increment.
 */
function canaryWaves(n, initial, increment) {
  const share = (pct) => Math.max(1, Math.ceil(Math.round(((n * pct) / 100) * 1e9) / 1e9));
  const sizes = [];
  let done = 0;
  for (let pct = initial; done < n; pct += increment) {
    const upto = pct >= 100 ? n : Math.min(n, share(pct));
    if (upto > done) {
      sizes.push(upto - done);
      done = upto;
    }
  }
  return sizes;
}

/** The state badge reading exactly text inside scope. */
const badge = (scope, text) => scope.locator('.badge').filter({hasText: new RegExp(`^${text}$`)});
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const get = async (p) => (await rest(ADMIN, 'GET', p)).json;
const deployment = (id) => get(`/api/v1/deployments/${id}`);
const groupVersion = async () => (await get('/api/v1/groups')).items.find((g) => g.name === GROUP)?.latest_version;
const proxies = async () => (await get(`/api/v1/proxies?group=${GROUP}`)).items;
const snapshot = async (v) => (await get(`/api/v1/snapshots?group=${GROUP}&limit=1000`)).items.find((s) => s.version === v);

/** Waits until the API says every node acked version v. */
async function allAcked(v, what) {
  for (const n of nodes)
    await check(`${n} acks v${v} ${what}`, waitFor(async () => (await get(`/api/v1/proxies/${n}`)).acked_version === v, 15000), async () => JSON.stringify(await get(`/api/v1/proxies/${n}`)));
}

/** Starts recording every state the deployment page's header shows (every 20 ms). */
const recordStates = (page) =>
  page.evaluate(() => {
    window.__states = [];
    const rec = () => {
      const t = document.querySelector('.page-head .page-sub .badge')?.textContent?.trim();
      if (t && window.__states[window.__states.length - 1] !== t) window.__states.push(t);
    };
    rec();
    window.__recorder = setInterval(rec, 20);
  });
const recordedStates = (page) => page.evaluate(() => (clearInterval(window.__recorder), window.__states));

run('rollout-control', async ({page, context, shot}) => {
  const head = page.locator('.page-head');
  const headState = (s) => badge(head.locator('.page-sub'), s);
  const wave = (i) => page.getByTestId(`wave-${i}`);

  // ---- fixture: a draft of the live spec with another connect timeout; the proxy that
  // rollout.mjs stopped is gone, so the plans count the other ones.
  const cfg = await get(`/api/v1/configs/${CONFIG_ID}`);
  const live = cfg.live_version;
  const spec = (await get(`/api/v1/configs/${CONFIG_ID}/versions/${live}`)).spec;
  spec.backends[0].connect_timeout = '3s';
  const put = await rest(ADMIN, 'PUT', `/api/v1/configs/${CONFIG_ID}`, {spec, draft: true, message: 'canary then cancel'});
  await check('fixture: a draft is saved', put.status === 200, put.text);
  const draft = put.json?.version;
  await check(`only ${nodes.join(', ')} are connected`, waitFor(async () => same((await proxies()).filter((p) => p.connected).map((p) => p.node_id).sort(), [...nodes].sort()), 15000));
  const base = await groupVersion();

  // A second tab keeps the dashboard open, recording every rendering of a rollout in
  // progress: its state, and where its line and progress bar are.
  const dash = await context.newPage();
  for (const p of [dash, page]) {
    await p.goto('/');
    await p.getByRole('button', {name: 'Sign in as operator'}).click();
    await expectVisible('signed in as operator', p.getByTestId('who').filter({hasText: 'operator'}));
  }
  await page.bringToFront(); // the working tab in front: a background tab gets no animation frames, which clicks wait for
  await expectVisible('the dashboard has no rollout in progress', dash.getByText('No rollout in progress'));
  await dash.evaluate(() => {
    window.__samples = [];
    const box = (e) => {
      const b = e.getBoundingClientRect();
      return [b.x, b.y, b.width, b.height].map(Math.round);
    };
    window.__recorder = setInterval(() => {
      const li = document.querySelector('[data-testid^="active-deployment-"]');
      if (!li) return;
      const bar = li.querySelector('[role="progressbar"]');
      const s = {id: li.dataset.testid, state: li.querySelector('.badge')?.textContent, progress: li.querySelector('[data-testid="deployment-progress"]')?.textContent, li: box(li), bar: bar && box(bar)};
      const last = window.__samples[window.__samples.length - 1];
      if (JSON.stringify(last) !== JSON.stringify(s)) window.__samples.push(s);
    }, 25);
  });

  // ---- (a) a canary planned on the Apply page
  await check('the canary rule gives 1,4,4,1 for 10 proxies at 10 % then +40 %', same(canaryWaves(10, 10, 40), [1, 4, 4, 1]), canaryWaves(10, 10, 40));
  await check('the canary rule gives 2,1 for 3 proxies at 34 % then +33 %', same(canaryWaves(3, 34, 33), [2, 1]), canaryWaves(3, 34, 33));
  const [initial, increment] = [34, 33];
  const expected = canaryWaves(nodes.length, initial, increment);
  await page.goto(`/configs/${CONFIG_ID}/apply`);
  await expectVisible('the apply page opens', page.getByRole('heading', {name: /^Apply team\/web/}));
  await check(`the apply page proposes the draft v${draft}`, waitFor(async () => (await page.getByTestId('apply-version').inputValue()) === String(draft)));
  await page.getByLabel('Canary, growing share').check();
  await page.getByLabel('First wave, percent').fill(String(initial));
  await page.getByLabel('Then add, percent').fill(String(increment));
  await page.getByLabel('Every', {exact: true}).fill('1h'); // wave 2 waits: time to look and cancel
  await page.getByLabel('Reason').fill('e2e: a canary to cancel');
  const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`/api/v1/configs/${CONFIG_ID}/apply`));
  await page.getByTestId('dry-run').click();
  const body = (await sent).postDataJSON();
  await check(
    `the dry run asks for a canary of ${initial} % then +${increment} % every 1h`,
    body.dry_run === true && same(body.strategy, {type: 'canary', initial_percent: initial, increment_percent: increment, interval: '1h'}),
    JSON.stringify(body),
  );
  const planList = page.getByTestId('plan-waves');
  await expectVisible('the dry run shows the plan', planList);
  const shown = async () => (await planList.locator('li').allTextContents()).map((t) => Number(/\((\d+)\)/.exec(t)?.[1]));
  await check(`the plan shows waves of ${expected.join(', ')} (canary rule over ${nodes.length} proxies)`, waitFor(async () => same(await shown(), expected)), async () => JSON.stringify(await shown()));
  const api = await rest(ADMIN, 'POST', `/api/v1/configs/${CONFIG_ID}/apply`, body);
  const apiWaves = api.json?.plan?.waves ?? [];
  await check(`the API plans the same waves for the same request (${apiWaves.map((w) => w.node_ids.length)})`, same(apiWaves.map((w) => w.node_ids.length), expected), api.text.slice(0, 400));
  const uiNodes = (await planList.locator('li .mono').allTextContents()).map((t) => t.split(', '));
  await check('the plan names the same proxies in the same waves as the API', same(uiNodes, apiWaves.map((w) => w.node_ids)), `${JSON.stringify(uiNodes)} vs ${JSON.stringify(apiWaves.map((w) => w.node_ids))}`);
  await shot('canary-plan');

  // ---- (b) the canary runs wave 1, waits; its progress; then Cancel
  await page.getByTestId('apply').click();
  await expectVisible('applying opens the deployment page', page.getByRole('heading', {name: /^Deployment /}));
  const canaryId = decodeURIComponent(page.url().split('/deployments/')[1] ?? '');
  const first = expected[0];
  const total = nodes.length;
  await check(`wave 1 fills up with its ${first} ACKs`, waitFor(async () => new RegExp(`${first}/${first} ACKed`).test(await wave(1).textContent()), 15000), async () => wave(1).textContent());
  await expectVisible('wave 1 completes', badge(wave(1), 'completed'));
  const progressText = `wave 1/${expected.length} · ${first}/${total} ACKed`;
  await expectVisible(`the header says "${progressText}"`, head.getByTestId('deployment-progress').filter({hasText: progressText}));
  await check('wave 2 waits for the interval', wave(2).textContent().then((t) => /0\/\d+ ACKed/.test(t)), async () => wave(2).textContent());
  const d0 = await deployment(canaryId);
  const want = {waves: expected.length, waves_completed: 1, nodes: total, acks: first, nacks: 0};
  await check(`GET /deployments/{id} sums the waves up (${JSON.stringify(d0.progress)})`, Object.keys(want).every((k) => d0.progress?.[k] === want[k]), JSON.stringify(want));

  // A dashboard open in another tab lists it with its progress.
  const item = dash.getByTestId(`active-deployment-${canaryId}`);
  await expectVisible(`the open dashboard shows the canary with "${progressText}"`, item.getByTestId('deployment-progress').filter({hasText: progressText}));
  const bar = item.getByRole('progressbar');
  await check(`its bar says ${first} of ${total} ACKed`, Promise.all([bar.getAttribute('aria-valuenow'), bar.getAttribute('aria-valuemax')]).then(([n, m]) => n === String(first) && m === String(total)));
  // Its layout is being recorded: the viewport as it is, not a full-page capture, which
  // lays the page out again at its whole height while it runs.
  await shot('dashboard-progress', dash, {fullPage: false});

  await page.getByRole('link', {name: 'Deployments', exact: true}).click();
  const row = page.getByTestId(`deployment-row-${canaryId}`);
  await expectVisible(`the deployments list shows "${progressText}"`, row.getByTestId('deployment-progress').filter({hasText: progressText}));
  await shot('deployments-progress');
  await row.getByRole('link', {name: canaryId.slice(0, 8)}).click();
  await expectVisible('its page shows it in progress', headState('in progress'));
  await recordStates(page);
  await page.getByTestId('action-cancel').click();
  const ask = page.getByRole('dialog', {name: 'Cancel this rollout?'});
  await expectVisible('cancel asks first', ask);
  await ask.getByLabel('Reason').fill('e2e: not this one');
  await ask.getByTestId('confirm-action').click();
  await expectVisible('the canceled rollout ends rolled back', headState('rolled back'), 15000);
  const states = await recordedStates(page);
  const seen = states.indexOf('canceling') >= 0 ? states.indexOf('canceling') : states.indexOf('rolling back');
  await check(`the page went through canceling or rolling back before rolled back (${states.join(' → ')})`, seen >= 0 && seen < states.indexOf('rolled back'));
  await expectVisible('wave 1 shows rolled back', badge(wave(1), 'rolled back'));
  await expectVisible('wave 2 shows canceled', badge(wave(2), 'canceled'));
  await expectVisible('the page says it was canceled and why', page.getByTestId('state-reason').filter({hasText: /cancel/}).filter({hasText: 'not this one'}));
  await expectAbsent('a rolled back deployment offers no controls', page.locator('[data-testid^="action-"]'));
  const d1 = await deployment(canaryId);
  await check(`the API agrees: rolled_back, waves ${d1.waves.map((w) => w.state)}`, d1.state === 'rolled_back' && same(d1.waves.map((w) => w.state), ['rolled_back', 'canceled']));
  await check(`the group still serves v${base}`, groupVersion().then((v) => v === base));
  await allAcked(base, 'again after the cancel');
  await expectVisible('the open dashboard no longer lists it', dash.getByText('No rollout in progress'), 10000);
  const samples = (await dash.evaluate(() => (clearInterval(window.__recorder), window.__samples))).filter((x) => x.id === `active-deployment-${canaryId}`);
  const shapes = new Set(samples.map((x) => JSON.stringify([x.li, x.bar])));
  const texts = [...new Set(samples.map((x) => x.state))];
  // Live: it showed the rollout in progress and dropped it once rolled back, without a
  // reload. Whether a sample caught the short canceling / rolling back step depends on
  // how fast the proxies ACK the rollback, so that step may show but nothing else may.
  await check(`the open dashboard followed it live (${texts.join(' → ')})`, texts.includes('in progress') && texts.every((t) => ['pending', 'in progress', 'canceling', 'rolling back'].includes(t)));
  await check(`its rollout line and progress bar never moved (${samples.length} renderings)`, shapes.size === 1, [...shapes].join(' | '));
  await shot('canceled');

  // ---- (c) a completed deployment, rolled back by hand
  const applied = await rest(ADMIN, 'POST', `/api/v1/configs/${CONFIG_ID}/apply`, {version: draft, strategy: {type: 'all_at_once'}, reason: 'e2e: to roll back'});
  await check('fixture: the draft is applied all at once', applied.status === 201, applied.text);
  const doneId = applied.json?.id;
  await check('fixture: it completes', waitFor(async () => (await deployment(doneId)).state === 'completed', 15000));
  const promoted = await groupVersion();
  await check(`fixture: it promoted v${promoted} (> v${base})`, promoted > base);
  await allAcked(promoted, 'after it completed');

  await page.getByRole('link', {name: 'Deployments', exact: true}).click();
  const doneRow = page.getByTestId(`deployment-row-${doneId}`);
  await expectVisible('the list shows it completed', badge(doneRow, 'completed'));
  await expectVisible(`with "wave 1/1 · ${total}/${total} ACKed"`, doneRow.getByTestId('deployment-progress').filter({hasText: `wave 1/1 · ${total}/${total} ACKed`}));
  await doneRow.getByRole('link', {name: doneId.slice(0, 8)}).click();
  await expectVisible('its page shows it completed', headState('completed'));
  await page.getByTestId('action-rollback').click();
  const confirm = page.getByRole('dialog', {name: 'Roll back this rollout?'});
  await expectVisible('roll back asks for a confirmation first', confirm.getByText(/goes back to the version it had before/));
  await check('nothing happens before it is confirmed', deployment(doneId).then((d) => d.state === 'completed'));
  await shot('rollback-confirm');
  await confirm.getByLabel('Reason').fill('e2e: take it back');
  await confirm.getByTestId('confirm-action').click();
  await expectVisible('the deployment ends rolled back', headState('rolled back'), 15000);
  await expectVisible('its wave shows rolled back', badge(wave(1), 'rolled back'));
  const after = await groupVersion();
  await check(`the config's live version is v${live} again`, get(`/api/v1/configs/${CONFIG_ID}`).then((c) => c.live_version === live));
  await check(`the group serves a new snapshot v${after} (after v${promoted})`, after > promoted);
  const [s0, s2] = [await snapshot(base), await snapshot(after)];
  const src = (s) => JSON.stringify(s?.sources?.map((x) => [x.config_id, x.version]));
  await check(`v${after} is made of what v${base} was made of (${src(s2)})`, src(s0) === src(s2), `${src(s0)} vs ${src(s2)}`);
  await check(`v${after} has v${base}'s content (checksum)`, s0?.checksum && s0.checksum === s2?.checksum, `${s0?.checksum} vs ${s2?.checksum}`);
  await allAcked(after, 'after the rollback');
  const listed = await proxies();
  await check(`GET /api/v1/proxies: every proxy acked v${after}`, nodes.every((n) => listed.find((p) => p.node_id === n)?.acked_version === after), JSON.stringify(listed.map((p) => [p.node_id, p.acked_version])));
  await page.goto(`/proxies?group=${GROUP}`);
  for (const n of nodes) {
    const cell = page.locator(`tr[data-node="${n}"]`).getByTestId('acked');
    await check(`the proxies page shows ${n} on v${after}`, waitFor(async () => (await cell.textContent()).trim() === `v${after}`, 10000), async () => cell.textContent());
  }
  for (const n of nodes) await expectAbsent(`the proxies page shows ${n} in sync`, page.locator(`tr[data-node="${n}"]`).getByTestId('behind'));
});
