import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { type DatabaseHandle, openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { claimJobs, CompletionBatcher, enqueueJobs } from '../src/jobs/queue.js';
import { transaction } from '../src/db/transaction.js';
import { type JobHandler, JobRunner } from '../src/jobs/runner.js';
import { JOBS_CHANNEL, jobsQueued, listenerName, listenForQueuedJobs, notificationPayload, notifyOtherProcesses } from '../src/jobs/signal.js';
import pg from 'pg';
import { sql } from 'kysely';
import { ENGINES, freshStorage, onCleanup, until } from './helpers.js';

const silent = { warn() {}, error() {} };

async function open(t: import('node:test').TestContext, engine: 'sqlite' | 'postgres') {
  const storage = await freshStorage(t, engine);
  const handles: DatabaseHandle[] = [];
  const connect = async () => {
    const handle = openDatabase(loadConfig({ ...storage.env, MONTAGE_LOG_LEVEL: 'silent' }));
    await migrateToLatest(handle);
    handles.push(handle);
    return handle;
  };
  onCleanup(t, async () => {
    for (const h of handles) await h.close();
  });
  return connect;
}

for (const engine of ENGINES) {
  describe(`job queue (${engine})`, () => {
    test('two workers on one database: every job is worked exactly once', async (t) => {
      const connect = await open(t, engine);
      const [a, b] = [await connect(), await connect()];
      await enqueueJobs(a.db, Array.from({ length: 300 }, (_, i) => ({ kind: 'count', payload: { i }, maxAttempts: 3 })));
      const seen: number[] = [];
      const handler: JobHandler = {
        concurrency: 8,
        async work(job) {
          seen.push((JSON.parse(job.payload) as { i: number }).i);
          await new Promise((r) => setTimeout(r, 1));
          return { status: 'done' };
        },
      };
      const runners = [a, b].map((h) => new JobRunner(h.db, h.engine, { count: handler }, { leaseMs: 30_000, pollMs: 20, log: silent }));
      runners.forEach((r) => r.start());
      await until(() => seen.length >= 300, 20_000, 'all jobs');
      await new Promise((r) => setTimeout(r, 100));
      await Promise.all(runners.map((r) => r.stop(1000)));
      assert.equal(seen.length, 300, 'no job worked twice');
      assert.equal(new Set(seen).size, 300);
      const left = await a.db.selectFrom('jobs').select('status').where('status', '!=', 'done').execute();
      assert.deepEqual(left, []);
    });

    test('a job this process queues is claimed at once, not at the next poll', async (t) => {
      const connect = await open(t, engine);
      const { db } = await connect();
      let workedAt = 0;
      const handler: JobHandler = { concurrency: 1, work: async () => ((workedAt = Date.now()), { status: 'done' }) };
      // A poll far longer than the test: only the wake can find the job.
      const runner = new JobRunner(db, engine, { soon: handler }, { leaseMs: 30_000, pollMs: 600_000, log: silent });
      runner.start();
      onCleanup(t, () => runner.stop(1000));
      await new Promise((r) => setTimeout(r, 50)); // the runner's first claim found nothing; it sleeps
      const queuedAt = Date.now();
      // No call of our own: the transaction's commit says it (queue.ts registers jobsQueued with afterCommit).
      await transaction(db, (tx) => enqueueJobs(tx, [{ kind: 'soon', payload: {}, maxAttempts: 1 }]));
      await until(() => workedAt > 0, 5000, 'the job worked');
      assert.ok(workedAt - queuedAt < 2000, `worked ${workedAt - queuedAt} ms after it was queued`);
    });

    test('completions written together mark every job of the lease holder done, and no job taken over by another', async (t) => {
      const connect = await open(t, engine);
      const db = (await connect()).db;
      await enqueueJobs(db, Array.from({ length: 700 }, (_, i) => ({ kind: 'batch', payload: { i }, maxAttempts: 3 })));
      const jobs = await claimJobs(db, engine, ['batch'], 'w1', 700, 30_000);
      assert.equal(jobs.length, 700);
      // One lease lapsed and another worker holds that job now.
      await db.updateTable('jobs').set({ lockedBy: 'w2' }).where('id', '=', jobs[3]!.id).execute();
      const batcher = new CompletionBatcher(db, 'w1');
      await Promise.all(jobs.map((job) => batcher.complete(job)));
      const rows = await db.selectFrom('jobs').select(['id', 'status', 'lockedBy', 'finishedAt']).execute();
      const taken = rows.find((r) => r.id === jobs[3]!.id)!;
      assert.deepEqual([taken.status, taken.lockedBy], ['running', 'w2'], "the other worker's job is untouched");
      const done = rows.filter((r) => r.status === 'done');
      assert.equal(done.length, 699);
      assert.ok(done.every((r) => r.lockedBy === null && r.finishedAt !== null));
    });

    test('a job whose worker died is taken over when its lease expires; one that keeps dying is given up', async (t) => {
      const connect = await open(t, engine);
      const db = (await connect()).db;
      await enqueueJobs(db, [{ kind: 'crashy', payload: {}, maxAttempts: 2 }]);
      // A worker claims it and dies without a word.
      const [first] = await claimJobs(db, engine, ['crashy'], 'dead-worker', 5, 100);
      assert.equal(first!.attempts, 1);
      assert.deepEqual(await claimJobs(db, engine, ['crashy'], 'other', 5, 100), [], 'not while the lease holds');
      await new Promise((r) => setTimeout(r, 150));
      const [again] = await claimJobs(db, engine, ['crashy'], 'second-dead-worker', 5, 100);
      assert.equal(again!.id, first!.id);
      assert.equal(again!.attempts, 2);
      await new Promise((r) => setTimeout(r, 150));
      let worked = 0;
      const runner = new JobRunner(db, engine, { crashy: { concurrency: 1, work: async () => ((worked++, { status: 'done' })) } }, { leaseMs: 1000, pollMs: 20, log: silent });
      runner.start();
      await until(async () => (await db.selectFrom('jobs').select('status').executeTakeFirst())?.status === 'failed', 3000, 'given up');
      await runner.stop(100);
      assert.equal(worked, 0, 'a job past its attempts is not worked again');
      const row = await db.selectFrom('jobs').selectAll().executeTakeFirstOrThrow();
      assert.match(row.lastError ?? '', /gave up after 2 attempts/);
    });

    test('a job whose last attempt throws is given up through its handler, which records the failure in its own rows', async (t) => {
      const connect = await open(t, engine);
      const db = (await connect()).db;
      await enqueueJobs(db, [{ kind: 'broken', payload: {}, maxAttempts: 1 }]);
      const givenUp: string[] = [];
      const handler: JobHandler = {
        concurrency: 1,
        work: async () => {
          throw new Error('Connection terminated unexpectedly');
        },
        giveUp: async (_job, error) => void givenUp.push(error),
      };
      const runner = new JobRunner(db, engine, { broken: handler }, { leaseMs: 1000, pollMs: 20, log: silent });
      runner.start();
      await until(async () => (await db.selectFrom('jobs').select('status').executeTakeFirst())?.status === 'failed', 3000, 'given up');
      await runner.stop(100);
      assert.deepEqual(givenUp, ['Connection terminated unexpectedly']);
    });

    test('retries wait their delay; a stopping worker hands its jobs back, and their handlers settle nothing after', async (t) => {
      const connect = await open(t, engine);
      const db = (await connect()).db;
      await enqueueJobs(db, [
        { kind: 'flaky', payload: {}, maxAttempts: 5 },
        { kind: 'slow', payload: {}, maxAttempts: 5 },
        { kind: 'doomed', payload: {}, maxAttempts: 1 },
      ]);
      const times: number[] = [];
      const signals: AbortSignal[] = [];
      const givenUp: string[] = [];
      const held: Array<() => void> = [];
      const hold = (settle: (resolve: (o: { status: 'done' }) => void, reject: (e: Error) => void) => void) =>
        new Promise<{ status: 'done' }>((resolve, reject) => held.push(() => settle(resolve, reject)));
      const runner = new JobRunner(
        db,
        engine,
        {
          flaky: { concurrency: 1, work: async () => (times.push(Date.now()), times.length < 3 ? { status: 'retry', delayMs: 200, error: 'not yet' } : { status: 'done' }) },
          slow: { concurrency: 1, work: (_job, handedBack) => (signals.push(handedBack), hold((resolve) => resolve({ status: 'done' }))) },
          // Its only attempt: a failure would be given up, were the job still this worker's.
          doomed: {
            concurrency: 1,
            work: (_job, handedBack) => (signals.push(handedBack), hold((_resolve, reject) => reject(new Error('the pool was closed')))),
            giveUp: async (job) => void givenUp.push(job.kind),
          },
        },
        { leaseMs: 30_000, pollMs: 20, log: silent },
      );
      runner.start();
      await until(() => times.length === 3 && held.length === 2, 5000, 'three tries and two held jobs');
      assert.ok(times[1]! - times[0]! >= 190 && times[2]! - times[1]! >= 190, `delays ${times[1]! - times[0]!}, ${times[2]! - times[1]!}`);
      assert.deepEqual(signals.map((s) => s.aborted), [false, false]);
      await runner.stop(50);
      const handedBack = async () => (await db.selectFrom('jobs').select(['kind', 'status', 'lockedBy', 'attempts']).where('kind', 'in', ['slow', 'doomed']).orderBy('kind').execute()).map((j) => [j.kind, j.status, j.lockedBy, j.attempts]);
      const expected = [['doomed', 'queued', null, 0], ['slow', 'queued', null, 0]];
      assert.deepEqual(await handedBack(), expected, 'handed back, their attempts not counted');
      assert.deepEqual(signals.map((s) => s.aborted), [true, true], 'their handlers are told');
      // Their handlers finishing after the hand-back settle nothing, and nothing is given up.
      for (const settle of held) settle();
      await until(() => runner.busy === 0, 5000, 'the handed-back handlers to finish');
      assert.deepEqual(await handedBack(), expected);
      assert.deepEqual(givenUp, []);
    });
  });
}

test('[postgres] after commits that queued jobs a process NOTIFYs the others, at most once per 20 ms, and never loses the last', { skip: !ENGINES.includes('postgres') && 'PostgreSQL only' }, async (t) => {
  const storage = await freshStorage(t, 'postgres');
  const config = loadConfig({ ...storage.env, MONTAGE_LOG_LEVEL: 'silent' });
  const api = openDatabase(config);
  const listener = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await listener.connect();
  onCleanup(t, async () => {
    await listener.end();
    await api.close();
  });
  const payloads: string[] = [];
  listener.on('notification', (m) => m.channel === JOBS_CHANNEL && m.payload?.startsWith(`${api.schema}/`) && payloads.push(m.payload));
  await listener.query(`listen ${JOBS_CHANNEL}`);
  const stopNotifying = notifyOtherProcesses(api, silent);
  jobsQueued(); // sent at once
  jobsQueued(); // within 20 ms of it: one more, at the end of the gap, for both of these
  jobsQueued();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(payloads.length, 2);
  assert.deepEqual(new Set(payloads), new Set([notificationPayload(api.schema)]));
  jobsQueued();
  jobsQueued(); // pending when the process stops: sent by the stop
  await stopNotifying();
  await until(() => payloads.length === 4, 5000, 'the pending notification sent at stop');
  jobsQueued();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(payloads.length, 4, 'nothing after the stop');
});

test('[postgres] a worker process wakes on another process\'s notification of its own deployment only', { skip: !ENGINES.includes('postgres') && 'PostgreSQL only' }, async (t) => {
  const storage = await freshStorage(t, 'postgres');
  const config = loadConfig({ ...storage.env, MONTAGE_LOG_LEVEL: 'silent' });
  const worker = openDatabase(config);
  onCleanup(t, () => worker.close());
  let wakes = 0;
  const stopListening = listenForQueuedJobs(config, worker, () => wakes++, silent);
  onCleanup(t, stopListening);
  // Connected and listening: it wakes once on its own, for what was queued while nobody listened.
  await until(() => wakes === 1, 5000, 'the listener ready');
  const notify = (payload: string) => sql`select pg_notify(${JOBS_CHANNEL}, ${payload})`.execute(worker.db);
  await new Promise((r) => setTimeout(r, 50));
  await notify(`${worker.schema}/another-process`);
  await until(() => wakes === 2, 5000, 'a wake from another process');
  // Its own process's notification (its runner was told directly), another deployment's: no wake.
  await new Promise((r) => setTimeout(r, 50));
  await notify(notificationPayload(worker.schema));
  await notify('another_schema/another-process');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(wakes, 2);
  // The listening backend is terminated: the connection is made again and listens again.
  const name = listenerName(worker.schema);
  const listeners = async () => (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where application_name = ${name}`.execute(worker.db)).rows[0]!.n;
  assert.equal(await listeners(), 1);
  await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${name}`.execute(worker.db);
  await until(async () => wakes >= 3 && (await listeners()) === 1, 10_000, 'listening again');
  await notify(`${worker.schema}/another-process`);
  await until(() => wakes >= 4, 5000, 'a wake after the reconnection');
  await stopListening();
  await until(async () => (await listeners()) === 0, 5000, 'no listener left after the stop');
});
