import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { accessible, chromiumPages, member, shot, signIn } from './dashboard-browser.js';
import { ENGINES, freshStorage, jsonClient, type JsonClient, startApp, type TestApp, until } from './helpers.js';

/** Screenshots of the sections for docs/dashboard.md: the section alone, not the whole page, to keep them small. */
const DOC_IMAGES = path.resolve(import.meta.dirname, '../docs/img');

const EVENT = { startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' };

/** A published event with one ticket type, and a signed-in page on it. */
async function onSale(t: TestContext, engine: 'sqlite' | 'postgres', type: { name: string; price: number; quantity: number }, event: Record<string, unknown> = {}) {
  const api = await startApp(t, await freshStorage(t, engine));
  const { email, key } = await member(api);
  const client = jsonClient(api, key);
  const created = await client.expect(201, 'POST', '/events', { name: 'Box office night', ...EVENT, ...event });
  const ticketType = await client.expect(201, 'POST', `/events/${created.id}/tickets`, type);
  await client.expect(200, 'POST', `/events/${created.id}/publish`);
  return { api, email, client, eventId: created.id as string, typeId: ticketType.id as string };
}

/** An event's page of the box office, as a user gets there: Events, the event, then its page. */
async function openEvent(page: Page, api: TestApp, email: string, eventId: string, name: 'Orders' | 'Vouchers' | 'Waiting list', address: string) {
  await signIn(page, api, email);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Events' }).click();
  await page.getByRole('link', { name: 'Box office night' }).click();
  await page.getByRole('heading', { level: 1, name: 'Box office night' }).waitFor();
  const pages = page.getByRole('navigation', { name: 'Event pages' });
  assert.deepEqual(await pages.getByRole('link').allInnerTexts(), ['Overview', 'Orders', 'Vouchers', 'Waiting list']);
  await pages.getByRole('link', { name }).click();
  await page.getByRole('heading', { level: 2, name, exact: true }).waitFor();
  assert.ok(page.url().endsWith(`/dashboard/events/${eventId}/${address}`), page.url());
  assert.equal(await pages.getByRole('link', { name }).getAttribute('aria-current'), 'page');
}

/** The text of a table row's cells, spaces squeezed. */
const cells = async (row: Locator) => (await row.getByRole('cell').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());

async function sectionShot(section: Locator, name: string) {
  fs.mkdirSync(DOC_IMAGES, { recursive: true });
  await section.screenshot({ path: path.join(DOC_IMAGES, `${name}.png`) });
}

const buyer = (name: string) => ({ name, email: `${name.toLowerCase().replace(/\W+/g, '.')}@example.com` });

async function order(client: JsonClient, eventId: string, body: Record<string, unknown>) {
  return client.expect(201, 'POST', `/events/${eventId}/orders`, body);
}

for (const engine of ENGINES) {
  describe(`dashboard box office in Chromium (${engine})`, () => {
    const newPage = chromiumPages();

    test('orders: a pending manual order shows its hold, is confirmed in the page and completes; a ticket and an amount are refunded; a pending order is cancelled; pages and the status filter', async (t) => {
      const { api, email, client, eventId, typeId } = await onSale(t, engine, { name: 'General', price: 1500, quantity: 50 }, { holdMinutes: 30 });
      // 20 completed orders fill the first page with the two pending ones placed after them: the two oldest go to page 2.
      for (let i = 0; i < 20; i++) await order(client, eventId, { buyer: buyer(`Buyer ${i}`), items: [{ ticketTypeId: typeId, quantity: 1 }] });
      const held = await order(client, eventId, {
        buyer: buyer('Grace Hopper'),
        items: [{ ticketTypeId: typeId, quantity: 2, attendees: [buyer('Ada Lovelace')] }],
        payment: { provider: 'manual' },
      });
      const other = await order(client, eventId, { buyer: buyer('Alan Turing'), items: [{ ticketTypeId: typeId, quantity: 1 }], payment: { provider: 'manual' } });
      assert.deepEqual([held.status, other.status], ['pending', 'pending']);

      const page = await newPage(t);
      await openEvent(page, api, email, eventId, 'Orders', 'orders');
      const section = page.getByRole('region', { name: 'Orders' });
      const rows = section.locator('table.orders > tbody > tr[data-order-id]');
      const row = (name: RegExp) => section.getByRole('row', { name });
      await row(/Grace Hopper/).waitFor();
      assert.equal(await rows.count(), 20, 'a page of 20');
      assert.deepEqual((await cells(row(/Grace Hopper/))).slice(2, 5), ['pending', '€30.00 · 2 places', 'manual · pending']);
      // The hold: when it ends, and the time left, counting down.
      const hold = row(/Grace Hopper/).locator('time');
      assert.equal(await hold.getAttribute('datetime'), held.expiresAt);
      const left = async () => (await row(/Grace Hopper/).locator('.hold-left').innerText()).trim();
      const first = await left();
      assert.match(first, /^(29|30) min \d+ s left$/);
      await until(async () => (await left()) !== first, 5000, 'the countdown to move');
      await accessible(page, 'the orders of an event');

      // The pages: the two oldest on the second.
      await section.getByRole('button', { name: 'Next page' }).click();
      await row(/Buyer 0\b/).waitFor();
      assert.deepEqual(await rows.locator('td:first-child').allInnerTexts().then((names) => names.map((n) => n.split('\n')[0])), ['Buyer 1', 'Buyer 0']);
      assert.match(await section.getByRole('navigation', { name: 'Orders pages' }).innerText(), /Page 2/);
      await section.getByRole('button', { name: 'Previous page' }).click();
      await row(/Grace Hopper/).waitFor();

      // The filter: only what waits for its money.
      await section.getByLabel('Show').selectOption('pending');
      await until(async () => (await rows.count()) === 2, 5000, 'the pending orders alone');
      assert.equal(await section.getByRole('button', { name: 'Next page' }).count(), 0, 'one page');
      await sectionShot(section, 'dashboard-orders');
      await section.getByLabel('Show').selectOption('');
      await until(async () => (await rows.count()) === 20, 5000, 'every order again');

      // Confirm the manual payment, with a reference: the order completes.
      await row(/Grace Hopper/).getByRole('button', { name: "Confirm payment of Grace Hopper's order" }).click();
      const confirm = section.getByRole('group', { name: "Confirm the payment of Grace Hopper's order" });
      assert.match(await confirm.innerText(), /Received €30\.00 from Grace Hopper\?/);
      await accessible(page, 'the payment confirmation');
      await confirm.getByLabel('Payment reference (optional)').fill('transfer 4711');
      await confirm.getByRole('button', { name: 'Yes, payment received' }).click();
      await until(async () => (await cells(row(/Grace Hopper/)))[2] === 'completed', 5000, 'the order completed');
      assert.equal((await cells(row(/Grace Hopper/)))[5], '—', 'no hold any more');
      const completed = await client.expect(200, 'GET', `/orders/${held.id}`);
      assert.equal(completed.status, 'completed');
      assert.deepEqual(
        completed.payments.map((p: any) => [p.kind, p.provider, p.amount, p.status, p.reference]),
        [['charge', 'manual', 3000, 'succeeded', 'transfer 4711']],
      );
      await page.getByText('22 of 50 sold, 1 held, 27 available').waitFor();

      // Cancel the other pending order: its place goes back.
      await row(/Alan Turing/).getByRole('button', { name: "Cancel Alan Turing's order" }).click();
      await section.getByRole('group', { name: "Confirm cancelling Alan Turing's order" }).getByRole('button', { name: 'Yes, cancel order' }).click();
      await until(async () => (await cells(row(/Alan Turing/)))[2] === 'cancelled', 5000, 'the order cancelled');
      assert.equal((await client.expect(200, 'GET', `/orders/${other.id}`)).status, 'cancelled');
      await page.getByText('22 of 50 sold, 28 available').waitFor();

      // The completed order's detail: its tickets and payments; one ticket cancelled and refunded.
      await row(/Grace Hopper/).getByRole('button', { name: 'Details' }).click();
      const detail = section.getByRole('region', { name: 'Order of Grace Hopper' });
      await detail.getByRole('table', { name: 'Tickets of this order' }).waitFor();
      assert.deepEqual(await detail.getByRole('table', { name: 'Tickets of this order' }).locator('tbody td:first-child').allInnerTexts().then((c) => c.map((n) => n.split('\n')[0])), ['Ada Lovelace', 'Grace Hopper']);
      assert.equal(await detail.getByRole('table', { name: 'Its charge and refunds, oldest first' }).locator('tbody tr').count(), 1);
      await accessible(page, 'an order with its tickets and payments');
      const ada = completed.tickets.find((tk: any) => tk.attendee.name === 'Ada Lovelace');
      await detail.getByRole('button', { name: 'Cancel and refund the ticket of Ada Lovelace' }).click();
      const cancelTicket = detail.getByRole('group', { name: 'Confirm cancelling the ticket of Ada Lovelace' });
      assert.equal(await cancelTicket.getByRole('checkbox', { name: /Refund its price \(€15\.00\)/ }).isChecked(), true);
      await cancelTicket.getByRole('button', { name: 'Yes, cancel and refund' }).click();
      await detail.getByRole('status').filter({ hasText: 'The ticket of Ada Lovelace is cancelled. Refund of €15.00 succeeded.' }).waitFor();
      const payments = detail.getByRole('table', { name: 'Its charge and refunds, oldest first' }).locator('tbody tr');
      await until(async () => (await payments.count()) === 2, 5000, 'the refund listed');
      assert.deepEqual((await cells(payments.nth(1))).slice(1, 5), ['refund (manual)', '€15.00', 'succeeded', 'ticket of Ada Lovelace']);
      const afterTicket = await client.expect(200, 'GET', `/orders/${held.id}`);
      assert.deepEqual(
        afterTicket.tickets.map((tk: any) => [tk.attendee.name, tk.status, tk.refundedAmount]),
        [['Ada Lovelace', 'cancelled', 1500], ['Grace Hopper', 'valid', 0]],
      );
      assert.equal(afterTicket.payments[1].ticketId, ada.id);
      assert.deepEqual([afterTicket.refundedAmount, afterTicket.payment.status], [1500, 'partially_refunded']);

      // Part of the order's money back, the tickets untouched: at most what is left (€15.00, filled in).
      const amount = detail.getByLabel('Amount (EUR)');
      assert.equal(await amount.inputValue(), '15.00');
      await amount.fill('5');
      await detail.getByLabel('Reason (optional, kept on the refund)').fill('The stage started late');
      await detail.getByRole('button', { name: 'Refund', exact: true }).click();
      await detail.getByRole('status').filter({ hasText: 'Refund of €5.00 succeeded.' }).waitFor();
      await until(async () => (await detail.getByTestId('order-money').innerText()).includes('€20.00 refunded'), 5000, 'the refunded amount');
      const refunded = await client.expect(200, 'GET', `/orders/${held.id}`);
      assert.deepEqual(
        refunded.payments.map((p: any) => [p.kind, p.amount, p.status, p.ticketId]),
        [['charge', 3000, 'succeeded', null], ['refund', 1500, 'succeeded', ada.id], ['refund', 500, 'succeeded', null]],
      );
      assert.equal(refunded.tickets.find((tk: any) => tk.attendee.name === 'Grace Hopper').status, 'valid', 'the tickets stay as they are');
      await page.getByText('21 of 50 sold, 29 available').waitFor();
      await accessible(page, 'an order after its refunds');
      await shot(page, `box-office-orders-${engine}`);
      await sectionShot(detail, 'dashboard-order');

      // On a phone the tables scroll in their own box: the page itself does not scroll sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      const scrollWidth = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
      assert.ok(scrollWidth <= 390, `no sideways scrolling on a phone (${scrollWidth} px)`);
      await accessible(page, 'the orders on a phone');
      await shot(page, `box-office-orders-phone-${engine}`);
    });

    // Needs the vouchers API (POST/GET/PATCH/DELETE /v1/events/:id/vouchers, orders with `voucher`).
    test('vouchers: created in the page, listed with their uses after an order redeems one; many at once; one ended, an unused one deleted', async (t) => {
      const { api, email, client, eventId, typeId } = await onSale(t, engine, { name: 'General', price: 2000, quantity: 10 });
      const page = await newPage(t);
      await openEvent(page, api, email, eventId, 'Vouchers', 'vouchers');
      const section = page.getByRole('region', { name: 'Vouchers' });
      const rows = section.locator('table.vouchers tbody tr');
      const row = (code: string) => section.getByRole('row', { name: new RegExp(`^${code}\\b`) });

      await section.getByText('Create vouchers', { exact: true }).click();
      const form = section.getByRole('form', { name: 'Create vouchers' });
      await form.getByLabel('Code (empty: a generated one)').fill('summer-25');
      await form.getByLabel('For', { exact: true }).selectOption({ label: 'General' });
      await form.getByLabel('Discount', { exact: true }).selectOption('percent');
      await form.getByLabel('Percent off (1 to 100)').fill('25');
      await form.getByLabel('Uses (places it gives, in all)').fill('3');
      await form.getByLabel('Comment (optional)').fill('Newsletter');
      await accessible(page, 'the voucher form');
      await form.getByRole('button', { name: 'Create voucher' }).click();
      await section.getByRole('status').getByText('Created 1 voucher.').waitFor();
      assert.equal(await section.getByLabel('Its code').inputValue(), 'SUMMER-25', 'stored upper case');
      await row('SUMMER-25').waitFor();
      assert.deepEqual((await cells(row('SUMMER-25'))).slice(0, 6), ['SUMMER-25', 'General', '25 % off', '0 of 3 used', 'valid from its creation, no end', 'Newsletter']);

      // An order redeems two of its three places: the list shows it.
      const redeemed = await order(client, eventId, { buyer: buyer('Mary Jackson'), items: [{ ticketTypeId: typeId, quantity: 2 }], voucher: 'Summer-25' });
      assert.equal(redeemed.total, 3000, '25 % off each ticket');
      await page.reload();
      await row('SUMMER-25').waitFor();
      assert.equal((await cells(row('SUMMER-25')))[3], '2 of 3 used');
      assert.equal(await section.getByRole('meter', { name: 'SUMMER-25: 2 of 3 used' }).count(), 1);

      // Five generated codes with a prefix, in one request.
      await section.getByText('Create vouchers', { exact: true }).click();
      await form.getByRole('radio', { name: 'Many, with generated codes' }).check();
      await form.getByLabel('How many codes').fill('5');
      await form.getByLabel('Code prefix (optional)').fill('VIP-');
      await form.getByLabel('Uses (places it gives, in all)').fill('1');
      await form.getByRole('button', { name: 'Create vouchers' }).click();
      await section.getByRole('status').getByText('Created 5 vouchers.').waitFor();
      const codes = (await section.getByLabel('Their codes, one a line').inputValue()).split('\n');
      assert.equal(codes.length, 5);
      assert.ok(codes.every((c) => c.startsWith('VIP-')), codes.join(' '));
      await until(async () => (await rows.count()) === 6, 5000, 'six vouchers listed');

      // End the used one now; delete an unused one.
      await row('SUMMER-25').getByRole('button', { name: 'End voucher SUMMER-25 now' }).click();
      await until(async () => (await cells(row('SUMMER-25')))[4]!.startsWith('ended'), 5000, 'the voucher ended');
      const ended = (await client.expect(200, 'GET', `/events/${eventId}/vouchers?code=SUMMER-25`)).data[0];
      assert.ok(Date.parse(ended.validUntil) <= Date.now());
      assert.equal(await row('SUMMER-25').getByRole('button', { name: /Delete/ }).count(), 0, 'a used voucher cannot be deleted');
      await row(codes[0]!).getByRole('button', { name: `Delete voucher ${codes[0]}` }).click();
      await section.getByRole('group', { name: `Confirm deleting voucher ${codes[0]}` }).getByRole('button', { name: 'Yes, delete' }).click();
      await until(async () => (await rows.count()) === 5, 5000, 'the deleted voucher gone');
      const left = (await client.expect(200, 'GET', `/events/${eventId}/vouchers?limit=100`)).data.map((v: any) => v.code);
      assert.ok(!left.includes(codes[0]) && left.includes('SUMMER-25'), left.join(' '));
      await accessible(page, 'the vouchers of an event');
      await sectionShot(section, 'dashboard-vouchers');
    });

    // Needs the waiting-list API (POST/GET/DELETE /v1/events/:id/waitlist).
    test('waiting list: people who joined through the API in queue order; one removed in the page, the next moves up; the status filter', async (t) => {
      const { api, email, client, eventId, typeId } = await onSale(t, engine, { name: 'General', price: 2000, quantity: 1 });
      await order(client, eventId, { buyer: buyer('Mary Jackson'), items: [{ ticketTypeId: typeId, quantity: 1 }] });
      const first = await client.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...buyer('Katherine Johnson') });
      await client.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...buyer('Dorothy Vaughan') });

      const page = await newPage(t);
      await openEvent(page, api, email, eventId, 'Waiting list', 'waitlist');
      const section = page.getByRole('region', { name: 'Waiting list' });
      const rows = section.locator('table.waitlist tbody tr');
      const row = (name: string) => section.getByRole('row', { name: new RegExp(name) });
      await row('Katherine Johnson').waitFor();
      assert.deepEqual((await cells(row('Katherine Johnson'))).slice(0, 5), ['1', 'Katherine Johnson katherine.johnson@example.com', 'General', 'waiting', '—']);
      assert.deepEqual((await cells(row('Dorothy Vaughan'))).slice(0, 4), ['2', 'Dorothy Vaughan dorothy.vaughan@example.com', 'General', 'waiting']);
      await accessible(page, 'the waiting list');

      await row('Katherine Johnson').getByRole('button', { name: 'Remove Katherine Johnson from the waiting list' }).click();
      await section.getByRole('group', { name: 'Confirm removing Katherine Johnson' }).getByRole('button', { name: 'Yes, remove' }).click();
      await until(async () => (await cells(row('Katherine Johnson')))[3] === 'removed', 5000, 'the entry removed');
      assert.equal((await cells(row('Katherine Johnson')))[0], '—');
      assert.equal((await cells(row('Dorothy Vaughan')))[0], '1', 'the next moves up');
      const removed = (await client.expect(200, 'GET', `/events/${eventId}/waitlist?status=removed`)).data;
      assert.deepEqual(removed.map((e: any) => e.id), [first.id]);

      await section.getByLabel('Status').selectOption('waiting');
      await until(async () => (await rows.count()) === 1, 5000, 'the waiting entries alone');
      assert.equal((await cells(rows.first()))[1], 'Dorothy Vaughan dorothy.vaughan@example.com');
      await accessible(page, 'the filtered waiting list');
      await sectionShot(section, 'dashboard-waitlist');
    });
  });
}
