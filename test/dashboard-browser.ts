import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, type TestContext } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import { type Browser, chromium, type ConsoleMessage, type Page } from 'playwright-core';
import { createAccount } from '../src/accounts/accounts.service.js';
import type { Plan } from '../src/config.js';
import { DASHBOARD_DIR } from '../src/dashboard/dashboard.routes.js';
import { onCleanup, type TestApp } from './helpers.js';

/** What the dashboard's browser tests share: an account that signs in, Chromium pages, axe, screenshots. */

export const PASSWORD = 'correct horse battery staple';
export const SCREENSHOTS = path.resolve(import.meta.dirname, '../test-output/screenshots');

/** An account that can sign in to the dashboard, and (unless free) an API key of its own. */
export async function member(api: TestApp, plan: Plan = 'business') {
  const email = `member${Math.random().toString(36).slice(2)}@example.com`;
  const account = await createAccount(api.database.db, { email, plan, password: PASSWORD });
  return { email, accountId: account.id, key: plan === 'free' ? '' : await api.key(account.id, plan) };
}

/** Fails on any WCAG 2.x A/AA violation axe finds on the page as it is now. */
export async function accessible(page: Page, what: string) {
  const { violations } = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']).analyze();
  const found = violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  assert.deepEqual(found, [], `axe violations on ${what}`);
}

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export async function signIn(page: Page, api: TestApp, email: string, password = PASSWORD) {
  await page.goto(`${api.url}/dashboard/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await shot(page, 'sign-in');
  await accessible(page, 'the sign-in page');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/**
 * Debian's Chromium for the enclosing describe (launched before its tests, closed after), and
 * `newPage`: a page in a context of its own that fails its test on any script or CSP error.
 */
export function chromiumPages() {
  let browser: Browser;
  before(async () => {
    // The page is tested as npm run build makes it.
    if (!fs.existsSync(path.join(DASHBOARD_DIR, 'index.html'))) throw new Error('dashboard not built: run npm run build');
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });
  after(() => browser?.close());

  return async (t: TestContext, width = 1280, height = 900) => {
    // One locale, so money and dates read the same on every machine.
    const context = await browser.newContext({ viewport: { width, height }, locale: 'en-US', permissions: ['clipboard-read', 'clipboard-write'] });
    onCleanup(t, () => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    // 401/403 are answers the page explains, and so is a refused password change (400, beside its
    // field); missing.png is a failed blend job's absent input, shown as such.
    const explained = (m: ConsoleMessage) =>
      /status of 40[13]/.test(m.text()) || m.location().url.endsWith('/missing.png') || (/status of 400/.test(m.text()) && m.location().url.endsWith('/dashboard/api/password'));
    page.on('console', (m) => m.type() === 'error' && !explained(m) && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(String(e)));
    onCleanup(t, () => assert.deepEqual(errors, [], 'no script or CSP errors'));
    return page;
  };
}
