// yaml_edit.mjs — an operator edits a config as YAML (tests/e2e/test_ui_yaml_edit.sh).
import {check, expectVisible, rest, run, selectInEditor, signInAsOperator} from '../lib/browser.mjs';

const {ADMIN, CONFIG_ID} = process.env;
const MESSAGE = 'e2e: edited as YAML';

/** Same JSON value, whatever the order of object keys. */
function same(a, b) {
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return same(ka, kb) && ka.every((k) => same(a[k], b[k]));
  }
  return a === b;
}

run('yaml-edit', async ({page, shot}) => {
  const v1 = await rest(ADMIN, 'GET', `/api/v1/configs/${CONFIG_ID}`);
  await check('version 1 is there', v1.status === 200 && v1.json.version === 1, v1.text);

  await signInAsOperator(page);
  await page.goto(`/configs/${CONFIG_ID}`);
  await expectVisible('the editor opens with the spec as JSON', page.locator('.cm-content').filter({hasText: '"b-web-example"'}));
  await expectVisible('version 1 is valid as loaded', page.getByText('✓ Valid'), 10000);

  // ---- to YAML, with the keyboard
  await page.getByTestId('format-yaml').focus();
  await page.keyboard.press('Enter');
  await expectVisible('the editor now holds YAML', page.locator('.cm-content').filter({hasText: 'name: b-web-example'}));
  await check('the YAML button is pressed', page.getByTestId('format-yaml').getAttribute('aria-pressed').then((v) => v === 'true'));
  await check('the address says the format', /format=yaml/.test(page.url()), page.url());
  await expectVisible('the page says comments are not kept', page.getByTestId('yaml-note').filter({hasText: 'comments'}));
  await expectVisible('the YAML is valid', page.getByText('✓ Valid'), 10000);

  // ---- a problem found by the server lands on the YAML line
  await selectInEditor(page, 'port: 10080');
  await page.keyboard.type('port: 70000');
  await expectVisible('the out-of-range port is underlined in the YAML', page.locator('.cm-lintRange-error').filter({hasText: '70000'}), 10000);
  await expectVisible('the problems list names the field', page.getByTestId('problems').filter({hasText: 'spec.listeners[0].port'}));
  await check('saving is held back', page.getByTestId('save').isDisabled());
  await shot('yaml-problem');
  await selectInEditor(page, '70000');
  await page.keyboard.type('10081');

  // ---- a YAML syntax error
  await selectInEditor(page, 'connect_timeout: 1s');
  await page.keyboard.type('connect_timeout: [3s');
  await expectVisible('a YAML syntax error is reported with its line', page.getByText(/YAML syntax error at line \d+/), 10000);
  await selectInEditor(page, 'connect_timeout: [3s');
  await page.keyboard.type('connect_timeout: 3s # slower start');
  await expectVisible('fixed, the YAML is valid again', page.getByText('✓ Valid'), 10000);

  // ---- the quick-edit forms write into the same document
  const quick = page.getByTestId('quick-edits');
  await quick.getByText('Change a timeout').click();
  const tform = quick.getByRole('form', {name: 'Change a timeout'});
  await tform.getByLabel('Timeout').selectOption('request_timeout');
  await tform.getByLabel('Value').fill('soon');
  await tform.getByRole('button', {name: 'Set the timeout'}).click();
  await expectVisible('a timeout without a unit is refused with a message', page.getByTestId('quick-timeout-error').filter({hasText: '2s'}));
  await tform.getByLabel('Value').fill('2.5s');
  await tform.getByLabel('Value').press('Enter');
  await expectVisible('the timeout is in the YAML', page.locator('.cm-content').filter({hasText: 'request_timeout: 2.5s'}));

  await quick.getByText("Move a backend's endpoints").click();
  const eform = quick.getByRole('form', {name: "Move a backend's endpoints"});
  await eform.getByLabel('New endpoints').fill('10.0.0.7:8080\n10.0.0.8:8080');
  await eform.getByRole('button', {name: 'Move the endpoints'}).click();
  await expectVisible('the new endpoints are in the YAML', page.locator('.cm-content').filter({hasText: 'address: 10.0.0.8'}));

  await quick.getByText('Add a route').click();
  const rform = quick.getByRole('form', {name: 'Add a route'});
  await rform.getByLabel('Route name').fill('r-api');
  await rform.getByLabel('Hostname').fill('web.example');
  await rform.getByLabel('Path prefix').fill('/api');
  await rform.getByLabel('Attach to listener').selectOption('l-web-example');
  await rform.getByRole('button', {name: 'Add the route'}).click();
  await expectVisible('the route is in the YAML', page.locator('.cm-content').filter({hasText: 'name: r-api'}));
  await expectVisible('the edited YAML is valid', page.getByText('✓ Valid'), 10000);
  await shot('yaml-quick-edits');

  // ---- save
  await page.getByTestId('save-message').fill(MESSAGE);
  await page.getByTestId('save').click();
  await expectVisible('saving says version 2 was written', page.getByText('Saved version 2'));

  // What was stored is the JSON equivalent of the same edits made to version 1's spec.
  const want = structuredClone(v1.json.spec);
  want.listeners[0].port = 10081;
  want.listeners[0].attached_routes.push('r-api');
  want.backends[0].connect_timeout = '3s';
  want.backends[0].request_timeout = '2.5s';
  want.backends[0].endpoints = [
    {address: '10.0.0.7', port: 8080, healthy: true},
    {address: '10.0.0.8', port: 8080, healthy: true},
  ];
  want.http_routes.push({
    name: 'r-api',
    namespace: 'team',
    hostnames: ['web.example'],
    rules: [{name: 'all', matches: [{path: '/api', path_type: 'PathPrefix'}], backend_refs: [{name: 'b-web-example', namespace: 'team', port: 8080}]}],
  });
  const v2 = await rest(ADMIN, 'GET', `/api/v1/configs/${CONFIG_ID}`);
  await check('the stored spec is the JSON equivalent of the YAML', v2.json?.version === 2 && same(v2.json.spec, want), () => `stored ${JSON.stringify(v2.json?.spec)}\nwanted ${JSON.stringify(want)}`);

  // ---- the address restores YAML; back to JSON shows the same spec
  await page.reload();
  await expectVisible('reloaded, the editor is in YAML again', page.locator('.cm-content').filter({hasText: 'request_timeout: 2.5s'}));
  await page.getByTestId('format-json').click();
  await expectVisible('back in JSON, the editor shows the stored spec', page.locator('.cm-content').filter({hasText: '"request_timeout": "2.5s"'}));
  await check('the address no longer says YAML', !/format=yaml/.test(page.url()), page.url());
});
