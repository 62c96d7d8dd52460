import { type QueryCreator, type Selectable, sql } from 'kysely';
import { WriteBatcher } from '../db/batcher.js';
import type { Database, Db, Engine, Tx } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { afterCommit } from '../db/transaction.js';
import { newId } from '../ids.js';
import type { JobTable } from './jobs.table.js';
import { jobsQueued } from './signal.js';

export type JobRow = Selectable<JobTable>;

export interface NewJob {
  kind: string;
  payload: unknown;
  maxAttempts: number;
  runAt?: number;
}

const BATCH = 200;

/** The rows of new jobs, queued at `now`. */
function jobRows(jobs: NewJob[], now: number): JobRow[] {
  return jobs.map((job) => ({
    id: newId('queuedJob'),
    kind: job.kind,
    payload: JSON.stringify(job.payload),
    status: 'queued',
    attempts: 0,
    maxAttempts: job.maxAttempts,
    runAt: job.runAt ?? now,
    lockedBy: null,
    lockedUntil: null,
    lastError: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
  }));
}

/**
 * New jobs as the values of `insertJobsUnnest`: one array per column that is not null at queueing
 * (`jobRows`), each a named argument of the statement (db/prepared.ts, preparedNamed).
 */
export interface JobValues {
  jobIds: string[];
  jobKinds: string[];
  jobPayloads: string[];
  jobStatuses: string[];
  jobAttempts: number[];
  jobMaxAttempts: number[];
  jobRunAt: number[];
  jobCreatedAt: number[];
  jobUpdatedAt: number[];
}

/** The names of `JobValues`, for a statement's list of its named arguments. */
export const JOB_VALUES = [
  'jobIds',
  'jobKinds',
  'jobPayloads',
  'jobStatuses',
  'jobAttempts',
  'jobMaxAttempts',
  'jobRunAt',
  'jobCreatedAt',
  'jobUpdatedAt',
] as const satisfies ReadonlyArray<keyof JobValues>;

/** New jobs, queued at `now`, as `insertJobsUnnest`'s values. */
export function jobValues(jobs: NewJob[], now: number): JobValues {
  const rows = jobRows(jobs, now);
  return {
    jobIds: rows.map((j) => j.id),
    jobKinds: rows.map((j) => j.kind),
    jobPayloads: rows.map((j) => j.payload),
    jobStatuses: rows.map((j) => j.status),
    jobAttempts: rows.map((j) => j.attempts),
    jobMaxAttempts: rows.map((j) => j.maxAttempts),
    jobRunAt: rows.map((j) => j.runAt),
    jobCreatedAt: rows.map((j) => j.createdAt),
    jobUpdatedAt: rows.map((j) => j.updatedAt),
  };
}

type JobColumns = Pick<JobRow, 'id' | 'kind' | 'payload' | 'status' | 'attempts' | 'maxAttempts' | 'runAt' | 'createdAt' | 'updatedAt'>;

/**
 * PostgreSQL: inserts new jobs from `jobValues` (one `unnest`), once for each row of `gate`, a
 * common table expression of the same statement that returns one row when the statement's change
 * was made and none otherwise. For statements that write a change, its outbox message and its
 * delivery jobs in one round trip (webhooks/outbox.ts, fanOut).
 */
export function insertJobsUnnest<DB extends Database>(qc: QueryCreator<DB>, gate: string, jobs: JobValues) {
  const { jobIds: ids, jobKinds: kinds, jobPayloads: payloads, jobStatuses: statuses, jobAttempts: attempts, jobMaxAttempts: maxAttempts, jobRunAt: runAt, jobCreatedAt: createdAt, jobUpdatedAt: updatedAt } = jobs;
  return (qc as unknown as QueryCreator<Database>)
    .insertInto('jobs')
    .columns(['id', 'kind', 'payload', 'status', 'attempts', 'maxAttempts', 'runAt', 'createdAt', 'updatedAt'])
    .expression((eb) =>
      eb
        .selectFrom([
          sql.table(gate).as('gate'),
          sql<JobColumns>`unnest(${ids}::text[], ${kinds}::text[], ${payloads}::text[], ${statuses}::text[], ${attempts}::integer[], ${maxAttempts}::integer[], ${runAt}::bigint[], ${createdAt}::bigint[], ${updatedAt}::bigint[])`.as<'j'>(
            sql`j(id, kind, payload, status, attempts, max_attempts, run_at, created_at, updated_at)`,
          ),
        ])
        .select(['j.id', 'j.kind', 'j.payload', 'j.status', 'j.attempts', 'j.maxAttempts', 'j.runAt', 'j.createdAt', 'j.updatedAt']),
    );
}

/** Adds jobs; call it inside the transaction whose commit should make them visible. */
export async function enqueueJobs(db: Db | Tx, jobs: NewJob[], now = Date.now()): Promise<void> {
  const rows = jobRows(jobs, now);
  for (let i = 0; i < rows.length; i += BATCH) await db.insertInto('jobs').values(rows.slice(i, i + BATCH)).execute();
  // Workers look for them as soon as they can be claimed (signal.ts), not at their next poll.
  if (rows.length > 0) afterCommit(db, jobsQueued);
}

/**
 * Claims up to `limit` jobs for `workerId` with a lease: queued jobs that are due, and running
 * jobs whose lease expired (their worker died). On PostgreSQL the candidates are locked with
 * FOR UPDATE SKIP LOCKED, so concurrent workers never claim the same job; SQLite runs one
 * write transaction at a time. Each claim counts as an attempt.
 */
export async function claimJobs(db: Db, engine: Engine, kinds: string[], workerId: string, limit: number, leaseMs: number, now = Date.now()): Promise<JobRow[]> {
  if (kinds.length === 0 || limit <= 0) return [];
  let candidates = db
    .selectFrom('jobs')
    .select('id')
    .where('kind', 'in', kinds)
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'queued'), eb('runAt', '<=', now)]),
        eb.and([eb('status', '=', 'running'), eb('lockedUntil', '<', now)]),
      ]),
    )
    .orderBy('runAt')
    .limit(limit);
  if (engine === 'postgres') candidates = candidates.forUpdate().skipLocked();
  return db
    .updateTable('jobs')
    .set((eb) => ({ status: 'running', lockedBy: workerId, lockedUntil: now + leaseMs, attempts: eb('attempts', '+', 1), updatedAt: now }))
    .where('id', 'in', candidates)
    .returningAll()
    .execute();
}

/** Only the lease holder may settle a job: a worker whose lease lapsed must not overwrite the new holder's work. */
function owned(db: Db, job: Pick<JobRow, 'id' | 'lockedBy'>) {
  return db.updateTable('jobs').where('id', '=', job.id).where('lockedBy', '=', job.lockedBy).where('status', '=', 'running');
}

export async function extendLease(db: Db, job: JobRow, leaseMs: number): Promise<boolean> {
  const now = Date.now();
  const result = await owned(db, job).set({ lockedUntil: now + leaseMs, updatedAt: now }).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

const markDone = prepared((db: Db, id: string, lockedBy: string, now: number) =>
  db.updateTable('jobs').set({ status: 'done', lockedBy: null, lockedUntil: null, finishedAt: now, updatedAt: now }).where('id', '=', id).where('lockedBy', '=', lockedBy).where('status', '=', 'running'),
);

export async function completeJob(db: Db, job: JobRow): Promise<void> {
  await markDone(db, job.id, job.lockedBy!, Date.now());
}

/**
 * Marks one worker's jobs done, many to a statement (db/batcher.ts): a busy worker spends one
 * round trip on dozens of jobs, an idle one adds no delay. As with completeJob, only the lease
 * holder's running job changes.
 */
export class CompletionBatcher {
  private readonly batcher: WriteBatcher<string>;

  constructor(
    private readonly db: Db,
    private readonly workerId: string,
  ) {
    this.batcher = new WriteBatcher((ids) => {
      const now = Date.now();
      return db
        .updateTable('jobs')
        .set({ status: 'done', lockedBy: null, lockedUntil: null, finishedAt: now, updatedAt: now })
        .where('lockedBy', '=', workerId)
        .where('status', '=', 'running')
        .where('id', 'in', ids)
        .execute();
    });
  }

  complete(job: JobRow): Promise<void> {
    return job.lockedBy === this.workerId ? this.batcher.add(job.id) : completeJob(this.db, job);
  }
}

export async function retryJob(db: Db, job: JobRow, delayMs: number, error: string): Promise<void> {
  const now = Date.now();
  await owned(db, job).set({ status: 'queued', lockedBy: null, lockedUntil: null, runAt: now + delayMs, lastError: error.slice(0, 1000), updatedAt: now }).execute();
}

export async function failJob(db: Db, job: JobRow, error: string): Promise<void> {
  const now = Date.now();
  await owned(db, job).set({ status: 'failed', lockedBy: null, lockedUntil: null, lastError: error.slice(0, 1000), finishedAt: now, updatedAt: now }).execute();
}

/** Hands a job back untouched (shutdown): its attempt is not counted against it. */
export async function releaseJob(db: Db, job: JobRow): Promise<void> {
  const now = Date.now();
  await owned(db, job)
    .set((eb) => ({ status: 'queued', lockedBy: null, lockedUntil: null, runAt: now, attempts: eb('attempts', '-', 1), updatedAt: now }))
    .execute();
}

/** Finished jobs are kept a day for inspection, then removed. */
export async function purgeFinishedJobs(db: Db, olderThanMs = 86_400_000, now = Date.now()): Promise<number> {
  const result = await db.deleteFrom('jobs').where('status', 'in', ['done', 'failed']).where('finishedAt', '<', now - olderThanMs).executeTakeFirst();
  return Number(result.numDeletedRows);
}
