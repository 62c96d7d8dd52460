import assert from 'node:assert/strict';
import { test } from 'node:test';
import { iso } from '../src/time.js';

test('iso writes exactly what Date#toISOString writes', () => {
  const samples = [0, 1, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 1_795_443_428_123, 253_402_300_799_999, 253_402_300_800_000, -1, -86_400_001, 1.5, 8.64e15];
  // Random instants over the four-digit years, and a run of consecutive ones across midnight.
  let seed = 42;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
  for (let i = 0; i < 20_000; i++) samples.push(Math.floor(random() * 253_402_300_800_000));
  for (let ms = 1_795_478_399_000; ms < 1_795_478_401_000; ms += 7) samples.push(ms);
  for (const ms of samples) assert.equal(iso(ms), new Date(ms).toISOString(), `iso(${ms})`);
  assert.equal(iso(null), null);
});
