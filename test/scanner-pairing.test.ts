/**
 * Pairing a scanner always names a check-in list (docs/events.md, The scanner page): the
 * dashboard offers no list-less pairing and makes a first list for an event without one, and the
 * scanner page refuses a link without `list`. In Chromium, as npm run build makes the pages.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount } from '../src/accounts/accounts.service.js';
import { freshStorage, onCleanup, startApp, type TestApp } from './helpers.js';
import { chromiumForSuite, doorKey, eventOnSale, newList, pairingLink, watchErrors } from './scanner-helpers.js';

const listsOf = async (api: TestApp, key: string, eventId: string) => (await (await api.fetch(`/v1/events/${eventId}/checkin-lists`, { key })).json()).data as Array<{ id: string; name: string; ticketTypeIds: string[]; allowMultipleEntries: boolean }>;

describe('scanner pairing names a check-in list', () => {
  const browser = chromiumForSuite();

  test('the dashboard offers no list-less pairing; an event without a list gets "Main entrance" (every ticket type) and the link names it', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const password = 'correct horse battery staple';
    const email = `pair${Date.now()}@example.com`;
    const account = await createAccount(api.database.db, { email, plan: 'business', password });
    const key = await api.key(account.id, 'business');
    const { event } = await eventOnSale(api, key, { price: 0 });

    const context = await browser().newContext({ viewport: { width: 1280, height: 900 } });
    onCleanup(t, () => context.close());
    const page = await context.newPage();
    watchErrors(t, page, /status of 401/);
    await page.goto(`${api.url}/dashboard/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Events' }).click();
    await page.getByRole('link', { name: 'Harbour concert' }).click();

    await page.getByRole('button', { name: 'Scanner…' }).click();
    await page.getByText('This event has no check-in list yet').waitFor();
    assert.equal(await page.getByLabel('Check-in list').count(), 0, 'no list to choose, and no list-less choice');
    await page.getByRole('button', { name: 'Create list “Main entrance” and pairing link' }).click();
    const link = await page.getByLabel('Pairing link').inputValue();
    const lists = await listsOf(api, key, event.id);
    assert.deepEqual(lists.map((l) => [l.name, l.ticketTypeIds, l.allowMultipleEntries]), [['Main entrance', [], false]]);
    const fragment = new URLSearchParams(new URL(link).hash.slice(1));
    assert.deepEqual([fragment.get('event'), fragment.get('list')], [event.id, lists[0]!.id]);
    const keys = (await (await api.fetch('/v1/keys', { key })).json()).data as Array<{ name: string; scopes: string[] }>;
    assert.ok(keys.some((k) => k.name === 'Scanner: Harbour concert (Main entrance)' && k.scopes.join() === 'checkin'));

    // Once the event has lists, one of them is chosen; none means "no list"; no second list is made.
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Scanner…' }).click();
    const select = page.getByLabel('Check-in list');
    await select.waitFor();
    assert.deepEqual(await select.locator('option').allTextContents(), ['Main entrance']);
    await page.getByRole('button', { name: 'Create pairing link' }).click();
    const again = new URLSearchParams(new URL(await page.getByLabel('Pairing link').inputValue()).hash.slice(1));
    assert.equal(again.get('list'), lists[0]!.id);
    assert.equal((await listsOf(api, key, event.id)).length, 1);
  });

  test('the scanner page refuses a pairing link without a list, and stays unpaired', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { key } = await api.account();
    const { event } = await eventOnSale(api, key, { price: 0 });
    const page = await browser().newPage();
    onCleanup(t, () => page.close());
    watchErrors(t, page, /status of 404/);
    const door = await doorKey(api, key);
    await page.goto(pairingLink(api, { eventId: event.id, door }));
    await page.getByRole('alert').filter({ hasText: 'The pairing link names no check-in list' }).waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the key leaves the address bar all the same');
    await page.getByRole('heading', { name: 'This scanner is not paired' }).waitFor();
    // A link with a list pairs as before.
    const list = await newList(api, key, event.id, 'Main entrance');
    await page.goto(pairingLink(api, { eventId: event.id, listId: list.id, door }));
    await page.getByRole('button', { name: 'Start camera' }).waitFor();
  });
});
