import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import jsQRModule from 'jsqr';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import QRCode from 'qrcode';
import sharp from 'sharp';
import { createAccount } from '../src/accounts/accounts.service.js';
import { freshStorage, onCleanup, problem, startApp, until } from './helpers.js';
import { CHROMIUM_ARGS, chromiumForSuite, doorKey, eventOnSale, newList, pairingLink, watchErrors } from './scanner-helpers.js';

// jsqr is CommonJS with a `default` export: under NodeNext the default import is its module object.
const jsQR = jsQRModule.default;
const SCREENSHOTS = path.resolve(import.meta.dirname, '../test-output/screenshots');
const DOC_IMAGE = path.resolve(import.meta.dirname, '../docs/img/scanner.png');
const PHONE = { width: 390, height: 844 };

/** The scanner's IndexedDB, read from inside the page. */
function readStore(page: Page, store: 'settings' | 'scans', key?: string): Promise<any> {
  return page.evaluate(
    ({ store, key }) =>
      new Promise((resolve, reject) => {
        const g = globalThis as any;
        const open = g.indexedDB.open('montage-scanner');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const request = open.result.transaction(store).objectStore(store)[key === undefined ? 'getAll' : 'get'](key);
          request.onsuccess = () => resolve(request.result);
          request.onerror = () => reject(request.error);
        };
      }),
    { store, key },
  );
}

async function accessible(page: Page, what: string) {
  const { violations } = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']).analyze();
  const found = violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  assert.deepEqual(found, [], `axe violations on ${what}`);
}

const noSidewaysScroll = async (page: Page) => {
  const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
  assert.ok(width <= PHONE.width, `no sideways scrolling on a phone (${width} px)`);
};

describe('the scanner page in Chromium', () => {
  const browser = chromiumForSuite();
  before(() => fs.mkdirSync(SCREENSHOTS, { recursive: true }));

  test('served at /scanner with its headers; pairs from the fragment, forgets the fragment, opens offline from its service worker', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { key } = await api.account();
    const { event } = await eventOnSale(api, key, { count: 1 });
    const door = await doorKey(api, key);

    for (const url of ['/scanner', '/scanner/']) {
      const res = await api.fetch(url);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self';.*worker-src 'self'/);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    }
    const sw = await api.fetch('/scanner/sw.js');
    assert.equal(sw.status, 200);
    assert.equal(sw.headers.get('service-worker-allowed'), '/scanner');
    assert.equal(sw.headers.get('cache-control'), 'no-cache');
    const manifest = await (await api.fetch('/scanner/manifest.webmanifest')).json();
    assert.equal(manifest.start_url, '/scanner/');
    assert.equal(manifest.display, 'standalone');
    await problem(await api.fetch('/scanner/missing.js'), 404, 'not_found');

    const context = await browser().newContext({ viewport: PHONE });
    onCleanup(t, () => context.close());
    const page = await context.newPage();
    watchErrors(t, page);

    // Unpaired: the page says how to pair.
    await page.goto(`${api.url}/scanner`);
    await page.getByRole('heading', { name: 'This scanner is not paired' }).waitFor();
    await accessible(page, 'the unpaired scanner');
    await noSidewaysScroll(page);

    const list = await newList(api, key, event.id);
    await page.goto(pairingLink(api, { eventId: event.id, listId: list.id, door }));
    await page.getByRole('button', { name: 'Start camera' }).waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the key leaves the address bar');
    const pairing = await readStore(page, 'settings', 'pairing');
    assert.deepEqual({ eventId: pairing.eventId, listId: pairing.listId, key: pairing.key }, { eventId: event.id, listId: list.id, key: door });
    assert.ok(!(await page.content()).includes(door), 'the key is not shown');

    await page.getByRole('heading', { name: 'Harbour concert' }).waitFor();
    // A megabyte of foreign text (a paste past the field's maxlength, a foreign QR code) is refused
    // on the page: no request, nothing in IndexedDB.
    const sent: string[] = [];
    page.on('request', (r) => r.url().includes('/checkin') && r.method() === 'POST' && sent.push(r.url()));
    await page.evaluate(() => {
      const d = (globalThis as any).document;
      d.getElementById('code').value = 'https://example.com/?' + 'x'.repeat(1_000_000);
      d.getElementById('typed').requestSubmit();
    });
    await page.locator('#reason').filter({ hasText: 'Not a ticket code: the scanned text has 1,000,021 characters, a ticket code at most 256.' }).waitFor();
    assert.equal(await page.locator('#verdict').textContent(), 'Refused');
    assert.deepEqual(await readStore(page, 'scans'), [], 'nothing queued or kept');
    assert.deepEqual(sent, [], 'nothing sent');
    const bad = await browser().newPage();
    onCleanup(t, () => bad.close());
    await bad.goto(`${api.url}/scanner#event=not-an-event&key=x`);
    await bad.getByRole('alert').filter({ hasText: 'The pairing link is incomplete' }).waitFor();
    assert.equal(new URL(bad.url()).hash, '');

    // The service worker keeps the page: without a network it opens, and says it is offline.
    await page.evaluate(() => (globalThis as any).navigator.serviceWorker.ready.then(() => undefined));
    await until(() => page.evaluate(() => Boolean((globalThis as any).navigator.serviceWorker.controller)) || page.reload().then(() => false), 10_000, 'the service worker in control');
    await context.setOffline(true);
    await page.reload();
    await page.getByText('Offline', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Start camera' }).waitFor();

    // A typed older code cannot be checked without the server: refused, and queued for it.
    await page.getByLabel('Ticket code').fill('h0HFNKsRHaUT6fWW9eYOuL');
    await page.getByRole('button', { name: 'Check' }).click();
    await page.getByRole('status').filter({ hasText: 'Refused' }).waitFor();
    assert.match(await page.getByRole('status').innerText(), /Needs the network to check this code/);
    await page.getByText('1 queued').waitFor();
    const [queued] = await readStore(page, 'scans');
    assert.match(queued.scanId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { code: queued.code, listId: queued.listId, direction: queued.direction, localResult: queued.localResult, state: queued.state },
      { code: 'h0HFNKsRHaUT6fWW9eYOuL', listId: list.id, direction: 'entry', localResult: 'refused', state: 'queued' },
    );
    assert.ok(Math.abs(Date.parse(queued.scannedAt) - Date.now()) < 60_000);
    await accessible(page, 'a refused scan, offline');
    await noSidewaysScroll(page);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'scanner-offline-refused.png') });
  });

  test("the dashboard's Scanner action makes an expiring checkin key and a pairing link with its QR code, which pairs the page", async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const password = 'correct horse battery staple';
    const email = `door${Date.now()}@example.com`;
    const account = await createAccount(api.database.db, { email, plan: 'business', password });
    const key = await api.key(account.id, 'business');
    const { event } = await eventOnSale(api, key, { count: 1 });

    const context = await browser().newContext({ viewport: { width: 1280, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
    onCleanup(t, () => context.close());
    const page = await context.newPage();
    // The dashboard asks for its session before signing in (401).
    watchErrors(t, page, /status of 401/);
    await page.goto(`${api.url}/dashboard/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Events' }).click();
    await page.getByRole('link', { name: 'Harbour concert' }).click();
    await page.getByRole('button', { name: 'Scanner…' }).click();
    await page.getByLabel('The link works for').selectOption({ label: '3 days' });
    await accessible(page, 'the scanner pairing form');
    await page.getByRole('button', { name: 'Create list “Main entrance” and pairing link' }).click();
    const link = await page.getByLabel('Pairing link').inputValue();
    const match = new RegExp(`^${api.url.replace(/[.]/g, '\\.')}/scanner#event=${event.id}&list=(cl_\\w{26})&key=(mtg_\\w{40})$`).exec(link);
    assert.ok(match, link);
    await accessible(page, 'a pairing link');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-scanner-pairing.png') });

    // The key may check tickets in and nothing else, and it expires in three days.
    const keys = (await (await api.fetch('/v1/keys', { key })).json()).data as Array<{ name: string; scopes: string[]; expiresAt: string; prefix: string }>;
    const made = keys.find((k) => match[2]!.startsWith(k.prefix))!;
    assert.deepEqual(made.scopes, ['checkin']);
    assert.equal(made.name, 'Scanner: Harbour concert (Main entrance)');
    assert.ok(Math.abs(Date.parse(made.expiresAt) - Date.now() - 72 * 3_600_000) < 60_000);
    await problem(await api.fetch(`/v1/events/${event.id}`, { key: match[2]! }), 403, 'insufficient_scope');

    // The QR code on the page is the same link.
    const shot = await page.getByRole('img', { name: "QR code of the scanner's pairing link" }).screenshot();
    const { data, info } = await sharp(shot).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    assert.equal(jsQR(new Uint8ClampedArray(data), info.width, info.height)?.data, link);
    await page.getByRole('button', { name: 'Copy link' }).click();
    assert.equal(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText()), link);

    // The door's phone opens it: paired with the event, the key kept and out of the address bar.
    const phone = await browser().newContext({ viewport: PHONE });
    onCleanup(t, () => phone.close());
    const door = await phone.newPage();
    watchErrors(t, door);
    await door.goto(link);
    await door.getByRole('button', { name: 'Start camera' }).waitFor();
    assert.equal(new URL(door.url()).hash, '');
    const pairing = await readStore(door, 'settings', 'pairing');
    assert.deepEqual({ eventId: pairing.eventId, listId: pairing.listId, key: pairing.key }, { eventId: event.id, listId: match[1], key: match[2] });
  });

  test('at the door: camera scans online, then offline (a revoked ticket refused), then the queue is uploaded and counted once', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { key } = await api.account();
    const { event, tickets } = await eventOnSale(api, key, { count: 4 });
    const door = await doorKey(api, key);
    const list = await newList(api, key, event.id);
    assert.equal(list.object, 'checkin_list', JSON.stringify(list));

    // Each ticket's code, read back from its QR image as a phone camera would.
    const codes: string[] = [];
    for (const ticket of tickets) {
      const png = await api.fetch(`/v1/tickets/${ticket.id}/qr.png`, { key });
      assert.equal(png.status, 200);
      const { data, info } = await sharp(Buffer.from(await png.arrayBuffer())).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
      const qr = jsQR(new Uint8ClampedArray(data), info.width, info.height);
      assert.ok(qr?.data.startsWith('M1'), 'a signed code');
      codes.push(qr!.data);
    }
    // The fourth ticket is cancelled before the door downloads its data: its serial is revoked.
    assert.equal((await api.fetch(`/v1/tickets/${tickets[3]!.id}/cancel`, { method: 'POST', key })).status, 200);

    // A camera video per code: the QR image from `qrcode`, as Chromium's fake camera plays it.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-scanner-'));
    onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
    const video = async (code: string, name: string) => {
      const png = path.join(dir, `${name}.png`);
      await QRCode.toFile(png, code, { width: 420, margin: 4, errorCorrectionLevel: 'M' });
      const y4m = path.join(dir, `${name}.y4m`);
      execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-loop', '1', '-i', png, '-vf', 'scale=640:480:force_original_aspect_ratio=decrease,pad=640:480:(ow-iw)/2:(oh-ih)/2:white', '-t', '1', '-r', '10', '-pix_fmt', 'yuv420p', y4m]);
      return y4m;
    };

    // One phone: its profile (IndexedDB, the service worker) outlives each camera video.
    const profile = path.join(dir, 'profile');
    let context: BrowserContext | null = null;
    const phone = async (y4m: string, offline: boolean) => {
      await context?.close();
      context = await chromium.launchPersistentContext(profile, {
        executablePath: '/usr/bin/chromium',
        args: [...CHROMIUM_ARGS, '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${y4m}`],
        viewport: PHONE,
        permissions: ['camera'],
        offline,
      });
      const page = context.pages()[0] ?? (await context.newPage());
      watchErrors(t, page);
      return page;
    };
    onCleanup(t, () => context?.close());
    const result = (page: Page) => page.getByRole('status');
    const scanWithCamera = async (page: Page, verdict: string, whileRunning?: () => Promise<void>) => {
      await page.getByRole('button', { name: 'Start camera' }).click();
      await result(page).filter({ hasText: verdict }).waitFor({ timeout: 20_000 });
      await whileRunning?.();
      await page.getByRole('button', { name: 'Stop camera' }).click();
    };

    // Online: paired by the link, the first ticket goes to the server, which names its holder.
    let page = await phone(await video(codes[0]!, 'first'), false);
    await page.goto(pairingLink(api, { eventId: event.id, listId: list.id, door }));
    await page.getByRole('heading', { name: 'Harbour concert' }).waitFor();
    await page.getByText('Main door').waitFor();
    await scanWithCamera(page, 'Admit', async () => {
      assert.match(await result(page).innerText(), /Checked by the server[\s\S]*Ada Lovelace[\s\S]*Standing/);
      await until(async () => (await page.getByTestId('inside').innerText()) === '1', 5000, 'inside 1');
      await accessible(page, 'an admitted ticket');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'scanner-admitted.png') });
      fs.mkdirSync(path.dirname(DOC_IMAGE), { recursive: true });
      await page.screenshot({ path: DOC_IMAGE });
    });
    await until(() => page.evaluate(() => Boolean((globalThis as any).navigator.serviceWorker.controller)) || page.reload().then(() => false), 10_000, 'the service worker in control');
    // The network is cut: the page sees it at once.
    await context!.setOffline(true);
    await page.getByText('Offline', { exact: true }).waitFor();

    // Offline from the start: the page opens from its service worker and decides alone.
    page = await phone(await video(codes[1]!, 'second'), true);
    await page.goto(`${api.url}/scanner`);
    await page.getByText('Offline', { exact: true }).waitFor();
    await scanWithCamera(page, 'Admit');
    assert.match(await result(page).innerText(), /Checked on this device, queued for upload[\s\S]*Standing/);
    await page.getByText('1 queued').waitFor();
    assert.equal(await page.getByTestId('inside').innerText(), '2');

    page = await phone(await video(codes[3]!, 'revoked'), true);
    await page.goto(`${api.url}/scanner`);
    await scanWithCamera(page, 'Refused');
    assert.match(await result(page).innerText(), /Ticket revoked/);
    // Typed: a third ticket admitted, the second again refused by this device's own memory.
    for (const [code, verdict, reason] of [
      [codes[2]!, 'Admit', /queued for upload/],
      [codes[1]!, 'Refused', /Already inside/],
    ] as const) {
      await page.getByLabel('Ticket code').fill(code);
      await page.getByRole('button', { name: 'Check' }).click();
      await result(page).filter({ hasText: verdict }).filter({ hasText: reason }).waitFor();
    }
    await page.getByText('4 queued').waitFor();
    assert.equal(await page.getByTestId('inside').innerText(), '3');

    // Back online: the queue goes up through /checkin/sync, and the server counts each ticket once.
    await context!.setOffline(false);
    await page.getByText('0 queued').waitFor({ timeout: 20_000 });
    await page.getByText('Online', { exact: true }).waitFor();
    const scans = (await readStore(page, 'scans')) as Array<{ code: string; outcome: string; reason: string | null; state: string }>;
    assert.equal(scans.length, 5);
    assert.ok(scans.every((s) => s.state === 'done'));
    const outcomes = scans.map((s) => `${codes.indexOf(s.code)}:${s.outcome}`).sort();
    assert.deepEqual(outcomes, ['0:admitted', '1:admitted', '1:refused', '2:admitted', '3:refused']);
    assert.match(scans.find((s) => s.code === codes[3])!.reason!, /^ticket_(revoked|cancelled)$/);
    const counted = await (await api.fetch(`/v1/events/${event.id}/checkin-lists/${list.id}`, { key })).json();
    assert.equal(counted.counts.inside, 3, JSON.stringify(counted));
    assert.equal(counted.counts.entries, 3);
    assert.equal(counted.counts.admittedTickets, 3);
    assert.equal(counted.counts.conflicts, 0);
    assert.equal(await page.getByTestId('inside').innerText(), '3');
  });
  test('two doors offline admit the same ticket: the server keeps the earliest scan, the other is a conflict, and both pages show it', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { key } = await api.account();
    const { event, tickets } = await eventOnSale(api, key, { count: 1 });
    const list = await newList(api, key, event.id);
    const png = await api.fetch(`/v1/tickets/${tickets[0]!.id}/qr.png`, { key });
    const { data, info } = await sharp(Buffer.from(await png.arrayBuffer())).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const code = jsQR(new Uint8ClampedArray(data), info.width, info.height)!.data;

    // Two phones, each paired by its own link to the same list; their clocks are the page's own,
    // so the later one can be moved on to its minute refresh.
    const open = async (name: string) => {
      const context = await browser().newContext({ viewport: PHONE });
      onCleanup(t, () => context.close());
      await context.clock.install();
      const page = await context.newPage();
      watchErrors(t, page);
      await page.goto(pairingLink(api, { eventId: event.id, listId: list.id, door: await doorKey(api, key) }));
      await page.getByText('Main door').waitFor();
      await page.getByRole('heading', { name: 'Harbour concert' }).waitFor();
      return { name, context, page };
    };
    const north = await open('north');
    const south = await open('south');

    // Both doors cut off; the north door admits the ticket first, the south door a moment later.
    for (const door of [north, south]) {
      await door.context.setOffline(true);
      await door.page.getByText('Offline', { exact: true }).waitFor();
    }
    for (const door of [north, south]) {
      await door.page.getByLabel('Ticket code').fill(code);
      await door.page.getByRole('button', { name: 'Check' }).click();
      await door.page.getByRole('status').filter({ hasText: 'Admit' }).filter({ hasText: 'queued for upload' }).waitFor();
      await door.page.getByText('1 queued').waitFor();
      await door.page.waitForTimeout(20);
    }
    const [northScan] = await readStore(north.page, 'scans');
    const [southScan] = await readStore(south.page, 'scans');
    assert.ok(northScan.scannedAt < southScan.scannedAt, 'north scanned first');

    // The south door is back first: its later admission reaches the server first and is admitted.
    await south.context.setOffline(false);
    await south.page.getByText('0 queued').waitFor({ timeout: 20_000 });
    assert.equal((await readStore(south.page, 'scans', southScan.scanId)).outcome, 'admitted');
    // Then the north door: its earlier admission is kept, and the south one becomes the conflict.
    await north.context.setOffline(false);
    await north.page.getByText('0 queued').waitFor({ timeout: 20_000 });
    assert.equal((await readStore(north.page, 'scans', northScan.scanId)).outcome, 'admitted');

    const counted = await (await api.fetch(`/v1/events/${event.id}/checkin-lists/${list.id}`, { key })).json();
    assert.deepEqual(counted.counts, { inside: 1, entries: 1, exits: 0, admittedTickets: 1, conflicts: 1 });
    const conflicts = (await (await api.fetch(`/v1/events/${event.id}/checkin-lists/${list.id}/conflicts`, { key })).json()).data;
    const northDevice = await readStore(north.page, 'settings', 'deviceId');
    const southDevice = await readStore(south.page, 'settings', 'deviceId');
    assert.deepEqual(
      conflicts.map((c: any) => [c.scanId, c.deviceId, c.kept.keptScanId, c.kept.keptDeviceId]),
      [[southScan.scanId, southDevice, northScan.scanId, northDevice]],
    );

    // The north page read the conflicts after its upload: its admission was kept over the south door's.
    const shown = (page: Page) => page.getByRole('region', { name: 'Conflicts' }).getByRole('listitem');
    await shown(north.page).filter({ hasText: 'Ada Lovelace' }).filter({ hasText: 'kept' }).waitFor();
    assert.equal(await shown(north.page).count(), 1);
    // The south page learns it on its minute refresh: its admission is marked a conflict.
    await south.page.clock.fastForward('01:05');
    await shown(south.page).filter({ hasText: 'Ada Lovelace' }).filter({ hasText: 'a conflict' }).waitFor({ timeout: 20_000 });
    assert.equal(await shown(south.page).count(), 1);
    const marked = await readStore(south.page, 'scans', southScan.scanId);
    assert.deepEqual([marked.outcome, marked.conflict.keptScanId, marked.conflict.keptDeviceId], ['conflict', northScan.scanId, northDevice]);
    for (const door of [north, south]) {
      assert.equal(await door.page.getByTestId('inside').innerText(), '1');
      await accessible(door.page, `the ${door.name} door's conflicts`);
      await noSidewaysScroll(door.page);
      await door.page.screenshot({ path: path.join(SCREENSHOTS, `scanner-conflict-${door.name}.png`), fullPage: true });
    }
  });
});
