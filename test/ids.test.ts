import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isId, newId, randomBase62 } from '../src/ids.js';
import { generateApiKey, hashPassword, verifyPassword } from '../src/accounts/secrets.js';

test('IDs are prefixed, TypeID-shaped and sort in creation order', () => {
  const ids = Array.from({ length: 5000 }, () => newId('event'));
  for (const id of ids.slice(0, 50)) assert.match(id, /^evt_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
  assert.deepEqual([...ids].sort(), ids, 'creation order is id order, even within one millisecond');
  assert.equal(new Set(ids).size, ids.length);
  assert.ok(isId('event', ids[0]!));
  assert.ok(!isId('ticket', ids[0]!));
  assert.ok(!isId('event', 'evt_8zzzzzzzzzzzzzzzzzzzzzzzzz'));
});

test('API keys: mtg_ + 40 base62; passwords: scrypt, verified, never in clear', async () => {
  assert.match(generateApiKey(), /^mtg_[0-9A-Za-z]{40}$/);
  assert.equal(randomBase62(100).length, 100);
  const hash = await hashPassword('correct horse battery');
  assert.ok(!hash.includes('correct'));
  assert.equal(await verifyPassword('correct horse battery', hash), true);
  assert.equal(await verifyPassword('wrong horse battery', hash), false);
});
