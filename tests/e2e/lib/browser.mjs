// browser.mjs — what every browser scenario shares: Chromium through playwright-core
// (no browser download: Debian's chromium, $CHROMIUM), checks that record failures and
// go on, a screenshot of the last state of every scenario (and of the moment a check
// failed), and the page's own errors counted as failures.
//
//   import {run, check, expectVisible} from '../lib/browser.mjs';
//   run('viewer', async ({page, shot}) => { ...; });
//
// Environment: SEXTANT_URL (the server), E2E_OUT (where screenshots go), CHROMIUM.
import fs from 'node:fs';
import path from 'node:path';
import {chromium} from 'playwright-core';

export const URL = process.env.SEXTANT_URL;
const OUT = process.env.E2E_OUT || '.';
const CHROMIUM = process.env.CHROMIUM || '/usr/lib/chromium/chromium';
const LIMIT_MS = Number(process.env.E2E_TIME_LIMIT_MS || 90000);

const T0 = Date.now();
const at = () => `[${((Date.now() - T0) / 1000).toFixed(1)} s]`;
let failures = 0;
let checks = 0;
let page = null;
let shots = 0;
let scenario = 'scenario';

export function pass(what) {
  checks++;
  console.log(`ok: ${what} ${at()}`);
}

export async function fail(what, detail) {
  checks++;
  failures++;
  console.log(`FAIL: ${what} ${at()}${detail === undefined ? '' : ` — ${String(detail).slice(0, 800)}`}`);
  if (page) await shot(`fail-${failures}`).catch(() => {});
}

/** Records a check: cond may be a value or a promise. */
export async function check(what, cond, detail) {
  let ok;
  try {
    ok = await cond;
  } catch (e) {
    await fail(what, e.message);
    return false;
  }
  if (ok) pass(what);
  else await fail(what, typeof detail === 'function' ? await detail() : detail);
  return !!ok;
}

/** Waits until locator is visible (timeout ms) and records it as a check. */
export async function expectVisible(what, locator, timeout = 10000) {
  try {
    await locator.first().waitFor({state: 'visible', timeout});
    pass(what);
    return true;
  } catch (e) {
    await fail(what, e.message.split('\n')[0]);
    return false;
  }
}

/** Records that locator shows nothing (no such element visible now). */
export async function expectAbsent(what, locator) {
  const n = await locator.count();
  let visible = 0;
  for (let i = 0; i < n; i++) if (await locator.nth(i).isVisible()) visible++;
  return check(what, visible === 0, `${visible} visible`);
}

/** Polls fn until it returns truthy (timeout ms); its last value. */
export async function waitFor(fn, timeout = 10000, every = 200) {
  const end = Date.now() + timeout;
  for (;;) {
    let v;
    try {
      v = await fn();
    } catch {
      v = null;
    }
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** A screenshot of p (the scenario's first tab by default) in E2E_OUT; its path. A full-page
 * screenshot lays the page out again at its whole height for a moment; fullPage: false
 * takes the viewport as it is, for a page whose layout is being watched. */
export async function shot(name, p = page, {fullPage = true} = {}) {
  const file = path.join(OUT, `${scenario}-${String(++shots).padStart(2, '0')}-${name}.png`);
  await p.screenshot({path: file, fullPage});
  return file;
}

/** GET/POST to the REST API with a token (fixtures and cross-checks, not the UI). */
export async function rest(token, method, p, body) {
  const res = await fetch(URL + p, {
    method,
    headers: {Authorization: `Bearer ${token}`, ...(body ? {'Content-Type': 'application/json'} : {})},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return {status: res.status, json, text};
}

/** Signs in on the sign-in page by pasting a token. */
export async function signInWithToken(p, token) {
  await p.getByLabel('Bearer token').fill(token);
  await p.getByRole('button', {name: 'Sign in', exact: true}).click();
}

/** Opens the UI and signs in with the dev sign-in's operator button. */
export async function signInAsOperator(p) {
  await p.goto('/');
  await p.getByRole('button', {name: 'Sign in as operator'}).click();
  await expectVisible('the operator is signed in', p.getByTestId('who').filter({hasText: 'dev-operator'}));
}

/** Selects the first occurrence of text in the config editor (CodeMirror's search panel). */
export async function selectInEditor(p, text) {
  await p.locator('.cm-content').click();
  await p.keyboard.press('Control+Home');
  await p.keyboard.press('Control+f');
  await p.keyboard.press('Control+a');
  await p.keyboard.type(text);
  await p.keyboard.press('Enter');
  await p.keyboard.press('Escape');
}

/**
 * Checks the config editor shows the spec (holding text) and that typing into it (as
 * who) changes nothing: the editor is read-only.
 */
export async function expectReadOnlyEditor(p, text, who) {
  const editor = p.locator('.cm-content');
  await expectVisible('the spec is shown in the editor', editor.filter({hasText: text}));
  const before = await editor.textContent();
  await editor.click();
  await p.keyboard.type(`typed by ${who}`);
  await check('typing into the spec changes nothing', editor.textContent().then((t) => t === before));
}

/**
 * Runs a scenario: launches Chromium, opens a page at 1280×800, runs fn, takes the
 * final screenshot (printed), prints the summary and exits non-zero on any failure.
 * Uncaught page errors and console errors (other than failed network loads the test
 * provokes) are failures.
 */
export function run(name, fn, {viewport = {width: 1280, height: 800}, allowConsole = []} = {}) {
  scenario = name;
  const hard = setTimeout(async () => {
    await fail(`scenario ${name} finished within ${LIMIT_MS / 1000} s`);
    process.exit(1);
  }, LIMIT_MS);
  hard.unref();
  (async () => {
    if (!URL) throw new Error('SEXTANT_URL is not set');
    fs.mkdirSync(OUT, {recursive: true});
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
    const context = await browser.newContext({viewport, baseURL: URL});
    context.setDefaultTimeout(10000);
    page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const t = m.text();
      // Answers the scenario provokes (401 of a bad token, 404 of a missing route,
      // 422 of an invalid spec, 503 of a missing database) are logged by Chromium as
      // failed loads; they are the subject of the test, not a bug of the page.
      if (/Failed to load resource: the server responded with a status of (4\d\d|503)/.test(t)) return;
      if (allowConsole.some((re) => re.test(t))) return;
      pageErrors.push(`console error: ${t}`);
    });
    try {
      await fn({page, context, browser, shot});
    } catch (e) {
      await fail(`scenario ${name} ran to its end`, e.stack || e.message);
    }
    try {
      const file = await shot('final');
      console.log(`screenshot of the last state: ${file}`);
    } catch (e) {
      console.log(`could not take the final screenshot: ${e.message}`);
    }
    await check(`no errors in the page (${pageErrors.length})`, pageErrors.length === 0, pageErrors.join('\n'));
    await browser.close();
  })()
    .catch((e) => fail(`scenario ${name} started`, e.stack || e.message))
    .finally(() => {
      console.log(failures ? `${failures} of ${checks} browser checks failed` : `all ${checks} browser checks passed`);
      process.exit(failures ? 1 : 0);
    });
}
