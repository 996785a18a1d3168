// data_planes.mjs — a group's data planes on its page (tests/e2e/test_ui_data_planes.sh):
// the operator sees the server's default, narrows the group to gateway.control.v1 data
// planes, a config only those take is then accepted, and adding Envoy back is refused
// with the config, the field and the data plane listed, leaving the group as it was.
import {check, expectVisible, rest, run, signInWithToken} from '../lib/browser.mjs';

const {OPERATOR, GROUP, AI_SPEC} = process.env;
const groupPath = `/api/v1/groups/${encodeURIComponent(GROUP)}`;
const planes = async () => (await rest(OPERATOR, 'GET', groupPath)).json?.data_planes;

run('data-planes', async ({page, shot}) => {
  await page.goto(`/snapshots/${encodeURIComponent(GROUP)}`);
  await signInWithToken(page, OPERATOR);
  const box = page.getByTestId('data-planes');
  await expectVisible('the group page shows its data planes', box);
  await expectVisible('the group serves the server default', page.getByText('server default'));
  for (const name of ['envoy', 'grpc', 'control'])
    await check(`${name} is checked by default`, box.locator(`input[name="${name}"]`).isChecked());

  // ---- serve gateway.control.v1 clients only
  await box.locator('input[name="envoy"]').uncheck();
  await box.locator('input[name="grpc"]').uncheck();
  await page.getByTestId('save-data-planes').click();
  await expectVisible('the change is confirmed', page.getByText(`Group ${GROUP} serves control`));
  await check('the server has the group serving control only', JSON.stringify(await planes()) === '["control"]', planes);
  await shot('data-planes-control');

  const created = await rest(OPERATOR, 'POST', '/api/v1/configs', {namespace: 'team', name: 'ai', groups: [GROUP], spec: JSON.parse(AI_SPEC)});
  await check('a config with an AI service is accepted in the group now', created.status === 201, created.text);

  // ---- adding Envoy back is refused while that config lives there
  await box.locator('input[name="envoy"]').check();
  await page.getByTestId('save-data-planes').click();
  const refusal = page.getByTestId('data-planes-refusal');
  await expectVisible('the change is refused', refusal);
  await expectVisible('the refusal names the config and the field', refusal.getByText('configs[team/ai].spec.backends[0].ai_service'));
  await expectVisible('and the data plane that cannot take it', refusal.locator('.badge').filter({hasText: 'envoy'}));
  await shot('data-planes-refused');
  await check('the group still serves control only', JSON.stringify(await planes()) === '["control"]', planes);
});
