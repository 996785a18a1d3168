// keyboard.mjs — one workflow with the keyboard only, the focus visible at every step
// (tests/e2e/test_ui_keyboard.sh): the search box to a deployment, through its
// timeline's ACKs, back up to the navigation, the fleet page, a group's replicas and
// proxies, and a proxy's page.
import {check, expectVisible, run, signInAsOperator, waitFor} from '../lib/browser.mjs';
import {focused, tabTo} from '../lib/a11y.mjs';

const {DEPLOYMENT_ID, GROUP, NODE} = process.env;

/** Records that the focused element shows a focus ring inside the window. */
async function ringShown(page, what) {
  const f = await focused(page);
  await check(`${what}: the focus is visible`, !!f && f.visible && f.inView, () => JSON.stringify(f));
}

run('keyboard', async ({page, shot}) => {
  await signInAsOperator(page);
  await page.getByRole('heading', {level: 1}).first().waitFor();

  // ---- "/" to the search box; a fragment of the deployment's id; ↓ to its hit; Enter
  await page.keyboard.press('/');
  await check('"/" puts the focus in the search box', page.evaluate(() => document.activeElement?.id === 'search-input'));
  await ringShown(page, 'the search box');
  await page.keyboard.type(DEPLOYMENT_ID.slice(0, 8));
  const hit = page.locator(`[role="option"][data-kind="deployment"][data-id="${DEPLOYMENT_ID}"]`);
  await expectVisible('the deployment is listed', hit);
  const activeKind = () => page.evaluate(() => {
    const id = document.getElementById('search-input')?.getAttribute('aria-activedescendant');
    const o = id && document.getElementById(id);
    return o ? `${o.getAttribute('data-kind')}:${o.getAttribute('data-id')}` : null;
  });
  for (let i = 0; i < 8 && (await activeKind()) !== `deployment:${DEPLOYMENT_ID}`; i++) await page.keyboard.press('ArrowDown');
  await check('↓ makes the deployment the active option', activeKind().then((k) => k === `deployment:${DEPLOYMENT_ID}`), activeKind);
  await shot('search', page, {fullPage: false});
  await page.keyboard.press('Enter');
  await check('Enter opens the deployment', waitFor(() => page.url().endsWith(`/deployments/${DEPLOYMENT_ID}`)), page.url());
  await expectVisible('its wave timeline shows the ACKs', page.getByTestId('timeline').locator('[data-testid="timeline-ack"]'));
  await check('the focus moved to the page content', waitFor(() => page.evaluate(() => document.activeElement?.id === 'main')));

  // ---- through the timeline: its list of ACKs opens with Enter, each ACK is a link
  await tabTo(page, 'the timeline\'s list of ACKs', {selector: 'summary', text: 'Every ACK in order'});
  await page.keyboard.press('Enter');
  await expectVisible('Enter opens the list of ACKs', page.locator('.tl-acks a').first());
  await page.keyboard.press('Tab');
  await check('Tab goes to the first ACK, a link to its proxy', page.evaluate(() => !!document.activeElement?.closest('.tl-acks') && document.activeElement.tagName === 'A'));
  await ringShown(page, 'the first ACK');
  await shot('timeline-ack', page, {fullPage: false});

  // ---- back up to the navigation and to the fleet page
  await tabTo(page, 'the Fleet link of the navigation', {selector: 'a.nav-link', text: 'Fleet'}, {back: true, max: 80});
  await page.keyboard.press('Enter');
  await check('Enter opens the fleet page', waitFor(() => new URL(page.url()).pathname === '/fleet'), page.url());
  const card = page.getByTestId(`fleet-group-${GROUP}`);
  await expectVisible('the fleet page shows the group', card);
  await check('the focus moved to the page content', waitFor(() => page.evaluate(() => document.activeElement?.id === 'main')));

  // ---- a group's replicas (Enter on its summary), a replica's proxies, a proxy
  await tabTo(page, `the replicas of ${GROUP}`, {selector: `[data-testid="fleet-group-${GROUP}"] summary`});
  await page.keyboard.press('Enter');
  await expectVisible('Enter shows the group\'s replicas', card.getByTestId('show-proxies'));
  await check('the address names the open group', waitFor(() => page.url().endsWith(`/fleet?group=${GROUP}`)), page.url());
  await tabTo(page, 'the button showing a replica\'s proxies', {selector: '[data-testid="show-proxies"]'}, {max: 5});
  await page.keyboard.press('Enter');
  await expectVisible('Enter shows the replica\'s proxies', card.getByTestId('proxy-chip').filter({hasText: NODE}));
  await check('the button says it is expanded', page.evaluate(() => document.activeElement?.getAttribute('aria-expanded') === 'true'));
  await ringShown(page, 'the expanded button');
  await tabTo(page, `proxy ${NODE}`, {selector: '[data-testid="proxy-chip"]', text: NODE}, {max: 5});
  await shot('fleet-proxies', page, {fullPage: false});
  await page.keyboard.press('Enter');
  await check('Enter opens the proxy page', waitFor(() => page.url().endsWith(`/proxies/${NODE}`)), page.url());
  await expectVisible('the proxy page names it', page.getByRole('heading', {level: 1}).filter({hasText: NODE}));
});
