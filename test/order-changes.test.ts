/**
 * Order changes (docs/events.md, "Refunds and order changes"): cancelling some tickets of an order
 * and moving others to another ticket type, all or nothing, with inventory, codes and messages
 * following, under concurrency, on every engine of the run.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { Engine } from '../src/db/database.js';
import { ENGINES, freshStorage, problem, startApp, type TestApp, jsonClient as client, type JsonClient as Client } from './helpers.js';

// API bodies are read as loosely typed JSON; the assertions are what type them.
type Json = any;

/** One account's client, with a published event of three ticket types (prices 3000, 5000, 0). */
async function box(t: TestContext, engine: Engine, quantities = { standard: 50, vip: 5, free: 50 }) {
  const api = await startApp(t, await freshStorage(t, engine));
  const { key, accountId } = await api.account();
  const c = client(api, key);
  const event = await c.ok('POST', '/v1/events', { name: 'Show', startsAt: '2030-01-01T10:00:00Z', endsAt: '2030-01-01T12:00:00Z', timezone: 'UTC', currency: 'EUR' });
  const standard = await c.ok('POST', `/v1/events/${event.id}/tickets`, { name: 'Standard', price: 3000, quantity: quantities.standard });
  const vip = await c.ok('POST', `/v1/events/${event.id}/tickets`, { name: 'VIP', price: 5000, quantity: quantities.vip });
  const free = await c.ok('POST', `/v1/events/${event.id}/tickets`, { name: 'Free', price: 0, quantity: quantities.free });
  await c.ok('POST', `/v1/events/${event.id}/publish`);
  return { api, c, accountId, event, standard, vip, free };
}


const order = (c: Client, eventId: string, items: Array<{ ticketTypeId: string; quantity: number }>) =>
  c.ok('POST', `/v1/events/${eventId}/orders`, { buyer: { name: 'Ada', email: 'ada@example.com' }, items });

async function inventory(c: Client, eventId: string): Promise<Record<string, number>> {
  const types = (await c.ok('GET', `/v1/events/${eventId}/tickets`)).data as Json[];
  return Object.fromEntries(types.map((t) => [t.name, t.sold]));
}

async function messagesOf(api: TestApp, accountId: string): Promise<Array<{ event: string; data: Json }>> {
  const rows = await api.database.db.selectFrom('webhookMessages').select('payload').where('accountId', '=', accountId).orderBy('id').execute();
  return rows.map((row) => JSON.parse(row.payload));
}

for (const engine of ENGINES) {
  describe(`order changes (${engine})`, () => {
    test('cancel one ticket and move another: inventory, price, a new code (the old one revoked), the difference, the messages', async (t) => {
      const { api, c, accountId, event, standard, vip } = await box(t, engine);
      const placed = await order(c, event.id, [{ ticketTypeId: standard.id, quantity: 3 }]);
      const [keep, gone, moved] = placed.tickets as Json[];
      const before = await inventory(c, event.id);
      assert.deepEqual([before.Standard, before.VIP], [3, 0]);
      const seen = (await messagesOf(api, accountId)).length;

      const change = await c.ok('POST', `/v1/orders/${placed.id}/changes`, { cancelTickets: [gone.id], changeTypes: [{ ticketId: moved.id, ticketTypeId: vip.id }] });
      assert.deepEqual(change.cancelled, [gone.id]);
      assert.deepEqual(change.changed, [{ ticketId: moved.id, fromTicketTypeId: standard.id, toTicketTypeId: vip.id, difference: 2000 }]);
      assert.equal(change.difference, 2000 - 3000);
      const tickets = new Map<string, Json>(change.order.tickets.map((x: Json) => [x.id, x]));
      assert.equal(tickets.get(gone.id).status, 'cancelled');
      assert.equal(tickets.get(keep.id).code, keep.code, 'an untouched ticket keeps its code');
      const now = tickets.get(moved.id);
      assert.deepEqual([now.ticketTypeId, now.price, now.status], [vip.id, 5000, 'valid']);
      assert.notEqual(now.code, moved.code, 'a moved ticket gets a new code');

      const after = await inventory(c, event.id);
      assert.deepEqual([after.Standard, after.VIP], [1, 1]);
      // The door: the old code of the moved ticket and the cancelled ticket are refused, the new code admits.
      await problem(await c.call('POST', `/v1/events/${event.id}/checkin`, { code: moved.code }), 409, 'ticket_revoked');
      await problem(await c.call('POST', `/v1/events/${event.id}/checkin`, { ticketId: gone.id }), 409, 'ticket_cancelled');
      assert.equal((await c.call('POST', `/v1/events/${event.id}/checkin`, { code: now.code })).status, 201);

      const written = (await messagesOf(api, accountId)).slice(seen);
      assert.deepEqual(written.map((m) => m.event).filter((e) => e !== 'payment.refunded' && e !== 'checkin.completed'), ['ticket.cancelled', 'order.changed']);
      // order.changed is written in the change's transaction: the order after the change, its refund still on its way.
      const changed = written.find((m) => m.event === 'order.changed')!;
      assert.deepEqual(changed.data.tickets.map((x: Json) => [x.id, x.status, x.ticketTypeId, x.code]), change.order.tickets.map((x: Json) => [x.id, x.status, x.ticketTypeId, x.code]));
      assert.deepEqual(changed.data.payments.filter((p: Json) => p.kind === 'refund').map((p: Json) => [p.ticketId, p.amount, p.status]), [[gone.id, 1000, 'pending']]);
      // The cancelled ticket's 3000 paid off the 2000 the move to VIP owes; 1000 went back.
      assert.deepEqual([change.balanceDue, change.order.refundedAmount, change.order.balanceDue], [0, 1000, 0]);
      assert.deepEqual(change.refunds.map((p: Json) => [p.ticketId, p.amount, p.status]), [[gone.id, 1000, 'succeeded']]);
    });

    test('a ticket bought with a voucher keeps its discount on a type the voucher applies to, and none on another', async (t) => {
      const { c, event, standard, vip } = await box(t, engine);
      await c.ok('POST', `/v1/events/${event.id}/vouchers`, { code: 'ALL20', discountType: 'percent', discountValue: 20, maxUses: 10 });
      await c.ok('POST', `/v1/events/${event.id}/vouchers`, { code: 'STD500', ticketTypeId: standard.id, discountType: 'fixed', discountValue: 500, maxUses: 10 });
      const buy = (voucher: string) => c.ok('POST', `/v1/events/${event.id}/orders`, { buyer: { name: 'Ada', email: 'ada@example.com' }, items: [{ ticketTypeId: standard.id, quantity: 1 }], voucher });
      // Every type's 20 % off: 3000 paid as 2400; on VIP 5000 less 20 % = 4000, so 1600 more.
      const wide = await buy('ALL20');
      assert.equal(wide.tickets[0].price, 2400);
      const up = await c.ok('POST', `/v1/orders/${wide.id}/changes`, { changeTypes: [{ ticketId: wide.tickets[0].id, ticketTypeId: vip.id }] });
      assert.deepEqual(up.changed.map((x: Json) => x.difference), [1600]);
      assert.equal(up.order.tickets[0].price, 4000);
      assert.equal(up.balanceDue, 1600);
      // 500 off Standard only: 2500 paid; VIP at its full 5000, so 2500 more.
      const typed = await buy('STD500');
      assert.equal(typed.tickets[0].price, 2500);
      const moved = await c.ok('POST', `/v1/orders/${typed.id}/changes`, { changeTypes: [{ ticketId: typed.tickets[0].id, ticketTypeId: vip.id }] });
      assert.deepEqual(moved.changed.map((x: Json) => x.difference), [2500]);
      assert.equal(moved.order.tickets[0].price, 5000);
    });

    test('all or nothing: a sold-out type refuses the whole change; swaps between full types work', async (t) => {
      const { c, event, standard, vip } = await box(t, engine, { standard: 3, vip: 1, free: 5 });
      const a = await order(c, event.id, [{ ticketTypeId: standard.id, quantity: 3 }]);
      const b = await order(c, event.id, [{ ticketTypeId: vip.id, quantity: 1 }]);
      const before = await inventory(c, event.id);

      // VIP is full: moving a standard ticket there is refused, and the cancel in the same change is undone.
      const refused = await problem(
        await c.call('POST', `/v1/orders/${a.id}/changes`, { cancelTickets: [a.tickets[0].id], changeTypes: [{ ticketId: a.tickets[1].id, ticketTypeId: vip.id }] }),
        409,
        'sold_out',
      );
      assert.equal(refused.ticketTypeId, vip.id);
      assert.deepEqual(await inventory(c, event.id), before);
      assert.equal((await c.ok('GET', `/v1/tickets/${a.tickets[0].id}`)).status, 'valid');

      // After b's VIP ticket moves to standard (which a's cancel frees in the same change), a's ticket fits VIP.
      await c.ok('POST', `/v1/orders/${a.id}/changes`, { cancelTickets: [a.tickets[0].id] });
      await c.ok('POST', `/v1/orders/${b.id}/changes`, { changeTypes: [{ ticketId: b.tickets[0].id, ticketTypeId: standard.id }] });
      const swapped = await c.ok('POST', `/v1/orders/${a.id}/changes`, { changeTypes: [{ ticketId: a.tickets[1].id, ticketTypeId: vip.id }] });
      assert.equal(swapped.difference, 2000);
      const after = await inventory(c, event.id);
      assert.deepEqual([after.Standard, after.VIP], [2, 1]);
    });

    test('refusals: bad input names its field; cancelled or checked-in tickets; another account sees nothing', async (t) => {
      const { api, c, accountId, event, standard, vip } = await box(t, engine);
      const placed = await order(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }]);
      const other = await order(c, event.id, [{ ticketTypeId: standard.id, quantity: 1 }]);
      const [first, second] = placed.tickets as Json[];
      const other2 = await c.ok('POST', '/v1/events', { name: 'Other', startsAt: '2030-01-01T10:00:00Z', endsAt: '2030-01-01T12:00:00Z', timezone: 'UTC', currency: 'EUR' });
      const foreignType = await c.ok('POST', `/v1/events/${other2.id}/tickets`, { name: 'X', price: 1, quantity: 1 });
      const path = `/v1/orders/${placed.id}/changes`;
      const bad: Array<[unknown, string]> = [
        [{}, '/cancelTickets'],
        [{ cancelTickets: [] }, '/cancelTickets'],
        [{ cancelTickets: [other.tickets[0].id] }, '/cancelTickets/0'],
        [{ cancelTickets: [first.id, first.id] }, '/cancelTickets/1'],
        [{ cancelTickets: [first.id], changeTypes: [{ ticketId: first.id, ticketTypeId: vip.id }] }, '/changeTypes/0/ticketId'],
        [{ changeTypes: [{ ticketId: first.id, ticketTypeId: standard.id }] }, '/changeTypes/0/ticketTypeId'],
        [{ changeTypes: [{ ticketId: first.id, ticketTypeId: foreignType.id }] }, '/changeTypes/0/ticketTypeId'],
        [{ changeTypes: [{ ticketId: first.id }] }, '/changeTypes/0/ticketTypeId'],
        [{ cancelTickets: [first.id], extra: 1 }, '/extra'],
      ];
      for (const [json, where] of bad) {
        const body = await problem(await c.call('POST', path, json), 400, 'invalid_request');
        assert.equal(body.errors[0].path, where, JSON.stringify(json));
      }

      await c.ok('POST', `/v1/events/${event.id}/checkin`, { ticketId: first.id });
      await problem(await c.call('POST', path, { changeTypes: [{ ticketId: first.id, ticketTypeId: vip.id }] }), 409, 'ticket_checked_in');
      await problem(await c.call('POST', path, { cancelTickets: [first.id] }), 409, 'ticket_checked_in');
      await c.ok('POST', path, { cancelTickets: [second.id] });
      await problem(await c.call('POST', path, { cancelTickets: [second.id] }), 409, 'ticket_cancelled');
      await problem(await c.call('POST', path, { changeTypes: [{ ticketId: second.id, ticketTypeId: vip.id }] }), 409, 'ticket_cancelled');

      const stranger = client(api, (await api.account()).key);
      await problem(await stranger.call('POST', path, { cancelTickets: [first.id] }), 404, 'not_found');
      await problem(await c.call('POST', '/v1/orders/ord_01m80eg3tperaacsapew6ns732/changes', { cancelTickets: [first.id] }), 404, 'not_found');
      const reader = client(api, await api.key(accountId, 'business', { scopes: ['events:read'] }));
      await problem(await reader.call('POST', path, { cancelTickets: [first.id] }), 403, 'insufficient_scope');
    });

    test('concurrent changes into a type with 5 places: never more than 5 move, and inventory adds up', async (t) => {
      const { c, event, standard, vip } = await box(t, engine, { standard: 60, vip: 5, free: 5 });
      const orders: Json[] = [];
      for (let i = 0; i < 20; i++) orders.push(await order(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }]));
      // Each order moves one ticket to VIP and cancels the other, all at once.
      const answers = await Promise.all(
        orders.map((o) => c.call('POST', `/v1/orders/${o.id}/changes`, { cancelTickets: [o.tickets[1].id], changeTypes: [{ ticketId: o.tickets[0].id, ticketTypeId: vip.id }] })),
      );
      const statuses = answers.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 5, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 409).length, 15);
      const after = await inventory(c, event.id);
      // 5 changes: 5 tickets in VIP, 5 cancelled; 15 refused: their 30 tickets still standard.
      assert.deepEqual([after.Standard, after.VIP], [30, 5]);
      const valid = (await Promise.all(orders.map((o) => c.ok('GET', `/v1/orders/${o.id}`)))).flatMap((o) => o.tickets).filter((x: Json) => x.status === 'valid');
      assert.equal(valid.filter((x: Json) => x.ticketTypeId === vip.id).length, 5);
      assert.equal(valid.filter((x: Json) => x.ticketTypeId === standard.id).length, 30);
    });
  });
}
