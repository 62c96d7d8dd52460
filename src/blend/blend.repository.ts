import type { Selectable, Updateable } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import { type KeysetPage, keysetPage } from '../db/keyset.js';
import type { TenantScope } from '../db/tenant.js';
import type { BlendJobTable } from './blend.table.js';

export type BlendJobRow = Selectable<BlendJobTable>;

export async function insertJob(scope: TenantScope, row: BlendJobRow): Promise<void> {
  await scope.db.insertInto('blendJobs').values(row).execute();
}

/** The account's job, or undefined. */
export function findJob(scope: TenantScope, id: string): Promise<BlendJobRow | undefined> {
  return scope.selectFrom('blendJobs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Any account's job, for the worker and for signed result URLs (the signature is the access check). */
export function jobById(db: Db | Tx, id: string): Promise<BlendJobRow | undefined> {
  return db.selectFrom('blendJobs').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface JobFilters {
  projectId?: string;
  status?: string;
}

/** One keyset page of the account's jobs, newest first (one row more, for `hasMore`). */
export function pageJobs(scope: TenantScope, filters: JobFilters, page: KeysetPage): Promise<BlendJobRow[]> {
  let qb = scope.selectFrom('blendJobs').selectAll();
  if (filters.projectId !== undefined) qb = qb.where('projectId', '=', filters.projectId);
  if (filters.status !== undefined) qb = qb.where('status', '=', filters.status);
  return keysetPage(qb, page, 'blendJobs.id', 'blendJobs.id', 'desc').execute();
}

/** Statuses a job can still leave: a worker may write to it, its owner may cancel it. */
export const OPEN_STATUSES = ['queued', 'processing'] as const;

/** Applies `changes` to the job while it is open (not finished or cancelled); its row as it now is, or undefined. */
export function updateOpenJob(db: Db | Tx, id: string, changes: Updateable<BlendJobTable>): Promise<BlendJobRow | undefined> {
  return db.updateTable('blendJobs').set(changes).where('id', '=', id).where('status', 'in', OPEN_STATUSES).returningAll().executeTakeFirst();
}

/**
 * Records the job's outcome unless it is no longer open or its owner asked it to stop: the cancel
 * wins whenever it was asked for before the outcome is recorded. Undefined when not recorded.
 */
export function settleJob(db: Db | Tx, id: string, changes: Updateable<BlendJobTable>): Promise<BlendJobRow | undefined> {
  return db
    .updateTable('blendJobs')
    .set(changes)
    .where('id', '=', id)
    .where('status', 'in', OPEN_STATUSES)
    .where('cancelRequestedAt', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** The account's queued job, now cancelled; undefined when it is not queued. */
export function cancelQueuedJob(scope: TenantScope, id: string, now: number): Promise<BlendJobRow | undefined> {
  return scope
    .updateTable('blendJobs')
    .set({ status: 'cancelled', cancelRequestedAt: now, completedAt: now, updatedAt: now })
    .where('id', '=', id)
    .where('status', '=', 'queued')
    .returningAll()
    .executeTakeFirst();
}

/** Any account's open job, now cancelled (its worker stopped it, or found the request when it took the job); undefined when it is not open. */
export function cancelOpenJob(db: Db | Tx, id: string, now: number): Promise<BlendJobRow | undefined> {
  return db
    .updateTable('blendJobs')
    .set((eb) => ({ status: 'cancelled', cancelRequestedAt: eb.fn.coalesce('cancelRequestedAt', eb.val(now)), completedAt: now, updatedAt: now }))
    .where('id', '=', id)
    .where('status', 'in', OPEN_STATUSES)
    .returningAll()
    .executeTakeFirst();
}

/** Asks the account's processing job to stop (the first request's time is kept); undefined when it is not processing. */
export function requestCancel(scope: TenantScope, id: string, now: number): Promise<BlendJobRow | undefined> {
  return scope
    .updateTable('blendJobs')
    .set((eb) => ({ cancelRequestedAt: eb.fn.coalesce('cancelRequestedAt', eb.val(now)), updatedAt: now }))
    .where('id', '=', id)
    .where('status', '=', 'processing')
    .returningAll()
    .executeTakeFirst();
}

/** What a follower of a job reads (watch.ts). */
export type WatchedJob = Pick<BlendJobRow, 'id' | 'status' | 'progress' | 'cancelRequestedAt'>;

export function watchedJobs(db: Db, ids: string[]): Promise<WatchedJob[]> {
  return db.selectFrom('blendJobs').select(['id', 'status', 'progress', 'cancelRequestedAt']).where('id', 'in', ids).execute();
}

/** The job's latest progress (JSON), while it is open. */
export async function recordProgress(db: Db, id: string, progress: string): Promise<void> {
  await db.updateTable('blendJobs').set({ progress }).where('id', '=', id).where('status', 'in', OPEN_STATUSES).execute();
}

/** Puts the job back to queued (its next attempt waits in the job queue), unless it was cancelled meanwhile. */
export async function requeueJob(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('blendJobs').set({ status: 'queued', updatedAt: now }).where('id', '=', id).where('status', 'in', OPEN_STATUSES).execute();
}

/** Up to `limit` finished jobs (completed, failed or cancelled) that finished before `before`, oldest first. */
export function finishedBefore(db: Db, before: number, limit: number): Promise<Array<Pick<BlendJobRow, 'id' | 'resultKey'>>> {
  return db
    .selectFrom('blendJobs')
    .select(['id', 'resultKey'])
    .where('completedAt', '<', before)
    .where('status', 'in', ['completed', 'failed', 'cancelled'])
    .orderBy('completedAt')
    .limit(limit)
    .execute();
}

export async function deleteJobs(db: Db, ids: string[]): Promise<number> {
  const result = await db.deleteFrom('blendJobs').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}
