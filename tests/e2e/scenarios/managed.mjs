// managed.mjs — a config the Kubernetes source manages, seen and rolled back in the web
// UI (tests/e2e/test_ui_managed.sh).
import {check, expectAbsent, expectReadOnlyEditor, expectVisible, run, signInAsOperator} from '../lib/browser.mjs';

const {MANAGED_ID, REST_ID} = process.env;
const BADGE = 'Kubernetes · Gateway default/web';

run('managed', async ({page, shot}) => {
  await signInAsOperator(page);

  // ---- the list: the managed config carries its source, the REST config none
  await page.getByRole('link', {name: 'Configs', exact: true}).click();
  const table = page.getByTestId('configs-table');
  const managedRow = table.locator('tr').filter({has: page.locator(`a[href="/configs/${MANAGED_ID}"]`)});
  const restRow = table.locator('tr').filter({has: page.locator(`a[href="/configs/${REST_ID}"]`)});
  await expectVisible('the list shows the managed config with its Gateway', managedRow.getByTestId('source-badge').filter({hasText: BADGE}));
  await expectVisible('the list shows the REST config', restRow);
  await check('the REST config carries no source badge', restRow.getByTestId('source-badge').count().then((n) => n === 0));
  await shot('list');

  // ---- the managed config's page: read-only, says why, History and Apply stay
  await managedRow.getByRole('link', {name: /web/}).click();
  await expectVisible('the page shows version 2', page.getByTestId('config-version').filter({hasText: '2'}));
  await expectVisible('the page shows the source badge', page.locator('.page-head').getByTestId('source-badge').filter({hasText: BADGE}));
  await expectVisible('the page says the config is managed and where to change it', page.getByTestId('read-only').filter({hasText: 'Managed by Kubernetes'}).filter({hasText: 'Gateway default/web'}));
  await expectAbsent('no save button is offered', page.getByTestId('save'));
  await expectAbsent('no change message is asked for', page.getByTestId('save-message'));
  await expectReadOnlyEditor(page, 'web.example', 'an operator');
  await expectVisible('History is offered', page.getByRole('link', {name: 'History'}));
  await expectVisible('Apply is offered', page.getByRole('link', {name: 'Apply…'}));
  await expectAbsent('no quick-edit forms are offered', page.getByTestId('quick-edits'));
  await page.getByTestId('format-yaml').click();
  await expectVisible('as YAML the spec is shown too', page.locator('.cm-content').filter({hasText: 'name: b-web-example'}));
  const yamlBefore = await page.locator('.cm-content').textContent();
  await page.locator('.cm-content').click();
  await page.keyboard.type('typed by an operator');
  await check('typing into the YAML changes nothing', page.locator('.cm-content').textContent().then((t) => t === yamlBefore));
  await expectVisible('the page links the translated objects in the current snapshot of its group', page.getByTestId('translated-link').filter({hasText: 'e2e-managed'}));
  await expectVisible('the page says where the status written back is read', page.getByTestId('status-command').filter({hasText: 'kubectl -n default get gateway web -o yaml'}));
  await expectVisible('no status was written back (no controller runs here): the page says so', page.getByTestId('k8s-status-none'));
  await shot('managed-page');
  await page.getByTestId('translated-link').click();
  await check('the link opens the group snapshots filtered to this config', page.waitForURL(`**/snapshots/e2e-managed?config=${MANAGED_ID}`).then(() => true));
  await expectVisible('which hold the translated listener', page.getByTestId('produced-resource').filter({hasText: 'l-web-example'}));
  await expectVisible('... shown as JSON too', page.locator('.cm-content').filter({hasText: 'l-web-example'}));

  // ---- the REST config's page still offers saving
  await page.goto(`/configs/${REST_ID}`);
  await expectVisible('the REST config offers saving', page.getByTestId('save'));
  await expectAbsent('the REST config has no source badge', page.getByTestId('source-badge'));

  // ---- a rollback of the managed config works like any other
  await page.goto(`/configs/${MANAGED_ID}/history`);
  await expectVisible('the history shows the source badge', page.getByTestId('source-badge').filter({hasText: BADGE}));
  await expectVisible('the history offers viewing the spec, not editing it', page.getByRole('link', {name: 'View spec'}));
  await page.locator('[data-version="1"]').getByRole('button', {name: 'Roll back to v1'}).click();
  const dialog = page.getByRole('dialog', {name: 'Roll back to version 1?'});
  await expectVisible('a confirmation dialog opens', dialog);
  await dialog.getByTestId('confirm-rollback').click();
  await expectVisible('the rollback is confirmed', page.getByText("Rolled back: version 3 has version 1's spec"));
  await expectVisible('version 3 appears as a rollback of v1 by the operator', page.locator('[data-version="3"]').filter({hasText: 'rollback of v1'}).filter({hasText: 'dev-operator'}));
  await shot('rolled-back');
});
