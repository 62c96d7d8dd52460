/**
 * Questions end to end (docs/events.md, Questions), on every engine of the run: questions and
 * their validation, paging and order; answers at order time with every error at its JSON pointer,
 * required per attendee and per order, scoping to ticket types; the attendee list and both export
 * formats (one CSV column per question, formula-looking answers neutralised); editing answers
 * later; options in use, retired questions, a change racing orders, tenant isolation.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ENGINES, freshStorage, problem, startApp, type TestApp, jsonClient as client, type JsonClient as Client } from './helpers.js';

type Json = any;

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();


/** A published event with two ticket types (General, VIP), both free. */
async function event(c: Client) {
  const startsAt = Date.now() + 24 * HOUR;
  const created = await c.expect(201, 'POST', '/events', { name: 'Gala', startsAt: iso(startsAt), endsAt: iso(startsAt + 3 * HOUR), timezone: 'UTC', currency: 'EUR' });
  const general = await c.expect(201, 'POST', `/events/${created.id}/tickets`, { name: 'General', price: 0, quantity: 500 });
  const vip = await c.expect(201, 'POST', `/events/${created.id}/tickets`, { name: 'VIP', price: 0, quantity: 500 });
  await c.expect(200, 'POST', `/events/${created.id}/publish`);
  return { event: created, general, vip };
}

const ada = { name: 'Ada Lovelace', email: 'ada@example.com' };

/** The event's attendee export as CSV lines (`query`: the export's filters, without `?`). */
const exportCsv = async (c: Client, eventId: string, query = '') => (await (await c.send('GET', `/events/${eventId}/attendees/export${query ? `?${query}` : ''}`)).text()).split('\r\n');
/** The event's attendee export as NDJSON, parsed. */
const exportJson = async (c: Client, eventId: string, query = '') =>
  (await (await c.send('GET', `/events/${eventId}/attendees/export?format=json${query ? `&${query}` : ''}`)).text())
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
const person = (n: number) => ({ name: `Guest ${n}`, email: `guest${n}@example.com` });

/** The questions of the answer tests: meal (VIP only, required), age, diet (per attendee); company, consent (per order). */
async function questions(c: Client, eventId: string, vipId: string) {
  const ask = (body: Record<string, unknown>) => c.expect(201, 'POST', `/events/${eventId}/questions`, body);
  return {
    meal: await ask({ label: 'Meal', kind: 'choice', options: ['Vegetarian', 'Vegan', 'Anything'], required: true, ticketTypeIds: [vipId] }),
    age: await ask({ label: 'Age', kind: 'number', min: 0, max: 120 }),
    diet: await ask({ label: 'Allergies', kind: 'multiple_choice', options: ['Nuts', 'Gluten', 'Lactose'] }),
    company: await ask({ label: 'Company', kind: 'text', maxLength: 40, askedPer: 'order' }),
    consent: await ask({ label: 'Photos OK', kind: 'boolean', required: true, askedPer: 'order' }),
  };
}

const errorsOf = async (res: Response & { json(): Promise<any> }) => {
  const body = await problem(res, 400, 'invalid_request');
  return Object.fromEntries((body.errors as Array<{ path: string; message: string }>).map((e) => [e.path, e.message]));
};

for (const engine of ENGINES) {
  describe(`questions (${engine})`, () => {
    test('CRUD, order and paging, validation, retiring, tenant isolation', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, vip } = await event(c);
      const base = `/events/${e.id}/questions`;

      const meal = await c.expect(201, 'POST', base, { label: 'Meal', help: 'For the dinner', kind: 'choice', options: ['Vegan', 'Anything'], required: true, ticketTypeIds: [vip.id] });
      assert.match(meal.id, /^qst_[0-9a-z]{26}$/);
      assert.deepEqual(
        { ...meal, id: undefined, createdAt: undefined, updatedAt: undefined },
        { id: undefined, eventId: e.id, label: 'Meal', help: 'For the dinner', kind: 'choice', options: ['Vegan', 'Anything'], required: true, askedPer: 'attendee', ticketTypeIds: [vip.id], position: 0, maxLength: null, min: null, max: null, createdAt: undefined, updatedAt: undefined },
      );
      assert.deepEqual(await c.expect(200, 'GET', `${base}/${meal.id}`), meal);
      const company = await c.expect(201, 'POST', base, { label: 'Company', kind: 'text', askedPer: 'order' });
      assert.equal(company.position, 1, 'without a position a question goes last');
      const first = await c.expect(201, 'POST', base, { label: 'Badge name', kind: 'text', maxLength: 30, position: 0 });

      // Lists go by position, then creation, and page.
      const page1 = await c.expect(200, 'GET', `${base}?limit=2`);
      assert.deepEqual(page1.data.map((q: Json) => q.label), ['Meal', 'Badge name']);
      assert.equal(page1.hasMore, true);
      const page2 = await c.expect(200, 'GET', `${base}?limit=2&cursor=${page1.nextCursor}`);
      assert.deepEqual({ labels: page2.data.map((q: Json) => q.label), hasMore: page2.hasMore }, { labels: ['Company'], hasMore: false });
      const moved = await c.expect(200, 'PATCH', `${base}/${company.id}`, { position: 5, label: 'Employer', help: 'Or school' });
      assert.deepEqual({ label: moved.label, help: moved.help, position: moved.position }, { label: 'Employer', help: 'Or school', position: 5 });
      assert.deepEqual((await c.expect(200, 'GET', base)).data.map((q: Json) => q.label), ['Meal', 'Badge name', 'Employer']);

      // Validation, each at its place.
      const refused = async (body: Record<string, unknown>, path: string, method = 'POST', at = base) => {
        const got = await errorsOf(await c.send(method, at, body));
        assert.ok(path in got, `${JSON.stringify(body)} → ${JSON.stringify(got)}`);
      };
      await refused({ label: 'Meal', kind: 'choice' }, '/options');
      await refused({ label: 'Size', kind: 'text', options: ['S'] }, '/options');
      await refused({ label: 'Size', kind: 'number', maxLength: 3 }, '/maxLength');
      await refused({ label: 'Size', kind: 'text', min: 3 }, '/min');
      await refused({ label: 'Size', kind: 'number', min: 3, max: 2 }, '/max');
      await refused({ label: 'Size', kind: 'text', ticketTypeIds: ['tt_01m80eg3tperaacsapew6ns732'] }, '/ticketTypeIds/0');
      await refused({ label: 'Size', kind: 'date' }, '/kind');
      await refused({ label: '', kind: 'text' }, '/label');
      await refused({ kind: 'choice' }, '/label');
      await refused({ askedPer: 'order' }, '/askedPer', 'PATCH', `${base}/${meal.id}`);
      await refused({ kind: 'text' }, '/kind', 'PATCH', `${base}/${meal.id}`);
      await refused({ maxLength: 10 }, '/maxLength', 'PATCH', `${base}/${meal.id}`);
      await problem(await c.send('GET', `${base}/qst_01m80eg3tperaacsapew6ns732`), 404, 'not_found');
      // Labels and options are plain text; an option cannot hold the export's joiner.
      await refused({ label: 'Meal\u202Egnp.exe', kind: 'text' }, '/label');
      await refused({ label: 'Two\nlines', kind: 'text' }, '/label');
      await refused({ label: 'Size', kind: 'choice', options: ['S', 'M, L'] }, '/options/1');
      await refused({ label: 'Size', kind: 'choice', options: ['S\u0007'] }, '/options/0');
      // Characters are code points: three emoji are three characters.
      const short = await c.expect(201, 'POST', base, { label: 'Mood', kind: 'text', maxLength: 3, position: 1_000_000 });
      const last = await c.expect(201, 'POST', base, { label: 'Mood', kind: 'boolean' });
      assert.equal(last.position, 1_000_000, 'a question goes last, within the highest position');
      const ok = await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: vip.id, quantity: 1, attendees: [{ ...person(1), answers: [{ questionId: meal.id, value: 'Vegan' }, { questionId: short.id, value: '😀😀😀' }] }] }] });
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${ok.tickets[0].id}/answers`)).answers.map((a: Json) => a.value), ['Vegan', '😀😀😀']);
      // Two questions of one label: the export tells their columns apart.
      assert.match((await exportCsv(c, e.id))[0]!, /"Mood","Mood \(2\)"$/);
      await c.expect(204, 'DELETE', `${base}/${short.id}`);
      await c.expect(204, 'DELETE', `${base}/${last.id}`);

      // Retiring: gone from reads and lists; a second delete is a 404.
      await c.expect(204, 'DELETE', `${base}/${first.id}`);
      await problem(await c.send('GET', `${base}/${first.id}`), 404, 'not_found');
      await problem(await c.send('PATCH', `${base}/${first.id}`, { label: 'x' }), 404, 'not_found');
      await problem(await c.send('DELETE', `${base}/${first.id}`), 404, 'not_found');
      assert.deepEqual((await c.expect(200, 'GET', base)).data.map((q: Json) => q.id), [meal.id, company.id]);

      // Another account sees none of it.
      const other = client(api, (await api.account()).key);
      await problem(await other.send('GET', base), 404, 'not_found');
      await problem(await other.send('POST', base, { label: 'Mine', kind: 'text' }), 404, 'not_found');
      await problem(await other.send('GET', `${base}/${meal.id}`), 404, 'not_found');
      await problem(await other.send('PATCH', `${base}/${meal.id}`, { label: 'Mine' }), 404, 'not_found');
      await problem(await other.send('DELETE', `${base}/${meal.id}`), 404, 'not_found');
      const theirs = await event(other);
      await problem(await other.send('POST', `/events/${theirs.event.id}/questions`, { label: 'x', kind: 'text', ticketTypeIds: [vip.id] }), 400, 'invalid_request');

      // The document types an answer's value for client generators.
      const doc = (await (await api.fetch('/openapi.json')).json()) as Json;
      assert.deepEqual(doc.components.schemas.Answer.properties.value.anyOf.map((s: Json) => s.type), ['string', 'number', 'boolean', 'array']);
    });

    test('at most 100 questions an event, also when created at once; deleting a draft event takes its questions', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e } = await event(c);
      const results = await Promise.all(Array.from({ length: 110 }, (_, i) => c.send('POST', `/events/${e.id}/questions`, { label: `Q${i}`, kind: 'boolean' })));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual({ created: statuses.filter((s) => s === 201).length, refused: statuses.filter((s) => s === 409).length }, { created: 100, refused: 10 });
      const refused = await problem(await c.send('POST', `/events/${e.id}/questions`, { label: 'One more', kind: 'text' }), 409, 'too_many_questions');
      assert.equal(refused.limit, 100);
      let listed = 0;
      for (let cursor = ''; ; ) {
        const page = await c.expect(200, 'GET', `/events/${e.id}/questions?limit=100${cursor}`);
        listed += page.data.length;
        if (!page.nextCursor) break;
        cursor = `&cursor=${page.nextCursor}`;
      }
      assert.equal(listed, 100);

      const startsAt = Date.now() + 24 * HOUR;
      const draft = await c.expect(201, 'POST', '/events', { name: 'Draft', startsAt: iso(startsAt), endsAt: iso(startsAt + HOUR), timezone: 'UTC', currency: 'EUR' });
      const q = await c.expect(201, 'POST', `/events/${draft.id}/questions`, { label: 'Size', kind: 'choice', options: ['S', 'M'] });
      await c.expect(204, 'DELETE', `/events/${draft.id}`);
      await problem(await c.send('GET', `/events/${draft.id}/questions/${q.id}`), 404, 'not_found');
      assert.deepEqual(await api.database.db.selectFrom('questions').select('id').where('eventId', '=', draft.id).execute(), [], 'the rows are gone, not only hidden');

      // A cancelled event's questions do not change, as its ticket types.
      const cancelled = (await event(c)).event;
      const asked = await c.expect(201, 'POST', `/events/${cancelled.id}/questions`, { label: 'Size', kind: 'text' });
      await c.expect(200, 'POST', `/events/${cancelled.id}/cancel`);
      await problem(await c.send('POST', `/events/${cancelled.id}/questions`, { label: 'More', kind: 'text' }), 409, 'event_cancelled');
      await problem(await c.send('PATCH', `/events/${cancelled.id}/questions/${asked.id}`, { label: 'More' }), 409, 'event_cancelled');
    });

    test('answers at order time: errors at their pointers, required per attendee and per order, ticket-type scoping', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general, vip } = await event(c);
      const q = await questions(c, e.id, vip.id);
      const order = (body: Record<string, unknown>) => c.send('POST', `/events/${e.id}/orders`, { buyer: ada, ...body });

      // Everything wrong at once, each at its place; nothing is sold.
      const got = await errorsOf(
        await order({
          items: [
            {
              ticketTypeId: vip.id,
              quantity: 2,
              attendees: [
                { ...person(1), answers: [{ questionId: q.meal.id, value: 'Fish' }, { questionId: q.age.id, value: 121 }, { questionId: q.diet.id, value: ['Nuts', 'Nuts', 'Soy'] }] },
                { ...person(2), answers: [{ questionId: q.age.id, value: '30' }, { questionId: q.company.id, value: 'ACME' }] },
              ],
            },
            { ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(3), answers: [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.age.id, value: 40 }, { questionId: q.age.id, value: 41 }] }] },
          ],
          answers: [{ questionId: 'qst_01m80eg3tperaacsapew6ns732', value: 'x' }, { questionId: q.company.id, value: 'x'.repeat(41) }, { questionId: q.meal.id, value: 'Vegan' }],
        }),
      );
      assert.match(got['/items/0/attendees/0/answers/0/value']!, /must be one of \["Vegetarian","Vegan","Anything"\]/);
      assert.equal(got['/items/0/attendees/0/answers/1/value'], 'must be 120 or less');
      assert.match(got['/items/0/attendees/0/answers/2/value/1']!, /chosen twice/);
      assert.match(got['/items/0/attendees/0/answers/2/value/2']!, /must be one of/);
      assert.equal(got['/items/0/attendees/1/answers/0/value'], 'must be a finite number');
      assert.match(got['/items/0/attendees/1/answers/1/questionId']!, /asked per order/);
      assert.match(got['/items/0/attendees/1/answers']!, /needs an answer to question qst_\w+ \("Meal"\), which is required/);
      assert.match(got['/items/1/attendees/0/answers/0/questionId']!, new RegExp(`is not asked for ticket type ${general.id}`));
      assert.match(got['/items/1/attendees/0/answers/2/questionId']!, /a second time/);
      assert.equal(got['/answers/0/questionId'], 'is not a question of this event');
      assert.equal(got['/answers/1/value'], 'must have 40 characters or fewer');
      assert.match(got['/answers/2/questionId']!, /asked per attendee/);
      assert.match(got['/answers']!, /"Photos OK"\), which is required/);
      assert.equal((await c.expect(200, 'GET', `/events/${e.id}/tickets/${vip.id}`)).sold, 0, 'nothing sold');

      // A required attendee question needs an attendees entry per ticket of the types it covers.
      const short = await errorsOf(await order({ items: [{ ticketTypeId: vip.id, quantity: 2, attendees: [{ ...person(1), answers: [{ questionId: q.meal.id, value: 'Vegan' }] }] }], answers: [{ questionId: q.consent.id, value: false }] }));
      assert.deepEqual(Object.keys(short), ['/items/0/attendees']);
      assert.match(short['/items/0/attendees']!, /one entry per ticket \(2\).*"Meal"/);
      // ... but not of the types it does not cover: General needs no attendees, and a blank text is no answer.
      const plain = await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: general.id, quantity: 2 }], answers: [{ questionId: q.consent.id, value: true }, { questionId: q.company.id, value: '  ' }] });
      assert.equal(plain.tickets.length, 2);

      // A good order: answers stored per ticket and per order.
      const good = await c.expect(201, 'POST', `/events/${e.id}/orders`, {
        buyer: ada,
        items: [
          { ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(3), answers: [{ questionId: q.age.id, value: 36.5 }] }] },
          {
            ticketTypeId: vip.id,
            quantity: 2,
            attendees: [
              { ...person(1), answers: [{ questionId: q.diet.id, value: ['Gluten', 'Nuts'] }, { questionId: q.meal.id, value: 'Vegan' }] },
              { ...person(2), answers: [{ questionId: q.meal.id, value: 'Anything' }, { questionId: q.diet.id, value: [] }, { questionId: q.age.id, value: null }] },
            ],
          },
        ],
        answers: [{ questionId: q.consent.id, value: false }, { questionId: q.company.id, value: 'Analytical Engines' }],
      });
      const [g, v1, v2] = good.tickets as Json[];
      assert.deepEqual(await c.expect(200, 'GET', `/tickets/${v1.id}/answers`), {
        ticketId: v1.id,
        orderId: good.id,
        answers: [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.diet.id, value: ['Gluten', 'Nuts'] }],
      });
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${v2.id}/answers`)).answers, [{ questionId: q.meal.id, value: 'Anything' }]);
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${g.id}/answers`)).answers, [{ questionId: q.age.id, value: 36.5 }]);
      assert.deepEqual(await c.expect(200, 'GET', `/orders/${good.id}/answers`), {
        orderId: good.id,
        answers: [{ questionId: q.company.id, value: 'Analytical Engines' }, { questionId: q.consent.id, value: false }],
      });

      // The attendee list shows each attendee's answers and the order's.
      const listed = await c.expect(200, 'GET', `/events/${e.id}/attendees?limit=100`);
      const byTicket = new Map(listed.data.map((a: Json) => [a.ticketId, a]));
      assert.deepEqual((byTicket.get(v1.id) as Json).answers, [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.diet.id, value: ['Gluten', 'Nuts'] }]);
      assert.deepEqual((byTicket.get(v1.id) as Json).orderAnswers, [{ questionId: q.company.id, value: 'Analytical Engines' }, { questionId: q.consent.id, value: false }]);
      assert.deepEqual((byTicket.get(plain.tickets[0].id) as Json).answers, []);
      assert.deepEqual((byTicket.get(plain.tickets[0].id) as Json).orderAnswers, [{ questionId: q.consent.id, value: true }]);
    });

    test('exports: one CSV column per question, formulas neutralised; NDJSON carries the answers', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general, vip } = await event(c);
      const q = await questions(c, e.id, vip.id);
      const good = await c.expect(201, 'POST', `/events/${e.id}/orders`, {
        buyer: ada,
        items: [{ ticketTypeId: vip.id, quantity: 1, attendees: [{ ...person(1), answers: [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.diet.id, value: ['Nuts', 'Gluten'] }, { questionId: q.age.id, value: 42 }] }] }],
        answers: [{ questionId: q.consent.id, value: true }, { questionId: q.company.id, value: '=HYPERLINK("http://x")' }],
      });
      const [header, line, end] = await exportCsv(c, e.id);
      assert.equal(header, 'ticketId,orderId,name,email,ticketTypeId,ticketTypeName,checkedIn,checkedInAt,"Meal","Age","Allergies","Company","Photos OK"');
      assert.equal(line, `"${good.tickets[0].id}","${good.id}","Guest 1","guest1@example.com","${vip.id}","VIP","false","","Vegan","42","Nuts, Gluten","'=HYPERLINK(""http://x"")","true"`);
      assert.equal(end, '');

      // A question label that looks like a formula is neutralised in the header too; a retired question has no column.
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${q.age.id}`, { label: '+Age' });
      await c.expect(204, 'DELETE', `/events/${e.id}/questions/${q.diet.id}`);
      const again = await exportCsv(c, e.id);
      assert.match(again[0]!, /"Meal","'\+Age","Company","Photos OK"$/);
      assert.match(again[1]!, /"Vegan","42","'=HYPERLINK\(""http:\/\/x""\)","true"$/);

      // Tickets the filters leave out, between those exported: their answers stay out too.
      const between = await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(2), answers: [{ questionId: q.age.id, value: 7 }] }] }], answers: [{ questionId: q.consent.id, value: false }] });
      // A negative number answer is a number, not a formula: not neutralised.
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${q.age.id}`, { min: null });
      await c.expect(200, 'PUT', `/tickets/${good.tickets[0].id}/answers`, { answers: [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.age.id, value: -5 }] });
      assert.match((await exportCsv(c, e.id, `ticketTypeId=${vip.id}`))[1]!, /"Vegan","-5",/);
      await c.expect(200, 'PUT', `/tickets/${good.tickets[0].id}/answers`, { answers: [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.age.id, value: 42 }] });
      await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: vip.id, quantity: 1, attendees: [{ ...person(3), answers: [{ questionId: q.meal.id, value: 'Anything' }] }] }], answers: [{ questionId: q.consent.id, value: true }] });
      const filtered = await exportJson(c, e.id, `ticketTypeId=${vip.id}`);
      assert.deepEqual(filtered.map((a) => [a.name, a.answers.map((x: Json) => x.value), a.orderAnswers.length]), [['Guest 1', ['Vegan', 42], 2], ['Guest 3', ['Anything'], 1]]);
      assert.ok(!filtered.some((a) => a.ticketId === between.tickets[0].id));
      // Filtered by search or check-in too (read by the batch's ids, not the range it spans).
      const searched = await exportJson(c, e.id, 'q=guest3');
      assert.deepEqual(searched.map((a) => [a.name, a.answers.map((x: Json) => x.value)]), [['Guest 3', ['Anything']]]);
      const unchecked = await exportCsv(c, e.id, `checkedIn=false&ticketTypeId=${general.id}`);
      assert.equal(unchecked.length, 3);
      assert.match(unchecked[1]!, /"Guest 2",.*,"","7","","false"$/);

      const ndjson = await exportJson(c, e.id);
      assert.equal(ndjson.length, 3);
      assert.deepEqual(ndjson[1].answers, [{ questionId: q.age.id, value: 7 }]);
      assert.deepEqual(ndjson[0].answers, [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.age.id, value: 42 }]);
      assert.deepEqual(ndjson[0].orderAnswers, [{ questionId: q.company.id, value: '=HYPERLINK("http://x")' }, { questionId: q.consent.id, value: true }]);
    });

    test('answers edited later with the same rules; options in use stay; a retired question is no longer asked; tenant isolation', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general, vip } = await event(c);
      const q = await questions(c, e.id, vip.id);
      const good = await c.expect(201, 'POST', `/events/${e.id}/orders`, {
        buyer: ada,
        items: [
          { ticketTypeId: vip.id, quantity: 1, attendees: [{ ...person(1), answers: [{ questionId: q.meal.id, value: 'Vegan' }] }] },
          { ticketTypeId: general.id, quantity: 1 },
        ],
        answers: [{ questionId: q.consent.id, value: true }],
      });
      const [v, g] = good.tickets as Json[];

      // The complete set each time; required stays required; the same pointers as at order time.
      const missing = await errorsOf(await c.send('PUT', `/tickets/${v.id}/answers`, { answers: [{ questionId: q.age.id, value: 30 }] }));
      assert.match(missing['/answers']!, /"Meal"\), which is required/);
      const wrong = await errorsOf(await c.send('PUT', `/tickets/${g.id}/answers`, { answers: [{ questionId: q.meal.id, value: 'Vegan' }, { questionId: q.age.id, value: -1 }] }));
      assert.deepEqual(wrong, { '/answers/0/questionId': `is not asked for ticket type ${general.id}`, '/answers/1/value': 'must be 0 or more' });
      assert.deepEqual(await c.expect(200, 'PUT', `/tickets/${v.id}/answers`, { answers: [{ questionId: q.age.id, value: 30 }, { questionId: q.meal.id, value: 'Vegetarian' }] }), {
        ticketId: v.id,
        orderId: good.id,
        answers: [{ questionId: q.meal.id, value: 'Vegetarian' }, { questionId: q.age.id, value: 30 }],
      });
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${v.id}/answers`)).answers, [{ questionId: q.meal.id, value: 'Vegetarian' }, { questionId: q.age.id, value: 30 }]);
      await c.expect(200, 'PUT', `/tickets/${g.id}/answers`, { answers: [{ questionId: q.age.id, value: 7 }] });
      assert.deepEqual((await c.expect(200, 'PUT', `/tickets/${g.id}/answers`, { answers: [] })).answers, [], 'an optional answer can be removed');

      const orderMissing = await errorsOf(await c.send('PUT', `/orders/${good.id}/answers`, { answers: [{ questionId: q.company.id, value: 'ACME' }] }));
      assert.match(orderMissing['/answers']!, /"Photos OK"\), which is required/);
      assert.deepEqual((await c.expect(200, 'PUT', `/orders/${good.id}/answers`, { answers: [{ questionId: q.consent.id, value: false }, { questionId: q.company.id, value: 'ACME' }] })).answers, [
        { questionId: q.company.id, value: 'ACME' },
        { questionId: q.consent.id, value: false },
      ]);
      const listed = (await c.expect(200, 'GET', `/events/${e.id}/attendees`)).data.find((a: Json) => a.ticketId === v.id);
      assert.deepEqual(listed.answers, [{ questionId: q.meal.id, value: 'Vegetarian' }, { questionId: q.age.id, value: 30 }]);
      assert.deepEqual(listed.orderAnswers, [{ questionId: q.company.id, value: 'ACME' }, { questionId: q.consent.id, value: false }]);

      // Options that answers use cannot be removed; unused ones can, and new ones added.
      const inUse = await problem(await c.send('PATCH', `/events/${e.id}/questions/${q.meal.id}`, { options: ['Vegan', 'Anything'] }), 409, 'question_options_in_use');
      assert.deepEqual(inUse.options, ['Vegetarian']);
      const changed = await c.expect(200, 'PATCH', `/events/${e.id}/questions/${q.meal.id}`, { options: ['Vegetarian', 'Anything', 'Halal'] });
      assert.deepEqual(changed.options, ['Vegetarian', 'Anything', 'Halal']);
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${q.diet.id}`, { options: ['Gluten'] });

      // A retired question is no longer asked (nor required) and its answers are no longer shown.
      await c.expect(204, 'DELETE', `/events/${e.id}/questions/${q.meal.id}`);
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${v.id}/answers`)).answers, [{ questionId: q.age.id, value: 30 }]);
      // A PUT replaces the answers to the questions asked now: the retired question's answer stays stored.
      await c.expect(200, 'PUT', `/tickets/${v.id}/answers`, { answers: [{ questionId: q.age.id, value: 31 }] });
      const stored = await api.database.db.selectFrom('answers').select(['questionId', 'value']).where('ticketId', '=', v.id).orderBy('questionId').execute();
      assert.deepEqual(stored, [{ questionId: q.meal.id, value: '"Vegetarian"' }, { questionId: q.age.id, value: '31' }].sort((a, b) => (a.questionId < b.questionId ? -1 : 1)));
      // A question no longer asked of the ticket's type (ticketTypeIds changed): a PUT neither takes nor removes its answer.
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${q.age.id}`, { ticketTypeIds: [general.id] });
      assert.equal((await errorsOf(await c.send('PUT', `/tickets/${v.id}/answers`, { answers: [{ questionId: q.age.id, value: 32 }] })))['/answers/0/questionId'], `is not asked for ticket type ${vip.id}`);
      await c.expect(200, 'PUT', `/tickets/${v.id}/answers`, { answers: [] });
      assert.equal((await api.database.db.selectFrom('answers').select('value').where('ticketId', '=', v.id).where('questionId', '=', q.age.id).executeTakeFirst())?.value, '31');
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${q.age.id}`, { ticketTypeIds: null });
      await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: vip.id, quantity: 1 }], answers: [{ questionId: q.consent.id, value: true }] });
      // The questions left are still asked (the event's count of questions, which lets an order of an event that asks nothing skip reading them, followed).
      assert.match((await errorsOf(await c.send('POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: vip.id, quantity: 1 }] })))['/answers']!, /"Photos OK"/);
      for (const left of [q.age, q.diet, q.company, q.consent]) await c.expect(204, 'DELETE', `/events/${e.id}/questions/${left.id}`);
      await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: vip.id, quantity: 1 }] });
      const none = await errorsOf(await c.send('POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: vip.id, quantity: 1 }], answers: [{ questionId: q.consent.id, value: true }] }));
      assert.equal(none['/answers/0/questionId'], 'is not a question of this event');
      const retired = await errorsOf(await c.send('PUT', `/tickets/${v.id}/answers`, { answers: [{ questionId: q.meal.id, value: 'Vegan' }] }));
      assert.equal(retired['/answers/0/questionId'], 'is not a question of this event');

      // A cancelled ticket's answers stay as they were.
      await c.expect(200, 'POST', `/tickets/${g.id}/cancel`);
      await problem(await c.send('PUT', `/tickets/${g.id}/answers`, { answers: [] }), 409, 'ticket_cancelled');

      // Another account can neither read nor edit them.
      const other = client(api, (await api.account()).key);
      await problem(await other.send('GET', `/tickets/${v.id}/answers`), 404, 'not_found');
      await problem(await other.send('PUT', `/tickets/${v.id}/answers`, { answers: [] }), 404, 'not_found');
      await problem(await other.send('GET', `/orders/${good.id}/answers`), 404, 'not_found');
      await problem(await other.send('PUT', `/orders/${good.id}/answers`, { answers: [] }), 404, 'not_found');
      const theirs = await event(other);
      const theirOrder = await other.expect(201, 'POST', `/events/${theirs.event.id}/orders`, { buyer: ada, items: [{ ticketTypeId: theirs.general.id, quantity: 1, attendees: [{ ...person(1) }] }] });
      const foreign = await errorsOf(await other.send('PUT', `/tickets/${theirOrder.tickets[0].id}/answers`, { answers: [{ questionId: q.age.id, value: 1 }] }));
      assert.equal(foreign['/answers/0/questionId'], 'is not a question of this event');
      const foreignOrder = await errorsOf(
        await other.send('POST', `/events/${theirs.event.id}/orders`, { buyer: ada, items: [{ ticketTypeId: theirs.general.id, quantity: 1 }], answers: [{ questionId: q.company.id, value: 'x' }] }),
      );
      assert.equal(foreignOrder['/answers/0/questionId'], 'is not a question of this event');
    });

    test("one attendee's or order's answers take at most 64 KB; an export of more attendees than a batch has them all", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general, vip } = await event(c);
      const texts: Json[] = [];
      for (let i = 0; i < 7; i++) texts.push(await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: `Note ${i}`, kind: 'text', maxLength: 10_000 }));
      const long = (n: number) => texts.slice(0, n).map((q) => ({ questionId: q.id, value: 'é'.repeat(5000) }));
      // Seven answers of 10,000 bytes each (5,000 two-byte characters): over the cap, at the answers' pointer.
      const over = await errorsOf(await c.send('POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(1), answers: long(7) }] }] }));
      assert.match(over['/items/0/attendees/0/answers']!, /take 70014 bytes together, more than the 65536/);
      const ok = await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(1), answers: long(6) }] }] });
      assert.match((await errorsOf(await c.send('PUT', `/tickets/${ok.tickets[0].id}/answers`, { answers: long(7) })))['/answers']!, /more than the 65536/);

      // 150 attendees, over two batches of an export of an event with questions, each with its answer.
      for (const n of [100, 49]) {
        await c.expect(201, 'POST', `/events/${e.id}/orders`, {
          buyer: ada,
          items: [{ ticketTypeId: vip.id, quantity: n, attendees: Array.from({ length: n }, (_, i) => ({ ...person(i), answers: [{ questionId: texts[0].id, value: `n${n}-${i}` }] })) }],
        });
      }
      const lines = await exportJson(c, e.id);
      assert.equal(lines.length, 150);
      assert.equal(new Set(lines.map((a) => a.ticketId)).size, 150);
      assert.equal(lines.filter((a) => /^n(100|49)-/.test(a.answers[0]?.value)).length, 149);
      const filtered = await exportCsv(c, e.id, `ticketTypeId=${vip.id}`);
      assert.equal(filtered.length, 151, 'header, 149 lines, and the end');
    });

    test('a required question is answered by a value: not by [], nor blanks; false answers a required boolean', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general } = await event(c);
      const diet = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Allergies', kind: 'multiple_choice', options: ['Nuts', 'None'], required: true });
      const name = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Badge', kind: 'text', required: true });
      const ok = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Photos OK', kind: 'boolean', required: true, askedPer: 'order' });
      const body = (answers: Json[]) => ({ buyer: ada, items: [{ ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(1), answers }] }], answers: [{ questionId: ok.id, value: false }] });
      const empty = await problem(await c.send('POST', `/events/${e.id}/orders`, body([{ questionId: diet.id, value: [] }, { questionId: name.id, value: ' \t ' }])), 400, 'invalid_request');
      assert.deepEqual(
        empty.errors.map((x: Json) => [x.path, x.message.replace(/qst_\w+ /, '')]),
        [['/items/0/attendees/0/answers', 'needs an answer to question ("Allergies"), which is required'], ['/items/0/attendees/0/answers', 'needs an answer to question ("Badge"), which is required']],
      );
      const placed = await c.expect(201, 'POST', `/events/${e.id}/orders`, body([{ questionId: diet.id, value: ['None'] }, { questionId: name.id, value: 'Ada' }]));
      assert.deepEqual((await c.expect(200, 'GET', `/orders/${placed.id}/answers`)).answers, [{ questionId: ok.id, value: false }]);
    });

    test("an order's answers are asked by the types of its tickets now, after an order change", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general, vip } = await event(c);
      const lounge = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Lounge slot', kind: 'text', askedPer: 'order', ticketTypeIds: [vip.id] });
      const placed = await c.expect(201, 'POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: general.id, quantity: 1 }] });
      const notAsked = await errorsOf(await c.send('PUT', `/orders/${placed.id}/answers`, { answers: [{ questionId: lounge.id, value: '19:00' }] }));
      assert.equal(notAsked['/answers/0/questionId'], 'is not asked for the ticket types of this order');
      await c.expect(200, 'POST', `/orders/${placed.id}/changes`, { changeTypes: [{ ticketId: placed.tickets[0].id, ticketTypeId: vip.id }] });
      assert.deepEqual((await c.expect(200, 'PUT', `/orders/${placed.id}/answers`, { answers: [{ questionId: lounge.id, value: '19:00' }] })).answers, [{ questionId: lounge.id, value: '19:00' }]);
    });

    test('a pending order completes without the options removed since it was placed', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e } = await event(c);
      const paid = await c.expect(201, 'POST', `/events/${e.id}/tickets`, { name: 'Dinner', price: 5000, quantity: 10 });
      const meal = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Meal', kind: 'choice', options: ['Vegan', 'Fish', 'Anything'] });
      const diet = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Allergies', kind: 'multiple_choice', options: ['Nuts', 'Gluten'], askedPer: 'order' });
      const pending = await c.expect(201, 'POST', `/events/${e.id}/orders`, {
        buyer: ada,
        items: [{ ticketTypeId: paid.id, quantity: 2, attendees: [{ ...person(1), answers: [{ questionId: meal.id, value: 'Fish' }] }, { ...person(2), answers: [{ questionId: meal.id, value: 'Vegan' }] }] }],
        answers: [{ questionId: diet.id, value: ['Nuts', 'Gluten'] }],
        payment: { provider: 'manual' },
      });
      assert.equal(pending.status, 'pending');
      // No stored answer uses Fish or Nuts yet: both can go.
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${meal.id}`, { options: ['Vegan', 'Anything'] });
      await c.expect(200, 'PATCH', `/events/${e.id}/questions/${diet.id}`, { options: ['Gluten'] });
      const done = await c.expect(200, 'POST', `/orders/${pending.id}/confirm`, {});
      assert.equal(done.status, 'completed');
      const [first, second] = done.tickets as Json[];
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${first.id}/answers`)).answers, [], 'the removed option is no answer');
      assert.deepEqual((await c.expect(200, 'GET', `/tickets/${second.id}/answers`)).answers, [{ questionId: meal.id, value: 'Vegan' }]);
      assert.deepEqual((await c.expect(200, 'GET', `/orders/${pending.id}/answers`)).answers, [{ questionId: diet.id, value: ['Gluten'] }]);
      const stored = await api.database.db.selectFrom('answers').select('value').where('orderId', '=', pending.id).execute();
      assert.ok(stored.every((r) => !/Fish|Nuts/.test(r.value)), JSON.stringify(stored));
    });

    test('removing an option while orders answer with it: never an answer with an option the question no longer has', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const c = client(api, (await api.account()).key);
      const { event: e, general } = await event(c);
      const meal = await c.expect(201, 'POST', `/events/${e.id}/questions`, { label: 'Meal', kind: 'choice', options: ['Vegan', 'Anything'] });
      const orders = Array.from({ length: 40 }, (_, n) =>
        c.send('POST', `/events/${e.id}/orders`, { buyer: ada, items: [{ ticketTypeId: general.id, quantity: 1, attendees: [{ ...person(n), answers: [{ questionId: meal.id, value: 'Vegan' }] }] }] }),
      );
      // Several tries at removing the option, spread among the orders.
      const patches = Array.from({ length: 4 }, () => c.send('PATCH', `/events/${e.id}/questions/${meal.id}`, { options: ['Anything'] }));
      const results = await Promise.all([...orders, ...patches]);
      const statuses = results.map((r) => r.status);
      assert.ok(statuses.slice(0, 40).every((s) => s === 201 || s === 400), JSON.stringify(statuses));
      // An order refused was refused for its answer, at its pointer, after the option went.
      for (const res of results.slice(0, 40).filter((r) => r.status === 400)) {
        assert.deepEqual(await errorsOf(res), { '/items/0/attendees/0/answers/0/value': 'must be one of ["Anything"]' });
      }
      assert.ok(statuses.slice(40).every((s) => s === 200 || s === 409), JSON.stringify(statuses));
      const now = await c.expect(200, 'GET', `/events/${e.id}/questions/${meal.id}`);
      const sold = statuses.slice(0, 40).filter((s) => s === 201).length;
      const vegans = (await c.expect(200, 'GET', `/events/${e.id}/attendees?limit=100`)).data.filter((a: Json) => a.answers.some((x: Json) => x.value === 'Vegan')).length;
      assert.equal(vegans, sold, 'every order placed kept its answer');
      if (!now.options.includes('Vegan')) assert.equal(vegans, 0, 'the option went only while no answer used it');
      else assert.ok(statuses.slice(40).every((s) => s === 409) && vegans > 0);
    });
  });
}
