/**
 * The waiting list (docs/events.md, "Waiting list"): who may join and the refusals; places freed
 * by a ticket cancel, a pending order's expiry and more quantity offered to the first in line with
 * a webhook a real receiver gets; an unanswered offer expiring and passing on (its job driven with
 * a later clock); removal; and 300 joins racing place-freeing changes, offer jobs on several
 * workers and sweeps, with no entry offered twice, offers in queue order, never more offers than
 * places freed, and no oversell. On every engine of the run.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expireOrder } from '../src/events/orders.service.js';
import { sweepWaitlists } from '../src/events/waitlist.job.js';
import { expireOffer, MAX_WAITING_PER_TYPE, offerPlaces } from '../src/events/waitlist.service.js';
import { startWorkers } from '../src/workers.js';
import { ENGINES, FAST_WEBHOOKS, freshStorage, hookReceiver, jsonClient, type JsonClient, onCleanup, problem, startApp, type TestApp, until } from './helpers.js';

/** The sweeps' log: a failing row is written there; these tests have none. */
const quiet = { warn() {} };

type Json = any;

/** A published event with one ticket type of `quantity` free places (an RSVP), every one taken: each ticket in `tickets`. */
async function soldOut(c: JsonClient, quantity: number, event: Record<string, unknown> = {}) {
  const created = await c.expect(201, 'POST', '/events', { name: 'Sold out', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR', ...event });
  const type = await c.expect(201, 'POST', `/events/${created.id}/tickets`, { name: 'Floor', price: 0, quantity });
  await c.expect(200, 'POST', `/events/${created.id}/publish`);
  const order = await c.expect(201, 'POST', `/events/${created.id}/orders`, { buyer: { name: 'Early', email: 'early@example.com' }, items: [{ ticketTypeId: type.id, quantity }] });
  return { eventId: created.id as string, typeId: type.id as string, tickets: order.tickets as Json[] };
}

const person = (i: number) => ({ name: `Person ${i}`, email: `person${i}@example.com` });

/** Every entry of the event's waiting list, in queue order (walking its pages). */
async function allEntries(c: JsonClient, eventId: string, filter = ''): Promise<Json[]> {
  const entries: Json[] = [];
  let cursor: string | null = null;
  do {
    const page: Json = await c.expect(200, 'GET', `/events/${eventId}/waitlist?limit=100${filter}${cursor ? `&cursor=${cursor}` : ''}`);
    entries.push(...page.data);
    cursor = page.nextCursor;
  } while (cursor);
  return entries;
}

/** The waiting list's jobs not finished yet. */
async function openWaitlistJobs(api: TestApp): Promise<number> {
  const rows = await api.database.db.selectFrom('jobs').select('id').where('kind', '=', 'waitlist.offer').where('status', 'in', ['queued', 'running']).execute();
  return rows.length;
}

for (const engine of ENGINES) {
  describe(`waiting list (${engine})`, () => {
    test('who may join, in what order, and every refusal', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);

      // Not sold out: order instead.
      const open = await c.expect(201, 'POST', '/events', { name: 'Open', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' });
      const openType = await c.expect(201, 'POST', `/events/${open.id}/tickets`, { name: 'Floor', price: 0, quantity: 3 });
      const draft = await problem(await c.send('POST', `/events/${open.id}/waitlist`, { ticketTypeId: openType.id, ...person(1) }), 409, 'event_not_published');
      assert.match(draft.detail, /not published/);
      await c.expect(200, 'POST', `/events/${open.id}/publish`);
      const available = await problem(await c.send('POST', `/events/${open.id}/waitlist`, { ticketTypeId: openType.id, ...person(1) }), 409, 'tickets_available');
      assert.equal(available.available, 3);

      const { eventId, typeId } = await soldOut(c, 2, { waitlistOfferMinutes: 5 });
      const first = await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, name: 'Ada', email: 'Ada@Example.com' });
      assert.deepEqual(
        { ...first, id: undefined, createdAt: undefined },
        { id: undefined, eventId, ticketTypeId: typeId, name: 'Ada', email: 'ada@example.com', status: 'waiting', position: 1, voucher: null, offeredAt: null, offerExpiresAt: null, createdAt: undefined },
      );
      assert.match(first.id, /^wle_[0-9a-z]{26}$/);
      const second = await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(2) });
      assert.equal(second.position, 2);

      // The same address (any case) while it waits: refused; another address: fine.
      const duplicate = await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, name: 'Ada again', email: 'ADA@example.com' }), 409, 'waitlist_duplicate');
      assert.equal(duplicate.entryId, first.id);

      // Unknown and hidden types answer alike; validation and other accounts' events.
      for (const ticketTypeId of ['tt_01m80eg3tperaacsapew6ns732', openType.id]) {
        const unknown = await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId, ...person(3) }), 400, 'invalid_request');
        assert.equal(unknown.errors[0].path, '/ticketTypeId');
      }
      const hidden = await c.expect(201, 'POST', `/events/${eventId}/tickets`, { name: 'Crew', price: 0, quantity: 1 });
      await api.database.db.updateTable('ticketTypes').set({ hidden: 1 }).where('id', '=', hidden.id).execute();
      const hiddenAnswer = await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: hidden.id, ...person(3) }), 400, 'invalid_request');
      assert.equal(hiddenAnswer.detail, `/ticketTypeId is not a ticket type of event ${eventId}`);
      await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, name: 'x', email: 'not an address' }), 400, 'invalid_request');
      await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(3), extra: 1 }), 400, 'invalid_request');
      await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, name: 'x'.repeat(201), email: 'long@example.com' }), 400, 'invalid_request');
      const other = jsonClient(api, (await api.account()).key);
      await problem(await other.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(3) }), 404, 'not_found');
      await problem(await other.send('GET', `/events/${eventId}/waitlist`), 404, 'not_found');

      // The list: queue order, positions, filters; a cursor of one filter is refused by another.
      const listed = await allEntries(c, eventId);
      assert.deepEqual(listed.map((e) => [e.id, e.position]), [[first.id, 1], [second.id, 2]]);
      assert.deepEqual((await allEntries(c, eventId, '&status=offered')).length, 0);
      assert.deepEqual((await allEntries(c, eventId, `&ticketTypeId=${typeId}&status=waiting`)).map((e) => e.id), [first.id, second.id]);
      const paged = await c.expect(200, 'GET', `/events/${eventId}/waitlist?limit=1`);
      assert.deepEqual([paged.data[0].id, paged.hasMore], [first.id, true]);
      const next = await c.expect(200, 'GET', `/events/${eventId}/waitlist?limit=1&cursor=${paged.nextCursor}`);
      assert.deepEqual([next.data[0].id, next.data[0].position, next.hasMore], [second.id, 2, false]);
      await problem(await c.send('GET', `/events/${eventId}/waitlist?limit=1&status=waiting&cursor=${paged.nextCursor}`), 400, 'invalid_request');
      await problem(await c.send('GET', `/events/${eventId}/waitlist?status=sleeping`), 400, 'invalid_request');

      // The event's offer time: 5 minutes to a week.
      const event = await c.expect(200, 'GET', `/events/${eventId}`);
      assert.equal(event.waitlistOfferMinutes, 5);
      assert.equal((await c.expect(200, 'PATCH', `/events/${eventId}`, { waitlistOfferMinutes: 10080 })).waitlistOfferMinutes, 10080);
      for (const bad of [4, 10081]) await problem(await c.send('PATCH', `/events/${eventId}`, { waitlistOfferMinutes: bad }), 400, 'invalid_request');
      assert.equal((await c.expect(201, 'POST', '/events', { name: 'Default', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' })).waitlistOfferMinutes, 1440);

      // A full queue refuses the next person (the limit is reached by rows written directly).
      const now = Date.now();
      const filler = Array.from({ length: MAX_WAITING_PER_TYPE - 2 }, (_, i) => ({
        id: `wle_filler${String(i).padStart(20, '0')}`,
        accountId,
        eventId,
        ticketTypeId: typeId,
        name: 'Filler',
        email: `filler${i}@example.com`,
        status: 'waiting',
        voucherId: null,
        offeredAt: null,
        offerExpiresAt: null,
        createdAt: now,
        updatedAt: now,
      }));
      for (let i = 0; i < filler.length; i += 500) await api.database.db.insertInto('waitlistEntries').values(filler.slice(i, i + 500)).execute();
      const full = await problem(await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(4) }), 409, 'waitlist_full');
      assert.equal(full.limit, MAX_WAITING_PER_TYPE);

      // Ended and cancelled events take nobody.
      // (An ended event is not published, event_ended: this one is published while it runs, then it ends.)
      const ended = await c.expect(201, 'POST', '/events', { name: 'Past', startsAt: '2020-05-01T18:00:00Z', endsAt: new Date(Date.now() + 3_600_000).toISOString(), timezone: 'UTC', currency: 'EUR' });
      const endedType = await c.expect(201, 'POST', `/events/${ended.id}/tickets`, { name: 'Floor', price: 0, quantity: 1 });
      await c.expect(200, 'POST', `/events/${ended.id}/publish`);
      await c.expect(200, 'PATCH', `/events/${ended.id}`, { endsAt: '2020-05-01T23:00:00Z' });
      await problem(await c.send('POST', `/events/${ended.id}/waitlist`, { ticketTypeId: endedType.id, ...person(5) }), 409, 'sales_closed');
      await c.expect(200, 'POST', `/events/${ended.id}/cancel`);
      await problem(await c.send('POST', `/events/${ended.id}/waitlist`, { ticketTypeId: endedType.id, ...person(5) }), 409, 'event_cancelled');
    });

    test('a freed place goes to the first in line: a ticket cancel, a pending order that expires, more quantity; each with its webhook', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST_WEBHOOKS, { workers: true });
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);
      const hook = await hookReceiver(t);
      await c.expect(201, 'POST', '/webhooks', { url: hook.url, events: ['waitlist.offered', 'waitlist.offer_expired'] });

      const { eventId, typeId, tickets } = await soldOut(c, 2, { waitlistOfferMinutes: 30 });
      const entries: Json[] = [];
      for (let i = 0; i < 4; i++) entries.push(await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(i) }));
      const offeredIds = () => hook.got.filter((m) => m.event === 'waitlist.offered').map((m) => m.data.id);

      // A ticket cancelled: its place is offered to the first in line, and a receiver hears of it.
      await c.expect(200, 'POST', `/tickets/${tickets[0].id}/cancel`);
      await until(() => offeredIds().length === 1, 10_000, 'the first offer');
      const message = hook.got.find((m) => m.event === 'waitlist.offered');
      assert.equal(message.data.id, entries[0].id);
      assert.equal(message.data.status, 'offered');
      assert.match(message.data.voucher.code, /^[A-Z0-9]{12}$/);
      assert.equal(Date.parse(message.data.offerExpiresAt) - Date.parse(message.data.offeredAt), 30 * 60_000);
      const voucher = await api.database.db.selectFrom('vouchers').selectAll().where('id', '=', message.data.voucher.id).executeTakeFirstOrThrow();
      assert.deepEqual(
        { code: voucher.code, ticketTypeId: voucher.ticketTypeId, discountType: voucher.discountType, maxUses: voucher.maxUses, redeemed: voucher.redeemed, reserve: voucher.reserve, validUntil: voucher.validUntil, waitlistEntryId: voucher.waitlistEntryId },
        { code: message.data.voucher.code, ticketTypeId: typeId, discountType: 'none', maxUses: 1, redeemed: 0, reserve: 1, validUntil: Date.parse(message.data.offerExpiresAt), waitlistEntryId: entries[0].id },
      );
      let listed = await allEntries(c, eventId);
      assert.deepEqual(listed.map((e) => [e.status, e.position]), [['offered', null], ['waiting', 1], ['waiting', 2], ['waiting', 3]]);
      assert.deepEqual(listed[0].voucher, message.data.voucher);
      // The place is kept for the offer: nobody else may take it, and nobody new may skip the queue.
      assert.equal((await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(9) })).position, 4);

      // A pending order's hold runs out: its place goes to the next.
      const paid = await c.expect(201, 'POST', `/events/${eventId}/tickets`, { name: 'Balcony', price: 1000, quantity: 1 });
      await c.expect(200, 'PATCH', `/events/${eventId}/tickets/${typeId}`, { quantity: 3 });
      await until(() => offeredIds().length === 2, 10_000, 'the second offer');
      assert.deepEqual(offeredIds(), [entries[0].id, entries[1].id]);
      const pending = await c.expect(201, 'POST', `/events/${eventId}/orders`, { buyer: person(20), items: [{ ticketTypeId: paid.id, quantity: 1 }], payment: { provider: 'manual' } });
      assert.equal(pending.status, 'pending');
      // The balcony is sold out by the hold: its waiting list takes a person, then the hold expires.
      const balcony = await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: paid.id, ...person(21) });
      assert.equal(await expireOrder(api.database.db, { accountId, eventId, orderId: pending.id }, Date.now() + 86_400_000), 0);
      await until(() => offeredIds().includes(balcony.id), 10_000, 'the offer of the expired hold');

      // More quantity: as many offers as new places, in queue order.
      await c.expect(200, 'PATCH', `/events/${eventId}/tickets/${typeId}`, { quantity: 5 });
      await until(() => offeredIds().length === 5, 10_000, 'two more offers');
      // (The two offers of one change are delivered in either order; the list shows their queue order.)
      assert.deepEqual(offeredIds().filter((id) => id !== balcony.id).sort(), entries.map((e) => e.id).sort());
      listed = await allEntries(c, eventId, `&ticketTypeId=${typeId}`);
      assert.deepEqual(listed.map((e) => [e.status, e.position]), [['offered', null], ['offered', null], ['offered', null], ['offered', null], ['waiting', 1]]);

      // The offers' places were promised: neither the quantity nor the capacity may drop below them.
      const lower = await problem(await c.send('PATCH', `/events/${eventId}/tickets/${typeId}`, { quantity: 4 }), 409, 'quantity_below_sold');
      assert.deepEqual([lower.sold, lower.held, lower.reserved], [1, 0, 4]);
      const tight = await problem(await c.send('PATCH', `/events/${eventId}`, { capacity: 5 }), 409, 'capacity_below_sold');
      assert.equal(tight.reserved, 5);
      assert.equal((await c.expect(200, 'PATCH', `/events/${eventId}`, { capacity: 6 })).capacity, 6);

      // Nothing more is free: another run offers nothing.
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId }), 0);
      assert.equal(await sweepWaitlists(api.database.db, Date.now(), quiet), 0);
      assert.equal(new Set(offeredIds()).size, offeredIds().length, 'no entry offered twice');
    });

    test("an offer's voucher only ends earlier by PATCH, and its entry keeps step: later or no end refused, an earlier end moves offerExpiresAt, ending it now expires the offer", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);
      const { eventId, typeId, tickets } = await soldOut(c, 1, { waitlistOfferMinutes: 60 });
      const ada = await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(1) });
      const bob = await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(2) });
      await c.expect(200, 'POST', `/tickets/${tickets[0].id}/cancel`);
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId }), 1);
      const offered = (await allEntries(c, eventId, '&status=offered'))[0];
      const path = `/events/${eventId}/vouchers/${offered.voucher.id}`;
      const end = Date.parse(offered.offerExpiresAt);

      // Later, or no end at all: it would keep a place past what the person was told.
      const later = await problem(await c.send('PATCH', path, { validUntil: new Date(end + 60_000).toISOString() }), 409, 'voucher_in_use');
      assert.match(later.detail, /earlier/);
      await problem(await c.send('PATCH', path, { validUntil: null }), 409, 'voucher_in_use');
      await problem(await c.send('PATCH', path, { validFrom: new Date().toISOString() }), 409, 'voucher_in_use');

      // Earlier but still open: the entry's offerExpiresAt follows, and its expiry job is due then.
      const sooner = end - 30 * 60_000;
      await c.expect(200, 'PATCH', path, { validUntil: new Date(sooner).toISOString() });
      assert.equal(Date.parse((await allEntries(c, eventId, '&status=offered'))[0].offerExpiresAt), sooner);
      assert.equal(await expireOffer(api.database.db, { accountId, eventId, entryId: ada.id }, sooner + 1), 0);
      assert.deepEqual((await allEntries(c, eventId)).map((e) => [e.id, e.status]), [[ada.id, 'expired'], [bob.id, 'offered']]);

      // Ended now: the offer expires at once (waitlist.offer_expired), and the place is offered on; it cannot be revived.
      const bobs = (await allEntries(c, eventId, '&status=offered'))[0];
      await c.expect(200, 'PATCH', `/events/${eventId}/vouchers/${bobs.voucher.id}`, { validUntil: new Date().toISOString() });
      assert.deepEqual((await allEntries(c, eventId)).map((e) => e.status), ['expired', 'expired']);
      const messages = await api.database.db.selectFrom('webhookMessages').select('payload').where('eventType', '=', 'waitlist.offer_expired').execute();
      assert.deepEqual(messages.map((m) => JSON.parse(m.payload).data.id).sort(), [ada.id, bob.id].sort());
      await problem(await c.send('PATCH', `/events/${eventId}/vouchers/${bobs.voucher.id}`, { validUntil: new Date(Date.now() + 3_600_000).toISOString() }), 409, 'voucher_in_use');
      // Nobody waits: the place is public again.
      await c.expect(201, 'POST', `/events/${eventId}/orders`, { buyer: { name: 'Late', email: 'late@example.com' }, items: [{ ticketTypeId: typeId, quantity: 1 }] });
    });

    test("waiting entries of a type whose sales ended expire in the sweep and stop keeping the event's capacity", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const c = jsonClient(api, key);
      const created = await c.expect(201, 'POST', '/events', { name: 'Ends', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR', capacity: 2 });
      const salesEndAt = Date.now() + 3_600_000;
      const early = await c.expect(201, 'POST', `/events/${created.id}/tickets`, { name: 'Early bird', price: 0, quantity: 1, salesEndAt: new Date(salesEndAt).toISOString() });
      const regular = await c.expect(201, 'POST', `/events/${created.id}/tickets`, { name: 'Regular', price: 0, quantity: 5 });
      await c.expect(200, 'POST', `/events/${created.id}/publish`);
      const buy = (typeId: string) => ({ buyer: { name: 'Buyer', email: 'buyer@example.com' }, items: [{ ticketTypeId: typeId, quantity: 1 }] });
      await c.expect(201, 'POST', `/events/${created.id}/orders`, buy(early.id));
      const waiting = await c.expect(201, 'POST', `/events/${created.id}/waitlist`, { ticketTypeId: early.id, ...person(1) });
      // The event's last place is kept for the person waiting.
      await problem(await c.send('POST', `/events/${created.id}/orders`, buy(regular.id)), 409, 'sold_out');
      assert.equal(await sweepWaitlists(api.database.db, Date.now(), quiet), 0, 'sales still open: nothing changes');

      assert.equal(await sweepWaitlists(api.database.db, salesEndAt + 1000, quiet), 1);
      assert.deepEqual((await allEntries(c, created.id)).map((e) => [e.id, e.status]), [[waiting.id, 'expired']]);
      await c.expect(201, 'POST', `/events/${created.id}/orders`, buy(regular.id));
    });

    test('an offer nobody takes expires at its time and passes to the next; removal ends an offer or leaves the queue', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST_WEBHOOKS, { workers: true });
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);
      const hook = await hookReceiver(t);
      await c.expect(201, 'POST', '/webhooks', { url: hook.url, events: ['waitlist.offered', 'waitlist.offer_expired'] });
      const { eventId, typeId, tickets } = await soldOut(c, 1, { waitlistOfferMinutes: 5 });
      const entries: Json[] = [];
      for (let i = 0; i < 4; i++) entries.push(await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(i) }));
      await c.expect(200, 'POST', `/tickets/${tickets[0].id}/cancel`);
      const seen = (event: string) => hook.got.filter((m) => m.event === event).map((m) => m.data.id);
      await until(() => seen('waitlist.offered').length === 1, 10_000, 'the first offer');
      const expiry = { accountId, eventId, entryId: entries[0].id };

      // Not yet due: the job waits for the rest of the offer, and nothing changes.
      const wait = await expireOffer(api.database.db, expiry);
      assert.ok(wait > 4 * 60_000 && wait <= 5 * 60_000, `waits ${wait} ms`);
      assert.equal(await sweepWaitlists(api.database.db, Date.now(), quiet), 0);

      // Six minutes later: expired, its voucher ended, the next person offered, both webhooks received.
      assert.equal(await expireOffer(api.database.db, expiry, Date.now() + 6 * 60_000), 0);
      await until(() => seen('waitlist.offered').length === 2 && seen('waitlist.offer_expired').length === 1, 10_000, 'the expiry and the next offer');
      assert.deepEqual(seen('waitlist.offer_expired'), [entries[0].id]);
      assert.deepEqual(seen('waitlist.offered'), [entries[0].id, entries[1].id]);
      const expiredMessage = hook.got.find((m) => m.event === 'waitlist.offer_expired').data;
      assert.equal(expiredMessage.status, 'expired');
      const firstVoucher = await api.database.db.selectFrom('vouchers').select(['validUntil']).where('waitlistEntryId', '=', entries[0].id).executeTakeFirstOrThrow();
      assert.ok(firstVoucher.validUntil! <= Date.now(), 'the expired offer keeps no place');
      // Run again: the expired entry is not offered again.
      assert.equal(await expireOffer(api.database.db, expiry, Date.now() + 6 * 60_000), 0);
      assert.deepEqual(seen('waitlist.offered'), [entries[0].id, entries[1].id]);

      // The sweep catches an offer whose job is late: the second offer runs out, the third person gets it.
      assert.equal(await sweepWaitlists(api.database.db, Date.now() + 6 * 60_000, quiet), 2);
      await until(() => seen('waitlist.offered').length === 3, 10_000, 'the third offer');
      assert.deepEqual(seen('waitlist.offer_expired'), [entries[0].id, entries[1].id]);

      // Removing the offered person ends the offer and passes it on; removing a waiting one leaves the queue.
      const removed = await c.expect(200, 'DELETE', `/events/${eventId}/waitlist/${entries[2].id}`);
      assert.deepEqual([removed.status, removed.voucher !== null], ['removed', true]);
      await until(() => seen('waitlist.offered').length === 4, 10_000, 'the offer passed on by removal');
      assert.deepEqual(seen('waitlist.offered'), entries.map((e) => e.id));
      const ended = await api.database.db.selectFrom('vouchers').select(['validUntil']).where('id', '=', removed.voucher.id).executeTakeFirstOrThrow();
      assert.ok(ended.validUntil! <= Date.now());
      const late = await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(7) });
      const leaving = await c.expect(200, 'DELETE', `/events/${eventId}/waitlist/${late.id}`);
      assert.deepEqual([leaving.status, leaving.position, leaving.voucher], ['removed', null, null]);
      // Removing again answers the entry as it is; an expired entry cannot be removed; unknown is 404.
      assert.equal((await c.expect(200, 'DELETE', `/events/${eventId}/waitlist/${late.id}`)).status, 'removed');
      const closed = await problem(await c.send('DELETE', `/events/${eventId}/waitlist/${entries[0].id}`), 409, 'waitlist_entry_ended');
      assert.equal(closed.entryStatus, 'expired');
      await problem(await c.send('DELETE', `/events/${eventId}/waitlist/wle_01m80eg3tperaacsapew6ns732`), 404, 'not_found');
      // A removed address may join again.
      assert.equal((await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(7) })).position, 1);
      assert.deepEqual((await allEntries(c, eventId)).map((e) => e.status), ['expired', 'expired', 'removed', 'offered', 'removed', 'waiting']);
    });

    test('300 joins race cancels, quantity raises, offer jobs on several workers and sweeps: each entry offered once, in queue order, never more than the places freed', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST_WEBHOOKS, { workers: true });
      // Two more worker processes' worth of runners on the same database.
      const silent = { info() {}, warn() {}, error() {} };
      for (let i = 0; i < 2; i++) {
        const workers = startWorkers(api.database, api.config, silent);
        onCleanup(t, () => workers.stop(1000));
      }
      const { key, accountId } = await api.account();
      const c = jsonClient(api, key);
      const hook = await hookReceiver(t);
      await c.expect(201, 'POST', '/webhooks', { url: hook.url, events: ['waitlist.offered'] });

      const QUANTITY = 60;
      const EARLY = 10;
      const RACING = 300;
      const CANCELS = 20;
      const RAISES = 4;
      const RAISE_BY = 5;
      const FREED = CANCELS + RAISES * RAISE_BY;
      const { eventId, typeId, tickets } = await soldOut(c, QUANTITY, { waitlistOfferMinutes: 60 });
      // Ten wait before the race.
      for (let i = 0; i < EARLY; i++) await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(i) });

      // The places start to free once as many have joined as will be freed, then race the other joins: a place never
      // frees while nobody waits for it (it would go on sale to anyone, and joins be refused), and the racing joiners
      // behind the first ten take most of the offers.
      let joinedSoFar = EARLY;
      let enoughJoined!: () => void;
      const enough = new Promise<void>((resolve) => (enoughJoined = resolve));
      const join = async (i: number) => {
        const res = await c.send('POST', `/events/${eventId}/waitlist`, { ticketTypeId: typeId, ...person(EARLY + i) });
        if (res.status === 201 && ++joinedSoFar >= FREED) enoughJoined();
        return res;
      };
      const answers = await Promise.all([
        ...Array.from({ length: RACING }, (_, i) => join(i)),
        ...tickets.slice(0, CANCELS).map((ticket) => enough.then(() => c.send('POST', `/tickets/${ticket.id}/cancel`))),
        // The raises one after another (each sets the quantity), racing everything else.
        enough.then(async () => {
          for (let i = 1; i <= RAISES; i++) await c.expect(200, 'PATCH', `/events/${eventId}/tickets/${typeId}`, { quantity: QUANTITY + i * RAISE_BY });
          return null;
        }),
        ...Array.from({ length: 6 }, () => sweepWaitlists(api.database.db, Date.now(), quiet).then(() => null)),
        ...Array.from({ length: 6 }, () => enough.then(() => offerPlaces(api.database.db, { accountId, eventId })).then(() => null)),
      ]);
      const statuses = await Promise.all(answers.map(async (res) => (res === null ? null : `${res.status}${res.ok ? '' : ` ${await res.text()}`}`)));
      assert.deepEqual([...new Set(statuses.slice(0, RACING))], ['201'], 'every join was taken');
      const joined = EARLY + RACING;
      assert.deepEqual([...new Set(statuses.slice(RACING, RACING + CANCELS))], ['200'], 'every cancel was made');
      const type = await c.expect(200, 'GET', `/events/${eventId}/tickets/${typeId}`);
      assert.equal(type.quantity, QUANTITY + RAISES * RAISE_BY);
      assert.equal(type.sold, QUANTITY - CANCELS);

      await until(async () => (await openWaitlistJobs(api)) === 0 && (await allEntries(c, eventId, '&status=offered')).length === FREED, 30_000, 'the offers');
      // One more sweep and offer run change nothing.
      assert.equal(await sweepWaitlists(api.database.db, Date.now(), quiet), 0);
      assert.equal(await offerPlaces(api.database.db, { accountId, eventId }), 0);

      const entries = await allEntries(c, eventId);
      assert.equal(entries.length, joined);
      const offered = entries.filter((e) => e.status === 'offered');
      assert.equal(offered.length, FREED, 'offers never more than the places freed');
      // Strict queue order: the offered entries are the head of the queue, offered no later than anyone behind them.
      assert.deepEqual(entries.slice(0, FREED).map((e) => e.status), Array(FREED).fill('offered'));
      for (let i = 1; i < FREED; i++) assert.ok(Date.parse(offered[i].offeredAt) >= Date.parse(offered[i - 1].offeredAt), 'offers in queue order');
      assert.deepEqual(entries.slice(FREED).map((e) => e.position), Array.from({ length: joined - FREED }, (_, i) => i + 1));

      // Exactly one voucher and one message per offered entry.
      const db = api.database.db;
      const vouchers = await db.selectFrom('vouchers').select(['waitlistEntryId', 'code']).where('eventId', '=', eventId).execute();
      assert.equal(vouchers.length, FREED);
      assert.equal(new Set(vouchers.map((v) => v.waitlistEntryId)).size, FREED, 'no entry offered twice');
      assert.equal(new Set(vouchers.map((v) => v.code)).size, FREED);
      const messages = await db.selectFrom('webhookMessages').select('payload').where('eventType', '=', 'waitlist.offered').execute();
      assert.deepEqual(messages.map((m) => JSON.parse(m.payload).data.id).sort(), offered.map((e) => e.id).sort());
      await until(() => hook.got.length >= FREED, 30_000, 'the deliveries');
      assert.deepEqual([...new Set(hook.got.map((m) => m.data.id))].sort(), offered.map((e) => e.id).sort());

      // No oversell: sold, held and the places offers keep fit the quantity, and sold is the valid tickets.
      const row = await db.selectFrom('ticketTypes').select(['sold', 'held', 'quantity']).where('id', '=', typeId).executeTakeFirstOrThrow();
      const valid = await db.selectFrom('tickets').select('id').where('ticketTypeId', '=', typeId).where('status', '=', 'valid').execute();
      assert.equal(row.sold, valid.length);
      assert.equal(row.sold + row.held + vouchers.length, row.quantity);
    });
  });
}
