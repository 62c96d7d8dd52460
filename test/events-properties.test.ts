import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { CompiledQuery, sql } from 'kysely';
import { TenantScope } from '../src/db/tenant.js';
import { attendeePageQuery } from '../src/events/attendees.service.js';
import { lockEvent } from '../src/events/events.repository.js';
import { DELIVERY_MAX_ATTEMPTS } from '../src/webhooks/delivery.js';
import { ENGINES, freshStorage, startApp, type TestApp, until } from './helpers.js';

/** A published event with the given ticket types (name → quantity), ready to sell. */
async function onSale(api: TestApp, key: string, types: Record<string, { quantity: number; price?: number }>, capacity?: number) {
  const event = await (
    await api.fetch('/v1/events', {
      method: 'POST',
      key,
      json: { name: 'Launch', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR', ...(capacity ? { capacity } : {}) },
    })
  ).json();
  const ids: Record<string, string> = {};
  for (const [name, { quantity, price = 1000 }] of Object.entries(types)) {
    const res = await api.fetch(`/v1/events/${event.id}/tickets`, { method: 'POST', key, json: { name, price, quantity } });
    assert.equal(res.status, 201);
    ids[name] = (await res.json()).id;
  }
  assert.equal((await api.fetch(`/v1/events/${event.id}/publish`, { method: 'POST', key })).status, 200);
  return { eventId: event.id as string, ids };
}

const buyer = { name: 'Buyer', email: 'buyer@example.com' };

/** A node of PostgreSQL's `explain (format json)`. */
type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] };

async function ticketCounts(api: TestApp, eventId: string) {
  const tickets = await api.database.db.selectFrom('tickets').select(['ticketTypeId', 'status']).where('eventId', '=', eventId).execute();
  const types = await api.database.db.selectFrom('ticketTypes').select(['id', 'sold', 'quantity']).where('eventId', '=', eventId).execute();
  const event = await api.database.db.selectFrom('events').select(['sold']).where('id', '=', eventId).executeTakeFirstOrThrow();
  return { tickets, types, eventSold: event.sold };
}

for (const engine of ENGINES) {
  describe(`event area under concurrency and at volume (${engine})`, () => {
    test('300 concurrent orders against 50 tickets: exactly 50 issued, sold equals issued, only 201 or 409', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 50 } });
      const answers = await Promise.all(
        Array.from({ length: 300 }, () =>
          api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } }),
        ),
      );
      const statuses = answers.map((r) => r.status);
      assert.deepEqual([...new Set(statuses)].sort(), [201, 409]);
      assert.equal(statuses.filter((s) => s === 201).length, 50);
      for (const res of answers.filter((r) => r.status === 409)) assert.equal((await res.json()).code, 'sold_out');
      const acknowledged = answers.find((r) => r.status === 201)!;
      const order = await acknowledged.json();
      const reread = await api.fetch(acknowledged.headers.get('location')!, { key });
      assert.equal(acknowledged.headers.get('location'), `/v1/orders/${order.id}`);
      assert.deepEqual(await reread.json(), order, 'the Location reads the order back as it was answered');
      const { tickets, types, eventSold } = await ticketCounts(api, eventId);
      assert.equal(tickets.length, 50);
      assert.equal(types[0]!.sold, 50);
      assert.equal(eventSold, 50);
    });

    test('event capacity holds across ticket types under concurrent orders of mixed sizes', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { A: { quantity: 40 }, B: { quantity: 40 } }, 50);
      const answers = await Promise.all(
        Array.from({ length: 120 }, (_, i) =>
          api.fetch(`/v1/events/${eventId}/orders`, {
            method: 'POST',
            key,
            json: { buyer, items: [{ ticketTypeId: i % 2 ? ids.A : ids.B, quantity: 1 + (i % 3) }] },
          }),
        ),
      );
      const issued = (await Promise.all(answers.filter((r) => r.status === 201).map((r) => r.json()))).reduce((n, o) => n + o.tickets.length, 0);
      assert.ok(answers.every((r) => r.status === 201 || r.status === 409));
      const { tickets, types, eventSold } = await ticketCounts(api, eventId);
      assert.equal(tickets.length, issued, 'every acknowledged ticket exists, and no other');
      assert.ok(issued <= 50 && issued >= 48, `issued ${issued}: capacity is used up to what order sizes allow`);
      assert.equal(eventSold, issued);
      for (const type of types) {
        assert.equal(type.sold, tickets.filter((x) => x.ticketTypeId === type.id).length);
        assert.ok(type.sold <= type.quantity);
      }
    });

    test('100 concurrent check-ins of one ticket: exactly one 201', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const scanner = await api.key(accountId, 'business', { scopes: ['checkin'] });
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5 } });
      const order = await (await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } })).json();
      const ticket = order.tickets[0];
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          api.fetch(`/v1/events/${eventId}/checkin`, { method: 'POST', key: scanner, json: i % 2 ? { code: ticket.code, gate: `g${i}` } : { ticketId: ticket.id } }),
        ),
      );
      const created = answers.filter((r) => r.status === 201);
      assert.equal(created.length, 1);
      const first = await created[0]!.json();
      for (const res of answers.filter((r) => r.status !== 201)) {
        assert.equal(res.status, 409);
        const body = await res.json();
        assert.equal(body.code, 'already_checked_in');
        assert.equal(body.checkedInAt, first.checkedInAt);
        assert.equal(body.checkinId, first.id);
      }
      const history = await api.database.db.selectFrom('checkins').selectAll().where('ticketId', '=', ticket.id).execute();
      assert.equal(history.length, 1);
      const messages = await api.database.db.selectFrom('webhookMessages').select('eventType').where('eventType', '=', 'checkin.completed').execute();
      assert.equal(messages.length, 1);

      // The door's history, through the API: the check-in, then its undo, with who and where.
      assert.equal((await api.fetch(`/v1/events/${eventId}/checkin/${ticket.id}`, { method: 'DELETE', key: scanner })).status, 200);
      const log = await (await api.fetch(`/v1/events/${eventId}/checkins?ticketId=${ticket.id}`, { key })).json();
      assert.deepEqual(log.data.map((e: { action: string }) => e.action), ['undo', 'checkin']);
      assert.equal(log.data[1].id, first.id);
      assert.equal(log.data[1].gate, first.gate);
      assert.equal(log.data[1].at, first.checkedInAt);
      assert.ok(log.data.every((e: { keyId: string }) => e.keyId === history[0]!.keyId && e.keyId !== null));
      // An event cancelled with a checked-in ticket: that ticket's check-in can no longer be undone.
      assert.equal((await api.fetch(`/v1/events/${eventId}/checkin`, { method: 'POST', key: scanner, json: { ticketId: ticket.id } })).status, 201);
      assert.equal((await api.fetch(`/v1/events/${eventId}/cancel`, { method: 'POST', key })).status, 200);
      const refused = await api.fetch(`/v1/events/${eventId}/checkin/${ticket.id}`, { method: 'DELETE', key: scanner });
      assert.equal(refused.status, 409);
      assert.equal((await refused.json()).code, 'ticket_cancelled');
    });

    test('check-ins racing transfers: each ticket is either admitted as its holder then was, or transferred; the message and its deliveries match', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const scanner = await api.key(accountId, 'business', { scopes: ['checkin'] });
      const subscribe = async (events: string[]) =>
        (await (await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: 'https://hooks.example.com/door', events } })).json()).id as string;
      const everything = await subscribe(['*']);
      const door = await subscribe(['checkin.completed', 'checkin.undone']);
      await subscribe(['ticket.purchased']);
      const disabled = await subscribe(['*']);
      await api.database.db.updateTable('webhookSubscriptions').set({ status: 'disabled' }).where('id', '=', disabled).execute();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 40 } });
      const order = await (await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 40 }] } })).json();

      const races = await Promise.all(
        order.tickets.map(async (ticket: { id: string; code: string }, i: number) => {
          const scan = api.fetch(`/v1/events/${eventId}/checkin`, { method: 'POST', key: scanner, json: i % 2 ? { code: ticket.code } : { ticketId: ticket.id } });
          const transfer = api.fetch(`/v1/tickets/${ticket.id}/transfer`, { method: 'POST', key, json: { attendee: { name: `Heir ${i}`, email: `heir${i}@example.com` } } });
          const [scanned, transferred] = await Promise.all([scan, transfer]);
          return { ticket, i, scanned: scanned.status, checkin: await scanned.json(), transferred: transferred.status, transferBody: await transferred.json() };
        }),
      );
      const admitted = races.filter((r) => r.scanned === 201);
      for (const race of races) {
        const heir = { name: `Heir ${race.i}`, email: `heir${race.i}@example.com` };
        if (race.transferred === 409) {
          // Admitted first: the ticket kept its holder, and the transfer was refused.
          assert.equal(race.transferBody.code, 'ticket_checked_in');
          assert.equal(race.scanned, 201);
          assert.deepEqual(race.checkin.attendee, buyer);
        } else {
          // Transferred first: the old code no longer admits the ticket (its serial is revoked); by id, the new holder is admitted.
          assert.equal(race.transferred, 200);
          if (race.i % 2) assert.deepEqual([race.scanned, race.checkin.code], [409, 'ticket_revoked']);
          else assert.deepEqual([race.scanned, race.checkin.attendee], [201, heir]);
        }
        if (race.scanned === 201) assert.deepEqual(await (await api.fetch(`/v1/tickets/${race.ticket.id}`, { key })).json(), race.checkin.ticket);
      }
      assert.ok(admitted.length > 0, 'some scans were admitted');

      // One message per admission, holding exactly what was answered; one delivery job per subscription that wants it.
      const messages = await api.database.db.selectFrom('webhookMessages').select(['id', 'payload']).where('eventType', '=', 'checkin.completed').execute();
      assert.deepEqual(messages.map((m) => JSON.parse(m.payload).data).sort((a, b) => a.id.localeCompare(b.id)), admitted.map((r) => r.checkin).sort((a, b) => a.id.localeCompare(b.id)));
      const jobs = await api.database.db.selectFrom('jobs').selectAll().where('kind', '=', 'webhook.deliver').execute();
      const written = new Set((await api.database.db.selectFrom('webhookMessages').select('id').execute()).map((m) => m.id));
      assert.deepEqual(jobs.filter((j) => !written.has(JSON.parse(j.payload).messageId)), [], 'no delivery job without its message');
      assert.equal(jobs.filter((j) => messages.some((m) => m.id === JSON.parse(j.payload).messageId)).length, 2 * admitted.length);
      for (const message of messages) {
        const its = jobs.filter((j) => JSON.parse(j.payload).messageId === message.id);
        assert.deepEqual(its.map((j) => JSON.parse(j.payload).subscriptionId).sort(), [everything, door].sort());
        for (const job of its) {
          assert.match(job.id, /^qjob_[0-9a-z]{26}$/);
          assert.deepEqual([job.status, job.attempts, job.maxAttempts, job.lockedBy, job.lastError, job.finishedAt], ['queued', 0, 50, null, null, null]);
          assert.ok(job.runAt === job.createdAt && job.updatedAt === job.createdAt);
        }
      }
      const history = await api.database.db.selectFrom('checkins').select(['id', 'ticketId', 'action']).where('eventId', '=', eventId).execute();
      assert.deepEqual(history.map((h) => h.id).sort(), admitted.map((r) => r.checkin.id).sort());
    });

    test('a ticket whose holder changes between the door\'s read and its write is admitted as it is then, with its new holder', { skip: engine !== 'postgres' && 'PostgreSQL only: SQLite has no read before the write' }, async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const scanner = await api.key(accountId, 'business', { scopes: ['checkin'] });
      await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: 'https://hooks.example.com/door', events: ['checkin.completed'] } });
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5 } });
      const order = await (await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } })).json();
      const ticket = order.tickets[0];
      const heir = { name: 'Heir', email: 'heir@example.com' };
      const db = api.database.db;

      // The test holds a change of the ticket open; the scan reads the ticket as it was, and its
      // write waits for the row. Once the change commits, the write finds the row changed. The
      // change keeps updatedAt, as two changes within one millisecond would: every column counts.
      let scan: Promise<Awaited<ReturnType<TestApp['fetch']>>> | undefined;
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('tickets').set({ attendeeName: heir.name, attendeeEmail: heir.email }).where('id', '=', ticket.id).execute();
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        scan = api.fetch(`/v1/events/${eventId}/checkin`, { method: 'POST', key: scanner, json: { code: ticket.code, gate: 'East' } });
        const waiting = sql<{ n: number }>`
          select count(*)::int as n from pg_locks w join pg_locks h on h.locktype = 'transactionid' and h.transactionid = w.transactionid and h.granted
          where w.locktype = 'transactionid' and not w.granted and h.pid = ${rows[0]!.pid}`;
        await until(async () => (await waiting.execute(db)).rows[0]!.n === 1, 5000, 'the scan to wait for the ticket row');
      });
      const res = await scan!;
      assert.equal(res.status, 201);
      const checkin = await res.json();
      assert.deepEqual(checkin.attendee, heir);
      assert.deepEqual(checkin.ticket, await (await api.fetch(`/v1/tickets/${ticket.id}`, { key })).json());
      const messages = await db.selectFrom('webhookMessages').select(['id', 'payload']).where('eventType', '=', 'checkin.completed').execute();
      assert.deepEqual(messages.map((m) => JSON.parse(m.payload).data), [checkin]);
      const jobs = await db.selectFrom('jobs').select('payload').where('kind', '=', 'webhook.deliver').execute();
      assert.deepEqual(jobs.map((j) => JSON.parse(j.payload).messageId), [messages[0]!.id]);
      assert.deepEqual((await db.selectFrom('checkins').select('id').where('ticketId', '=', ticket.id).execute()).map((c) => c.id), [checkin.id]);
    });

    test('taking an event\'s lock writes no version of its row, and holds up no check-in', { skip: engine !== 'postgres' && 'PostgreSQL only: row versions and lock modes' }, async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5 } });
      const order = await (await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } })).json();
      // xmin: the transaction that wrote the row's current version.
      const version = async () => (await sql<{ v: string }>`select xmin::text as v from events where id = ${eventId}`.execute(api.database.db)).rows[0]!.v;
      const before = await version();
      // A payout locks the event (so that two cannot pay the same money) and writes only the payout.
      assert.equal((await api.fetch(`/v1/events/${eventId}/payouts`, { method: 'POST', key })).status, 201);
      assert.equal(await version(), before);

      // The lock is an UPDATE's (FOR NO KEY UPDATE), not FOR UPDATE: a check-in, whose history row's
      // foreign key shares the event row's key, goes on while an order or a payout holds it.
      await api.database.db.transaction().execute(async (trx) => {
        assert.ok(await lockEvent(new TenantScope(trx, accountId), eventId));
        const checkin = api.fetch(`/v1/events/${eventId}/checkin`, { method: 'POST', key, json: { ticketId: order.tickets[0].id } });
        const answer = await Promise.race([checkin, new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000).unref())]);
        assert.equal(answer?.status, 201, 'a check-in must not wait for the event lock');
      });
    });

    test('an order writes exactly its rows: the order, its tickets, its messages and their delivery jobs', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const subscribe = async (events: string[]) => (await (await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: 'https://hooks.example.com/o', events } })).json()).id as string;
      const all = await subscribe(['*']);
      const payments = await subscribe(['payment.completed']);
      const off = await subscribe(['*']);
      await api.database.db.updateTable('webhookSubscriptions').set({ status: 'disabled' }).where('id', '=', off).execute(); // as failing deliveries do
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 10, price: 2500 }, VIP: { quantity: 10, price: 9000 } });
      const attendees = [{ name: 'Zoë "Z" O\'Brien, Łódź', email: 'ZOE@example.com' }];
      const res = await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.VIP, quantity: 1, attendees }, { ticketTypeId: ids.GA, quantity: 2 }] } });
      assert.equal(res.status, 201);
      const order = await res.json();
      const at = Date.parse(order.createdAt);
      const db = api.database.db;

      const row = await db.selectFrom('orders').selectAll().where('id', '=', order.id).executeTakeFirstOrThrow();
      assert.deepEqual({ ...row, items: JSON.parse(row.items) }, {
        id: order.id, accountId: row.accountId, eventId, buyerName: buyer.name, buyerEmail: buyer.email, items: order.items, total: 9000 + 2 * 2500, currency: 'EUR', status: 'completed', createdAt: at,
        expiresAt: null, completedAt: at, refundedAmount: 0, balanceDue: 0, provider: 'external', paymentStatus: 'paid', paymentReference: null, checkoutUrl: null, plan: null, updatedAt: at,
        voucherId: null, voucherCode: null, voucherPlaces: 0,
      });
      const charges = await db.selectFrom('payments').selectAll().where('orderId', '=', order.id).execute();
      assert.deepEqual(charges, [
        {
          id: order.payments[0].id, accountId: row.accountId, eventId, orderId: order.id, ticketId: null, provider: 'external', kind: 'charge', amount: 14000, currency: 'EUR', status: 'succeeded',
          reference: null, reason: null, createdAt: at, updatedAt: at,
        },
      ]);
      const tickets = await db.selectFrom('tickets').selectAll().where('orderId', '=', order.id).orderBy('id').execute();
      assert.deepEqual(
        tickets,
        [...order.tickets].sort((a, b) => (a.id < b.id ? -1 : 1)).map((ticket: { id: string; ticketTypeId: string; code: string; price: number; attendee: { name: string; email: string } }) => ({
          id: ticket.id, accountId: row.accountId, eventId, ticketTypeId: ticket.ticketTypeId, orderId: order.id, status: 'valid', attendeeName: ticket.attendee.name, attendeeEmail: ticket.attendee.email,
          code: ticket.code, price: ticket.price, currency: 'EUR', refundedAmount: 0, checkedInAt: null, checkinId: null, createdAt: at, updatedAt: at, cancelledAt: null,
        })),
      );
      assert.deepEqual(tickets.map((t) => [t.attendeeName, t.attendeeEmail]).sort(), [['Buyer', 'buyer@example.com'], ['Buyer', 'buyer@example.com'], ['Zoë "Z" O\'Brien, Łódź', 'zoe@example.com']]);
      for (const type of await db.selectFrom('ticketTypes').select(['id', 'sold', 'updatedAt']).where('eventId', '=', eventId).execute()) {
        assert.deepEqual([type.sold, type.updatedAt], [type.id === ids.VIP ? 1 : 2, at]);
      }
      const event = await db.selectFrom('events').select(['sold', 'ticketsIssued', 'updatedAt']).where('id', '=', eventId).executeTakeFirstOrThrow();
      assert.deepEqual(event, { sold: 3, ticketsIssued: 3, updatedAt: at });

      const messages = await db.selectFrom('webhookMessages').selectAll().where('eventType', 'in', ['ticket.purchased', 'payment.completed']).orderBy('id').execute();
      assert.deepEqual(messages.map((m) => [m.eventType, m.createdAt, m.accountId]), [
        ...order.tickets.map(() => ['ticket.purchased', at, row.accountId]),
        ['payment.completed', at, row.accountId],
      ]);
      assert.deepEqual(messages.map((m) => JSON.parse(m.payload)), messages.map((m, i) => ({
        id: m.id, event: m.eventType, timestamp: order.createdAt, data: i < order.tickets.length ? order.tickets[i] : { ...order, amount: order.total, provider: 'external' },
      })));
      const ofOrder = new Set(messages.map((m) => m.id));
      const jobs = (await db.selectFrom('jobs').selectAll().where('kind', '=', 'webhook.deliver').execute()).filter((j) => ofOrder.has(JSON.parse(j.payload).messageId));
      const wanted = messages.flatMap((m) => [[m.id, all], ...(m.eventType === 'payment.completed' ? [[m.id, payments]] : [])]);
      assert.deepEqual(jobs.map((j) => [JSON.parse(j.payload).messageId, JSON.parse(j.payload).subscriptionId]).sort(), wanted.sort());
      for (const job of jobs) {
        assert.deepEqual(
          { status: job.status, attempts: job.attempts, maxAttempts: job.maxAttempts, runAt: job.runAt, createdAt: job.createdAt, updatedAt: job.updatedAt, lockedBy: job.lockedBy, finishedAt: job.finishedAt },
          { status: 'queued', attempts: 0, maxAttempts: DELIVERY_MAX_ATTEMPTS, runAt: at, createdAt: at, updatedAt: at, lockedBy: null, finishedAt: null },
        );
      }
    });

    test('an order refused by both the capacity and a ticket type names the capacity', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { A: { quantity: 2 }, B: { quantity: 5 } }, 3);
      assert.equal((await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.A, quantity: 2 }] } })).status, 201);
      const refused = await (await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.A, quantity: 2 }] } })).json();
      assert.equal(refused.code, 'sold_out');
      assert.equal(refused.available, 1);
      assert.equal(refused.ticketTypeId, undefined);
      assert.match(refused.detail, /has 1 of 3 places left/);
    });

    test('orders racing the event\'s cancel: nothing is sold on a cancelled event', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const db = api.database.db;
      for (let round = 0; round < 4; round++) {
        const { eventId, ids } = await onSale(api, key, { GA: { quantity: 1000 } });
        const orders = Array.from({ length: 40 }, () => api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } }));
        await new Promise((resolve) => setTimeout(resolve, 5 + round * 10));
        assert.equal((await api.fetch(`/v1/events/${eventId}/cancel`, { method: 'POST', key })).status, 200);
        const statuses = await Promise.all(orders.map(async (order) => (await order).status));
        assert.ok(statuses.every((status) => status === 201 || status === 409), `only 201 or 409: ${statuses}`);
        const valid = await db.selectFrom('tickets').select('id').where('eventId', '=', eventId).where('status', '=', 'valid').execute();
        const event = await db.selectFrom('events').select(['sold', 'status']).where('id', '=', eventId).executeTakeFirstOrThrow();
        const type = await db.selectFrom('ticketTypes').select('sold').where('id', '=', ids.GA!).executeTakeFirstOrThrow();
        assert.deepEqual({ valid: valid.length, sold: event.sold, typeSold: type.sold, status: event.status }, { valid: 0, sold: 0, typeSold: 0, status: 'cancelled' }, `round ${round}`);
      }
    });

    test('an order that waited for the event\'s lock fans out to a subscription created meanwhile', { skip: engine !== 'postgres' && 'PostgreSQL only: SQLite has one connection, which the held lock would keep' }, async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 10 } });
      const db = api.database.db;
      let order: ReturnType<TestApp['fetch']> | undefined;
      let subscription = '';
      await db.transaction().execute(async (trx) => {
        assert.ok(await lockEvent(new TenantScope(trx, accountId), eventId));
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        order = api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } });
        const waiting = sql<{ n: number }>`
          select count(*)::int as n from pg_locks w join pg_locks h on h.locktype = 'transactionid' and h.transactionid = w.transactionid and h.granted
          where w.locktype = 'transactionid' and not w.granted and h.pid = ${rows[0]!.pid}`;
        await until(async () => (await waiting.execute(db)).rows[0]!.n === 1, 5000, 'the order to wait for the event lock');
        subscription = (await (await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: 'https://hooks.example.com/late', events: ['*'] } })).json()).id;
      });
      assert.equal((await order!).status, 201);
      const jobs = await db.selectFrom('jobs').select('payload').where('kind', '=', 'webhook.deliver').execute();
      // ticket.purchased and payment.completed, both committed after the subscription was.
      assert.equal(jobs.filter((j) => JSON.parse(j.payload).subscriptionId === subscription).length, 2);
    });

    test('a search for a common name walks the tickets in page order instead of sorting every match', { skip: engine !== 'postgres' && 'PostgreSQL only: its planner needs statistics on lower(); SQLite walks the ticket order' }, async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { db } = api.database;
      const version = await sql<{ version: number }>`select current_setting('server_version_num')::int as version`.execute(db);
      if (version.rows[0]!.version < 140000) return t.skip('statistics on expressions need PostgreSQL 14');
      const { key, accountId } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 30000 } });
      const order = await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }] } });
      assert.equal(order.status, 201);
      const orderId = (await order.json()).id as string;
      // 20,000 tickets of that order, one in ten for a Nakamura and one in ten for a Müller: a page
      // of 100 matches lies in the first ~1,000.
      await sql`insert into tickets (id, account_id, event_id, ticket_type_id, order_id, status, attendee_name, attendee_email, code, price, currency, created_at, updated_at)
        select 'tkt_' || lpad(i::text, 26, '0'), ${accountId}, ${eventId}, ${ids.GA}, ${orderId}, 'valid',
          case i % 10 when 0 then 'Aoife Nakamura' when 5 then 'Jürgen Müller' else 'Grace Hopper' end, 'a' || i || '@example.com', md5(i::text), 1000, 'EUR', 0, 0
        from generate_series(1, 20000) as i`.execute(db);
      await sql`analyze tickets`.execute(db);

      const stats = await sql<{ name: string }>`select stxname as name from pg_statistic_ext where stxnamespace = current_schema()::regnamespace`.execute(db);
      for (const name of ['tickets_lower_attendee_name', 'tickets_lower_attendee_email', 'tickets_fold_attendee_name', 'tickets_fold_attendee_email']) {
        assert.ok(stats.rows.some((r) => r.name === name), `statistics ${name}`);
      }

      // An ASCII search folds with lower(), one beyond ASCII with translate(lower()): both must be planned in page order.
      for (const [q, name] of [['nakamura', 'Aoife Nakamura'], ['müller', 'Jürgen Müller']] as const) {
        const query = attendeePageQuery(new TenantScope(db, accountId), eventId, { q }, { limit: 100, after: null }).compile();
        const { rows } = await db.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
        const nodes: string[] = [];
        const walk = (node: PlanNode): void => {
          nodes.push(`${node['Node Type']}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`);
          for (const child of node.Plans ?? []) walk(child);
        };
        walk(rows[0]!['QUERY PLAN'][0].Plan);
        assert.ok(!nodes.includes('Sort'), `${q}: no sort of the matches: ${nodes.join(' > ')}`);
        assert.ok(nodes.some((n) => /^Index (Only )?Scan on tickets$/.test(n)), `${q}: the tickets read through an index, in page order: ${nodes.join(' > ')}`);

        const page = await (await api.fetch(`/v1/events/${eventId}/attendees?limit=100&q=${encodeURIComponent(q)}`, { key })).json();
        assert.equal(page.data.length, 100, q);
        assert.ok(page.data.every((a: { name: string }) => a.name === name), q);
      }
    });

    test('an export of 5,000 attendees parses back into exactly the rows in the database', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=100000,eventsPerDay=1000000,blendPerHour=10' });
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5000 } });
      const tricky = ['Zoë, "the" Łódź', '=HYPERLINK("x")', '+1 555', '-minus', '@at', 'new\nline', '北京 李', 'tab\tin', 'plain'];
      for (let o = 0; o < 50; o++) {
        const attendees = Array.from({ length: 100 }, (_, i) => ({ name: `${tricky[(o * 100 + i) % tricky.length]} #${o * 100 + i}`, email: `a${o * 100 + i}@example.com` }));
        const res = await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 100, attendees }] } });
        assert.equal(res.status, 201);
      }
      const res = await api.fetch(`/v1/events/${eventId}/attendees/export`, { key });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
      assert.match(res.headers.get('content-disposition') ?? '', /^attachment; filename="attendees-evt_/);
      const rows: Record<string, string>[] = parse(await res.text(), { columns: true });
      const db = await api.database.db
        .selectFrom('tickets')
        .select(['id', 'orderId', 'attendeeName', 'attendeeEmail', 'ticketTypeId'])
        .where('eventId', '=', eventId)
        .orderBy('id')
        .execute();
      assert.equal(rows.length, 5000);
      assert.equal(db.length, 5000);
      rows.forEach((row, i) => {
        const expected = db[i]!;
        const name = /^[=+\-@\t\r]/.test(expected.attendeeName) ? `'${expected.attendeeName}` : expected.attendeeName;
        assert.deepEqual(row, {
          ticketId: expected.id,
          orderId: expected.orderId,
          name,
          email: expected.attendeeEmail,
          ticketTypeId: expected.ticketTypeId,
          ticketTypeName: 'GA',
          checkedIn: 'false',
          checkedInAt: '',
        });
      });
      const ndjson = (await (await api.fetch(`/v1/events/${eventId}/attendees/export?format=json`, { key })).text()).trimEnd().split('\n');
      assert.equal(ndjson.length, 5000);
      assert.equal(JSON.parse(ndjson[0]!).name, db[0]!.attendeeName, 'NDJSON carries names as they are');
    });

    test('analytics totals and series sums equal what happened', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { Paid: { quantity: 100, price: 2500 }, Free: { quantity: 100, price: 0 } });
      const tickets: { id: string; ticketTypeId: string; price: number }[] = [];
      for (const [type, quantity] of [['Paid', 3], ['Free', 2], ['Paid', 4], ['Free', 1]] as const) {
        const order = await (await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids[type], quantity }] } })).json();
        tickets.push(...order.tickets);
      }
      const paid = tickets.filter((x) => x.price > 0);
      const free = tickets.filter((x) => x.price === 0);
      // Cancel two paid and one free; check in three, undo one of them.
      for (const ticket of [paid[0]!, paid[1]!, free[0]!]) assert.equal((await api.fetch(`/v1/tickets/${ticket.id}/cancel`, { method: 'POST', key })).status, 200);
      for (const ticket of [paid[2]!, paid[3]!, free[1]!]) assert.equal((await api.fetch(`/v1/events/${eventId}/checkin`, { method: 'POST', key, json: { ticketId: ticket.id } })).status, 201);
      assert.equal((await api.fetch(`/v1/events/${eventId}/checkin/${free[1]!.id}`, { method: 'DELETE', key })).status, 200);
      assert.equal((await api.fetch(`/v1/events/${eventId}/payouts`, { method: 'POST', key })).status, 201);

      const totals = await (await api.fetch(`/v1/events/${eventId}/analytics`, { key })).json();
      const gross = 7 * 2500;
      const refunded = 2 * 2500;
      assert.deepEqual(
        { ...totals, byTicketType: undefined },
        { eventId, currency: 'EUR', ticketsSold: 7, ticketsHeld: 0, ordersPending: 0, ticketsCancelled: 3, grossRevenue: gross, refunded, netRevenue: gross - refunded, paidOut: gross - refunded, checkedIn: 2, checkInRate: 2 / 7, byTicketType: undefined, checkinLists: [] },
      );
      const byName = Object.fromEntries(totals.byTicketType.map((x: { name: string }) => [x.name, x]));
      assert.deepEqual([byName.Paid.ticketsSold, byName.Paid.ticketsCancelled, byName.Paid.checkedIn, byName.Paid.grossRevenue], [5, 2, 2, gross]);
      assert.deepEqual([byName.Free.ticketsSold, byName.Free.ticketsCancelled, byName.Free.checkedIn, byName.Free.grossRevenue], [2, 1, 0, 0]);

      for (const interval of ['minute', 'hour', 'day']) {
        const sales = await (await api.fetch(`/v1/events/${eventId}/analytics/sales?interval=${interval}`, { key })).json();
        const sum = (k: string) => sales.buckets.reduce((n: number, b: Record<string, number>) => n + b[k]!, 0);
        assert.equal(sum('ticketsSold'), 10, interval);
        assert.equal(sum('ticketsSold') - sum('ticketsCancelled'), totals.ticketsSold);
        assert.equal(sum('grossRevenue'), totals.grossRevenue);
        assert.equal(sum('refunded'), totals.refunded);
        assert.ok(sales.buckets.length >= 1);
        for (let i = 1; i < sales.buckets.length; i++) {
          assert.ok(Date.parse(sales.buckets[i].start) > Date.parse(sales.buckets[i - 1].start), 'buckets in order, none missing');
        }
        const checkins = await (await api.fetch(`/v1/events/${eventId}/analytics/checkins?interval=${interval}`, { key })).json();
        const cSum = (k: string) => checkins.buckets.reduce((n: number, b: Record<string, number>) => n + b[k]!, 0);
        assert.equal(cSum('checkIns'), 3);
        assert.equal(cSum('undos'), 1);
        assert.equal(cSum('checkIns') - cSum('undos'), totals.checkedIn);
      }
      // A range with empty buckets on both sides: zeros, not gaps.
      const from = new Date(Date.now() - 10 * 60_000).toISOString();
      const to = new Date(Date.now() + 10 * 60_000).toISOString();
      const wide = await (await api.fetch(`/v1/events/${eventId}/analytics/sales?interval=minute&from=${from}&to=${to}`, { key })).json();
      assert.ok(wide.buckets.length >= 20 && wide.buckets.length <= 21, String(wide.buckets.length));
      assert.equal(wide.buckets[0].ticketsSold, 0);
      assert.equal(wide.buckets.reduce((n: number, b: { ticketsSold: number }) => n + b.ticketsSold, 0), 10);
    });
  });
}
