import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadBatcher, WriteBatcher } from '../src/db/batcher.js';

test('WriteBatcher writes the first item at once and what arrives meanwhile in one statement', async () => {
  const writes: number[][] = [];
  let release!: () => void;
  const batcher = new WriteBatcher<number>(async (items) => {
    writes.push(items);
    if (writes.length === 1) await new Promise<void>((r) => (release = r));
  }, 3);
  const first = batcher.add(1);
  assert.deepEqual(writes, [[1]]);
  const later = [2, 3, 4, 5].map((n) => batcher.add(n));
  assert.equal(writes.length, 1, 'nothing else is written while the first statement runs');
  release();
  await Promise.all([first, ...later]);
  // At most `max` to a statement.
  assert.deepEqual(writes, [[1], [2, 3, 4], [5]]);
});

test('WriteBatcher: a failed statement fails its own items only', async () => {
  let calls = 0;
  const batcher = new WriteBatcher<string>(async (items) => {
    calls++;
    if (items.includes('bad')) throw new Error('constraint');
  });
  const a = batcher.add('a');
  const b = batcher.add('bad');
  const c = batcher.add('c');
  await a;
  await assert.rejects(b, /constraint/);
  await assert.rejects(c, /constraint/, 'c shared the failing statement');
  await batcher.add('d');
  assert.equal(calls, 3);
});

test('ReadBatcher answers the lookups of one turn with one read of the distinct keys', async () => {
  const reads: string[][] = [];
  const batcher = new ReadBatcher<string, { id: string }>(async (keys) => {
    reads.push(keys);
    return new Map(keys.filter((k) => k !== 'missing').map((k) => [k, { id: k }]));
  });
  const answers = await Promise.all(['a', 'b', 'a', 'missing'].map((k) => batcher.load(k)));
  assert.deepEqual(answers, [{ id: 'a' }, { id: 'b' }, { id: 'a' }, undefined]);
  assert.deepEqual(reads, [['a', 'b', 'missing']]);
  // A later turn is a new read.
  assert.deepEqual(await batcher.load('c'), { id: 'c' });
  assert.deepEqual(reads, [['a', 'b', 'missing'], ['c']]);
});

test('ReadBatcher: a failed read fails every lookup it held; larger sets are read in slices', async () => {
  const failing = new ReadBatcher<string, string>(async () => {
    throw new Error('connection lost');
  });
  const results = await Promise.allSettled([failing.load('x'), failing.load('y')]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );

  const sizes: number[] = [];
  const sliced = new ReadBatcher<number, number>(async (keys) => {
    sizes.push(keys.length);
    return new Map(keys.map((k) => [k, k * 2]));
  }, 4);
  const values = await Promise.all(Array.from({ length: 10 }, (_, i) => sliced.load(i)));
  assert.deepEqual(values, Array.from({ length: 10 }, (_, i) => i * 2));
  assert.deepEqual(sizes, [4, 4, 2]);
});
