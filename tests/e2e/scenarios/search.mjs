// search.mjs — the search box and deep links (tests/e2e/test_ui_search.sh).
import {check, expectVisible, run, signInAsOperator, waitFor} from '../lib/browser.mjs';

const {CONFIG_ID, DEPLOYMENT_ID, GROUP} = process.env;
const WEST = 'edge-7c2f9e41-west';
const EAST = 'edge-7c2fab-east';

run('search', async ({page, shot}) => {
  await signInAsOperator(page);
  await page.getByRole('link', {name: 'Configs', exact: true}).click();
  await expectVisible('the configs page', page.getByTestId('configs-table'));

  const box = page.getByTestId('search-input');
  const options = page.getByTestId('search-results').getByRole('option');
  const ids = () => options.evaluateAll((os) => os.map((o) => o.getAttribute('data-id')));

  // ---- "/" focuses the box; a fragment of one node id finds that proxy
  await page.keyboard.press('/');
  await check('"/" puts the focus in the search box', box.evaluate((el) => el === document.activeElement));
  await page.keyboard.type('9e41');
  await expectVisible('the proxy whose id holds the fragment is listed', options.filter({hasText: WEST}));
  await check('only that proxy is listed', waitFor(async () => JSON.stringify(await ids()) === JSON.stringify([WEST])), async () => JSON.stringify(await ids()));
  await check('the list is announced as expanded', box.getAttribute('aria-expanded').then((v) => v === 'true'));
  await check('the first hit is the active option', box.getAttribute('aria-activedescendant').then(async (id) => id && (await page.locator(`#${id}`).getAttribute('data-id')) === WEST));
  await shot('search-one');
  await page.keyboard.press('Enter');
  await check('Enter opens the proxy page', waitFor(() => page.url().endsWith(`/proxies/${WEST}`)), page.url());
  await expectVisible('the proxy page names it', page.getByRole('heading', {level: 1}).filter({hasText: WEST}));
  await check('the box is emptied after opening a hit', box.inputValue().then((v) => v === ''));

  // ---- a fragment both share, any case: ↓ then Enter opens the second
  await box.click();
  await page.keyboard.type('7C2F');
  await check('both proxies are listed', waitFor(async () => (await ids()).filter((i) => i === WEST || i === EAST).length === 2), async () => JSON.stringify(await ids()));
  const listed = await ids();
  await page.keyboard.press('ArrowDown');
  await check('↓ makes the second hit the active one', waitFor(async () => (await options.nth(1).getAttribute('aria-selected')) === 'true'));
  await shot('search-two');
  await page.keyboard.press('Enter');
  await check('Enter opens the second hit', waitFor(() => page.url().endsWith(`/proxies/${listed[1]}`)), page.url());

  // ---- a config and a group by name (typed into the box itself: after opening a hit
  // the focus may still be in it, where "/" is just a character of the query)
  await box.click();
  await box.fill('team/web');
  await expectVisible('the config is found by namespace/name', options.filter({hasText: 'team/web'}));
  await page.keyboard.press('Enter');
  await check('Enter opens the config editor', waitFor(() => page.url().endsWith(`/configs/${CONFIG_ID}`)), page.url());
  await expectVisible('the editor shows the config', page.getByRole('heading', {level: 1}).filter({hasText: 'team/web'}));
  await box.click();
  await box.fill(GROUP);
  const group = page.locator(`[role="option"][data-kind="group"][data-id="${GROUP}"]`);
  await expectVisible('the group is found by name', group);
  await group.click();
  await check('clicking opens the group on the fleet page', waitFor(() => page.url().endsWith(`/fleet?group=${GROUP}`)), page.url());
  const card = page.getByTestId(`fleet-group-${GROUP}`);
  await expectVisible('the group is marked as the one chosen', page.locator(`.fleet-group.chosen[data-testid="fleet-group-${GROUP}"]`));
  await expectVisible('its replicas are shown', card.getByTestId('show-proxies'));
  await card.getByTestId('show-proxies').first().click();
  await expectVisible('its proxies can be opened from there', card.getByTestId('proxy-chip').filter({hasText: WEST}));
  await shot('search-group');
  await card.locator('summary').click();
  await check('closing the group takes it out of the address', waitFor(() => page.url().endsWith('/fleet')), page.url());
  await card.locator('summary').click();
  await check('opening it puts it back', waitFor(() => page.url().endsWith(`/fleet?group=${GROUP}`)), page.url());

  // ---- a deployment by a fragment of its id: its page with the wave timeline
  await box.click();
  await box.fill(DEPLOYMENT_ID.slice(0, 8));
  const dep = page.locator(`[role="option"][data-kind="deployment"][data-id="${DEPLOYMENT_ID}"]`);
  await expectVisible('the deployment is found by a fragment of its id', dep);
  await check('the hit names the config and version', dep.textContent().then((t) => t.includes('team/web v2')), () => dep.textContent());
  await dep.click();
  await check('clicking opens the deployment', waitFor(() => page.url().endsWith(`/deployments/${DEPLOYMENT_ID}`)), page.url());
  await expectVisible('the deployment page shows its wave timeline with the ACKs', page.getByTestId('timeline').locator('[data-testid="timeline-ack"]'));

  // ---- nothing found; Esc closes
  await box.click();
  await box.fill('no-such-thing-anywhere');
  await expectVisible('a fragment matching nothing says so', page.getByText('Nothing matches “no-such-thing-anywhere”'));
  await box.press('Escape');
  await check('Esc closes the list', waitFor(async () => (await box.getAttribute('aria-expanded')) === 'false'));
  await box.fill('');

  // ---- deep links
  await page.goto(`/proxies/${WEST}`);
  await page.getByRole('tab', {name: /Acknowledged/}).click();
  await check('the proxy tab is in the address', waitFor(() => /[?&]tab=acked/.test(page.url())), page.url());
  await page.reload();
  await expectVisible('reloaded, the acknowledged tab is chosen', page.getByRole('tab', {name: /Acknowledged/, selected: true}));
  await page.goto(`/configs/${CONFIG_ID}/history`);
  await page.getByRole('tab', {name: 'Side by side'}).click();
  await check('the history view is in the address', waitFor(() => /[?&]view=side/.test(page.url())), page.url());
  await page.reload();
  await expectVisible('reloaded, the side-by-side view is shown', page.getByTestId('side-by-side').locator('.cm-mergeView'));
  await page.goto(`/proxies?group=${GROUP}&state=connected`);
  await expectVisible('a filtered proxies address lists the proxies', page.locator(`tr[data-node="${WEST}"]`));
  await check('the filters are restored from the address', page.getByLabel('State').inputValue().then((v) => v === 'connected'));
});
