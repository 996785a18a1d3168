// a11y.mjs — the accessibility checks browser scenarios share: axe-core (npm, run in
// the page) with its WCAG 2.x A/AA and best-practice rules, and a walk with Tab that
// checks every focused element shows a focus ring.
//
//   import {axeCheck, focusWalk} from '../lib/a11y.mjs';
//   await axeCheck(page, 'dashboard');            // records a check; no serious/critical
//   await focusWalk(page, 'dashboard', 12);       // Tab 12 times; every stop visible
//   await tabTo(page, 'the Fleet link', {selector: 'a.nav-link', text: 'Fleet'}, {back: true});
import fs from 'node:fs';
import {createRequire} from 'node:module';
import {check} from './browser.mjs';

// Evaluated through the DevTools protocol, which the page's Content-Security-Policy
// (script-src 'self') does not apply to, unlike an injected <script>.
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Runs axe-core on the page as it is; records a check that no violation is serious
 * or critical (the failure lists each rule, its impact and the first elements). Returns
 * the violations (all impacts). */
export async function axeCheck(page, what) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE);
  const result = await page.evaluate(async () =>
    // eslint-disable-next-line no-undef
    axe.run(document, {resultTypes: ['violations'], runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}}),
  );
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const describe = () =>
    bad
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`)
      .join('\n');
  await check(`axe: no serious or critical violation on ${what}`, bad.length === 0, describe);
  return result.violations;
}

// In the page: what the focused element is, whether it shows a focus indicator (an
// outline or a box shadow, on it or on the editor around it), and whether it lies in
// the window below the sticky header.
const FOCUSED = () => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const ring = (e) => {
    const cs = getComputedStyle(e);
    return (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== 'none';
  };
  const host = el.closest('.cm-editor');
  const name = (el.getAttribute('aria-label') || el.textContent || el.getAttribute('placeholder') || '').trim().slice(0, 40);
  const b = el.getBoundingClientRect();
  // Not under the sticky header either (unless it is in the header).
  const top = document.querySelector('header.top');
  const under = top && !top.contains(el) ? top.getBoundingClientRect().bottom : 0;
  const inView = b.width > 0 && b.height > 0 && b.top >= under - 1 && b.top < window.innerHeight && b.right > 0 && b.left < window.innerWidth;
  return {stop: `${el.tagName.toLowerCase()}:${name}`, visible: ring(el) || (host ? ring(host) : false), inView};
};

/** The focused element as "tag:name", whether it shows a focus ring and lies in the
 * window; null when nothing is focused. */
export function focused(page) {
  return page.evaluate(FOCUSED);
}

/** Presses Tab (Shift+Tab with back) until the focused element matches selector (and
 * holds text, when given), at most max times; records that it got there and that every
 * element on the way showed a focus ring inside the window. Returns the stops. */
export async function tabTo(page, what, {selector, text}, {back = false, max = 60} = {}) {
  const stops = [];
  const unseen = [];
  let found = false;
  for (let i = 0; i < max && !found; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const s = await page.evaluate(FOCUSED);
    if (!s) continue;
    stops.push(s.stop);
    if (!s.visible || !s.inView) unseen.push(`${s.stop}${s.visible ? '' : ' (no ring)'}${s.inView ? '' : ' (out of view)'}`);
    found = await page.evaluate(
      ({selector, text}) => {
        const el = document.activeElement;
        return !!el && el.matches(selector) && (!text || (el.textContent || '').includes(text));
      },
      {selector, text},
    );
  }
  await check(`${back ? 'Shift+Tab' : 'Tab'} reaches ${what} (${stops.length} stops)`, found, () => stops.join(', '));
  await check(`on the way to ${what}, every element shows where the focus is`, unseen.length === 0, () => `no visible focus on: ${unseen.join(', ')}`);
  return stops;
}

/** Presses Tab n times from where the focus is; records that each element reached
 * shows a focus indicator (an outline or a box shadow, on it or on the editor around
 * it). Returns the stops as "tag:name" strings. */
export async function focusWalk(page, what, n) {
  const stops = [];
  const unseen = [];
  for (let i = 0; i < n; i++) {
    await page.keyboard.press('Tab');
    const s = await page.evaluate(FOCUSED);
    if (!s) continue;
    stops.push(s.stop);
    if (!s.visible) unseen.push(s.stop);
  }
  await check(`${what}: every element Tab reaches shows where the focus is (${stops.length} stops)`, unseen.length === 0, `no focus ring on: ${unseen.join(', ')}`);
  return stops;
}
