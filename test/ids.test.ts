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

test('an ID decodes back to a UUIDv7 of the time it was made', () => {
  const before = Date.now();
  const ids = Array.from({ length: 2000 }, () => newId('request'));
  const after = Date.now();
  const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
  for (const id of ids) {
    // 26 characters of 5 bits: 130 bits, the first two always zero.
    let bits = 0n;
    for (const c of id.slice('req_'.length)) bits = (bits << 5n) | BigInt(ALPHABET.indexOf(c));
    assert.equal(bits >> 128n, 0n);
    const hex = bits.toString(16).padStart(32, '0');
    const ms = Number.parseInt(hex.slice(0, 12), 16);
    // The counter may carry an ID a few milliseconds ahead of the clock, never behind it.
    assert.ok(ms >= before && ms <= after + 5, `timestamp ${ms} outside ${before}..${after}`);
    assert.equal(hex[12], '7', 'version 7');
    assert.ok('89ab'.includes(hex[16]!), 'RFC 9562 variant');
  }
});
