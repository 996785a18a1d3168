// config_edit.mjs — an operator edits a config (tests/e2e/test_ui_config_edit.sh).
import {check, expectAbsent, expectVisible, rest, run, selectInEditor, waitFor} from '../lib/browser.mjs';

const {ADMIN, CONFIG_ID, NODES} = process.env;
const nodes = NODES.split(' ');
const MESSAGE = 'e2e: endpoint on 8081, 2s request timeout';

run('config-edit', async ({page, shot}) => {
  await page.goto('/');
  await expectVisible('the sign-in page offers the one-click dev sign-in', page.getByTestId('dev-sign-in'));
  await page.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('the operator is signed in', page.getByTestId('who').filter({hasText: 'dev-operator'}));

  await page.getByRole('link', {name: 'Configs', exact: true}).click();
  await expectVisible('an operator may create configs', page.getByRole('link', {name: 'New config'}));
  await page.getByTestId('configs-table').getByRole('link', {name: /web/}).click();
  await expectVisible('the editor opens with the spec', page.locator('.cm-content').filter({hasText: 'b-web-example'}));
  await expectVisible('version 1 is valid as loaded', page.getByText('✓ Valid'));

  // ---- an error, inline, as you type
  await selectInEditor(page, '"port": 8080,');
  await page.keyboard.type('"port": 70000,');
  await expectVisible('the out-of-range port is underlined', page.locator('.cm-lintRange-error').filter({hasText: '70000'}), 8000);
  const problems = page.getByTestId('problems');
  await expectVisible('the problems list names the field', problems.filter({hasText: 'spec.backends[0].endpoints[0].port'}));
  await expectVisible('the problems list says what is wrong', problems.filter({hasText: '65535'}));
  await check('the problem is on the line of the port', problems.textContent().then((t) => /line \d+/.test(t)));
  await page.locator('.cm-lintRange-error').first().hover();
  await expectVisible('hovering the error shows the message', page.locator('.cm-tooltip-lint').filter({hasText: '65535'}));
  await check('saving is held back while the spec has problems', page.getByTestId('save').isDisabled());
  await shot('inline-error');

  // ---- completion from the schema
  await selectInEditor(page, '"protocol": "http",');
  await page.keyboard.press('End');
  await page.keyboard.press('Enter');
  await page.keyboard.type('"req');
  const popup = page.locator('.cm-tooltip-autocomplete');
  await expectVisible('completion offers the backend field request_timeout', popup.filter({hasText: 'request_timeout'}));
  await expectVisible('the completion says the field is a duration', popup.filter({hasText: 'duration'}));
  await shot('completion');
  await page.keyboard.press('Enter');
  await page.keyboard.type('2s');

  // ---- fix, then save
  await selectInEditor(page, '70000');
  await page.keyboard.type('8081');
  await expectVisible('the fixed spec is valid again', page.getByText('✓ Valid'), 8000);
  await check('no error is underlined any more', waitFor(async () => (await page.locator('.cm-lintRange-error').count()) === 0));
  await page.getByTestId('save-message').fill(MESSAGE);
  await page.getByTestId('save').click();
  await expectVisible('saving says version 2 was written', page.getByText('Saved version 2'));
  await expectVisible('the page now shows version 2', page.getByTestId('config-version').filter({hasText: '2'}));
  await shot('saved');

  // ---- history and diff
  await page.getByRole('link', {name: 'History'}).click();
  const v2 = page.locator('[data-version="2"]');
  await expectVisible('the history lists version 2 with its message', v2.filter({hasText: MESSAGE}));
  await expectVisible('version 2 is marked latest and live', v2.filter({hasText: 'latest'}).filter({hasText: 'live'}));
  const diff = page.getByTestId('diff-list');
  await expectVisible('the diff shows the port change', diff.locator('li.diff-changed').filter({hasText: 'endpoints[0].port'}).filter({hasText: '8080'}).filter({hasText: '8081'}));
  await expectVisible('the diff shows the added field', diff.locator('li.diff-added').filter({hasText: 'request_timeout'}));
  await page.getByRole('tab', {name: 'Side by side'}).click();
  await expectVisible('the side-by-side view shows both versions', page.getByTestId('side-by-side').locator('.cm-mergeView'));
  await check('the side-by-side view marks the changed lines', waitFor(async () => (await page.locator('.cm-changedLine').count()) > 0));
  await shot('history-diff');

  // ---- the proxies follow
  await page.getByRole('link', {name: 'Proxies'}).click();
  for (const n of nodes)
    await check(`${n} acknowledges the new snapshot v2`, waitFor(async () => (await page.locator(`tr[data-node="${n}"]`).getByTestId('acked').textContent()).trim() === 'v2', 15000));

  // ---- someone else saves meanwhile: no lost update
  await page.goto(`/configs/${CONFIG_ID}`);
  await expectVisible('the editor opens version 2', page.getByTestId('config-version').filter({hasText: '2'}));
  await page.locator('.cm-content').filter({hasText: 'b-web-example'}).waitFor();
  const latest = await rest(ADMIN, 'GET', `/api/v1/configs/${CONFIG_ID}`);
  const spec = latest.json.spec;
  spec.backends[0].connect_timeout = '3s';
  const put = await rest(ADMIN, 'PUT', `/api/v1/configs/${CONFIG_ID}`, {spec, message: 'changed by someone else'});
  await check('another user saves version 3 meanwhile', put.status === 200 && put.json.version === 3, put.text);
  await selectInEditor(page, '"connect_timeout": "1s"');
  await page.keyboard.type('"connect_timeout": "5s"');
  await expectVisible('the edit validates', page.getByText('✓ Valid'), 8000);
  await page.getByTestId('save').click();
  await expectVisible('saving over a newer version is refused and explained', page.getByTestId('save-error').filter({hasText: 'Version 3 was saved meanwhile'}));
  await shot('conflict');
  await page.getByRole('button', {name: 'Load version 3'}).click();
  await expectVisible('loading the newer version shows version 3', page.getByTestId('config-version').filter({hasText: '3'}));
  await expectVisible('and its spec', page.locator('.cm-content').filter({hasText: '"3s"'}));
  await expectAbsent('the conflict message is gone', page.getByTestId('save-error'));

  // ---- the audit log
  await page.getByRole('link', {name: 'Audit'}).click();
  const table = page.getByTestId('audit-table');
  await expectVisible('the audit log lists the dev sign-in', table.locator('tr[data-action="auth.dev_sign_in"]').filter({hasText: 'dev-operator'}));
  await page.getByLabel('Action').fill('config.update');
  await page.getByRole('button', {name: 'Filter'}).click();
  await expectVisible('filtered by action, the audit log lists the update from the browser', table.locator('tr[data-action="config.update"]').filter({hasText: 'dev-operator'}));
  await check('the filter leaves only updates', waitFor(async () => {
    const actions = await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action')));
    return actions.length > 0 && actions.every((a) => a === 'config.update');
  }));
  await check('the filter is in the address', /action=config\.update/.test(page.url()), page.url());
});
