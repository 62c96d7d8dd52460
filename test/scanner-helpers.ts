/** What the scanner page's Chromium tests share: the browser, the error watch, an event on sale, a door key, the pairing link. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, type TestContext } from 'node:test';
import { type Browser, chromium, type ConsoleMessage, type Page } from 'playwright-core';
import { SCANNER_DIR } from '../src/dashboard/scanner.routes.js';
import { onCleanup, type TestApp } from './helpers.js';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/** Debian's Chromium for the enclosing suite (started before its tests, closed after): the page as npm run build makes it. */
export function chromiumForSuite(): () => Browser {
  let browser: Browser | undefined;
  before(async () => {
    if (!fs.existsSync(path.join(SCANNER_DIR, 'index.html'))) throw new Error('scanner not built: run npm run build');
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  });
  after(() => browser?.close());
  return () => browser!;
}

/** Script errors fail the test; a request the network refused (the point of going offline) does not. */
export function watchErrors(t: TestContext, page: Page, explained = /ERR_INTERNET_DISCONNECTED|status of 404|Failed to fetch/) {
  const errors: string[] = [];
  const expected = (m: ConsoleMessage) => explained.test(m.text());
  page.on('console', (m) => m.type() === 'error' && !expected(m) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  onCleanup(t, () => assert.deepEqual(errors, [], 'no script or CSP errors'));
}

const NAMES = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Edsger Dijkstra', 'Barbara Liskov'];

/** A published event with one ticket type, and (count > 0) an order of `count` tickets, each its own attendee. */
export async function eventOnSale(api: TestApp, key: string, { count = 0, price = 2500 } = {}) {
  const event = await (
    await api.fetch('/v1/events', { method: 'POST', key, json: { name: 'Harbour concert', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' } })
  ).json();
  const made = await api.fetch(`/v1/events/${event.id}/tickets`, { method: 'POST', key, json: { name: 'Standing', price, quantity: 20 } });
  assert.equal(made.status, 201);
  const type = await made.json();
  assert.equal((await api.fetch(`/v1/events/${event.id}/publish`, { method: 'POST', key })).status, 200);
  if (count === 0) return { event: event as { id: string }, type, tickets: [] as Array<{ id: string; code: string; attendee: { name: string } }> };
  const names = NAMES.slice(0, count);
  const res = await api.fetch(`/v1/events/${event.id}/orders`, {
    method: 'POST',
    key,
    json: { buyer: { name: names[0], email: 'ada@example.com' }, items: [{ ticketTypeId: type.id, quantity: count, attendees: names.map((name, i) => ({ name, email: `holder${i}@example.com` })) }] },
  });
  assert.equal(res.status, 201, await res.clone().text());
  const order = await res.json();
  return { event: event as { id: string }, type, tickets: order.tickets as Array<{ id: string; code: string; attendee: { name: string } }> };
}

/** A door key as the dashboard makes it: scope checkin, expiring. */
export async function doorKey(api: TestApp, key: string): Promise<string> {
  const res = await api.fetch('/v1/keys', { method: 'POST', key, json: { name: 'Door scanner', scopes: ['checkin'], expiresAt: new Date(Date.now() + 86_400_000).toISOString() } });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()).key as string;
}

/** A check-in list of the event. */
export async function newList(api: TestApp, key: string, eventId: string, name = 'Main door'): Promise<{ id: string; name: string; object: string; counts: { inside: number } }> {
  const res = await api.fetch(`/v1/events/${eventId}/checkin-lists`, { method: 'POST', key, json: { name } });
  assert.equal(res.status, 201, await res.clone().text());
  return res.json();
}

/** The pairing link the dashboard makes (its fragment never reaches a server). */
export const pairingLink = (api: TestApp, pairing: { eventId: string; listId?: string; door: string }) =>
  `${api.url}/scanner#event=${pairing.eventId}${pairing.listId ? `&list=${pairing.listId}` : ''}&key=${pairing.door}`;
