// rollback_force.mjs — republishing a snapshot that validation refuses, from the web UI
// (tests/e2e/test_ui_rollback_force.sh).
import {expectAbsent, expectVisible, run, signInWithToken} from '../lib/browser.mjs';

const {OPERATOR, ADMIN, GROUP} = process.env;

/** Opens snapshot v1 of the group and asks to republish it; returns the dialog. */
async function republishV1(page) {
  await page.goto(`/snapshots/${encodeURIComponent(GROUP)}`);
  await page.getByTestId('snapshot-versions').getByRole('button', {name: /^v1/}).click();
  await page.getByTestId('republish').click();
  const dialog = page.getByRole('dialog', {name: `Republish snapshot v1 of ${GROUP}?`});
  await expectVisible('the republish dialog opens', dialog);
  await dialog.getByTestId('confirm-republish').click();
  return dialog;
}

run('rollback_force', async ({page, shot}) => {
  // ---- an operator: refused, and not offered force
  await page.goto('/');
  await signInWithToken(page, OPERATOR);
  // Signed in before navigating away: a navigation during the sign-in would lose it.
  await expectVisible('the operator is signed in', page.getByTestId('who').filter({hasText: 'olga'}));
  let dialog = await republishV1(page);
  const refused = dialog.getByTestId('republish-refused');
  await expectVisible('the dialog shows validation refusing the snapshot', refused);
  await expectVisible('... with the expired certificate at its path in the snapshot',
    refused.locator('li').filter({hasText: 'snapshot.secrets[0].cert_pem'}).filter({hasText: 'expired'}));
  await expectVisible('... and tells the operator the role may not force it', refused.getByText('Your role may not force'));
  await expectAbsent('the operator is offered no force button', dialog.getByTestId('confirm-force-republish'));
  await shot('republish-refused-operator');
  await dialog.getByRole('button', {name: 'Cancel'}).click();

  // ---- an admin: refused, offered force, forces
  await page.getByRole('button', {name: 'Sign out'}).click();
  await expectVisible('signing out shows the sign-in page', page.getByLabel('Bearer token'));
  await signInWithToken(page, ADMIN);
  await expectVisible('the admin is signed in', page.getByTestId('who').filter({hasText: 'e2e-admin'}));
  dialog = await republishV1(page);
  await expectVisible('the admin sees the same refusal', dialog.getByTestId('republish-refused'));
  const force = dialog.getByTestId('confirm-force-republish');
  await expectVisible('the admin is offered "Force republish"', force);
  await shot('republish-refused-admin');
  await force.click();
  await expectVisible('the forced republish is confirmed', page.getByText(`Group ${GROUP} now serves v1's content as v3 (forced past validation)`));
  await expectVisible('v3 is the snapshot being served', page.getByTestId('snapshot-versions').locator('li').first().filter({hasText: 'v3'}).filter({hasText: 'serving'}));
}, {allowConsole: [/Failed to load resource: the server responded with a status of 422/]});
