import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeCursor, encodeCursor, listTag } from '../src/http/paging.js';
import { ENGINES, freshStorage, problem, startApp, type TestApp } from './helpers.js';

async function allPages(api: TestApp, key: string, limit: number, between?: () => Promise<void>) {
  const ids: string[] = [];
  let url = `/v1/keys?limit=${limit}`;
  for (let pages = 0; pages < 100; pages++) {
    const res = await api.fetch(url, { key });
    assert.equal(res.status, 200);
    const page = await res.json();
    assert.ok(page.data.length <= limit);
    ids.push(...page.data.map((k: { id: string }) => k.id));
    const link = res.headers.get('link');
    if (!page.hasMore) {
      assert.equal(page.nextCursor, null);
      assert.equal(link, null);
      return ids;
    }
    assert.equal(page.data.length, limit);
    assert.equal(link, `</v1/keys?limit=${limit}&cursor=${page.nextCursor}>; rel="next"`);
    url = link!.slice(1, link!.indexOf('>'));
    await between?.();
  }
  throw new Error('paging did not end');
}

describe('cursor helpers', () => {
  test('a cursor continues only the list and filters it was made for', () => {
    const tag = listTag('events', { status: 'published', q: undefined });
    assert.equal(tag, listTag('events', { status: 'published' }), 'absent filters do not count');
    const cursor = encodeCursor(tag, { key: 1700000000000, id: 'evt_01m80eg3tperaacsapew6ns732' });
    assert.deepEqual(decodeCursor(tag, cursor), { key: 1700000000000, id: 'evt_01m80eg3tperaacsapew6ns732' });
    assert.throws(() => decodeCursor(tag, encodeCursor(tag, { key: 1, id: 'evt_\u0000' })), { code: 'invalid_request' }, 'a forged id');
    assert.throws(() => decodeCursor(listTag('events', { status: 'draft' }), cursor), { code: 'invalid_request' });
    assert.throws(() => decodeCursor(listTag('keys'), cursor), { code: 'invalid_request' });
    assert.throws(() => decodeCursor(tag, 'not-a-cursor'), { code: 'invalid_request' });
    assert.throws(() => decodeCursor(tag, Buffer.from('{"t":1}').toString('base64url')), { code: 'invalid_request' });
  });
});

for (const engine of ENGINES) {
  describe(`paging (${engine})`, () => {
    test('limit must be an integer from 1 to 100; cursors from elsewhere are refused', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      for (const limit of ['0', '101', '1.5', 'abc', '-1', '']) {
        const body = await problem(await api.fetch(`/v1/keys?limit=${limit}`, { key }), 400, 'invalid_request');
        assert.equal(body.errors[0].path, '/query/limit', limit);
      }
      assert.equal((await api.fetch('/v1/keys?limit=100', { key })).status, 200);
      assert.equal((await api.fetch('/v1/keys?limit=1', { key })).status, 200);
      const foreign = encodeCursor(listTag('events'), { key: 1, id: 'evt_x' });
      const body = await problem(await api.fetch(`/v1/keys?cursor=${foreign}`, { key }), 400, 'invalid_request');
      assert.equal(body.errors[0].path, '/query/cursor');
      await problem(await api.fetch('/v1/keys?cursor=%7B%7D', { key }), 400, 'invalid_request');
    });

    test('pages cover every item once, newest first, default 20, stable under concurrent inserts', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      for (let i = 0; i < 24; i++) await api.key(accountId, 'business', { name: `k${i}` });

      const first = await (await api.fetch('/v1/keys', { key })).json();
      assert.equal(first.data.length, 20, 'default limit is 20');
      const expected = (await api.database.db.selectFrom('apiKeys').select('id').where('accountId', '=', accountId).orderBy('id', 'desc').execute()).map(
        (r) => r.id,
      );
      assert.equal(expected.length, 25);
      assert.deepEqual(await allPages(api, key, 7), expected);

      // Keys created while paging are newer than every cursor: nothing repeats, nothing is skipped.
      const seen = await allPages(api, key, 6, async () => {
        await api.key(accountId, 'business', { name: 'during' });
      });
      assert.equal(new Set(seen).size, seen.length, 'no item twice');
      assert.deepEqual(seen, expected);

      const other = await api.account();
      const otherIds = await allPages(api, other.key, 10);
      assert.equal(otherIds.length, 1, "another account's list holds only its own key");
    });
  });
}
