/**
 * Check-in lists end to end (docs/events.md, At the door), on every engine of the run: lists and
 * their validation, scans through a list (entry, exit, who is inside, every refusal), concurrent
 * scans of one ticket, scanId idempotency, offline sync with its conflict rule in both arrival
 * orders, undo on a list, analytics, webhooks that name the list (a real receiver), tenant isolation.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest, migrateUpTo } from '../src/db/migrate.js';
import { newId } from '../src/ids.js';
import { MAX_CODE_CHARS } from '../src/events/ticket-code-format.js';
import { notACode } from '../web/scanner/src/rules.js';
import { TenantScope } from '../src/db/tenant.js';
import { addCounts, countSlot, findList, foldCounts, NO_COUNTS } from '../src/events/checkin-lists.repository.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until, FAST_WEBHOOKS as FAST, jsonClient as client, type JsonClient as Client, hookReceiver as receiver } from './helpers.js';

type Json = any;

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();


/** A published event with two ticket types and `count` tickets of each. */
async function door(c: Client, count = 4) {
  const startsAt = Date.now() + 24 * HOUR;
  const event = await c.expect(201, 'POST', '/events', { name: 'Door', startsAt: iso(startsAt), endsAt: iso(startsAt + 3 * HOUR), timezone: 'UTC', currency: 'EUR' });
  const general = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'General', price: 0, quantity: 500 });
  const vip = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'VIP', price: 0, quantity: 500 });
  await c.expect(200, 'POST', `/events/${event.id}/publish`);
  const buy = async (typeId: string) =>
    (await c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId: typeId, quantity: count }] })).tickets;
  return { event, general, vip, generals: (await buy(general.id)) as Json[], vips: (await buy(vip.id)) as Json[] };
}

const newList = (c: Client, eventId: string, body: Record<string, unknown> = {}) => c.expect(201, 'POST', `/events/${eventId}/checkin-lists`, { name: 'Main entrance', ...body });
const getList = (c: Client, eventId: string, listId: string) => c.expect(200, 'GET', `/events/${eventId}/checkin-lists/${listId}`);
const scan = (c: Client, eventId: string, body: Record<string, unknown>) => c.send('POST', `/events/${eventId}/checkin`, body);
const counts = async (c: Client, eventId: string, listId: string) => (await getList(c, eventId, listId)).counts;
/** The scans a list has recorded, summed over its counter rows (the API shows them only in list_in_use). */
const scansOf = async (api: TestApp, listId: string) =>
  Number((await api.database.db.selectFrom('checkinListCounts').select((eb) => eb.fn.sum<number | string>('scans').as('scans')).where('listId', '=', listId).executeTakeFirst())?.scans ?? 0);


for (const engine of ENGINES) {
  describe(`check-in lists (${engine})`, () => {
    test('CRUD, paging, validation errors, delete refused once scanned, tenant isolation', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, general, generals } = await door(c, 1);
      const list = await newList(c, event.id, { ticketTypeIds: [general.id], validFrom: iso(Date.now() - HOUR), scanExits: true });
      assert.match(list.id, /^cl_[0-9a-z]{26}$/);
      assert.deepEqual(
        { ...list, id: undefined, createdAt: undefined, updatedAt: undefined, validFrom: undefined },
        { object: 'checkin_list', id: undefined, eventId: event.id, name: 'Main entrance', ticketTypeIds: [general.id], validFrom: undefined, validUntil: null, allowMultipleEntries: false, scanExits: true, counts: { inside: 0, entries: 0, exits: 0, admittedTickets: 0, conflicts: 0 }, createdAt: undefined, updatedAt: undefined },
      );
      assert.deepEqual(await getList(c, event.id, list.id), list);

      const more = [];
      for (let i = 0; i < 3; i++) more.push(await newList(c, event.id, { name: `Side ${i}` }));
      const first = await c.expect(200, 'GET', `/events/${event.id}/checkin-lists?limit=2`);
      assert.equal(first.hasMore, true);
      const second = await c.expect(200, 'GET', `/events/${event.id}/checkin-lists?limit=2&cursor=${first.nextCursor}`);
      assert.deepEqual([...first.data, ...second.data].map((l: Json) => l.id), [list.id, ...more.map((l) => l.id)]);

      const patched = await c.expect(200, 'PATCH', `/events/${event.id}/checkin-lists/${list.id}`, { name: 'North', allowMultipleEntries: true, ticketTypeIds: [] });
      assert.deepEqual([patched.name, patched.allowMultipleEntries, patched.ticketTypeIds, patched.scanExits], ['North', true, [], true]);

      const bad: Array<[string, string, unknown, string]> = [
        ['POST', `/events/${event.id}/checkin-lists`, {}, '/name'],
        ['POST', `/events/${event.id}/checkin-lists`, { name: 'x', colour: 'red' }, ''],
        ['POST', `/events/${event.id}/checkin-lists`, { name: 'x', ticketTypeIds: ['tt_nope'] }, '/ticketTypeIds/0'],
        ['POST', `/events/${event.id}/checkin-lists`, { name: 'x', validFrom: iso(Date.now()), validUntil: iso(Date.now() - HOUR) }, '/validUntil'],
        ['POST', `/events/${event.id}/checkin-lists`, { name: 'x', allowMultipleEntries: 'yes' }, '/allowMultipleEntries'],
        ['PATCH', `/events/${event.id}/checkin-lists/${list.id}`, {}, ''],
        ['PATCH', `/events/${event.id}/checkin-lists/${list.id}`, { validUntil: iso(Date.now() - 2 * HOUR) }, '/validUntil'],
      ];
      for (const [method, path, json, where] of bad) {
        const body = await problem(await c.send(method, path, json), 400, 'invalid_request');
        if (where) assert.ok(body.errors.some((e: Json) => e.path === where), `${JSON.stringify(json)}: ${JSON.stringify(body.errors)}`);
      }

      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: generals[0].id });
      const inUse = await problem(await c.send('DELETE', `/events/${event.id}/checkin-lists/${list.id}`), 409, 'list_in_use');
      assert.equal(inUse.scans, 1);
      await c.expect(204, 'DELETE', `/events/${event.id}/checkin-lists/${more[0].id}`);
      await problem(await c.send('GET', `/events/${event.id}/checkin-lists/${more[0].id}`), 404, 'not_found');

      // Another account sees none of it, and cannot scan through it.
      const other = client(api, (await api.account()).key);
      await problem(await other.send('GET', `/events/${event.id}/checkin-lists/${list.id}`), 404, 'not_found');
      await problem(await other.send('GET', `/events/${event.id}/checkin-lists`), 404, 'not_found');
      await problem(await other.send('PATCH', `/events/${event.id}/checkin-lists/${list.id}`, { name: 'mine' }), 404, 'not_found');
      await problem(await other.send('DELETE', `/events/${event.id}/checkin-lists/${list.id}`), 404, 'not_found');
      await problem(await other.send('GET', `/events/${event.id}/checkin-lists/${list.id}/conflicts`), 404, 'not_found');
      const theirs = await door(other, 1);
      const theirList = await newList(other, theirs.event.id);
      await problem(await scan(other, theirs.event.id, { listId: list.id, ticketId: generals[0].id }), 404, 'not_found');
      await problem(await scan(c, event.id, { listId: theirList.id, ticketId: generals[0].id }), 404, 'not_found');
      const synced = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, {
        deviceId: 'door-1',
        scans: [{ scanId: 's-x', ticketId: generals[0].id, listId: theirList.id, scannedAt: iso(Date.now()), localResult: 'admitted' }],
      });
      assert.deepEqual(synced.results, [{ scanId: 's-x', outcome: 'refused', reason: 'not_found' }]);
      assert.deepEqual((await counts(other, theirs.event.id, theirList.id)).entries, 0);
    });

    test('entry, exit and inside; every refusal code; multiple entries; scanId repeats answer the same', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, general, generals, vips } = await door(c, 3);
      const now = Date.now();
      const list = await newList(c, event.id, { ticketTypeIds: [general.id], scanExits: true, validFrom: iso(now - HOUR), validUntil: iso(now + 10 * 60_000) });
      const on = (body: Record<string, unknown>) => scan(c, event.id, { listId: list.id, ...body });
      const [a, b, cancelled] = generals;
      await c.expect(200, 'POST', `/tickets/${cancelled.id}/cancel`);

      const admitted = await (await on({ code: a.code, scanId: 'scan-1', gate: 'North' })).json();
      assert.deepEqual([admitted.listId, admitted.direction, admitted.scanId, admitted.ticketId, admitted.gate, admitted.attendee.name], [list.id, 'entry', 'scan-1', a.id, 'North', 'Ada Lovelace']);
      assert.match(admitted.id, /^chk_/);
      // The same scanId again: the first answer, no second entry.
      const again = await on({ code: a.code, scanId: 'scan-1', gate: 'North' });
      assert.equal(again.status, 201);
      assert.equal((await again.json()).id, admitted.id);
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 1, entries: 1, exits: 0, admittedTickets: 1, conflicts: 0 });

      const inside = await problem(await on({ ticketId: a.id }), 409, 'already_inside');
      assert.equal(inside.ticketId, a.id);
      await problem(await on({ ticketId: b.id, direction: 'exit' }), 409, 'not_inside');
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: a.id, direction: 'exit' });
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 0, entries: 1, exits: 1, admittedTickets: 1, conflicts: 0 });
      await problem(await on({ ticketId: a.id }), 409, 'already_checked_in');
      await problem(await on({ ticketId: a.id, direction: 'exit' }), 409, 'not_inside');
      await problem(await on({ ticketId: vips[0].id }), 409, 'wrong_list');
      await problem(await on({ ticketId: cancelled.id }), 409, 'ticket_cancelled');
      await problem(await on({ ticketId: b.id, checkedInAt: iso(now - 2 * HOUR) }), 409, 'not_yet_valid');
      await problem(await on({ code: 'no-such-code' }), 404, 'not_found');
      const repeated = await problem(await on({ code: 'no-such-code', scanId: 'scan-404' }), 404, 'not_found');
      assert.equal(repeated.scanId, 'scan-404');
      await problem(await on({ code: 'no-such-code', scanId: 'scan-404' }), 404, 'not_found');
      await problem(await on({ ticketId: b.id, listId: 'cl_nope' }), 404, 'not_found');
      for (const body of [{ ticketId: b.id, direction: 'exit', listId: undefined }, { ticketId: b.id, scanId: 'x', listId: undefined }, { ticketId: b.id, direction: 'sideways' }, { ticketId: b.id, scanId: '' }]) {
        await problem(await scan(c, event.id, { listId: list.id, ...body }), 400, 'invalid_request');
      }
      // The list-less path is today's: its own already_checked_in, unaffected by the list.
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { ticketId: a.id });
      await problem(await scan(c, event.id, { ticketId: a.id }), 409, 'already_checked_in');

      await c.expect(200, 'PATCH', `/events/${event.id}/checkin-lists/${list.id}`, { validUntil: iso(now - 60_000) });
      await problem(await on({ ticketId: b.id }), 409, 'list_expired');

      // Exits on a list that does not scan them are a 400.
      const noExits = await newList(c, event.id, { name: 'No exits' });
      await problem(await scan(c, event.id, { listId: noExits.id, ticketId: b.id, direction: 'exit' }), 400, 'invalid_request');

      // Multiple entries: every entry counts, the ticket once; with exits, entry while inside is refused.
      const multi = await newList(c, event.id, { name: 'Lounge', allowMultipleEntries: true, scanExits: true });
      const m = (body: Record<string, unknown>) => c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: multi.id, ...body });
      await m({ ticketId: b.id });
      await problem(await scan(c, event.id, { listId: multi.id, ticketId: b.id }), 409, 'already_inside');
      await m({ ticketId: b.id, direction: 'exit' });
      await m({ ticketId: b.id });
      await m({ ticketId: vips[0].id });
      assert.deepEqual(await counts(c, event.id, multi.id), { inside: 2, entries: 3, exits: 1, admittedTickets: 2, conflicts: 0 });
      const plain = await newList(c, event.id, { name: 'Garden', allowMultipleEntries: true });
      for (let i = 0; i < 3; i++) await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: plain.id, ticketId: vips[1].id });
      assert.deepEqual(await counts(c, event.id, plain.id), { inside: 1, entries: 3, exits: 0, admittedTickets: 1, conflicts: 0 });

      // Undo on a list: the last entry; the ticket may enter again; a second undo is not_checked_in.
      const before = await c.expect(200, 'GET', `/events/${event.id}/analytics`);
      assert.deepEqual(before.checkinLists.find((l: Json) => l.id === multi.id), { id: multi.id, name: 'Lounge', counts: { inside: 2, entries: 3, exits: 1, admittedTickets: 2, conflicts: 0 } });
      const undone = await c.expect(200, 'DELETE', `/events/${event.id}/checkin/${vips[0].id}?listId=${multi.id}`);
      assert.equal(undone.id, vips[0].id);
      assert.deepEqual(await counts(c, event.id, multi.id), { inside: 1, entries: 2, exits: 1, admittedTickets: 1, conflicts: 0 });
      await problem(await c.send('DELETE', `/events/${event.id}/checkin/${vips[0].id}?listId=${multi.id}`), 409, 'not_checked_in');
      await problem(await c.send('DELETE', `/events/${event.id}/checkin/${vips[0].id}?listId=cl_nope`), 404, 'not_found');
      await m({ ticketId: vips[0].id });
      assert.equal((await counts(c, event.id, multi.id)).inside, 2);
    });

    test('concurrent entries of one ticket on a list that admits once: exactly one admitted, one message each', async (t) => {
      // A subscription and no workers: every admission's message and delivery job stay to be counted.
      const api = await startApp(t, await freshStorage(t, engine), FAST);
      const c = client(api, (await api.account()).key);
      const hook = await receiver(t);
      await c.expect(201, 'POST', '/webhooks', { url: hook.url, events: ['checkin.completed'] });
      const { event, generals } = await door(c, 2);
      const list = await newList(c, event.id);
      const answers: Array<Awaited<ReturnType<typeof scan>>> = [];
      for (const ticket of generals) {
        const round = await Promise.all(Array.from({ length: 12 }, () => scan(c, event.id, { listId: list.id, ticketId: ticket.id })));
        const statuses = round.map((r) => r.status).sort();
        assert.deepEqual(statuses, [201, ...Array(11).fill(409)], String(statuses));
        for (const r of round) if (r.status === 409) assert.equal((await r.json()).code, 'already_inside');
        answers.push(...round);
      }
      // Concurrent repeats of one scanId: one effect.
      const vipList = await newList(c, event.id, { name: 'Any', allowMultipleEntries: true });
      const same = await Promise.all(Array.from({ length: 8 }, () => scan(c, event.id, { listId: vipList.id, ticketId: generals[0].id, scanId: 'only-once' })));
      const ids = new Set(await Promise.all(same.map(async (r) => (assert.equal(r.status, 201), (await r.json()).id))));
      assert.equal(ids.size, 1);
      // One scan id sent at the same moment for two tickets: the unique index stops the later
      // statement (23505), whose transaction runs again and answers with the first's admission.
      const twins = await Promise.all(generals.map((ticket: Json) => scan(c, event.id, { listId: vipList.id, ticketId: ticket.id, scanId: 'twin' })));
      const twinIds = new Set(await Promise.all(twins.map(async (r) => (assert.equal(r.status, 201), (await r.json()).id))));
      assert.equal(twinIds.size, 1, 'both answers name the one recorded scan');
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 2, entries: 2, exits: 0, admittedTickets: 2, conflicts: 0 });
      assert.equal((await counts(c, event.id, vipList.id)).entries, 2);
      assert.equal(await scansOf(api, vipList.id), 2, 'a scan id recorded once however often it was sent');
      assert.equal(await scansOf(api, list.id), 24, 'every scan of the admit-once list recorded, the refusals too');
      // Exactly one checkin.completed, and one delivery job, per admitted scan: 2 + only-once + twin.
      const db = api.database.db;
      const messages = await db.selectFrom('webhookMessages').select(['id', 'payload']).where('eventType', '=', 'checkin.completed').execute();
      const admitted = messages.map((m) => JSON.parse(m.payload).data.id as string).sort();
      const answered = [...(await Promise.all(answers.filter((r) => r.status === 201).map(async (r) => (await r.json()).id))), ...ids, ...twinIds].sort();
      assert.deepEqual(admitted, answered);
      const jobs = (await db.selectFrom('jobs').select('payload').where('kind', '=', 'webhook.deliver').execute()).map((j) => JSON.parse(j.payload).messageId as string);
      assert.deepEqual(jobs.sort(), messages.map((m) => m.id).sort());
    });

    test('a list deleted while its first scans arrive: either the deletion or the scans win, whole, and nothing deadlocks', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, generals, vips } = await door(c, 12);
      for (let round = 0; round < 12; round++) {
        // Both paths of a scan: the one-statement entry (a list without exits) and the transactional one (a sync batch, a list with exits).
        const list = await newList(c, event.id, { name: `Gate ${round}`, scanExits: round % 2 === 1 });
        const online = [generals[round], vips[round]].map((ticket) => scan(c, event.id, { listId: list.id, ticketId: ticket.id }));
        const synced = c.send('POST', `/events/${event.id}/checkin/sync`, {
          deviceId: 'door-1',
          scans: [{ scanId: `s-${round}`, listId: list.id, code: generals[(round + 1) % 12].code, scannedAt: iso(Date.now() - 1000), localResult: 'admitted' }],
        });
        const deleted = c.send('DELETE', `/events/${event.id}/checkin-lists/${list.id}`);
        const [a, b, batch, deletion] = await Promise.all([...online, synced, deleted]);
        const scans = [a!.status, b!.status];
        const result = (await batch!.json()).results[0];
        if (deletion!.status === 204) {
          assert.deepEqual(scans, [404, 404], 'the list went first: its scans find no list');
          assert.deepEqual([result.outcome, result.reason], ['refused', 'not_found']);
        } else {
          await problem(deletion!, 409, 'list_in_use');
          assert.deepEqual(scans, [201, 201], 'the scans went first: the list stays');
          assert.equal(result.outcome, 'admitted');
        }
      }
    });

    test('scans of different tickets on one list do not wait for each other; one ticket is admitted once and the counts stay exact', async (t) => {
      const storage = await freshStorage(t, engine);
      const api = await startApp(t, storage);
      const c = client(api, (await api.account()).key);
      const { event, generals, vips } = await door(c, 10);
      const tickets = [...generals, ...vips];
      const list = await newList(c, event.id);
      // Three concurrent entries of each of 20 tickets, all at once: one admitted per ticket.
      const answers = await Promise.all(tickets.flatMap((ticket) => [0, 1, 2].map(() => scan(c, event.id, { listId: list.id, ticketId: ticket.id }))));
      for (let i = 0; i < tickets.length; i++) {
        const statuses = answers.slice(i * 3, i * 3 + 3).map((r) => r.status).sort();
        assert.deepEqual(statuses, [201, 409, 409], `ticket ${i}: ${statuses}`);
      }
      for (const r of answers) if (r.status === 409) assert.equal((await r.json()).code, 'already_inside');
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 20, entries: 20, exits: 0, admittedTickets: 20, conflicts: 0 });
      // One scan id sent at once with a code no ticket has: no ticket's state orders them, and every answer is the same refusal, recorded once.
      const ghosts = await Promise.all(Array.from({ length: 6 }, () => scan(c, event.id, { listId: list.id, code: 'no-such-code', scanId: 'ghost' })));
      for (const r of ghosts) assert.equal((await problem(r, 404, 'not_found')).scanId, 'ghost');

      if (engine !== 'postgres') return;
      // On PostgreSQL a scan locks only its ticket's state on the list: with that row held by another
      // transaction, a scan of another ticket through the same list is decided at once, and the
      // held ticket's scan waits for the holder.
      const multi = await newList(c, event.id, { name: 'Lounge', allowMultipleEntries: true });
      assert.equal((await scan(c, event.id, { listId: multi.id, ticketId: generals[0].id })).status, 201);
      const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await holder.connect();
      onCleanup(t, () => holder.end());
      await holder.query(`set search_path to "${api.database.schema}"`);
      await holder.query('begin');
      const held = await holder.query('select inside from checkin_list_tickets where list_id = $1 and ticket_id = $2 for update', [multi.id, generals[0].id]);
      assert.equal(held.rowCount, 1);
      const waiting = scan(c, event.id, { listId: multi.id, ticketId: generals[0].id });
      const settled = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
      const other = scan(c, event.id, { listId: multi.id, ticketId: generals[1].id });
      assert.equal(await settled(other, 5000), true, 'a scan of another ticket waited for the held one');
      assert.equal((await other).status, 201);
      assert.equal(await settled(waiting, 300), false, 'the scan of the held ticket did not wait for its state');
      await holder.query('commit');
      assert.equal((await waiting).status, 201);
      assert.deepEqual(await counts(c, event.id, multi.id), { inside: 2, entries: 3, exits: 0, admittedTickets: 2, conflicts: 0 });
    });

    test('each scan writes a counter row of its own (PostgreSQL) or adds to row 0 (SQLite), and folds running beside scans keep the counts exact', async (t) => {
      const storage = await freshStorage(t, engine);
      const api = await startApp(t, storage);
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const { event, generals, vips } = await door(c, 40);
      const tickets = [...generals, ...vips];
      const list = await newList(c, event.id, { allowMultipleEntries: true });
      const scope = new TenantScope(api.database.db, accountId);
      const rows = async () => Number((await api.database.db.selectFrom('checkinListCounts').select((eb) => eb.fn.countAll<number | string>().as('n')).where('listId', '=', list.id).executeTakeFirstOrThrow()).n);
      // 80 entries and 20 undos at once, 12 folds of the list's rows among them.
      const entries = await Promise.all(tickets.map((ticket) => scan(c, event.id, { listId: list.id, ticketId: ticket.id })));
      for (const r of entries) assert.equal(r.status, 201);
      const [undos] = await Promise.all([
        Promise.all(tickets.slice(0, 20).map((ticket) => c.send('DELETE', `/events/${event.id}/checkin/${ticket.id}?listId=${list.id}`))),
        Promise.all(Array.from({ length: 12 }, () => foldCounts(scope, list.id))),
        Promise.all(tickets.slice(20, 60).map((ticket) => scan(c, event.id, { listId: list.id, ticketId: ticket.id }))),
      ]);
      for (const r of undos) assert.equal(r.status, 200);
      const expected = { inside: 60, entries: 100, exits: 0, admittedTickets: 60, conflicts: 0 };
      assert.deepEqual(await counts(c, event.id, list.id), expected);
      assert.equal(await scansOf(api, list.id), 120);
      // A fold leaves one row, the same counts; a fold of nothing changes nothing.
      await foldCounts(scope, list.id);
      assert.equal(await rows(), 1);
      await foldCounts(scope, list.id);
      assert.equal(await rows(), 1);
      assert.deepEqual(await counts(c, event.id, list.id), expected);
      // Scans after it add rows of their own again on PostgreSQL; on SQLite (one writer at a time) they add to row 0.
      for (const ticket of tickets.slice(60, 63)) assert.equal((await scan(c, event.id, { listId: list.id, ticketId: ticket.id })).status, 201);
      if (engine === 'postgres') assert.ok((await rows()) >= 2);
      else assert.equal(await rows(), 1);
      assert.equal((await counts(c, event.id, list.id)).entries, 103);
    });

    test('a fold raises row 0\'s mark to the highest slot it folded and reads only above it less a minute; a straggler below stays a row, still counted, until a sweep', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const { event, generals } = await door(c, 5);
      const list = await newList(c, event.id, { allowMultipleEntries: true });
      const scope = new TenantScope(api.database.db, accountId);
      const db = api.database.db;
      const counterRows = () => db.selectFrom('checkinListCounts').select(['slot', 'entries', 'foldedThrough']).where('listId', '=', list.id).orderBy('slot').execute();
      const mark = async () => (await counterRows()).find((r) => r.slot === 0)?.foldedThrough;
      const second = (slot: number) => Math.floor(slot / 2 ** 21);
      const from = Math.floor(Date.now() / 1000);
      for (const ticket of generals.slice(0, 3)) assert.equal((await scan(c, event.id, { listId: list.id, ticketId: ticket.id })).status, 201);
      const to = Math.floor(Date.now() / 1000);
      // (A scan folds the list itself one time in 256, so the rows left here may be fewer than three.)
      for (const { slot } of (await counterRows()).filter((r) => r.slot !== 0)) {
        assert.equal(engine, 'postgres', 'SQLite adds to row 0');
        assert.ok(Number.isSafeInteger(slot) && second(slot) >= from && second(slot) <= to, `slot ${slot} is of its scan's second`);
      }
      await foldCounts(scope, list.id);
      const first = await mark();
      assert.equal((await counterRows()).length, 1);
      if (engine === 'postgres') assert.ok(first! > 2 ** 31 && second(first!) >= from && second(first!) <= to, `mark ${first} is the highest slot folded`);
      else assert.equal(first, 0);

      // A straggler of before (a slot below 2³¹, far below the mark less a minute) and one that took
      // its slot a second before the last fold's highest and committed after it.
      const row = (slot: number) => ({ listId: list.id, slot, accountId, ...NO_COUNTS, entries: 1, scans: 1 });
      const late = engine === 'postgres' ? first! - 2 ** 21 : countSlot() - 2 ** 21;
      await db.insertInto('checkinListCounts').values([row(5), row(late)]).execute();
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 3, entries: 5, exits: 0, admittedTickets: 3, conflicts: 0 });
      await foldCounts(scope, list.id);
      // PostgreSQL folds the late one (within the minute below the mark) and leaves the straggler;
      // SQLite folds every row. The counts are the same either way, and the mark does not go down.
      assert.deepEqual(
        (await counterRows()).map((r) => [r.slot, r.entries]),
        engine === 'postgres' ? [[0, 4], [5, 1]] : [[0, 5]],
      );
      assert.equal(await mark(), first);
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 3, entries: 5, exits: 0, admittedTickets: 3, conflicts: 0 });
      // Scans and folds go on past it.
      for (const ticket of generals.slice(3, 5)) assert.equal((await scan(c, event.id, { listId: list.id, ticketId: ticket.id })).status, 201);
      const [before, added] = [await mark(), (await counterRows()).map((r) => r.slot).filter((slot) => slot > 5)];
      await foldCounts(scope, list.id);
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 5, entries: 7, exits: 0, admittedTickets: 5, conflicts: 0 });
      assert.equal((await counterRows()).length, engine === 'postgres' ? 2 : 1);
      assert.equal(await mark(), engine === 'postgres' ? Math.max(before!, ...added) : 0);
      assert.equal(await scansOf(api, list.id), 7);
      // A sweep (one fold in SWEEP_EVERY) folds the straggler too, and leaves the mark where it was.
      const markBeforeSweep = await mark();
      await foldCounts(scope, list.id, true);
      assert.deepEqual((await counterRows()).map((r) => [r.slot, r.entries]), [[0, 7]]);
      assert.equal(await mark(), markBeforeSweep);
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 5, entries: 7, exits: 0, admittedTickets: 5, conflicts: 0 });
    });

    test('folds at once over rows already written count each row once and leave the highest slot as the mark', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const { event } = await door(c, 1);
      const list = await newList(c, event.id);
      const db = api.database.db;
      const scope = new TenantScope(db, accountId);
      // 600 rows over the last 90 seconds (wider than a fold's minute below the mark), each one scan.
      const now = Date.now();
      const slots = [...new Set(Array.from({ length: 600 }, (_, i) => countSlot(now - 90_000 + i * 150)))];
      await db
        .insertInto('checkinListCounts')
        .values(slots.map((slot) => ({ listId: list.id, slot, accountId, ...NO_COUNTS, scans: 1 })))
        .execute();
      await Promise.all(Array.from({ length: 12 }, () => foldCounts(scope, list.id)));
      const rows = await db.selectFrom('checkinListCounts').select(['slot', 'scans', 'foldedThrough']).where('listId', '=', list.id).execute();
      assert.deepEqual(rows, [{ slot: 0, scans: slots.length, foldedThrough: engine === 'postgres' ? Math.max(...slots) : 0 }]);
      assert.equal(await scansOf(api, list.id), slots.length);
    });

    test('migration 0025 keeps the counts of rows of before (slots below 2³¹ and a row 0); the next fold takes them, then time-ordered slots follow', async (t) => {
      const storage = await freshStorage(t, engine);
      const handle = openDatabase(loadConfig({ ...storage.env, MONTAGE_LOG_LEVEL: 'silent' }));
      onCleanup(t, () => handle.close());
      await migrateUpTo(handle, '2026_11_27_0024_tickets_fillfactor');
      const now = Date.now();
      const [accountId, eventId, busy, quiet] = [newId('account'), newId('event'), newId('checkinList'), newId('checkinList')];
      await sql`insert into accounts (id, email, plan, created_at, updated_at) values (${accountId}, 'old@example.com', 'business', ${now}, ${now})`.execute(handle.db);
      await sql`insert into events (id, account_id, name, starts_at, ends_at, timezone, currency, status, metadata, sold, created_at, updated_at)
        values (${eventId}, ${accountId}, 'Old show', ${now + 86_400_000}, ${now + 90_000_000}, 'UTC', 'EUR', 'published', '{}', 0, ${now}, ${now})`.execute(handle.db);
      for (const id of [busy, quiet]) {
        await sql`insert into checkin_lists (id, account_id, event_id, name, ticket_type_ids, valid_from, valid_until, allow_multiple_entries, scan_exits, created_at, updated_at)
          values (${id}, ${accountId}, ${eventId}, 'Door', '[]', null, null, 1, 0, ${now}, ${now})`.execute(handle.db);
      }
      const counter = (listId: string, slot: number, entries: number) =>
        sql`insert into checkin_list_counts (list_id, slot, account_id, inside, entries, exits, admitted_tickets, conflicts, scans)
          values (${listId}, ${slot}, ${accountId}, ${entries}, ${entries}, 0, ${entries}, 0, ${entries})`.execute(handle.db);
      await counter(busy, 0, 40);
      const old = [...new Set(Array.from({ length: 30 }, () => 1 + Math.floor(Math.random() * (2 ** 31 - 2))))].concat(2 ** 31 - 1);
      for (const slot of old) await counter(busy, slot, 1);
      await counter(quiet, 0, 7);
      await migrateToLatest(handle);

      const scope = new TenantScope(handle.db, accountId);
      const entries = async (listId: string) => (await findList(scope, eventId, listId))!.entries;
      const rows = () => handle.db.selectFrom('checkinListCounts').select(['slot', 'foldedThrough']).where('listId', '=', busy).orderBy('slot').execute();
      assert.equal(await entries(busy), 40 + old.length);
      assert.equal(await entries(quiet), 7);
      assert.deepEqual((await rows()).filter((r) => r.slot === 0), [{ slot: 0, foldedThrough: 0 }]);
      await foldCounts(scope, busy);
      assert.deepEqual(await rows(), [{ slot: 0, foldedThrough: engine === 'postgres' ? 2 ** 31 - 1 : 0 }]);
      assert.equal(await entries(busy), 40 + old.length);
      // A scan's change after the migration: a time-ordered row on PostgreSQL, folded by the next fold; row 0 on SQLite.
      await scope.transaction((tx) => addCounts(tx, busy, { ...NO_COUNTS, entries: 1, scans: 1 }));
      const added = (await rows()).map((r) => r.slot).filter((slot) => slot !== 0);
      if (engine === 'postgres') assert.ok(added.length === 1 && added[0]! > 2 ** 31 && Number.isSafeInteger(added[0]), `new slot ${added[0]}`);
      else assert.deepEqual(added, []);
      await foldCounts(scope, busy);
      assert.equal((await rows()).length, 1);
      assert.equal(await entries(busy), 41 + old.length);
      assert.equal(await entries(quiet), 7);

      // Back down: the rows are folded into row 0 (no time-ordered slot fits an integer) and the counts stay.
      await scope.transaction((tx) => addCounts(tx, busy, { ...NO_COUNTS, entries: 1, scans: 1 }));
      await migrateUpTo(handle, '2026_11_27_0024_tickets_fillfactor');
      const sums = await sql<{ listId: string; entries: number | string }>`select list_id, sum(entries) as entries from checkin_list_counts group by list_id`.execute(handle.db);
      assert.deepEqual(Object.fromEntries(sums.rows.map((r) => [r.listId, Number(r.entries)])), { [busy]: 42 + old.length, [quiet]: 7 });
    });

    test('migration 0026: a scan, a ticket state and a counter row hold their list with its account (and event); deleting the event removes them; down and up again', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const other = (await api.account()).accountId as string;
      const { event, generals } = await door(c, 2);
      const list = await newList(c, event.id);
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: generals[0].id });
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { ticketId: generals[1].id });
      const db = api.database.db;
      const rows = async () => ({
        scans: (await db.selectFrom('checkinScans').select('id').where('listId', '=', list.id).execute()).length,
        states: (await db.selectFrom('checkinListTickets').select('ticketId').where('listId', '=', list.id).execute()).length,
        counters: (await db.selectFrom('checkinListCounts').select('slot').where('listId', '=', list.id).execute()).length,
        checkins: (await db.selectFrom('checkins').select('id').where('eventId', '=', event.id).execute()).length,
      });
      const before = await rows();
      assert.ok(before.scans === 1 && before.states === 1 && before.counters >= 1 && before.checkins >= 1, JSON.stringify(before));
      const scanRow = await db.selectFrom('checkinScans').selectAll().where('listId', '=', list.id).executeTakeFirstOrThrow();
      if (engine === 'postgres') {
        // A row naming the list under another account (or another event) is refused by the key itself.
        const refused = async (values: Record<string, unknown>) =>
          assert.rejects(db.insertInto('checkinScans').values({ ...scanRow, id: newId('checkin'), scanId: newId('checkin'), ...values }).execute(), (e: Json) => e.code === '23503');
        await refused({ accountId: other });
        await refused({ eventId: newId('event') });
        await assert.rejects(db.insertInto('checkinListCounts').values({ listId: list.id, slot: 1, accountId: other, ...NO_COUNTS }).execute(), (e: Json) => e.code === '23503');
        const keys = async () =>
          (await sql<{ conname: string }>`select conname from pg_constraint where contype = 'f' and conrelid::regclass::text in ('checkin_scans', 'checkin_list_tickets', 'checkin_list_counts', 'checkins') order by 1`.execute(db)).rows.map((r) => r.conname);
        const latest = ['checkin_list_counts_list_fkey', 'checkin_list_tickets_list_fkey', 'checkin_list_tickets_ticket_id_fkey', 'checkin_scans_list_fkey', 'checkin_scans_ticket_id_fkey', 'checkins_event_fkey', 'checkins_ticket_id_fkey'];
        assert.deepEqual(await keys(), latest);
        await migrateUpTo(api.database, '2026_11_27_0025_checkin_counts_time_slots');
        assert.equal((await keys()).length, 12);
        await migrateToLatest(api.database);
        assert.deepEqual(await keys(), latest);
      }
      await sql`delete from events where id = ${event.id}`.execute(db);
      assert.deepEqual(await rows(), { scans: 0, states: 0, counters: 0, checkins: 0 });
    });

    test('a ticket cancelled or transferred while its scan is decided is not admitted; a change waits for an admission in flight', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, generals } = await door(c, 6);
      const quick = await newList(c, event.id, { name: 'One statement' });
      const careful = await newList(c, event.id, { name: 'Transactional', scanExits: true });
      const completed = async () => (await api.database.db.selectFrom('webhookMessages').select('payload').where('eventType', '=', 'checkin.completed').execute()).length;
      // In sequence, on both engines: a cancelled ticket and a transferred ticket's old code are refused on both paths.
      await c.expect(200, 'POST', `/tickets/${generals[0].id}/cancel`);
      await c.expect(200, 'POST', `/tickets/${generals[1].id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } });
      for (const list of [quick, careful]) {
        await problem(await scan(c, event.id, { listId: list.id, ticketId: generals[0].id }), 409, 'ticket_cancelled');
        await problem(await scan(c, event.id, { listId: list.id, code: generals[1].code }), 409, 'ticket_revoked');
      }
      if (engine !== 'postgres') return;

      // A change of the ticket holds its row, uncommitted, while scans of it are read and written:
      // each scan waits for it, then sees the change (no entry, no message).
      const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await holder.connect();
      onCleanup(t, () => holder.end());
      await holder.query(`set search_path to "${api.database.schema}"`);
      const settled = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
      const before = await completed();
      for (const [i, list] of [quick, careful].entries()) {
        const ticket = generals[2 + i];
        await holder.query('begin');
        await holder.query(`update tickets set status = 'cancelled', cancelled_at = $2 where id = $1`, [ticket.id, Date.now()]);
        const waiting = scan(c, event.id, { listId: list.id, ticketId: ticket.id });
        assert.equal(await settled(waiting, 500), false, `${list.name}: the scan did not wait for the ticket's change`);
        await holder.query('commit');
        await problem(await waiting, 409, 'ticket_cancelled');
      }
      assert.equal(await completed(), before, 'a cancelled ticket got a checkin.completed');
      for (const list of [quick, careful]) assert.deepEqual(await counts(c, event.id, list.id), { inside: 0, entries: 0, exits: 0, admittedTickets: 0, conflicts: 0 });

      // The other order: an admission holds the ticket (as a scan's write does) and commits its
      // entry; a cancel and a transfer that began meanwhile wait for it, then refuse.
      const ticket = generals[4];
      await holder.query('begin');
      await holder.query('select id from tickets where id = $1 for share', [ticket.id]);
      const cancel = c.send('POST', `/tickets/${ticket.id}/cancel`);
      const transfer = c.send('POST', `/tickets/${ticket.id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } });
      assert.equal(await settled(Promise.race([cancel, transfer]), 500), false, 'a change did not wait for the admission in flight');
      const { rows } = await holder.query('select account_id from tickets where id = $1', [ticket.id]);
      await holder.query(
        `insert into checkin_list_tickets (list_id, ticket_id, account_id, inside, entries, kept_scan_id, kept_scanned_at, kept_device_id, kept_row_id) values ($1, $2, $3, 1, 1, null, null, null, null)`,
        [quick.id, ticket.id, rows[0].account_id],
      );
      await holder.query('commit');
      await problem(await cancel, 409, 'ticket_checked_in');
      await problem(await transfer, 409, 'ticket_checked_in');
      const now = await c.expect(200, 'GET', `/tickets/${ticket.id}`);
      assert.deepEqual([now.status, now.code], ['valid', ticket.code]);
    });

    test('sync: idempotent by scanId; the conflict rule keeps the earliest admission in both arrival orders', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const c = client(api, key);
      const scanner = client(api, await api.key(accountId, 'business', { scopes: ['checkin'] }));
      const { event, generals, vips } = await door(c, 4);
      const list = await newList(c, event.id);
      const t0 = Date.now() - 30 * 60_000;
      const entry = (scanId: string, ticket: Json, at: number, localResult = 'admitted') => ({ scanId, code: ticket.code, listId: list.id, scannedAt: iso(at), localResult });
      const sync = (deviceId: string, scans: Json[]) => scanner.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId, scans });

      const batch = [entry('a1', generals[0], t0), entry('a2', generals[1], t0 + 1000), entry('a3', vips[0], t0 + 2000, 'refused'), { ...entry('a4', generals[0], t0 + 3000), code: undefined, ticketId: 'tkt_00000000000000000000000000' }];
      const first = await sync('door-a', batch);
      assert.deepEqual(first.results.map((r: Json) => [r.scanId, r.outcome, r.reason]), [['a1', 'admitted', undefined], ['a2', 'admitted', undefined], ['a3', 'refused', undefined], ['a4', 'refused', 'not_found']]);
      assert.deepEqual([first.results[0].ticketId, first.results[0].attendee, first.results[0].ticketTypeName], [generals[0].id, { name: 'Ada Lovelace' }, 'General']);
      assert.deepEqual(first.list.counts, { inside: 2, entries: 2, exits: 0, admittedTickets: 2, conflicts: 0 });
      // The same batch again: duplicates, counted once, with the first outcomes.
      const second = await sync('door-a', batch);
      assert.deepEqual(second.results.map((r: Json) => [r.scanId, r.outcome, r.recordedOutcome]), [['a1', 'duplicate', 'admitted'], ['a2', 'duplicate', 'admitted'], ['a3', 'duplicate', 'refused'], ['a4', 'duplicate', 'refused']]);
      assert.equal(second.results[0].checkinId, first.results[0].checkinId);
      assert.deepEqual(second.list.counts, first.list.counts);

      // Door B admitted generals[0] later than door A: B's scan is the conflict.
      const later = await sync('door-b', [entry('b1', generals[0], t0 + 60_000)]);
      assert.deepEqual(later.results[0].outcome, 'conflict');
      assert.deepEqual(later.results[0].conflict, { keptScanId: 'a1', keptScannedAt: iso(t0), keptDeviceId: 'door-a' });
      assert.deepEqual(later.list.counts, { inside: 2, entries: 2, exits: 0, admittedTickets: 2, conflicts: 1 });

      // Door B admitted generals[1] EARLIER than door A did, but arrives later: B's is kept, A's becomes the conflict.
      const earlier = await sync('door-b', [entry('b2', generals[1], t0 - 60_000)]);
      assert.equal(earlier.results[0].outcome, 'admitted');
      assert.deepEqual(earlier.results[0].displaced, { scanId: 'a2', scannedAt: iso(t0 + 1000), deviceId: 'door-a' });
      assert.deepEqual(earlier.list.counts, { inside: 2, entries: 2, exits: 0, admittedTickets: 2, conflicts: 2 });
      // Door A's resent batch now tells it that a2 became a conflict.
      const told = await sync('door-a', [batch[1]]);
      assert.deepEqual([told.results[0].outcome, told.results[0].recordedOutcome, told.results[0].conflict], ['duplicate', 'conflict', { keptScanId: 'b2', keptScannedAt: iso(t0 - 60_000), keptDeviceId: 'door-b' }]);

      // Both orders inside one batch too: the earliest wins whichever comes first.
      const mixed = await sync('door-c', [entry('c1', generals[2], t0 + 5000), entry('c2', generals[2], t0 + 4000), entry('c3', generals[3], t0 + 4000), entry('c4', generals[3], t0 + 5000)]);
      // A batch is decided in the order its scans were made: c2 before c1, so c1 is the conflict (nothing displaced); answers in the order sent.
      assert.deepEqual(mixed.results.map((r: Json) => r.outcome), ['conflict', 'admitted', 'admitted', 'conflict']);
      assert.deepEqual([mixed.results[0].conflict.keptScanId, mixed.results[1].displaced, mixed.results[3].conflict.keptScanId], ['c2', undefined, 'c3']);
      assert.deepEqual(mixed.list.counts, { inside: 4, entries: 4, exits: 0, admittedTickets: 4, conflicts: 4 });

      const conflicts = await scanner.expect(200, 'GET', `/events/${event.id}/checkin-lists/${list.id}/conflicts?limit=3`);
      assert.equal(conflicts.hasMore, true);
      const rest = await scanner.expect(200, 'GET', `/events/${event.id}/checkin-lists/${list.id}/conflicts?limit=3&cursor=${conflicts.nextCursor}`);
      const all = [...conflicts.data, ...rest.data];
      assert.deepEqual(all.map((x: Json) => x.scanId).sort(), ['a2', 'b1', 'c1', 'c4']);
      assert.deepEqual(all.slice(0, 2).map((x: Json) => x.scanId).sort(), ['c1', 'c4'], 'newest first: c1 and c4 became conflicts last');
      const a2 = all.find((x: Json) => x.scanId === 'a2');
      assert.deepEqual([a2.ticketId, a2.deviceId, a2.kept], [generals[1].id, 'door-a', { keptScanId: 'b2', keptScannedAt: iso(t0 - 60_000), keptDeviceId: 'door-b' }]);

      // A malformed envelope is a 400: too many scans, no scans, scans not a list, a missing deviceId, a scan without its scanId.
      const bad = [
        { deviceId: 'd', scans: Array.from({ length: 1001 }, (_, i) => entry(`x${i}`, generals[0], t0)) },
        { scans: [entry('y', generals[0], t0)] },
        { deviceId: 'd', scans: [] },
        { deviceId: 'd', scans: 'y' },
        { deviceId: 'd', scans: [{ ...entry('y', generals[0], t0), scanId: undefined }] },
      ];
      for (const json of bad) await problem(await scanner.send('POST', `/events/${event.id}/checkin/sync`, json), 400, 'invalid_request');
      const reader = client(api, await api.key(accountId, 'business', { scopes: ['events:read'] }));
      await problem(await reader.send('POST', `/events/${event.id}/checkin/sync`, { deviceId: 'd', scans: [entry('z', generals[0], t0)] }), 403, 'insufficient_scope');
    });

    test('sync: exits and who is inside, the server refusing what a door admitted, an online admission displaced by an earlier offline one', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, general, generals, vips } = await door(c, 3);
      const t0 = Date.now() - 20 * 60_000;
      const list = await newList(c, event.id, { ticketTypeIds: [general.id], scanExits: true, validFrom: iso(t0 - 60_000) });
      const noExits = await newList(c, event.id, { name: 'No exits' });
      await c.expect(200, 'POST', `/tickets/${generals[2].id}/cancel`);
      const s = (scanId: string, ticket: Json, at: number, extra: Record<string, unknown> = {}) => ({ scanId, ticketId: ticket.id, listId: list.id, scannedAt: iso(at), localResult: 'admitted', ...extra });
      const answer = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, {
        deviceId: 'door-1',
        scans: [
          s('e1', generals[0], t0),
          s('x1', generals[0], t0 + 1000, { direction: 'exit' }),
          s('x2', generals[0], t0 + 2000, { direction: 'exit' }),
          s('e2', generals[2], t0 + 3000),
          s('e3', vips[0], t0 + 4000),
          s('e4', generals[1], t0 - 120_000),
          s('x3', generals[1], t0 + 5000, { direction: 'exit', listId: noExits.id }),
        ],
      });
      assert.deepEqual(answer.results.map((r: Json) => [r.scanId, r.outcome, r.reason]), [
        ['e1', 'admitted', undefined],
        ['x1', 'admitted', undefined],
        ['x2', 'refused', 'not_inside'],
        ['e2', 'refused', 'ticket_cancelled'],
        ['e3', 'refused', 'wrong_list'],
        ['e4', 'refused', 'not_yet_valid'],
        ['x3', 'refused', 'invalid_request'],
      ]);
      assert.equal(answer.list, null, 'two lists named');
      assert.deepEqual(answer.lists.find((l: Json) => l.id === list.id).counts, { inside: 0, entries: 1, exits: 1, admittedTickets: 1, conflicts: 0 });

      // An online admission, then an earlier offline one of the same ticket: the offline one is kept.
      const online = await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: generals[1].id, scanId: 'online-1' });
      const late = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door-2', scans: [s('o1', generals[1], t0)] });
      assert.deepEqual([late.results[0].outcome, late.results[0].displaced.scanId, late.results[0].displaced.deviceId], ['admitted', 'online-1', null]);
      assert.deepEqual(late.list.counts, { inside: 1, entries: 2, exits: 1, admittedTickets: 2, conflicts: 1 });
      const conflicts = await c.expect(200, 'GET', `/events/${event.id}/checkin-lists/${list.id}/conflicts`);
      assert.deepEqual(conflicts.data.map((x: Json) => [x.id, x.scanId, x.kept.keptScanId, x.kept.keptDeviceId]), [[online.id, 'online-1', 'o1', 'door-2']]);
      // The online scan sent again now answers that it no longer admits.
      await problem(await scan(c, event.id, { listId: list.id, ticketId: generals[1].id, scanId: 'online-1' }), 409, 'already_checked_in');
    });

    test('an online refusal is recorded: its scanId answers the same refusal after the list changes', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, general, vips } = await door(c, 1);
      const list = await newList(c, event.id, { ticketTypeIds: [general.id] });
      const refused = await problem(await scan(c, event.id, { listId: list.id, ticketId: vips[0].id, scanId: 'vip-1' }), 409, 'wrong_list');
      assert.equal(refused.scanId, 'vip-1');
      // The list now admits every type; the same scan id still answers its first result, with no effect.
      await c.expect(200, 'PATCH', `/events/${event.id}/checkin-lists/${list.id}`, { ticketTypeIds: [] });
      await problem(await scan(c, event.id, { listId: list.id, ticketId: vips[0].id, scanId: 'vip-1' }), 409, 'wrong_list');
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 0, entries: 0, exits: 0, admittedTickets: 0, conflicts: 0 });
      // The refused scan is on the list's record, so the list is in use.
      assert.equal((await problem(await c.send('DELETE', `/events/${event.id}/checkin-lists/${list.id}`), 409, 'list_in_use')).scans, 1);
      // A new scan id is decided afresh.
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: vips[0].id, scanId: 'vip-2' });
    });

    test('a ticket admitted through a list is not cancelled or transferred until its entry is undone', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, generals } = await door(c, 2);
      const list = await newList(c, event.id, { scanExits: true });
      const [online, offline] = generals;
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: online.id });
      await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door-1', scans: [{ scanId: 's1', ticketId: offline.id, listId: list.id, scannedAt: iso(Date.now() - 60_000), localResult: 'admitted' }] });
      for (const ticket of [online, offline]) {
        const cancel = await problem(await c.send('POST', `/tickets/${ticket.id}/cancel`), 409, 'ticket_checked_in');
        assert.match(cancel.detail, /check-in list/);
        assert.equal(cancel.checkedInAt, null);
        await problem(await c.send('POST', `/tickets/${ticket.id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } }), 409, 'ticket_checked_in');
        const now = await c.expect(200, 'GET', `/tickets/${ticket.id}`);
        assert.deepEqual([now.status, now.code, now.attendee.name], ['valid', ticket.code, 'Ada Lovelace']);
      }
      // After an exit the ticket was still admitted: the same.
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: online.id, direction: 'exit' });
      await problem(await c.send('POST', `/tickets/${online.id}/cancel`), 409, 'ticket_checked_in');
      // Once its entry is undone, it may be transferred and cancelled.
      await c.expect(200, 'DELETE', `/events/${event.id}/checkin/${online.id}?listId=${list.id}`);
      await c.expect(200, 'POST', `/tickets/${online.id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } });
      assert.equal((await c.expect(200, 'POST', `/tickets/${online.id}/cancel`)).status, 'cancelled');
      // A ticket only refused on a list (another list's admission does not count for it either) is free.
      const other = await door(c, 1);
      const vipOnly = await newList(c, other.event.id, { ticketTypeIds: [other.vip.id] });
      await problem(await scan(c, other.event.id, { listId: vipOnly.id, ticketId: other.generals[0].id }), 409, 'wrong_list');
      assert.equal((await c.expect(200, 'POST', `/tickets/${other.generals[0].id}/cancel`)).status, 'cancelled');
    });

    test('sync: a malformed scan is refused invalid_scan by itself; the rest of the batch is recorded', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, generals } = await door(c, 3);
      const list = await newList(c, event.id);
      const t0 = Date.now() - 10 * 60_000;
      const s = (scanId: string, extra: Record<string, unknown>) => ({ scanId, code: generals[0].code, listId: list.id, scannedAt: iso(t0), localResult: 'refused', ...extra });
      const batch = [
        s('long', { code: 'x'.repeat(3000) }),
        s('ok-1', { code: generals[1].code, localResult: 'admitted' }),
        s('unparsable', { scannedAt: 'yesterday-ish' }),
        s('ahead', { scannedAt: iso(Date.now() + 2 * HOUR) }),
        s('no-list', { listId: undefined }),
        s('both', { ticketId: generals[0].id }),
        s('neither', { code: undefined }),
        s('sideways', { direction: 'sideways' }),
        s('maybe', { localResult: 'maybe' }),
        s('unknown-list', { listId: 'cl_nope' }),
        s('ok-2', { code: generals[2].code, localResult: 'admitted', scannedAt: iso(t0 + 1000) }),
      ];
      const answer = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door-1', scans: batch });
      assert.deepEqual(answer.results.map((r: Json) => [r.scanId, r.outcome, r.reason, r.detail]), [
        ['long', 'refused', 'invalid_scan', "/scans/0/code must be 1 to 256 characters: it is no ticket's code"],
        ['ok-1', 'admitted', undefined, undefined],
        ['unparsable', 'refused', 'invalid_scan', '/scans/2/scannedAt is not a time'],
        ['ahead', 'refused', 'invalid_scan', '/scans/3/scannedAt is in the future'],
        ['no-list', 'refused', 'invalid_scan', '/scans/4/listId is required: a synced scan goes through a check-in list'],
        ['both', 'refused', 'invalid_scan', '/scans/5/ticketId send exactly one of ticketId and code'],
        ['neither', 'refused', 'invalid_scan', '/scans/6/code send exactly one of ticketId and code'],
        ['sideways', 'refused', 'invalid_scan', '/scans/7/direction must be entry or exit'],
        ['maybe', 'refused', 'invalid_scan', '/scans/8/localResult must be admitted or refused'],
        ['unknown-list', 'refused', 'not_found', undefined],
        ['ok-2', 'admitted', undefined, undefined],
      ]);
      assert.deepEqual(answer.list.counts, { inside: 2, entries: 2, exits: 0, admittedTickets: 2, conflicts: 0 });
      // Sent again (a scanner that lost the answer): the good ones are duplicates, the bad ones the same refusal, nothing counted twice.
      const again = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door-1', scans: batch });
      assert.deepEqual(again.results.map((r: Json) => r.outcome), ['refused', 'duplicate', ...Array(8).fill('refused'), 'duplicate']);
      assert.deepEqual(again.list.counts, answer.list.counts);
      // A batch of bad scans only: every one answered, nothing recorded.
      const only = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door-1', scans: [batch[0], batch[2]] });
      assert.deepEqual([only.results.map((r: Json) => r.reason), only.lists, only.list], [['invalid_scan', 'invalid_scan'], [], null]);
      assert.equal((await c.expect(200, 'GET', `/events/${event.id}/checkin-lists/${list.id}`)).counts.entries, 2);
    });

    test('one limit for a code everywhere: 256 characters are looked up, 257 are refused before', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event } = await door(c, 1);
      const list = await newList(c, event.id);
      const longest = 'x'.repeat(MAX_CODE_CHARS);
      const over = 'x'.repeat(MAX_CODE_CHARS + 1);
      assert.equal(MAX_CODE_CHARS, 256);
      for (const body of [{}, { listId: list.id }]) {
        await problem(await scan(c, event.id, { ...body, code: longest }), 404, 'not_found');
        const refused = await problem(await scan(c, event.id, { ...body, code: over }), 400, 'invalid_request');
        assert.deepEqual(refused.errors.map((e: Json) => e.path), ['/code']);
      }
      const synced = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, {
        deviceId: 'door-1',
        scans: [longest, over].map((code, i) => ({ scanId: `len-${i}`, code, listId: list.id, scannedAt: iso(Date.now() - 1000), localResult: 'refused' })),
      });
      assert.deepEqual(synced.results.map((r: Json) => [r.outcome, r.reason, r.detail]), [
        ['refused', 'not_found', undefined],
        ['refused', 'invalid_scan', "/scans/1/code must be 1 to 256 characters: it is no ticket's code"],
      ]);
      assert.equal(notACode(longest), null);
      assert.match(notACode(over)!, /257 characters, a ticket code at most 256/);
    });

    test('sync: who is inside does not depend on the order exits and entries arrive in', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, generals } = await door(c, 4);
      const list = await newList(c, event.id, { scanExits: true });
      const t0 = Date.now() - 60 * 60_000;
      const s = (scanId: string, ticket: Json, at: number, direction = 'entry') => ({ scanId, ticketId: ticket.id, listId: list.id, direction, scannedAt: iso(at), localResult: 'admitted' });
      const sync = (deviceId: string, scans: Json[]) => c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId, scans });
      const [early, late, batched, online] = generals;

      // The exit at 10:30 arrives before the entry at 10:00: refused for now, taken up when the entry arrives.
      const exitFirst = await sync('door-out', [s('x-late', late, t0 + 30 * 60_000, 'exit')]);
      assert.deepEqual([exitFirst.results[0].outcome, exitFirst.results[0].reason], ['refused', 'not_inside']);
      const entryAfter = await sync('door-in', [s('e-late', late, t0)]);
      assert.equal(entryAfter.results[0].outcome, 'admitted');
      assert.deepEqual(entryAfter.list.counts, { inside: 0, entries: 1, exits: 1, admittedTickets: 1, conflicts: 0 });
      const resent = await sync('door-out', [s('x-late', late, t0 + 30 * 60_000, 'exit')]);
      assert.deepEqual([resent.results[0].outcome, resent.results[0].recordedOutcome, resent.results[0].reason], ['duplicate', 'admitted', undefined]);

      // The usual order gives the same.
      await sync('door-in', [s('e-early', early, t0)]);
      const inOrder = await sync('door-out', [s('x-early', early, t0 + 30 * 60_000, 'exit')]);
      assert.equal(inOrder.results[0].outcome, 'admitted');
      assert.deepEqual(inOrder.list.counts, { inside: 0, entries: 2, exits: 2, admittedTickets: 2, conflicts: 0 });

      // Inside one batch, sent in the wrong order: decided in the order made, answered in the order sent.
      const oneBatch = await sync('door-x', [s('x-b', batched, t0 + 30 * 60_000, 'exit'), s('e-b', batched, t0)]);
      assert.deepEqual(oneBatch.results.map((r: Json) => [r.scanId, r.outcome]), [['x-b', 'admitted'], ['e-b', 'admitted']]);
      assert.deepEqual(oneBatch.list.counts, { inside: 0, entries: 3, exits: 3, admittedTickets: 3, conflicts: 0 });

      // An exit the door itself refused (online, or offline) let nobody out: an entry before it does not take it up.
      await problem(await scan(c, event.id, { listId: list.id, ticketId: online.id, direction: 'exit' }), 409, 'not_inside');
      await sync('door-out', [{ ...s('x-refused', online, t0 + 20 * 60_000, 'exit'), localResult: 'refused' }]);
      await sync('door-in', [s('e-online', online, t0)]);
      assert.deepEqual(await counts(c, event.id, list.id), { inside: 1, entries: 4, exits: 3, admittedTickets: 4, conflicts: 0 });
      // An exit before the entry stays refused: it was made while the ticket was out.
      const before = await sync('door-out', [s('x-before', early, t0 - 60_000, 'exit')]);
      assert.deepEqual([before.results[0].outcome, before.results[0].reason], ['refused', 'not_inside']);

      // Several entries: out at 10:30 (arrived first), in again at 10:45, then the entry of 10:00 arrives: still inside.
      const lounge = await newList(c, event.id, { name: 'Lounge', scanExits: true, allowMultipleEntries: true });
      const l = (scanId: string, at: number, direction = 'entry') => ({ ...s(scanId, early, at, direction), listId: lounge.id });
      await sync('door-out', [l('l-out', t0 + 30 * 60_000, 'exit')]);
      await sync('door-in', [l('l-again', t0 + 45 * 60_000)]);
      const firstIn = await sync('door-in', [l('l-first', t0)]);
      assert.equal(firstIn.results[0].outcome, 'admitted');
      assert.deepEqual(firstIn.list.counts, { inside: 1, entries: 2, exits: 0, admittedTickets: 1, conflicts: 0 });
    });

    test('sync: after a chain of displacements every conflict names the admission kept last', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event, generals } = await door(c, 1);
      const list = await newList(c, event.id);
      const t0 = Date.now() - 60 * 60_000;
      const s = (scanId: string, at: number) => ({ scanId, ticketId: generals[0].id, listId: list.id, scannedAt: iso(at), localResult: 'admitted' });
      const sync = (deviceId: string, scans: Json[]) => c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId, scans });
      await sync('door-a', [s('a', t0 + 30_000)]);
      const b = await sync('door-b', [s('b', t0 + 20_000)]);
      assert.equal(b.results[0].displaced.scanId, 'a');
      const cc = await sync('door-c', [s('c', t0 + 10_000)]);
      assert.equal(cc.results[0].displaced.scanId, 'b');
      const d = await sync('door-d', [s('d', t0)]);
      assert.equal(d.results[0].displaced.scanId, 'c');
      const kept = { keptScanId: 'd', keptScannedAt: iso(t0), keptDeviceId: 'door-d' };
      const conflicts = await c.expect(200, 'GET', `/events/${event.id}/checkin-lists/${list.id}/conflicts`);
      assert.deepEqual(conflicts.data.map((x: Json) => [x.scanId, x.kept]).sort(), [['a', kept], ['b', kept], ['c', kept]]);
      // A door that resends its scan learns the admission kept now.
      const told = await sync('door-a', [s('a', t0 + 30_000)]);
      assert.deepEqual([told.results[0].recordedOutcome, told.results[0].conflict], ['conflict', kept]);
      assert.deepEqual(d.list.counts, { inside: 1, entries: 1, exits: 0, admittedTickets: 1, conflicts: 3 });
    });

    test('webhooks checkin.completed and checkin.undone name the list and direction', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST, { workers: true });
      const { key } = await api.account();
      const c = client(api, key);
      const hook = await receiver(t);
      await c.expect(201, 'POST', '/webhooks', { url: hook.url, events: ['checkin.completed', 'checkin.undone'] });
      const { event, generals } = await door(c, 1);
      const list = await newList(c, event.id, { scanExits: true });
      const entered = await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: generals[0].id, scanId: 'w1' });
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: list.id, ticketId: generals[0].id, direction: 'exit' });
      await c.expect(200, 'DELETE', `/events/${event.id}/checkin/${generals[0].id}?listId=${list.id}`);
      await until(() => hook.got.length >= 3, 10_000, 'three deliveries');
      const got = hook.got.sort((x, y) => (x.id < y.id ? -1 : 1));
      assert.deepEqual(got.map((m) => [m.event, m.data.listId, m.data.direction]), [
        ['checkin.completed', list.id, 'entry'],
        ['checkin.completed', list.id, 'exit'],
        ['checkin.undone', list.id, 'entry'],
      ]);
      assert.deepEqual(got[0].data, entered);

      // An admission displaced by an earlier one synced later is undone, naming the one kept; then the kept one is completed.
      const once = await newList(c, event.id, { name: 'Once' });
      const online = await c.expect(201, 'POST', `/events/${event.id}/checkin`, { listId: once.id, ticketId: generals[0].id, scanId: 'on-1' });
      const offlineAt = iso(Date.now() - 10 * 60_000);
      const synced = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door-9', scans: [{ scanId: 'off-1', ticketId: generals[0].id, listId: once.id, scannedAt: offlineAt, localResult: 'admitted' }] });
      assert.equal(synced.results[0].displaced.scanId, 'on-1');
      await until(() => hook.got.length >= 6, 10_000, 'six deliveries');
      const more = hook.got.sort((x, y) => (x.id < y.id ? -1 : 1)).slice(3);
      assert.deepEqual(more.map((m) => [m.event, m.data.listId, m.data.direction, m.data.scanId ?? m.data.reason]), [
        ['checkin.completed', once.id, 'entry', 'on-1'],
        ['checkin.undone', once.id, 'entry', 'displaced'],
        ['checkin.completed', once.id, 'entry', 'off-1'],
      ]);
      assert.deepEqual([more[1].data.id, more[1].data.checkinId, more[1].data.displacedBy], [generals[0].id, online.id, { scanId: 'off-1', scannedAt: offlineAt, deviceId: 'door-9' }]);
      assert.equal(more[2].data.id, synced.results[0].checkinId);
    });
  });
}
