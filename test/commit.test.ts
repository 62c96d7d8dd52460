import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { type Kysely, sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { type Db, type DatabaseHandle, ensureSchema, openDatabase } from '../src/db/database.js';
import { prepared } from '../src/db/prepared.js';
import { CachedSqliteAdapter } from '../src/db/sqlite-dialect.js';
import { afterCommit, transaction } from '../src/db/transaction.js';
import { ENGINES, freshStorage, onCleanup, until } from './helpers.js';

// Transactions that run at the same time commit or fail each on its own, on both engines; on
// SQLite they share one COMMIT (group commit, db/sqlite-dialect.ts) and checkpoints run on a
// thread of their own (db/checkpointer.ts).

async function scratchDatabase(t: TestContext, engine: (typeof ENGINES)[number]) {
  const storage = await freshStorage(t, engine);
  const handle = openDatabase(loadConfig({ ...storage.env, MONTAGE_LOG_LEVEL: 'silent' }));
  onCleanup(t, () => handle.close());
  await ensureSchema(handle);
  // A scratch table outside Montage's schema: these tests are about the driver, not the tables.
  const db = handle.db as unknown as Kysely<{ notes: { id: number; body: string } }>;
  await sql`create table notes (id integer primary key, body text not null unique)`.execute(db);
  return { handle, db, dataDir: storage.env.DATA_DIR! };
}

/** A second connection to the scratch database: `query(sql)` resolves to the first column of the first row. */
async function otherConnection(t: TestContext, handle: DatabaseHandle, dataDir: string): Promise<(query: string) => Promise<number>> {
  if (handle.engine === 'sqlite') {
    const file = new SQLite(path.join(dataDir, 'montage.db'), { readonly: true });
    onCleanup(t, () => file.close());
    return async (query) => Number(Object.values(file.prepare(query).get() as object)[0]);
  }
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL, options: `-c search_path=${handle.schema}` });
  await client.connect();
  onCleanup(t, () => client.end());
  return async (query) => Number(Object.values((await client.query(query)).rows[0] as object)[0]);
}

for (const engine of ENGINES) {
  test(`[${engine}] concurrent transactions: the failing ones roll back alone, the others commit`, async (t) => {
    const { db } = await scratchDatabase(t, engine);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        db.transaction().execute(async (tx) => {
          await tx.insertInto('notes').values({ id: i, body: `note ${i}` }).execute();
          // Every fifth one fails after its insert: a duplicate body (a constraint) or a thrown error.
          if (i % 10 === 5) await tx.insertInto('notes').values({ id: 1000 + i, body: `note ${i}` }).execute();
          if (i % 10 === 0 && i > 0) throw new Error(`transaction ${i} gives up`);
          await tx.updateTable('notes').set({ body: `note ${i} done` }).where('id', '=', i).execute();
        }),
      ),
    );
    const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []));
    assert.deepEqual(failed, [5, 10, 15, 20, 25, 30, 35]);
    const rows = await db.selectFrom('notes').select(['id', 'body']).orderBy('id').execute();
    const expected = Array.from({ length: 40 }, (_, i) => i).filter((i) => !failed.includes(i));
    assert.deepEqual(
      rows,
      expected.map((id) => ({ id, body: `note ${id} done` })),
    );
  });

  test(`[${engine}] a write outside a transaction, amid transactions, is stored once its answer arrives`, async (t) => {
    const { db } = await scratchDatabase(t, engine);
    const work = [
      ...Array.from({ length: 10 }, (_, i) => db.transaction().execute((tx) => tx.insertInto('notes').values({ id: i, body: `tx ${i}` }).execute())),
      db.insertInto('notes').values({ id: 100, body: 'alone' }).execute(),
      ...Array.from({ length: 10 }, (_, i) => db.transaction().execute((tx) => tx.insertInto('notes').values({ id: 10 + i, body: `tx ${10 + i}` }).execute())),
    ];
    await Promise.all(work);
    const { count } = await db.selectFrom('notes').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    assert.equal(Number(count), 21);
  });
}

test('[sqlite] transactions of one turn of the event loop share one COMMIT, and another connection sees all or none of them', { skip: !ENGINES.includes('sqlite') && 'SQLite only' }, async (t) => {
  const { db, dataDir } = await scratchDatabase(t, 'sqlite');
  const other = new SQLite(path.join(dataDir, 'montage.db'), { readonly: true });
  onCleanup(t, () => other.close());
  const count = () => (other.prepare('select count(*) as n from notes').get() as { n: number }).n;

  const seen: number[] = [];
  const all = Array.from({ length: 30 }, (_, i) =>
    db.transaction().execute(async (tx) => {
      await tx.insertInto('notes').values({ id: i, body: `note ${i}` }).execute();
      // Inside the group nothing is committed yet, so another connection sees none of it.
      seen.push(count());
    }),
  );
  await Promise.all(all);
  assert.deepEqual(new Set(seen), new Set([0]));
  assert.equal(count(), 30);
});

test('[sqlite] a group whose COMMIT fails fails every transaction in it, and none of their changes stays', { skip: !ENGINES.includes('sqlite') && 'SQLite only' }, async (t) => {
  const { db } = await scratchDatabase(t, 'sqlite');
  // A deferred foreign key is checked at COMMIT only: one member's dangling reference fails the group's COMMIT.
  await sql`create table refs (id integer primary key, note_id integer references notes(id) deferrable initially deferred)`.execute(db);
  const refs = db as unknown as Kysely<{ notes: { id: number; body: string }; refs: { id: number; note_id: number } }>;
  const outcomes = await Promise.allSettled([
    refs.transaction().execute((tx) => tx.insertInto('notes').values({ id: 1, body: 'one' }).execute()),
    refs.transaction().execute((tx) => tx.insertInto('refs').values({ id: 1, note_id: 999 }).execute()),
    refs.transaction().execute((tx) => tx.insertInto('notes').values({ id: 2, body: 'two' }).execute()),
  ]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['rejected', 'rejected', 'rejected'],
  );
  assert.deepEqual(await refs.selectFrom('notes').selectAll().execute(), []);
  assert.deepEqual(await refs.selectFrom('refs').selectAll().execute(), []);
  // The connection is usable afterwards, and groups commit again.
  await refs.transaction().execute((tx) => tx.insertInto('notes').values({ id: 3, body: 'three' }).execute());
  assert.equal((await refs.selectFrom('notes').selectAll().execute()).length, 1);
});

test('[sqlite] the WAL is checkpointed into the database file in the background', { skip: !ENGINES.includes('sqlite') && 'SQLite only' }, async (t) => {
  const { db, dataDir } = await scratchDatabase(t, 'sqlite');
  const file = path.join(dataDir, 'montage.db');
  const before = fs.statSync(file).size;
  const body = 'x'.repeat(1000);
  await db.transaction().execute(async (tx) => {
    for (let i = 0; i < 2000; i++) await tx.insertInto('notes').values({ id: i, body: `${i} ${body}` }).execute();
  });
  // The 2 MB just written are in the WAL; the process's own connection never checkpoints them.
  assert.ok(fs.statSync(file).size < before + 1_000_000, 'the rows went to the database file at commit');
  await until(() => fs.statSync(file).size > before + 2_000_000, 5000, 'a background checkpoint');
  assert.equal((await db.selectFrom('notes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n, 2000);
});

for (const engine of ENGINES) {
  test(`[${engine}] prepared queries keep working when a migration adds a column while the process serves`, async (t) => {
    const { db } = await scratchDatabase(t, engine);
    type Notes = Kysely<{ notes: { id: number; body: string } }>;
    // On PostgreSQL named statements (columns listed) and an unnamed one (`*`); on SQLite direct
    // reads (columns listed, names cached) and one through Kysely (`*`): see db/prepared.ts.
    const listed = prepared((q: Notes, id: number) => q.selectFrom('notes').select(['id', 'body']).where('id', '=', id));
    const starred = prepared((q: Notes, id: number) => q.selectFrom('notes').selectAll().where('id', '=', id));
    await db.insertInto('notes').values({ id: 1, body: 'one' }).execute();
    // Run each on every pooled connection, so each connection has parsed its statements.
    await Promise.all(Array.from({ length: 20 }, () => Promise.all([listed(db, 1), starred(db, 1)])));
    await sql`alter table notes add column colour text`.execute(db);
    const answers = await Promise.all(Array.from({ length: 20 }, () => Promise.all([listed(db, 1), starred(db, 1)])));
    for (const [named, unnamed] of answers) {
      assert.deepEqual(named, [{ id: 1, body: 'one' }]);
      assert.deepEqual(unnamed, [{ id: 1, body: 'one', colour: null }]);
    }
  });
}

for (const engine of ENGINES) {
  test(`[${engine}] prepared reads give the same rows as Kysely's, outside and inside a transaction`, async (t) => {
    const { db: notes } = await scratchDatabase(t, engine);
    type Tags = Kysely<{ noteTags: { noteId: number; tagName: string; addedAt: number | null } }>;
    const db = notes as unknown as Tags;
    await sql`create table note_tags (note_id integer not null, tag_name text not null, added_at bigint)`.execute(db);
    await db
      .insertInto('noteTags')
      .values([
        { noteId: 1, tagName: 'a', addedAt: 1_700_000_000_000 },
        { noteId: 1, tagName: 'b', addedAt: null },
        { noteId: 2, tagName: 'ü, "quoted"', addedAt: 5 },
      ])
      .execute();
    const build = (q: Tags, noteId: number) => q.selectFrom('noteTags').select(['noteId', 'tagName', 'addedAt']).where('noteId', '=', noteId).orderBy('tagName');
    const byNote = prepared(build);
    for (const id of [1, 2, 3]) {
      const expected = await build(db, id).execute();
      assert.deepEqual(await byNote(db, id), expected);
      assert.deepEqual(await db.transaction().execute((tx) => byNote(tx, id)), expected);
    }
    assert.deepEqual((await byNote(db, 1))[0], { noteId: 1, tagName: 'a', addedAt: 1_700_000_000_000 });
  });

  test(`[${engine}] a prepared read never sees a change its transaction has not committed`, async (t) => {
    const { db } = await scratchDatabase(t, engine);
    type Notes = Kysely<{ notes: { id: number; body: string } }>;
    const note = prepared((q: Notes, id: number) => q.selectFrom('notes').select(['id', 'body']).where('id', '=', id));
    await db.insertInto('notes').values({ id: 1, body: 'kept' }).execute();
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    let inserted!: () => void;
    const insertedYet = new Promise<void>((resolve) => (inserted = resolve));
    // A transaction that writes, waits between statements (holding SQLite's one connection), then gives up.
    const failing = db.transaction().execute(async (tx) => {
      await tx.insertInto('notes').values({ id: 2, body: 'never committed' }).execute();
      await tx.updateTable('notes').set({ body: 'changed' }).where('id', '=', 1).execute();
      inserted();
      await paused;
      throw new Error('gives up');
    });
    await insertedYet;
    const reads = Promise.all([note(db, 1), note(db, 2)]);
    setTimeout(resume, 50);
    await assert.rejects(failing, /gives up/);
    assert.deepEqual(await reads, [[{ id: 1, body: 'kept' }], []]);
  });
}

for (const engine of ENGINES) {
  test(`[${engine}] afterCommit runs after COMMIT, once per function, and never after a rollback`, async (t) => {
    const { db: notes, dataDir, handle } = await scratchDatabase(t, engine);
    const db = notes as unknown as Db;
    type Notes = Kysely<{ notes: { id: number; body: string } }>;
    const calls: string[] = [];
    const seen = () => calls.push('committed');
    // What another connection sees when the hook runs: the row, committed.
    const other = await otherConnection(t, handle, dataDir);
    let seenByOther: Promise<number> | null = null;
    await transaction(db, async (tx) => {
      await (tx as unknown as Notes).insertInto('notes').values({ id: 1, body: 'one' }).execute();
      afterCommit(tx, seen);
      afterCommit(tx, seen);
      afterCommit(tx, () => {
        calls.push('second');
        seenByOther = other('select count(*) as n from notes');
      });
      assert.deepEqual(calls, [], 'nothing runs before COMMIT');
    });
    assert.deepEqual(calls, ['committed', 'second']);
    assert.equal(await seenByOther!, 1);
    await assert.rejects(
      transaction(db, async (tx) => {
        afterCommit(tx, () => calls.push('rolled back'));
        throw new Error('gives up');
      }),
      /gives up/,
    );
    afterCommit(db, () => calls.push('outside'));
    assert.deepEqual(calls, ['committed', 'second', 'outside']);
  });
}

test('[sqlite] prepared reads on an idle connection skip the executor; a write with RETURNING still waits for its group\'s COMMIT', { skip: !ENGINES.includes('sqlite') && 'SQLite only' }, async (t) => {
  const { db, handle, dataDir } = await scratchDatabase(t, 'sqlite');
  type Notes = Kysely<{ notes: { id: number; body: string } }>;
  const adapter = db.getExecutor().adapter as CachedSqliteAdapter;
  assert.ok(adapter instanceof CachedSqliteAdapter);
  const direct: unknown[] = [];
  const readNow = adapter.readNow.bind(adapter);
  adapter.readNow = ((sqlText: string, parameters: readonly unknown[]) => {
    const rows = readNow(sqlText, parameters);
    direct.push(rows);
    return rows;
  }) as typeof adapter.readNow;
  const note = prepared((q: Notes, id: number) => q.selectFrom('notes').select(['id', 'body']).where('id', '=', id));
  const rename = prepared((q: Notes, id: number, body: string) => q.updateTable('notes').set({ body }).where('id', '=', id).returning(['id', 'body']));
  await db.insertInto('notes').values({ id: 1, body: 'one' }).execute();
  assert.deepEqual(await note(db, 1), [{ id: 1, body: 'one' }]);
  assert.deepEqual(direct, [[{ id: 1, body: 'one' }]], 'the read was answered directly');
  // A transaction opens a group; the write lands in it and must answer only after its COMMIT.
  const other = await otherConnection(t, handle, dataDir);
  const opened = db.transaction().execute((tx) => tx.insertInto('notes').values({ id: 2, body: 'two' }).execute());
  await new Promise((r) => setImmediate(r));
  const renamed = await rename(db, 1, 'uno');
  assert.deepEqual(renamed, [{ id: 1, body: 'uno' }]);
  assert.equal(direct.at(-1), undefined, 'the write went through the driver');
  assert.equal(await other("select count(*) from notes where body = 'uno'"), 1, 'committed when it answered');
  await opened;
});

test('[sqlite] in a transaction, prepared statements run on the connection at once: they see the transaction\'s writes, answer RETURNING rows, and roll back with it alone', { skip: !ENGINES.includes('sqlite') && 'SQLite only' }, async (t) => {
  const { db, handle, dataDir } = await scratchDatabase(t, 'sqlite');
  type Notes = Kysely<{ notes: { id: number; body: string } }>;
  const adapter = db.getExecutor().adapter as CachedSqliteAdapter;
  let atOnce = 0;
  const executeInTransaction = adapter.executeInTransaction.bind(adapter);
  adapter.executeInTransaction = ((sqlText: string, parameters: readonly unknown[]) => {
    atOnce++;
    return executeInTransaction(sqlText, parameters);
  }) as typeof adapter.executeInTransaction;
  const add = prepared((q: Notes, id: number, body: string) => q.insertInto('notes').values({ id, body }));
  const note = prepared((q: Notes, id: number) => q.selectFrom('notes').select(['id', 'body']).where('id', '=', id));
  const rename = prepared((q: Notes, id: number, body: string) => q.updateTable('notes').set({ body }).where('id', '=', id).returning(['id', 'body']));
  // Two transactions of one group: the second fails on the unique body the first wrote, after a write of its own.
  const first = db.transaction().execute(async (tx) => {
    assert.deepEqual(await add(tx, 10, 'ten'), []);
    assert.deepEqual(await note(tx, 10), [{ id: 10, body: 'ten' }], 'a read sees the transaction\'s own write');
    return rename(tx, 10, 'diez');
  });
  const second = db.transaction().execute(async (tx) => {
    await add(tx, 11, 'once');
    await add(tx, 12, 'diez');
  });
  const refused = assert.rejects(second, /UNIQUE constraint failed: notes\.body/);
  assert.deepEqual(await first, [{ id: 10, body: 'diez' }]);
  await refused;
  assert.equal(atOnce, 5, 'every prepared statement ran at once');
  const other = await otherConnection(t, handle, dataDir);
  assert.equal(await other("select count(*) from notes where id = 10 and body = 'diez'"), 1, 'the first committed');
  assert.equal(await other('select count(*) from notes where id in (11, 12)'), 0, 'the second rolled back, its first write too');
});
