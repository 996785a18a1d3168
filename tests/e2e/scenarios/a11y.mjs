// a11y.mjs — axe-core on every page, the keyboard through the header and the header's
// layout at 1280 and 1024 px (tests/e2e/test_ui_a11y.sh).
import {check, expectVisible, run, waitFor} from '../lib/browser.mjs';
import {axeCheck, focusWalk} from '../lib/a11y.mjs';

const {CONFIG_ID, DEPLOYMENT_ID, MANAGED_ID, GROUP, NODE} = process.env;

/** Opens path, waits for what says it is loaded, takes a screenshot and runs axe. */
async function visit(page, shot, name, path, ready) {
  await page.goto(path);
  await expectVisible(`${name}: the page is shown`, ready(page), 15000);
  await shot(name);
  await axeCheck(page, name);
}

run('a11y', async ({page, shot}) => {
  await page.goto('/');
  await expectVisible('the sign-in page', page.getByTestId('dev-sign-in'));
  await axeCheck(page, 'the sign-in page');
  await page.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('the operator is signed in', page.getByTestId('who').filter({hasText: 'dev-operator'}));

  // ---- the keyboard through the header: skip link first, then search and navigation
  await page.goto('/');
  await page.getByRole('heading', {level: 1}).first().waitFor();
  await page.keyboard.press('Tab');
  await check('Tab first reaches the skip link, and it shows', page.evaluate(() => {
    const a = document.activeElement;
    return a?.classList.contains('skip') && a.getBoundingClientRect().top >= 0;
  }));
  const stops = await focusWalk(page, 'the header', 13);
  await check('Tab reaches the search box and every navigation link in order', (() => {
    const want = ['Sextant', 'Dashboard', 'Proxies', 'Configs', 'Deployments', 'Snapshots', 'Audit', 'Fleet', 'Metrics', 'Alerts'];
    const names = stops.map((s) => s.split(':').slice(1).join(':'));
    let at = 0;
    for (const n of names) if (n === want[at]) at++;
    return at === want.length && stops.some((s) => /search/i.test(s));
  })(), stops.join(', '));
  await page.goto('/');
  await page.getByRole('heading', {level: 1}).first().waitFor();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await check('the skip link moves the focus to the content', waitFor(() => page.evaluate(() => document.activeElement?.id === 'main')));

  const h1 = (p) => p.getByRole('heading', {level: 1});
  await visit(page, shot, 'dashboard', '/', h1);
  await visit(page, shot, 'proxies', '/proxies', (p) => p.locator(`tr[data-node="${NODE}"]`));
  await visit(page, shot, 'proxy', `/proxies/${NODE}`, (p) => p.getByRole('tab', {name: /Should have/}));
  await visit(page, shot, 'proxy-acked-tab', `/proxies/${NODE}?tab=acked`, (p) => p.getByRole('tab', {name: /Acknowledged/, selected: true}));
  await visit(page, shot, 'configs', '/configs', (p) => p.getByTestId('configs-table'));
  await visit(page, shot, 'config-editor', `/configs/${CONFIG_ID}`, (p) => p.locator('.cm-content').filter({hasText: 'b-web-example'}));
  await expectVisible('the spec is valid as loaded', page.getByText('✓ Valid'), 10000);
  await visit(page, shot, 'config-editor-yaml', `/configs/${CONFIG_ID}?format=yaml`, (p) => p.locator('.cm-content').filter({hasText: 'name: b-web-example'}));
  for (const s of await page.locator('.quick-edits summary').all()) await s.click();
  await shot('config-editor-quick-edits');
  await axeCheck(page, 'the editor with the quick-edit forms open');
  await visit(page, shot, 'config-new', '/configs/new', (p) => p.getByRole('heading', {name: 'New config'}));
  await visit(page, shot, 'config-history', `/configs/${CONFIG_ID}/history`, (p) => p.getByTestId('diff-list'));
  await visit(page, shot, 'config-history-side', `/configs/${CONFIG_ID}/history?view=side`, (p) => p.getByTestId('side-by-side').locator('.cm-mergeView'));
  await visit(page, shot, 'config-apply', `/configs/${CONFIG_ID}/apply`, h1);
  await visit(page, shot, 'deployments', '/deployments', h1);
  await visit(page, shot, 'deployment', `/deployments/${DEPLOYMENT_ID}`, (p) => p.getByTestId('timeline').locator('[data-testid="timeline-ack"]'));
  await expectVisible('the deployment shows its propagation curve', page.getByTestId('propagation-curve'));
  await page.getByText('Every ACK in order').click();
  await expectVisible('the ACKs are listed in order', page.locator('.tl-acks a').filter({hasText: NODE}));
  await page.evaluate(() => window.scrollTo(0, 0)); // a full-page shot of a scrolled page draws the sticky header midway
  await shot('deployment-acks');
  await axeCheck(page, 'the deployment with its timeline, propagation and ACK list');
  await visit(page, shot, 'snapshots', '/snapshots', h1);
  await visit(page, shot, 'group-snapshots', `/snapshots/${GROUP}`, h1);
  await visit(page, shot, 'audit', '/audit', (p) => p.getByTestId('audit-table'));
  await visit(page, shot, 'managed-config', `/configs/${MANAGED_ID}`, (p) =>
    p.getByTestId('k8s-route').locator('[data-testid="condition"][data-status="False"]'),
  );
  await visit(page, shot, 'managed-config-resources', `/snapshots/e2e-a11y-k8s?config=${MANAGED_ID}`, (p) => p.getByTestId('produced-resource'));
  await visit(page, shot, 'fleet', '/fleet', (p) => p.getByTestId(`fleet-group-${GROUP}`));
  await visit(page, shot, 'fleet-group', `/fleet?group=${GROUP}`, (p) => p.getByTestId(`fleet-group-${GROUP}`).getByTestId('show-proxies'));
  for (const b of await page.getByTestId(`fleet-group-${GROUP}`).getByTestId('show-proxies').all()) await b.click();
  await expectVisible('the group\'s proxies are shown', page.getByTestId('proxy-chip').filter({hasText: NODE}));
  await page.evaluate(() => window.scrollTo(0, 0)); // a full-page shot of a scrolled page draws the sticky header midway
  await shot('fleet-proxies');
  await axeCheck(page, 'the fleet with a group, its replicas and proxies shown');
  await visit(page, shot, 'metrics', '/stats', (p) => p.getByTestId('chart-latency'));
  await visit(page, shot, 'alerts', '/alerts', (p) => p.getByRole('heading', {name: 'Alerts'}));
  await visit(page, shot, 'no-such-page', '/no/such/page', (p) => p.getByText('No such page'));

  // ---- the header at a laptop's and a small window's width: every entry on one line,
  // none overlapping another, nothing wider than the window
  for (const width of [1280, 1024]) {
    await page.setViewportSize({width, height: 800});
    await page.goto('/fleet');
    await page.getByRole('heading', {level: 1}).first().waitFor();
    await shot(`header-${width}`, page, {fullPage: false});
    const bad = await page.evaluate(() => {
      const top = document.querySelector('header.top');
      const parts = [...top.querySelectorAll('.brand, .nav-link, .search-input, .live, .who, .top-right .btn')];
      const box = (e) => e.getBoundingClientRect();
      const out = [];
      const name = (e) => (e.textContent || e.getAttribute('placeholder') || e.className).trim().slice(0, 20);
      if (document.documentElement.scrollWidth > window.innerWidth) out.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px)`);
      for (const e of parts) {
        const b = box(e);
        if (b.width === 0 || b.right > window.innerWidth || b.left < 0) out.push(`${name(e)} is outside the window`);
        if (e.getClientRects().length > 1 || b.height > 40) out.push(`${name(e)} breaks over lines (${Math.round(b.height)} px high)`);
      }
      if (box(top.querySelector('.search-input')).width < 120) out.push('the search box is narrower than 120 px');
      for (let i = 0; i < parts.length; i++)
        for (let j = i + 1; j < parts.length; j++) {
          const a = box(parts[i]);
          const b = box(parts[j]);
          if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) out.push(`${name(parts[i])} overlaps ${name(parts[j])}`);
        }
      if (box(top).height > 100) out.push(`the header is ${Math.round(box(top).height)} px high`);
      return out;
    });
    await check(`the header at ${width} px: one line per entry, no overlap, no sideways scroll`, bad.length === 0, bad.join('; '));
  }
  await page.setViewportSize({width: 1280, height: 800});

  // ---- the search results, open
  await page.goto('/');
  await page.getByRole('heading', {level: 1}).first().waitFor();
  await page.keyboard.press('/');
  await page.keyboard.type('a11y');
  await expectVisible('the search lists hits', page.getByRole('option').first());
  await shot('search-open');
  await axeCheck(page, 'the open search results');
});
