// fleet.mjs — the fleet views during a rolling deployment (tests/e2e/test_ui_fleet.sh).
import {check, expectVisible, rest, run, waitFor} from '../lib/browser.mjs';

const {ADMIN, CONFIG_ID, EDGE_ID, GROUP, EDGE, NODES} = process.env;
const nodes = NODES.split(' ');

/** The version distribution of a group as rendered: {version: count} from the bar's
 * segments. */
async function distribution(page, group) {
  const segs = page.getByTestId(`version-bar-${group}`).getByTestId('version-seg');
  const out = {};
  for (const s of await segs.all()) out[await s.getAttribute('data-version')] = Number(await s.getAttribute('data-count'));
  return out;
}

const show = (d) => JSON.stringify(d);

run('fleet', async ({page, context, shot}) => {
  await page.goto('/');
  await page.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('signed in as operator', page.getByTestId('who').filter({hasText: 'operator'}));
  await page.getByRole('link', {name: 'Fleet', exact: true}).click();
  await expectVisible('the fleet page opens from the navigation', page.getByRole('heading', {name: 'Fleet', exact: true}));

  // ---- before: both groups, every proxy on v1
  const fleet = page.getByTestId(`fleet-group-${GROUP}`);
  await expectVisible(`group ${GROUP} shows`, fleet);
  await expectVisible(`group ${EDGE} shows`, page.getByTestId(`fleet-group-${EDGE}`));
  await check(`${GROUP}: four proxies on v1`, waitFor(async () => show(await distribution(page, GROUP)) === '{"1":4}', 10000), async () => show(await distribution(page, GROUP)));
  await check(`${GROUP}: the counts say 4 connected, 4 current`, waitFor(async () => /4 connected/.test(await fleet.getByTestId('count-connected').first().textContent()) && /4 current/.test(await fleet.getByTestId('count-current').first().textContent())));
  await fleet.locator('summary').click();
  await fleet.getByTestId('show-proxies').first().click();
  const chips = fleet.getByTestId('proxy-chip');
  await check('opening the replica lists its four proxies', waitFor(async () => (await chips.count()) === 4), async () => chips.count());
  await check('each proxy chip says v1', waitFor(async () => (await chips.evaluateAll((cs) => cs.map((c) => c.dataset.version))).every((v) => v === '1')));
  await expectVisible('the heatmap draws a row per group', page.getByTestId(`heat-row-${GROUP}`));
  await check('the heatmap has 60 minutes', page.getByTestId(`heat-row-${GROUP}`).locator('rect').count().then((n) => n === 60));
  await check('the present minute of the heatmap is connected', page.getByTestId(`heat-row-${GROUP}`).locator('rect').last().getAttribute('data-state').then((s) => s === 'connected'));
  await shot('fleet-before');

  // ---- a rolling deployment, one proxy per wave, while the page is open; its page
  // is open in a second tab (signed in first: the session lives in the tab).
  const tab = await context.newPage();
  await tab.goto('/');
  await tab.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('the second tab is signed in', tab.getByTestId('who').filter({hasText: 'operator'}));
  await page.bringToFront();
  const dep = await rest(ADMIN, 'POST', `/api/v1/configs/${CONFIG_ID}/apply`, {
    version: 2,
    strategy: {type: 'rolling', wave_size: 1, pause: '3s'},
    reason: 'e2e: the fleet watches',
  });
  await check(`the rolling deployment starts (${dep.status})`, dep.status === 201 || dep.status === 202, dep.text);
  const depId = dep.json?.id;
  await tab.goto(`/deployments/${depId}`);
  await expectVisible('the deployment page opens in the second tab', tab.getByRole('heading', {name: /^Deployment /}));

  // Watch both tabs until the rollout completes: the bar's distributions and the
  // timeline's ACK counts as they were rendered.
  const seen = new Set();
  const ackCounts = new Set();
  let mixShot = false;
  const done = await waitFor(
    async () => {
      const d = await distribution(page, GROUP);
      seen.add(show(d));
      ackCounts.add(await tab.getByTestId('timeline-ack').count());
      if (!mixShot && d['1'] && d['2']) {
        mixShot = true;
        await shot('fleet-rolling');
        await shot('fleet-readme', page, {fullPage: false});
      }
      const state = await tab.locator('.page-head').textContent();
      return /completed/.test(state) && show(d) === '{"2":4}';
    },
    60000,
    150,
  );
  await check('the rollout completes and the bar shows four proxies on v2', done, () => `distributions seen: ${[...seen].join(' ')}`);
  const mixes = [...seen].filter((s) => {
    const d = JSON.parse(s);
    return d['1'] > 0 && d['2'] > 0 && d['1'] + d['2'] === 4;
  });
  await check(`the bar moved through mixed versions during the rollout (${mixes.join(' ')})`, mixes.length >= 2, () => `seen: ${[...seen].join(' ')}`);
  await check('after completion v2 is the current version (counts)', waitFor(async () => /4 current/.test(await fleet.getByTestId('count-current').first().textContent())));
  await check('the proxy chips follow: every one on v2', waitFor(async () => (await chips.evaluateAll((cs) => cs.map((c) => c.dataset.version))).join() === '2,2,2,2', 10000));
  await shot('fleet-after');

  // ---- the timeline showed each ACK as it arrived
  const partial = [...ackCounts].filter((n) => n > 0 && n < nodes.length);
  await check(`the timeline showed ACKs arriving one by one (counts seen: ${[...ackCounts].sort().join(',')})`, partial.length >= 1);
  for (let i = 1; i <= nodes.length; i++)
    await check(`timeline wave ${i} shows its ACK`, waitFor(async () => (await tab.getByTestId(`timeline-wave-${i}`).getAttribute('data-acks')) === '1', 10000));
  await check('the timeline shows every proxy ACK', tab.getByTestId('timeline-ack').count().then((n) => n === nodes.length));
  const acked = await tab.getByTestId('timeline-ack').evaluateAll((as) => as.map((a) => a.dataset.node).sort().join());
  await check(`the ACKs are the rollout's proxies (${acked})`, acked === [...nodes].sort().join());
  await check('each wave draws its propagation curve', tab.getByTestId('propagation-curve').count().then((n) => n === nodes.length));
  await check('each wave shows its completion', tab.getByTestId('timeline-complete').count().then((n) => n === nodes.length));
  await expectVisible('no NACK for this rollout', tab.getByTestId('nack-groups-empty'));
  await tab.evaluate(() => window.scrollTo(0, 0));
  await shot('deployment-timeline', tab);

  // ---- a change one proxy NACKs: its error, grouped
  const bad = await rest(ADMIN, 'POST', `/api/v1/configs/${EDGE_ID}/apply`, {version: 2, strategy: {type: 'all_at_once'}, reason: 'e2e: one proxy rejects'});
  await check(`the edge deployment starts (${bad.status})`, bad.status === 201 || bad.status === 202, bad.text);
  await tab.goto(`/deployments/${bad.json?.id}`);
  const groups = tab.getByTestId('nack-groups');
  await expectVisible('the NACK errors show grouped by message', groups, 30000);
  await check('the group names the rejected zone with its count', waitFor(async () => {
    const row = groups.locator('tbody tr').first();
    return /nack-me/.test(await row.textContent()) && Number(await row.locator('td').nth(2).textContent()) === 1;
  }, 10000), async () => groups.textContent());
  await shot('deployment-nacks', tab);
  await tab.close();

  // ---- metrics
  await page.getByRole('link', {name: 'Metrics', exact: true}).click();
  await expectVisible('the metrics page opens', page.getByRole('heading', {name: 'Metrics', exact: true}));
  for (const c of ['chart-latency', 'chart-pushes', 'chart-nack-rate', 'chart-streams']) await expectVisible(`the metrics page draws ${c}`, page.getByTestId(c));
  await check('the latency chart has a point for the rollout', waitFor(async () => (await page.getByTestId('chart-latency').locator('circle').count()) > 0, 10000));
  await check('the streams chart draws one line per replica', page.getByTestId('chart-streams').locator('[data-series]').count().then((n) => n === 1));
  await check('the NACK rate chart has the NACK', waitFor(async () => (await page.getByTestId('chart-nack-rate').locator('circle').count()) > 0, 10000));
  await shot('metrics');
  await page.goto('/fleet');
  await expectVisible('the fleet page again', page.getByTestId(`fleet-group-${EDGE}`));
});
