/**
 * A waiting-list offer redeemed by an order (docs/events.md, "Waiting list" and "Vouchers"): the
 * offer's code buys the place it keeps, which nobody else can take; the entry becomes `redeemed`;
 * the code works once; a pending order that used it and is cancelled gives the offer back. On
 * every engine of the run. (Needs the vouchers' order path: `voucher` of POST /events/:id/orders.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expireOffer, offerPlaces } from '../src/events/waitlist.service.js';
import { ENGINES, freshStorage, jsonClient, problem, startApp } from './helpers.js';

type Json = any;

for (const engine of ENGINES) {
  describe(`waiting-list offers redeemed by orders (${engine})`, () => {
    test('the offered person buys the kept place with the code, once; nobody else can take it; a cancelled pending order gives the offer back', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);
      const event = await c.expect(201, 'POST', '/events', { name: 'Sold out', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR', waitlistOfferMinutes: 60 });
      const type = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'Floor', price: 1000, quantity: 1 });
      await c.expect(200, 'POST', `/events/${event.id}/publish`);
      const first = await c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer: { name: 'Early', email: 'early@example.com' }, items: [{ ticketTypeId: type.id, quantity: 1 }] });
      const ada = await c.expect(201, 'POST', `/events/${event.id}/waitlist`, { ticketTypeId: type.id, name: 'Ada', email: 'ada@example.com' });
      const bob = await c.expect(201, 'POST', `/events/${event.id}/waitlist`, { ticketTypeId: type.id, name: 'Bob', email: 'bob@example.com' });

      await c.expect(200, 'POST', `/tickets/${first.tickets[0].id}/cancel`);
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId: event.id }), 1);
      const entries = (await c.expect(200, 'GET', `/events/${event.id}/waitlist`)).data as Json[];
      const code = entries.find((e) => e.id === ada.id).voucher.code as string;

      // The place is kept for Ada: a buyer without the code is refused.
      const buy = (who: string, extra: Record<string, unknown> = {}) => ({ buyer: { name: who, email: `${who.toLowerCase()}@example.com` }, items: [{ ticketTypeId: type.id, quantity: 1 }], ...extra });
      await problem(await c.send('POST', `/events/${event.id}/orders`, buy('Carol')), 409, 'sold_out');

      // Ada's code (any case) buys it; the entry is redeemed; the code works once.
      const order = await c.expect(201, 'POST', `/events/${event.id}/orders`, buy('Ada', { voucher: code.toLowerCase() }));
      assert.equal(order.status, 'completed');
      assert.equal(order.voucher.code, code);
      const afterOrder = (await c.expect(200, 'GET', `/events/${event.id}/waitlist?status=redeemed`)).data as Json[];
      assert.deepEqual(afterOrder.map((e) => e.id), [ada.id]);
      await problem(await c.send('POST', `/events/${event.id}/orders`, buy('Dan', { voucher: code })), 409, 'voucher_used_up');
      await problem(await c.send('DELETE', `/events/${event.id}/waitlist/${ada.id}`), 409, 'waitlist_entry_ended');

      // One more place: offered to Bob, who starts a pending order with it and cancels it: the offer is his again.
      await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${type.id}`, { quantity: 2 });
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId: event.id }), 1);
      const bobCode = ((await c.expect(200, 'GET', `/events/${event.id}/waitlist?status=offered`)).data as Json[])[0].voucher.code;
      const pending = await c.expect(201, 'POST', `/events/${event.id}/orders`, buy('Bob', { voucher: bobCode, payment: { provider: 'manual' } }));
      assert.equal(pending.status, 'pending');
      assert.equal(((await c.expect(200, 'GET', `/events/${event.id}/waitlist?status=redeemed`)).data as Json[]).length, 2);
      await c.expect(200, 'POST', `/orders/${pending.id}/cancel`);
      const again = (await c.expect(200, 'GET', `/events/${event.id}/waitlist?status=offered`)).data as Json[];
      assert.deepEqual(again.map((e) => [e.id, e.voucher.code]), [[bob.id, bobCode]]);

      // Unanswered after all: it expires, and the place is public again (nobody else waits).
      assert.equal(await expireOffer(api.database.db, { accountId, eventId: event.id, entryId: bob.id }, Date.now() + 2 * 3_600_000), 0);
      const sold = await c.expect(201, 'POST', `/events/${event.id}/orders`, buy('Carol'));
      assert.equal(sold.status, 'completed');
    });

    test('a pending order of an offer ends after its person joined again: the order ends, the old offer expires with its webhook, the new entry waits', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);
      const event = await c.expect(201, 'POST', '/events', { name: 'Again', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' });
      const type = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'Floor', price: 1000, quantity: 1 });
      await c.expect(200, 'POST', `/events/${event.id}/publish`);
      const buy = (who: string, extra: Record<string, unknown> = {}) => ({ buyer: { name: who, email: `${who.toLowerCase()}@example.com` }, items: [{ ticketTypeId: type.id, quantity: 1 }], ...extra });
      const first = await c.expect(201, 'POST', `/events/${event.id}/orders`, buy('Early'));
      const bob = await c.expect(201, 'POST', `/events/${event.id}/waitlist`, { ticketTypeId: type.id, name: 'Bob', email: 'bob@example.com' });
      await c.expect(200, 'POST', `/tickets/${first.tickets[0].id}/cancel`);
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId: event.id }), 1);
      const code = ((await c.expect(200, 'GET', `/events/${event.id}/waitlist?status=offered`)).data as Json[])[0].voucher.code;
      const pending = await c.expect(201, 'POST', `/events/${event.id}/orders`, buy('Bob', { voucher: code, payment: { provider: 'manual' } }));
      const again = await c.expect(201, 'POST', `/events/${event.id}/waitlist`, { ticketTypeId: type.id, name: 'Bob', email: 'bob@example.com' });

      const cancelled = await c.expect(200, 'POST', `/orders/${pending.id}/cancel`);
      assert.equal(cancelled.status, 'cancelled');
      const entries = (await c.expect(200, 'GET', `/events/${event.id}/waitlist`)).data as Json[];
      assert.deepEqual(entries.map((e) => [e.id, e.status]), [[bob.id, 'expired'], [again.id, 'waiting']]);
      const voucher = await c.expect(200, 'GET', `/events/${event.id}/vouchers/${entries[0].voucher.id}`);
      assert.ok(Date.parse(voucher.validUntil) <= Date.now(), 'the old offer no longer keeps its place');
      const expired = await api.database.db.selectFrom('webhookMessages').select('payload').where('eventType', '=', 'waitlist.offer_expired').execute();
      assert.deepEqual(expired.map((m) => JSON.parse(m.payload).data.id), [bob.id]);

      // The place freed goes to the new entry.
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId: event.id }), 1);
      const offered = (await c.expect(200, 'GET', `/events/${event.id}/waitlist?status=offered`)).data as Json[];
      assert.deepEqual(offered.map((e) => e.id), [again.id]);
    });
  });
}
