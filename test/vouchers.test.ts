/**
 * Vouchers end to end (docs/events.md, "Vouchers"), on every engine of the run: every route and
 * its errors; discounts at order time (percent rounded, fixed capped); hidden ticket types;
 * reserved places (refused to the public, taken by the holder, back when the voucher ends); the
 * waiting list's share of the availability rule; uses given back by pending orders that end unpaid
 * and taken again by a late completion; and 300 concurrent orders redeeming vouchers of limited
 * uses, which never redeem more than allowed nor sell more than there is.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TenantScope } from '../src/db/tenant.js';
import { expireOrder } from '../src/events/orders.service.js';
import { ENGINES, freshStorage, jsonClient as client, type JsonClient as Client, problem, startApp, type TestApp, until } from './helpers.js';

type Json = any;

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const ada = { name: 'Ada Lovelace', email: 'ada@example.com' };
const manual = { provider: 'manual' };

/** A published event with the given ticket types (name → quantity, price, hidden). */
async function onSale<K extends string>(c: Client, types: Record<K, { quantity: number; price?: number; hidden?: boolean }>, event: Record<string, unknown> = {}) {
  const startsAt = Date.now() + 24 * HOUR;
  const created = await c.expect(201, 'POST', '/events', { name: 'Gala', startsAt: iso(startsAt), endsAt: iso(startsAt + 3 * HOUR), timezone: 'UTC', currency: 'EUR', ...event });
  const ids = {} as Record<K, string>;
  for (const [name, { quantity, price = 1000, hidden }] of Object.entries(types) as Array<[K, { quantity: number; price?: number; hidden?: boolean }]>) {
    ids[name] = (await c.expect(201, 'POST', `/events/${created.id}/tickets`, { name, price, quantity, ...(hidden ? { hidden } : {}) })).id;
  }
  await c.expect(200, 'POST', `/events/${created.id}/publish`);
  return { eventId: created.id as string, ids };
}

/** An order's body: `n` tickets of each type given. */
const orderOf = (items: Record<string, number>, extra: Record<string, unknown> = {}) => ({
  buyer: ada,
  items: Object.entries(items).map(([ticketTypeId, quantity]) => ({ ticketTypeId, quantity })),
  ...extra,
});

/** Expires a pending order now, as its job would once its hold ran out. */
const expire = (api: TestApp, accountId: string, eventId: string, orderId: string) => expireOrder(api.database.db, { accountId, eventId, orderId }, Date.now() + 86_400_000);

for (const engine of ENGINES) {
  describe(`vouchers (${engine})`, () => {
    test('create, bulk, list, read, change and delete vouchers, with every refusal', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { GA: { quantity: 100 }, VIP: { quantity: 10 } });
      const base = `/events/${eventId}/vouchers`;

      const given = await c.expect(201, 'POST', base, { code: 'spring-24', discountType: 'percent', discountValue: 20, maxUses: 50, comment: 'Newsletter' });
      assert.match(given.id, /^vch_/);
      assert.deepEqual(
        { ...given, id: undefined, createdAt: undefined, updatedAt: undefined },
        {
          id: undefined,
          eventId,
          code: 'SPRING-24',
          ticketTypeId: null,
          discountType: 'percent',
          discountValue: 20,
          maxUses: 50,
          redeemed: 0,
          remaining: 50,
          reserve: false,
          validFrom: null,
          validUntil: null,
          comment: 'Newsletter',
          waitlistEntryId: null,
          createdAt: undefined,
          updatedAt: undefined,
        },
      );
      const res = await c.send('POST', base, { ticketTypeId: ids.VIP });
      assert.equal(res.status, 201);
      const generated = await res.json();
      assert.equal(res.headers.get('location'), `/v1${base}/${generated.id}`);
      assert.match(generated.code, /^[A-HJ-NP-Z2-9]{12}$/, 'a generated code: 12 characters no one misreads');
      assert.deepEqual([generated.maxUses, generated.discountType, generated.discountValue, generated.ticketTypeId], [1, 'none', 0, ids.VIP]);

      // Codes are compared ignoring case and are unique per event.
      const taken = await problem(await c.send('POST', base, { code: 'Spring-24' }), 409, 'voucher_code_taken');
      assert.deepEqual(taken.codes, ['SPRING-24']);
      const invalid = async (body: Json, path: string) => {
        const p = await problem(await c.send('POST', base, body), 400, 'invalid_request');
        assert.ok(p.errors.some((e: Json) => e.path.startsWith(path)), `${JSON.stringify(body)}: ${JSON.stringify(p.errors)}`);
      };
      await invalid({ code: 'abc' }, '/code');
      await invalid({ code: 'NO SPACES' }, '/code');
      await invalid({ discountType: 'percent', discountValue: 101 }, '/discountValue');
      await invalid({ discountType: 'fixed' }, '/discountValue');
      await invalid({ discountValue: 5 }, '/discountValue');
      await invalid({ reserve: true, maxUses: 2 }, '/reserve');
      await invalid({ ticketTypeId: 'tt_01m80eg3tperaacsapew6ns732' }, '/ticketTypeId');
      await invalid({ validFrom: iso(Date.now() + HOUR), validUntil: iso(Date.now()) }, '/validUntil');
      await invalid({ maxUses: 0 }, '/maxUses');

      // Bulk: generated codes after a prefix, or given codes; all or none.
      const batch = await c.expect(201, 'POST', `${base}/bulk`, { count: 30, codePrefix: 'sponsor-', discountType: 'fixed', discountValue: 500, ticketTypeId: ids.GA });
      assert.equal(batch.data.length, 30);
      assert.equal(new Set(batch.data.map((v: Json) => v.code)).size, 30);
      for (const v of batch.data) {
        assert.match(v.code, /^SPONSOR-[A-HJ-NP-Z2-9]{10}$/);
        assert.deepEqual([v.discountType, v.discountValue, v.ticketTypeId, v.maxUses], ['fixed', 500, ids.GA, 1]);
      }
      const named = await c.expect(201, 'POST', `${base}/bulk`, { codes: ['alpha-1', 'ALPHA-2'], maxUses: 3 });
      assert.deepEqual(named.data.map((v: Json) => v.code), ['ALPHA-1', 'ALPHA-2']);
      assert.deepEqual((await problem(await c.send('POST', `${base}/bulk`, { codes: ['BETA-1', 'alpha-2'] }), 409, 'voucher_code_taken')).codes, ['ALPHA-2']);
      assert.equal((await c.expect(200, 'GET', `${base}?code=beta-1`)).data.length, 0, 'a refused batch creates none');
      await problem(await c.send('POST', `${base}/bulk`, { codes: ['GAMMA', 'gamma'] }), 400, 'invalid_request');
      await problem(await c.send('POST', `${base}/bulk`, { count: 2, codes: ['DELTA'] }), 400, 'invalid_request');
      await problem(await c.send('POST', `${base}/bulk`, { maxUses: 2 }), 400, 'invalid_request');
      await problem(await c.send('POST', `${base}/bulk`, { count: 1001 }), 400, 'invalid_request');
      await problem(await c.send('POST', `${base}/bulk`, { codes: ['EPSILON'], codePrefix: 'X' }), 400, 'invalid_request');

      // The list: newest first, paged, filtered by code (any case) and ticket type.
      const all: Json[] = [];
      let cursor: string | null = null;
      do {
        const page: Json = await c.expect(200, 'GET', `${base}?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
        all.push(...page.data);
        cursor = page.nextCursor;
      } while (cursor);
      assert.equal(all.length, 34);
      assert.deepEqual(all.map((v) => v.id), [...all.map((v) => v.id)].sort().reverse(), 'newest first');
      assert.deepEqual((await c.expect(200, 'GET', `${base}?code=spring-24`)).data.map((v: Json) => v.id), [given.id]);
      assert.equal((await c.expect(200, 'GET', `${base}?ticketTypeId=${ids.GA}&limit=100`)).data.length, 30);
      assert.deepEqual((await c.expect(200, 'GET', `${base}?ticketTypeId=${ids.VIP}`)).data.map((v: Json) => v.id), [generated.id]);
      assert.deepEqual(await c.expect(200, 'GET', `${base}/${given.id}`), given);
      await problem(await c.send('GET', `${base}/vch_01m80eg3tperaacsapew6ns732`), 404, 'not_found');

      // Another account sees none of it.
      const other = client(api, (await api.account()).key);
      await problem(await other.send('GET', `${base}/${given.id}`), 404, 'not_found');
      await problem(await other.send('GET', base), 404, 'not_found');
      await problem(await other.send('POST', base, {}), 404, 'not_found');

      // Changes: validity, comment, uses; the discount only while unused.
      const changed = await c.expect(200, 'PATCH', `${base}/${given.id}`, { validUntil: iso(Date.now() + HOUR), comment: null, maxUses: 60 });
      assert.deepEqual([changed.comment, changed.maxUses, changed.remaining], [null, 60, 60]);
      assert.ok(changed.validUntil);
      await problem(await c.send('PATCH', `${base}/${given.id}`, {}), 400, 'invalid_request');
      await problem(await c.send('PATCH', `${base}/${given.id}`, { discountType: 'percent', discountValue: 0 }), 400, 'invalid_request');
      assert.deepEqual(
        (await c.expect(200, 'PATCH', `${base}/${given.id}`, { discountType: 'fixed', discountValue: 300 })).discountValue,
        300,
      );
      await problem(await c.send('PATCH', `${base}/${given.id}`, { reserve: true }), 400, 'invalid_request');
      const order = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 2 }, { voucher: 'Spring-24' }));
      assert.deepEqual(order.voucher, { id: given.id, code: 'SPRING-24' });
      const used = await c.expect(200, 'GET', `${base}/${given.id}`);
      assert.deepEqual([used.redeemed, used.remaining], [2, 58]);
      assert.equal((await problem(await c.send('PATCH', `${base}/${given.id}`, { discountValue: 400 }), 409, 'voucher_in_use')).redeemed, 2);
      await problem(await c.send('PATCH', `${base}/${given.id}`, { maxUses: 1 }), 400, 'invalid_request');
      assert.equal((await c.expect(200, 'PATCH', `${base}/${given.id}`, { maxUses: 2 })).remaining, 0);

      // Delete: an unused voucher goes; a used one is ended instead.
      await problem(await c.send('DELETE', `${base}/${given.id}`), 409, 'voucher_in_use');
      assert.equal((await c.send('DELETE', `${base}/${generated.id}`)).status, 204);
      await problem(await c.send('GET', `${base}/${generated.id}`), 404, 'not_found');
      await problem(await c.send('DELETE', `${base}/${generated.id}`), 404, 'not_found');

      // A cancelled event's vouchers no longer change.
      await c.expect(200, 'POST', `/events/${eventId}/cancel`);
      await problem(await c.send('POST', base, {}), 409, 'event_cancelled');
      await problem(await c.send('PATCH', `${base}/${given.id}`, { comment: 'x' }), 409, 'event_cancelled');
    });

    test('discounts at order time: percent rounded per ticket, fixed never below 0; the order and its tickets show the price paid', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { A: { quantity: 50, price: 999 }, B: { quantity: 50, price: 500 } });
      const base = `/events/${eventId}/vouchers`;
      await c.expect(201, 'POST', base, { code: 'PCT15', discountType: 'percent', discountValue: 15, maxUses: 10 });
      await c.expect(201, 'POST', base, { code: 'FIX800', discountType: 'fixed', discountValue: 800, maxUses: 10, ticketTypeId: ids.B });
      await c.expect(201, 'POST', base, { code: 'FREE', discountType: 'percent', discountValue: 100, maxUses: 10 });

      // 15% of 999 is 149.85: 150 off each ticket of every type.
      const pct = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.A]: 2, [ids.B]: 1 }, { voucher: 'pct15' }));
      assert.deepEqual(
        pct.items.map((i: Json) => [i.quantity, i.unitPrice, i.discount, i.amount]),
        [
          [2, 849, 150, 1698],
          [1, 425, 75, 425],
        ],
      );
      assert.equal(pct.total, 2123);
      assert.deepEqual(pct.tickets.map((tk: Json) => tk.price).sort(), [425, 849, 849]);
      assert.equal(pct.payments[0].amount, 2123);

      // Fixed 800 off a 500 ticket: it costs 0; the A tickets of the same order pay full price.
      const fixed = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.A]: 1, [ids.B]: 2 }, { voucher: 'FIX800' }));
      assert.deepEqual(fixed.items.map((i: Json) => [i.unitPrice, i.discount, i.amount]), [[999, 0, 999], [0, 500, 0]]);
      assert.equal(fixed.total, 999);
      assert.equal((await c.expect(200, 'GET', `${base}?code=FIX800`)).data[0].redeemed, 2, 'uses count the tickets it applies to');

      // An order made free by its voucher completes at once, even with a provider.
      const free = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.A]: 1 }, { voucher: 'FREE', payment: manual }));
      assert.deepEqual([free.status, free.total, free.items[0].discount], ['completed', 0, 999]);

      // Without a voucher, nothing is discounted and the order says so.
      const plain = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.A]: 1 }));
      assert.deepEqual([plain.voucher, plain.items[0].discount, plain.items[0].unitPrice], [null, 0, 999]);
      assert.deepEqual(await c.expect(200, 'GET', `/orders/${pct.id}`), pct);
    });

    test('an order with a voucher that is unknown, not yet or no longer valid, for another type or used up is refused', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { A: { quantity: 50 }, B: { quantity: 50 } });
      const base = `/events/${eventId}/vouchers`;
      const orders = `/events/${eventId}/orders`;
      await c.expect(201, 'POST', base, { code: 'LATER', validFrom: iso(Date.now() + HOUR) });
      await c.expect(201, 'POST', base, { code: 'OVER', validUntil: iso(Date.now() - 1000), validFrom: iso(Date.now() - HOUR) });
      await c.expect(201, 'POST', base, { code: 'ONLY-B', ticketTypeId: ids.B });
      await c.expect(201, 'POST', base, { code: 'THREE', maxUses: 3 });

      await problem(await c.send('POST', orders, orderOf({ [ids.A]: 1 }, { voucher: 'NOPE' })), 404, 'voucher_not_found');
      const later = await problem(await c.send('POST', orders, orderOf({ [ids.A]: 1 }, { voucher: 'later' })), 409, 'voucher_not_valid');
      assert.ok(later.validFrom);
      await problem(await c.send('POST', orders, orderOf({ [ids.A]: 1 }, { voucher: 'OVER' })), 409, 'voucher_not_valid');
      assert.equal((await problem(await c.send('POST', orders, orderOf({ [ids.A]: 1 }, { voucher: 'ONLY-B' })), 409, 'voucher_not_applicable')).ticketTypeId, ids.B);
      assert.equal((await problem(await c.send('POST', orders, orderOf({ [ids.A]: 2, [ids.B]: 2 }, { voucher: 'THREE' })), 409, 'voucher_used_up')).remaining, 3);
      await c.expect(201, 'POST', orders, orderOf({ [ids.A]: 2 }, { voucher: 'THREE' }));
      assert.equal((await problem(await c.send('POST', orders, orderOf({ [ids.B]: 2 }, { voucher: 'THREE' })), 409, 'voucher_used_up')).remaining, 1);
      await c.expect(201, 'POST', orders, orderOf({ [ids.B]: 1 }, { voucher: 'THREE' }));
      const types = await c.expect(200, 'GET', `/events/${eventId}/tickets`);
      assert.deepEqual(types.data.map((ty: Json) => ty.sold), [2, 1], 'refused orders took nothing');
    });

    test('a hidden ticket type is sold only with a voucher naming it, and unknown to everyone else', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { Public: { quantity: 50 }, Crew: { quantity: 5, price: 0, hidden: true } });
      const orders = `/events/${eventId}/orders`;
      const crew = await c.expect(200, 'GET', `/events/${eventId}/tickets/${ids.Crew}`);
      assert.equal(crew.hidden, true);
      assert.equal((await c.expect(200, 'GET', `/events/${eventId}/tickets/${ids.Public}`)).hidden, false);
      await c.expect(201, 'POST', `/events/${eventId}/vouchers`, { code: 'CREW-KEY', ticketTypeId: ids.Crew, maxUses: 5 });
      await c.expect(201, 'POST', `/events/${eventId}/vouchers`, { code: 'ANY-TYPE', maxUses: 5 });

      // The same refusal as a type the event does not have: nothing tells that it exists.
      const unknown = await problem(await c.send('POST', orders, orderOf({ tt_01m80eg3tperaacsapew6ns732: 1 })), 400, 'invalid_request');
      const hidden = await problem(await c.send('POST', orders, orderOf({ [ids.Crew]: 1 })), 400, 'invalid_request');
      assert.deepEqual(hidden.errors.map((e: Json) => e.path), unknown.errors.map((e: Json) => e.path));
      assert.equal(hidden.errors[0].message, unknown.errors[0].message);
      await problem(await c.send('POST', orders, orderOf({ [ids.Crew]: 1 }, { voucher: 'ANY-TYPE' })), 400, 'invalid_request');

      const order = await c.expect(201, 'POST', orders, orderOf({ [ids.Crew]: 2, [ids.Public]: 1 }, { voucher: 'crew-key' }));
      assert.deepEqual(order.items.map((i: Json) => [i.ticketTypeId, i.quantity]), [[ids.Crew, 2], [ids.Public, 1]]);
      assert.equal((await c.expect(200, 'GET', `/events/${eventId}/vouchers?code=CREW-KEY`)).data[0].redeemed, 2, 'only its own type uses it');

      // Shown again, anyone may buy it.
      assert.equal((await c.expect(200, 'PATCH', `/events/${eventId}/tickets/${ids.Crew}`, { hidden: false })).hidden, false);
      await c.expect(201, 'POST', orders, orderOf({ [ids.Crew]: 1 }));
      const created = await c.expect(201, 'POST', `/events/${eventId}/tickets`, { name: 'Secret', price: 0, quantity: 1, hidden: true });
      assert.equal(created.hidden, true);
    });

    test('a reserving voucher keeps its places from the public until it ends; its holder takes them', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { GA: { quantity: 10 }, Other: { quantity: 100 } }, { capacity: 20 });
      const orders = `/events/${eventId}/orders`;
      const base = `/events/${eventId}/vouchers`;
      const available = async (type: string) => (await c.expect(200, 'GET', `/events/${eventId}/tickets/${type}`)).available;

      const press = await c.expect(201, 'POST', base, { code: 'PRESS', ticketTypeId: ids.GA, reserve: true, maxUses: 4 });
      assert.equal(press.reserve, true);
      assert.equal(await available(ids.GA), 6);
      // More than the free places cannot be reserved.
      assert.equal((await problem(await c.send('POST', base, { ticketTypeId: ids.GA, reserve: true, maxUses: 7 }), 409, 'sold_out')).available, 6);
      await problem(await c.send('POST', `${base}/bulk`, { count: 4, ticketTypeId: ids.GA, reserve: true, maxUses: 2 }), 409, 'sold_out');

      assert.equal((await problem(await c.send('POST', orders, orderOf({ [ids.GA]: 7 })), 409, 'sold_out')).available, 6);
      await c.expect(201, 'POST', orders, orderOf({ [ids.GA]: 6 }, { payment: manual }));
      assert.equal((await problem(await c.send('POST', orders, orderOf({ [ids.GA]: 1 })), 409, 'sold_out')).available, 0);
      // The reservation counts against the event's capacity too: 20 - 6 held - 4 reserved.
      assert.equal((await problem(await c.send('POST', orders, orderOf({ [ids.Other]: 11 })), 409, 'sold_out')).available, 10);
      await c.expect(201, 'POST', orders, orderOf({ [ids.Other]: 9 }));

      // The holder gets the reserved places, even with the rest of the type taken.
      const held = await c.expect(201, 'POST', orders, orderOf({ [ids.GA]: 3 }, { voucher: 'press', payment: manual }));
      assert.equal(held.status, 'pending');
      assert.deepEqual(await c.expect(200, 'GET', `/events/${eventId}/tickets/${ids.GA}`).then((ty) => [ty.sold, ty.held, ty.available]), [0, 9, 0]);
      // Enlarging the reservation needs free places: the event has 1 (GA none).
      await problem(await c.send('PATCH', `${base}/${press.id}`, { maxUses: 5 }), 409, 'sold_out');
      // Its last place still waits for it; the public is still refused.
      await problem(await c.send('POST', orders, orderOf({ [ids.Other]: 2 })), 409, 'sold_out');
      await c.expect(201, 'POST', orders, orderOf({ [ids.Other]: 1 }));

      // Reserving off: its remaining place goes back to the public; on again needs it free.
      await c.expect(201, 'POST', orders, orderOf({ [ids.GA]: 1 }, { voucher: 'PRESS' }));
      assert.equal((await c.expect(200, 'GET', `${base}/${press.id}`)).remaining, 0);
      await c.expect(200, 'POST', `/orders/${held.id}/cancel`);
      assert.equal((await c.expect(200, 'GET', `${base}/${press.id}`)).remaining, 3, 'the cancelled order gave its uses back');
      assert.equal(await available(ids.GA), 0, 'and they are reserved again');
      await c.expect(200, 'PATCH', `${base}/${press.id}`, { reserve: false });
      assert.equal(await available(ids.GA), 3, 'its 3 places are the public\'s: 10 - 1 sold - 6 held');
      await c.expect(201, 'POST', orders, orderOf({ [ids.GA]: 1 }));
      assert.equal((await problem(await c.send('PATCH', `${base}/${press.id}`, { reserve: true }), 409, 'sold_out')).available, 2);

      // Places come back when a reservation's validUntil passes, without anyone acting.
      const { eventId: second, ids: secondIds } = await onSale(c, { GA: { quantity: 5 } });
      await c.expect(201, 'POST', `/events/${second}/vouchers`, { ticketTypeId: secondIds.GA, reserve: true, maxUses: 5, validUntil: iso(Date.now() + 1500) });
      await problem(await c.send('POST', `/events/${second}/orders`, orderOf({ [secondIds.GA]: 1 })), 409, 'sold_out');
      await until(async () => (await c.send('POST', `/events/${second}/orders`, orderOf({ [secondIds.GA]: 5 }))).status === 201, 10_000, 'the reservation to end');
    });

    test("the event's capacity keeps those waiting from a reserving voucher's order with places of other types; its own places alone need no waiting term", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { GA: { quantity: 2 }, Other: { quantity: 5 } }, { capacity: 3 });
      await c.expect(201, 'POST', `/events/${eventId}/vouchers`, { code: 'PRESS-1', ticketTypeId: ids.GA, reserve: true, maxUses: 1 });
      await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 }));
      // GA is sold out to the public (1 sold, 1 reserved): Grace waits, and takes the event's last public place.
      await c.expect(201, 'POST', `/events/${eventId}/waitlist`, { ticketTypeId: ids.GA, name: 'Grace', email: 'grace@example.com' });
      await problem(await c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.Other]: 1 })), 409, 'sold_out');

      // The voucher's GA place and an Other place: the Other place is the one Grace waits for.
      const mixed = await problem(await c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1, [ids.Other]: 1 }, { voucher: 'press-1' })), 409, 'sold_out');
      assert.equal(mixed.available, 1, 'the voucher\'s own place, and no other');
      // The voucher's place alone: it was kept for it.
      await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 }, { voucher: 'press-1' }));
    });

    test("an order change refused for a type whose free places a reserving voucher keeps says how many are free by the availability rule", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { eventId, ids } = await onSale(c, { GA: { quantity: 5 }, VIP: { quantity: 2 } });
      await c.expect(201, 'POST', `/events/${eventId}/vouchers`, { ticketTypeId: ids.VIP, reserve: true, maxUses: 1 });
      await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.VIP]: 1 }));
      const placed = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 }));
      const refused = await problem(await c.send('POST', `/orders/${placed.id}/changes`, { changeTypes: [{ ticketId: placed.tickets[0].id, ticketTypeId: ids.VIP }] }), 409, 'sold_out');
      assert.deepEqual([refused.ticketTypeId, refused.available], [ids.VIP, 0], 'the reserved place is not free');
    });

    test("createOrder's OpenAPI lists the voucher problems it answers", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const doc = (await (await api.fetch('/openapi.json')).json()) as Json;
      const op = Object.values(doc.paths as Record<string, Record<string, Json>>).flatMap((item) => Object.values(item)).find((o) => o?.operationId === 'createOrder');
      const described = Object.values(op.responses as Record<string, Json>).map((r) => r.description ?? '').join(' ');
      for (const code of ['voucher_not_found', 'voucher_not_valid', 'voucher_not_applicable', 'voucher_used_up']) assert.ok(described.includes(`\`${code}\``), `${code} in ${described}`);
    });

    test('people waiting come first: a public order does not take the places they wait for; an offer is redeemed and given back', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const { eventId, ids } = await onSale(c, { GA: { quantity: 5 }, Other: { quantity: 1 } });
      const db = api.database.db;
      const now = Date.now();
      // The waiting list is written directly: its routes are not part of this test.
      const entry = (id: string, status: string, voucherId: string | null = null, ticketTypeId: string = ids.GA) => ({
        id,
        accountId,
        eventId,
        ticketTypeId,
        name: 'Grace',
        email: `${id}@example.com`,
        status,
        voucherId,
        offeredAt: null,
        offerExpiresAt: null,
        createdAt: now,
        updatedAt: now,
      });
      await db
        .insertInto('waitlistEntries')
        .values([entry('wle_01m80eg3tperaacsapew6ns701', 'waiting'), entry('wle_01m80eg3tperaacsapew6ns702', 'waiting'), entry('wle_01m80eg3tperaacsapew6ns704', 'waiting', null, ids.Other)])
        .execute();
      assert.equal((await c.expect(200, 'GET', `/events/${eventId}/tickets/${ids.GA}`)).available, 3);
      assert.equal((await problem(await c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 4 })), 409, 'sold_out')).available, 3);
      await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 3 }));

      // One of them gets an offer: a single-use reserving voucher; the entry no longer waits.
      const offer = 'vch_01m80eg3tperaacsapew6ns703';
      await db.updateTable('waitlistEntries').set({ status: 'offered', voucherId: offer }).where('id', '=', 'wle_01m80eg3tperaacsapew6ns701').execute();
      await db
        .insertInto('vouchers')
        .values({ id: offer, accountId, eventId, code: 'OFFER-1', ticketTypeId: ids.GA, discountType: 'none', discountValue: 0, maxUses: 1, redeemed: 0, reserve: 1, validFrom: null, validUntil: now + HOUR, comment: null, waitlistEntryId: 'wle_01m80eg3tperaacsapew6ns701', createdAt: now, updatedAt: now })
        .execute();
      const statusOf = async () => (await db.selectFrom('waitlistEntries').select('status').where('id', '=', 'wle_01m80eg3tperaacsapew6ns701').executeTakeFirstOrThrow()).status;
      await problem(await c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 })), 409, 'sold_out');
      await problem(await c.send('DELETE', `/events/${eventId}/vouchers/${offer}`), 409, 'voucher_in_use');
      await problem(await c.send('PATCH', `/events/${eventId}/vouchers/${offer}`, { maxUses: 2 }), 409, 'voucher_in_use');

      // The offer takes its own place, not the place someone waits for in another type.
      const other = await problem(await c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1, [ids.Other]: 1 }, { voucher: 'offer-1' })), 409, 'sold_out');
      assert.deepEqual([other.ticketTypeId, other.available], [ids.Other, 0]);
      const pending = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 }, { voucher: 'offer-1', payment: manual }));
      assert.equal(await statusOf(), 'redeemed');
      await c.expect(200, 'POST', `/orders/${pending.id}/cancel`);
      assert.equal(await statusOf(), 'offered', 'its order ended unpaid while the offer stands: offered again');
      const again = await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 }, { voucher: 'OFFER-1', payment: manual }));
      assert.equal(await statusOf(), 'redeemed');
      // The offer ends while its order is pending; the order then expires: the entry's offer expired.
      await c.expect(200, 'PATCH', `/events/${eventId}/vouchers/${offer}`, { validUntil: iso(Date.now() - 1) });
      assert.equal(await expire(api, accountId, eventId, again.id), 0);
      assert.equal(await statusOf(), 'expired');
      assert.equal((await c.expect(200, 'GET', `/events/${eventId}/vouchers/${offer}`)).redeemed, 0);
      // The other still waits: the freed place is not sold to the public.
      await problem(await c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 2 })), 409, 'sold_out');
      await c.expect(201, 'POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: 1 }));
    });

    test('pending orders that expire or are cancelled give their uses back; a late completion takes them again or is refused', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const { eventId, ids } = await onSale(c, { GA: { quantity: 50 } });
      const voucher = await c.expect(201, 'POST', `/events/${eventId}/vouchers`, { code: 'TWO-USES', maxUses: 2, discountType: 'percent', discountValue: 50 });
      const remaining = async () => (await c.expect(200, 'GET', `/events/${eventId}/vouchers/${voucher.id}`)).remaining;
      const place = (n: number) => c.send('POST', `/events/${eventId}/orders`, orderOf({ [ids.GA]: n }, { voucher: 'TWO-USES', payment: manual }));

      const first = await (await place(2)).json();
      assert.deepEqual([first.status, first.total, first.voucher.code], ['pending', 1000, 'TWO-USES']);
      assert.equal(await remaining(), 0, 'a pending order holds its uses');
      await problem(await place(1), 409, 'voucher_used_up');
      assert.equal(await expire(api, accountId, eventId, first.id), 0);
      assert.equal(await remaining(), 2, 'the expired order gave them back');

      const second = await (await place(1)).json();
      await c.expect(200, 'POST', `/orders/${second.id}/cancel`);
      assert.equal(await remaining(), 2, 'the cancelled order gave its use back');

      // A late payment of the expired order takes its uses again while they are there.
      const late = await c.expect(200, 'POST', `/orders/${first.id}/confirm`, {});
      assert.equal(late.status, 'completed');
      assert.equal(await remaining(), 0);
      // Cancelling a completed order's ticket does not give the use back.
      await c.expect(200, 'POST', `/tickets/${late.tickets[0].id}/cancel`, {});
      assert.equal(await remaining(), 0);

      // Uses gone meanwhile: the late completion is refused and changes nothing.
      await c.expect(200, 'PATCH', `/events/${eventId}/vouchers/${voucher.id}`, { maxUses: 4 });
      const third = await (await place(2)).json();
      assert.equal(await expire(api, accountId, eventId, third.id), 0);
      await (await place(2)).json();
      await problem(await c.send('POST', `/orders/${third.id}/confirm`, {}), 409, 'order_expired');
      assert.equal((await c.expect(200, 'GET', `/orders/${third.id}`)).status, 'expired');
      assert.equal(await remaining(), 0);

      // Cancelling the event cancels its pending orders, and their uses come back.
      await c.expect(200, 'POST', `/events/${eventId}/cancel`);
      assert.equal(await remaining(), 2);
      const scope = new TenantScope(api.database.db, accountId);
      const redeemed = await scope.selectFrom('vouchers').select('redeemed').where('id', '=', voucher.id).executeTakeFirstOrThrow();
      assert.equal(redeemed.redeemed, 2);
    });

    test('300 concurrent orders redeeming vouchers of limited uses never redeem more than allowed nor sell more than there is', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const { eventId, ids } = await onSale(c, { A: { quantity: 60 }, B: { quantity: 40 } }, { capacity: 90 });
      const db = api.database.db;
      const base = `/events/${eventId}/vouchers`;
      const vouchers = {
        PCT: await c.expect(201, 'POST', base, { code: 'PCT-10', discountType: 'percent', discountValue: 10, maxUses: 25, ticketTypeId: ids.A }),
        ALL: await c.expect(201, 'POST', base, { code: 'ALL-200', discountType: 'fixed', discountValue: 200, maxUses: 30 }),
        HOLD: await c.expect(201, 'POST', base, { code: 'HOLD-B', ticketTypeId: ids.B, reserve: true, maxUses: 15 }),
        ONE: await c.expect(201, 'POST', base, { code: 'ONE-USE', maxUses: 1 }),
      };
      const codes = Object.values(vouchers).map((v) => v.code as string);

      const outcomes = await Promise.all(
        Array.from({ length: 300 }, async (_, k) => {
          const code = k % 5 < codes.length ? codes[k % 5]! : undefined;
          const type = code === 'HOLD-B' || k % 3 === 0 ? ids.B : ids.A;
          const items = k % 7 === 0 && code !== 'HOLD-B' && code !== 'PCT-10' ? { [ids.A]: 1, [ids.B]: 1 } : { [type]: 1 + (k % 2) };
          const pending = k % 3 !== 1;
          const res = await c.send('POST', `/events/${eventId}/orders`, orderOf(items, { ...(code ? { voucher: code } : {}), ...(pending ? { payment: manual } : {}) }));
          const body = await res.json();
          if (res.status !== 201) {
            assert.equal(res.status, 409, JSON.stringify(body));
            assert.ok(['sold_out', 'voucher_used_up', 'voucher_not_applicable'].includes(body.code), JSON.stringify(body));
            return body.code as string;
          }
          // Pending ones are, by turns, confirmed, cancelled, expired or left pending, racing the orders still coming.
          if (body.status === 'pending') {
            const fate = k % 4;
            if (fate === 0) assert.equal((await c.send('POST', `/orders/${body.id}/confirm`, {})).status, 200);
            else if (fate === 1) assert.equal((await c.send('POST', `/orders/${body.id}/cancel`)).status, 200);
            else if (fate === 2) assert.equal(await expire(api, accountId, eventId, body.id), 0);
          }
          return 'placed';
        }),
      );
      assert.ok(outcomes.includes('placed'));
      assert.ok(outcomes.includes('voucher_used_up'), 'uses ran out: the race was for scarce uses');

      const orders = await db.selectFrom('orders').select(['status', 'voucherId', 'voucherPlaces', 'items']).where('eventId', '=', eventId).execute();
      for (const [code, v] of Object.entries(vouchers)) {
        const row = await db.selectFrom('vouchers').select(['redeemed', 'maxUses']).where('id', '=', v.id).executeTakeFirstOrThrow();
        const used = orders.filter((o) => o.voucherId === v.id && (o.status === 'pending' || o.status === 'completed')).reduce((sum, o) => sum + o.voucherPlaces, 0);
        assert.equal(row.redeemed, used, `${code}: redeemed is the places of its pending and completed orders`);
        assert.ok(row.redeemed <= row.maxUses, `${code}: ${row.redeemed} within ${row.maxUses}`);
      }
      assert.ok((await db.selectFrom('vouchers').select('redeemed').where('id', '=', vouchers.ONE.id).executeTakeFirstOrThrow()).redeemed <= 1);

      // Inventory: sold and held are what tickets and pending orders say, within quantity and capacity, with HOLD's places still kept.
      const event = await db.selectFrom('events').select(['sold', 'held']).where('id', '=', eventId).executeTakeFirstOrThrow();
      const types = await db.selectFrom('ticketTypes').select(['id', 'sold', 'held', 'quantity']).where('eventId', '=', eventId).execute();
      const valid = await db.selectFrom('tickets').select('ticketTypeId').where('eventId', '=', eventId).where('status', '=', 'valid').execute();
      const heldOf = new Map<string, number>();
      for (const o of orders.filter((o) => o.status === 'pending')) for (const i of JSON.parse(o.items)) heldOf.set(i.ticketTypeId, (heldOf.get(i.ticketTypeId) ?? 0) + i.quantity);
      const hold = await db.selectFrom('vouchers').select(['redeemed', 'maxUses']).where('id', '=', vouchers.HOLD.id).executeTakeFirstOrThrow();
      const reservedB = hold.maxUses - hold.redeemed;
      assert.equal(event.sold, valid.length);
      assert.equal(event.held, [...heldOf.values()].reduce((a, b) => a + b, 0));
      assert.ok(event.sold + event.held + reservedB <= 90, `sold ${event.sold} + held ${event.held} + reserved ${reservedB} within capacity`);
      for (const type of types) {
        assert.equal(type.sold, valid.filter((tk) => tk.ticketTypeId === type.id).length);
        assert.equal(type.held, heldOf.get(type.id) ?? 0);
        const reserved = type.id === ids.B ? reservedB : 0;
        assert.ok(type.sold + type.held + reserved <= type.quantity, `${type.id}: sold ${type.sold} + held ${type.held} + reserved ${reserved} within ${type.quantity}`);
      }
    });
  });
}
