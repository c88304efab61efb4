import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildConsole } from '../../scripts/build-console.ts';
import { defer } from '../helpers/app.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
/** In CI a missing browser is a failure, not a silent skip. */
export const skipWithoutChromium = !haveChromium && !process.env.CI ? `no Chromium at ${CHROMIUM}` : false;

/**
 * The console built from this checkout's sources into a directory of the test file's own (the same
 * build `npm ci` makes), so the tests run the current sources whatever build/console holds.
 */
export async function builtConsole(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oas-console-'));
  defer(undefined, async () => fs.rmSync(dir, { recursive: true, force: true }));
  return (await buildConsole(path.join(dir, 'console'))).dir;
}

/** One Chromium for a test file, closed when its tests end. */
export async function launchBrowser(): Promise<Browser> {
  assert.ok(haveChromium, `Chromium is required in CI (looked for ${CHROMIUM})`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  defer(undefined, () => browser.close());
  return browser;
}

/** What went wrong in a page while a test used it: failed or refused requests, CSP violations, uncaught errors, other hosts. */
export interface PageTrouble {
  failed: string[];
  cspErrors: string[];
  pageErrors: string[];
  otherHosts: string[];
  /** 4xx/5xx answers, for the tests that expect none (or exactly some) */
  errorAnswers: string[];
}

export async function newConsolePage(browser: Browser, base: string): Promise<{ page: Page; trouble: PageTrouble }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  // a liveness bound, not a speed: CI runs two test batches beside Chromium on two cores
  page.setDefaultTimeout(20000);
  const origin = new URL(base).origin;
  const trouble: PageTrouble = { failed: [], cspErrors: [], pageErrors: [], otherHosts: [], errorAnswers: [] };
  page.on('requestfailed', (r) => {
    // a test's page.goto cancels what the page had in flight (a poll): that is no failure of the page
    if (r.failure()?.errorText !== 'net::ERR_ABORTED') trouble.failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`);
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(`${origin}/`) && !r.url().startsWith('data:')) trouble.otherHosts.push(r.url());
  });
  page.on('response', (r) => {
    if (r.status() >= 400) trouble.errorAnswers.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && /content security policy|trusted type/i.test(m.text())) trouble.cspErrors.push(m.text());
  });
  page.on('pageerror', (e) => trouble.pageErrors.push(e.message));
  return { page, trouble };
}

/** Nothing failed, broke the policy or left the origin; `expectedErrors` are the error answers the test caused on purpose. */
export function assertNoTrouble(trouble: PageTrouble, expectedErrors: RegExp[] = []): void {
  assert.deepEqual(trouble.failed, [], 'no request of the page failed');
  assert.deepEqual(trouble.cspErrors, [], 'no Content-Security-Policy or Trusted Types violation');
  assert.deepEqual(trouble.pageErrors, [], 'no uncaught error in the page');
  assert.deepEqual(trouble.otherHosts, [], 'nothing is fetched from another host');
  assert.deepEqual(
    trouble.errorAnswers.filter((a) => !expectedErrors.some((e) => e.test(a))),
    [],
    'no unexpected error answer',
  );
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's serious and critical violations on the page as it is now. axe is evaluated through
 * the DevTools protocol, as a tester's extension would run it: the page's policy allows no inline
 * script, so it could not be added as a <script>.
 */
export async function assertAccessible(page: Page, where: string): Promise<void> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    type Violation = { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] };
    const page = globalThis as unknown as { axe: { run: (context: unknown, options: object) => Promise<{ violations: Violation[] }> }; document: unknown };
    const result = await page.axe.run(page.document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  const grave = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(grave, [], `axe-core on ${where}: ${JSON.stringify(grave, null, 2)}`);
}

/**
 * `assertAccessible` at `width` px wide (the viewport stays so), and no sideways scrolling there;
 * with `screenshot`, the page is saved under that name first.
 */
export async function assertAccessibleAt(page: Page, width: number, where: string, screenshot?: string): Promise<void> {
  await page.setViewportSize({ width, height: 900 });
  if (screenshot) await page.screenshot({ path: `${screenshotDir()}/${screenshot}`, fullPage: true });
  const at = `${where} at ${width} px`;
  await assertAccessible(page, at);
  const [scrollWidth, viewport] = (await page.evaluate('[document.scrollingElement.scrollWidth, innerWidth]')) as [number, number];
  assert.ok(scrollWidth <= viewport, `${at}: the page is ${scrollWidth} px wide in a ${viewport} px viewport`);
}

/** `assertAccessibleAt` 390 px (the screenshot is taken there), then at 1366 px, where the viewport stays. */
export async function assertAccessibleAtBothWidths(page: Page, where: string, screenshot?: string): Promise<void> {
  try {
    await assertAccessibleAt(page, 390, where, screenshot);
  } finally {
    await page.setViewportSize({ width: 1366, height: 900 });
  }
  await assertAccessibleAt(page, 1366, where);
}

/** Signs in through the console's form. */
export async function signIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** The names of the links in the main navigation. */
export async function navigationLinks(page: Page): Promise<string[]> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('link').allInnerTexts();
}

/** Goes to a console page by its navigation link and waits for its heading. */
export async function openFromNavigation(page: Page, link: string, heading = link): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
}

/** The access token the console keeps in the tab's session storage. */
export async function consoleAccessToken(page: Page): Promise<string> {
  const saved = await page.evaluate(() => sessionStorage.getItem('oas-console-session'));
  const token = (JSON.parse(saved ?? '{}') as { accessToken?: string }).accessToken;
  assert.ok(token, 'the console keeps a session in this tab');
  return token;
}

export function screenshotDir(): string {
  fs.mkdirSync('.tmp', { recursive: true });
  return '.tmp';
}
