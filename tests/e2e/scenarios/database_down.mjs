// database_down.mjs — the web UI of a daemon that cannot reach its database
// (tests/e2e/test_ui_viewer.sh): it loads, signs in (tokens need no database), and says
// that the database is unreachable rather than showing empty pages.
import {check, expectVisible, run, signInWithToken} from '../lib/browser.mjs';

run('database-down', async ({page, shot}) => {
  await page.goto('/');
  await signInWithToken(page, process.env.VIEWER);
  await expectVisible('signing in works without the database', page.getByTestId('who').filter({hasText: 'vera'}));
  await expectVisible('a banner says the database is unreachable', page.getByRole('alert').filter({hasText: 'cannot reach its database'}));
  await expectVisible('the dashboard says why the fleet is missing', page.locator('.error-box').filter({hasText: 'Cannot load the fleet while Sextant cannot reach its database'}));
  await shot('dashboard-database-down');
  await page.getByRole('link', {name: 'Proxies'}).click();
  await expectVisible('the proxies page says so too (not "no proxies yet")', page.locator('.error-box').filter({hasText: 'Cannot load proxies while Sextant cannot reach its database'}));
  await check('the proxies page does not claim there are no proxies', page.getByText('No proxies yet').count().then((n) => n === 0));
});
