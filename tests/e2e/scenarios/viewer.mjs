// viewer.mjs — the web UI as a viewer (tests/e2e/test_ui_viewer.sh): sign-in from a deep
// link, a refused token, then every page without a single button that changes things.
import {check, expectAbsent, expectReadOnlyEditor, expectVisible, rest, run, signInWithToken, waitFor} from '../lib/browser.mjs';

const {VIEWER, ADMIN, CONFIG_ID, GROUP, LATEST, NODES, SEXTANT_REPLICA_ID: REPLICA} = process.env;
const nodes = NODES.split(' ');

run('viewer', async ({page, browser, shot}) => {
  // A deep link without a session goes to sign-in and remembers where it was going.
  await page.goto(`/configs/${CONFIG_ID}`);
  await expectVisible('a deep link without a session shows the sign-in page', page.getByLabel('Bearer token'));
  await check('the sign-in address remembers the config', /\/sign-in\?next=%2Fconfigs%2F/.test(page.url()), page.url());
  await expectAbsent('no one-click sign-in without auth.dev_sign_in', page.getByTestId('dev-sign-in'));

  await signInWithToken(page, 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.bad');
  await expectVisible('a bad token is refused with the server reason', page.getByRole('alert').filter({hasText: /refused: .*(malformed|signature|expired|expiry)/}));
  await shot('bad-token');

  // With the keyboard alone: into the token field, paste, over to the button, Enter.
  await page.getByLabel('Bearer token').fill('');
  await page.locator('body').click({position: {x: 5, y: 5}});
  await page.keyboard.press('Tab');
  await check('Tab reaches the token field first', page.evaluate(() => document.activeElement?.getAttribute('name') === 'token'));
  await page.keyboard.insertText(VIEWER);
  await page.keyboard.press('Tab');
  await check('Tab then reaches the sign-in button', page.evaluate(() => document.activeElement?.textContent === 'Sign in'));
  await page.keyboard.press('Enter');
  await expectVisible('the viewer lands on the config it asked for', page.getByRole('heading', {name: 'team/web'}));
  await expectVisible('the header names the user and the role', page.getByTestId('who').filter({hasText: 'vera'}).filter({hasText: 'viewer'}));
  await expectVisible('the config page says it is read-only for a viewer', page.getByTestId('read-only'));
  await expectReadOnlyEditor(page, 'web.example', 'a viewer');
  await expectAbsent('no save button for a viewer', page.getByTestId('save'));
  await expectAbsent('no apply link for a viewer', page.getByRole('link', {name: /Apply/}));
  await shot('config-read-only');

  await page.getByRole('link', {name: 'History'}).click();
  await expectVisible('the history lists version 2', page.locator('[data-version="2"]'));
  await expectVisible('the history shows the change of version 2', page.getByTestId('diff-list').filter({hasText: '8081'}));
  await expectAbsent('no rollback buttons for a viewer', page.getByRole('button', {name: /Roll back/}));

  await page.getByRole('link', {name: 'Configs', exact: true}).click();
  await expectVisible('the configs page lists the config', page.getByTestId('configs-table').getByRole('link', {name: /web/}));
  await expectAbsent('no "New config" button for a viewer', page.getByRole('link', {name: 'New config'}));

  await page.getByRole('link', {name: 'Dashboard'}).click();
  await expectVisible('the dashboard lists the group', page.getByTestId('groups-table').getByRole('link', {name: GROUP}));
  await check(
    `the dashboard counts ${nodes.length} connected proxies`,
    waitFor(async () => (await page.getByTestId('count-connected').textContent()) === String(nodes.length)),
    async () => `shows ${await page.getByTestId('count-connected').textContent()}`,
  );
  await expectVisible('the dashboard is live (event stream connected)', page.getByTestId('live-status').filter({hasText: 'Live'}));
  // The one replica leads (it takes the lock a few seconds after it starts, and the
  // table is read again every 5 s) and is alive.
  const replica = page.getByTestId(`replica-${REPLICA}`);
  await expectVisible(`the dashboard lists replica ${REPLICA} as the leader`, replica.getByTestId('leader-badge'), 20000);
  await expectVisible(`... alive`, replica.filter({hasText: 'alive'}));
  await check('after following a link, the focus is on the new page content', page.evaluate(() => document.activeElement?.id === 'main'));
  await page.reload();
  await page.getByTestId('groups-table').waitFor();
  await page.keyboard.press('Tab');
  await check('the first Tab stop of a page is "Skip to content"', page.evaluate(() => document.activeElement?.textContent === 'Skip to content'));

  // Live data must not move what is already on screen: a change made elsewhere arrives.
  const boxes = async () =>
    page.evaluate(() =>
      ['[data-testid="fleet-cards"]', '#h-groups', '#h-rollouts', '#h-changes'].map((sel) => {
        const r = document.querySelector(sel).getBoundingClientRect();
        return sel === '#h-rollouts' ? [r.x, r.width] : [r.x, r.y, r.width, r.height];
      }),
    );
  const layout = JSON.stringify(await boxes());
  const spec = (await rest(ADMIN, 'GET', `/api/v1/configs/${CONFIG_ID}`)).json.spec;
  spec.backends[0].connect_timeout = '2s';
  const put = await rest(ADMIN, 'PUT', `/api/v1/configs/${CONFIG_ID}`, {spec, message: 'changed while the dashboard is open'});
  const next = Number(LATEST) + 1;
  await check(`another user publishes v${next} meanwhile`, put.status === 200, put.text);
  await check(
    `the open dashboard shows v${next} without a reload`,
    waitFor(async () => (await page.getByTestId('groups-table').getByRole('link', {name: `v${next}`}).count()) === 1, 15000),
  );
  await check('the fleet cards and sections did not move', boxes().then((b) => JSON.stringify(b) === layout), async () => `${layout} → ${JSON.stringify(await boxes())}`);
  await shot('dashboard');

  // The event stream as the browser reads it: an event is parsed and shown, a dropped
  // stream is reopened with Last-Event-ID and the bearer token, and a server without
  // the endpoint (404) gets polling instead, which still brings changes in.
  const other = await browser.newContext({baseURL: process.env.SEXTANT_URL, viewport: {width: 1280, height: 800}});
  const p2 = await other.newPage();
  const streams = [];
  await p2.route('**/api/v1/events*', async (route) => {
    streams.push(route.request().headers());
    if (streams.length === 1)
      await route.fulfill({
        status: 200,
        headers: {'Content-Type': 'text/event-stream'},
        body: ': hello\n\nid: 41\nevent: proxy_connected\ndata: {"id":41,"node_id":"sse-probe-node",\ndata: "group":"probe"}\n\n',
      });
    else
      await route.fulfill({status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found","message":"no route for GET /api/v1/events","details":[]}}'});
  });
  await p2.goto('/');
  await signInWithToken(p2, VIEWER);
  await expectVisible('an event from the stream appears in the live activity', p2.getByTestId('activity').filter({hasText: 'sse-probe-node connected'}));
  await check('the stream is opened with the bearer token', waitFor(() => streams[0]?.authorization === `Bearer ${VIEWER}`));
  await check('after the stream ended it is reopened with Last-Event-ID: 41', waitFor(() => streams[1]?.['last-event-id'] === '41', 8000), () => JSON.stringify(streams[1] ?? null));
  await expectVisible('without an event stream the page says it is polling', p2.getByTestId('live-status').filter({hasText: 'Polling'}));
  const spec2 = (await rest(ADMIN, 'GET', `/api/v1/configs/${CONFIG_ID}`)).json.spec;
  spec2.backends[0].connect_timeout = '3s';
  const put2 = await rest(ADMIN, 'PUT', `/api/v1/configs/${CONFIG_ID}`, {spec: spec2, message: 'changed while polling'});
  await check(`another change publishes v${next + 1}`, put2.status === 200, put2.text);
  await check(
    `polling brings v${next + 1} to the dashboard within 8 s`,
    waitFor(async () => (await p2.getByTestId('groups-table').getByRole('link', {name: `v${next + 1}`}).count()) === 1, 8000),
  );
  await shot('polling', p2);
  await other.close();
  const now = next + 1;

  await page.getByRole('link', {name: 'Proxies'}).click();
  for (const n of nodes) {
    const row = page.locator(`tr[data-node="${n}"]`);
    await expectVisible(`the proxies page lists ${n}`, row);
    await check(`${n} shows that it acked v${now}`, waitFor(async () => (await row.getByTestId('acked').textContent()).trim() === `v${now}`, 10000), async () => row.textContent());
  }
  await page.getByRole('button', {name: 'Node ID'}).click();
  await check('sorting by node id, descending, puts the last node first', waitFor(async () => (await page.locator('tbody tr').first().getAttribute('data-node')) === [...nodes].sort().pop()));
  await page.getByLabel('Search proxies by node id, label or replica').fill(nodes[0]);
  await check('the search narrows the table to one proxy', waitFor(async () => (await page.locator('tbody tr').count()) === 1));
  await page.getByRole('link', {name: nodes[0]}).click();
  await expectVisible('the proxy page shows the acked version', page.getByTestId('proxy-acked').filter({hasText: `v${now}`}));
  await expectVisible('the proxy page shows the snapshot content', page.locator('.cm-content').filter({hasText: 'web.example'}));

  await page.getByRole('link', {name: 'Snapshots'}).click();
  await expectVisible('the snapshots page shows the group versions', page.getByTestId('snapshot-versions').getByText(`v${now}`));
  await page.getByTestId('snapshot-versions').getByRole('button', {name: /^v1/}).click();
  await expectVisible('an older snapshot opens', page.getByRole('heading', {name: 'v1'}));
  await expectAbsent('no republish button for a viewer', page.getByTestId('republish'));

  // A narrow window: everything reflows, nothing but tables scrolls sideways.
  await page.setViewportSize({width: 390, height: 844});
  for (const [where, url, content] of [
    ['dashboard', '/', '[data-testid="groups-table"] tbody tr'],
    ['proxies', '/proxies', '[data-testid="proxies-table"] tbody tr'],
    ['config', `/configs/${CONFIG_ID}`, '.cm-content'],
    ['history', `/configs/${CONFIG_ID}/history`, '[data-testid="diff-list"]'],
  ]) {
    await page.goto(url);
    await expectVisible(`the ${where} page renders in a narrow window`, page.locator(content));
    await check(`the ${where} page does not scroll sideways at 390 px`, page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), async () =>
      page.evaluate(() => `${document.documentElement.scrollWidth} > ${window.innerWidth}`),
    );
    await shot(`narrow-${where}`);
  }
  await page.setViewportSize({width: 1280, height: 800});

  await page.getByRole('button', {name: 'Sign out'}).click();
  await expectVisible('signing out shows the sign-in page', page.getByLabel('Bearer token'));
  await page.goto('/proxies');
  await expectVisible('after signing out the token is gone (sign-in again)', page.getByLabel('Bearer token'));
});
